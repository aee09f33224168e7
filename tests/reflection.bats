#!/usr/bin/env bats
# reflection.bats - run reflection, Loop 3 (seed 000 §10.4, app/reflect_run.h),
# end to end with `forge run` on the calc fixture and the mock model
# (tests/fixtures/reflection/bounce2.json): the scripted implementer writes
# printf(msg) - which review's security scan rejects - unless its prompt holds
# the reflection's learning ($LEARNED).  So attempts 1 and 2 bounce; the second
# bounce fires the "2+ bounces" trigger mid-run; one call on the fast model
# (forced record_run_learnings) stores the learning, and attempt 3's prompt holds
# it: fixed.  Without the reflection the run would bounce a third time.
# Also: a run without a trigger makes no reflection call; a spent reflection
# budget, a failing model and a bad answer are events and the run completes;
# a resumed run does not fire the same trigger again.  What the models saw is
# asserted on the mock's request log; nothing depends on timing.

bats_require_minimum_version 1.5.0

load test_helper/mock
mock_per_file 240

LEARNED="never hand caller text to printf as its format"
TASK="add calc_trace, a helper that prints a message"

setup() {
	load test_helper/common
	forge_setup
	export FORGE_PROVIDER=anthropic FORGE_BASE_URL="$MOCK_URL" ANTHROPIC_API_KEY=test-key
	FIX="$FORGE_ROOT/tests/fixtures/reflection"
	calc_setup
}

# script FILE [JQ]: the mock answers from FIX/FILE, changed by the jq filter
# JQ (default .); its request log restarted.
script() {
	mock_script "$(jq -c "${2:-.}" "$FIX/$1")"
}

# reflect_run [ARGS...]: `forge run --json` of $TASK (plan..test unless ARGS
# name the phases); stdout in $BATS_TEST_TMPDIR/out, stderr in .../err.
reflect_run() {
	forge run --json "$@" "$TASK" </dev/null >"$BATS_TEST_TMPDIR/out" 2>"$BATS_TEST_TMPDIR/err"
}

# requests [JQ-SELECT]: the mock's requests (a JSON array), those JQ selects.
requests() {
	curl -sS -f "$MOCK_URL/_mock/requests" | jq -c "[.[] | select(${1:-true})]"
}

# A script whose attempt 3 is right whatever its prompt holds: two bounces,
# then the run completes, with or without a learning.
FIXED3='.steps[6,7].when_prompt_contains = ["You are the implementer"]'

# The reflection requests: those forcing record_run_learnings.
REFLECTION='.body.tool_choice.name == "record_run_learnings"'
IMPLEMENTER='(.body.system | tostring | test("You are the implementer"))'

# user_prompt N: the first user message of implement's Nth attempt (the
# attempt's first request: its messages hold one message).
user_prompt() {
	requests "$IMPLEMENTER and (.body.messages | length) == 1" |
		jq -r --argjson n "$1" '.[$n - 1].body.messages[0].content |
			if type == "string" then . else map(.text // "") | join("\n") end'
}

# events TYPE: the payloads of the run's events of TYPE (from its --json output).
events() {
	jq -c --arg t "$1" 'select(.kind == "event" and .type == $t) | .payload' "$BATS_TEST_TMPDIR/out"
}

last_state() {
	jq -c 'select(.kind == "state")' "$BATS_TEST_TMPDIR/out" | tail -n 1
}

@test "the second bounce fires the trigger mid-run: one fast-model call, and implement's next prompt holds the learning" {
	script bounce2.json
	run -0 reflect_run --phases plan,implement,review,test
	# two bounces, then attempt 3 passed the review: it took the "then" path
	last_state | jq -e '(.bounces | length) == 2 and .review.decision == "approve" and .tests.summary.failed == 0'
	run -0 requests "$IMPLEMENTER"
	jq -e '[.[].branch] == ["else", "else", "else", "else", "then", "then"]' <<<"$output"
	# exactly one reflection call, on the fast model, after the second review
	run -0 requests "$REFLECTION"
	jq -e 'length == 1 and .[0].body.model == "claude-haiku-4-5" and .[0].step != null' <<<"$output"
	# its tool's input schema is tools/record_learnings.json as every tool's
	# goes: without the file's $comment and description (before: whole)
	jq -e '.[0].body.tools[0].input_schema | .type == "object" and .properties.learnings and
		(keys - ["$schema", "$id", "$comment", "title", "description"] == keys)' <<<"$output"
	reflection_seq=$(jq '.[0].seq' <<<"$output")
	# its digest names the trigger and the finding that came back
	run -0 jq -r '.[0].body.messages[0].content | if type == "string" then . else map(.text // "") | join("\n") end' <<<"$output"
	assert_output --partial "Trigger: 2+ bounces. Why are fixes not sticking?"
	assert_output --partial "Phases run: plan → implement → review → implement → review"
	assert_output --partial "insecure/c-format"
	assert_output --partial "(AGAIN: it sent implement back before)"
	# attempts 1 and 2 did not have the learning; attempt 3, after it, does
	run -0 user_prompt 2
	refute_output --partial "$LEARNED"
	run -0 user_prompt 3
	assert_output --partial "# What this run has learned so far"
	assert_output --partial "- In C, $LEARNED"
	run -0 requests "$IMPLEMENTER and (.body.messages | length) == 1"
	jq -e --argjson r "$reflection_seq" '.[2].seq > $r and .[1].seq < $r' <<<"$output"
	# the event, with the learning's id, its cost in the run's cost
	run -0 events run.reflection
	first=$(head -n 1 <<<"$output")
	jq -e '.trigger == "2+ bounces" and .phase == "review" and (.learnings | length) == 1 and .cost > 0
		and .model == "claude-haiku-4-5"' <<<"$first"
	jq -e '.triggers == ["2+ bounces"] and .fired == ["2+ bounces"]' <<<"$(tail -n 1 <<<"$output")"
	run -0 events implement.reflection
	jq -e '.learnings == 1' <<<"$output"
	last_state | jq -e --argjson e "$first" '.reflection.fired == ["2+ bounces"] and .reflection.calls == 1
		and .reflection.cost_usd == $e.cost and .reflection.learnings[0].id == $e.learnings[0]
		and .reflection.learnings[0].trigger == "2+ bounces"'
	# counted in the run's cost: the llm_calls log has the call as reflect-fast
	T=$(last_state | jq -r .trace_id)
	run -0 sqlite3 "$FORGE_DB" "select phase, model from llm_calls where trace_id = '$T' and phase like 'reflect%'"
	assert_output "reflect-fast|claude-haiku-4-5"
}

@test "the learnings are memories with their source, trace and trigger (forge memory list and search show them)" {
	script bounce2.json
	run -0 reflect_run --phases plan,implement,review,test
	T=$(last_state | jq -r .trace_id)
	run -0 forge memory list --json --tag run_reflection
	jq -e --arg t "$T" --arg l "$LEARNED" 'select(.source == "run_reflection") | .type == "procedural"
		and (.content | contains($l)) and .context == "C code that prints a message it is given"
		and .confidence == 0.5 and .episode == {trace_id: $t, trigger: "2+ bounces", phase: "review"}
		and (.tags | index("run_reflection") and index("trigger:bounces") and index("printf"))' <<<"$output"
	run -0 forge memory search "printf format caller text"
	assert_output --partial "$LEARNED"
	# the run's events say it was stored, for which trigger
	run -0 events memory.stored
	jq -e -s 'map(select(.source == "run_reflection")) | length == 1 and .[0].trigger == "2+ bounces"' <<<"$output"
}

@test "an answer with several learnings stores each: memories, the run.reflection event and the state hold all three" {
	script bounce2.json '(.steps[] | select(.forced_tool) | .tool_calls[0].input.learnings) += [
		{type: "semantic", content: "The Makefile check target runs the shell tests of calc.", context: "testing calc"},
		{type: "procedural", content: "Run make check before finishing an implement attempt.", context: "calc"}]'
	run -0 reflect_run --phases plan,implement,review,test
	# (each later store found the event batch's transaction open: only the first was kept)
	run -0 events run.reflection_failed
	assert_output ""
	run -0 forge memory list --json --tag run_reflection
	jq -e -s 'length == 3' <<<"$output"
	run -0 events run.reflection
	jq -e -s 'map(select(.trigger == "2+ bounces"))[0].learnings | length == 3' <<<"$output"
	last_state | jq -e '.reflection.learnings | length == 3'
	run -0 events memory.stored
	jq -e -s 'map(select(.source == "run_reflection")) | length == 3' <<<"$output"
}

@test "a run without a trigger makes no reflection call: the same requests as before Loop 3" {
	# one bounce only: the script's implementer is right from attempt 2 on
	script bounce2.json '.steps |= map(if (.when_prompt_contains | type) == "array"
		then .when_prompt_contains[1] = "format string is not a constant" else . end)'
	run -0 reflect_run --phases plan,implement,review,test
	last_state | jq -e '(.bounces | length) == 1 and .reflection == null'
	run -0 requests "$REFLECTION"
	assert_output "[]"
	# every request was the planner's, the implementer's or the reviewer's
	run -0 requests 'true'
	total=$(jq length <<<"$output")
	run -0 requests '(.body.system | tostring | test("You are the (planner|implementer)")) or .body.tool_choice.name == "report_findings"'
	[ "$(jq length <<<"$output")" -eq "$total" ]
	run -0 events run.reflection
	assert_output '{"triggers":[],"fired":[]}'
	! grep -q 'run.reflection_' "$BATS_TEST_TMPDIR/out" || false
}

@test "a spent reflection budget: no call, a run.reflection_skipped event, the run goes on" {
	script bounce2.json "$FIXED3"
	echo '{"reflect": {"budget": 0}}' >"$BATS_TEST_TMPDIR/cfg.json"
	run -0 reflect_run --phases plan,implement,review,test --config "$BATS_TEST_TMPDIR/cfg.json"
	run -0 requests "$REFLECTION"
	assert_output "[]"
	run -0 events run.reflection_skipped
	jq -e '.trigger == "2+ bounces" and .phase == "review"
		and .reason == "the reflection budget is spent ($0.0000 of reflect.budget $0.00)"' <<<"$output"
	# fired all the same (once, not again at the end), nothing learned
	last_state | jq -e '.reflection.fired == ["2+ bounces"] and .reflection.calls == 0 and .reflection.learnings == []
		and (.bounces | length) == 2 and .tests.summary.failed == 0'
	[ "$(events run.reflection_skipped | wc -l)" -eq 1 ]
}

@test "a bad reflection answer (not the schema) or a failing model: an event, nothing stored, the run completes" {
	# learnings of an unknown type: refused by tools/record_learnings.json
	script bounce2.json "$FIXED3"' | (.steps[] | select(.forced_tool) | .tool_calls[0].input.learnings[0].type) = "hunch"'
	run -0 reflect_run --phases plan,implement,review,test
	run -0 events run.reflection_failed
	jq -e '.trigger == "2+ bounces" and (.error | test("does not match tools/record_learnings.json"))
		and .cost > 0' <<<"$output"
	run -0 forge memory list --json --tag run_reflection
	assert_output ""
	last_state | jq -e '.reflection.fired == ["2+ bounces"] and .reflection.calls == 1 and .reflection.cost_usd > 0'
	# the provider down for the reflection (a 500 with no retry): the same
	script bounce2.json "$FIXED3"' | .steps |= map(if .forced_tool then {forced_tool, fault: "error", status: 400,
		message: "reflection refused"} else . end)'
	run -0 reflect_run --phases plan,implement,review,test
	run -0 events run.reflection_failed
	jq -e '.trigger == "2+ bounces" and (.error | test("reflection refused")) and .cost == 0' <<<"$output"
	last_state | jq -e '.reflection.calls == 1 and (.bounces | length) == 2 and .tests.summary.failed == 0'
}

@test "resume does not fire a trigger again: the run pauses at a gate after the reflection, resume finishes it" {
	script bounce2.json
	# deploy to production: the run waits for a human after the tests
	echo '{"deploy": {"environment": "production"}}' >"$BATS_TEST_TMPDIR/cfg.json"
	run -4 reflect_run --config "$BATS_TEST_TMPDIR/cfg.json"
	T=$(last_state | jq -r .trace_id)
	run -0 forge status --json "$T"
	jq -e '.run.status == "paused" and .state.reflection.fired == ["2+ bounces"]' <<<"$output"
	G=$(forge gate list --json | jq -r .id)
	run -0 forge gate approve "$G"
	run -0 --separate-stderr forge resume --json --config "$BATS_TEST_TMPDIR/cfg.json" "$T" </dev/null
	# one reflection call in all; after the resume, the end's summary only
	run -0 requests "$REFLECTION"
	jq -e 'length == 1' <<<"$output"
	run -0 forge events replay "$T"
	jq -e -s '[.[] | select(.type == "run.reflection")] | length == 2 and .[0].payload.trigger == "2+ bounces"
		and .[1].payload == {triggers: ["2+ bounces"], fired: ["2+ bounces"]}' <<<"$output"
	run -0 forge status --json "$T"
	jq -e '.run.status == "completed" and .state.reflection.calls == 1' <<<"$output"
}

@test "a human who approves a gate over review's no fires \"human override\"; replayed from a cassette (reflect-fast)" {
	# the demo's answers, and the reflection's as the replay provider finds it
	{ cat "$FORGE_ROOT/demo/demo.cassette.jsonl"
	  echo '{"phase":"reflect-fast","response":{"tool_calls":[{"id":"r1","name":"record_run_learnings","input":{"learnings":[{"type":"semantic","content":"Division by zero is already refused by calc_div: the review asks a human about it every time.","context":"reviewing calc division"}]}}],"usage":{"input_tokens":900,"output_tokens":60}}}'
	} >"$BATS_TEST_TMPDIR/c.jsonl"
	export FORGE_PROVIDER=replay FORGE_CASSETTE="$BATS_TEST_TMPDIR/c.jsonl"
	unset FORGE_BASE_URL
	task="add a div operation that refuses division by zero"
	run -4 --separate-stderr forge run "$task" </dev/null
	T=$(forge history --json -n 1 | jq -r .trace_id)
	run -0 forge gate approve "$(forge gate list --json | jq -r .id)"
	run -4 --separate-stderr forge resume "$T" </dev/null
	[[ "$stderr" == *"gate escalation_review_2 is waiting for a human"* ]]
	# no trigger yet: a human approved the architecture, which was no "no"
	run -0 forge events replay "$T"
	jq -e -s '[.[] | select(.type == "run.reflection")] == []' <<<"$output"
	run -0 forge gate approve "$(forge gate list --json | jq -r .id)" --note "division by zero is handled"
	run -0 --separate-stderr forge resume "$T" </dev/null
	run -0 forge events replay "$T"
	jq -e -s '[.[] | select(.type == "run.reflection") | .payload] | length == 2
		and .[0].trigger == "human override" and .[0].phase == "review" and (.[0].learnings | length) == 1
		and .[1] == {triggers: ["human override"], fired: ["human override"]}' <<<"$output"
	# what the fast model read: the human's decision and note
	run -0 sqlite3 "$FORGE_DB" "select request from llm_calls where trace_id = '$T' and phase = 'reflect-fast'"
	jq -e '.messages[0].content | contains("Trigger: human override. What did we get wrong?")
		and contains("gate escalation_review_2 approved by a human, note: division by zero is handled")' <<<"$output"
	run -0 forge memory list --json --tag trigger:human_override
	jq -e '.source == "run_reflection" and .type == "semantic" and (.content | startswith("Division by zero"))' <<<"$output"
}

@test "a script without a step for the reflection: the mock's default answer, no learning, the phases' steps untouched" {
	script bounce2.json "$FIXED3"' | .steps |= map(select(.forced_tool | not))'
	run -0 reflect_run --phases plan,implement,review,test
	run -0 requests "$REFLECTION"
	jq -e 'length == 1 and .[0].step == null and .[0].default == true' <<<"$output"
	run -0 events run.reflection
	jq -e -s '.[0].trigger == "2+ bounces" and .[0].learnings == []' <<<"$output"
	last_state | jq -e '(.bounces | length) == 2 and .tests.summary.failed == 0 and .reflection.learnings == []'
	run -0 requests "$IMPLEMENTER"
	jq -e '[.[].branch] == ["else", "else", "else", "else", "then", "then"]' <<<"$output"
}
