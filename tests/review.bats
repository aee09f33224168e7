#!/usr/bin/env bats
# review.bats - forge-review: the three layers on a fixture with a planted
# secret, lint errors and an insecure call; the AI layer against the mock
# provider (only above low risk, asserted on the mock's request log); SARIF;
# findings in the database; bad input.

bats_require_minimum_version 1.5.0

KEY=sk-ant-REVIEWTEST-0000000000000000

load test_helper/mock
mock_per_file 120

setup() {
	load test_helper/common
	forge_setup
	mock_reset
	REPO="$BATS_TEST_TMPDIR/repo"
	make_repo "$REPO"
	cd "$REPO"
}

requests() { curl -sS -f "$MOCK_URL/_mock/requests"; }
# with_mock CMD...: run with the mock as the model provider.
with_mock() { ANTHROPIC_API_KEY=$KEY "$@" --provider anthropic --base-url "$MOCK_URL"; }

plant() {
	cp -r "$FORGE_ROOT/tests/fixtures/review/planted/." "$REPO/"
	git add -A && git commit -q -m planted
}
state() { tail -n 1 <<<"$OUT"; }
finding() { # FILE LINE RULE -> the layer of that finding, or nothing
	state | jq -r --arg f "$1" --argjson l "$2" --arg r "$3" \
		'.review.findings[] | select(.file == $f and .line == $l and .rule == $r) | .layer'
}

@test "planted problems: each is found by the right layer on the right line" {
	plant
	run -4 --separate-stderr forge-review --no-input --commit HEAD
	OUT=$output
	[ "$(finding config.py 3 secret/github-token)" = security ]
	[ "$(finding src/copy.c 8 cppcheck/arrayIndexOutOfBounds)" = static ]
	[ "$(finding scripts/deploy.sh 4 shellcheck/SC3014)" = static ]
	[ "$(finding src/copy.c 9 insecure/c-strcpy)" = security ]
	run jq -r '[.review.decision, .status, (.review.findings[] | select(.rule == "secret/github-token") | .severity)] | join(" ")' <<<"$(state)"
	assert_output "require_human escalated critical"
	# the secret itself appears nowhere in the output
	run grep -c 4kQ9zX2mV7bN1cR8 <<<"$OUT"
	assert_output 0
	assert_equal "$(grep -c 4kQ9zX2mV7 <<<"$(forge-review --no-input --commit HEAD 2>&1)")" 0
}

@test "a linter's findings on a file whose name is not ASCII, under LC_ALL=C as in many containers" {
	command -v shellcheck >/dev/null || skip "shellcheck is not installed (scripts/install-deps)"
	export XDG_CACHE_HOME="$BATS_TEST_TMPDIR/cache"
	mkdir -p scripts
	printf '#!/bin/sh\nX="1"\nrm -rf $X/*\n' >"scripts/déploiement.sh"
	git add -A && git commit -q -m "a script"
	# (before, shellcheck printed the name mangled, its findings matched no
	# file and the review approved; the cache then kept that empty result)
	LC_ALL=C run -0 --separate-stderr forge-review --no-input --commit HEAD
	OUT=$output
	[ "$(finding scripts/déploiement.sh 3 shellcheck/SC2115)" = security ]
	LC_ALL=C.UTF-8 run -0 --separate-stderr forge-review --no-input --commit HEAD
	OUT=$output
	[ "$(finding scripts/déploiement.sh 3 shellcheck/SC2115)" = security ]
}

@test "every file is linted: a name that starts with '-', and the files past the 512th of a language" {
	command -v shellcheck >/dev/null || skip "shellcheck is not installed (scripts/install-deps)"
	export XDG_CACHE_HOME="$BATS_TEST_TMPDIR/cache"
	mkdir -p -- -dash many
	printf '#!/bin/sh\nX="1"\nrm -rf $X/*\n' >"-dash/x.sh"
	for i in $(seq -w 1 520); do printf '#!/bin/sh\necho %s\n' "$i" >"many/s$i.sh"; done
	printf '#!/bin/sh\nX="1"\nrm -rf $X/*\n' >"many/s520.sh"
	git add -A && git commit -q -m "scripts"
	# (before: shellcheck took "-dash/x.sh" for an option and checked
	# nothing, and the files after the 512th were left out; both silently)
	run -0 --separate-stderr forge-review --no-input --commit HEAD
	OUT=$output
	[ "$(finding -dash/x.sh 3 shellcheck/SC2115)" = security ]
	[ "$(finding many/s520.sh 3 shellcheck/SC2115)" = security ]
	[ "$(jq -s '[.[] | select(.type == "review.tool_ran" and .payload.tool == "shellcheck") | .payload.files] | add' <<<"$OUT")" = 521 ]
}

@test "a line that is not UTF-8 (a Latin-1 comment) is still searched for secrets, from stdin and from a commit" {
	# (before: the secret rules skipped such a line, the review approved;
	# from stdin the diff was refused as "invalid UTF-8")
	printf '# caf\351\ntoken = "ghp_4kQ9zX2mV7bN1cR8tY5uW3eL6pA0sD9fG2hJ"  # r\351sum\351\n' >conf.py
	git add -A && git commit -q -m conf
	run -4 --separate-stderr forge-review --no-input --commit HEAD
	OUT=$output
	[ "$(finding conf.py 2 secret/github-token)" = security ]
	run -4 --separate-stderr bash -c 'git show HEAD | forge-review'
	OUT=$output
	[ "$(finding conf.py 2 secret/github-token)" = security ]
}

# series: two commits on src/run.c (the second adds system() on line 4 of
# the result) and docs.txt, each message with a "- " line.
series() {
	mkdir -p src
	printf '#include <stdlib.h>\nint ok(void) { return 0; }\n' >src/run.c
	git add -A && git commit -q -m one -m "- first"
	printf '/* run things */\n#include <stdlib.h>\nint ok(void) { return 0; }\nint run(const char *c) { return system(c); }\n' >src/run.c
	echo docs >docs.txt
	git add -A && git commit -q -m two -m "- add run()" -m "---" -m "- and docs"
}
# The review of a series: system() found on its line of the result, each
# file once, every file seen.
series_reviewed() {
	[ "$(finding src/run.c 4 insecure/c-system)" = security ]
	state | jq -e '.review.files == 2 and (.review | has("not_reviewed") | not)'
	state | jq -e '[.review.findings[] | select(.rule == "forge/not-reviewed")] == []'
}

@test "a git format-patch series on stdin is reviewed: with a diffstat or not, '- ' lines in messages, a cover letter, no signature" {
	series
	# (before: exit 2, "malformed diff: line 27: hunk is longer than its
	# header says" at the second patch's "---", hunt61 #1)
	run -1 --separate-stderr bash -c 'git format-patch -2 --stdout | forge-review'
	OUT=$output
	series_reviewed
	run -1 --separate-stderr bash -c 'git format-patch -2 --stdout --no-stat --no-signature | forge-review'
	OUT=$output
	series_reviewed
	git format-patch -q -2 --cover-letter -o "$BATS_TEST_TMPDIR/p"
	run -1 --separate-stderr bash -c 'cat "$BATS_TEST_TMPDIR"/p/*.patch | forge-review'
	OUT=$output
	series_reviewed
	# the same change as --base sees it
	run -1 --separate-stderr forge-review --no-input --base HEAD~2
	OUT=$output
	series_reviewed
}

@test "a file in several sections of a piped diff is one change: diffs one after another, git log -p (newest first); sections that do not follow are refused" {
	series
	# (before: only the first section's added lines counted: 0 findings,
	# and a not-reviewed warning for a file that "differs", hunt61 #2)
	run -1 --separate-stderr bash -c '{ git diff HEAD~2 HEAD~1; git diff HEAD~1 HEAD; } | forge-review'
	OUT=$output
	series_reviewed
	run -1 --separate-stderr bash -c 'git log -p -2 | forge-review'
	OUT=$output
	series_reviewed
	# two diffs of the file from the same commit: no one change to review
	run -2 --separate-stderr bash -c '{ git diff HEAD~2 HEAD~1; git diff HEAD~2 HEAD; } | forge-review'
	[[ "$stderr" == *"cannot review this diff: 'src/run.c' is in more than one section of the diff (at lines 1 and "*") and they do not follow one another"*"pipe one diff of the whole change"* ]]
	[ "$(jq -r 'select(.type == "input.rejected") | .type' <<<"$output")" = input.rejected ]
	# a secret one commit added and the next removed is still in the commits
	echo 'token = "ghp_4kQ9zX2mV7bN1cR8tY5uW3eL6pA0sD9fG2hJ"' >conf.py
	git add -A && git commit -q -m secret
	echo 'token = os.environ["TOKEN"]' >conf.py
	git commit -q -am "no secret"
	run -4 --separate-stderr bash -c 'git format-patch -2 --stdout | forge-review'
	OUT=$output
	state | jq -e '[.review.findings[] | select(.rule == "secret/github-token") | [.file, .line, .severity]] == [["conf.py", null, "critical"]]'
	state | jq -e '.review.findings[] | select(.rule == "secret/github-token") | .message | test("removed by a later one: the commits in between still hold it")'
}

@test "a symbolic link is not linted as a file: --commit, a piped git show, --base; one where the diff has a file is said to be a link" {
	mkdir bin scripts
	printf '#!/bin/sh\necho run\n' >bin/run.sh
	git add -A && git commit -q -m real
	ln -s ../bin/run.sh scripts/run.sh
	git add -A && git commit -q -m link
	# (before: --commit linted the text "../bin/run.sh" as a shell script,
	# SC2148, exit 1; a piped diff or --base said "cannot open …: Too many
	# levels of symbolic links", hunt61 #4)
	for how in "forge-review --no-input --commit HEAD" "git show | forge-review" \
		   "forge-review --no-input --base HEAD~1"; do
		run -0 --separate-stderr bash -c "$how"
		OUT=$output
		state | jq -e '[.review.findings[] | select(.file == "scripts/run.sh")] == [] and (.review | has("not_reviewed") | not)'
		[ "$(jq -c 'select(.type == "review.symlink_skipped") | .payload' <<<"$OUT")" = '{"file":"scripts/run.sh","target":"../bin/run.sh"}' ]
		[[ "$stderr" != *"symbolic link"* ]]
	done
	# a diff that has a file where the working tree has a link
	printf -- '--- /dev/null\n+++ b/scripts/run.sh\n@@ -0,0 +1 @@\n+../bin/run.sh\n' >"$BATS_TEST_TMPDIR/d.diff"
	# (its only file, so nothing was read; a diff piped by hand is still
	# reviewed as text, each file not read said on stderr)
	run -0 --separate-stderr forge-review <"$BATS_TEST_TMPDIR/d.diff"
	OUT=$output
	[[ "$stderr" == *"scripts/run.sh was not linted or scanned: cannot open '$REPO/scripts/run.sh': it is a symbolic link (not followed)"* ]]
	[[ "$stderr" != *"Too many levels"* ]]
}

@test "a file of text git reads as binary (one NUL byte) is not passed over: a not-reviewed error, said in not_reviewed" {
	printf '/* \0 */\n#include <stdlib.h>\nint run(const char *c) { return system(c); }\n' >hidden.c
	printf 'GIF89a\0\1\2' >logo.gif
	git add -A && git commit -q -m hidden
	# (before: approve, 0 findings, not_reviewed empty)
	run -1 --separate-stderr forge-review --no-input --commit HEAD
	OUT=$output
	state | jq -e '.review.decision == "request_changes" and .review.not_reviewed == [{"path":"hidden.c","binary":true}]'
	state | jq -e '[.review.findings[] | select(.file == "hidden.c") | [.rule, .severity]] == [["forge/not-reviewed", "error"]]'
	# an image is binary by its nature: nothing said of it
	state | jq -e '[.review.findings[] | select(.file == "logo.gif")] == []'
}

# The tools that ran, as "tool cached" lines (cached: true or false).
tools_ran() { jq -r 'select(.type == "review.tool_ran") | "\(.payload.tool) \(.payload.cached // false)"' <<<"$OUT"; }
findings_of() { state | jq -c '[.review.findings[] | [.file, .line, .rule]] | sort'; }

@test "the same files reviewed again: the linters' and scanners' runs come from the tool cache, with the same findings" {
	plant
	export XDG_CACHE_HOME="$BATS_TEST_TMPDIR/cache"
	run -4 --separate-stderr forge-review --no-input --commit HEAD
	OUT=$output
	first=$(findings_of)
	run -0 tools_ran
	assert_line "cppcheck false"
	refute_line --partial " true"
	ran=$(tools_ran | wc -l)
	[ -n "$(ls "$XDG_CACHE_HOME/forge/tools")" ]
	run -4 --separate-stderr forge-review --no-input --commit HEAD
	OUT=$output
	[ "$(findings_of)" = "$first" ]
	run -0 tools_ran
	assert_line "cppcheck true"
	refute_line --partial " false"
	[ "${#lines[@]}" -eq "$ran" ]
	# other files: the tools run again
	echo "int more;" >>src/copy.c
	git commit -qam more
	run --separate-stderr forge-review --no-input --commit HEAD
	OUT=$output
	run -0 tools_ran
	assert_line "cppcheck false"
	# review.tool_cache false: every tool runs, also on files it has seen
	mkdir -p .forge
	echo '{"review":{"tool_cache":false}}' >.forge/config.json
	run -4 --separate-stderr forge-review --no-input --commit HEAD~1
	OUT=$output
	run -0 tools_ran
	assert_line "cppcheck false"
	refute_line --partial " true"
}

@test "a diff on stdin maps linter lines onto the working tree's files" {
	plant
	run -4 --separate-stderr bash -c 'git diff HEAD~1 | forge-review'
	OUT=$output
	[ "$(finding src/copy.c 8 cppcheck/arrayIndexOutOfBounds)" = static ]
	[ "$(finding config.py 3 secret/github-token)" = security ]
	# every finding is on an added line: none on README (unchanged) or a removed line
	run jq '[.review.findings[] | select(.line == null or .line < 1)] | length' <<<"$(state)"
	assert_output 0
}

@test "a file that differs from the diff is not linted, with an event and a line on stderr" {
	plant
	git diff HEAD~1 >"$BATS_TEST_TMPDIR/d.diff"
	echo "/* changed */" >src/copy.c
	run -4 --separate-stderr forge-review <"$BATS_TEST_TMPDIR/d.diff"
	OUT=$output
	[[ "$stderr" == *"forge-review: warning: src/copy.c was not linted or scanned: the file's content differs from the diff"* ]]
	run jq -r 'select(.type == "review.file_skipped") | .payload.file' <<<"$OUT"
	assert_output src/copy.c
	# and in the review itself (before: on stderr alone, not_reviewed empty; hunt27 #5)
	state | jq -e '.review.not_reviewed == [{"path":"src/copy.c","reason":"the file'"'"'s content differs from the diff"}]'
	state | jq -e '[.review.findings[] | select(.rule == "forge/not-reviewed") | [.file, .severity]] == [["src/copy.c","warning"]]'
}

@test "a review that could read none of the change's files does not approve it: require_human, exit 4; one file read is enough (fix135 #5)" {
	# a hand-made state about files that are not here (before: a warning
	# for each, then approve, exit 0)
	diff=$'diff --git a/gone.c b/gone.c\nnew file mode 100644\n--- /dev/null\n+++ b/gone.c\n@@ -0,0 +1 @@\n+int gone;\n'
	jq -nc --arg d "$diff" --arg r "$REPO" '{kind:"state",v:1,trace_id:"01JDB2AAAAAAAAAAAAAAAAAAAA",phase:"implement",status:"ok",
		task:{description:"x",repo:$r},changes:{diff:$d,files:[{path:"gone.c",action:"create"}]}}' >"$BATS_TEST_TMPDIR/st.json"
	run -4 --separate-stderr forge-review <"$BATS_TEST_TMPDIR/st.json"
	OUT=$output
	[[ "$stderr" == *"forge-review: warning: gone.c was not linted or scanned: "* ]]
	[[ "$stderr" == *"forge-review: require_human: no file of the change could be read to lint or scan (its forge/not-reviewed findings say why): a person must review it, or review it where its files are (--commit, --base, the run's repository) (risk low;"* ]]
	state | jq -e '.status == "escalated" and .review.decision == "require_human" and
		(.review.not_reviewed | map(.path)) == ["gone.c"]'
	# the same diff where one of its files is here: reviewed, approved
	echo 'int here;' >here.c
	git add here.c && git commit -q -m here
	git show HEAD >"$BATS_TEST_TMPDIR/two.diff"
	printf '%s' "$diff" >>"$BATS_TEST_TMPDIR/two.diff"
	run -0 --separate-stderr forge-review <"$BATS_TEST_TMPDIR/two.diff"
	OUT=$output
	[[ "$stderr" == *"gone.c was not linted or scanned"* ]]
	state | jq -e '.review.decision == "approve" and (.review.not_reviewed | map(.path)) == ["gone.c"]'
}

@test "a diff piped from a subdirectory with paths relative to it (git diff --relative, diff.relative) is reviewed at its files, named by the repository's paths" {
	mkdir sub
	echo 'x = 1' >sub/app.py
	echo 'y = 1' >app.py     # a file of the same name at the top, which the diff is not about
	git add -A && git commit -q -m apps
	printf 'x = 1\nz = eval(input())\n' >sub/app.py
	cd sub
	# (before: app.py at the top was read, "the file's content differs from
	# the diff", and the finding was named app.py:2; hunt60 #7)
	for how in "git diff --relative" "git -c diff.relative=true diff"; do
		run -0 --separate-stderr bash -c "$how | forge-review"
		OUT=$output
		[[ "$stderr" == *"forge-review: the diff's paths are relative to sub/ (git diff --relative, or diff.relative): reviewed as the repository's sub/…"* ]]
		[[ "$stderr" != *"not linted"* ]]
		[ "$(finding sub/app.py 2 insecure/py-eval)" = security ]
		state | jq -e '[.review.findings[] | select(.file != "sub/app.py")] == [] and (.review | has("not_reviewed") | not)'
		run -0 jq -r 'select(.type == "review.diff_relative") | .payload.prefix' <<<"$OUT"
		assert_output sub
	done
	# the repository's paths, from the same place: as they are, nothing said
	run -0 --separate-stderr bash -c 'git diff | forge-review'
	OUT=$output
	[[ "$stderr" != *"relative"* && "$stderr" != *"not linted"* ]]
	[ "$(finding sub/app.py 2 insecure/py-eval)" = security ]
	# from the top, --relative changes nothing
	cd ..
	run -0 --separate-stderr bash -c 'git diff --relative | forge-review'
	OUT=$output
	[[ "$stderr" != *"relative"* ]]
	[ "$(finding sub/app.py 2 insecure/py-eval)" = security ]
}

@test "a file whose name git quotes with \\a \\b \\f \\r \\v is linted like any other; a skipped one's name reaches stderr without its escapes" {
	name=$(printf 'bd\a\b\f\r\vx.c')
	printf '#include <stdlib.h>\nint run(const char *c) { return system(c); }\n' >"$name"
	git add -A && git commit -q -m "a named file"
	# (before: the name became "bdabfrvx.c", not in the commit: not linted, hunt27 #5)
	run --separate-stderr forge-review --no-input --commit HEAD
	OUT=$output
	run jq -c 'select(.type == "review.file_skipped") | .payload' <<<"$OUT"
	assert_output ''
	state | jq -e --arg n "$name" '(.review | has("not_reviewed") | not) and
	       ([.review.findings[] | select(.file == $n and .rule == "insecure/c-system")] | length == 1)'
	# a file skipped (its content differs from a piped diff): its name on stderr without ESC
	esc=$(printf 'e\033]52;c;eA==\033\\\033[2Kx.c')
	echo 'int e;' >"$esc"
	git add -A && git commit -q -m esc
	git diff HEAD~1 >"$BATS_TEST_TMPDIR/d.diff"
	echo 'int f;' >"$esc"
	run --separate-stderr forge-review <"$BATS_TEST_TMPDIR/d.diff"
	[[ "$stderr" == *"warning: e ]52;c;eA== \\ [2Kx.c was not linted"* ]]
	[[ "$stderr" != *$'\033'* ]]
}

@test "findings are stored with ids that forge findings knows, and SARIF 2.1.0 is written" {
	plant
	run -4 --separate-stderr forge-review --no-input --commit HEAD --sarif "$BATS_TEST_TMPDIR/out.sarif"
	OUT=$output
	n=$(state | jq '.review.findings | length')
	[ "$n" -ge 4 ]
	run sqlite3 "$FORGE_DB" "SELECT count(*) FROM findings WHERE phase = 'review'"
	assert_output "$n"
	id=$(state | jq -r '.review.findings[0].id')
	run sqlite3 "$FORGE_DB" "SELECT count(*) FROM findings WHERE id = '$id'"
	assert_output 1
	run jq -r '[.version, (.runs | length), (.runs[0].results | length), .runs[0].tool.driver.name] | join(" ")' \
		"$BATS_TEST_TMPDIR/out.sarif"
	assert_output "2.1.0 1 $n forge-review"
	run jq -r '.runs[0].results[] | select(.ruleId == "secret/github-token") |
		[.level, .locations[0].physicalLocation.artifactLocation.uri,
		 .locations[0].physicalLocation.region.startLine, (.partialFingerprints.primaryLocationLineHash | test("^[0-9a-f]{16}:1$"))] | join(" ")' \
		"$BATS_TEST_TMPDIR/out.sarif"
	assert_output "error config.py 3 true"
	# every result's rule is described once in tool.driver.rules
	run jq '[.runs[0].results[].ruleId] - [.runs[0].tool.driver.rules[].id] | length' "$BATS_TEST_TMPDIR/out.sarif"
	assert_output 0
	if python3 -c 'import jsonschema' 2>/dev/null; then
		python3 -c 'import json,sys,jsonschema
s=json.load(open(sys.argv[1])); l=json.load(open(sys.argv[2]))
jsonschema.Draft4Validator(s).validate(l)' "$FORGE_ROOT/tests/fixtures/sarif/sarif-2.1.0.json" "$BATS_TEST_TMPDIR/out.sarif"
	fi
}

@test "a database named that cannot be opened: exit 5 naming it, before anything is reviewed; no findings handed on unstored" {
	# (before: the review went on, its findings stored nowhere, an event saying
	# "no database to store findings in", and its own exit status)
	plant
	echo 'this is not sqlite' >"$BATS_TEST_TMPDIR/broken.db"
	run -5 --separate-stderr forge-review --no-input --commit HEAD --db "$BATS_TEST_TMPDIR/broken.db"
	[[ $stderr == *"cannot store findings: cannot open database '$BATS_TEST_TMPDIR/broken.db'"* ]]
	tail -n 1 <<<"$output" | jq -e '.status == "failed" and (.review.findings // [] | length) == 0'
	jq -e -s '[.[] | select(.type == "finding.detected" or .type == "findings.not_stored")] == []' <<<"$output"
	run -5 --separate-stderr forge-review --no-input --commit HEAD --db "$BATS_TEST_TMPDIR"
	[[ $stderr == *"cannot store findings: "*"$BATS_TEST_TMPDIR"* ]]
}

@test "a clean low-risk diff is approved without calling the model" {
	echo "more" >>README
	run -0 --separate-stderr bash -c "git diff | ANTHROPIC_API_KEY=$KEY forge-review --provider anthropic --base-url '$MOCK_URL'"
	OUT=$output
	run jq -r '[.review.decision, .review.risk.level, .status, (.review.findings | length)] | join(" ")' <<<"$(state)"
	assert_output "approve low ok 0"
	run jq -r 'select(.type == "review.ai_skipped") | .payload.risk' <<<"$OUT"
	assert_output low
	assert_equal "$(requests)" "[]"
}

@test "with no provider configured at all, a clean diff is approved" {
	echo "more" >>README
	run -0 --separate-stderr forge-review --no-input --base HEAD
	OUT=$output
	run jq -r '.review.decision' <<<"$(state)"
	assert_output approve
}

@test "above low risk the AI layer makes one forced structured call; its findings are kept on diff lines only" {
	mkdir -p src
	printf 'int check_token(const char *t)\n{\n\treturn t[0] == 0;\n}\n' >src/auth.c
	git add -A
	mock_steps '[{"tool_calls":[{"name":"report_findings","input":{"findings":[
		{"file":"src/auth.c","line":3,"severity":"error","category":"security","rule":"auth-bypass",
		 "message":"an empty token is accepted","confidence":0.9,"fixable":false},
		{"file":"src/auth.c","line":40,"severity":"error","category":"correctness","message":"not in the diff"},
		{"file":"elsewhere.c","line":1,"severity":"error","category":"correctness","message":"not a file of the diff"}]}}]}]'
	run -1 --separate-stderr bash -c "git diff --cached | ANTHROPIC_API_KEY=$KEY forge-review --provider anthropic --base-url '$MOCK_URL'"
	OUT=$output
	run jq -r '[.review.risk.level, .review.decision, (.review.findings | length), .review.findings[0].layer, .review.findings[0].rule, .review.findings[0].line] | join(" ")' <<<"$(state)"
	assert_output "medium request_changes 1 ai ai/auth-bypass 3"
	run jq -r 'select(.type == "review.layer" and .payload.layer == "ai") | .payload.dropped' <<<"$OUT"
	assert_output 2
	run bash -c "curl -sS '$MOCK_URL/_mock/requests' | jq -r 'length, .[0].body.tool_choice.type, .[0].body.tool_choice.name, (.[0].body.messages[0].content | tostring | test(\"3 \\\\+ \\\\treturn\"))'"
	assert_output $'1\ntool\nreport_findings\ntrue'
	# the tool's input schema is schemas/tools/report_findings.json's
	assert_equal "$(curl -sS "$MOCK_URL/_mock/requests" | jq -cS '.[0].body.tools[0].input_schema')" \
		"$(jq -cS 'del(."$schema", ."$id", .title, .description, ."$comment")' "$FORGE_ROOT/schemas/tools/report_findings.json")"
}

@test "every tool the programs build for a model (schema_tool_spec, a forced tool_name) has its input schema in schemas/tools/" {
	# (before: report_findings, report_failure_analysis and record_pattern had
	# theirs only as string literals in C)
	names=$(cd "$FORGE_ROOT" && grep -rhoE 'schema_tool_spec\("[a-z_]+"\)|tool_name = "[a-z_]+"' lib app filters cmd |
		grep -oE '"[a-z_]+"' | tr -d '"' | sort -u)
	[[ $names == *report_findings* && $names == *report_failure_analysis* && $names == *record_pattern* ]]
	for n in $names; do
		[ -f "$FORGE_ROOT/schemas/tools/$n.json" ] || { echo "no schemas/tools/$n.json" >&2; false; }
	done
}

@test "an AI review answer that cannot be used is not an approval: asked again once, told why; cut or wrong twice fails (exit 5)" {
	mkdir -p src
	printf 'int check_token(const char *t)\n{\n\treturn t[0] == 0;\n}\n' >src/auth.c
	git add -A
	finding='{"file":"src/auth.c","line":3,"severity":"Error","category":"Security","message":"an empty token is accepted"}'
	as_string=$(jq -c -n --arg s "[$finding]" '$s')
	review() { run "$@" --separate-stderr bash -c "git diff --cached | ANTHROPIC_API_KEY=$KEY forge-review --provider anthropic --base-url '$MOCK_URL'"; }
	# findings sent as a JSON string, then as they should be ("Error" is the enum's "error")
	mock_steps "[{\"tool_calls\":[{\"name\":\"report_findings\",\"input\":{\"findings\":$as_string}}]},
		{\"tool_calls\":[{\"name\":\"report_findings\",\"input\":{\"findings\":[$finding]}}]}]"
	review -1
	tail -n 1 <<<"$output" | jq -e '.review.decision == "request_changes" and .review.findings[0].severity == "error" and .review.findings[0].category == "security"'
	jq -s -e '[.[] | select(.type == "review.layer" and .payload.layer == "ai") | .payload.attempts] == [2]' <<<"$output"
	# each paid call has its llm.called, which alone carries its cost (what
	# cost recovery after a crash sums; before: one review.layer carried it)
	jq -s -e '([.[] | select(.type == "llm.called")] | length) == 2
		and ([.[] | select(.type == "llm.called") | .cost.tokens] | add) == (last | .cost.tokens)
		and ([.[] | select(.type == "review.layer") | .cost] | all(. == null))' <<<"$output"
	run bash -c "curl -sS '$MOCK_URL/_mock/requests' | jq -r '.[1].body.messages[2].content[0] | [.type, .is_error, (.content | test(\".findings: expected array, got string\"))] | map(tostring) | join(\" \")'"
	assert_output "tool_result true true"
	# two calls in one answer, the first unusable; then a misspelt tool: every
	# call of the answer is answered in the retry (both providers refuse a
	# tool call left open with a 400; before: only the first, or none)
	answered() {
		curl -sS "$MOCK_URL/_mock/requests" | jq -e '.[-1].body.messages as $m |
			([$m[1].content[] | select(.type == "tool_use") | .id] | sort) as $asked |
			([$m[2:][] | .content[]? | select(.type == "tool_result") | .tool_use_id] | sort) as $told |
			($asked | length) == '"$1"' and $asked == $told'
	}
	mock_steps "[{\"tool_calls\":[{\"name\":\"report_findings\",\"input\":{\"findings\":$as_string}},
			{\"name\":\"report_findings\",\"input\":{\"findings\":[$finding]}}]},
		{\"tool_calls\":[{\"name\":\"report_findings\",\"input\":{\"findings\":[$finding]}}]}]"
	review -1
	answered 2
	mock_steps "[{\"tool_calls\":[{\"name\":\"report_finding\",\"input\":{\"findings\":[$finding]}}]},
		{\"tool_calls\":[{\"name\":\"report_findings\",\"input\":{\"findings\":[$finding]}}]}]"
	review -1
	answered 1
	# wrong twice: no review, exit 5, the calls still paid for in the state
	mock_steps "[{\"tool_calls\":[{\"name\":\"report_findings\",\"input\":{\"findings\":$as_string}}]},
		{\"tool_calls\":[{\"name\":\"report_findings\",\"input\":{\"findings\":$as_string}}]}]"
	review -5
	[[ $stderr == *"AI review: the model gave no usable review when asked again: report_findings' input does not match its schema: .findings: expected array, got string"* ]]
	tail -n 1 <<<"$output" | jq -e '.status == "failed" and .cost.usd > 0'
	# cut at max_tokens: not asked again (it would be cut again)
	cut=$(jq -c -n --arg s "{\"findings\":[${finding:0:60}" '$s')
	mock_steps "[{\"tool_calls\":[{\"name\":\"report_findings\",\"arguments\":$cut}],\"stop_reason\":\"max_tokens\"}]"
	before=$(curl -sS "$MOCK_URL/_mock/requests" | jq length)
	review -5
	[[ $stderr == *"the answer was cut at llm.max_tokens ("*") before report_findings was whole; raise llm.max_tokens"* ]]
	assert_equal "$(curl -sS "$MOCK_URL/_mock/requests" | jq length)" $((before + 1))
}

@test "a refusal in the AI review, or answers that never call report_findings, need a human (exit 4, escalated), as in plan and implement (hunt57 #3)" {
	mkdir -p src
	printf 'int check_token(const char *t)\n{\n\treturn t[0] == 0;\n}\n' >src/auth.c
	git add -A
	review() { run "$@" --separate-stderr bash -c "git diff --cached | ANTHROPIC_API_KEY=$KEY forge-review --provider anthropic --base-url '$MOCK_URL'"; }
	# a refusal: not asked again (it would refuse again); before: failed, exit 5
	mock_steps '[{"text":"I cannot help with that.","stop_reason":"refusal"}]'
	before=$(curl -sS "$MOCK_URL/_mock/requests" | jq length)
	review -4
	[[ $stderr == *"AI review: the model gave no usable review: the model refused: This request was refused due to policy."* ]]
	tail -n 1 <<<"$output" | jq -e '.status == "escalated" and (has("review") | not) and .cost.usd > 0'
	assert_equal "$(curl -sS "$MOCK_URL/_mock/requests" | jq length)" $((before + 1))
	# no report_findings call, twice: asked again once, then a human
	mock_steps '[{"text":"Looks fine to me."},{"text":"Still fine."}]'
	review -4
	[[ $stderr == *"AI review: the model gave no usable review when asked again: the model answered without calling report_findings"* ]]
	tail -n 1 <<<"$output" | jq -e '.status == "escalated" and (has("review") | not)'
}

@test "a diff larger than the model's window: the AI review sees the files that fit and is told which it does not" {
	mkdir -p src
	printf 'int check_token(const char *t)\n{\n\treturn t[0] == 0;\n}\n' >src/auth.c
	seq 1 20000 | sed 's/^/const int generated_/; s/$/ = 1;/' >src/table.c
	git add -A
	mock_steps '[{"tool_calls":[{"name":"report_findings","input":{"findings":[]}}]}]'
	# a model the price table does not know (priced in llm.pricing without a
	# window): llm.context_window is its window
	echo '{"llm":{"context_window":16384,"pricing":{"mock-small":{"input":0,"output":0}}}}' >"$BATS_TEST_TMPDIR/small.json"
	run -4 --separate-stderr bash -c "git diff --cached | ANTHROPIC_API_KEY=$KEY forge-review --provider anthropic --model mock-small --base-url '$MOCK_URL' --config '$BATS_TEST_TMPDIR/small.json'"
	# (before, the whole diff went to the model: over its window, a real one refuses, exit 5)
	[[ $stderr == *"warning: the AI review did not see 1 file (too large for the model's context window"* ]]
	# a change that large is a human's to decide (risk high), not the model's
	tail -n 1 <<<"$output" | jq -e '.review.risk.level == "high" and .review.decision == "require_human"'
	jq -s -e '[.[] | select(.type == "review.ai_not_shown") | .payload.files] == [["src/table.c"]]' <<<"$output"
	run bash -c "curl -sS '$MOCK_URL/_mock/requests' | jq -r '.[0].body.messages[0].content | tostring'"
	[[ $output == *"## File: src/auth.c"* ]]
	[[ $output != *"## File: src/table.c"* ]]
	[[ $output == *"Not shown here, too large for this review (report nothing on them): src/table.c"* ]]
}

@test "no file of the diff fits the model's window: no model call; the review says the AI layer was not run, naming the files" {
	seq 1 20000 | sed 's/^/const int generated_/; s/$/ = 1;/' >table.c
	git add -A
	mock_steps '[{"tool_calls":[{"name":"report_findings","input":{"findings":[]}}]}]'
	echo '{"llm":{"context_window":16384,"pricing":{"mock-small":{"input":0,"output":0}}}}' >"$BATS_TEST_TMPDIR/small.json"
	run -0 --separate-stderr bash -c "git diff --cached | ANTHROPIC_API_KEY=$KEY forge-review --provider anthropic --model mock-small --base-url '$MOCK_URL' --config '$BATS_TEST_TMPDIR/small.json'"
	OUT=$output
	# (before: a paid call whose prompt held no code, "Not shown here … report nothing on them")
	assert_equal "$(requests | jq length)" 0
	[[ $stderr == *"forge-review: warning: the AI review was not run: no file of the diff fits the model's context window ("*" tokens for the diff): table.c; the other layers did run"* ]]
	jq -s -e '[.[] | select(.type == "review.ai_skipped") | .payload] | length == 1 and (.[0].files == ["table.c"])
	  and (.[0].reason | startswith("no file of the diff fits the model'"'"'s context window"))' <<<"$OUT"
	[ -z "$(jq -c 'select(.type == "review.ai_not_shown" or (.type == "review.layer" and .payload.layer == "ai"))' <<<"$OUT")" ]
	state | jq -e '.review.ai_skipped.files == ["table.c"] and (.review.ai_skipped.reason | contains("table.c"))
	  and .review.risk.level == "medium"'
	# the other layers ran as before
	jq -s -e '[.[] | select(.type == "review.layer") | .payload.layer] == ["static", "security"]' <<<"$OUT"
}

@test "a dismissed finding is put in the AI prompt as a known false positive" {
	mkdir -p src
	printf 'int check_token(const char *t)\n{\n\treturn t[0] == 0;\n}\n' >src/auth.c
	git add -A
	step='{"tool_calls":[{"name":"report_findings","input":{"findings":[{"file":"src/auth.c","line":3,"severity":"warning","category":"correctness","rule":"empty-token","message":"an empty token is accepted"}]}}]}'
	mock_steps "[$step,$step]"
	run -0 --separate-stderr bash -c "git diff --cached | ANTHROPIC_API_KEY=$KEY forge-review --provider anthropic --base-url '$MOCK_URL'"
	OUT=$output
	id=$(state | jq -r '.review.findings[0].id')
	run -0 forge findings dismiss "$id" --reason "empty tokens are rejected by the caller"
	run -0 --separate-stderr bash -c "git diff --cached | ANTHROPIC_API_KEY=$KEY forge-review --provider anthropic --base-url '$MOCK_URL'"
	OUT=$output
	run bash -c "curl -sS '$MOCK_URL/_mock/requests' | jq -r '.[1].body.messages[0].content | tostring'"
	assert_output --partial "dismissed as false positives"
	assert_output --partial "empty tokens are rejected by the caller"
	# and the same finding is not raised again
	run jq -r '[(.review.findings | length), .review.decision] | join(" ")' <<<"$(state)"
	assert_output "0 approve"
}

@test "a model failure after retries fails the phase (exit 5)" {
	mkdir -p src
	printf 'int login(void) { return 1; }\n' >src/auth.c
	git add -A
	mock_steps '[{"fault":"auth"}]'
	run -5 --separate-stderr bash -c "git diff --cached | ANTHROPIC_API_KEY=$KEY forge-review --provider anthropic --base-url '$MOCK_URL'"
	OUT=$output
	run jq -r '.status' <<<"$(state)"
	assert_output failed

	# what the static and security layers found before is not lost: an
	# event for a pipeline, the findings and a reason for a person
	printf 'token = "ghp_%s"\n' 4kQ9zX2mV7bN1cR8sT5wY3uA6eD0fG9hJ2kL >src/config.py
	git add -A
	mock_steps '[{"fault":"auth"}]'
	run -5 --separate-stderr bash -c "git diff --cached | ANTHROPIC_API_KEY=$KEY forge-review --provider anthropic --base-url '$MOCK_URL'"
	OUT=$output
	run jq -r 'select(.type == "review.checks_found") | .payload.findings[] | select(.severity == "critical") | .rule' <<<"$OUT"
	assert_output secret/github-token
	[[ "$stderr" == *"src/config.py:1"*"secret/github-token"* ]]
	[[ "$stderr" == *"(the static and security layers found "*" listed above)"* ]]
	[[ "$stderr$OUT" != *4kQ9zX2mV7bN1cR8* ]]
}

@test "a state with changes is reviewed and keeps its other parts" {
	echo "more" >>README
	diff=$(git diff)
	jq -cn --arg d "$diff" '{kind:"state",v:1,trace_id:"T1",phase:"implement",status:"ok",
		task:{description:"x"},plan:{summary:"s",tasks:[],risk:{level:"low"}},
		changes:{files:[{path:"README",action:"modify"}],diff:$d},bounces:[]}' >"$BATS_TEST_TMPDIR/s.json"
	run -0 --separate-stderr forge-review <"$BATS_TEST_TMPDIR/s.json"
	OUT=$output
	run jq -r '[.phase, .status, .trace_id, .plan.summary, .changes.files[0].path, .review.decision] | join(" ")' <<<"$(state)"
	assert_output "review ok T1 s README approve"
}

@test "the plan's risk raises the review's risk" {
	echo "more" >>README
	diff=$(git diff)
	jq -cn --arg d "$diff" '{kind:"state",v:1,trace_id:"T2",phase:"implement",status:"ok",
		task:{description:"x"},plan:{summary:"s",tasks:[],risk:{level:"high"}},
		changes:{files:[],diff:$d},bounces:[]}' >"$BATS_TEST_TMPDIR/s.json"
	mock_steps '[{"tool_calls":[{"name":"report_findings","input":{"findings":[]}}]}]'
	run -4 --separate-stderr with_mock forge-review <"$BATS_TEST_TMPDIR/s.json"
	OUT=$output
	run jq -r '[.review.risk.level, .review.decision] | join(" ")' <<<"$(state)"
	assert_output "high require_human"
}

@test "the plan's risk is one unit: its level, its score in that level's band, the reason naming the level applied (hunt69 #1)" {
	# a 4-line change: no risk of its own
	printf 'a\nb\n' >>README
	printf 'c\nd\n' >>README
	diff=$(git diff)
	echo '{"review": {"human_min_risk": "high"}}' >"$BATS_TEST_TMPDIR/c.json"
	for r in "medium 0.5 medium 0.49 0" "low 0.3 low 0.24 0" "high 0.2 high 0.5 4"; do
		set -- $r
		jq -cn --arg d "$diff" --arg l "$1" --argjson s "$2" '{kind:"state",v:1,trace_id:"T2",phase:"implement",
			status:"ok",task:{description:"x"},plan:{summary:"s",tasks:[],risk:{level:$l,score:$s,reasons:[]}},
			changes:{files:[],diff:$d},bounces:[]}' >"$BATS_TEST_TMPDIR/s.json"
		mock_steps '[{"tool_calls":[{"name":"report_findings","input":{"findings":[]}}]}]'
		# (before: {medium, 0.5} was {"score":0.5,"level":"high","reasons":["the plan's risk
		# is medium"]}, require_human, exit 4; {low, 0.3} medium with no reason)
		run -"$5" --separate-stderr with_mock forge-review --config "$BATS_TEST_TMPDIR/c.json" <"$BATS_TEST_TMPDIR/s.json"
		OUT=$output
		state | jq -e --arg l "$3" --argjson s "$4" '.review.risk.level == $l and .review.risk.score == $s and
			(.review.risk.reasons | length == 1 and (.[0] | startswith("the plan'"'"'s risk is \($l) (score ")))'
		[ "$5" = 4 ] || state | jq -e '.review.decision == "approve"'
	done
}

@test "a budget spent (an overspent state, or safety.cost.per_phase.review 0): the AI layer is skipped, no model call" {
	echo "more" >>README
	diff=$(git diff)
	jq -cn --arg d "$diff" '{kind:"state",v:1,trace_id:"T3",phase:"implement",status:"ok",
		task:{description:"x"},plan:{summary:"s",tasks:[],risk:{level:"high"}},
		changes:{files:[],diff:$d},bounces:[],cost:{tokens:9,usd:0.0695},
		budget:{usd:0.065,remaining_usd:-0.0045}}' >"$BATS_TEST_TMPDIR/s.json"
	mock_steps '[{"tool_calls":[{"name":"report_findings","input":{"findings":[]}}]}]'
	local why="budget spent: the run's remaining budget or safety.cost.per_phase.review leaves nothing"
	run -4 --separate-stderr with_mock forge-review <"$BATS_TEST_TMPDIR/s.json"
	OUT=$output
	assert_equal "$(jq -c 'select(.type == "review.ai_skipped") | .payload' <<<"$OUT")" "{\"reason\":\"$why\"}"
	[[ "$stderr" == *"forge-review: the AI review skipped: $why"* ]]
	state | jq -e '.cost.usd == 0.0695 and (.budget.remaining_usd + 0.0045 | fabs) < 1e-9'
	# the phase's own limit at 0, with the run's budget left
	echo '{"safety":{"cost":{"per_phase":{"review":0}}}}' >"$BATS_TEST_TMPDIR/c.json"
	jq -c '.budget.remaining_usd = 1' "$BATS_TEST_TMPDIR/s.json" >"$BATS_TEST_TMPDIR/s2.json"
	run -4 --separate-stderr with_mock forge-review --config "$BATS_TEST_TMPDIR/c.json" <"$BATS_TEST_TMPDIR/s2.json"
	OUT=$output
	assert_equal "$(jq -c 'select(.type == "review.ai_skipped") | .payload' <<<"$OUT")" "{\"reason\":\"$why\"}"
	assert_equal "$(requests | jq length)" 0
}

@test "a state whose implement failed is not reviewed (skipped, exit 1); a review of a state's commit records it" {
	echo "more" >>README
	git commit -qam more
	jq -cn --arg d "$(git show --format= HEAD)" --arg c "$(git rev-parse HEAD)" --arg b "$(git rev-parse HEAD~1)" '
		{kind:"state",v:1,trace_id:"T4",phase:"implement",status:"failed",
		task:{description:"x"},plan:{summary:"s",tasks:[],risk:{level:"low"}},
		changes:{files:[{path:"README",action:"modify"}],diff:$d,commit:$c,base_commit:$b,validated:false},
		bounces:[]}' >"$BATS_TEST_TMPDIR/s.json"
	run -1 --separate-stderr forge-review <"$BATS_TEST_TMPDIR/s.json"
	OUT=$output
	state | jq -e '.status == "skipped" and (.review | not)'
	[[ "$stderr" == *"the input state's implement phase ended 'failed'"*"nothing to review; run that phase again first"* ]]
	jq -c '.status = "ok"' "$BATS_TEST_TMPDIR/s.json" >"$BATS_TEST_TMPDIR/ok.json"
	run -0 --separate-stderr forge-review <"$BATS_TEST_TMPDIR/ok.json"
	OUT=$output
	state | jq -e --arg c "$(git rev-parse HEAD)" '.review.decision == "approve" and .review.commit == $c'
}

@test "a --sarif file that cannot be written is a warning: the review stands" {
	echo "more" >>README
	run -0 --separate-stderr bash -c 'git diff | forge-review --sarif "$1/no/such/dir/r.sarif"' _ "$BATS_TEST_TMPDIR"
	OUT=$output
	state | jq -e '.status == "ok" and .review.decision == "approve"'
	[[ "$stderr" == *"forge-review: warning: cannot write '$BATS_TEST_TMPDIR/no/such/dir/r.sarif': No such file or directory"* ]]
	[ -n "$(jq -c 'select(.type == "review.sarif_failed")' <<<"$OUT")" ]
}

@test "an empty git diff is said to be one (exit 2)" {
	run -2 --separate-stderr bash -c 'git diff | forge-review'
	[[ "$stderr" == "forge-review: empty input: the diff is empty, nothing to review"*"--base REF / --commit SHA" ]]
}

@test "stdin a terminal, no --base or --commit: exit 2, the message names a diff, a state, --base and --commit, not --task" {
	# (before: "pipe … a task description, or use --task", and forge-review --task is always skipped)
	run -0 script -qec "forge-review >'$BATS_TEST_TMPDIR/out' 2>'$BATS_TEST_TMPDIR/err'; echo \$? >'$BATS_TEST_TMPDIR/rc'" /dev/null </dev/null
	[ "$(cat "$BATS_TEST_TMPDIR/rc")" = 2 ]
	[ "$(cat "$BATS_TEST_TMPDIR/err")" = "forge-review: no input: pipe a unified diff or a state (git diff main | forge-review), or use --base REF / --commit SHA" ]
	tail -n 1 "$BATS_TEST_TMPDIR/out" | jq -e '.type == "input.rejected"'
}

@test "a piped diff is held to stream.max_line_bytes line by line, and to 64 MiB in all (then: --commit)" {
	seq 1 3000 >data.txt
	printf 'import os\n' >app.py
	git add -A
	# (before: the whole diff was held to the line limit, and refused as
	# "line 1: input is longer than the limit of 4096 bytes")
	run --separate-stderr bash -c 'git diff --cached | FORGE_MAX_LINE_BYTES=4096 forge-review'
	[ "$status" -ne 2 ]
	OUT=$output
	state | jq -e '.review.source == "stdin" and .review.files == 2'
	# a line over the limit is refused by its number (line 8: app.py's second)
	head -c 5000 /dev/zero | tr '\0' x >>app.py
	git add -A
	run -2 --separate-stderr bash -c 'git diff --cached | FORGE_MAX_LINE_BYTES=4096 forge-review'
	[ "$stderr" = "forge-review: line 8: a line of the text is longer than the limit of 4096 bytes (stream.max_line_bytes)" ]
	# over 64 MiB in all: what, the limit, and what to do instead (no line)
	run -2 --separate-stderr bash -c '{ printf "diff --git a/d b/d\n--- a/d\n+++ b/d\n@@ -0,0 +1,7000000 @@\n"
		yes +0123456789 | head -n 7000000; } | forge-review'
	[[ "$stderr" == "forge-review: the text on stdin is longer than the limit of 67108864 bytes (64 MiB) for a diff on stdin: review the change from git instead, with --commit SHA (a commit) or --base REF"* ]]
	jq -e 'select(.type == "input.rejected") | .payload.line == null' <<<"$output"
}

@test "a state without changes is skipped (exit 1)" {
	run -1 --separate-stderr bash -c 'echo "{\"task\":\"review nothing\"}" | forge-review'
	OUT=$output
	run jq -r '.status' <<<"$(state)"
	assert_output skipped
}

@test "a malformed diff is bad input (exit 2)" {
	printf -- '--- a/x\n+++ b/x\n@@ -1,3 +1,3 @@\n a\n-b\n+c\n' >"$BATS_TEST_TMPDIR/bad.diff"
	run -2 --separate-stderr forge-review <"$BATS_TEST_TMPDIR/bad.diff"
	OUT=$output
	[[ "$stderr" == *"malformed diff"* ]]
	run jq -r 'select(.type == "input.rejected") | .type' <<<"$OUT"
	assert_output input.rejected
	run -2 --separate-stderr bash -c 'echo "not a diff at all" | forge-review'
	OUT=$output
	[[ "$stderr" == *"not a unified diff"* ]]
	# a coloured diff (git diff --color=always) says how to make a plain one
	echo changed >>README
	run -2 --separate-stderr bash -c 'git diff --color=always | forge-review'
	[ "$stderr" = "forge-review: line 1: not a unified diff: it has terminal colour codes (ESC[…m); make it with \`git diff --no-color\`" ]
}

@test "empty stdin is bad input (exit 2), with --base too; --base --no-input reviews the repository" {
	run -2 --separate-stderr forge-review </dev/null
	OUT=$output
	[[ "$stderr" == *"empty input"* ]]
	run -2 --separate-stderr forge-review --base HEAD </dev/null
	[ "$stderr" = "forge-review: empty input: expected a state on stdin; to work on the repository alone, pass --no-input" ]
	[ "$(jq -r .type <<<"$output")" = input.rejected ]
	run -2 --separate-stderr forge-review --no-input
	# what was wrong, and the ways to give it a change (before: "there is
	# nothing to work on without an input here (see --help)")
	[ "$stderr" = "forge-review: --no-input without --base, --commit or --pr: nothing to review; with --no-input, name the change with --base REF (the working tree against REF), --commit SHA (one commit) or --pr N (a GitHub pull request), or drop --no-input and pipe a unified diff or a state (git diff main | forge-review)" ]
	[ "$(jq -r 'select(.type == "input.rejected") | .payload.reason' <<<"$output")" = "${stderr#forge-review: }" ]
	run -0 --separate-stderr forge-review --no-input --base HEAD </dev/null
	OUT=$output
	run jq -r 'select(.type == "review.empty") | .type' <<<"$OUT"
	assert_output review.empty
}

@test "missing linters and scanners are skipped with an event saying so" {
	plant
	git diff HEAD~1 >"$BATS_TEST_TMPDIR/d.diff"
	run -4 --separate-stderr env PATH="$FORGE_BINDIR" "$FORGE_BINDIR/forge-review" <"$BATS_TEST_TMPDIR/d.diff"
	OUT=$output
	# the built-in security layer still works
	[ "$(finding config.py 3 secret/github-token)" = security ]
	run jq -r 'select(.type == "review.tool_skipped") | .payload.tool + ": " + .payload.reason' <<<"$OUT"
	assert_line "flawfinder: not installed"
	assert_line "cppcheck: not installed"
	assert_line "shellcheck: not installed"
}

# fake_flawfinder: a flawfinder in $BATS_TEST_TMPDIR/tools that logs how many
# arguments each run had (ff.log), takes a bare "-name" as options (exit 16,
# as the real one does) and reports each strcpy as flawfinder -S -D -Q -C would.
fake_flawfinder() {
	mkdir -p "$BATS_TEST_TMPDIR/tools"
	cat >"$BATS_TEST_TMPDIR/tools/flawfinder" <<-EOF
		#!/bin/sh
		echo "\$#" >>"$BATS_TEST_TMPDIR/ff.log"
		for a; do
		  case "\$a" in
		  -S|-D|-Q|-C|--minlevel=1) ;;
		  -*) echo "flawfinder: bad option \$a"; exit 16 ;;
		  *) /usr/bin/grep -n strcpy "\$a" | /usr/bin/sed "s|^\([0-9]*\):.*|\$a:\1:  [4] (buffer) strcpy:  Does not check for buffer overflows.|" ;;
		  esac
		done
		exit 0
	EOF
	chmod +x "$BATS_TEST_TMPDIR/tools/flawfinder"
}

@test "the security scanner gets every changed file, 512 at a time, a name starting with '-' as ./-name" {
	fake_flawfinder
	mkdir src
	for i in $(seq -w 1 600); do printf 'int f%s(int x)\n{\n\treturn x;\n}\n' "$i" >"src/f$i.c"; done
	printf '#include <string.h>\nvoid put(char *d, const char *s)\n{\n\tstrcpy(d, s);\n}\n' >src/f600.c
	cp src/f600.c ./-x.c
	git add -A && git commit -q -m many
	git diff HEAD~1 >"$BATS_TEST_TMPDIR/d.diff"
	# error findings (strcpy): request_changes
	run -1 --separate-stderr env PATH="$FORGE_BINDIR:$BATS_TEST_TMPDIR/tools" "$FORGE_BINDIR/forge-review" \
		<"$BATS_TEST_TMPDIR/d.diff"
	OUT=$output
	run -0 jq -c 'select(.type == "review.tool_ran" and .payload.tool == "flawfinder") | [.payload.files, .payload.exit_code]' <<<"$OUT"
	assert_output $'[512,0]\n[89,0]'
	[ "$(finding src/f600.c 4 flawfinder/strcpy)" = security ]
	[ "$(finding -x.c 4 flawfinder/strcpy)" = security ]
}

@test "a security scanner that fails says which files it did not scan (forge/not-reviewed), not 'no findings'" {
	mkdir -p "$BATS_TEST_TMPDIR/tools"
	printf '#!/bin/sh\necho "Traceback: UnicodeDecodeError"\nexit 1\n' >"$BATS_TEST_TMPDIR/tools/flawfinder"
	chmod +x "$BATS_TEST_TMPDIR/tools/flawfinder"
	printf 'int f(int x)\n{\n\treturn x;\n}\n' >f.c
	git add -A && git commit -q -m f
	git diff HEAD~1 >"$BATS_TEST_TMPDIR/d.diff"
	run -0 --separate-stderr env PATH="$FORGE_BINDIR:$BATS_TEST_TMPDIR/tools" "$FORGE_BINDIR/forge-review" \
		<"$BATS_TEST_TMPDIR/d.diff"
	OUT=$output
	run -0 jq -c 'select(.type == "review.tool_ran" and .payload.tool == "flawfinder") | .payload' <<<"$OUT"
	jq -e '.failed == true and .exit_code == 1 and .findings == 0
	  and .error == "failed (exit 1: Traceback: UnicodeDecodeError)"' <<<"$output"
	run -0 jq -r '.review.findings[] | select(.rule == "forge/not-reviewed") | "\(.file) \(.severity) \(.message)"' <<<"$(state)"
	assert_output "f.c warning not security-scanned: flawfinder failed (exit 1: Traceback: UnicodeDecodeError); review the file yourself"
}

@test "a built-in linter that crashes says which files it did not lint (forge/not-reviewed), not 'no findings'" {
	mkdir -p "$BATS_TEST_TMPDIR/tools"
	printf '#!/bin/sh\necho "cppcheck: internal error"\nkill -SEGV $$\n' >"$BATS_TEST_TMPDIR/tools/cppcheck"
	chmod +x "$BATS_TEST_TMPDIR/tools/cppcheck"
	printf 'int f(int x)\n{\n\treturn x;\n}\n' >f.c
	git add -A && git commit -q -m f
	git diff HEAD~1 >"$BATS_TEST_TMPDIR/d.diff"
	run -0 --separate-stderr env PATH="$FORGE_BINDIR:$BATS_TEST_TMPDIR/tools" "$FORGE_BINDIR/forge-review" \
		<"$BATS_TEST_TMPDIR/d.diff"
	OUT=$output
	run -0 jq -c 'select(.type == "review.tool_ran" and .payload.tool == "cppcheck") | .payload' <<<"$OUT"
	jq -e '.failed == true and .findings == 0 and .error == "failed (exit 139, killed by signal 11: cppcheck: internal error)"' <<<"$output"
	run -0 jq -r '.review.findings[] | select(.rule == "forge/not-reviewed") | "\(.file) \(.severity) \(.message)"' <<<"$(state)"
	assert_output "f.c warning not linted: cppcheck failed (exit 139, killed by signal 11: cppcheck: internal error); review the file yourself"
}

# python_change: a commit changing app.py; its diff in $BATS_TEST_TMPDIR/py.diff.
python_change() {
	printf 'def f(x):\n    return x\n' >app.py
	git add app.py && git commit -q -m app
	printf 'import os\n\n\ndef f(x):\n    return x + 1\n' >app.py
	git commit -qam "app: f adds one"
	git diff HEAD~1 >"$BATS_TEST_TMPDIR/py.diff"
}

@test "a Python change without ruff, flake8 or bandit says which tools were missing (event and stderr)" {
	python_change
	# PATH holds forge and nothing else, so the tools are absent even where installed.
	run -0 --separate-stderr env PATH="$FORGE_BINDIR" "$FORGE_BINDIR/forge-review" <"$BATS_TEST_TMPDIR/py.diff"
	OUT=$output
	run -0 jq -c 'select(.type == "review.tools_missing") | .payload' <<<"$OUT"
	[ "${#lines[@]}" -eq 1 ]
	jq -e '.tools == ["ruff", "flake8", "bandit"]
	  and .missing[0] == {tool:"ruff", layer:"static", language:"python"}
	  and .missing[2] == {tool:"bandit", layer:"security", language:"python"}' <<<"$output"
	[ "$(grep -c 'not installed' <<<"$stderr")" -eq 1 ]
	[[ "$stderr" == *"forge-review: warning: not installed, so not run: ruff, flake8, bandit (python)"* ]]
	# -q: the event stays, the line goes
	run -0 --separate-stderr env PATH="$FORGE_BINDIR" "$FORGE_BINDIR/forge-review" -q <"$BATS_TEST_TMPDIR/py.diff"
	[[ "$output" == *'"type":"review.tools_missing"'* ]]
	[[ "$stderr" != *"not installed"* ]]
}

@test "flake8 standing in for ruff: only bandit is missing" {
	python_change
	mkdir "$BATS_TEST_TMPDIR/tools"
	printf '#!/bin/sh\nexit 0\n' >"$BATS_TEST_TMPDIR/tools/flake8"
	chmod +x "$BATS_TEST_TMPDIR/tools/flake8"
	run -0 --separate-stderr env PATH="$FORGE_BINDIR:$BATS_TEST_TMPDIR/tools" "$FORGE_BINDIR/forge-review" \
		<"$BATS_TEST_TMPDIR/py.diff"
	OUT=$output
	run -0 jq -c 'select(.type == "review.tool_ran") | .payload.tool' <<<"$OUT"
	assert_output '"flake8"'
	run -0 jq -c 'select(.type == "review.tools_missing") | .payload.tools' <<<"$OUT"
	assert_output '["bandit"]'
	[[ "$stderr" == *"not installed, so not run: bandit (python)"* ]]
}

@test "a change in no language with tools says nothing about missing tools" {
	echo "more" >>README
	git commit -qam readme
	run -0 --separate-stderr env PATH="$FORGE_BINDIR" "$FORGE_BINDIR/forge-review" < <(git diff HEAD~1)
	[[ "$output" != *'review.tools_missing'* ]]
	[[ "$stderr" != *"not installed"* ]]
}

@test "a --base ref that does not resolve is bad input: exit 2, no state" {
	run -2 --separate-stderr forge-review --repo "$REPO" --base no-such-ref --no-input </dev/null
	[[ "$stderr" == *"cannot resolve 'no-such-ref'"* ]]
	[ "$(jq -r .type <<<"${lines[-1]}")" = input.rejected ]
	! grep -q '"kind":"state"' <<<"$output" || false
}

@test "--base REF reviews what the branch changed since it left REF (from their merge base), not what REF got after" {
	# main holds a token when the branch leaves it, and drops it after
	printf 'notes\ntoken ghp_4kQ9zX2mV7bN1cR8tY5uW3eL6pA0sD9fG2hJ\n' >notes.txt
	git add notes.txt && git commit -qm notes
	FORK=$(git rev-parse HEAD)
	git checkout -qb feature
	echo "a line of the branch" >>README && git commit -qam "feature: README only"
	git checkout -q main
	printf 'notes\n' >notes.txt && git commit -qam "drop the token"
	MAIN=$(git rev-parse HEAD)
	git checkout -q feature
	echo "not committed yet" >>README
	# (before: git diff main, whose reverse of main's fix "added" the
	# token on this branch: a critical finding, exit 4, for a file the
	# branch never touched)
	run -0 --separate-stderr forge-review --no-input --base main </dev/null
	OUT=$output
	state | jq -e '.review.files == 1 and .review.findings == [] and .review.source == "base"'
	jq -e -s --arg f "$FORK" --arg m "$MAIN" '[.[] | select(.type == "review.base") | .payload]
		== [{ref: "main", commit: $m, merge_base: $f}]' <<<"$OUT"
	jq -e -s '[.[] | select(.type == "review.diff") | .payload.additions] == [2]' <<<"$OUT"
	# a REF with no history in common with HEAD tells nothing of the branch
	git stash -q
	git checkout -q --orphan other && git commit -qm other
	run -2 --separate-stderr forge-review --no-input --base main </dev/null
	[[ "$stderr" == "forge-review: --base 'main' and HEAD ("*") have no history in common: nothing tells what this branch changed; give a commit HEAD descends from, or review a diff: git diff main | forge-review" ]]
	[ "$(jq -r .type <<<"${lines[-1]}")" = input.rejected ]
	# a shallow clone that holds no common commit (a CI checkout of depth 1)
	# is told to fetch more
	git clone -q --depth 1 --no-single-branch "file://$REPO" "$BATS_TEST_TMPDIR/shallow"
	cd "$BATS_TEST_TMPDIR/shallow" && git checkout -q feature
	run -2 --separate-stderr forge-review --no-input --base origin/main </dev/null
	[[ "$stderr" == "forge-review: --base 'origin/main' and HEAD ("*") have no common commit in the history of this shallow clone: fetch enough of it to reach where the branch left origin/main (git fetch --deepen=N, or --unshallow; in CI: fetch-depth 0, GIT_DEPTH 0)" ]]
}

@test "a change under .forge/ is a critical security finding: a human must look (exit 4)" {
	mkdir -p .forge
	echo '{"sandbox":{"landlock":"off","network":"allow"}}' >.forge/config.json
	git add -f .forge/config.json && git commit -q -m "rules"
	run -4 --separate-stderr forge-review --no-input --base HEAD~1 </dev/null
	OUT=$output
	state | jq -e '.review.decision == "require_human" and ([.review.findings[] | select(.rule == "forge/config-changed")
		| [.file, .severity, .layer, .category]] == [[".forge/config.json", "critical", "security", "security"]])'
	# a change elsewhere is no such finding
	echo more >>README && git commit -q -am more
	run -0 --separate-stderr forge-review --no-input --base HEAD~1 </dev/null
	OUT=$output
	state | jq -e '[.review.findings[] | select(.rule == "forge/config-changed")] == []'
}

@test "a committed symbolic link that leads outside the repository is an error (forge/symlink-outside): changes requested; one inside is not" {
	mkdir -p docs
	ln -s /etc/hostname config.py
	ln -s ../../../../../.. docs/up
	ln -s ../.git/config docs/gitconf
	ln -s ../README docs/readme
	git add -A && git commit -q -m links
	# (before: approved with no finding, and forge merge landed them)
	run -1 --separate-stderr forge-review --no-input --base HEAD~1 </dev/null
	OUT=$output
	state | jq -e '.review.decision == "request_changes"'
	run -0 jq -r '.review.findings[] | select(.rule == "forge/symlink-outside") | [.file, .line, .severity, .layer] | @tsv' <<<"$(state)"
	assert_output "$(printf '%s\t1\terror\tsecurity\n' config.py docs/gitconf docs/up)"
	state | jq -e '.review.findings[] | select(.file == "config.py") | .message ==
		"the symbolic link '"'config.py'"' leads outside the repository, to the absolute path '"'/etc/hostname'"'; merged, whatever follows it (a build, an editor, a tool) reads or writes there: link to a file inside the repository, or commit a file instead"'
	# a link inside the repository is no finding; a link is not linted (read, it would be followed)
	state | jq -e '[.review.findings[] | select(.file == "docs/readme")] == []'
	git rm -q config.py docs/up docs/gitconf && git commit -q -m "inside only"
	ln -s ../README docs/readme2 && git add -A && git commit -q -m "one more inside"
	run -0 --separate-stderr forge-review --no-input --base HEAD~1 </dev/null
	OUT=$output
	state | jq -e '.review.decision == "approve" and .review.findings == []'
}

@test "the lint command runs in the sandbox: no writes outside the worktree, no keys, no network" {
	run -0 "$FORGE_TESTBIN/tool-run" --features
	[ "$(jq -r .landlock.available <<<"$output")" = true ] || skip "no Landlock on this kernel"
	OUTSIDE="$BATS_TEST_TMPDIR/outside"
	mkdir -p "$OUTSIDE"
	jq -n --arg o "$OUTSIDE" '{tools:{lint_command:("touch " + $o + "/linted; env > lint-env; cat /proc/net/dev > lint-net; true")}}' \
		>"$BATS_TEST_TMPDIR/cfg.json"
	echo change >>README && git commit -q -am change
	ANTHROPIC_API_KEY=$KEY run -0 --separate-stderr forge-review --no-input --config "$BATS_TEST_TMPDIR/cfg.json" --base HEAD~1 </dev/null
	[ ! -e "$OUTSIDE/linted" ]
	[ -e lint-env ]
	run -1 grep -c REVIEWTEST lint-env
	grep -q '^TERM=dumb$' lint-env
	if [ "$(jq -r .network_namespace.available <<<"$("$FORGE_TESTBIN/tool-run" --features)")" = true ]; then
		[ "$(awk -F: 'NR > 2 { print $1 }' lint-net | tr -d ' ')" = lo ]
	fi
}

@test "thousands of findings from the linters: the AI request still fits the model's window; the findings past a share are counted, the most severe listed" {
	mkdir -p docs
	for i in $(seq 600); do echo "doc $i" >"docs/d$i.txt"; done
	git add -A && git commit -q -m docs
	for i in $(seq 600); do echo "TODO later $i" >>"docs/d$i.txt"; done
	# one finding a changed file, with a long message as real linters' are;
	# the last file's is an error
	cat >lint.sh <<'L'
#!/bin/sh
msg=$(printf 'style issue: %0300d' 0)
for i in $(seq 599); do echo "docs/d$i.txt:2:1: warning: $msg [todo]"; done
echo "docs/d600.txt:2:1: error: the worst one [bad]"
L
	jq -n '{tools:{lint_command:"sh lint.sh"},review:{ai_min_risk:"low"},
	  llm:{context_window:16384,max_tokens:2048,pricing:{"mock-small":{input:0,output:0}}}}' >"$BATS_TEST_TMPDIR/c.json"
	mock_steps '[{"tool_calls":[{"name":"report_findings","input":{"findings":[]}}]}]'
	git diff -- docs >"$BATS_TEST_TMPDIR/d.diff"
	run -1 --separate-stderr bash -c "ANTHROPIC_API_KEY=$KEY forge-review --provider anthropic --model mock-small --base-url '$MOCK_URL' --config '$BATS_TEST_TMPDIR/c.json' <'$BATS_TEST_TMPDIR/d.diff'"
	OUT=$output
	jq -s -e '[.[] | select(.type == "review.tool_ran") | .payload.findings] == [600]' <<<"$OUT"
	assert_equal "$(requests | jq length)" 1
	# (before: every finding went into the message, 200K bytes for a
	# window of 16K tokens; the bytes over 4 are well above the tokens)
	run -0 jq -r '.[0].body | tojson | length' <<<"$(requests)"
	[ "$output" -lt $(((16384 - 2048) * 3)) ]
	run -0 jq -r '.[0].body.messages[0].content | if type == "string" then . else .[0].text end' <<<"$(requests)"
	[[ $output == *"600 findings, too many to list here. Counted:"* ]]
	[[ $output == *"- by tool: lint 600"* ]]
	[[ $output == *"- by severity: warning 599, error 1"* ]]
	[[ $output == *"- files with the most: "*"(and 590 others)"* ]]
	# the most severe first
	[[ $output == *"The most severe of them:"$'\n'"- docs/d600.txt:2 [lint/bad] the worst one"* ]]
	[[ $output == *"more findings are not listed one by one"* ]]
	[[ $output == *"Not shown here, too large for this review (report nothing on them): "*" and "*" more files"* ]]
	jq -s -e '[.[] | select(.type == "review.layer" and .payload.layer == "ai") | .payload.findings_not_listed > 0] == [true]' <<<"$OUT"
	jq -s -e '[.[] | select(.type == "review.ai_not_shown") | .payload.files | length > 0] == [true]' <<<"$OUT"
}

@test "a tools.lint_command that cannot run is a failed scanner, not no findings: failed, named, and the files marked not reviewed" {
	# (before: exit 127 read as 0 findings, no warning, the change approved
	# as linted, hunt58 #5)
	echo "more" >>README
	jq -nc '{tools:{lint_command:"no-such-linter --strict ."}}' >"$BATS_TEST_TMPDIR/c.json"
	git diff >"$BATS_TEST_TMPDIR/d.diff"
	run --separate-stderr forge-review --config "$BATS_TEST_TMPDIR/c.json" <"$BATS_TEST_TMPDIR/d.diff"
	jq -s -e '[.[] | select(.type == "review.tool_ran" and .payload.tool == "lint_command") | .payload |
		.failed == true and .exit_code == 127 and (.error | contains("command not found"))] == [true]' <<<"$output"
	jq -s -e '[.[] | select(.kind == "state")] | last | .review.findings |
		any(.rule == "forge/not-reviewed" and .file == "README")' <<<"$output"
}

@test "in a run's worktree what the lint command leaves untracked is removed after it; files there before stay; not in a checkout" {
	# (before: an .eslintcache or a cache of the lint command's stayed in
	# the run's worktree, and the next commit or a resume's saved ref took
	# it for the run's work)
	echo change >>README && git commit -q -am change
	WT="$BATS_TEST_TMPDIR/wt"
	git worktree add -q "$WT" -b forge/t1
	echo mine >"$WT/mine.txt"	# there before the command: stays
	jq -nc '{tools:{lint_command:"mkdir -p .cache/lint && touch .eslintcache .cache/lint/x; true"}}' \
		>"$BATS_TEST_TMPDIR/c.json"
	jq -nc --arg wt "$WT" --arg d "$(git diff HEAD~1 HEAD)" --arg b "$(git rev-parse HEAD~1)" \
		--arg c "$(git rev-parse HEAD)" '{kind:"state", v:1, trace_id:"t1", phase:"test", status:"ok",
		task:{description:"x", worktree:$wt}, changes:{files:[{path:"README", action:"modify", additions:1, deletions:0}], diff:$d, base_commit:$b, commit:$c}}' \
		>"$BATS_TEST_TMPDIR/state.json"
	ANTHROPIC_API_KEY=$KEY run -0 --separate-stderr forge-review --config "$BATS_TEST_TMPDIR/c.json" \
		<"$BATS_TEST_TMPDIR/state.json"
	jq -s -e '[.[] | select(.type == "review.cleaned") | .payload.removed] == [[".cache/lint/x", ".eslintcache"]]' \
		<<<"$output"
	jq -s -e '[.[] | select(.type == "review.tool_ran" and .payload.tool == "lint_command")] | length == 1' <<<"$output"
	[ ! -e "$WT/.eslintcache" ] && [ ! -e "$WT/.cache" ]
	run -0 git -C "$WT" status --porcelain
	assert_output '?? mine.txt'
	[ ! -e "$REPO/.git/worktrees/wt/forge-command-untracked.json" ]
	# a diff piped in by hand in a checkout of yours: what it leaves stays there
	git diff HEAD~1 HEAD >"$BATS_TEST_TMPDIR/d.diff"
	ANTHROPIC_API_KEY=$KEY run -0 --separate-stderr forge-review --config "$BATS_TEST_TMPDIR/c.json" \
		<"$BATS_TEST_TMPDIR/d.diff"
	refute_output --partial review.cleaned
	[ -e "$REPO/.eslintcache" ]
}
