#!/usr/bin/env bats
# edges.bats - what a person sees at the edges of a run (issue 15): forge-review
# and forge-test run alone print findings and failing tests on stderr (colour on
# a terminal only, none with NO_COLOR or when piped) while stdout stays the JSON
# lines; forge-supervisor's phases do not; forge run --dry-run plans without a
# worktree and prints the plan; a run checks the model's provider and key before
# it makes anything; a dirty checkout is warned about; a run without a test
# command says that nothing was tested.

bats_require_minimum_version 1.5.0

TOKEN=ghp_4kQ9zX2mV7bN1cR8tY5uW3eL6pA0sD9fG2hJ
FINDING="notes.txt:2: critical: possible GitHub token committed (ghp_…, 40 characters); remove it, rotate it, and load it from the environment or a secret store [secret/github-token]"
DECISION="forge-review: require_human: a critical security finding needs a human (gate security_findings) (risk medium; 1 critical, 0 error, 0 warning)"
PLAN_TEXT="plan      Add a mul operation to calc: calc mul A B prints A times B.
risk      low (0.10)
          - one small, local, tested change
estimate  complexity low, effort 15m
tasks     t1  Add calc_mul and the mul operation
              files: calc.c
          t2  Test mul (after t1)
              files: tests/check.sh"
NOT_TESTED="forge-test: warning: nothing was tested: no test command (set tools.test_command)"

setup() {
	load test_helper/common
	forge_setup
	export BATS_TEST_TIMEOUT=120
	unset NO_COLOR
}

# notes_repo: $REPO (the current directory) whose last commit adds notes.txt
# holding a GitHub token: a file in no language with linters, so the built-in
# secret rule alone finds something.
notes_repo() {
	REPO="$BATS_TEST_TMPDIR/notes"
	make_repo "$REPO"
	cd "$REPO"
	printf 'deploy notes\ntoken %s\n' "$TOKEN" >notes.txt
	git add -A && git commit -qm notes
}

# bats_repo BODY...: $REPO whose tests/t.bats holds the given tests.
bats_repo() {
	REPO="$BATS_TEST_TMPDIR/repo"
	make_repo "$REPO"
	mkdir -p "$REPO/tests"
	printf '%s\n' "$@" >"$REPO/tests/t.bats"
	git -C "$REPO" add -A && git -C "$REPO" commit -qm tests
}

# ft ARG...: forge-test in $REPO without this bats' variables, functions and
# fd 3, so the bats it runs as the test command is a fresh one (as test.bats).
ft() {
	cat >"$BATS_TEST_TMPDIR/ft" <<-'EOF'
		#!/usr/bin/env bash
		for v in $(compgen -e | grep '^BATS_'); do unset "$v"; done
		for f in $(declare -Fx | awk '{print $3}'); do unset -f "$f"; done
		PATH=$(tr ':' '\n' <<<"$PATH" | grep -v '/bats-core' | paste -sd: -)
		cd "$1" && shift && exec forge-test "$@" 3>&-
	EOF
	chmod +x "$BATS_TEST_TMPDIR/ft"
	"$BATS_TEST_TMPDIR/ft" "$REPO" "$@"
}

# The kinds and event types of JSON lines on stdin, one a line; fails on a
# line that is not a record.
record_types() {
	jq -r 'if type == "object" and (.kind == "event" or .kind == "state") then (.type // .kind)
	       else error("not a record") end'
}

# The calc fixture with the cassette of a clean run.
calc_replay() {
	calc_setup
	export FORGE_PROVIDER=replay FORGE_CASSETTE="$CASSETTES/run-clean.jsonl"
}

last_trace() { forge history --json -n 1 | jq -r .trace_id; }

# ---- forge-review alone ------------------------------------------------------

@test "forge-review alone: each finding as file:line: severity: message [rule], then the decision; stdout unchanged" {
	notes_repo
	run -4 --separate-stderr bash -c 'git diff HEAD~1 | forge-review'
	assert_equal "$stderr" "$FINDING"$'\n'"$DECISION"
	loud=$(record_types <<<"$output")
	# -q: the same records on stdout, nothing on stderr
	run -4 --separate-stderr bash -c 'git diff HEAD~1 | forge-review -q'
	assert_equal "$stderr" ""
	assert_equal "$(record_types <<<"$output")" "$loud"
	tail -n 1 <<<"$output" | jq -e '.review.decision == "require_human" and (.review.findings | length) == 1'
	# an approval says so in one line
	echo more >>README
	run -0 --separate-stderr bash -c 'git diff | forge-review'
	assert_equal "$stderr" "forge-review: approve: no blocking findings (risk low; 0 critical, 0 error, 0 warning)"
}

@test "forge-review: colour on a terminal only; none with NO_COLOR, none when piped" {
	notes_repo
	export TERM=xterm
	run -4 python3 "$FORGE_ROOT/tests/helpers/pty_run.py" --transcript "$BATS_TEST_TMPDIR/tty" -- \
		sh -c 'forge-review --no-input --commit HEAD >"$1"' _ "$BATS_TEST_TMPDIR/out.jsonl"
	run -0 grep -cF $'\e[1mnotes.txt:2:\e[m \e[1;31mcritical\e[m: possible GitHub token' "$BATS_TEST_TMPDIR/tty"
	assert_output 1
	run -0 grep -cF $'forge-review: \e[33mrequire_human\e[m: ' "$BATS_TEST_TMPDIR/tty"
	assert_output 1
	# stdout, a file there, has no escape at all
	run -1 grep -c $'\e' "$BATS_TEST_TMPDIR/out.jsonl"
	# NO_COLOR: the same lines, plain
	run -4 env NO_COLOR=1 python3 "$FORGE_ROOT/tests/helpers/pty_run.py" --transcript "$BATS_TEST_TMPDIR/plain" -- \
		sh -c 'forge-review --no-input --commit HEAD >/dev/null'
	run -1 grep -c $'\e' "$BATS_TEST_TMPDIR/plain"
	run -0 grep -cxF "$FINDING" "$BATS_TEST_TMPDIR/plain"
	assert_output 1
	# a terminal with no TERM (or an empty one) is taken as TERM=dumb: plain
	# (before: coloured, the escapes shown as they are where none is understood)
	for how in "env -u TERM" "env TERM="; do
		run -4 python3 "$FORGE_ROOT/tests/helpers/pty_run.py" --transcript "$BATS_TEST_TMPDIR/noterm" -- \
			$how sh -c 'forge-review --no-input --commit HEAD >/dev/null'
		run -1 grep -c $'\e' "$BATS_TEST_TMPDIR/noterm"
		run -0 grep -cxF "$FINDING" "$BATS_TEST_TMPDIR/noterm"
	done
	# piped stderr (the first test's exact lines): no escapes either
	run -4 --separate-stderr forge-review --no-input --commit HEAD </dev/null
	[[ "$stderr" != *$'\e'* ]]
}

@test "a finding's message cannot drive the terminal: control characters are printed as spaces" {
	notes_repo
	# a lint command (the configured layer 1) whose message carries an escape sequence
	printf '%s\n' '#!/bin/sh' 'printf "notes.txt:1:1: warning: bad \033]0;pwned\007 title\n"' >lint.sh
	chmod +x lint.sh
	echo '{"tools":{"lint_command":"./lint.sh"}}' >"$BATS_TEST_TMPDIR/lint.json"
	git add lint.sh && git commit -qm lint
	run -4 --separate-stderr forge-review --config "$BATS_TEST_TMPDIR/lint.json" --no-input --base HEAD~2 </dev/null
	assert_equal "$(head -n 1 <<<"$stderr")" "notes.txt:1: warning: bad  ]0;pwned  title [lint/diagnostic]"
	[[ "$stderr" != *$'\e'* ]]
	[[ "$stderr" != *$'\a'* ]]
}

@test "a finding's file whose name holds a newline or an escape is one name, quoted as git quotes it" {
	notes_repo
	printf 'more\ntoken %s\n' "$TOKEN" >"$(printf 'no\ntes.txt')"
	printf 'token %s\n' "$TOKEN" >"$(printf 'x\033[2Jy.txt')"
	git add -A && git commit -qm "odd names"
	run -4 --separate-stderr forge-review --no-input --commit HEAD </dev/null
	# (before: "no tes.txt:2: ..." and "x [2Jy.txt:1: ...", names made up of others)
	[ "$(grep -c ': critical: possible GitHub token' <<<"$stderr")" -eq 2 ]
	grep -qF '"no\ntes.txt":2: critical: possible GitHub token' <<<"$stderr"
	grep -qF '"x\033[2Jy.txt":1: critical: possible GitHub token' <<<"$stderr"
}

# ---- forge-test alone --------------------------------------------------------

@test "forge-test alone: each failing test with its first lines, then the counts; stdout unchanged" {
	bats_repo '@test "adds numbers" {' '  [ "$(( 2 - 2 ))" -eq 4 ]' '}' '@test "ok" { true; }' '@test "later" { skip "not yet"; }'
	run -1 --separate-stderr ft --no-input </dev/null
	assert_equal "$stderr" "tests/t.bats:2: FAIL adds numbers (real)
    \`[ \"\$(( 2 - 2 ))\" -eq 4 ]' failed
    (in test file tests/t.bats, line 2)
forge-test: 1 passed, 1 failed, 1 skipped, 0 flaky (bats tests)
forge-test: rejected: 1 of 3 tests failed (1 real, 0 environment)"
	loud=$(record_types <<<"$output")
	run -1 --separate-stderr ft -q --no-input </dev/null
	assert_equal "$stderr" ""
	assert_equal "$(record_types <<<"$output")" "$loud"
}

@test "forge-test alone: a failure of the whole command shows the last lines of its output, where make says what failed" {
	make_repo "$BATS_TEST_TMPDIR/repo"
	REPO="$BATS_TEST_TMPDIR/repo"
	# a C project's make check: the compiler's lines, then the assertion
	# (before: the first four compiler lines, and not a word of what failed)
	cmd="printf 'cc -c a.c\ncc -c b.c\ncc -c c.c\ncc -c d.c\ncc -o t t.o a.o\n./t\nt: t.c:3: main: Assertion failed.\n'; echo 'make: *** [Makefile:4: check] Aborted'; exit 2"
	run -1 --separate-stderr ft --no-input --command "$cmd" </dev/null
	assert_equal "$stderr" "forge-test: FAIL $cmd (real)
    the test command exited with status 2
    [… 4 lines before]
    cc -o t t.o a.o
    ./t
    t: t.c:3: main: Assertion failed.
    make: *** [Makefile:4: check] Aborted
forge-test: 0 passed, 1 failed, 0 skipped, 0 flaky ($cmd)
forge-test: rejected: 1 of 1 test failed (1 real, 0 environment)"
	# every test passed, the command failed after them: its end says why
	cmd="printf '1..2\nok 1 - a\nok 2 - b\nvalgrind: 1 leak\n'; echo 'make: *** [Makefile:8: test] Error 1'; exit 2"
	run -1 --separate-stderr ft --no-input --command "$cmd" </dev/null
	assert_equal "$(head -n 8 <<<"$stderr")" "forge-test: FAIL exit status (real)
    the test command exited with status 2 though no test failed
    [… 1 line before]
    ok 1 - a
    ok 2 - b
    valgrind: 1 leak
    make: *** [Makefile:8: test] Error 1
forge-test: 2 passed, 1 failed, 0 skipped, 0 flaky ($cmd)"
}

@test "forge-test alone: a passing suite prints its counts only" {
	bats_repo '@test "one" { true; }' '@test "two" { true; }'
	run -0 --separate-stderr ft --no-input </dev/null
	assert_equal "$stderr" "forge-test: 2 passed, 0 failed, 0 skipped, 0 flaky (bats tests)"
}

@test "forge-test without a test command: nothing was tested, on stderr and in the state" {
	make_repo "$BATS_TEST_TMPDIR/empty"
	run -0 --separate-stderr forge-test --repo "$BATS_TEST_TMPDIR/empty" --no-input </dev/null
	assert_equal "$stderr" "$NOT_TESTED"
	tail -n 1 <<<"$output" | jq -e '.tests.not_run == "no test command (set tools.test_command)"
		and .tests.summary.total == 0 and .tests.format == "none"'
	# (exit 0: the state it wrote passed its schema check)
	run -0 --separate-stderr forge-test -q --repo "$BATS_TEST_TMPDIR/empty" --no-input </dev/null
	assert_equal "$stderr" ""
}

# ---- forge run ---------------------------------------------------------------

@test "forge run without a test command: the summary and a stderr line say nothing was tested; phases print no report" {
	calc_replay
	sed -i 's/^check: calc/verify: calc/' Makefile
	git commit -qam "no check target"
	run -0 --separate-stderr forge run "add a mul operation" </dev/null
	assert_line "  tests     none run: no test command (set tools.test_command)"
	[[ "$stderr" == *$'\n'"  [test] $NOT_TESTED"$'\n'* ]]
	# under forge-supervisor the filters leave the telling to the summary
	[[ "$stderr" != *"forge-review: approve"* ]]
	[[ "$stderr" != *"passed, 0 failed"* ]]
	run -0 forge status --json "$(last_trace)"
	jq -e '.state.tests.not_run == "no test command (set tools.test_command)"' <<<"$output"
	run -0 forge show "$(last_trace)"
	assert_line "tests     none run: no test command (set tools.test_command)"
}

@test "forge run --dry-run: the plan, readable; no worktree, branch or change; recorded as a dry run" {
	calc_replay
	run -0 --separate-stderr forge run --dry-run -q "add a mul operation" </dev/null
	assert_equal "$output" "$PLAN_TEXT"
	T=$(last_trace)
	[ -z "$(git branch --list 'forge/*')" ]
	[ "$(git worktree list | wc -l)" -eq 1 ]
	[ -z "$(git status --porcelain --untracked-files=no)" ]
	[ "$(git rev-parse HEAD)" = "$BASE" ]
	run -0 forge events replay "$T"
	jq -se 'map(select(.type == "run.started"))[0].payload.dry_run == true' <<<"$output"
	run -0 forge status --json "$T"
	jq -e '.run.status == "completed" and .state.phase == "plan" and .state.task.worktree == null' <<<"$output"
	# without -q the run's summary follows the plan
	run -0 --separate-stderr forge run --dry-run "add a mul operation" </dev/null
	assert_equal "$(head -n 8 <<<"$output")" "$PLAN_TEXT"
	assert_line "Run $(last_trace) completed (dry run: no worktree or branch was made)"
}

@test "forge run --dry-run --json: the plan's JSON alone" {
	calc_replay
	run -0 --separate-stderr forge run --dry-run --json "add a mul operation" </dev/null
	[ "${#lines[@]}" -eq 1 ]
	assert_equal "$(jq -c 'del(.version)' <<<"$output")" \
		"$(grep -m1 '"name":"finish"' "$CASSETTES/run-clean.jsonl" | jq -c '.response.tool_calls[0].input')"
	# --phases must start with plan
	run -2 --separate-stderr forge run --dry-run --phases implement "add a mul operation" </dev/null
	[[ "$stderr" == *"--dry-run runs the plan phase alone"* ]]
}

@test "a dry run whose plan failed stays a dry run when resumed" {
	calc_setup
	# a cassette without plan answers: the plan phase fails
	grep -v '"phase":"plan"' "$CASSETTES/run-clean.jsonl" >"$BATS_TEST_TMPDIR/noplan.jsonl"
	export FORGE_PROVIDER=replay FORGE_CASSETTE="$BATS_TEST_TMPDIR/noplan.jsonl"
	run -5 --separate-stderr forge run --dry-run -q "add a mul operation" </dev/null
	T=$(last_trace)
	export FORGE_CASSETTE="$CASSETTES/run-clean.jsonl"
	run -0 --separate-stderr forge resume -q "$T" </dev/null
	assert_equal "$output" "$PLAN_TEXT"
	run -0 forge events replay "$T"
	[ "$(jq -r 'select(.type == "pipeline.state_changed") | .payload.to' <<<"$output" | tail -n 1)" = completed ]
	[[ "$output" != *'"to":"implementing"'* ]]
	[ -z "$(git branch --list 'forge/*')" ]
}

@test "no key for the configured provider: exit 2 naming the variable, before anything is made" {
	calc_setup
	run -2 --separate-stderr env FORGE_PROVIDER=anthropic forge run "add a mul operation" </dev/null
	assert_equal "$stderr" "forge run: the plan phase has no model: ANTHROPIC_API_KEY is not set (or put the key in a file named by FORGE_ANTHROPIC_KEY_FILE); nothing was started"
	run -2 --separate-stderr env FORGE_PROVIDER=openai forge run --dry-run "add a mul operation" </dev/null
	assert_equal "$stderr" "forge run: the plan phase has no model: OPENAI_API_KEY is not set (or put the key in a file named by FORGE_OPENAI_KEY_FILE); nothing was started"
	run -2 --separate-stderr forge run "add a mul operation" </dev/null
	[[ "$stderr" == *"no model provider configured: set ANTHROPIC_API_KEY or OPENAI_API_KEY"* ]]
	# the implement phase's own provider is checked too
	mkdir -p .forge
	echo '{"llm":{"phases":{"implement":{"provider":"openai"}}}}' >.forge/config.json
	run -2 --separate-stderr env FORGE_PROVIDER=replay FORGE_CASSETTE="$CASSETTES/run-clean.jsonl" \
		forge run "add a mul operation" </dev/null
	[[ "$stderr" == "forge run: the implement phase has no model: OPENAI_API_KEY is not set"* ]]
	# nothing was made: no run, no branch, no worktree
	run -0 forge history --json
	assert_output ""
	[ -z "$(git branch --list 'forge/*')" ]
	[ "$(git worktree list | wc -l)" -eq 1 ]
}

@test "a compatible server on a loopback base URL needs no key: the first call finds it down (exit 5)" {
	calc_setup
	run -5 --separate-stderr env FORGE_PROVIDER=openai FORGE_BASE_URL=http://127.0.0.1:9/v1 FORGE_LLM_MAX_RETRIES=0 \
		forge run --dry-run "add a mul operation" </dev/null
	[[ "$stderr" != *"has no model"* ]]
	[ -n "$(last_trace)" ]
}

@test "uncommitted changes to tracked files: one warning line and an event; not with -q, untracked files or a dry run" {
	calc_replay
	echo "/* local */" >>calc.c
	run -0 --separate-stderr forge run --phases plan "add a mul operation" </dev/null
	assert_equal "$(head -n 1 <<<"$stderr")" "forge run: warning: the checkout has uncommitted changes to tracked files; the run starts from HEAD and will not see them (commit or stash them first)"
	[ "$(grep -c 'uncommitted' <<<"$stderr")" -eq 1 ]
	run -0 forge events replay "$(last_trace)"
	jq -se 'map(select(.type == "run.checkout_dirty"))[0].payload.base_ref == "HEAD"' <<<"$output"
	run -0 --separate-stderr forge run -q --phases plan "add a mul operation" </dev/null
	assert_equal "$stderr" ""
	run -0 --separate-stderr forge run --dry-run "add a mul operation" </dev/null
	[[ "$stderr" != *"uncommitted"* ]]
	git checkout -q calc.c
	echo new >untracked.txt
	run -0 --separate-stderr forge run --phases plan "add a mul operation" </dev/null
	[[ "$stderr" != *"uncommitted"* ]]
}

# ---- the reader of stdout gone -------------------------------------------------

# no_reader CMD...: run CMD with stdout a pipe whose read end is closed before
# it starts (no race with a reader that exits); prints "STATUS" then stderr.
no_reader() {
	python3 - "$@" <<-'PY'
		import os, subprocess, sys
		r, w = os.pipe()
		os.close(r)
		p = subprocess.run(sys.argv[1:], stdout=w, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
		print(p.returncode)
		sys.stdout.write(p.stderr.decode(errors="replace"))
	PY
}

@test "every phase ends with 141 and says nothing when the reader of its stdout has gone" {
	calc_replay
	# (before: exit 5 and lines such as "cannot write to standard output: Success")
	run -0 no_reader forge-plan --task "add a mul operation"
	assert_output "141"
	echo "/* x */" >>calc.c
	run -0 no_reader sh -c 'git diff | forge-review -q'
	assert_output "141"
	run -0 no_reader forge-test -q --no-input
	assert_output "141"
	forge-plan -q --task "add a mul operation" | forge events store >"$BATS_TEST_TMPDIR/plan.out"
	run -0 no_reader forge-events replay "$(tail -n 1 "$BATS_TEST_TMPDIR/plan.out" | jq -r .trace_id)"
	assert_output "141"
}

@test "events alone, with no state and no task: refused (exit 2) before any model is asked, the events forwarded" {
	calc_replay
	forge-plan -q --task "add a mul operation" >"$BATS_TEST_TMPDIR/plan.out"
	head -n 3 "$BATS_TEST_TMPDIR/plan.out" >"$BATS_TEST_TMPDIR/events"
	# (before: forge-plan made up the task "forge-plan on the repository" and planned it)
	run -2 --separate-stderr forge-plan <"$BATS_TEST_TMPDIR/events"
	[[ $stderr == "forge-plan: no state in the input, only events: pipe a phase's whole output (its last line is the state)"* ]]
	[ "$(head -n 3 <<<"$output")" = "$(cat "$BATS_TEST_TMPDIR/events")" ]
	[ "$(jq -r .type <<<"${lines[-1]}")" = input.rejected ]
	[ "${#lines[@]}" -eq 4 ]		# the three events and the rejection: no model call
	# a phase that can work alone says how
	run -2 --separate-stderr forge-test <"$BATS_TEST_TMPDIR/events"
	[[ $stderr == *"no state in the input, only events"*"to work on the repository alone, pass --no-input" ]]
}

@test "a stream whose only state has a kind in the wrong case is told so, not \"only events\"" {
	calc_replay
	forge-plan -q --task "add a mul operation" | tail -n 1 | sed 's/"kind":"state"/"kind":"State"/' \
		>"$BATS_TEST_TMPDIR/State"
	# (before: "no state in the input, only events", with no event in it)
	run -2 --separate-stderr forge-implement <"$BATS_TEST_TMPDIR/State"
	assert_equal "$stderr" 'forge-implement: line 1: no state in the input: this record'"'"'s kind is "State", which is not "state" (kinds are lower case; a record of another kind is passed on unread)'
	# records of other kinds alone: said as such
	run -2 --separate-stderr forge-test < <(printf '%s\n' '{"kind":"note","text":"n"}' '{"kind":"note","text":"m"}')
	assert_equal "$stderr" 'forge-test: no state in the input, only 2 records of other kinds (the first on line 1, of kind "note"), which are passed on unread: pipe a phase'"'"'s whole output (its last line is the state); to work on the repository alone, pass --no-input'
	[ "${lines[0]}" = '{"kind":"note","text":"n"}' ]
}

@test "an operand is refused by every phase filter (exit 2, saying how the input is given), not dropped for what stdin holds" {
	calc_replay
	# (before: the operand was dropped: this planned "some other text" and
	# exited 0, and forge-test --no-input FILE ran the whole suite)
	run -2 --separate-stderr bash -c 'echo "some other text" | forge-plan "add a --version flag"'
	[ "$stderr" = "forge-plan: unexpected operand 'add a --version flag': forge-plan takes no operand; give the task with --task TEXT, or pipe a state, {\"task\": …} or a task description on stdin
Try 'forge-plan --help' for more information." ]
	assert_output ""
	run -2 --separate-stderr forge-test --no-input no/such/test/file
	[[ $stderr == "forge-test: unexpected operand 'no/such/test/file': "*"or pass --no-input to work on the repository alone"$'\n'"Try 'forge-test --help'"* ]]
	assert_output ""
	# every other phase, an operand among options too; forge-stage after its
	# stage's name, forge-agent (a sub-agent) alike
	for cmd in "forge-implement stray" "forge-review -q stray --base HEAD" "forge-deploy --no-input stray" \
		   "forge-stage flows stray" "forge-agent stray" "forge-plan --task x -- stray"; do
		run -2 --separate-stderr $cmd </dev/null
		[[ $stderr == *": unexpected operand 'stray'"* ]]
		assert_output ""
	done
}

@test "outside a git repository, forge-review --base/--commit and forge-deploy are a usage error (exit 2) as with --repo ." {
	# (before: exit 5, "dependency failed", with a failed state, when --repo
	# was left to its default; exit 2 with --repo .)
	mkdir "$BATS_TEST_TMPDIR/plain"
	cd "$BATS_TEST_TMPDIR/plain"
	for cmd in "forge-review --base HEAD" "forge-review --commit HEAD" "forge-deploy"; do
		run -2 --separate-stderr $cmd --no-input
		[[ $stderr == *"'.' is not in a git repository"* ]]
		jq -e -s 'map(select(.kind == "state")) | length == 0' <<<"$output"
		jq -e -s 'any(.[]; .type == "input.rejected")' <<<"$output"
		run -2 --separate-stderr $cmd --no-input --repo .
	done
}

@test "outside a git repository every phase that works on one refuses (exit 2, input.rejected, no state); forge-review of a piped diff still works (hunt69 #2)" {
	mkdir "$BATS_TEST_TMPDIR/plain"
	cd "$BATS_TEST_TMPDIR/plain"
	plain="'.' is not in a git repository ($BATS_TEST_TMPDIR/plain)"
	export FORGE_PROVIDER=anthropic FORGE_BASE_URL=http://127.0.0.1:9 ANTHROPIC_API_KEY=test-key
	plan='{"kind":"state","v":1,"trace_id":"01JDB2AAAAAAAAAAAAAAAAAAAA","phase":"plan","status":"ok","task":{"description":"x"},"plan":{"summary":"s","tasks":[{"id":"t1","title":"t","description":"d"}],"risk":{"level":"low"}},"bounces":[]}'
	# (before: forge-test --no-input exit 0, "nothing was tested"; forge-plan and
	# forge-implement called the model with no files to read)
	for cmd in "forge-plan" "forge-implement" "forge-test --no-input" "forge-test" "forge-review" \
		   "forge-review --no-input --base HEAD" "forge-deploy --no-input" "forge-deploy"; do
		run -2 --separate-stderr $cmd <<<"$plan"
		[[ $stderr == "${cmd%% *}: $plain: ${cmd%% *} works on one; run it inside one, or pass --repo DIR" ]] ||
			{ echo "$cmd: $stderr"; false; }
		jq -e -s 'map(select(.kind == "state")) | length == 0' <<<"$output"
		jq -e -s 'any(.[]; .type == "input.rejected")' <<<"$output"
	done
	# a state whose repository is gone: refused, naming it
	run -2 --separate-stderr forge-implement <<<"$(jq -c '.task.repo = "/nonexistent/r"' <<<"$plan")"
	[[ $stderr == "forge-implement: the input state's repository '/nonexistent/r' is not here, and $plain: run forge-implement inside a clone of it, or pass --repo DIR" ]]
	# a diff on stdin needs no repository
	run -0 --separate-stderr forge-review <<<$'--- a/x.txt\n+++ b/x.txt\n@@ -1 +1 @@\n-a\n+b'
	tail -n 1 <<<"$output" | jq -e '.status == "ok" and .review.decision == "approve"'
}

@test "a file-size limit (ulimit -f): a write past it is reported, exit 5, not a death by SIGXFSZ (153) without a word" {
	calc_replay
	# (before: killed as the database was made, exit 153, nothing on stderr)
	run -5 --separate-stderr bash -c 'ulimit -f 1 && exec forge-db migrate --db "$1"' _ "$BATS_TEST_TMPDIR/x.db"
	[[ $stderr == "forge-db: database '$BATS_TEST_TMPDIR/x.db': "?* ]]
	# the limit is named (before: "disk I/O error (sqlite code 778)", the words of a failing disk)
	[[ $stderr == *"cannot grow past this process's file-size limit (ulimit -f, RLIMIT_FSIZE): raise the limit"* ]]
	run -5 --separate-stderr bash -c 'ulimit -f 1 && exec forge run "add a mul operation"' </dev/null
	[[ $stderr == "forge run: database '$FORGE_DB': "?* ]]
	# through forge, which gives the command the disposition it was given
	run -5 --separate-stderr bash -c 'ulimit -f 1 && exec forge db migrate --db "$1"' _ "$BATS_TEST_TMPDIR/y.db"
	[[ $stderr == "forge-db: database '$BATS_TEST_TMPDIR/y.db': "?* ]]
}

@test "a command forge runs (a linter) gets SIGXFSZ and SIGPIPE at their defaults, as from a shell, though forge ignores them" {
	notes_repo
	# its finding's message: the signals ignored in the linter (SigIgn, a hex mask)
	printf '%s\n' '#!/bin/sh' 'printf "notes.txt:1:1: warning: ignored %s\n" "$(awk "/^SigIgn/ { print \$2 }" /proc/self/status)"' >lint.sh
	chmod +x lint.sh
	echo '{"tools":{"lint_command":"./lint.sh"}}' >"$BATS_TEST_TMPDIR/lint.json"
	git add lint.sh && git commit -qm lint
	run -4 --separate-stderr forge-review --config "$BATS_TEST_TMPDIR/lint.json" --no-input --base HEAD~2 </dev/null
	mask=$(sed -n 's/^notes.txt:1: warning: ignored \([0-9a-f]*\) \[lint\/diagnostic\]$/\1/p' <<<"$stderr")
	[ -n "$mask" ]
	# SIGPIPE is 13, SIGXFSZ 25: bits 12 and 24
	(( (16#$mask & (1 << 12 | 1 << 24)) == 0 ))
}

@test "another user's repository: every program refuses it (exit 2) saying how to trust it; safe.directory '*' or its path, as git takes them, opens it" {
	[ "$(id -u)" = 0 ] || skip "needs root to give the repository to another user"
	make_repo "$BATS_TEST_TMPDIR/theirs"
	local r
	r=$(cd "$BATS_TEST_TMPDIR/theirs" && pwd -P)
	chown -R 65534:65534 "$r"
	cd "$r"
	export FORGE_PROVIDER=replay FORGE_CASSETTE="$FORGE_ROOT/tests/fixtures/cassettes/run-clean.jsonl"
	local said="the repository at '$r' is owned by another user (uid 65534); if you trust it, run \`git config --global --add safe.directory $r\`"
	# (before: "'.' is not in a git repository: config value 'safe.directory'
	# was not found"; forge-deploy "run it in one"; forge-test and forge-plan
	# went on as in a plain directory)
	for cmd in "forge-review --no-input --base HEAD" "forge-deploy --no-input" "forge-test --no-input" \
		"forge-plan --task x" "forge run add-a-mul-operation" "forge memory list"; do
		# shellcheck disable=SC2086
		run -2 --separate-stderr $cmd </dev/null
		[[ $stderr == *"$said"* ]]
	done
	[ ! -e .forge ]
	run ! git status
	# (before: refused by every program although git takes it)
	git config --global --add safe.directory '*'
	run -0 git status
	run -0 --separate-stderr forge-review --no-input --base HEAD
	git config --global --unset-all safe.directory
	git config --global --add safe.directory "$r"
	run -0 --separate-stderr forge-review --no-input --base HEAD
	run -0 --separate-stderr forge-deploy --no-input
	# what git does not take, Forge does not either: its own configuration's
	git config --global --unset-all safe.directory
	git config -f .git/config safe.directory '*'
	run -2 --separate-stderr forge-review --no-input --base HEAD
	[[ $stderr == *"$said"* ]]
}

# trusted_as_git_says YES|NO [NAME=VALUE...]: git and Forge, with the
# environment NAME=VALUE..., both open the repository in the current
# directory (YES) or both refuse it (NO): git's status, then Forge's.
trusted_as_git_says() {
	local want=$1
	shift
	if [ "$want" = YES ]; then
		run -0 env "$@" git status
		run -0 --separate-stderr env "$@" forge memory list
	else
		run -128 env "$@" git status
		run -2 --separate-stderr env "$@" forge memory list
		[[ $stderr == *"is owned by another user (uid 65534)"* ]]
	fi
}

@test "another user's repository: safe.directory is read where git reads it: GIT_CONFIG_GLOBAL, GIT_CONFIG_SYSTEM, GIT_CONFIG_NOSYSTEM, the XDG file, the command line (GIT_CONFIG_COUNT, git -c)" {
	[ "$(id -u)" = 0 ] || skip "needs root to give the repository to another user"
	make_repo "$BATS_TEST_TMPDIR/theirs"
	local r c="$BATS_TEST_TMPDIR/conf"
	r=$(cd "$BATS_TEST_TMPDIR/theirs" && pwd -P)
	chown -R 65534:65534 "$r"
	cd "$r"
	mkdir -p "$c"
	printf '[safe]\n\tdirectory = *\n' >"$c/all"
	printf '[safe]\n\tdirectory = %s\n' "$r" >"$c/this"
	printf '[safe]\n\tdirectory =\n' >"$c/none"
	# (before: Forge read ~/.gitconfig and /etc/gitconfig whatever these said)
	trusted_as_git_says NO
	trusted_as_git_says YES GIT_CONFIG_GLOBAL="$c/all"
	trusted_as_git_says YES GIT_CONFIG_GLOBAL="$c/this"
	trusted_as_git_says YES GIT_CONFIG_SYSTEM="$c/all"
	trusted_as_git_says NO GIT_CONFIG_SYSTEM="$c/all" GIT_CONFIG_NOSYSTEM=1
	trusted_as_git_says YES GIT_CONFIG_SYSTEM="$c/all" GIT_CONFIG_NOSYSTEM=false
	# the global file comes after the system's: its empty value clears it
	trusted_as_git_says NO GIT_CONFIG_SYSTEM="$c/all" GIT_CONFIG_GLOBAL="$c/none"
	git config --global safe.directory '*'
	trusted_as_git_says YES
	trusted_as_git_says NO GIT_CONFIG_GLOBAL=/dev/null
	trusted_as_git_says NO GIT_CONFIG_GLOBAL=
	git config --global --unset-all safe.directory
	mkdir -p "$XDG_CONFIG_HOME/git"
	cp "$c/all" "$XDG_CONFIG_HOME/git/config"
	trusted_as_git_says YES
	trusted_as_git_says NO GIT_CONFIG_GLOBAL="$c/none"
	rm "$XDG_CONFIG_HOME/git/config"
	# the command line, after every file: GIT_CONFIG_COUNT, then git -c's GIT_CONFIG_PARAMETERS
	trusted_as_git_says YES GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=safe.directory GIT_CONFIG_VALUE_0="$r"
	trusted_as_git_says YES GIT_CONFIG_COUNT=2 GIT_CONFIG_KEY_0=user.name GIT_CONFIG_VALUE_0=x \
		GIT_CONFIG_KEY_1=Safe.Directory GIT_CONFIG_VALUE_1='*'
	trusted_as_git_says NO GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=safe.directory GIT_CONFIG_VALUE_0= \
		GIT_CONFIG_GLOBAL="$c/all"
	trusted_as_git_says YES GIT_CONFIG_PARAMETERS="'safe.directory'='$r'"
	trusted_as_git_says YES GIT_CONFIG_PARAMETERS="'user.name'='a b' 'safe.directory=*'"
	trusted_as_git_says NO GIT_CONFIG_PARAMETERS="'safe.directory'='*' 'safe.directory'="
	trusted_as_git_says NO GIT_CONFIG_PARAMETERS="'safe.directory'=''" \
		GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=safe.directory GIT_CONFIG_VALUE_0='*'
	run -0 git -c safe.directory="$r" status
	# (Forge run by git -c: an alias)
	run -0 --separate-stderr git -c alias.fm='!forge memory list' -c safe.directory="$r" fm
	run ! --separate-stderr git -c alias.fm='!forge memory list' fm
	[[ $stderr == *"is owned by another user (uid 65534)"* ]]
	# what git refuses to run with, Forge refuses, saying what is wrong
	for bad in "GIT_CONFIG_COUNT=x" "GIT_CONFIG_COUNT=1" "GIT_CONFIG_NOSYSTEM=maybe" \
		"GIT_CONFIG_PARAMETERS='safe.directory" "GIT_CONFIG_PARAMETERS='safe.directory'x"; do
		run ! env "$bad" GIT_CONFIG_GLOBAL="$c/all" git status
		run -2 --separate-stderr env "$bad" GIT_CONFIG_GLOBAL="$c/all" forge memory list
		[[ $stderr == *"is owned by another user (uid 65534), and whether you trust it cannot be read: "*"(git refuses to run with it too); fix or unset it"* ]]
	done
	run -2 --separate-stderr env GIT_CONFIG_COUNT=1 forge memory list
	[[ $stderr == *"cannot be read: missing config key GIT_CONFIG_KEY_0 (git refuses"* ]]
}

@test "forge history, status, cancel, run: what the library says names the command (forge history:), as its own messages do" {
	# (before: "forge: no database at …" from forge history and forge
	# status, the name forge-supervisor was executed by)
	local gone="$BATS_TEST_TMPDIR/no-such-dir/forge.db"
	make_repo "$BATS_TEST_TMPDIR/repo"
	cd "$BATS_TEST_TMPDIR/repo"
	run -0 --separate-stderr forge history --db "$gone" --json
	[[ "${stderr_lines[0]}" == "forge history: no database at '$gone': "* ]] || { echo "$stderr"; false; }
	run -1 --separate-stderr forge status --db "$gone"
	[[ "${stderr_lines[0]}" == "forge status: no database at '$gone': "* ]] || { echo "$stderr"; false; }
	run -2 --separate-stderr forge cancel --db "$gone" NOSUCH
	[[ "${stderr_lines[0]}" == "forge cancel: no database at '$gone': "* ]] || { echo "$stderr"; false; }
	# forge-supervisor run by its own name keeps it
	run -0 --separate-stderr forge-supervisor history --db "$gone"
	[[ "${stderr_lines[0]}" == "forge-supervisor: no database at '$gone': "* ]] || { echo "$stderr"; false; }
	# a warning of the configuration's, from forge run
	mkdir -p .forge
	echo '{"llm":{"base_url":"http://127.0.0.1:9/v1"}}' >.forge/config.json
	run -5 --separate-stderr forge run --dry-run --provider replay --cassette /dev/null "x" </dev/null
	[[ $stderr == *"forge run: warning: ignoring llm.base_url of $PWD/.forge/config.json: "* ]] || { echo "$stderr"; false; }
}

@test "a read command given a database that does not exist creates nothing: it reads as empty and says where it looked" {
	local gone="$BATS_TEST_TMPDIR/no-such-dir/forge.db"
	local said="no database at '$gone': nothing has been recorded there yet (read as empty; check --db or FORGE_DB)"
	export FORGE_DB="$gone"
	make_repo "$BATS_TEST_TMPDIR/repo"
	cd "$BATS_TEST_TMPDIR/repo"
	for cmd in "history" "status" "metrics" "memory list" "memory stats" "memory search foo" \
		"memory export" "findings list" "gate list"; do
		# shellcheck disable=SC2086
		run --separate-stderr forge $cmd --db "$gone"
		[[ "$stderr" == *"$said"* ]] || { echo "$cmd: $stderr"; false; }
		[ ! -e "$BATS_TEST_TMPDIR/no-such-dir" ] || { echo "$cmd made it"; false; }
	done
	run -0 --separate-stderr forge memory search --json foo --db "$gone"
	[ -z "$output" ]
	# FORGE_DB (set once for many commands): nothing made, nothing said
	run -0 --separate-stderr forge memory list
	[ -z "$stderr" ]
	[ ! -e "$BATS_TEST_TMPDIR/no-such-dir" ]
	# the repository's own database, not there yet: nothing made, nothing said
	unset FORGE_DB
	run -0 --separate-stderr forge history
	run -0 --separate-stderr forge memory search foo
	[ -z "$stderr" ]
	[ ! -e .forge/forge.db ]
	# a command that records still makes it
	run -0 forge memory add "a lesson about foo"
	run -0 forge memory search foo
	[[ "$output" == *"a lesson about foo"* ]]
}

@test "a database path that names a directory, a device or a named pipe: refused (exit 5) saying what it is and what to give, never waited on" {
	skip_on_postgres "the SQLite file's path"
	make_repo "$BATS_TEST_TMPDIR/repo"
	cd "$BATS_TEST_TMPDIR/repo"
	mkdir "$BATS_TEST_TMPDIR/dbdir"
	mkfifo "$BATS_TEST_TMPDIR/pipe"
	local dir="cannot open database '$BATS_TEST_TMPDIR/dbdir': it is a directory; give --db (or FORGE_DB) the path of a file, such as '$BATS_TEST_TMPDIR/dbdir/forge.db'"
	local cmd
	# (before: "disk I/O error (sqlite code 10)"; /dev/null's "'COMMIT'
	# failed ... its schema is older than this forge's"; a named pipe was
	# opened and waited on for ever: the timeout only bounds a regression)
	for cmd in "history" "memory list" "memory add x" "db status" "db migrate" "findings list"; do
		# shellcheck disable=SC2086
		run -5 --separate-stderr timeout 60 forge $cmd --db "$BATS_TEST_TMPDIR/dbdir"
		[[ "$stderr" == *"$dir" ]] || { echo "$cmd: $stderr"; false; }
		# shellcheck disable=SC2086
		run -5 --separate-stderr timeout 60 forge $cmd --db /dev/null
		[[ "$stderr" == *"cannot open database '/dev/null': it is not a regular file (a character device); give --db (or FORGE_DB) the path of a file" ]] ||
			{ echo "$cmd: $stderr"; false; }
		# shellcheck disable=SC2086
		run -5 --separate-stderr timeout 60 forge $cmd --db "$BATS_TEST_TMPDIR/pipe"
		[[ "$stderr" == *"it is not a regular file (a named pipe)"* ]] || { echo "$cmd: $stderr"; false; }
	done
	[ -z "$(ls -A "$BATS_TEST_TMPDIR/dbdir")" ]
	# a phase that stores what it found says so too, its events forwarded
	run -5 --separate-stderr env FORGE_DB="$BATS_TEST_TMPDIR/dbdir" forge-review --base HEAD --no-input
	[[ "$stderr" == *"$dir"* ]]
}

@test "--task is instead of stdin: what is waiting there is not read, and a warning says so" {
	make_repo "$BATS_TEST_TMPDIR/repo"
	cd "$BATS_TEST_TMPDIR/repo"
	printf '{"kind":"event","id":"01JDB2AAAAAAAAAAAAAAAAAAAA","type":"x"}\n' >"$BATS_TEST_TMPDIR/events.jsonl"
	# (before: the events were dropped without a word)
	run --separate-stderr forge-plan --task "add a mul operation" --provider replay \
		--cassette "$BATS_TEST_TMPDIR/none.jsonl" <"$BATS_TEST_TMPDIR/events.jsonl"
	[[ "$stderr" == *"forge-plan: warning: --task given: standard input is not read (62 bytes there)"* ]]
	run --separate-stderr forge-plan --task "add a mul operation" --provider replay \
		--cassette "$BATS_TEST_TMPDIR/none.jsonl" </dev/null
	[[ "$stderr" != *"is not read"* ]]
}

@test "the run's worktree gone (git worktree remove, forge gc): forge-test and forge-deploy make it again at the state's commit, never work in the checkout" {
	# (before: both fell back to the checkout on main, tested 3 tests of 5 and
	# deployed main's commit, and reported ok / healthy)
	calc_replay
	forge-plan -q --task "add a mul operation" | forge-implement -q | forge-review -q >"$BATS_TEST_TMPDIR/r.jsonl"
	W=$(tail -n 1 "$BATS_TEST_TMPDIR/r.jsonl" | jq -r .task.worktree)
	C=$(tail -n 1 "$BATS_TEST_TMPDIR/r.jsonl" | jq -r .changes.commit)
	git worktree remove --force "$W"
	run -0 --separate-stderr forge-test -q <"$BATS_TEST_TMPDIR/r.jsonl"
	jq -e -s --arg w "$W" --arg c "$C" '([.[] | select(.type == "test.started") | .payload.dir] == [$w])
		and ([.[] | select(.type == "run.adopted") | .payload.commit] == [$c])' <<<"$output"
	tail -n 1 <<<"$output" | jq -e '.status == "ok" and .tests.summary.total == 5'
	tail -n 1 <<<"$output" >"$BATS_TEST_TMPDIR/t.jsonl"
	# forge-deploy's command strategy runs where the state's commit is checked out
	mkdir "$BATS_TEST_TMPDIR/out"
	jq -n --arg o "$BATS_TEST_TMPDIR/out" '{deploy:{strategy:"command"}, sandbox:{writable:[$o]},
		tools:{build_command:"true", deploy_command:("git rev-parse HEAD >" + $o + "/commit")}}' >"$BATS_TEST_TMPDIR/d.json"
	git worktree remove --force "$W"
	run -0 --separate-stderr forge-deploy -q --config "$BATS_TEST_TMPDIR/d.json" <"$BATS_TEST_TMPDIR/t.jsonl"
	[ "$(cat "$BATS_TEST_TMPDIR/out/commit")" = "$C" ]
	# the branch gone too, its commit still here: the branch is made again at it
	git worktree remove --force "$W" && git branch -qD "forge/$(jq -r .trace_id "$BATS_TEST_TMPDIR/t.jsonl")"
	run -0 --separate-stderr forge-test -q <"$BATS_TEST_TMPDIR/r.jsonl"
	tail -n 1 <<<"$output" | jq -e '.status == "ok" and .tests.summary.total == 5'
	# a commit made in the worktree after review: tested is the state's commit, with a warning
	echo 'this is not C' >>"$W/calc.c"
	git -C "$W" commit -qam "after review"
	X=$(git -C "$W" rev-parse HEAD)
	run -0 --separate-stderr forge-test <"$BATS_TEST_TMPDIR/r.jsonl"
	[[ $stderr == *"warning: the run's branch forge/"*" is at ${X:0:12}, past the commit the state names (changes.commit ${C:0:12})"* ]]
	jq -e -s --arg x "$X" '[.[] | select(.type == "run.adopted") | .payload.branch_tip] == [$x]' <<<"$output"
	tail -n 1 <<<"$output" | jq -e '.status == "ok" and .tests.summary.failed == 0'
	# neither worktree, branch nor commit here, no remote: nothing run, exit 5
	git worktree remove --force "$W" && git branch -qD "forge/$(jq -r .trace_id "$BATS_TEST_TMPDIR/t.jsonl")"
	jq -c '.changes.commit = "0123456789abcdef0123456789abcdef01234567"' "$BATS_TEST_TMPDIR/t.jsonl" >"$BATS_TEST_TMPDIR/gone.jsonl"
	run -5 --separate-stderr forge-test <"$BATS_TEST_TMPDIR/gone.jsonl"
		[[ $stderr == *"the run's worktree $W is gone, and neither its branch forge/"*" nor the commit the state names (changes.commit 0123456789ab) is in"* ]]
	jq -e -s '[.[] | select(.type == "test.started")] == []' <<<"$output"
}
