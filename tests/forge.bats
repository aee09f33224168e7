#!/usr/bin/env bats
# The forge dispatcher and the options every program shares.

load test_helper/common

setup() {
	forge_setup
}

@test "forge --help lists the commands it finds" {
	run -0 --separate-stderr forge --help
	[[ "$output" == *"usage: forge"* ]]
	[[ "$output" == *"Commands found:"* ]]
	[[ "$output" == *"  events "* ]]
}

@test "forge --help: every command it lists has a description" {
	run -0 --separate-stderr forge --help
	cmds=$(sed -n '/^Commands found:$/,$p' <<<"$output" | tail -n +2)
	[ "$(wc -l <<<"$cmds")" -ge 20 ]
	# (before: "  agent        " and nothing after it)
	# (a description too long for its line goes on under its column)
	run -0 awk '/^   / { next } NF < 2 { print "no description: " $0; bad = 1 } END { exit bad }' <<<"$cmds"
	[[ "$cmds" == *"  agent        a sub-agent"* ]]
}

@test "forge --version" {
	run -0 forge --version
	[[ "$output" =~ ^forge\ [0-9]+\.[0-9]+\.[0-9]+$ ]]
}

@test "--version and --help of every program load neither libjq nor libcurl nor TLS nor libssh2; a request loads what it needs" {
	local p opt n=0
	for p in "$FORGE_BINDIR"/forge*; do
		for opt in --version --help; do
			run -0 --separate-stderr env LD_DEBUG=files "$p" "$opt"
			[[ "$stderr" != *"file=libcurl"* && "$stderr" != *"file=libssh2"* && "$stderr" != *"file=libgit2"* &&
			   "$stderr" != *"file=libssl"* && "$stderr" != *"file=libcrypto"* &&
			   "$stderr" != *"file=libjq"* && "$stderr" != *"file=libonig"* ]] ||
				{ echo "$p $opt loaded libjq, libcurl, TLS, libssh2 or a shared libgit2 at start"; return 1; }
			n=$((n + 1))
		done
	done
	[ "$n" -ge 20 ]
	# ... and what a model call (to a closed loopback port) needs when it is made
	echo '{"llm":{"max_retries":0}}' >"$BATS_TEST_TMPDIR/c.json"
	llm() {
		env LD_DEBUG=files forge-llm --config "$BATS_TEST_TMPDIR/c.json" --provider openai \
			--base-url "$1" --model m hi
	}
	if nm "$FORGE_BINDIR/forge-llm" 2>/dev/null | grep -q ' T curl_easy_perform$'; then
		# libcurl linked in (CURL_STATIC): plain http loads no TLS library, https does
		run -5 --separate-stderr llm http://127.0.0.1:9/v1
		[[ "$stderr" != *"file=libssl"* && "$stderr" != *"file=libcurl"* ]]
		run -5 --separate-stderr llm https://127.0.0.1:9/v1
		[[ "$stderr" == *"file=libssl"* ]]
	else
		run -5 --separate-stderr llm http://127.0.0.1:9/v1
		[[ "$stderr" == *"file=libcurl"* ]]
	fi
}

@test "forge-tui --version loads no curses library (ncursesw linked static where its archive is installed)" {
	local a
	a=$(${CC:-cc} -print-file-name=libncursesw.a)
	[ -e "$a" ] || skip "libncursesw.a is not installed: forge-tui links ncursesw dynamically"
	run -0 --separate-stderr env LD_DEBUG=files forge-tui --version
	[[ "$output" == "forge-tui (forge) "* ]]
	[[ "$stderr" != *"file=libncurses"* && "$stderr" != *"file=libtinfo"* ]]
}

@test "forge, the dispatcher, loads neither libjq nor SQLite nor libgit2" {
	# (app/cli_help.c holds all it uses; linked static-pie it loads nothing)
	run -0 --separate-stderr env LD_DEBUG=files forge --version
	[[ "$stderr" != *"file=libjq"* && "$stderr" != *"file=libonig"* ]]
	if command -v nm >/dev/null; then
		run -0 nm "$FORGE_BINDIR/forge"
		[[ "$output" != *" jv_"* && "$output" != *" sqlite3_"* && "$output" != *" git_"* ]]
	fi
	# ... and a program loads libjq (core/jq_lazy.c) when it first handles JSON
	run -0 --separate-stderr env LD_DEBUG=files forge-events --version
	[[ "$stderr" != *"file=libjq"* ]]
	run -0 --separate-stderr env LD_DEBUG=files forge-config get llm.max_tokens
	[ "$output" = 8192 ]
	[[ "$stderr" == *"file=libjq"* && "$stderr" == *"file=libonig"* ]]
}

@test "forge with no command prints usage on stderr and exits 2" {
	run -2 --separate-stderr forge
	[ -z "$output" ]
	[[ "$stderr" == *"usage: forge"* ]]
}

@test "forge CMD runs forge-CMD with the arguments" {
	run -0 --separate-stderr forge events --version
	[[ "$output" == "forge-events (forge) "* ]]
}

@test "forge help CMD shows that command's help" {
	run -0 --separate-stderr forge help events
	[[ "$output" == *"usage: forge-events"* ]]
}

@test "an unknown command exits 2 with a clear message" {
	run -2 --separate-stderr forge frobnicate
	[[ "$stderr" == *"'frobnicate' is not a forge command"* ]]
	run -2 --separate-stderr forge ../../bin/sh
}

@test "an unknown option exits 2" {
	run -2 --separate-stderr forge --frobnicate
	[[ "$stderr" == *"unknown option '--frobnicate'"* ]]
}

@test "every program: --help on stdout exit 0, --version, unknown option exit 2" {
	for p in "$FORGE_BINDIR"/forge*; do
		[[ -x "$p" && "$p" != *.c ]] || continue
		name=$(basename "$p")
		run -0 --separate-stderr "$p" --help
		[[ "$output" == *"usage: $name"* ]] || { echo "$name --help: $output"; false; }
		[ -z "$stderr" ]
		# nothing but text (before: forge-doctor's --only showed as '-^A, --only')
		! LC_ALL=C grep -q '[[:cntrl:]]' <<<"${output//$'\t'/ }" || { echo "$name --help: a control character"; false; }
		run -0 --separate-stderr "$p" --version
		[[ "$output" == "$name"* || "$output" == "forge "* ]] || { echo "$name --version: $output"; false; }
		run -2 --separate-stderr "$p" --no-such-option
		[[ "$stderr" == *"unknown option"* ]] || { echo "$name: $stderr"; false; }
		[ -z "$output" ]
	done
}

@test "a missing option argument is a usage error" {
	run -2 --separate-stderr forge-events --db
	[[ "$stderr" == *"'--db' needs an argument"* ]]
}

@test "an option that takes no argument given one, or a prefix of several options, is told so (exit 2), not called unknown" {
	# (before: "unknown option '-q'" for --quiet=1, a short option not typed;
	# "unknown option '--no-input=1'"; "unknown option '--b'")
	run -2 --separate-stderr forge-review --quiet=1
	[ "${stderr_lines[0]}" = "forge-review: option '--quiet' takes no argument" ]
	[ -z "$output" ]
	run -2 --separate-stderr forge-review --help=x
	[ "${stderr_lines[0]}" = "forge-review: option '--help' takes no argument" ]
	[ -z "$output" ]
	run -2 --separate-stderr forge-review --no-input=1
	[ "${stderr_lines[0]}" = "forge-review: option '--no-input' takes no argument" ]
	run -2 --separate-stderr forge history --json=1
	[ "${stderr_lines[0]}" = "forge history: option '--json' takes no argument" ]
	run -2 --separate-stderr forge-memory list --arch=yes
	[ "${stderr_lines[0]}" = "forge-memory: option '--archived' takes no argument" ]
	run -2 --separate-stderr forge-review --ba main
	[ "${stderr_lines[0]}" = "forge-review: option '--ba' is ambiguous; possibilities: --base, --base-url" ]
	# a unique prefix still works, and what is unknown is still called so
	run -2 --separate-stderr forge-review --bogus=1
	[ "${stderr_lines[0]}" = "forge-review: unknown option '--bogus=1'" ]
	run -2 --separate-stderr forge-review -Z
	[ "${stderr_lines[0]}" = "forge-review: unknown option '-Z'" ]
	run -0 --separate-stderr forge-review --vers
	[[ "$output" == "forge-review (forge) "* ]]
}

@test "an empty --db or --cassette is a usage error (exit 2), not the default database or \$FORGE_CASSETTE without a word" {
	REPO="$BATS_TEST_TMPDIR/repo"
	make_repo "$REPO"
	cd "$REPO"
	unset FORGE_DB
	local said="option '--db' needs a database's path, and was given an empty one (leave the option out for the default)"
	run -2 --separate-stderr forge history --db ''
	[ "${stderr_lines[0]}" = "forge history: $said" ]
	run -2 --separate-stderr forge --db= memory add "a lesson"
	[ "${stderr_lines[0]}" = "forge-memory: $said" ]
	run -2 --separate-stderr forge-plan --db '' --task "add a flag"
	[ "${stderr_lines[0]}" = "forge-plan: $said" ]
	[ -z "$output" ]
	[ ! -e .forge/forge.db ]
	run -2 --separate-stderr env FORGE_PROVIDER=replay FORGE_CASSETTE=/nonexistent forge-plan --cassette= --task "add a flag"
	[ "${stderr_lines[0]}" = "forge-plan: option '--cassette' needs a cassette file, and was given an empty one (leave the option out for the default)" ]
}

@test "common options before the command go to the command: forge --repo DIR status, forge -v run" {
	REPO="$BATS_TEST_TMPDIR/repo"
	make_repo "$REPO"
	cd "$BATS_TEST_TMPDIR"
	unset FORGE_DB
	# the database of the repository --repo names
	run -1 --separate-stderr forge --repo "$REPO" status
	[ "$stderr" = "forge status: no runs yet" ]
	[ ! -e "$REPO/.forge/forge.db" ]	# (a read makes no database)
	run -0 forge --repo "$REPO" memory add "a lesson"
	[ -f "$REPO/.forge/forge.db" ]
	run -0 --separate-stderr forge --repo "$REPO" memory list
	[[ "$output" == *"a lesson"* ]]
	run -0 --separate-stderr forge --repo="$REPO" -q history --json
	[ -z "$output" ]
	run -0 --separate-stderr forge -v --db "$BATS_TEST_TMPDIR/x.db" --config /dev/null events list --json
	# -v reached forge run (a usage error of its own, not forge's)
	run -2 --separate-stderr forge -v run
	[[ "$stderr" == "forge run: run needs a task"* ]]
	[[ "$stderr" == *"Try 'forge run --help'"* ]]
	run -0 --separate-stderr forge -q --help
	[[ "$output" == *"usage: forge"* ]]
	# what is not a common option is still refused, and an option needs its command
	run -2 --separate-stderr forge --phases plan run x
	[[ "$stderr" == *"unknown option '--phases'"* ]]
	run -2 --separate-stderr forge --repo "$REPO"
	[[ "$stderr" == *"a command is needed"* ]]
	run -2 --separate-stderr forge --repo
	[[ "$stderr" == *"'--repo' needs an argument"* ]]
}

@test "the model options before the command go to it too: forge --provider P --model M --base-url URL --cassette FILE CMD (hunt64 #2)" {
	cd "$BATS_TEST_TMPDIR"
	unset FORGE_PROVIDER FORGE_MODEL FORGE_BASE_URL FORGE_CASSETTE ANTHROPIC_API_KEY OPENAI_API_KEY
	echo '{"response":{"text":"from the cassette"}}' >answers.jsonl
	# (before: "forge: unknown option '--cassette'", exit 2, for each of them)
	run -0 --separate-stderr forge --cassette answers.jsonl llm hi
	assert_output "from the cassette"
	run -0 --separate-stderr forge --provider replay --model some-model --cassette=answers.jsonl llm --json hi
	jq -e '.text == "from the cassette"' <<<"$output"
	# --provider, --model and --base-url reach the call: its error names them
	echo '{"llm":{"max_retries":0}}' >cfg.json
	run -5 --separate-stderr env OPENAI_API_KEY=sk-test forge --provider openai --model gpt-4o-mini \
		--base-url http://127.0.0.1:9/v1 --config cfg.json llm hi
	[[ $stderr == "forge-llm: openai: "*"http://127.0.0.1:9/v1"* ]]
	run -2 --separate-stderr forge --provider nosuch llm hi
	[[ $stderr == *"unknown provider 'nosuch'"* ]]
	# a command that calls no model refuses them itself
	run -2 --separate-stderr forge --model m events list
	[[ $stderr == "forge-events: unknown option '--model'"* ]]
	run -2 --separate-stderr forge --base-url
	[[ $stderr == *"'--base-url' needs an argument"* ]]
	run -2 --separate-stderr forge --models m llm hi
	[[ $stderr == "forge: unknown option '--models'"* ]]
}

@test "a common option before the command may be shortened as after it; a prefix of several is refused naming them (fix135 #1)" {
	REPO="$BATS_TEST_TMPDIR/repo"
	make_repo "$REPO"
	cd "$BATS_TEST_TMPDIR"
	unset FORGE_DB
	run -0 forge --rep "$REPO" memory add "a lesson"
	[ -f "$REPO/.forge/forge.db" ]
	# (before: "forge: unknown option '--d'", while `forge history --d X` took it)
	run -0 --separate-stderr forge --d "$REPO/.forge/forge.db" --conf=/dev/null --qu memory list
	[[ "$output" == *"a lesson"* ]]
	# handed on whole: forge-gc's own --dry-run does not make it ambiguous there
	run -0 --separate-stderr forge --d "$REPO/.forge/forge.db" --rep "$REPO" gc --dry-run
	run -2 --separate-stderr forge-gc --d "$REPO/.forge/forge.db"
	[[ "${stderr_lines[0]}" == *"'--d' is ambiguous"* ]]
	echo '{"response":{"text":"from the cassette"}}' >answers.jsonl
	run -0 --separate-stderr forge --cas answers.jsonl --prov replay llm hi
	[ "$output" = "from the cassette" ]
	run -0 --separate-stderr forge --vers
	[[ "$output" =~ ^forge\ [0-9]+\.[0-9]+\.[0-9]+$ ]]
	run -0 --separate-stderr forge --he
	[[ "${lines[0]}" == "usage: forge "* ]]
	# a prefix of several, and a value for a flag, say so as after the command
	run -2 --separate-stderr forge --c x history
	[ "${stderr_lines[0]}" = "forge: option '--c' is ambiguous; possibilities: --config, --cassette" ]
	run -2 --separate-stderr forge --ver history
	[ "${stderr_lines[0]}" = "forge: option '--ver' is ambiguous; possibilities: --version, --verbose" ]
	run -2 --separate-stderr forge --quiet=1 history
	[ "${stderr_lines[0]}" = "forge: option '--quiet' takes no argument" ]
	run -2 --separate-stderr forge --nosuch history
	[ "${stderr_lines[0]}" = "forge: unknown option '--nosuch'" ]
}

@test "forge run, status, …: their own usage and messages as 'forge CMD'" {
	run -0 --separate-stderr forge status --help
	[[ "${lines[0]}" == "usage: forge status [TRACE] [--json]" ]]
	[[ "$output" != *forge-supervisor* ]]
	run -0 --separate-stderr forge help run
	[[ "${lines[0]}" == "usage: forge run TASK "* ]]
	run -2 --separate-stderr forge status a b
	[[ "$stderr" == "forge status: wrong number of arguments for 'status'"* ]]
	run -2 --separate-stderr forge status NOSUCHRUN
	[[ "$stderr" == "forge status: no run matches 'NOSUCHRUN': the database it was looked for in does not exist "* ]]
	run -2 --separate-stderr forge run --no-such-option x
	[[ "$stderr" == "forge run: unknown option '--no-such-option'"* ]]
	# run directly, the supervisor keeps its own name
	run -2 --separate-stderr forge-supervisor status a b
	[[ "$stderr" == "forge-supervisor: wrong number of arguments"* ]]
}

@test "forge cancel, status, history, resume take only their own options: another command's is a usage error (exit 2)" {
	# (before: one table for all, `forge cancel TRACE --dry-run` cancelled the run)
	for cmd in "cancel T1 --dry-run" "status T1 --phases plan" "status --base x" "history --steal" \
		   "resume T1 --dry-run" "resume T1 --phases plan" "resume T1 --pipeline p" "run --steal x" \
		   "cancel T1 --json" "history --provider mock" "status --model m"; do
		run -2 --separate-stderr forge $cmd
		opt=$(grep -o -- '--[a-z-]*' <<<"$cmd")
		[ "$stderr" = "forge ${cmd%% *}: unknown option '$opt'
Try 'forge ${cmd%% *} --help' for more information." ] || { echo "$cmd: $stderr"; false; }
	done
	run -2 --separate-stderr forge-supervisor --dry-run cancel T1
	[[ "$stderr" == "forge-supervisor: cancel takes no --dry-run (see forge cancel --help)"* ]]
	# their help and completion offer theirs alone, with their own description
	run -0 --separate-stderr forge cancel --help-words
	[ "$(awk -F'\t' '$1 == "option" { print $2 }' <<<"$output" | grep -v -x -e --help -e -h -e --version \
	     -e --repo -e --db -e --config -e --quiet -e -q -e --verbose -e -v)" = "" ]
	run -0 --separate-stderr forge status --help-words
	[ "$(awk -F'\t' '$1 == "option" { print $2 }' <<<"$output" | grep -c -e --json -e --dry-run -e --phases)" = 1 ]
	run -0 --separate-stderr forge history --help
	[[ "$output" == *"--limit N"* && "$output" != *"--dry-run"* && "$output" != *"Carry a task"* ]]
	run -0 --separate-stderr forge-supervisor status --help
	[[ "${lines[0]}" == "usage: forge-supervisor status [TRACE] [--json]" && "$output" == *"Show a run"* ]]
	run -0 --separate-stderr forge resume --help
	[[ "$output" == *"--steal"* && "$output" == *"--provider"* && "$output" != *"--dry-run"* ]]
}

@test "every help page ends its last line, describes every option, and has no paragraph line cut short or left long (fix135 #6)" {
	# (before: forge-merge's "…base commit.  That" and "…; 5 git or the",
	# forge run's cancel line of 146 columns in a paragraph of 85, and
	# forge-merge, -diff, -gc, -report and -show ending without a newline)
	broken='{ L[NR] = $0 }
	END {
		for (i = 2; i <= NR; i++) {
			prev = L[i - 1]; line = L[i]; nxt = (i < NR) ? L[i + 1] : ""
			text = line ~ /^[^ ]/; ptext = prev ~ /^[^ ]/; ntext = nxt ~ /^[^ ]/
			if (text && ptext && ntext && length(prev) > 60 && length(line) < 0.7 * length(prev) &&
			    line !~ /[.:;)]$/)
				print "cut short: " line
			if (text && ntext && length(line) > 100 && line !~ /^usage:/)
				print "left long: " line
			if (line ~ /^  (-[a-zA-Z], |    )--[a-z]/ && substr(line, 28) !~ /[^ ]/)
				print "no description: " line
		}
	}'
	pages=()
	for p in "$FORGE_BINDIR"/forge*; do
		[[ -x "$p" && "$p" != *.c ]] && pages+=("$p")
	done
	for page in "${pages[@]}" "forge run" "forge resume" "forge status" "forge history" "forge cancel"; do
		# (a command substitution drops the last newline: nothing is left when there was one)
		[ -z "$($page --help | tail -c 1)" ] || { echo "$page --help: no newline at its end"; false; }
		run -0 awk "$broken" <<<"$($page --help)"
		[ -z "$output" ] || { echo "$page --help: $output"; false; }
	done
}

@test "every help page fits 80 columns: paragraphs and option descriptions wrapped, hand-wrapped text kept (fix138)" {
	# (before: forge-review's, forge-plan's, … description one line of up to
	# 1000 columns, option descriptions of 90-180, synopses of 100-150)
	pages=()
	for p in "$FORGE_BINDIR"/forge*; do
		[[ -x "$p" && "$p" != *.c ]] && pages+=("$p")
	done
	for page in "${pages[@]}" "forge run" "forge resume" "forge status" "forge history" "forge cancel"; do
		run -0 --separate-stderr $page --help
		long=$(LC_ALL=C.UTF-8 grep '^.\{81\}' <<<"$output") || true
		[ -z "$long" ] || { echo "$page --help: $long"; false; }
	done
	# an option's description goes on under its column; a synopsis under its operands
	run -0 --separate-stderr forge-review --help
	assert_output --partial $'      --repo DIR           the repository (default: the one containing the\n                           current directory)'
	assert_output --partial $'usage: forge-review [--sarif FILE] [OPTION]... < diff-or-state\n'
	run -0 --separate-stderr forge-memory --help
	assert_output --partial $'usage: forge-memory list [--type T] [--tag TAG]... [--min-confidence X]\n                      [--archived|--all]'
	# text wrapped by hand within 80 columns is printed as written
	run -0 --separate-stderr forge-merge --help
	assert_output --partial $'\n\nMerge the branch forge/TRACE of a completed run into its base branch: the\nbranch the run started from (--base BRANCH, or the branch HEAD was on), or,\n'
}

@test "every help page has one exit status paragraph" {
	for p in "$FORGE_BINDIR"/forge*; do
		[[ -x "$p" && "$p" != *.c ]] || continue
		run -0 --separate-stderr "$p" --help
		[ "$(grep -c '^Exit' <<<"$output")" -eq 1 ] || { echo "$(basename "$p"): $output"; false; }
		# and no other statement of it elsewhere in the text (before: forge-doctor
		# said "the exit status is 0 (2 for a usage error)", then the generic list)
		[ "$(grep -c -i -e 'exit status' -e '^Exit:' <<<"$output")" -eq 1 ] || { echo "$(basename "$p"): $output"; false; }
	done
	# forge-test names every status it ends with (before: 0, 1 and 2 alone)
	run -0 --separate-stderr forge-test --help
	[[ "$output" == *"Exit status: 0 all tests passed"*", 1 tests failed"*"2 bad input, 4 another process holds the run"*"5 the tests could not be run"*", 130 interrupted."* ]]
	# forge-feedback says when kind may be left out, as the schema's description does
	run -0 --separate-stderr forge-feedback --help
	[[ "$output" == *"kind may be"*"left out where metric (an anomaly) or stack (an error) says which"* ]]
	grep -q 'kind is inferred when absent (metric: anomaly; stack: error)' "$FORGE_ROOT/schemas/production.schema.json"
}
