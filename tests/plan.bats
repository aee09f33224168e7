#!/usr/bin/env bats
# plan.bats - forge-plan: a task becomes a schema-valid plan from a cassette
# or the mock provider, on the calc fixture repository; a plan that fails
# its schema is sent back and corrected; plans are versioned append-only
# with a changelog; planning is read-only; bad input gets its exit status.

bats_require_minimum_version 1.5.0

load test_helper/mock
mock_per_file 120

setup() {
	load test_helper/common
	forge_setup
	calc_setup
}

# replay CASSETTE: use it for the model.
replay() {
	export FORGE_PROVIDER=replay FORGE_CASSETTE="$CASSETTES/$1"
}

# mock STEPS-JSON: load the mock's script and forget earlier requests.
mock() {
	mock_script "$1"
	export FORGE_PROVIDER=anthropic FORGE_BASE_URL="$MOCK_URL" ANTHROPIC_API_KEY=test-key
}

requests() {
	curl -sS -f "$MOCK_URL/_mock/requests"
}

# The plan of cassette plan-calc.jsonl, for mock scripts.
good_plan() {
	sed -n 3p "$CASSETTES/plan-calc.jsonl" | jq -c '.response.tool_calls[0].input'
}

last_state() {
	tail -n 1 <<<"$output"
}

event_types() {
	jq -r 'select(.kind == "event") | .type' <<<"$output"
}

@test "--task with a cassette: a plan in the state, version 1 'initial plan', events in order" {
	replay plan-calc.jsonl
	run -0 --separate-stderr forge-plan --task "add a mul operation"
	last_state | jq -e '.kind == "state" and .phase == "plan" and .status == "ok"'
	last_state | jq -e '.plan.summary | test("mul")'
	last_state | jq -e '[.plan.tasks[].id] == ["t1", "t2"] and .plan.tasks[1].depends_on == ["t1"]'
	last_state | jq -e '.plan.risk.level == "low" and .plan.estimates.complexity == "low"'
	last_state | jq -e '.plan.version == 1 and .task.repo == "'"$REPO"'"'
	last_state | jq -e '.cost.tokens > 0'
	run -0 jq -sc '[.[] | select(.kind == "event") | .type] | map(select(. == "phase.started" or
		. == "tool.executed" or . == "plan.versioned" or . == "phase.completed"))' <<<"$output"
	assert_output '["phase.started","tool.executed","tool.executed","plan.versioned","phase.completed"]'
	run -0 sqlite3 "$FORGE_DB" "select version, changelog, json_extract(content, '$.risk.level') from plan_versions"
	assert_output "1|initial plan|low"
}

@test "plain text and a bare {\"task\": …} on stdin are tasks too" {
	replay plan-calc.jsonl
	run -0 --separate-stderr bash -c 'echo "add a mul operation" | forge-plan'
	last_state | jq -e '.task.description == "add a mul operation" and .plan.version == 1'
	run -0 --separate-stderr bash -c 'echo "{\"task\":\"add mul\"}" | forge-plan'
	last_state | jq -e '.task.description == "add mul" and (.plan.tasks | length) == 2'
}

@test "a task whose text starts with [ or { is plain text; a record cut short is still malformed JSON (hunt69 #3)" {
	for t in "[bug] parser crashes on empty input" "{fix} the parser braces" "[UI] button misaligned"; do
		mock "[{\"tool_calls\":[{\"name\":\"finish\",\"input\":$(good_plan)}]}]"
		# (before: exit 2, "line 1: malformed JSON: Invalid numeric literal at line 1, column 5")
		run -0 --separate-stderr bash -c 'printf "%s\n" "$1" | forge-plan' _ "$t"
		last_state | jq -e --arg t "$t" '.task.description == $t and .status == "ok"'
	done
	# a truncated state line, and an array cut short: exit 2, the line named, with the hint
	mock '[]'
	run -2 --separate-stderr bash -c 'printf "{\"kind\":\"state\",\"v\":1,\"trace_id\":\"01JDB\n" | forge-plan'
	[[ $stderr == "forge-plan: line 1: malformed JSON: "*"(plain text starting with [ or { is read as JSON: use --task TEXT or {\"task\": …})" ]]
	jq -e -s 'map(select(.type == "input.rejected")) | length == 1 and .[0].payload.line == 1' <<<"$output"
	jq -e -s 'map(select(.kind == "state")) | length == 0' <<<"$output"
	run -2 --separate-stderr bash -c 'printf "[1, 2\n" | forge-plan'
	[[ $stderr == "forge-plan: line 1: malformed JSON: "*"use --task TEXT"* ]]
	# only the first line decides: a later line that is not JSON is an error
	run -2 --separate-stderr bash -c 'printf "{\"task\":\"x\"}\n[bug] crash\n" | forge-plan'
	[[ $stderr == "forge-plan: line 2: malformed JSON: "* && $stderr != *"use --task"* ]]
	assert_equal "$(requests)" "[]"
}

@test "a plan that fails its schema goes back to the model with the error and is corrected" {
	replay plan-schema-fix.jsonl
	run -0 --separate-stderr forge-plan --task "add a mul operation"
	last_state | jq -e '.status == "ok" and .plan.risk.level == "low" and .plan.tasks[1].title == "Test mul"'
	run -0 jq -r 'select(.type == "agent.finish_rejected") | .payload.error' <<<"$output"
	assert_output --partial "title"
	run -0 --separate-stderr forge-plan --task "add a mul operation"
	[ "$(event_types | grep -c '^llm.called$')" -eq 2 ]
	[ "$(event_types | grep -c '^plan.versioned$')" -eq 1 ]
	# what the model saw: its finish refused with the schema error, as a tool error
	bad=$(sed -n 1p "$CASSETTES/plan-schema-fix.jsonl" | jq -c '.response.tool_calls[0].input')
	mock "[{\"tool_calls\":[{\"name\":\"finish\",\"input\":$bad}]},{\"tool_calls\":[{\"name\":\"finish\",\"input\":$(good_plan)}]}]"
	run -0 --separate-stderr forge-plan --task "add a mul operation"
	run -0 bash -c "curl -sS '$MOCK_URL/_mock/requests' | jq -c '.[1].body.messages | last | .content[0] |
		[.type, .is_error, (.content | tostring | test(\"does not match the plan schema.*title\"))]'"
	assert_output '["tool_result",true,true]'
}

@test "a plan with several schema errors goes back to the model with all of them at once, so one turn can fix them" {
	good=$(good_plan)
	bad=$(jq -c 'del(.tasks[0].title) | .risk.level = "huge" | .tasks[1].id = 2' <<<"$good")
	mock "[{\"tool_calls\":[{\"name\":\"finish\",\"input\":$bad}]},{\"tool_calls\":[{\"name\":\"finish\",\"input\":$good}]}]"
	run -0 --separate-stderr forge-plan --task "add a mul operation"
	[ "$(event_types | grep -c '^llm.called$')" -eq 2 ]
	run -0 jq -r 'select(.type == "agent.finish_rejected") | .payload.error' <<<"$output"
	[[ $output == *".tasks[0]: required property 'title' is missing"* ]]
	[[ $output == *".risk.level: value is not one of the allowed values"* ]]
	[[ $output == *".tasks[1].id: expected string, got number"* ]]
	run -0 bash -c "curl -sS '$MOCK_URL/_mock/requests' | jq -r '.[1].body.messages | last | .content[0] | .content | tostring'"
	[[ $output == *"title' is missing; "*".tasks[1].id: "*"; .risk.level: "* ]]
}

@test "a plan whose tasks contradict each other goes back to the model saying what is wrong, as a schema error does (hunt57 #5)" {
	good=$(good_plan)
	check() {	# check JQ-EDIT WHAT: the edited plan is refused with WHAT, then the good one taken
		mock "[{\"tool_calls\":[{\"name\":\"finish\",\"input\":$(jq -c "$1" <<<"$good")}]},{\"tool_calls\":[{\"name\":\"finish\",\"input\":$good}]}]"
		run -0 --separate-stderr forge-plan --task "add a mul operation"
		last_state | jq -e '.status == "ok" and [.plan.tasks[].id] == ["t1", "t2"] and .plan.version == 1'
		run -0 jq -r 'select(.type == "agent.finish_rejected") | .payload.error' <<<"$output"
		assert_output --partial "$2"
		run -0 bash -c "curl -sS '$MOCK_URL/_mock/requests' | jq -r '.[1].body.messages | last | .content[0] |
			select(.type == \"tool_result\" and .is_error) | .content | tostring'"
		assert_output --partial "The plan result is not consistent: $2"
	}
	check '.tasks[1].id = "t1"' "tasks 1 and 2 both have the id 't1': give each task its own id"
	check '.tasks[0].depends_on = ["t2"]' "depends_on goes round in a cycle (t1 -> t2 -> t1)"
	check '.tasks[1].depends_on = ["t9"]' "task 't2' depends on 't9', which is not a task of this plan"
	check '.tasks[1].depends_on = ["t2"]' "task 't2' depends on itself"
	check '.tasks = [.tasks[1], .tasks[0]]' "task 't2' depends on 't1', which comes after it"
	check '.tasks[0].files = ["../../../etc/passwd"]' "task 't1' names the file '../../../etc/passwd', which is outside the repository"
	check '.tasks[1].files = ["/etc/passwd", "tests/../../x"]' "task 't2' names the file '/etc/passwd'"
	assert_output --partial "task 't2' names the file 'tests/../../x'"
	# a path that climbs back down stays inside: taken as it is
	mock "[{\"tool_calls\":[{\"name\":\"finish\",\"input\":$(jq -c '.tasks[1].files = ["tests/../calc.c", "./tests/check.sh"]' <<<"$good")}]}]"
	run -0 --separate-stderr forge-plan --task "add a mul operation"
	last_state | jq -e '.plan.tasks[1].files == ["tests/../calc.c", "./tests/check.sh"]'
	! grep -q '"agent.finish_rejected"' <<<"$output"
}

@test "the model gets the repository layout, build files, README, commands and only read-only tools" {
	mock "[{\"tool_calls\":[{\"name\":\"finish\",\"input\":$(good_plan)}]}]"
	run -0 --separate-stderr forge-plan --task "add a mul operation"
	run -0 bash -c "curl -sS '$MOCK_URL/_mock/requests' | jq -r '.[0].body.messages[0].content'"
	assert_output --partial "add a mul operation"
	assert_output --partial "tests/check.sh"          # tracked files
	assert_output --partial "sh tests/check.sh ./calc" # the Makefile's text
	assert_output --partial "A tiny command-line calculator" # README head
	assert_output --partial "test command: make check"
	assert_output --partial "languages: c (1), shell (1)"
	run -0 bash -c "curl -sS '$MOCK_URL/_mock/requests' | jq -c '[.[0].body.tools[].name]'"
	assert_output '["read_file","list_files","grep","delegate","finish","ask_human"]'   # delegate: read-only helpers (subagent.bats)
	# the finish schema is the state schema's plan, self-contained
	run -0 bash -c "curl -sS '$MOCK_URL/_mock/requests' | jq -c '.[0].body.tools[] | select(.name == \"finish\") | .input_schema |
		[.required, (.. | objects | has(\"\$ref\")) ] | flatten | unique'"
	assert_output '[false,"risk","summary","tasks"]'
	run -0 bash -c "curl -sS '$MOCK_URL/_mock/requests' | jq -c '.[0].body.tools[] | select(.name == \"finish\") | .input_schema.properties | keys'"
	assert_output '["architecture","estimates","risk","summary","tasks","tests_wrong"]'
	run -0 bash -c "curl -sS '$MOCK_URL/_mock/requests' | jq -r '.[0].body.system'"
	assert_output --partial "planner of Forge"
}

@test "the prompt's languages: most files first, a tie by name, whatever order the directory lists them in" {
	mkdir -p "$REPO/lib"
	touch "$REPO/lib/a.go" "$REPO/lib/b.go" "$REPO/z.rb" "$REPO/y.py" "$REPO/lib/x.js" "$REPO/w.rs" "$REPO/lib/v.php"
	mock "[{\"tool_calls\":[{\"name\":\"finish\",\"input\":$(good_plan)}]}]"
	run -0 --separate-stderr forge-plan --task "add a mul operation"
	run -0 bash -c "curl -sS '$MOCK_URL/_mock/requests' | jq -r '.[0].body.messages[0].content | if type == \"string\" then . else map(.text // \"\") | join(\"\\n\") end' | grep '^languages: '"
	# (before, the order was readdir's: ext4 lists by name hash, tmpfs newest first)
	assert_output "languages: go (2), c (1), javascript (1), php (1), python (1), ruby (1), rust (1), shell (1)"
}

# tool_result N: the text of the tool result the mock got in request N.
tool_result() {
	requests | jq -r ".[$1].body.messages[-1].content[] | select(.type == \"tool_result\") |
		.content | if type == \"array\" then .[0].text else . end"
}

@test "under forge run the plan reads the run's base in its worktree, not the checkout; a dry run reads the checkout" {
	echo "only in a later commit" >LATER.md
	git add LATER.md && git commit -qm later
	echo UNCOMMITTED_EDIT >>README.md   # a change to a tracked file
	echo staged >STAGED.md && git add STAGED.md
	echo untracked >UNTRACKED.md
	steps="[{\"tool_calls\":[{\"name\":\"list_files\",\"input\":{\"path\":\".\"}}]},
		{\"tool_calls\":[{\"name\":\"read_file\",\"input\":{\"path\":\"README.md\"}}]},
		{\"tool_calls\":[{\"name\":\"finish\",\"input\":$(good_plan)}]}]"
	mock "$steps"
	run -0 --separate-stderr forge run --base HEAD~1 --phases plan "add a mul operation" </dev/null
	T=$(forge history --json -n 1 | jq -r .trace_id)
	# what implement will start from: the files of HEAD~1, as committed there
	run -0 tool_result 1
	assert_output "$(printf '%s\n' .gitignore Makefile README.md calc.c tests/check.sh)"
	run -0 tool_result 2
	refute_output --partial UNCOMMITTED_EDIT
	assert_output --partial "make check"
	run -0 bash -c "curl -sS '$MOCK_URL/_mock/requests' | jq -r '.[0].body.messages[0].content'"
	assert_output --partial "root: $(run_worktree "$T")"
	assert_output --partial "tests/check.sh"
	refute_output --partial STAGED.md
	refute_output --partial LATER.md
	# the checkout is as it was
	run -0 git status --porcelain
	assert_output "$(printf '%s\n' ' M README.md' 'A  STAGED.md' '?? UNTRACKED.md')"
	# a dry run plans on the checkout as it is (README): everything in it
	mock "$steps"
	run -0 --separate-stderr forge run --dry-run "add a mul operation" </dev/null
	run -0 tool_result 1
	assert_output --partial LATER.md
	assert_output --partial STAGED.md
	assert_output --partial UNTRACKED.md
	run -0 tool_result 2
	assert_output --partial UNCOMMITTED_EDIT
}

@test "a tool call whose arguments are not JSON goes back to the model as the tool's error; the phase goes on" {
	for prov in anthropic openai; do
		mock "[{\"tool_calls\":[{\"name\":\"read_file\",\"arguments\":\"{\\\"path\\\":\"}]},
		       {\"tool_calls\":[{\"name\":\"finish\",\"input\":$(good_plan)}]}]"
		url=$MOCK_URL
		[ $prov = openai ] && url=$MOCK_URL/v1
		# (before: exit 5, "the model could not be reached: tool call 'read_file': tool input is not a JSON object")
		FORGE_PROVIDER=$prov FORGE_BASE_URL=$url OPENAI_API_KEY=test-key \
			run -0 --separate-stderr forge-plan --task "add a mul operation"
		jq -s -e '[.[] | select(.type == "tool.failed") | .payload] | length == 1 and .[0].tool == "read_file" and .[0].kind == "input"' <<<"$output"
		run -0 bash -c "curl -sS '$MOCK_URL/_mock/requests' | jq -c '.[1].body.messages | last | tostring | test(\"read_file: tool input is not a JSON object.*call it again with the arguments as one JSON object\")'"
		assert_output true
	done
}

@test "a tool call cut by the token limit: the model is told so, and to make smaller calls, not to call it again" {
	for prov in anthropic openai; do
		mock "[{\"tool_calls\":[{\"name\":\"write_file\",\"arguments\":\"{\\\"path\\\":\\\"a.c\\\",\\\"content\\\":\\\"int\"}],\"stop_reason\":\"max_tokens\"},
		       {\"tool_calls\":[{\"name\":\"finish\",\"input\":$(good_plan)}]}]"
		url=$MOCK_URL
		[ $prov = openai ] && url=$MOCK_URL/v1
		echo '{"llm":{"max_tokens":1000}}' >"$BATS_TEST_TMPDIR/cfg.json"
		FORGE_PROVIDER=$prov FORGE_BASE_URL=$url OPENAI_API_KEY=test-key \
			run -0 --separate-stderr forge-plan --config "$BATS_TEST_TMPDIR/cfg.json" --task "add a mul operation"
		# (before: "call it again with the arguments as one JSON object": the same cut again)
		run -0 bash -c "curl -sS '$MOCK_URL/_mock/requests' | jq -c '.[1].body.messages | last | tostring | test(\"write_file: your answer reached the limit of 1000 output tokens before this call.s arguments were complete.*Make the change in smaller calls\")'"
		assert_output true
	done
	# the call log says what was wrong with it (before: a call with input {})
	skip_on_postgres "reads llm_calls"
	run -0 db_q "select response from llm_calls where response like '%max_tokens%' order by rowid desc limit 1"
	jq -e '.tool_calls[0].name == "write_file" and (.tool_calls[0].input_error | type) == "string"' <<<"$output"
}

@test "a recorded tool call cut by the token limit replays strictly as recorded; a cassette that does not fit says so" {
	for prov in anthropic openai; do
		mock "[{\"tool_calls\":[{\"name\":\"write_file\",\"arguments\":\"{\\\"path\\\":\\\"a.c\\\",\\\"content\\\":\\\"int\"}],\"stop_reason\":\"max_tokens\"},
		       {\"tool_calls\":[{\"name\":\"finish\",\"input\":$(good_plan)}]}]"
		url=$MOCK_URL
		[ $prov = openai ] && url=$MOCK_URL/v1
		cas=$BATS_TEST_TMPDIR/cut-$prov.jsonl
		FORGE_PROVIDER=$prov FORGE_BASE_URL=$url OPENAI_API_KEY=test-key FORGE_RECORD=$cas \
			run -0 --separate-stderr forge-plan --task "add a mul operation"
		recorded=$(jq -c 'select(.type == "tool.cut") | .payload' <<<"$output")
		[ -n "$recorded" ]
		jq -e '.tool == "write_file" and .max_tokens == 8192 and (.error | type) == "string"' <<<"$recorded"
		# (before: the call ran with {}, "path is missing", and the next
		# request was not the recorded one: exit 5)
		FORGE_PROVIDER=replay FORGE_CASSETTE=$cas FORGE_CASSETTE_MODE=strict \
			run -0 --separate-stderr forge-plan --task "add a mul operation"
		[ "$(jq -c 'select(.type == "tool.cut") | .payload' <<<"$output")" = "$recorded" ]
	done
	# (before: "the model could not be reached")
	FORGE_PROVIDER=replay FORGE_CASSETTE=$cas FORGE_CASSETTE_MODE=strict \
		run -5 --separate-stderr forge-plan --task "add a div operation"
	[[ $stderr == *"the cassette does not match this run's requests: replay: the request differs from cassette entry 1"* ]]
	[[ $stderr != *"could not be reached"* ]]
}

@test "a re-plan of the same trace appends version 2 with a changelog of what changed" {
	replay plan-calc.jsonl
	run -0 --separate-stderr forge-plan --task "add a mul operation"
	last_state >"$BATS_TEST_TMPDIR/v1.json"
	trace=$(jq -r .trace_id "$BATS_TEST_TMPDIR/v1.json")
	replay plan-replan.jsonl
	run -0 --separate-stderr forge-plan <"$BATS_TEST_TMPDIR/v1.json"
	last_state | jq -e --arg t "$trace" '.trace_id == $t and .plan.version == 2 and (.plan.tasks | length) == 3'
	run -0 jq -r 'select(.type == "plan.versioned") | .payload.changelog' <<<"$output"
	assert_output "tasks added: t3; tasks changed: t2; risk low -> medium (0.10 -> 0.40)"
	run -0 sqlite3 "$FORGE_DB" "select version || ' ' || changelog from plan_versions where trace_id = '$trace' order by version"
	assert_output "1 initial plan
2 tasks added: t3; tasks changed: t2; risk low -> medium (0.10 -> 0.40)"
	# the latest version reaches the model, to be updated rather than replaced,
	# and the changelog is against it (here: back to version 1's plan)
	mock "[{\"tool_calls\":[{\"name\":\"finish\",\"input\":$(good_plan)}]}]"
	run -0 --separate-stderr forge-plan <"$BATS_TEST_TMPDIR/v1.json"
	run -0 bash -c "curl -sS '$MOCK_URL/_mock/requests' | jq -r '.[0].body.messages[0].content'"
	assert_output --partial "already has a plan (version 2)"
	assert_output --partial "Document mul"
	run -0 sqlite3 "$FORGE_DB" "select changelog from plan_versions where trace_id = '$trace' and version = 3"
	assert_output "tasks removed: t3; tasks changed: t2; risk medium -> low (0.40 -> 0.10)"
	# the same plan again says so
	mock "[{\"tool_calls\":[{\"name\":\"finish\",\"input\":$(good_plan)}]}]"
	run -0 --separate-stderr forge-plan <"$BATS_TEST_TMPDIR/v1.json"
	run -0 sqlite3 "$FORGE_DB" "select changelog from plan_versions where trace_id = '$trace' and version = 4"
	assert_output "no changes"
}

@test "plan versions are append-only: UPDATE and DELETE are refused" {
	replay plan-calc.jsonl
	run -0 --separate-stderr forge-plan --task "add a mul operation"
	run ! sqlite3 "$FORGE_DB" "update plan_versions set changelog = 'x'"
	assert_output --partial "append-only"
	run ! sqlite3 "$FORGE_DB" "delete from plan_versions"
	assert_output --partial "append-only"
	run -0 sqlite3 "$FORGE_DB" "select count(*), changelog from plan_versions"
	assert_output "1|initial plan"
}

@test "planning is read-only: a write tool is refused and the checkout stays as it was" {
	head=$(git rev-parse HEAD)
	replay plan-readonly.jsonl
	run -0 --separate-stderr forge-plan --task "add a mul operation"
	run -0 jq -r 'select(.type == "tool.failed") | .payload.tool' <<<"$output"
	assert_output "write_file"
	run -0 git status --porcelain
	assert_output ""
	[ "$(git rev-parse HEAD)" = "$head" ]
	grep -q calc_add calc.c
}

@test "bad input: empty input and a malformed line exit 2 with input.rejected" {
	replay plan-calc.jsonl
	export EVENT='{"kind":"event","id":"01JDB3F6A0000000000000000A","trace_id":"t1","ts":"2026-11-21T21:30:00.123Z","source":"x","type":"x.y","payload":{}}'
	run -2 --separate-stderr forge-plan </dev/null
	[[ $stderr == *"empty input"* ]]
	jq -e 'select(.type == "input.rejected")' <<<"$output"
	run -2 --separate-stderr bash -c 'printf "%s\n{oops\n" "$EVENT" | forge-plan'
	[[ $stderr == *"line 2: malformed JSON"* ]]
	[ "$(head -n 1 <<<"$output")" = "$EVENT" ]   # forwarded before the bad line
	jq -e 'select(.type == "input.rejected") | .payload.line == 2' <<<"$output"
	run -2 --separate-stderr forge-plan --no-such-option
}

@test "a plan's risk score outside its level's band is moved into it, and said; the prompt gives the bands (hunt69 #1)" {
	plan=$(good_plan | jq -c '.risk = {level: "medium", score: 0.5, reasons: ["public api"]}')
	mock "[{\"tool_calls\":[{\"name\":\"finish\",\"input\":$plan}]}]"
	run -0 --separate-stderr forge-plan --task "add a mul operation"
	# (before: {medium, 0.5} kept as it was, a high score under a medium level)
	last_state | jq -ce '.plan.risk == {level: "medium", score: 0.49, reasons: ["public api"]}'
	jq -e -s 'map(select(.type == "plan.risk_normalised")) | length == 1 and
		.[0].payload == {level: "medium", score_given: 0.5, score: 0.49}' <<<"$output"
	run -0 sqlite3 "$FORGE_DB" "select json_extract(content, '$.risk.score') from plan_versions"
	assert_output 0.49
	requests | jq -e '.[0].body.system | tostring | test("medium \\(0.25–0.49\\)") and test("high \\(0.5–0.74\\)")'
	# a score in its band is left as it is, and nothing said
	plan=$(good_plan | jq -c '.risk = {level: "high", score: 0.6, reasons: []}')
	mock "[{\"tool_calls\":[{\"name\":\"finish\",\"input\":$plan}]}]"
	run -0 --separate-stderr forge-plan --task "add a mul operation"
	last_state | jq -e '.plan.risk.score == 0.6 and .plan.risk.level == "high"'
	jq -e -s 'map(select(.type == "plan.risk_normalised")) | length == 0' <<<"$output"
}

@test "run by hand, a model call that waits to be retried says so on stderr, as forge run's view does (not with -q)" {
	# (before: the llm.retry record went to stdout alone, and the terminal
	# stayed silent through each wait)
	busy='[{"fault":"rate_limit","retry_after_ms":1500},{"fault":"overloaded","retry_after":"1"}]'
	steps=$(jq -sc --argjson b "$busy" '$b + [.[].response | {text: (.text // ""), tool_calls, usage}]' "$CASSETTES/plan-calc.jsonl")
	mock "$steps"
	run -0 --separate-stderr forge-plan --task "add a mul operation"
	[[ $stderr == *"forge-plan: rate limited (429), retrying in 1.5 s (attempt 2 of 3)"$'\n'* ]]
	[[ $stderr == *"forge-plan: provider overloaded (529), retrying in 1 s (attempt 3 of 3)"* ]]
	[ "$(jq -c 'select(.type == "llm.retry") | .payload.attempt' <<<"$output" | tr '\n' ' ')" = "2 3 " ]
	mock "$steps"
	run -0 --separate-stderr forge-plan -q --task "add a mul operation"
	[[ $stderr != *retrying* ]]
	[ "$(jq -c 'select(.type == "llm.retry")' <<<"$output" | wc -l)" -eq 2 ]
}

@test "a model that cannot be reached is exit 5; ask_human is exit 4" {
	mock '[{"fault":"auth"}]'
	run -5 --separate-stderr forge-plan --task "add a mul operation"
	last_state | jq -e '.status == "failed" and (has("plan") | not)'
	mock '[{"tool_calls":[{"name":"ask_human","input":{"question":"mul of what?"}}]}]'
	run -4 --separate-stderr forge-plan --task "add a mul operation"
	last_state | jq -e '.status == "escalated"'
	[[ $stderr == *"mul of what?"* ]]
}

@test "outside a git repository forge-plan refuses before any model call: exit 2, saying what to do (hunt69 #2)" {
	mock "[{\"tool_calls\":[{\"name\":\"finish\",\"input\":$(good_plan)}]}]"
	mkdir "$BATS_TEST_TMPDIR/plain"
	cd "$BATS_TEST_TMPDIR/plain"
	# (before: the agent ran, every read tool failing "no worktree to work in", exit 0)
	run -2 --separate-stderr forge-plan --task "do x"
	assert_equal "$stderr" "forge-plan: '.' is not in a git repository ($BATS_TEST_TMPDIR/plain): forge-plan works on one; run it inside one, or pass --repo DIR"
	jq -e -s 'map(select(.kind == "state")) | length == 0' <<<"$output"
	jq -e -s 'any(.[]; .type == "input.rejected")' <<<"$output"
	run -2 --separate-stderr bash -c 'echo "do x" | forge-plan'
	assert_equal "$(requests)" "[]"
	# --repo names one: planned
	mock "[{\"tool_calls\":[{\"name\":\"finish\",\"input\":$(good_plan)}]}]"
	run -0 --separate-stderr forge-plan --repo "$REPO" --task "do x"
	last_state | jq -e --arg r "$REPO" '.status == "ok" and .task.repo == $r'
	# a state whose repository is here: planned from it, wherever it is run
	mock "[{\"tool_calls\":[{\"name\":\"finish\",\"input\":$(good_plan)}]}]"
	run -0 --separate-stderr bash -c 'jq -cn --arg r "$1" "{task: \"x\"} | .task = {description: \"x\", repo: \$r}" | forge-plan' _ "$REPO"
	# a state whose repository is gone, outside one: refused, naming it
	run -2 --separate-stderr bash -c 'echo "{\"task\":{\"description\":\"x\",\"repo\":\"/nonexistent/r\"}}" | forge-plan'
	[[ $stderr == "forge-plan: the input state's repository '/nonexistent/r' is not here, and '.' is not in a git repository"*"--repo DIR" ]]
}

@test "a model that never calls a tool, or whose answers are all cut, escalates saying so; a content filter's stop is named" {
	mock '[{"text":"Here is the plan: add calc_mul.","stop_reason":"end_turn","times":"always"}]'
	run -4 --separate-stderr forge-plan --task "add a mul operation"
	[[ $stderr == *"the model answered 4 times without calling a tool (does it support tool calls?)"* ]]
	mock '[{"text":"Here is the plan: first","stop_reason":"max_tokens","times":"always"}]'
	run -4 --separate-stderr forge-plan --task "add a mul operation"
	[[ $stderr == *"every answer was cut at llm.max_tokens (8192) before it was whole; raise llm.max_tokens"* ]]
	chunk='{"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{},"finish_reason":"content_filter"}]}'
	body=$(printf 'data: %s\n\ndata: [DONE]\n\n' "$chunk")
	mock "[{\"fault\":\"raw\",\"status\":200,\"headers\":{\"Content-Type\":\"text/event-stream\"},\"body\":$(jq -Rs . <<<"$body")}]"
	run -4 --separate-stderr env FORGE_PROVIDER=openai FORGE_BASE_URL="$MOCK_URL/v1" OPENAI_API_KEY=test-key forge-plan --task "add a mul operation"
	[[ $stderr == *"the model refused: the provider's content filter stopped the answer (finish_reason content_filter)"* ]]
}

@test "tool calls that come without an id, or with one used before in the answer, get ids of their own: each result answers its call (hunt46 #4)" {
	two='[{"name":"read_file","input":{"path":"calc.c","max_lines":2}},{"name":"list_files","input":{}}]'
	for prov in openai anthropic; do
		mock "[{\"tool_calls\":$two,\"omit_ids\":true},{\"tool_calls\":[{\"name\":\"finish\",\"input\":$(good_plan)}]}]"
		url=$MOCK_URL
		[ $prov = openai ] && url=$MOCK_URL/v1
		# (before: both sent back with the id "", and the mock, as the API, answered 400: exit 5)
		FORGE_PROVIDER=$prov FORGE_BASE_URL=$url OPENAI_API_KEY=test-key \
			run -0 --separate-stderr forge-plan --task "add a mul operation"
		if [ $prov = openai ]; then
			run -0 bash -c "curl -sS '$MOCK_URL/_mock/requests' | jq -c '.[1].body.messages[2:] | map(.tool_call_id // (.tool_calls | map(.id)))'"
		else
			run -0 bash -c "curl -sS '$MOCK_URL/_mock/requests' | jq -c '.[1].body.messages[1:] | map(.content | map(.id // .tool_use_id))'"
		fi
		assert_output '[["call_forge_1_1","call_forge_1_2"],"call_forge_1_1","call_forge_1_2"]' ||
			assert_output '[["call_forge_1_1","call_forge_1_2"],["call_forge_1_1","call_forge_1_2"]]'
	done
	# a server that gives two calls the same id: the second gets its own
	mock "[{\"tool_calls\":[{\"id\":\"call_0\",\"name\":\"read_file\",\"input\":{\"path\":\"calc.c\"}},{\"id\":\"call_0\",\"name\":\"list_files\",\"input\":{}}]},
	       {\"tool_calls\":[{\"name\":\"finish\",\"input\":$(good_plan)}]}]"
	FORGE_PROVIDER=openai FORGE_BASE_URL=$MOCK_URL/v1 OPENAI_API_KEY=test-key \
		run -0 --separate-stderr forge-plan --task "add a mul operation"
	run -0 bash -c "curl -sS '$MOCK_URL/_mock/requests' | jq -c '.[1].body.messages[2:] | map(.tool_call_id // (.tool_calls | map(.id)))'"
	assert_output '[["call_0","call_forge_1_2"],"call_0","call_forge_1_2"]'
}

@test "an answer cut by a full context window is not blamed on max_tokens: the memory is compressed and the step asked again, else the phase fails saying what to do (hunt46 #7)" {
	full='{"text":"Let me","stop_reason":"model_context_window_exceeded","times":"always"}'
	mock "[$full]"
	# (before: the same request 4 times, then exit 4 "every answer was cut at llm.max_tokens ...; raise llm.max_tokens")
	run -5 --separate-stderr forge-plan --task "add a mul operation"
	[[ $stderr == *"the conversation no longer fits the model's context window (200000 tokens as forge takes it)"* ]]
	[[ $stderr == *"use a model with a larger context window or give a smaller task"* ]]
	[[ $stderr != *"raise llm.max_tokens"* ]]
	last_state | jq -e '.status == "failed"'
	[ "$(requests | jq length)" -eq 1 ]   # nothing to compress: not asked again
	jq -s -e '[.[] | select(.type == "llm.called") | .payload.stop_reason] == ["model_context_window_exceeded"]' <<<"$output"
	# with a conversation to compress: compressed once, the step asked again
	reads=$(for i in 1 2 3; do printf '{"tool_calls":[{"name":"read_file","input":{"path":"calc.c","max_lines":%d}}]},' $i; done)
	mock "[$reads$full]"
	run -5 --separate-stderr forge-plan --task "add a mul operation"
	[[ $stderr == *"the conversation no longer fits the model's context window"* ]]
	[ "$(event_types | grep -c '^memory.compressed$')" -eq 1 ]
	# the cut answer is never sent back: each request ends with a tool result
	requests | jq -e '[.[3:][] | select(.body.tools) | .body.messages | last | .content | type] | all(. == "array")'
}

@test "a request the provider refuses as longer than the window (Anthropic prompt is too long, OpenAI context_length_exceeded): compressed and asked again once, then the phase fails naming llm.context_window, not 'shorten the prompt'" {
	reads=$(for i in 1 2 3; do printf '{"tool_calls":[{"name":"read_file","input":{"path":"calc.c","max_lines":%d}}]},' $i; done)
	mock "[$reads{\"fault\":\"context_length\",\"times\":\"always\"}]"
	# (before: "...; shorten the prompt (and working memory could not be
	# compressed further)": the prompt is forge's, the window it took the
	# model to have is what the user can say)
	run -5 --separate-stderr forge-plan --task "add a mul operation"
	[[ $stderr == *"anthropic: the prompt does not fit the context window of 'claude-sonnet-4-5': prompt is too long: "*"; the working memory was compressed and the request still refused: when the model's context window is smaller than the 200000 tokens forge takes it to have, say so in llm.context_window (or llm.pricing's context_window for a model forge knows) so that the agent compresses in time; else give a smaller task (or lower memory.context_tokens)"* ]]
	[[ $stderr != *"shorten the prompt"* ]]
	[ "$(event_types | grep -c '^memory.compressed$')" -eq 1 ]
	# the step asked again once, compressed (the summary's own call between)
	requests | jq -e '[.[] | select(.status == 400 and .body.tools) | .body.messages | length] | length == 2 and .[1] < .[0]'
	last_state | jq -e '.status == "failed"'
	# nothing to compress (the first request), OpenAI: not asked again
	mock_script '[{"fault":"context_length","times":"always"}]'
	export FORGE_PROVIDER=openai FORGE_BASE_URL="$MOCK_URL/v1" OPENAI_API_KEY=test-key FORGE_MODEL=gpt-4o-mini
	run -5 --separate-stderr forge-plan --task "add a mul operation"
	[[ $stderr == *"openai: the prompt does not fit the context window of 'gpt-4o-mini': This model's maximum context length is"*"; the working memory could not be compressed further: when the model's context window is smaller than the 128000 tokens forge takes it to have, say so in llm.context_window"* ]]
	[[ $stderr != *"shorten the prompt"* ]]
	[ "$(requests | jq length)" -eq 1 ]
}

# cache_marks: where each request's cache_control breakpoints are:
# [the tools' indexes, the system blocks', [message, block] of the messages'].
cache_marks() {
	requests | jq -c '[.[].body | [
		[(.tools // []) | to_entries[] | select(.value.cache_control.type == "ephemeral") | .key],
		[.system | if type == "array" then to_entries[] | select(.value.cache_control.type == "ephemeral") | .key else empty end],
		[.messages | to_entries[] | .key as $m | .value.content |
			if type == "array" then to_entries[] | select(.value.cache_control.type == "ephemeral") | [$m, .key] else empty end]]]'
}

@test "prompt caching: each turn marks the tools, the system prompt and the conversation for Anthropic's cache, 4 breakpoints at most; llm.prompt_cache false marks none" {
	# (before: no request carried cache_control: each turn paid the whole prefix)
	mock "[{\"tool_calls\":[{\"name\":\"read_file\",\"input\":{\"path\":\"Makefile\"}}]},
		{\"tool_calls\":[{\"name\":\"read_file\",\"input\":{\"path\":\"calc.c\"}}]},
		{\"tool_calls\":[{\"name\":\"finish\",\"input\":$(good_plan)}]}]"
	run -0 --separate-stderr forge-plan --task "add a mul operation"
	# the last of the 6 tools, the system prompt, the conversation's last
	# block and (from the second turn) the previous request's last
	run -0 cache_marks
	assert_output '[[[5],[0],[[0,0]]],[[5],[0],[[0,0],[2,0]]],[[5],[0],[[2,0],[4,0]]]]'
	requests | jq -e 'map(.status) == [200,200,200] and (.[0].body.system[0].text | contains("planner of Forge"))'
	# switched off: none, and the system prompt is a string again
	echo '{"llm":{"prompt_cache":false}}' >"$BATS_TEST_TMPDIR/cfg.json"
	mock "[{\"tool_calls\":[{\"name\":\"read_file\",\"input\":{\"path\":\"Makefile\"}}]},
		{\"tool_calls\":[{\"name\":\"finish\",\"input\":$(good_plan)}]}]"
	run -0 --separate-stderr forge-plan --config "$BATS_TEST_TMPDIR/cfg.json" --task "add a mul operation"
	requests | jq -e 'length == 2 and (tostring | contains("cache_control") | not) and
		all(.[]; .body.system | type == "string")'
}

@test "prompt caching: a call's cost prices cache writes at 1.25x the input and reads at 0.1x; an answer without figures is estimated as a cache write" {
	# claude-sonnet-4-5: $3 in, $15 out, $3.75 a cache write, $0.30 a read (per million)
	mock "[{\"tool_calls\":[{\"name\":\"read_file\",\"input\":{\"path\":\"Makefile\"}}],
		\"usage\":{\"input_tokens\":1000,\"output_tokens\":100,\"cache_creation_input_tokens\":20000,\"cache_read_input_tokens\":0}},
		{\"tool_calls\":[{\"name\":\"finish\",\"input\":$(good_plan)}],
		\"usage\":{\"input_tokens\":100,\"output_tokens\":100,\"cache_creation_input_tokens\":500,\"cache_read_input_tokens\":20000}}]"
	run -0 --separate-stderr forge-plan --task "add a mul operation"
	# 1000*3 + 100*15 + 20000*3.75 = 79500; 100*3 + 100*15 + 500*3.75 + 20000*0.3 = 9675
	run -0 jq -sc '[.[] | select(.type == "llm.called") | [.payload.cache_write_tokens, .payload.cache_read_tokens, (.cost.usd * 1e6 | round)]]' <<<"$output"
	assert_output '[[20000,0,79500],[500,20000,9675]]'
	# an answer that carries no usage: its input, estimated from the request,
	# is priced as a cache write (the most it can cost), not as input
	# (before: as input, below what the provider bills when it wrote the cache)
	answer=$(jq -rn --argjson plan "$(good_plan)" '
		def ev(name; data): "event: \(name)\ndata: \(data | tojson)\n\n";
		ev("message_start"; {type: "message_start", message: {id: "msg_1", type: "message", role: "assistant",
			model: "claude-sonnet-4-5", content: [], stop_reason: null}}) +
		ev("content_block_start"; {type: "content_block_start", index: 0,
			content_block: {type: "tool_use", id: "toolu_1", name: "finish", input: {}}}) +
		ev("content_block_delta"; {type: "content_block_delta", index: 0,
			delta: {type: "input_json_delta", partial_json: ($plan | tojson)}}) +
		ev("content_block_stop"; {type: "content_block_stop", index: 0}) +
		ev("message_delta"; {type: "message_delta", delta: {stop_reason: "tool_use"}}) +
		ev("message_stop"; {type: "message_stop"})')
	mock "[{\"fault\":\"raw\",\"status\":200,\"headers\":{\"Content-Type\":\"text/event-stream\"},\"body\":$(jq -Rs . <<<"$answer")}]"
	run -0 --separate-stderr forge-plan --task "add a mul operation"
	run -0 jq -sc '[.[] | select(.type == "llm.called") | .payload | [.usage_estimated, .input_tokens, (.cache_write_tokens > 1000)]]' <<<"$output"
	assert_output '[[true,0,true]]'
}

@test "a phase's streamed answer that keeps coming is not cut at llm.timeout_s, only a stall or the phase's time limit ends it (hunt4 #5, hunt29)" {
	# (forge llm --stream, one call, is bounded by llm.timeout_s as a whole:
	# llm.bats; a phase keeps its streams open past it, as here: pings for a
	# second, far past timeout_s, then the plan)
	mock "$(jq -nc --argjson p "$(good_plan)" --arg f "$BATS_TEST_TMPDIR/go" \
		'[{text: "Planning.", tool_calls: [{name: "finish", input: $p}], pause_after: 3, pause_file: $f, ping_ms: 100}]')"
	(sleep 1; touch "$BATS_TEST_TMPDIR/go") &
	local toucher=$!
	run -0 --separate-stderr forge-plan --config <(echo '{"llm":{"timeout_s":0.3,"stall_timeout_s":30,"max_retries":0}}') \
		--task "add a mul operation"
	wait "$toucher"
	last_state | jq -e '.status == "ok" and .plan.version == 1'
	run -0 bash -c "curl -sS '$MOCK_URL/_mock/requests' | jq -c '[.[].stream]'"
	assert_output '[true]'
}
