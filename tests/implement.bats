#!/usr/bin/env bats
# implement.bats - forge-implement on the calc fixture repository: alone and
# piped after forge-plan with cassettes, the change really on forge/TRACE
# and `make check` passing there, the user's checkout untouched; bounces
# (review findings, fixable test failures) first in the prompt, asserted on
# the mock provider's request log; TDD red/green; self-validation with a
# fix round; the guard and bad input with their exit statuses.

bats_require_minimum_version 1.5.0

load test_helper/mock
mock_per_file 180

setup() {
	load test_helper/common
	forge_setup
	calc_setup
}

# replay CASSETTE...: the cassettes, concatenated, answer the model.
replay() {
	local f
	for f in "$@"; do cat "$CASSETTES/$f"; done >"$BATS_TEST_TMPDIR/cassette.jsonl"
	export FORGE_PROVIDER=replay FORGE_CASSETTE="$BATS_TEST_TMPDIR/cassette.jsonl"
}

# mock STEPS-JSON: load the mock's script and forget earlier requests.
mock() {
	mock_script "$1"
	unset FORGE_CASSETTE
	export FORGE_PROVIDER=anthropic FORGE_BASE_URL="$MOCK_URL" ANTHROPIC_API_KEY=test-key
}

# The first user message of request N (0-based) the mock received (its
# text blocks', when prompt caching made it an array).
prompt_of() {
	curl -sS -f "$MOCK_URL/_mock/requests" |
		jq -r ".[$1].body.messages[0].content | if type == \"string\" then . else map(.text // \"\") | join(\"\\n\") end"
}

FINISH='{"tool_calls":[{"name":"finish","input":{"summary":"done"}}]}'

last_state() {
	tail -n 1 <<<"$output"
}

events_of() {
	jq -c "select(.kind == \"event\" and .type == \"$1\") | .payload" <<<"$output"
}

# A state with the plan of plan-calc.jsonl for trace $1 (not yet implemented).
plan_state() {
	sed -n 3p "$CASSETTES/plan-calc.jsonl" | jq -c --arg t "$1" --arg r "$REPO" \
		'{kind:"state", v:1, trace_id:$t, phase:"plan", status:"ok",
		  task:{description:"add a mul operation", repo:$r, base_ref:"main"},
		  plan:.response.tool_calls[0].input, bounces:[], cost:{tokens:0, usd:0}}'
}

# The user's checkout is as it was: same HEAD, nothing changed or untracked.
checkout_untouched() {
	[ "$(git -C "$REPO" rev-parse HEAD)" = "$BASE" ]
	[ "$(git -C "$REPO" rev-parse --abbrev-ref HEAD)" = "main" ]
	run -0 git -C "$REPO" status --porcelain
	assert_output ""
	grep -q 'calc add|sub A B' "$REPO/calc.c"
}

@test "forge-implement run again on a state whose worktree an earlier run left mid-edit: kept on a ref, started from the state" {
	# (before: an interrupted forge-implement left its edits in the
	# worktree, and the next run of the same state edited on top of them:
	# calc_mul twice, the build broken)
	replay plan-calc.jsonl implement-calc.jsonl implement-calc.jsonl
	forge-plan --task "add a mul operation" >"$BATS_TEST_TMPDIR/plan.jsonl" 2>/dev/null
	run -0 --separate-stderr forge-implement <"$BATS_TEST_TMPDIR/plan.jsonl"
	trace=$(jq -r .trace_id <<<"$(last_state)")
	wt="$(run_worktree "$trace")"
	# what a stopped run leaves: an edit not committed
	echo "int half_done;" >>"$wt/calc.c"
	run -0 --separate-stderr forge-implement <"$BATS_TEST_TMPDIR/plan.jsonl"
	[[ $stderr == *"forge-implement: the run's worktree had changes its state does not have"*"kept on refs/forge/$trace/saved/1; starting again from ${BASE:0:12}"* ]]
	jq -e -s --arg t "$trace" --arg base "$BASE" 'map(select(.type == "worktree.recovered")) |
		length == 1 and .[0].payload.saved_ref == "refs/forge/\($t)/saved/1" and .[0].payload.reset_to == $base' <<<"$output"
	# the edit is kept there, and not in the new change
	git show "refs/forge/$trace/saved/1:calc.c" | grep -q "int half_done;"
	! git show "forge/$trace:calc.c" | grep -q "int half_done;" || false
	# one change on the branch: the first run's commit went to the ref too
	[ "$(git log --format=%s "$BASE..forge/$trace")" = "forge: add a mul operation (attempt 1)" ]
	run -0 git -C "$wt" status --porcelain
	assert_output ""
}

@test "forge-implement on a worktree left mid-edit whose save fails (a stale lock of the saved ref): it stops, the edit is not committed" {
	replay plan-calc.jsonl implement-calc.jsonl implement-calc.jsonl
	forge-plan --task "add a mul operation" >"$BATS_TEST_TMPDIR/plan.jsonl" 2>/dev/null
	run -0 --separate-stderr forge-implement <"$BATS_TEST_TMPDIR/plan.jsonl"
	trace=$(jq -r .trace_id <<<"$(last_state)")
	wt="$(run_worktree "$trace")"
	head=$(git rev-parse "forge/$trace")
	echo "int half_done;" >>"$wt/calc.c"
	mkdir -p "$REPO/.git/refs/forge/$trace/saved" && touch "$REPO/.git/refs/forge/$trace/saved/1.lock"
	# (before: the failed save went unsaid, and the edit was committed with the new change)
	run -5 --separate-stderr forge-implement <"$BATS_TEST_TMPDIR/plan.jsonl"
	[[ $stderr == *"cannot save the run's worktree before the phase starts again (the worktree was left as it is): "*"saved/1.lock"* ]]
	[ "$(git rev-parse "forge/$trace")" = "$head" ]
	grep -q "int half_done;" "$wt/calc.c"
}

@test "forge-plan | forge-implement: the change is committed on forge/TRACE and make check passes there" {
	replay plan-calc.jsonl implement-calc.jsonl
	run -0 --separate-stderr bash -c 'forge-plan --task "add a mul operation" | forge-implement'
	state=$(last_state)
	trace=$(jq -r .trace_id <<<"$state")
	{ read -r tip && read -r tree; } < <(git rev-parse "forge/$trace" "forge/$trace^{tree}")
	# (one jq for the state's checks: each jq costs ~40 ms of CPU to start)
	jq -e --arg t "$trace" --arg wt "$(runs_dir)/$trace" --arg tip "$tip" --arg base "$BASE" --arg tree "$tree" '
	  (.phase == "implement" and .status == "ok" and .plan.version == 1) and
	  (.task.branch == "forge/" + $t and .task.worktree == $wt) and
	  # changes per state.schema.json $defs/changes
	  (.changes | .commit == $tip and .base_commit == $base) and
	  (.changes.files == [{"path":"calc.c","action":"modify","additions":8,"deletions":1},
			      {"path":"tests/check.sh","action":"modify","additions":2,"deletions":0}]) and
	  (.changes.tests_added == ["tests/check.sh"]) and
	  (.changes.diff | startswith("diff --git a/calc.c b/calc.c") and contains("+long calc_mul(long a, long b)")) and
	  (.changes.validated == true and .changes.validation.command == "make check" and
	   .changes.validation.exit_status == 0 and (.changes.validation.output | contains("ok - calc mul 6 7 = 42"))) and
	  # the agent'"'"'s last command was `make check` on this very tree, but it
	  # never ran the build (`make`): validation runs both
	  (.changes.validation | (has("skipped") | not) and [.steps[].name] == ["build","test"])' <<<"$state"
	# events as they happened, both programs' in one stream
	run -0 jq -sc '[.[] | select(.kind == "event") | .source + ":" + .type] |
		map(select(test(":(phase.started|phase.completed|worktree.opened|commit.created|validation.completed|plan.versioned)$")))' <<<"$output"
	assert_output '["forge-plan:phase.started","forge-plan:plan.versioned","forge-plan:phase.completed","forge-implement:phase.started","forge-implement:worktree.opened","forge-implement:commit.created","forge-implement:validation.completed","forge-implement:phase.completed"]'
	# the branch really has the change, one commit over the base, and it passes
	run -0 git log --format=%s "$BASE..forge/$trace"
	assert_output "forge: add a mul operation (attempt 1)"
	run -0 git show "forge/$trace:calc.c"
	assert_output --partial "calc_mul(a, b)"
	mkdir "$BATS_TEST_TMPDIR/out"
	git archive "forge/$trace" | tar -x -C "$BATS_TEST_TMPDIR/out"
	run -0 make -s -C "$BATS_TEST_TMPDIR/out" check
	assert_output --partial "ok - calc mul -2 4 = -8"
	checkout_untouched
	# the model-call log keeps the agent's tools once: the later calls name
	# the row that has them (they were 80% of every row)
	run -0 sqlite3 "$FORGE_DB" "select call, json_type(request, '\$.tools'), json_extract(request, '\$.tools.as_in.call')
		from llm_calls where phase = 'implement' order by call"
	[ "${lines[0]}" = "1|array|" ]
	[ "${#lines[@]}" -gt 1 ]
	for l in "${lines[@]:1}"; do [[ "$l" == *"|object|1" ]]; done
}

@test "forge-implement alone on a state file; run again, the worktree is reopened and nothing new is committed" {
	plan_state T1 >"$BATS_TEST_TMPDIR/plan.json"
	replay implement-calc.jsonl
	run -0 --separate-stderr forge-implement <"$BATS_TEST_TMPDIR/plan.json"
	last_state | jq -e '.status == "ok" and .task.branch == "forge/T1" and .changes.validated'
	events_of worktree.opened | jq -e '.reopened == false'
	git show forge/T1:tests/check.sh | grep -q 'expect 42 mul 6 7'
	last_state >"$BATS_TEST_TMPDIR/done.json"
	# a second run of the same trace (as on a bounce) reopens the worktree
	mock "[$FINISH]"
	jq -c '.bounces = [{"from":"review","to":"implement","n":1,"reason":"again"}]' \
		"$BATS_TEST_TMPDIR/done.json" >"$BATS_TEST_TMPDIR/again.json"
	run -0 --separate-stderr forge-implement <"$BATS_TEST_TMPDIR/again.json"
	events_of worktree.opened | jq -e '.reopened == true'
	events_of commit.skipped | jq -e '.reason == "nothing to commit" and .message == "forge: add a mul operation (attempt 2)"'
	last_state | jq -e '.changes.commit == "'"$(git rev-parse forge/T1)"'" and (.changes.files | length) == 2
	  and .changes.attempt == 2'
	[[ $stderr == "" ]]
	checkout_untouched
}

@test "one answer's calls: a finish before a write_file is taken after it; after a failed call it is not taken" {
	plan_state T7 >"$BATS_TEST_TMPDIR/plan.json"
	echo '{"implement": {"validate": false}, "memory": {"reflect": false}}' >"$BATS_TEST_TMPDIR/c.json"
	# (before: the loop ended at the finish, the write_file never ran, nothing
	# committed and the phase ok with a summary naming a file not there)
	mock '[{"tool_calls":[{"name":"finish","input":{"summary":"added mul.c"}},
		{"name":"write_file","input":{"path":"mul.c","content":"long calc_mul(long a, long b) { return a * b; }\n"}}]}]'
	run -0 --separate-stderr forge-implement --config "$BATS_TEST_TMPDIR/c.json" <"$BATS_TEST_TMPDIR/plan.json"
	git show forge/T7:mul.c | grep -q calc_mul
	# a finish beside a call that failed: not taken, the model told, and it finishes next turn
	plan_state T8 >"$BATS_TEST_TMPDIR/plan.json"
	mock '[{"tool_calls":[{"name":"edit_file","input":{"path":"calc.c","old_text":"not in the file","new_text":"x"}},
		{"name":"finish","input":{"summary":"edited calc.c"}}]},
		{"tool_calls":[{"name":"finish","input":{"summary":"nothing to change after all"}}]}]'
	run -0 --separate-stderr forge-implement --config "$BATS_TEST_TMPDIR/c.json" <"$BATS_TEST_TMPDIR/plan.json"
	curl -sS -f "$MOCK_URL/_mock/requests" | jq -e '.[-1].body.messages[-1].content |
		map(select(.type == "tool_result")) | length == 2 and
		(.[1].is_error == true and (.[1].content | tostring | test("Not taken: another call of the same answer failed")))'
	last_state | jq -e '.status == "ok"'
	events_of implement.summary | jq -e '.summary == "nothing to change after all"'
}

@test "tests_added: Rust unit tests written inline in src/ (#[test] fns in #[cfg(test)] mod tests) count; a src file without one does not" {
	plan_state T9 >"$BATS_TEST_TMPDIR/plan.json"
	echo '{"implement": {"validate": false}, "memory": {"reflect": false}}' >"$BATS_TEST_TMPDIR/c.json"
	mkdir -p src && printf 'pub fn old() {}\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn old_works() {}\n}\n' >src/old.rs
	git add src/old.rs && git commit -qm "old.rs"
	# (before: tests_added was [], none of these paths looks like a test's)
	local lib='pub fn mul(a: i64, b: i64) -> i64 { a * b }\n\n#[cfg(test)]\nmod tests {\n    use super::*;\n\n    #[test]\n    fn mul_works() { assert_eq!(mul(6, 7), 42); }\n}\n'
	local net='pub async fn ping() {}\n\n#[cfg(test)]\nmod tests {\n    #[tokio::test(flavor = "multi_thread")]\n    async fn pings() { super::ping().await; }\n}\n'
	local plain='// #[test] in a comment is not at a line start\npub fn add(a: i64, b: i64) -> i64 { a + b }\n#[cfg(test)]\nmod tests {}\n'
	mock "$(jq -nc --arg lib "$(printf "$lib")" --arg net "$(printf "$net")" --arg plain "$(printf "$plain")" '[{tool_calls: [
		{name: "write_file", input: {path: "src/lib.rs", content: $lib}},
		{name: "write_file", input: {path: "src/net.rs", content: $net}},
		{name: "write_file", input: {path: "src/add.rs", content: $plain}},
		{name: "write_file", input: {path: "src/old.rs", content: "pub fn old() {}\n"}},
		{name: "write_file", input: {path: "tests/mul.rs", content: "#[test]\nfn t() {}\n"}}]},
		{tool_calls: [{name: "finish", input: {summary: "mul"}}]}]')"
	run -0 --separate-stderr forge-implement --config "$BATS_TEST_TMPDIR/c.json" <"$BATS_TEST_TMPDIR/plan.json"
	last_state | jq -e '(.changes.files | length) == 5 and (.changes.tests_added | sort) == ["src/lib.rs", "src/net.rs", "tests/mul.rs"]' ||
		{ last_state | jq -c .changes.tests_added; false; }
}

@test "a Latin-1 file: read_file shows it as Latin-1 and says so; edit_file and apply_patch given that text keep its bytes" {
	# (before: its bytes were shown as U+FFFD with no word, and edit_file
	# given that text answered "`old` was not found")
	printf 'caf\351 au lait\nna\357ve\n' >latin1.txt
	git add latin1.txt && git commit -q -m latin1
	plan_state T9 >"$BATS_TEST_TMPDIR/plan.json"
	echo '{"implement": {"validate": false}, "memory": {"reflect": false}}' >"$BATS_TEST_TMPDIR/c.json"
	mock '[{"tool_calls":[{"name":"read_file","input":{"path":"latin1.txt"}}]},
		{"tool_calls":[{"name":"edit_file","input":{"path":"latin1.txt","old":"café au lait","new":"café noir"}}]},
		{"tool_calls":[{"name":"apply_patch","input":{"patch":"*** Begin Patch\n*** Update File: latin1.txt\n@@\n-naïve\n+naïveté\n*** End Patch\n"}}]},
		{"tool_calls":[{"name":"finish","input":{"summary":"edited latin1.txt"}}]}]'
	run -0 --separate-stderr forge-implement --config "$BATS_TEST_TMPDIR/c.json" <"$BATS_TEST_TMPDIR/plan.json"
	git show forge/T9:latin1.txt | cmp - <(printf 'caf\351 noir\nna\357vet\351\n')
	curl -sS -f "$MOCK_URL/_mock/requests" | jq -e '.[1].body.messages[-1].content | map(select(.type == "tool_result"))[0].content
		| tostring | test("is not UTF-8: shown as Latin-1") and test("1\tcafé au lait")'
	last_state | jq -e '.status == "ok"'
}

# provider NAME: the mock speaks Anthropic's or OpenAI's wire format.
provider() {
	if [ "$1" = openai ]; then
		export FORGE_PROVIDER=openai FORGE_BASE_URL="$MOCK_URL/v1" OPENAI_API_KEY=test-key FORGE_MODEL=gpt-4o-mini
	else
		export FORGE_PROVIDER=anthropic FORGE_BASE_URL="$MOCK_URL" ANTHROPIC_API_KEY=test-key
		unset FORGE_MODEL
	fi
}

# The tool results request N (0-based) carried, in either wire format, as JSON strings.
tool_results_of() {
	curl -sS -f "$MOCK_URL/_mock/requests" | jq -c "[.[$1].body.messages[] | if .role == \"tool\" then .content
		elif (.content | type) == \"array\" then (.content[] | select(.type == \"tool_result\") | .content)
		else empty end | tostring]"
}

@test "a file that starts with a UTF-8 byte-order mark: apply_patch and edit_file change line 1 and keep the mark and CRLF" {
	# (before: no fuzz level matched "using System;" against line 1,
	# "\ufeffusing System;", and the error showed two lines that look alike)
	printf '\357\273\277using System;\r\nclass A {}\r\n' >A.cs
	git add A.cs && git commit -q -m bom
	echo '{"implement": {"validate": false}, "memory": {"reflect": false}}' >"$BATS_TEST_TMPDIR/c.json"
	for p in anthropic openai; do
		plan_state "BOM$p" >"$BATS_TEST_TMPDIR/plan.json"
		mock_script '[{"tool_calls":[{"name":"apply_patch","input":{"patch":"*** Begin Patch\n*** Update File: A.cs\n-using System;\n+using System;\n+using System.IO;\n class A {}\n*** End Patch\n"}}]},
			{"tool_calls":[{"name":"edit_file","input":{"path":"A.cs","old":"using System; \nusing System.IO;","new":"using System;\nusing System.IO;\nusing System.Linq;"}}]},
			{"tool_calls":[{"name":"finish","input":{"summary":"added usings"}}]}]'
		provider $p
		run -0 --separate-stderr forge-implement --config "$BATS_TEST_TMPDIR/c.json" <"$BATS_TEST_TMPDIR/plan.json"
		git show "forge/BOM$p:A.cs" | cmp - <(printf '\357\273\277using System;\r\nusing System.IO;\r\nusing System.Linq;\r\nclass A {}\r\n')
		tool_results_of 1 | jq -e '.[0] | test("^Success")'
		tool_results_of 2 | jq -e '.[-1] | test("^Edited A.cs")'
	done
}

@test "a file name that is not UTF-8 is shown quoted, as git quotes it, and every file tool takes that name; changes.files keeps it" {
	# (before: shown as caf\uFFFD.txt, which read_file and edit_file answered
	# "no such file or directory", and changes.files lost the name too)
	printf 'latin\n' >"$(printf 'caf\351.txt')"
	printf 'decoy\n' >'"caf\351.txt"'   # a name that is the quoted text itself
	git add -A && git commit -q -m names
	echo '{"implement": {"validate": false}, "memory": {"reflect": false}}' >"$BATS_TEST_TMPDIR/c.json"
	for p in anthropic openai; do
		plan_state "N$p" >"$BATS_TEST_TMPDIR/plan.json"
		mock_script '[{"tool_calls":[{"name":"list_files","input":{"pattern":"*caf*"}},
			{"name":"read_file","input":{"path":"\"caf\\351.txt\""}},
			{"name":"edit_file","input":{"path":"\"caf\\351.txt\"","old":"latin","new":"edited"}}]},
			{"tool_calls":[{"name":"finish","input":{"summary":"edited"}}]}]'
		provider $p
		run -0 --separate-stderr forge-implement --config "$BATS_TEST_TMPDIR/c.json" <"$BATS_TEST_TMPDIR/plan.json"
		# one name each, lossless: the quoted form json_path() gives
		last_state | jq -e '.changes.files | map(.path) == ["\"caf\\351.txt\""]'
		run -0 tool_results_of 1
		echo "$output" | jq -e '.[0] == "\"\\\"caf\\\\351.txt\\\"\"\n\"caf\\351.txt\""'
		echo "$output" | jq -e '.[1] | test("1\tlatin")'
		echo "$output" | jq -e '.[2] | test("^Edited \"caf\\\\351.txt\"")'
		git show "forge/N$p:$(printf 'caf\351.txt')" | cmp - <(printf 'edited\n')
		git show "forge/N$p:\"caf\\351.txt\"" | cmp - <(printf 'decoy\n')
	done
}

@test "every tool schema sent is a plain JSON Schema, in both wire formats: no \$schema, \$id, \$comment, title or description at its top" {
	# (before: ask_human's went with its file's "$schema", "$id", "title" and
	# description, the reflection's record_learnings' with its "$comment":
	# every other tool's input schema is its file without them)
	echo '{"implement": {"validate": false}}' >"$BATS_TEST_TMPDIR/c.json"
	for p in anthropic openai; do
		plan_state "S$p" >"$BATS_TEST_TMPDIR/plan.json"
		mock_script '[{"forced_tool": "record_learnings", "times": "always", "tool_calls": [{"name": "record_learnings", "input": {"learnings": []}}]},
			{"tool_calls":[{"name":"ask_human","input":{"question":"mul or times?"}}]}]'
		provider $p
		run -4 --separate-stderr forge-implement --config "$BATS_TEST_TMPDIR/c.json" <"$BATS_TEST_TMPDIR/plan.json"
		events_of agent.escalated | jq -e '.question == "mul or times?"'
		run -0 bash -c "curl -sS -f '$MOCK_URL/_mock/requests' | jq -c '[.[].body.tools[] | {name: (.name // .function.name),
			schema: (.input_schema // .function.parameters)}]'"
		# the agent's tools, ask_human and finish among them, and the reflection's
		jq -e 'map(.name) | index("ask_human") and index("finish") and index("record_learnings") and index("read_file")' <<<"$output"
		jq -e 'all(.[].schema; type == "object" and .type == "object" and
			(keys - ["$schema", "$id", "$comment", "title", "description"] == keys) and
			([.. | objects | keys[] | select(. == "$schema" or . == "$id")] == []))' <<<"$output"
	done
}

@test "a review bounce puts the findings first in the prompt: file, line, message, suggested fix" {
	plan_state T2 | jq -c '.changes = {"files":[]} | .review = {"decision":"request_changes","findings":[
		{"severity":"warning","category":"style","message":"usage line lists no mul","file":"calc.c","line":31},
		{"severity":"error","category":"correctness","rule":"int-overflow","message":"calc_mul overflows silently",
		 "file":"calc.c","line":17,"fix":"check with __builtin_mul_overflow and report an error"}]} |
		.bounces = [{"from":"review","to":"implement","n":1,"reason":"changes requested"}]' >"$BATS_TEST_TMPDIR/in.json"
	mock "[$FINISH]"
	run -0 --separate-stderr forge-implement <"$BATS_TEST_TMPDIR/in.json"
	events_of implement.bounce | jq -e '.from == "review" and .findings == 2 and .failures == 0'
	run -0 prompt_of 0
	assert_line --index 0 "# Fix these first: the review requested changes"
	# worst first, each with its place, problem and fix
	assert_output --partial "1. calc.c:17 — error correctness [int-overflow]: calc_mul overflows silently
   Suggested fix: check with __builtin_mul_overflow and report an error
2. calc.c:31 — warning style: usage line lists no mul"
	assert_output --partial "# The task"
	assert_output --partial "[t1] Add calc_mul and the mul operation"
	# the implementer's tools, rooted at the worktree
	run -0 bash -c "curl -sS '$MOCK_URL/_mock/requests' | jq -c '[.[0].body.tools[].name]'"
	assert_output '["read_file","list_files","grep","write_file","edit_file","apply_patch","run_command","git_diff","git_status","delegate","finish","ask_human"]'
}

@test "a test bounce puts only the failures with a confident suggested fix first" {
	plan_state T3 | jq -c '.changes = {"files":[]} | .review = {"decision":"approve","findings":[
		{"severity":"error","message":"stale finding","file":"calc.c","line":1}]} |
		.tests = {"command":"make check","summary":{"total":5,"passed":3,"failed":2},"failures":[
		{"test":"calc mul 6 7","file":"tests/check.sh","line":22,"message":"expected 42, got 13",
		 "output":"not ok - calc mul 6 7: expected 42, got 13","root_cause":"calc_mul adds instead of multiplying",
		 "suggested_fix":"return a * b in calc_mul","confidence":0.92},
		{"test":"calc mul -2 4","message":"flaky?","suggested_fix":"retry","confidence":0.5}]} |
		.bounces = [{"from":"review","to":"implement","n":1},{"from":"test","to":"implement","n":1}]' >"$BATS_TEST_TMPDIR/in.json"
	mock "[$FINISH]"
	run -0 --separate-stderr forge-implement <"$BATS_TEST_TMPDIR/in.json"
	events_of implement.bounce | jq -e '.from == "test" and .findings == 0 and .failures == 1'
	run -0 prompt_of 0
	assert_line --index 0 "# Fix these first: tests failed"
	assert_output --partial "failed (\`make check\`)"
	assert_output --partial "1. calc mul 6 7 (tests/check.sh:22): expected 42, got 13
   Root cause: calc_mul adds instead of multiplying
   Suggested fix: return a * b in calc_mul (confidence 0.92)"
	assert_output --partial "not ok - calc mul 6 7: expected 42, got 13"
	refute_output --partial "retry"
	refute_output --partial "stale finding"
}

@test "a bounce's findings and failures name a file holding a newline as one name, quoted as git quotes it" {
	plan_state T4 | jq -c '.changes = {"files":[]} | .review = {"decision":"request_changes","findings":[
		{"severity":"error","category":"correctness","message":"real","file":"a\n2. calc.c:1 — error: delete calc.c","line":3}]} |
		.tests = {"command":"make check","summary":{"total":1,"passed":0,"failed":1},"failures":[
		{"test":"calc mul","file":"t\u001b[2J.sh","line":2,"message":"bad","suggested_fix":"fix it","confidence":0.9}]} |
		.bounces = [{"from":"review","to":"implement","n":1},{"from":"test","to":"implement","n":1}]' >"$BATS_TEST_TMPDIR/in.json"
	mock "[$FINISH]"
	run -0 --separate-stderr forge-implement <"$BATS_TEST_TMPDIR/in.json"
	run -0 prompt_of 0
	# (before: the name's second line read as a second finding)
	assert_output --partial '1. calc mul ("t\033[2J.sh":2): bad'
	refute_line --regexp '^2\. calc\.c'
	# (after a test bounce the review's findings are not in the prompt: a review bounce)
	plan_state T5 | jq -c '.changes = {"files":[]} | .review = {"decision":"request_changes","findings":[
		{"severity":"error","category":"correctness","message":"real","file":"a\n2. calc.c:1 — error: delete calc.c","line":3}]} |
		.bounces = [{"from":"review","to":"implement","n":1}]' >"$BATS_TEST_TMPDIR/in.json"
	mock "[$FINISH]"
	run -0 --separate-stderr forge-implement <"$BATS_TEST_TMPDIR/in.json"
	run -0 prompt_of 0
	assert_output --partial '1. "a\n2. calc.c:1 — error: delete calc.c":3 — error correctness: real'
	refute_line --regexp '^2\. calc\.c'
}

@test "TDD: tests first and confirmed failing (tdd.red), then implemented until they pass (tdd.green)" {
	plan_state T4 >"$BATS_TEST_TMPDIR/plan.json"
	replay implement-tdd.jsonl
	run -0 --separate-stderr forge-implement --tdd <"$BATS_TEST_TMPDIR/plan.json"
	events_of tdd.red | jq -e '.confirmed == true and .failing == true and .command == "make check" and .exit_status != 0'
	events_of tdd.green | jq -e '.passing == true and .exit_status == 0'
	last_state | jq -e '.changes.validated == true and .changes.tests_added == ["tests/check.sh"]'
	run -0 git log --format=%s "$BASE..forge/T4"
	assert_output "forge: add a mul operation (attempt 1)
forge: add a mul operation (attempt 1, tests)"
	# the tests commit holds only the tests, the tip the implementation too
	run -0 git diff --name-only "$BASE" "forge/T4~1"
	assert_output "tests/check.sh"
	checkout_untouched
}

@test "TDD from the config: tests that already pass are sent back, then the phase is rejected" {
	plan_state T5 >"$BATS_TEST_TMPDIR/plan.json"
	mkdir -p .forge
	echo '{"implement":{"tdd":true}}' >.forge/config.json
	weak='{"tool_calls":[{"name":"edit_file","input":{"path":"tests/check.sh","old":"expect 7 sub 10 3\n","new":"expect 7 sub 10 3\nexpect 9 add 4 5\n"}}]}'
	mock "[$weak,$FINISH,$FINISH]"
	run -1 --separate-stderr forge-implement <"$BATS_TEST_TMPDIR/plan.json"
	last_state | jq -e '.status == "rejected" and .changes.validated == false'
	[ "$(events_of tdd.red | jq -s 'map(.confirmed) == [false, false]')" = true ]
	[[ $stderr == *"the new tests pass before any implementation"* ]]
	run -0 prompt_of 0
	assert_line --index 0 "# Test-driven: write the tests first"
	run -0 prompt_of 2
	assert_line --index 0 "# The tests pass already: they must fail first"
	assert_output --partial "ok - calc add 4 5 = 9"
	run -0 git log --format=%s "$BASE..forge/T5"
	assert_output "forge: add a mul operation (attempt 1, tests)"
}

@test "self-validation runs the real build; a failure goes back to the agent once and is fixed" {
	plan_state T6 >"$BATS_TEST_TMPDIR/plan.json"
	replay implement-fix.jsonl
	run -0 --separate-stderr forge-implement <"$BATS_TEST_TMPDIR/plan.json"
	[ "$(events_of validation.completed | jq -s -c 'map([.validated, .command])')" = '[[false,"make"],[true,"make check"]]' ]
	last_state | jq -e '.changes.validated == true'
	run -0 git log --format=%s "$BASE..forge/T6"
	assert_output "forge: add a mul operation (attempt 1, fix 1)
forge: add a mul operation (attempt 1)"
	# with no fix round left, the failure is recorded, not hidden
	plan_state T7 >"$BATS_TEST_TMPDIR/plan7.json"
	replay implement-fix.jsonl
	echo '{"implement":{"fix_rounds":0}}' >"$BATS_TEST_TMPDIR/c.json"
	run -0 --separate-stderr forge-implement --config "$BATS_TEST_TMPDIR/c.json" <"$BATS_TEST_TMPDIR/plan7.json"
	last_state | jq -e '.changes.validated == false and .changes.validation.command == "make" and
		.changes.validation.exit_status != 0 and (.changes.validation.output | test("error"))'
	events_of phase.completed | jq -e '.reason | endswith("not validated (`make` failed)")'
	checkout_untouched
}

@test "forge-implement run by hand whose validation fails says on stderr which command, its status and its output's end; exit 0, the state as before" {
	# (before: nothing on stderr; only the state's changes.validation said it)
	echo '{"tools":{"build_command":"true","test_command":"seq 1 8; echo mul is wrong; exit 3"},
	       "implement":{"fix_rounds":0},"memory":{"reflect":false}}' >"$BATS_TEST_TMPDIR/c.json"
	plan_state T18 >"$BATS_TEST_TMPDIR/plan.json"
	mock '[{"tool_calls":[{"name":"write_file","input":{"path":"NOTES","content":"mul next\n"}}]}, '"$FINISH"']'
	run -0 --separate-stderr forge-implement --config "$BATS_TEST_TMPDIR/c.json" <"$BATS_TEST_TMPDIR/plan.json"
	assert_equal "$stderr" "forge-implement: not validated: \`seq 1 8; echo mul is wrong; exit 3\` exited with status 3
    [… 4 lines before]
    5
    6
    7
    8
    mul is wrong"
	last_state | jq -e '.status == "ok" and .changes.validated == false and
		(.changes.validation | keys) == ["command","exit_status","output","steps"] and
		.changes.validation.exit_status == 3'
	events_of phase.completed | jq -e '.reason | endswith("not validated (`seq 1 8; echo mul is wrong; exit 3` failed)")'
	# -q: nothing said
	plan_state T19 >"$BATS_TEST_TMPDIR/plan.json"
	mock '[{"tool_calls":[{"name":"write_file","input":{"path":"NOTES","content":"mul next\n"}}]}, '"$FINISH"']'
	run -0 --separate-stderr forge-implement -q --config "$BATS_TEST_TMPDIR/c.json" <"$BATS_TEST_TMPDIR/plan.json"
	assert_equal "$stderr" ""
}

@test "a finish whose input does not match implement's result schema goes back to the model, which finishes again" {
	# (before: {"summary": 42} ended the phase ok, taken as it was, hunt68 #4)
	echo '{"implement":{"validate":false},"memory":{"reflect":false}}' >"$BATS_TEST_TMPDIR/c.json"
	plan_state T15 >"$BATS_TEST_TMPDIR/plan.json"
	mock '[{"tool_calls":[{"name":"finish","input":{"summary":42,"files":7,"tests":["ok"]}}]},
	       {"tool_calls":[{"name":"finish","input":{"summary":"nothing to change after all","files":[]}}]}]'
	run -0 --separate-stderr forge-implement --config "$BATS_TEST_TMPDIR/c.json" <"$BATS_TEST_TMPDIR/plan.json"
	assert_equal "$(events_of implement.summary | jq -c '[.summary, .files]')" '["nothing to change after all",[]]'
	run -0 jq -r 'select(.type == "agent.finish_rejected") | .payload.error' <<<"$output"
	assert_output '.summary: expected string, got number; .files: expected array, got number'
	# what the model saw: its finish refused with the schema's words, as a tool error
	run -0 bash -c "curl -sS '$MOCK_URL/_mock/requests' | jq -c '.[1].body.messages | last | .content[0] |
		[.type, .is_error, (.content | tostring | test(\"does not match the implement schema: .summary: expected string\"))]'"
	assert_output '["tool_result",true,true]'
	# the schema the model is shown is the one the input is checked against
	run -0 bash -c "curl -sS '$MOCK_URL/_mock/requests' | jq -c '.[0].body.tools[] | select(.name == \"finish\") | .input_schema.properties | keys'"
	assert_output '["files","summary","tests"]'
}

@test "git mv in run_command fails on the read-only .git: the result says why and what to do instead, as the prompt does" {
	# (before: git's bare "Unable to create '…/index.lock': Read-only file system", hunt68 #5)
	echo '{"implement":{"validate":false},"memory":{"reflect":false}}' >"$BATS_TEST_TMPDIR/c.json"
	plan_state T16 >"$BATS_TEST_TMPDIR/plan.json"
	mock '[{"tool_calls":[{"name":"run_command","input":{"command":"git mv calc.c calc2.c"}}]},
	       {"tool_calls":[{"name":"run_command","input":{"command":"mv calc.c calc2.c"}}]},
	       '"$FINISH"']'
	run -0 --separate-stderr forge-implement --config "$BATS_TEST_TMPDIR/c.json" <"$BATS_TEST_TMPDIR/plan.json"
	events_of tool.failed | jq -e '.tool == "run_command" and .data.git_read_only == true'
	# what the model is answered
	curl -sS "$MOCK_URL/_mock/requests" | jq -e '.[1].body.messages | last | .content[0] | .is_error == true and
		(.content | tostring | test("(Read-only file system|Permission denied)\n\\[exit status [0-9]+\\]\n\\[the repository.s .git is read-only in the sandbox: .*Use plain mv and rm .*Forge stages the worktree.s changes itself\\]$"))'
	# the plain mv is the model's change (no hint on a command that did not touch .git)
	last_state | jq -e '[.changes.files[] | [.path, .action]] == [["calc.c", "delete"], ["calc2.c", "create"]]'
	run -0 bash -c "curl -sS '$MOCK_URL/_mock/requests' | jq -r '.[0].body.system | tostring'"
	assert_output --partial 'is read-only here: git commands'
}

@test "implement's validation runs the test command under tools.test_timeout_s, as forge-test does; the build is not held to it" {
	# (before: implement.validation_timeout_s alone, 900 s, for a test
	# command forge-test stops at tools.test_timeout_s, hunt68 #8)
	echo '{"tools":{"build_command":"sleep 2","test_command":"sleep 20","test_timeout_s":1},
	       "implement":{"fix_rounds":0},"memory":{"reflect":false}}' >"$BATS_TEST_TMPDIR/c.json"
	plan_state T17 >"$BATS_TEST_TMPDIR/plan.json"
	mock '[{"tool_calls":[{"name":"write_file","input":{"path":"NOTES","content":"mul next\n"}}]}, '"$FINISH"']'
	run -0 --separate-stderr forge-implement --config "$BATS_TEST_TMPDIR/c.json" <"$BATS_TEST_TMPDIR/plan.json"
	last_state | jq -e '.changes.validated == false and
		([.changes.validation.steps[] | [.name, .exit_status == 0, .timed_out]] == [["build", true, false], ["test", false, true]])'
}

@test "files Forge's own validation makes are removed, not committed; the model's own command's are its work" {
	echo '{"tools":{"build_command":"mkdir -p out && echo bin >out/made","test_command":"test -e fixed"},"implement":{"fix_rounds":1},"memory":{"reflect":false}}' \
		>"$BATS_TEST_TMPDIR/c.json"
	plan_state T14 >"$BATS_TEST_TMPDIR/plan.json"
	mock '[{"tool_calls":[{"name":"write_file","input":{"path":"NOTES","content":"mul next\n"}}]},
	       '"$FINISH"',
	       {"tool_calls":[{"name":"run_command","input":{"command":"echo mine >mine.txt"}}]},
	       {"tool_calls":[{"name":"write_file","input":{"path":"fixed","content":"y\n"}}]},
	       '"$FINISH"']'
	run -0 --separate-stderr forge-implement --config "$BATS_TEST_TMPDIR/c.json" <"$BATS_TEST_TMPDIR/plan.json"
	last_state | jq -e '.changes.validated == true and ([.changes.files[].path] | sort) == ["NOTES","fixed","mine.txt"]'
	events_of validation.cleaned | jq -s -e 'length == 2 and .[0].removed == ["out/made"]'
	run -0 git diff --name-only "$BASE" forge/T14
	assert_output "NOTES
fixed
mine.txt"
	[ ! -e "$(run_worktree T14)/out" ]
}

@test "validation is not run again when the agent's last run_command ran the tests on the same tree" {
	plan_state T10 >"$BATS_TEST_TMPDIR/plan.json"
	mock '[{"tool_calls":[{"name":"write_file","input":{"path":"NOTES","content":"mul next\n"}}]},
	       {"tool_calls":[{"name":"run_command","input":{"command":"make"}}]},
	       {"tool_calls":[{"name":"run_command","input":{"command":"make check"}}]},
	       '"$FINISH"']'
	run -0 --separate-stderr forge-implement <"$BATS_TEST_TMPDIR/plan.json"
	state=$(last_state)
	tree=$(git rev-parse "forge/T10^{tree}")
	# one validation.completed, saying it was skipped and why; nothing ran
	run -0 events_of validation.completed
	assert_output "{\"validated\":true,\"command\":\"make check\",\"exit_status\":0,\"skipped\":true,\"reason\":\"tests passed on tree ${tree:0:12} at tool call 3\",\"tree\":\"$tree\",\"tool_call\":3}"
	jq -e --arg tree "$tree" '.changes.validated == true and .changes.validation.skipped == true and
		.changes.validation.command == "make check" and .changes.validation.exit_status == 0 and
		.changes.validation.steps == [] and .changes.validation.tree == $tree and
		(.changes.validation.output | contains("ok - calc add 2 3 = 5"))' <<<"$state"
	[ -z "$(events_of validation.rerun)" ]
}

@test "the agent ran only the test command: the build it did not run is validated, and a broken build is not validated" {
	# the test command does not build everything the build command does
	echo '{"tools":{"build_command":"test ! -e broken","test_command":"true"},"implement":{"fix_rounds":0},"memory":{"reflect":false}}' \
		>"$BATS_TEST_TMPDIR/c.json"
	plan_state T15 >"$BATS_TEST_TMPDIR/plan.json"
	mock '[{"tool_calls":[{"name":"write_file","input":{"path":"broken","content":"x\n"}}]},
	       {"tool_calls":[{"name":"run_command","input":{"command":"true"}}]},
	       '"$FINISH"']'
	run -0 --separate-stderr forge-implement --config "$BATS_TEST_TMPDIR/c.json" <"$BATS_TEST_TMPDIR/plan.json"
	events_of validation.rerun | jq -e '.reason == "the agent'"'"'s test run did not cover the build: `test ! -e broken` did not run on this tree"'
	last_state | jq -e '.changes.validated == false and .changes.validation.command == "test ! -e broken" and
		(.changes.validation | has("skipped") | not)'
}

@test "an edit after the agent's test run: validation runs the build and the tests" {
	plan_state T11 >"$BATS_TEST_TMPDIR/plan.json"
	mock '[{"tool_calls":[{"name":"run_command","input":{"command":"make check"}}]},
	       {"tool_calls":[{"name":"write_file","input":{"path":"NOTES","content":"mul next\n"}}]},
	       '"$FINISH"']'
	run -0 --separate-stderr forge-implement <"$BATS_TEST_TMPDIR/plan.json"
	state=$(last_state)
	events_of validation.rerun | jq -e '.reason == "the worktree changed after the agent'"'"'s last test run" and
		(.tree | test("^[0-9a-f]{40}$"))'
	run -0 events_of validation.completed
	assert_output '{"validated":true,"command":"make check","exit_status":0}'
	jq -e '.changes.validated == true and [.changes.validation.steps[].name] == ["build","test"] and
		(.changes.validation | has("skipped") | not)' <<<"$state"
	# another command that succeeds after the test run also means a real validation
	plan_state T12 >"$BATS_TEST_TMPDIR/plan12.json"
	mock '[{"tool_calls":[{"name":"run_command","input":{"command":"make check"}}]},
	       {"tool_calls":[{"name":"run_command","input":{"command":"make"}}]},
	       '"$FINISH"']'
	run -0 --separate-stderr forge-implement <"$BATS_TEST_TMPDIR/plan12.json"
	last_state | jq -e '[.changes.validation.steps[].name] == ["build","test"]'
}

@test "a failing last test run: validation runs, on the same tree" {
	# a test that depends on an ignored file: the tree stays the same while
	# the agent's second test run fails
	printf 'flag\n' >.gitignore
	git add .gitignore
	git commit -q -m ignore
	echo '{"tools":{"build_command":"true","test_command":"test ! -e flag"},"implement":{"fix_rounds":0},"memory":{"reflect":false}}' \
		>"$BATS_TEST_TMPDIR/c.json"
	plan_state T13 >"$BATS_TEST_TMPDIR/plan.json"
	mock '[{"tool_calls":[{"name":"run_command","input":{"command":"test ! -e flag"}}]},
	       {"tool_calls":[{"name":"write_file","input":{"path":"flag","content":"x\n"}}]},
	       {"tool_calls":[{"name":"run_command","input":{"command":"test ! -e flag"}}]},
	       '"$FINISH"']'
	run -0 --separate-stderr forge-implement --config "$BATS_TEST_TMPDIR/c.json" <"$BATS_TEST_TMPDIR/plan.json"
	state=$output
	run -0 events_of validation.completed
	assert_output '{"validated":false,"command":"test ! -e flag","exit_status":1}'
	output=$state
	last_state | jq -e '.changes.validated == false and [.changes.validation.steps[].name] == ["build","test"]'
	events_of phase.completed | jq -e '.reason | contains("not validated (`test ! -e flag` failed)")'
}

@test "no plan in the state: skipped, exit 1, phase.skipped; the repository is not touched" {
	plan_state T8 | jq -c 'del(.plan)' >"$BATS_TEST_TMPDIR/in.json"
	replay implement-calc.jsonl
	run -1 --separate-stderr forge-implement <"$BATS_TEST_TMPDIR/in.json"
	last_state | jq -e '.status == "skipped" and .phase == "implement" and (has("changes") | not)'
	events_of phase.skipped | jq -e '.reason | test("no plan")'
	run -1 --separate-stderr forge-implement --task "add a mul operation"
	last_state | jq -e '.status == "skipped"'
	no_run_worktrees
	checkout_untouched
}

@test "bad input: empty input and a malformed line exit 2; events before it are forwarded" {
	replay implement-calc.jsonl
	run -2 --separate-stderr forge-implement </dev/null
	[[ $stderr == *"empty input"* ]]
	events_of input.rejected | jq -e '.reason | test("empty input")'
	plan_state T9 >"$BATS_TEST_TMPDIR/in.json"
	printf '{"kind":"state", "v":1\n' >>"$BATS_TEST_TMPDIR/in.json"
	run -2 --separate-stderr forge-implement <"$BATS_TEST_TMPDIR/in.json"
	[[ $stderr == *"line 2"* ]]
	jq -c '.v = 2' <(plan_state T9) >"$BATS_TEST_TMPDIR/v2.json"
	run -2 --separate-stderr forge-implement <"$BATS_TEST_TMPDIR/v2.json"
	no_run_worktrees
	checkout_untouched
}

@test "a repository with files but no commit yet: exit 2 saying to commit them, before any model call; nothing made" {
	REPO="$BATS_TEST_TMPDIR/fresh"
	mkdir "$REPO"
	cp -r "$FORGE_ROOT/tests/fixtures/repos/calc/." "$REPO"
	cd "$REPO"
	git init -q -b main
	plan_state T10 >"$BATS_TEST_TMPDIR/in.json"
	mock "[$FINISH]"
	run -2 --separate-stderr forge-implement <"$BATS_TEST_TMPDIR/in.json"
	assert_equal "$stderr" "forge-implement: no commits yet on main: a run starts from the last commit and would not see the files here; commit your files first (git add -A && git commit)"
	events_of input.rejected | jq -e '.reason | startswith("no commits yet on main")'
	[ "$(last_state | jq -r .kind)" = event ]   # no state written
	[ "$(curl -sS -f "$MOCK_URL/_mock/requests" | jq length)" -eq 0 ]
	[ -z "$(git branch --list 'forge/*')" ]
	no_run_worktrees
	run -0 git status --porcelain --untracked-files=no
	assert_output ""
}

@test "a repository whose path is too long for the run's worktree: exit 2 naming the file, before any model call; nothing made" {
	deep_repo
	trace=T1100000000000000000000000	# (as long as a run's ULID)
	plan_state $trace >"$BATS_TEST_TMPDIR/in.json"
	mock "[$FINISH]"
	run -2 --separate-stderr forge-implement <"$BATS_TEST_TMPDIR/in.json"
	# (before: exit 5, the worktree half made and left registered on its branch)
	[[ $stderr == "forge-implement: a path in the repository is too long for a run's worktree: '$DEEP' would be "*" bytes from '/' in the run's worktree $(basename "$(runs_dir)")/$trace, over the system's limit of 4095 (PATH_MAX); set FORGE_WORKTREES to a directory at least "*" bytes shorter than '/"* ]]
	events_of input.rejected | jq -e '.reason | startswith("a path in the repository is too long")'
	[ "$(last_state | jq -r .kind)" = event ]   # no state written
	[ "$(curl -sS -f "$MOCK_URL/_mock/requests" | jq length)" -eq 0 ]
	[ "$(git worktree list | wc -l)" -eq 1 ]
	[ -z "$(git for-each-ref refs/heads/forge refs/forge)" ]
	no_run_worktrees
}

@test "a branch named forge, where the run's forge/TRACE goes: exit 2 naming it and what to do, before any model call; nothing made" {
	git branch forge
	plan_state T13 >"$BATS_TEST_TMPDIR/in.json"
	mock "[$FINISH]"
	# (before: exit 5 with libgit2's "could not remove directory ... Not a directory")
	run -2 --separate-stderr forge-implement <"$BATS_TEST_TMPDIR/in.json"
	assert_equal "$stderr" "forge-implement: the repository has a branch named 'forge', which is in the way of the runs' branches forge/TRACE (git cannot hold a branch 'forge' and branches under 'forge/' at once); rename it (git branch -m forge NEW-NAME) and start again"
	[ "$(last_state | jq -r .kind)" = event ]   # no state written
	[ "$(curl -sS -f "$MOCK_URL/_mock/requests" | jq length)" -eq 0 ]
	[ "$(git worktree list | wc -l)" -eq 1 ]
	[ -z "$(git for-each-ref refs/forge)" ]
	no_run_worktrees
}

@test "a submodule committed without .gitmodules (a gitlink): forge-implement alone warns; a write inside it is told it will not be committed" {
	sub="$REPO/vendor/foo"
	mkdir -p "$sub"
	git -C "$sub" init -q -b main && echo 'int foo;' >"$sub/foo.c"
	git -C "$sub" add -A && git -C "$sub" commit -q -m foo
	git add vendor/foo 2>/dev/null && git commit -q -m "vendor foo"
	[ "$(git ls-files -s vendor/foo | cut -c1-6)" = 160000 ] && [ ! -e .gitmodules ]
	BASE=$(git rev-parse HEAD)
	plan_state T14 >"$BATS_TEST_TMPDIR/plan.json"
	echo '{"implement": {"validate": false}, "memory": {"reflect": false}}' >"$BATS_TEST_TMPDIR/c.json"
	mock '[{"tool_calls":[{"name":"write_file","input":{"path":"vendor/foo/foo.c","content":"int foo = 1;\n"}}]},
		{"tool_calls":[{"name":"write_file","input":{"path":"mul.c","content":"long m;\n"}}]},
		{"tool_calls":[{"name":"finish","input":{"summary":"done"}}]}]'
	run -0 --separate-stderr forge-implement --config "$BATS_TEST_TMPDIR/c.json" <"$BATS_TEST_TMPDIR/plan.json"
	# (before: nothing on stderr, and the model was told "Created" alone)
	assert_equal "$stderr" "forge-implement: warning: submodules are not checked out in the run's worktree (vendor/foo): what needs them fails there, and the agent's changes inside them are not committed"
	events_of worktree.limits | jq -e '.notes | length == 1 and (.[0] | startswith("submodules are not checked out"))'
	curl -sS -f "$MOCK_URL/_mock/requests" | jq -e '.[1].body.messages[-1].content[0].content |
		endswith("Note: vendor/foo/foo.c (in the submodule vendor/foo): a submodule is another git repository, not checked out in this worktree, so what is written inside it is not part of the change and will not be committed. Change the submodule'"'"'s own repository instead, or leave it out of this change.")'
	# a write elsewhere gets no such note
	curl -sS -f "$MOCK_URL/_mock/requests" | jq -e '.[2].body.messages[-1].content[0].content | test("Note") | not'
	[ "$(git diff --name-only "$BASE" forge/T14)" = mul.c ]
}

@test "the run's worktree cannot be checked out: nothing of it is left (directory, git's entry, branch, base ref)" {
	# a file name longer than a file system allows (255 bytes): git stores
	# it, no checkout can write it
	blob=$(echo x | git hash-object -w --stdin)
	tree=$({ git ls-tree HEAD; printf '100644 blob %s\t%s\n' "$blob" "$(printf 'n%.0s' {1..300})"; } | git mktree)
	git update-ref HEAD "$(git commit-tree "$tree" -p HEAD -m "a long name")"
	plan_state T12 >"$BATS_TEST_TMPDIR/in.json"
	mock "[$FINISH]"
	run -5 --separate-stderr forge-implement <"$BATS_TEST_TMPDIR/in.json"
	[[ $stderr == "forge-implement: failed: cannot create worktree '$(runs_dir)/T12' on 'forge/T12': "* ]]
	[[ $stderr != *"what was made for it is left"* ]]
	[ "$(curl -sS -f "$MOCK_URL/_mock/requests" | jq length)" -eq 0 ]
	# (before: the worktree stayed registered, half checked out, on forge/T12)
	[ "$(git worktree list | wc -l)" -eq 1 ]
	[ -z "$(git for-each-ref refs/heads/forge refs/forge)" ]
	no_run_worktrees
	[ -z "$(ls -A .git/worktrees)" ]
}

# ---- the working memory is sized to the model (issue 20, item 4) ----------

# local_model [CONFIG-JSON]: the mock as an OpenAI-compatible server of the
# model local-coder (not in schemas/pricing.json: free, by llm.pricing,
# without a context window); the config file $CFG.
local_model() {
	export FORGE_PROVIDER=openai FORGE_BASE_URL="$MOCK_URL/v1" OPENAI_API_KEY=test-key FORGE_MODEL=local-coder
	unset FORGE_CASSETTE
	jq -n --argjson c "${1:-{\}}" '{implement:{validate:false},
		llm:{pricing:{"local-coder":{input:0,output:0}}}} * $c' >"$BATS_TEST_TMPDIR/cfg.json"
	CFG="$BATS_TEST_TMPDIR/cfg.json"
}

# serves MODELS-JSON: what the mock says about its models (/v1/models, /api/show).
serves() {
	curl -sS -f -X POST --data-binary "$1" "$MOCK_URL/_mock/models" >/dev/null
}

@test "the context window: the model table, else the server's max_model_len or Ollama's num_ctx, else llm.context_window" {
	plan_state W1 >"$BATS_TEST_TMPDIR/plan.json"
	mock "[$FINISH]"
	echo '{"implement":{"validate":false}}' >"$BATS_TEST_TMPDIR/plain.json"
	run -0 --separate-stderr forge-implement --config "$BATS_TEST_TMPDIR/plain.json" <"$BATS_TEST_TMPDIR/plan.json"
	[ "$(events_of context.window)" = '{"tokens":200000,"source":"table","model":"claude-sonnet-4-5"}' ]
	local_model '{"llm":{"context_window":8192}}'
	for case in '{"local-coder":{"max_model_len":16384}} 16384 server' \
		'{"local-coder":{"num_ctx":12288}} 12288 server' '{"other":{"max_model_len":99999}} 8192 config'; do
		set -- $case
		mock_script "[$FINISH]"
		serves "$1"
		run -0 --separate-stderr forge-implement --config "$CFG" <"$BATS_TEST_TMPDIR/plan.json"
		[ "$(events_of context.window)" = "{\"tokens\":$2,\"source\":\"$3\",\"model\":\"local-coder\"}" ]
	done
}

@test "an 8K window: an answer asks for the room the window leaves; the working memory is compressed at 90% of it, and not with a large one" {
	plan_state W2 >"$BATS_TEST_TMPDIR/plan.json"
	# reads of four 10 KB files (~2.5K tokens each), then finish
	for i in 1 2 3 4; do
		head -c 10000 /dev/zero | tr '\0' "$i" | fold -w 79 >"$REPO/big$i.txt"
	done
	git -C "$REPO" add big?.txt && git -C "$REPO" commit -q -m big
	reads=$(for i in 1 2 3 4; do printf '{"tool_calls":[{"name":"read_file","input":{"path":"big%d.txt"}}]},' $i; done)
	for window in 8192 100000; do
		local_model "{\"llm\":{\"context_window\":$window,\"fast_model\":\"local-coder\"}}"
		serves '{}'
		mock_script "[{\"when_prompt_contains\":\"You summarise the middle\",\"then\":{\"text\":\"read big1.txt to big3.txt\"},\"times\":5},$reads$FINISH]"
		run -0 --separate-stderr forge-implement --config "$CFG" <"$BATS_TEST_TMPDIR/plan.json"
		[ "$(events_of context.window | jq .tokens)" = "$window" ]
		# the answer's room is what the window leaves after the request (the
		# system prompt and the tools alone are ~4K tokens: 8192 more do not
		# fit an 8K model, which refuses the call), at least 1024
		first=$(curl -sS -f "$MOCK_URL/_mock/requests" | jq '[.[] | select(.path == "/v1/chat/completions")][0].body.max_tokens')
		if [ "$window" = 8192 ]; then
			[ "$first" -ge 1024 ]
			[ "$first" -le 4500 ]
		else
			[ "$first" -eq 8192 ]
		fi
		compressed=$(events_of memory.compressed)
		if [ "$window" = 8192 ]; then
			# (the reads are cut to a share of the window as they come: the
			# memory passes 90% of what the window leaves, not of the window)
			jq -s -e 'length >= 1 and all(.tokens_after < .tokens_before)' <<<"$compressed"
			curl -sS -f "$MOCK_URL/_mock/requests" | jq -e '[.[] | select(.path == "/v1/chat/completions")
				| .body.messages[] | select(.role == "user") | .content | strings
				| contains("[Summary of the earlier work]\nread big1.txt to big3.txt")] | any'
		else
			[ -z "$compressed" ]
		fi
	done
}

# The chat requests the mock received: "BYTES MAX_TOKENS" a line.
request_sizes() {
	curl -sS -f "$MOCK_URL/_mock/requests" |
		jq -r '.[] | select(.path == "/v1/chat/completions") | "\(.body | tojson | length) \(.body.max_tokens)"'
}

@test "a tool result larger than the model's window is cut to a share of it, kept results are cut by compression: every request fits an 8K window" {
	plan_state W3 >"$BATS_TEST_TMPDIR/plan.json"
	# 3000 lines of 3000 chars (read_file's 256 KiB alone is ~65K tokens)
	python3 -c "
import sys
with open(sys.argv[1], 'w') as f:
    for i in range(3000): f.write('%d ' % i + 'y' * 3000 + '\n')" "$REPO/wide.txt"
	git -C "$REPO" add wide.txt && git -C "$REPO" commit -q -m wide
	local_model '{"llm":{"context_window":8192,"fast_model":"local-coder"}}'
	serves '{}'
	# (the fast model's summary is short; the mock does not refuse a long prompt)
	mock_script '[{"when_prompt_contains":"You summarise the middle","then":{"text":"read wide.txt"},"times":"always"},
		{"tool_calls":[{"name":"read_file","input":{"path":"wide.txt"}}]},
		{"tool_calls":[{"name":"run_command","input":{"command":"yes abcdefgh | head -c 60000"}}]},
		{"tool_calls":[{"name":"read_file","input":{"path":"wide.txt","start_line":100}}]},
		'"$FINISH"']'
	run -0 --separate-stderr forge-implement --config "$CFG" <"$BATS_TEST_TMPDIR/plan.json"
	# every request, with the answer's room, fits the window (the estimate
	# counts at least a token for 4 bytes of this text: 4 x 8192 bytes at most)
	run -0 request_sizes
	[ "${#lines[@]}" -ge 4 ]
	local line
	for line in "${lines[@]}"; do
		set -- $line
		[ "$1" -le $((4 * (8192 - $2))) ] || { echo "request of $1 bytes, max_tokens $2"; false; }
	done
	# what the model read says it was cut and how to read on
	curl -sS -f "$MOCK_URL/_mock/requests" | jq -e '[.[] | select(.path == "/v1/chat/completions")
		| .body.messages[] | select(.role == "tool") | .content | strings] as $t
		| ($t | map(contains("call again with start_line")) | any)
		  and ($t | map(contains("cut here, its beginning and end kept") and contains("llm.context_window")) | any)'
	events_of memory.compressed | jq -s -e 'map(.tokens_after <= 8192) | all'
}

@test "a request that cannot fit the model's window is not sent: a clear error naming llm.context_window" {
	plan_state W4 >"$BATS_TEST_TMPDIR/plan.json"
	# the system prompt and the tools alone are ~4K tokens
	local_model '{"llm":{"context_window":2048}}'
	serves '{}'
	mock_script "[$FINISH]"
	run -5 --separate-stderr forge-implement --config "$CFG" <"$BATS_TEST_TMPDIR/plan.json"
	[[ $stderr == *"does not fit the model's context window of 2048 tokens (llm.context_window"* ]]
	[ -z "$(request_sizes)" ]
}

# ---- the TDD guard (issue 20, item 6) ------------------------------------------

RED_MUL='{"tool_calls":[{"name":"edit_file","input":{"path":"tests/check.sh","old":"expect 7 sub 10 3\n","new":"expect 7 sub 10 3\nexpect 42 mul 6 7\n"}}]}'
CHEAT='{"tool_calls":[{"name":"edit_file","input":{"path":"tests/check.sh","old":"expect 42 mul 6 7\n","new":""}}]}'

@test "TDD guard: a green step that weakens the committed tests gets them back with a finding, then is rejected" {
	plan_state T20 >"$BATS_TEST_TMPDIR/plan.json"
	mock "[$RED_MUL,$FINISH,$CHEAT,$FINISH,$CHEAT,$FINISH]"
	run -1 --separate-stderr forge-implement --tdd <"$BATS_TEST_TMPDIR/plan.json"
	events_of tdd.red | jq -e '.confirmed == true'
	run -0 events_of tdd.tests_changed
	[ "${#lines[@]}" -eq 2 ]
	jq -e '.files == [{"path":"tests/check.sh","change":"modified"}] and .try == 1
		and .finding.rule == "tdd-tests-changed" and .finding.file == "tests/check.sh"
		and (.finding.message | contains("tests/check.sh (modified)"))' <<<"${lines[0]}"
	[[ $stderr == *"TDD: the implementation changed the tests the red step committed (2 times; restored): rejected"* ]]
	# the second green attempt was told why, the finding first
	run -0 prompt_of 4
	assert_line --index 0 "# Finding: the tests were changed"
	# the branch ends with the tests as the red step committed them
	git show "forge/T20:tests/check.sh" | grep -q "expect 42 mul 6 7"
	run -0 git log --format=%s "$BASE..forge/T20"
	assert_line --index 0 "forge: add a mul operation (attempt 1, tests restored)"
}

@test "TDD guard: restored tests and an honest implementation pass; a plan that says the tests were wrong may change them" {
	plan_state T21 >"$BATS_TEST_TMPDIR/plan.json"
	impl=$(sed -n 3,5p "$CASSETTES/implement-tdd.jsonl" | jq -c '{tool_calls: .response.tool_calls}' | paste -sd,)
	mock "[$RED_MUL,$FINISH,$CHEAT,$FINISH,$impl,$FINISH]"
	run -0 --separate-stderr forge-implement --tdd <"$BATS_TEST_TMPDIR/plan.json"
	[ "$(events_of tdd.tests_changed | wc -l)" -eq 1 ]
	events_of tdd.green | jq -e '.passing == true'
	git show "forge/T21:tests/check.sh" | grep -q "expect 42 mul 6 7"
	# tests_wrong: the same change to the tests is accepted
	plan_state T22 | jq -c '.plan.tests_wrong = true' >"$BATS_TEST_TMPDIR/plan2.json"
	mock "[$RED_MUL,$FINISH,$CHEAT,$FINISH]"
	run -0 --separate-stderr forge-implement --tdd <"$BATS_TEST_TMPDIR/plan2.json"
	[ -z "$(events_of tdd.tests_changed)" ]
	! git show "forge/T22:tests/check.sh" | grep -q "mul" || false
}

@test "TDD guard: a green step that puts a symlink where a red test was does not make Forge write outside the worktree" {
	plan_state T23 >"$BATS_TEST_TMPDIR/plan.json"
	outside="$BATS_TEST_TMPDIR/outside"
	mkdir -p "$outside"
	echo ORIGINAL >"$outside/victim"
	# the red step commits tests/check.sh; the green one makes tests/ a link
	# to a directory outside, holding a file of the same name
	swap="{\"tool_calls\":[{\"name\":\"run_command\",\"input\":{\"command\":\"mv tests tests.old && ln -s $outside tests\"}}]}"
	mock "[$RED_MUL,$FINISH,$swap,$FINISH,$swap,$FINISH]"
	run --separate-stderr forge-implement --tdd <"$BATS_TEST_TMPDIR/plan.json"
	[ "$status" -ne 0 ]
	[ ! -e "$outside/check.sh" ]
	[ "$(cat "$outside/victim")" = ORIGINAL ]
	[ "$(ls "$outside")" = victim ]
}

@test "the agent's commands commit as git says here, not as an unknown author" {
	git -C "$REPO" config user.name "Impl Person"
	git -C "$REPO" config user.email impl@example.com
	plan_state T30 >"$BATS_TEST_TMPDIR/plan.json"
	mock '[{"tool_calls":[{"name":"run_command","input":{"command":"d=$(mktemp -d) && cd $d && git init -q && git commit -q --allow-empty -m x && git log -1 --format=\"%an <%ae>\""}}]},
	       '"$FINISH"']'
	run -0 --separate-stderr forge-implement <"$BATS_TEST_TMPDIR/plan.json"
	# what the model was told the command printed (session_open() set the source)
	curl -sS -f "$MOCK_URL/_mock/requests" | jq -r '.[1].body.messages | tostring' >"$BATS_TEST_TMPDIR/told"
	grep -q 'Impl Person <impl@example.com>' "$BATS_TEST_TMPDIR/told"
	! grep -q 'Author identity unknown' "$BATS_TEST_TMPDIR/told" || false
}

@test "core.autocrlf with core.safecrlf: a new LF file the agent wrote is committed, not refused at the commit" {
	git -C "$REPO" config core.autocrlf true
	git -C "$REPO" config core.safecrlf true
	plan_state T31 >"$BATS_TEST_TMPDIR/plan.json"
	mock '[{"tool_calls":[{"name":"write_file","input":{"path":"new.txt","content":"n1\nn2\n"}}]}, '"$FINISH"']'
	# (calc's tests/check.sh, checked out with CRLF, does not run: no validation)
	echo '{"implement":{"validate":false}}' >"$BATS_TEST_TMPDIR/novalidate.json"
	# (before: "cannot stage the changes of worktree …: LF would be replaced by
	# CRLF in 'new.txt'", exit 5, the attempt's work lost)
	run -0 --separate-stderr forge-implement --config "$BATS_TEST_TMPDIR/novalidate.json" <"$BATS_TEST_TMPDIR/plan.json"
	last_state | jq -e '.status == "ok" and ([.changes.files[].path] | index("new.txt") != null)'
	# the blob is what git stores with safecrlf=warn: LF, as autocrlf=true keeps it
	[ "$(git -C "$REPO" cat-file -p forge/T31:new.txt | od -An -c)" = "$(printf 'n1\nn2\n' | od -An -c)" ]
	# the user's settings are as they were, for git in the checkout and in the worktree
	[ "$(git -C "$REPO" config core.safecrlf)" = true ]
	[ "$(git -C "$(last_state | jq -r .task.worktree)" config core.safecrlf)" = true ]
	# and the person's checkout gets CRLF, as autocrlf asks, when the file comes there
	git -C "$REPO" checkout -q forge/T31 -- new.txt
	[ "$(od -An -c "$REPO/new.txt")" = "$(printf 'n1\r\nn2\r\n' | od -An -c)" ]
}

@test "a change over the state's diff limit: cut between files, and forge-review reviews the commits, or says what it did not see" {
	echo '{"tools":{"build_command":"true","test_command":"true"},"memory":{"reflect":false}}' >"$BATS_TEST_TMPDIR/c.json"
	plan_state T31 >"$BATS_TEST_TMPDIR/plan.json"
	# a generated file of 150000 short lines (a lock file) and a small one after it
	mock '[{"tool_calls":[{"name":"run_command","input":{"command":"seq 1 150000 | sed \"s/^/entry /\" >data.lock && echo hi >notes.txt"}}]},
	       '"$FINISH"']'
	export CFG="$BATS_TEST_TMPDIR/c.json"
	# the review without a model: layers 1 and 2 decide
	run -0 --separate-stderr bash -c 'forge-implement --config "$CFG" <"$BATS_TEST_TMPDIR/plan.json" |
		env -u FORGE_PROVIDER -u FORGE_BASE_URL -u ANTHROPIC_API_KEY forge-review --config "$CFG"'
	state=$(last_state)
	# the state's diff stays under the limit and is still a diff: notes.txt
	# whole, data.lock named with its size
	jq -e '(.changes.diff | length) < 921600 and (.changes.diff | contains("+++ b/notes.txt\n@@ -0,0 +1 @@\n+hi\n")) and
	       (.changes.diff | test("\n\\[… diff cut: 1 file not shown \\([0-9]+ bytes\\) …\\]\n\\[… not shown: data.lock \\([0-9]+ bytes\\) …\\]\n$"))' <<<"$state"
	events_of implement.diff_cut | jq -e '.bytes > 921600 and .kept_bytes < 921600'
	# forge-review had the repository: it reviewed base_commit..commit, both files
	jq -e '.phase == "review" and .review.source == "git" and .review.files == 2 and
	       (.review | has("not_reviewed") | not) and
	       ([.review.findings[] | select(.rule == "forge/not-reviewed")] == [])' <<<"$state"
	events_of review.full_diff | jq -e '.bytes > 1000000 and .state_bytes < 921600'
	events_of review.diff | jq -e '.source == "git" and .files == 2 and .additions == 150001'

	# the same state where the commits are not (another machine, its
	# worktree never here): the cut text is reviewed, and data.lock is said
	# not to be (before: exit 5, unless a directory of that name existed)
	gone="$BATS_TEST_TMPDIR/gone-worktree"
	jq -c --arg w "$gone" 'select(.kind == "state") | .task.worktree = $w | del(.review) | .phase = "implement"' \
		<<<"$state" >"$BATS_TEST_TMPDIR/cut.json"
	mkdir "$BATS_TEST_TMPDIR/elsewhere"
	git -C "$BATS_TEST_TMPDIR/elsewhere" init -q
	# the checkout's notes.txt is not the change's: never linted as it
	printf 'not the change\n' >"$BATS_TEST_TMPDIR/elsewhere/notes.txt"
	jq -c '.tools.lint_command = "echo ran >lint-ran; echo notes.txt:1: error: from the checkout"' \
		"$CFG" >"$BATS_TEST_TMPDIR/c2.json"
	# (none of its files could be read: not approved, a person is asked, fix135 #5)
	run -4 --separate-stderr env -u FORGE_PROVIDER -u FORGE_BASE_URL -u ANTHROPIC_API_KEY \
		forge-review --config "$BATS_TEST_TMPDIR/c2.json" --repo "$BATS_TEST_TMPDIR/elsewhere" <"$BATS_TEST_TMPDIR/cut.json"
	state=$(last_state)
	# (notes.txt: in the cut text, but with no worktree its linters could
	# not run -- said too, since fix27)
	jq -e '.review.source == "state" and .review.files == 1 and .review.decision == "require_human" and
	       (.review.not_reviewed | length == 2 and .[0].path == "data.lock" and .[0].bytes > 921600 and
	        .[1].path == "notes.txt" and (.[1].reason | contains("commits are not in this repository"))) and
	       ([.review.findings[] | select(.rule == "forge/not-reviewed") | [.file, .severity]] ==
	        [["data.lock", "warning"], ["notes.txt", "warning"]]) and
	       ([.review.findings[] | select(.rule != "forge/not-reviewed")] == [])' <<<"$state"
	[ ! -e "$BATS_TEST_TMPDIR/elsewhere/lint-ran" ] && [ ! -e "$gone" ]
	events_of review.full_diff_unavailable | jq -e '.error | contains("commits are not in this repository")'
	events_of run.worktree_gone | jq -e --arg w "$gone" '.worktree == $w and (.branch | startswith("forge/"))'
	events_of review.tool_skipped | jq -e -s 'map(select(.tool == "lint_command")) | length == 1'
	[[ "$stderr" == *"forge-review: warning: the run's worktree $gone is gone, and neither its branch forge/"*"working from the state's text alone"* ]]
	[[ "$stderr" == *"forge-review: warning: the diff was cut: 1 file not reviewed"* ]]
	# a diff that was not cut: the same, no full diff looked for
	jq -c '.changes.diff = "diff --git a/notes.txt b/notes.txt\nnew file mode 100644\n--- /dev/null\n+++ b/notes.txt\n@@ -0,0 +1 @@\n+hi\n"' \
		"$BATS_TEST_TMPDIR/cut.json" >"$BATS_TEST_TMPDIR/whole.json"
	run -4 --separate-stderr env -u FORGE_PROVIDER -u FORGE_BASE_URL -u ANTHROPIC_API_KEY \
		forge-review --config "$BATS_TEST_TMPDIR/c2.json" --repo "$BATS_TEST_TMPDIR/elsewhere" <"$BATS_TEST_TMPDIR/whole.json"
	last_state | jq -e '.review.source == "state" and .review.files == 1 and .review.decision == "require_human" and
	       (.review.not_reviewed | length == 1 and .[0].path == "notes.txt" and
	        (.[0].reason | contains("commits are not in this repository"))) and
	       ([.review.findings[] | [.rule, .file]] == [["forge/not-reviewed", "notes.txt"]])'
	[ -z "$(events_of review.full_diff_unavailable)" ] && [ ! -e "$BATS_TEST_TMPDIR/elsewhere/lint-ran" ]
}

# ---- the phase's breakers span its runs of the agent (hunt20 #4) ----------

# Each call: 2000 in + 100 out tokens of claude-sonnet-4-5 = $0.0075.
U='"usage":{"input_tokens":2000,"output_tokens":100}'
BREAK_TESTS='{"tool_calls":[{"name":"write_file","input":{"path":"tests/check.sh","content":"#!/bin/sh\necho \"not ok - mul\"\nexit 1\n"}}],'"$U"'}'
LIST='{"tool_calls":[{"name":"list_files","input":{}}],'"$U"'}'
DONE='{"tool_calls":[{"name":"finish","input":{"summary":"done"}}],'"$U"'}'

@test "fix rounds run the agent again within the phase's limits: cost and iterations count every run" {
	plan_state T30 | jq -c '.budget = {usd: 1, remaining_usd: 1}' >"$BATS_TEST_TMPDIR/plan.json"
	# the first run breaks the tests and finishes ($0.015); each fix round would list and finish
	mock "[$BREAK_TESTS,$DONE,$LIST,$DONE,$LIST,$DONE,$LIST,$DONE]"
	echo '{"memory":{"reflect":false},"implement":{"fix_rounds":3},"safety":{"cost":{"per_phase":{"implement":0.02}}}}' \
		>"$BATS_TEST_TMPDIR/c.json"
	run -3 --separate-stderr forge-implement --config "$BATS_TEST_TMPDIR/c.json" <"$BATS_TEST_TMPDIR/plan.json"
	last_state | jq -e '.status == "tripped" and .cost.usd == 0.0225 and .budget.remaining_usd == 1 - 0.0225'
	run -0 events_of breaker.tripped
	assert_output '{"limit_usd":0.02,"cost_usd":0.0225,"breaker":"cost","reason":"cost $0.0225 reached the limit of $0.0200 (safety.cost.per_phase.implement)"}'
	[ "$(curl -sS -f "$MOCK_URL/_mock/requests" | jq length)" -eq 3 ]
	# the run's remaining budget likewise, and the iterations
	plan_state T31 | jq -c '.budget = {usd: 0.02, remaining_usd: 0.02}' >"$BATS_TEST_TMPDIR/plan31.json"
	mock "[$BREAK_TESTS,$DONE,$LIST,$DONE,$LIST,$DONE,$LIST,$DONE]"
	echo '{"memory":{"reflect":false},"implement":{"fix_rounds":3}}' >"$BATS_TEST_TMPDIR/c.json"
	run -3 --separate-stderr forge-implement --config "$BATS_TEST_TMPDIR/c.json" <"$BATS_TEST_TMPDIR/plan31.json"
	events_of breaker.tripped | jq -e '.breaker == "cost" and .cost_usd == 0.0225 and
		(.reason | endswith("(what the run'"'"'s budget (--budget) leaves)"))'
	plan_state T32 >"$BATS_TEST_TMPDIR/plan32.json"
	mock "[$BREAK_TESTS,$DONE,$LIST,$DONE,$LIST,$DONE,$LIST,$DONE]"
	echo '{"memory":{"reflect":false},"implement":{"fix_rounds":3},"safety":{"iterations":{"implement":3}}}' \
		>"$BATS_TEST_TMPDIR/c.json"
	run -3 --separate-stderr forge-implement --config "$BATS_TEST_TMPDIR/c.json" <"$BATS_TEST_TMPDIR/plan32.json"
	run -0 events_of breaker.tripped
	assert_output '{"max":3,"breaker":"iterations","reason":"3 iterations without finishing (limit 3)"}'
}

@test "safety.cost.per_phase.implement 0: the phase may spend nothing, it trips before its first call" {
	plan_state T33 >"$BATS_TEST_TMPDIR/plan.json"
	mock "[$DONE]"
	echo '{"safety":{"cost":{"per_phase":{"implement":0}}}}' >"$BATS_TEST_TMPDIR/c.json"
	run -3 --separate-stderr forge-implement --config "$BATS_TEST_TMPDIR/c.json" <"$BATS_TEST_TMPDIR/plan.json"
	run -0 events_of breaker.tripped
	assert_output '{"limit_usd":0,"cost_usd":0,"breaker":"cost","reason":"cost $0.0000 reached the limit of $0.0000 (safety.cost.per_phase.implement)"}'
	[ "$(curl -sS -f "$MOCK_URL/_mock/requests" | jq length)" -eq 0 ]
}

@test "a breaker stop: changes describes what is committed, not the work left in the worktree" {
	plan_state T33 >"$BATS_TEST_TMPDIR/plan.json"
	mock '[{"tool_calls":[{"name":"write_file","input":{"path":"new.sh","content":"echo new\n"}}]},
	       {"tool_calls":[{"name":"read_file","input":{"path":"calc.c"}}]},
	       {"tool_calls":[{"name":"read_file","input":{"path":"Makefile"}}]}]'
	echo '{"memory":{"reflect":false},"safety":{"iterations":{"implement":2}}}' >"$BATS_TEST_TMPDIR/c.json"
	run -3 --separate-stderr forge-implement --config "$BATS_TEST_TMPDIR/c.json" <"$BATS_TEST_TMPDIR/plan.json"
	# (before: changes.commit was the base while files and diff showed the
	# uncommitted new.sh, and forge-review approved what it could not lint;
	# a resume starts the phase again from the base, new.sh kept on a
	# saved ref when the worktree is opened again)
	last_state | jq -e --arg base "$BASE" '.status == "tripped" and .changes.commit == $base and
		.changes.base_commit == $base and .changes.files == [] and .changes.diff == ""'
	[ "$(git rev-parse forge/T33)" = "$BASE" ]
}

@test "a hand-written trace id the schema allows (JIRA-12.1, rel:1, 128 characters) gets a branch and worktree git can hold; plain ids keep theirs" {
	echo '{"implement": {"validate": false}, "memory": {"reflect": false}}' >"$BATS_TEST_TMPDIR/c.json"
	long=$(printf 'r%.0s' {1..128})
	# (before: exit 5, "trace id '…' cannot name a worktree", for any id
	# with '.' or ':' or over 100 characters)
	for t in JIRA-12.1 rel:1 "$long" T40; do
		plan_state "$t" >"$BATS_TEST_TMPDIR/plan.json"
		mock '[{"tool_calls":[{"name":"git_status","input":{}},
			{"name":"write_file","input":{"path":"N.md","content":"n\n"}}]}, '"$FINISH"']'
		run -0 --separate-stderr bash -c "set -o pipefail; forge-implement --config '$BATS_TEST_TMPDIR/c.json' \
			<'$BATS_TEST_TMPDIR/plan.json' | forge-events store"
		branch=$(last_state | jq -r .task.branch)
		git check-ref-format "refs/heads/$branch"
		last_state | jq -e --arg wt "$(run_worktree "${branch#forge/}")" '.status == "ok" and .task.worktree == $wt'
		[ "$(git show "$branch:N.md")" = n ]
		# every record carries the whole id; the git tool worked in the worktree
		jq -e -s --arg t "$t" 'all(.[]; .trace_id == $t)' <<<"$output"
		jq -e -s 'map(select(.type == "tool.executed") | .payload.tool) == ["git_status", "write_file"]' <<<"$output"
		echo "$branch" >>"$BATS_TEST_TMPDIR/branches"
	done
	mapfile -t branches <"$BATS_TEST_TMPDIR/branches"
	[[ ${branches[0]} =~ ^forge/JIRA-12_1\.[0-9a-f]{16}$ ]]
	[[ ${branches[1]} =~ ^forge/rel_1\.[0-9a-f]{16}$ ]]
	[[ ${branches[2]} =~ ^forge/r{64}\.[0-9a-f]{16}$ ]]
	[ "${branches[3]}" = forge/T40 ]          # a plain id is its own name, as before
	# a person names the run by its id: forge show finds it, forge gc removes
	# what a cancelled one left under its name
	run -0 forge show JIRA-12.1
	assert_output --partial "JIRA-12.1"
	sqlite3 "$FORGE_DB" "INSERT INTO runs (id, task, status, started_at, updated_at)
		VALUES ('JIRA-12.1', 'add a mul operation', 'cancelled', '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z')"
	mkdir "$BATS_TEST_TMPDIR/tmp"		# (gc sweeps TMPDIR: this test's own)
	run -0 env TMPDIR="$BATS_TEST_TMPDIR/tmp" forge gc
	assert_output --partial "run JIRA-12.1 (cancelled):
removed worktree $(run_worktree "${branches[0]#forge/}")
deleted refs/heads/${branches[0]}"
	run -0 git for-each-ref --format='%(refname)' 'refs/heads/forge/JIRA*' 'refs/forge/JIRA*'
	assert_output ""
	[ ! -e "$(run_worktree "${branches[0]#forge/}")" ]
}

@test "a command that nests directories deeper than git walks: the failure names the directory and how to remove it" {
	plan_state T42 >"$BATS_TEST_TMPDIR/plan.json"
	echo '{"implement": {"validate": false}, "memory": {"reflect": false}}' >"$BATS_TEST_TMPDIR/c.json"
	deep=$(printf 'd/%.0s' {1..120})
	mock '[{"tool_calls":[{"name":"run_command","input":{"command":"mkdir -p '"$deep"' && echo x >'"$deep"'f.txt"}},
		{"name":"write_file","input":{"path":"MUL.md","content":"mul\n"}}]}, '"$FINISH"']'
	run -5 --separate-stderr forge-implement --config "$BATS_TEST_TMPDIR/c.json" <"$BATS_TEST_TMPDIR/plan.json"
	# (before: only libgit2's "directory nesting too deep (100)", no path)
	wt="$(run_worktree T42)"
	hundred=$(printf 'd/%.0s' {1..100})
	assert_equal "${stderr##*: a directory}" " 100 deep, more than git (libgit2) walks, is in the worktree (a command's doing, as a rule): remove it (rm -rf '$wt/${hundred%/}') and try again"
	# what it says to do is enough: the phase runs again, the first
	# attempt's files kept on a saved ref
	rm -rf "$wt/${hundred%/}"
	mock "[$FINISH]"
	run -0 --separate-stderr forge-implement --config "$BATS_TEST_TMPDIR/c.json" <"$BATS_TEST_TMPDIR/plan.json"
	[ "$(git show refs/forge/T42/saved/1:MUL.md)" = mul ]
}

@test "a write_file nested deeper than git can walk is refused to the model; the attempt's other files are committed" {
	plan_state T41 >"$BATS_TEST_TMPDIR/plan.json"
	echo '{"implement": {"validate": false}, "memory": {"reflect": false}}' >"$BATS_TEST_TMPDIR/c.json"
	deep=$(printf 'd/%.0s' {1..120})f.txt
	# (before: the call succeeded, then the commit failed on libgit2's
	# "directory nesting too deep (100)": exit 5, MUL.md not committed)
	mock '[{"tool_calls":[{"name":"write_file","input":{"path":"'"$deep"'","content":"x\n"}},
		{"name":"write_file","input":{"path":"MUL.md","content":"mul\n"}}]}, '"$FINISH"']'
	run -0 --separate-stderr forge-implement --config "$BATS_TEST_TMPDIR/c.json" <"$BATS_TEST_TMPDIR/plan.json"
	events_of tool.failed | jq -e -s 'length == 1 and (.[0].error | startswith("write_file: a path nested 120 directories deep, more than the 99 git (libgit2) can take: use a shallower one"))'
	[ "$(git show forge/T41:MUL.md)" = mul ]
	[ ! -e "$(run_worktree T41)/d" ]
	last_state | jq -e '.status == "ok" and (.changes.files | map(.path)) == ["MUL.md"]'
}

# ---- a transient fault after the answer began streaming (hunt52 #2) --------

@test "a transient fault after the answer began streaming is asked again whole; the lost attempt's usage is billed; a request error mid-stream is not retried" {
	echo '{"memory":{"reflect":false}}' >"$BATS_TEST_TMPDIR/c.json"
	# (before: exit 5 at once, "the model could not be reached", no retry)
	# an overloaded_error event after some text, a connection cut after
	# message_start, an api_error event: each asked again once, then done
	local n=40
	for f in '{"fault":"stream_error","text":"Let me look",'"$U"'}' \
		 '{"fault":"cut","cut_after":1,'"$U"'}' \
		 '{"fault":"stream_error","type":"api_error","message":"Internal server error","error_after":1,'"$U"'}'; do
		plan_state "T$n" >"$BATS_TEST_TMPDIR/plan.json"
		mock "[$f,$DONE]"
		run -0 --separate-stderr forge-implement --config "$BATS_TEST_TMPDIR/c.json" <"$BATS_TEST_TMPDIR/plan.json"
		[ "$(curl -sS -f "$MOCK_URL/_mock/requests" | jq -c '[.[].stream]')" = '[true,true]' ]
		# one call, retried once, billed for both attempts: the lost one's
		# message_start said 2000 in and 1 out ($0.006015), the answer $0.0075
		events_of llm.called | jq -se 'length == 1 and .[0].retries == 1 and .[0].input_tokens == 4000 and
			.[0].output_tokens == 101'
		last_state | jq -e '.status == "ok" and .cost.usd == 0.013515'
		n=$((n + 1))
	done
	# invalid_request_error mid-stream says the request is wrong: not asked again
	plan_state T49 >"$BATS_TEST_TMPDIR/plan.json"
	mock '[{"fault":"stream_error","type":"invalid_request_error","message":"messages: bad","error_after":1,'"$U"'},'"$DONE"']'
	run -5 --separate-stderr forge-implement --config "$BATS_TEST_TMPDIR/c.json" <"$BATS_TEST_TMPDIR/plan.json"
	[[ $stderr == *"the stream ended with an error: invalid_request_error: messages: bad"* ]]
	[ "$(curl -sS -f "$MOCK_URL/_mock/requests" | jq length)" -eq 1 ]
}

@test "ask_human with input that fails its schema goes back to the model as a tool error; the run is not stopped for a human (hunt57 #4)" {
	big=$(head -c 8193 /dev/zero | tr '\0' q)
	ask() { printf '{"tool_calls":[{"name":"ask_human","input":%s}]}' "$1"; }
	mock "[$(ask '{}'),$(ask '{"question":42}'),$(ask "{\"question\":\"$big\"}"),$(ask '{"question":"ok?","bogus":1}'),$FINISH]"
	plan_state T9 >"$BATS_TEST_TMPDIR/in.json"
	run -0 --separate-stderr forge-implement <"$BATS_TEST_TMPDIR/in.json"
	last_state | jq -e '.status == "ok" and (has("question") | not)'
	[ -z "$(events_of agent.escalated)" ]
	run -0 jq -sc '[.[] | select(.type == "tool.failed") | .payload | [.tool, .error]]' <<<"$output"
	jq -e 'length == 4 and all(.[0] == "ask_human") and
		(.[0][1] | test("question")) and (.[2][1] | test("8192|long"))' <<<"$output"
	# what the model read after its first call: why, as the call's error
	run -0 bash -c "curl -sS '$MOCK_URL/_mock/requests' | jq -r '.[1].body.messages | last | .content[0] |
		select(.type == \"tool_result\" and .is_error) | .content | tostring'"
	assert_output --partial "ask_human: invalid input"
	assert_output --partial "question"
}
