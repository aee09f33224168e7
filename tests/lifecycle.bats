#!/usr/bin/env bats
# lifecycle.bats - the life of a run under forge-supervisor: a human's (or
# --auto-approve's) override of review reaches deploy, also across resume;
# a failed run resumes from its last checkpoint; one process at a time holds
# a run (its lease); cancel stops a live run; a run whose holder died shows
# as interrupted and resumes.

bats_require_minimum_version 1.5.0

load test_helper/mock
mock_per_file

setup() {
	load test_helper/common
	forge_setup
	export BATS_TEST_TIMEOUT=120
	calc_setup
}

teardown() {
	# a run left behind by a failed assertion
	[ -s "$BATS_TEST_TMPDIR/r1.pid" ] && kill -9 -- "-$(cat "$BATS_TEST_TMPDIR/r1.pid")" 2>/dev/null
	true
}

last_trace() {
	forge history --json -n 1 | jq -r .trace_id
}

events_of() {
	forge events replay "$1" | jq -c --arg t "$2" 'select(.type == $t) | .payload'
}

demo_replay() {
	export FORGE_PROVIDER=replay FORGE_CASSETTE="$FORGE_ROOT/demo/demo.cassette.jsonl"
}

TASK="add a div operation that refuses division by zero"

# use_mock: the model is the mock server, answering plan and implement of
# "add a mul operation" from the cassettes ($PLAN, $IMPL: steps).
use_mock() {
	export FORGE_PROVIDER=anthropic FORGE_BASE_URL="$MOCK_URL" ANTHROPIC_API_KEY=test-key
	curl -sS -f -X POST "$MOCK_URL/_mock/reset" >/dev/null
	local c=$FORGE_ROOT/tests/fixtures/cassettes
	# (made once a file: they are the same for every test)
	if [ ! -s "$BATS_FILE_TMPDIR/impl.json" ]; then
		jq -sc '[.[].response | {text: (.text // ""), tool_calls, usage}]' "$c/plan-calc.jsonl" \
			>"$BATS_FILE_TMPDIR/plan.json"
		jq -sc '[.[].response | {text: (.text // ""), tool_calls, usage}]' "$c/implement-calc.jsonl" \
			>"$BATS_FILE_TMPDIR/impl.json"
	fi
	PLAN=$(<"$BATS_FILE_TMPDIR/plan.json")
	IMPL=$(<"$BATS_FILE_TMPDIR/impl.json")
}

# script JSON-ARRAY: what the mock answers from now on (the request log stays).
script() {
	printf '%s' "$1" | curl -sS -f -X POST -H 'content-type: application/json' \
		--data-binary @- "$MOCK_URL/_mock/script?replace=1" >/dev/null
}

# calls WHO [AFTER]: model requests of the planner/implementer after seq AFTER.
calls() {
	curl -sS -f "$MOCK_URL/_mock/requests" |
		jq --arg who "$1" --argjson after "${2:-0}" \
			'[.[] | select(.seq > $after and (.body.system | tostring | test("You are the " + $who)))] | length'
}

last_seq() {
	curl -sS -f "$MOCK_URL/_mock/requests" | jq '[.[].seq] | max // 0'
}

@test "--auto-approve passes review's escalation and deploy accepts it (default config)" {
	demo_replay
	run -0 --separate-stderr forge run --auto-approve "$TASK" </dev/null
	[[ "$stderr" == *"gate escalation_review_2 approved (--auto-approve)"* ]]
	T=$(last_trace)
	run -0 forge status --json "$T"
	jq -e '.run.status == "completed" and .state.deployment.status == "healthy"
		and .state.review.decision == "require_human"
		and .state.review.approved_by.by == "flag" and .state.review.approved_by.gate == "escalation_review_2"' <<<"$output"
}

@test "a human approves review's escalation with forge gate approve; the override survives resume to deploy" {
	demo_replay
	run -4 --separate-stderr forge run "$TASK" </dev/null
	[[ "$stderr" == *"gate architecture_approval is waiting for a human"* ]]
	T=$(last_trace)
	G=$(forge gate list --json | jq -r .id)
	run -0 forge gate approve "$G"
	run -4 --separate-stderr forge resume "$T" </dev/null
	[[ "$stderr" == *"gate escalation_review_2 is waiting for a human"* ]]
	run -0 forge status --json "$T"
	jq -e '.run.status == "paused" and .state.review.decision == "require_human" and .state.review.approved_by == null' <<<"$output"
	G=$(forge gate list --json | jq -r .id)
	run -0 forge gate approve "$G" --note "division by zero is handled"
	run -0 --separate-stderr forge resume "$T" </dev/null
	run -0 forge status --json "$T"
	jq -e --arg g "$G" '.run.status == "completed" and .state.deployment.status == "healthy"
		and .state.review.approved_by == {by: "human", gate: "escalation_review_2", gate_id: $g,
						  note: "division by zero is handled"}' <<<"$output"
	# every state checkpointed after the approval carries it
	run -0 sqlite3 "$FORGE_DB" "select json_extract(state, '\$.review.approved_by.by') from checkpoints
		where trace_id = '$T' and phase in ('test', 'deploy')"
	assert_output "$(printf 'human\nhuman')"
}

@test "forge-test and forge-deploy accept a state whose review was overridden, and refuse it without approved_by" {
	state='{"kind":"state","v":1,"trace_id":"t1","phase":"review","status":"escalated","task":{"description":"x"},
		"review":{"findings":[],"decision":"require_human"},"tests":{"summary":{"total":1,"passed":1,"failed":0}}}'
	run -1 --separate-stderr forge-deploy --strategy branch <<<"$(jq -c . <<<"$state")"
	[[ "$stderr" == *"the review did not approve"* ]]
	over=$(jq -c '.review.approved_by = {by: "human", gate: "escalation_review"}' <<<"$state")
	# past the review's check: it stops at the next, the state having no run branch
	run -1 --separate-stderr forge-deploy --strategy branch <<<"$over"
	[ "$stderr" = "forge-deploy: skipped: the state names no run branch (task.branch): it was not made in a run's worktree (forge-implement, forge run), so there is no run to deploy; to deploy the checkout, run forge-deploy --no-input" ]
	# failed tests: refused, unless a gate passed them (tests.approved_by)
	# (a review that approved ended ok: one that ended escalated is a no of
	# its own, whatever its decision says)
	failing=$(jq -c '.tests.summary.failed = 1 | .review.decision = "approve" | .status = "ok"' <<<"$state")
	run -1 --separate-stderr forge-deploy --strategy branch <<<"$failing"
	[[ "$stderr" == *"1 test failed"* ]]
	run -1 --separate-stderr forge-deploy --strategy branch <<<"$(jq -c '.tests.approved_by = {by: "flag", gate: "escalation_test"}' <<<"$failing")"
	[[ "$stderr" == *"the state names no run branch"* ]]
	run -1 --separate-stderr forge-test <<<"$(jq -c . <<<"$state")"
	[[ "$stderr" == *"the review did not approve the changes"* ]]
	run -0 --separate-stderr forge-test <<<"$over"
	tail -n 1 <<<"$output" | jq -e '.status == "ok" and .tests.summary.failed == 0'
}

@test "a run that failed on its provider (exit 5) resumes: the failed phase runs again, plan's calls are not repeated" {
	use_mock
	mkdir -p .forge
	echo '{"llm": {"max_retries": 0}}' >.forge/config.json
	script "$(jq -nc --argjson p "$PLAN" '$p + [{fault: "server_error", times: "always"}]')"
	run -5 --separate-stderr forge run -q "add a mul operation" </dev/null
	T=$(last_trace)
	run -0 forge status --json "$T"
	jq -e '.run.status == "failed" and .state.phase == "implement" and .state.status == "failed"' <<<"$output"
	# why it failed, the phase's own words (before: "implement failed" alone)
	# (before: "the model could not be reached", though the provider answered)
	jq -e '.run.error | startswith("implement failed: the provider failed (500) after 1 attempt: ")' <<<"$output"
	run -0 forge show "$T"
	assert_line --regexp "^  [0-9:]{8}  run failed: implement failed: the provider failed \(500\) after 1 attempt: "
	[ "$(calls planner)" -eq 3 ]
	# the provider is back
	script "$IMPL"
	AFTER=$(last_seq)
	run -0 --separate-stderr forge resume -q "$T" </dev/null
	run -0 forge status --json "$T"
	jq -e '.run.status == "completed" and .state.deployment.status == "healthy"' <<<"$output"
	[ "$(calls planner "$AFTER")" -eq 0 ]
	[ "$(calls implementer "$AFTER")" -eq 7 ]
	run -0 git -C "$REPO" log --format=%s "$BASE..forge/$T"
	assert_output --partial "add a mul operation"
	# a completed run does not resume
	run -0 --separate-stderr forge resume "$T" </dev/null
	[[ "$stderr" == *"already completed"* ]]
}

# analysis_steps FAULT: the mock's steps for "tidy calc_add": implement breaks
# calc_add on its first attempt (make check fails) and puts it back on the
# next; the test analysis answers with a confident fix, or with FAULT
# (server_error) every time when given.
analysis_steps() {
	python3 - "$FORGE_ROOT/tests/fixtures/repos/calc/calc.c" "${1:-}" <<'PY'
import json, sys
src, fault = open(sys.argv[1]).read(), sys.argv[2]
bad = src.replace("return a + b;", "return a - b;", 1)
plan = {"summary": "Tidy calc_add.", "architecture": {"components": ["calc.c"], "interfaces": [], "decisions": ["small"]},
        "tasks": [{"id": "t1", "title": "tidy", "description": "tidy calc_add", "files": ["calc.c"], "depends_on": [],
                   "acceptance": ["make check passes"]}],
        "risk": {"level": "low", "score": 0.1, "reasons": ["small"]}, "estimates": {"complexity": "low", "effort": "10m"}}
def impl(content, summary):
    return {"tool_calls": [{"name": "write_file", "input": {"path": "calc.c", "content": content}},
                           {"name": "finish", "input": {"summary": summary, "files": ["calc.c"]}}]}
analysis = {"forced_tool": "report_failure_analysis", "times": "always"}
if fault:
    analysis["fault"] = fault
else:
    analysis["tool_calls"] = [{"name": "report_failure_analysis", "input": {"analyses": [
        {"test": "calc add 2 3: expected '5', got '-1'", "root_cause": "calc_add subtracts",
         "suggested_fix": "make calc_add return a + b", "confidence": 0.95}]}}]
steps = [
    {"when_prompt_contains": "Call report_findings once", "times": "always",
     "then": {"tool_calls": [{"name": "report_findings", "input": {"findings": []}}]}},
    analysis,
    {"when_prompt_contains": "You are the planner", "times": "always",
     "then": {"tool_calls": [{"name": "finish", "input": plan}]}},
    {"when_prompt_contains": "You are the implementer", "then": impl(bad, "Tidied calc_add.")},
    {"when_prompt_contains": "You are the implementer", "times": "always", "then": impl(src + "/* v2 */\n", "calc_add adds again.")},
]
print(json.dumps({"steps": steps}))
PY
}

@test "the test analysis fails on its provider under --auto-approve: the run fails (exit 5), nothing is deployed; resume analyses and bounces" {
	# (before: the failures stayed at confidence 0, "no fixable failure",
	# a gate --auto-approve passed: the run completed, its failing tests
	# deployed, hunt68 #1)
	export FORGE_PROVIDER=anthropic FORGE_BASE_URL="$MOCK_URL" ANTHROPIC_API_KEY=test-key
	mock_reset
	mock_steps "$(analysis_steps server_error)"
	mkdir -p .forge
	echo '{"llm": {"max_retries": 0}, "implement": {"validate": false}}' >.forge/config.json
	run -5 --separate-stderr forge run --auto-approve "tidy calc_add" </dev/null
	[[ "$stderr" == *"the analysis of the failing tests failed: the provider failed (500) after 1 attempt: "* ]]
	[[ "$stderr" == *"forge run: node 'test' failed; the provider's trouble passes: wait a while, then \`forge resume $(last_trace)\` runs it again"* ]]
	[[ "$stderr" != *"approved (--auto-approve)"* ]]
	T=$(last_trace)
	run -0 forge status --json "$T"
	jq -e '.run.status == "failed" and .state.phase == "test" and .state.status == "failed"
		and (.state | has("deployment") | not)' <<<"$output"
	run -0 sqlite3 "$FORGE_DB" "select count(*) from gates where trace_id = '$T' and gate like 'escalation_test%'"
	assert_output 0
	# the provider is back: the analysis runs again, the fix bounces to implement, the run completes
	mock_steps "$(analysis_steps)"
	run -0 --separate-stderr forge resume "$T" </dev/null
	run -0 forge status --json "$T"
	jq -e '.run.status == "completed" and .state.deployment.status == "healthy" and .state.bounces[0].from == "test"
		and .state.tests.summary.failed == 0' <<<"$output"
}

# fail_implement: a run whose implement fails on the provider (exit 5); its trace in $T.
fail_implement() {
	use_mock
	mkdir -p .forge
	echo '{"llm": {"max_retries": 0}}' >.forge/config.json
	script "$(jq -nc --argjson p "$PLAN" '$p + [{fault: "server_error", times: "always"}]')"
	run -5 --separate-stderr forge run -q "add a mul operation" </dev/null
	T=$(last_trace)
}

@test "the implementer asks a human: approved with an answer, it runs again with the answer in its prompt" {
	use_mock
	script "$(jq -nc --argjson p "$PLAN" '$p + [{tool_calls: [{name: "ask_human", input: {question: "Call it mul or times?"}}]}]')"
	run -4 --separate-stderr forge run -q "add a mul operation" </dev/null
	T=$(last_trace)
	[ "$(forge status --json "$T" | jq -r .state.question.text)" = "Call it mul or times?" ]
	G=$(forge gate list --json | jq -r 'select(.gate == "escalation_implement") | .id')
	run -0 forge gate approve "$G" --note "mul, as the other operations"
	script "$IMPL"
	AFTER=$(last_seq)
	# (before: approving moved on to review with nothing implemented, and
	# the run "completed" with no change)
	run -0 --separate-stderr forge resume -q "$T" </dev/null
	[ "$(calls implementer "$AFTER")" -ge 1 ]
	curl -sS -f "$MOCK_URL/_mock/requests" | jq -e --argjson a "$AFTER" '[.[] | select(.seq > $a) | .body.messages[0].content |
		tostring | select(test("You asked: Call it mul or times\\?")) | select(test("answered: mul, as the other operations"))] | length > 0'
	run -0 forge status --json "$T"
	jq -e '.run.status == "completed" and (.state.changes.files | length) > 0 and (.state | has("question") | not) and
		.state.answers == [{"phase": "implement", "question": "Call it mul or times?", "answer": "mul, as the other operations", "by": "human"}]' <<<"$output"
}

@test "ask_human's options and context reach the person: the gate, the state's question, the event (before: the question alone)" {
	use_mock
	script "$(jq -nc --argjson p "$PLAN" '$p + [{tool_calls: [{name: "ask_human", input: {question: "Call it mul or times?",
		options: ["mul", "times"], context: "add and sub are short names"}}]}]')"
	run -4 --separate-stderr forge run "add a mul operation" </dev/null
	T=$(last_trace)
	q="Call it mul or times? (options: mul | times) (context: add and sub are short names)"
	[[ "$stderr" == *"forge run: gate escalation_implement is waiting for a human: implement needs a human: the agent asks: $q"* ]]
	[ "$(forge status --json "$T" | jq -r .state.question.text)" = "$q" ]
	[ "$(forge gate list --json | jq -r 'select(.gate == "escalation_implement") | .prompt')" = "implement needs a human: the agent asks: $q" ]
	run -0 events_of "$T" agent.escalated
	assert_output '{"question":"Call it mul or times?","options":["mul","times"],"context":"add and sub are short names"}'
}

@test "the model's question is shown on one line without its escape sequences: forge status's gate, forge show's timeline" {
	use_mock
	script "$(jq -nc --argjson p "$PLAN" '$p + [{tool_calls: [{name: "ask_human",
		input: {question: "Call it\u001b]0;PWNED\u0007\u001b[31m mul\nor times?"}}]}]')"
	run -4 --separate-stderr forge run -q "add a mul operation" </dev/null
	T=$(last_trace)
	G=$(forge gate list --json | jq -r 'select(.gate == "escalation_implement") | .id')
	# (before: the OSC and the colour reached the terminal, and the question's
	# second line stood alone, under the gate's)
	run -0 forge status "$T"
	assert_line "gate     escalation_implement pending (implement needs a human: the agent asks: Call it ]0;PWNED  [31m mul or times?): forge gate approve $G"
	assert_line "reason   implement needs a human: the agent asks: Call it ]0;PWNED  [31m mul or times?"
	run -1 grep -c -e $'\e' -e $'\a' -e '^or times' <<<"$output"
	run -0 forge show "$T"
	assert_line --regexp "^  .*  implement escalated in [0-9]+ ms: .*Call it \]0;PWNED  \[31m mul or times\?\$"
	run -1 grep -c -e $'\e' -e $'\a' -e '^or times' <<<"$output"
}

@test "what the implementer did before asking a human is committed: the answer's run goes on from it, and the result holds it" {
	use_mock
	script "$(jq -nc --argjson p "$PLAN" '$p + [
		{tool_calls: [{name: "write_file", input: {path: "NOTES", content: "mul: long * long\n"}}]},
		{tool_calls: [{name: "ask_human", input: {question: "Call it mul or times?"}}]}]')"
	run -4 --separate-stderr forge run -q "add a mul operation" </dev/null
	T=$(last_trace)
	# (before: left uncommitted, then reset away by the answer's run as an
	# interrupted run's leftovers; or, approved as it was, passed on to
	# review with changes.commit the base)
	[ "$(git -C "$REPO" show "forge/$T:NOTES")" = "mul: long * long" ]
	[[ "$(git -C "$REPO" log -1 --format=%s "forge/$T")" == *"(attempt 1, before a human's answer)" ]]
	run -0 forge status --json "$T"
	jq -e --arg c "$(git -C "$REPO" rev-parse "forge/$T")" '.state.changes.commit == $c and
		([.state.changes.files[].path] | index("NOTES"))' <<<"$output"
	G=$(forge gate list --json | jq -r 'select(.gate == "escalation_implement") | .id')
	run -0 forge gate approve "$G" --note "mul"
	script "$IMPL"
	run -0 --separate-stderr forge resume -q "$T" </dev/null
	[[ "$stderr" != *"had changes its state does not have"* ]]
	[ "$(git -C "$REPO" show "forge/$T:NOTES")" = "mul: long * long" ]
	git -C "$REPO" show "forge/$T:calc.c" | grep -q calc_mul
}

# (the agents' own reflection on an escalation takes this step, not the next one)
NO_LEARNINGS='{"forced_tool": "record_learnings", "times": "always", "tool_calls": [{"name": "record_learnings", "input": {"learnings": []}}]}'

@test "--auto-approve answers no question: the run waits at the implementer's question (exit 4) and says how to answer it" {
	use_mock
	script "$(jq -nc --argjson p "$PLAN" --argjson n "$NO_LEARNINGS" '$p + [$n,
		{tool_calls: [{name: "ask_human", input: {question: "Call it mul or times?"}}], times: "always"}]')"
	# (before: the flag passed escalation_implement with no answer; implement
	# ran again and asked again, until the budget's breaker tripped: exit 3)
	run -4 --separate-stderr forge run --auto-approve --budget 0.5 "add a mul operation" </dev/null
	T=$(last_trace)
	G=$(forge gate list --json | jq -r 'select(.gate == "escalation_implement") | .id')
	[ -n "$G" ]
	[[ "$stderr" == *"forge run: gate escalation_implement is waiting for a human: implement needs a human: the agent asks: Call it mul or times?"* ]]
	[[ "$stderr" == *"  the agent asked a question, which only a person answers (--auto-approve does not): answer with \`forge gate approve $G --note ANSWER\`, then \`forge resume $T\`"* ]]
	# the summary's next line too (before: without --note, an approval that answers nothing)
	assert_line "  next      forge gate approve $G --note ANSWER && forge resume $T"
	assert_line --regexp "^  why       the agent asked a question "
	run -0 events_of "$T" gate.approved
	assert_output ""
	run -0 forge status --json "$T"
	jq -e '.run.status == "paused" and .state.question.text == "Call it mul or times?" and
		[.pending_gates[].gate] == ["escalation_implement"]' <<<"$output"
	# resumed with the flag again, it still waits: no model call
	AFTER=$(last_seq)
	run -4 --separate-stderr forge resume --auto-approve "$T" </dev/null
	[[ "$stderr" == *"gate escalation_implement is waiting for a human"* ]]
	[ "$(last_seq)" -eq "$AFTER" ]
	# a person's answer: implement runs again with it, and the run goes on
	run -0 forge gate approve "$G" --note "mul, as the other operations"
	script "$IMPL"
	run -0 --separate-stderr forge resume --auto-approve -q "$T" </dev/null
	run -0 forge status --json "$T"
	jq -e '.run.status == "completed" and (.state.changes.files | length) > 0 and
		.state.answers == [{"phase": "implement", "question": "Call it mul or times?", "answer": "mul, as the other operations", "by": "human"}]' <<<"$output"
}

@test "--auto-approve re-runs a stagnating plan at most bounces.rerun_max times, then a person decides (exit 4, loop.rerun_limit)" {
	use_mock
	script "$(jq -nc --argjson n "$NO_LEARNINGS" '[$n,
		{tool_calls: [{name: "read_file", input: {path: "calc.c"}}], times: "always"}]')"
	# (before: escalation_plan, _2, … _13 passed by the flag, each a new
	# plan that stagnated again, until the budget's breaker tripped: exit 3)
	run -4 --separate-stderr forge run --auto-approve --budget 0.5 "add a mul operation" </dev/null
	T=$(last_trace)
	run -0 forge events replay "$T"
	assert_equal "$(jq -c 'select(.type == "gate.approved") | [.payload.gate, .payload.by]' <<<"$output")" \
		"$(printf '%s\n' '["escalation_plan","flag"]' '["escalation_plan_2","flag"]')"
	assert_equal "$(jq -c 'select(.type == "loop.rerun_limit") | .payload' <<<"$output")" \
		'{"node":"plan","phase":"plan","reruns":2,"max":2}'
	[[ "$stderr" == *"forge run: plan escalated again after the 2 re-runs --auto-approve may give it (bounces.rerun_max 2): a person decides now"* ]]
	[[ "$stderr" == *"forge run: gate escalation_plan_3 is waiting for a human: plan needs a human: stagnation: "*"(again, after 2 re-runs without a person's answer; bounces.rerun_max is 2)"* ]]
	run -0 forge status --json "$T"
	jq -e '.run.status == "paused" and [.pending_gates[].gate] == ["escalation_plan_3"] and
		.state.node_runs.plan.reruns == 2 and .state.node_runs.plan.attempt == 3' <<<"$output"
	# a person's yes runs it again, and is not counted: the next escalation
	# asks a person again, not the flag
	G=$(forge gate list --json | jq -r 'select(.gate == "escalation_plan_3") | .id')
	run -0 forge gate approve "$G"
	run -4 --separate-stderr forge resume --auto-approve "$T" </dev/null
	run -0 forge status --json "$T"
	jq -e '[.pending_gates[].gate] == ["escalation_plan_4"] and .state.node_runs.plan.reruns == 2' <<<"$output"
	# bounces.rerun_max 0: the first escalation asks a person
	mkdir -p .forge
	echo '{"bounces": {"rerun_max": 0}}' >.forge/config.json
	run -4 --separate-stderr forge run --auto-approve --budget 0.5 "add a mul operation" </dev/null
	T=$(last_trace)
	run -0 forge status --json "$T"
	jq -e '[.pending_gates[].gate] == ["escalation_plan"] and .state.node_runs.plan.attempt == 1' <<<"$output"
	run -0 events_of "$T" gate.approved
	assert_output ""
}

# stagnating_implement: the planner plans, the implementer reads the same file
# over and over (stagnation) and changes nothing.
stagnating_implement() {
	script "$(jq -nc --argjson p "$PLAN" --argjson n "$NO_LEARNINGS" '$p + [$n,
		{tool_calls: [{name: "read_file", input: {path: "calc.c"}}], times: "always"}]')"
}

@test "implement stagnates having changed nothing: approved with a note, it runs again with the note in its prompt" {
	use_mock
	stagnating_implement
	run -4 --separate-stderr forge run -q "add a mul operation" </dev/null
	[[ "$stderr" == *"implement needs a human: stagnation"* ]]
	T=$(last_trace)
	run -0 forge status --json "$T"
	jq -e '.state.status == "escalated" and .state.changes.empty == true' <<<"$output"
	G=$(forge gate list --json | jq -r 'select(.gate == "escalation_implement") | .id')
	[ -n "$G" ]
	run -0 forge gate approve "$G" --note "stop re-reading calc.c: add calc_mul beside calc_add"
	script "$IMPL"
	AFTER=$(last_seq)
	# (before: the empty changes counted as implement's result: review, test
	# and deploy ran on nothing, and the run "completed (no change)", exit 0,
	# the note never in a prompt)
	run -0 --separate-stderr forge resume -q "$T" </dev/null
	[ "$(calls implementer "$AFTER")" -ge 1 ]
	curl -sS -f "$MOCK_URL/_mock/requests" | jq -e --argjson a "$AFTER" '[.[] | select(.seq > $a) |
		.body.messages[0].content | tostring | select(test("stop re-reading calc.c: add calc_mul beside calc_add")) |
		select(test("stopped without a result"))] | length > 0'
	run -0 forge status --json "$T"
	jq -e '.run.status == "completed" and (.state.changes.files | length) > 0 and (.state.changes.empty | not) and
		[.state.answers[] | {phase, answer, by, rerun}] ==
		[{"phase": "implement", "answer": "stop re-reading calc.c: add calc_mul beside calc_add", "by": "human", "rerun": true}]' <<<"$output"
	[ "$(forge events replay "$T" | jq -s '[.[] | select(.type == "phase.started" and .source == "forge-implement")] | length')" -eq 2 ]
	git -C "$REPO" show "forge/$T:calc.c" | grep -q calc_mul
}

@test "--auto-approve re-runs a stagnating implement that changed nothing at most bounces.rerun_max times, then a person decides" {
	use_mock
	stagnating_implement
	# (before: the flag passed escalation_implement, implement did not run
	# again, and the run "completed (no change)", exit 0)
	run -4 --separate-stderr forge run --auto-approve --budget 0.5 "add a mul operation" </dev/null
	T=$(last_trace)
	run -0 events_of "$T" loop.rerun_limit
	assert_output '{"node":"implement","phase":"implement","reruns":2,"max":2}'
	run -0 forge status --json "$T"
	jq -e '.run.status == "paused" and [.pending_gates[].gate] == ["escalation_implement_3"] and
		.state.node_runs.implement.attempt == 3 and (.state | has("review") | not)' <<<"$output"
}

# no_change_run [forge run OPTIONS]: a run whose implement changes nothing
# (the agent reads a file and finishes); its trace in $T, its summary in $output.
no_change_run() {
	use_mock
	script "$(jq -nc --argjson p "$PLAN" '$p + [{tool_calls: [{name: "read_file", input: {path: "calc.c"}}]},
		{tool_calls: [{name: "finish", input: {summary: "nothing to change"}}]}]')"
	run -0 --separate-stderr forge run --auto-approve "$@" "add a mul operation" </dev/null
	T=$(last_trace)
	BASE=$(git -C "$REPO" rev-parse HEAD)
}

@test "a run that completes without changing anything says no change everywhere: state, review, tests, deploy (skipped), summary, show, merge" {
	no_change_run
	[[ "$output" == *"next      forge gc"$'\n'"  why       the run made no change: nothing to merge; forge gc removes its worktree and branch"* ]]
	# (before: "0 files (+0 -0)", deploy "healthy", and forge merge said
	# the run was "in main already (merged outside forge)")
	[[ "$output" == *"Run $T completed (no change)"* ]]
	[[ "$output" == *"  changes   none: the run made no change"* ]]
	[[ "$output" == *"  deploy    skipped (branch): nothing to deploy: the run made no change (forge/$T is at its base ${BASE:0:12})"* ]]
	run -0 forge status --json "$T"
	jq -e --arg b "$BASE" '.run.status == "completed" and .state.changes.files == [] and .state.changes.empty == true
		and .state.changes.commit == $b and .state.changes.base_commit == $b
		and .state.review.decision == "approve" and .state.deployment.status == "skipped"
		and .state.deployment.strategy == "branch"
		and (.state.deployment.reason | startswith("nothing to deploy: the run made no change"))' <<<"$output"
	run -0 forge events replay "$T"
	EVENTS=$output
	jq -e -s --arg b "$BASE" '[.[] | select(.type == "implement.no_change") | .payload]
		| length == 1 and .[0].commit == $b and .[0].reason == "the agent finished without changing a file"' <<<"$EVENTS"
	run -0 jq -r -s '.[] | select(.type == "phase.completed") | "\(.phase): \(.payload.reason)"' <<<"$EVENTS"
	assert_line "implement: attempt 1: no change: the agent finished without changing a file (forge/$T is at its base ${BASE:0:12}), validated"
	assert_line --regexp "^review: approve: nothing to review: the run made no change \\(risk low; "
	assert_line --regexp "^test: [0-9]+ tests passed \\(the run made no change: its base commit was tested\\)$"
	assert_line "deploy: nothing to deploy: the run made no change (forge/$T is at its base ${BASE:0:12})"
	jq -e -s '[.[] | select(.type == "deploy.finished" or .type == "run.merged")] | length == 0' <<<"$EVENTS"
	run -0 forge show "$T"
	assert_line "status    completed at deploy (no change)"
	assert_line "changes   none: the run made no change (its branch is at its base ${BASE:0:12})"
	assert_line "deploy    skipped (branch, staging): nothing to deploy: the run made no change (forge/$T is at its base ${BASE:0:12})"
	assert_line "next      forge gc"
	assert_line "why       the run made no change: nothing to merge; forge gc removes its worktree and branch"
	# nothing to merge: said, nothing recorded, and the run stays completed
	run -0 --separate-stderr forge merge "$T"
	assert_output "run $T made no change; nothing to merge (forge gc removes its worktree and branch)"
	[ "$(forge events replay "$T" | jq -s '[.[] | select(.type == "run.merged")] | length')" -eq 0 ]
	[ "$(forge status --json "$T" | jq -r .status)" != merged ]
	[ "$(git -C "$REPO" rev-parse HEAD)" = "$BASE" ]
}

@test "forge gc removes a completed run that made no change (worktree and branch), keeps its records; status and show then say removed" {
	no_change_run
	mkdir -p "$BATS_TEST_TMPDIR/gc-tmp"   # (a shared TMPDIR holds other tests' temp dirs, which gc lists)
	wt="$(run_worktree "$T")"
	[ -d "$wt" ]
	# (before: gc kept it without a word, and nothing ever removed it)
	TMPDIR="$BATS_TEST_TMPDIR/gc-tmp" run -0 forge gc --dry-run
	assert_output "$(printf '%s\n' "run $T (no change):" "would remove worktree $wt" \
		"would delete refs/heads/forge/$T" "would delete refs/forge/$T/base" "would remove 3 things of 1 run")"
	[ -d "$wt" ]
	TMPDIR="$BATS_TEST_TMPDIR/gc-tmp" run -0 forge gc
	assert_output "$(printf '%s\n' "run $T (no change):" "removed worktree $wt" \
		"deleted refs/heads/forge/$T" "deleted refs/forge/$T/base" "removed 3 things of 1 run")"
	[ ! -e "$wt" ]
	[ -z "$(git -C "$REPO" for-each-ref "refs/forge/$T" "refs/heads/forge/$T")" ]
	[ "$(git -C "$REPO" worktree list | wc -l)" -eq 1 ]
	# the record and events stay; status and show say what went
	# (before: both named the branch and worktree as if they were there)
	[ "$(forge status --json "$T" | jq -r .run.status)" = completed ]
	[ "$(forge events replay "$T" | jq -s '[.[] | select(.type == "implement.no_change")] | length')" -eq 1 ]
	run -0 forge status "$T"
	assert_line "branch   removed (was forge/$T)"
	assert_line "worktree removed (was $wt)"
	run -0 forge show "$T"
	assert_line "branch    removed (was forge/$T)"
	assert_line "worktree  removed (was $wt)"
	run -0 forge show --json "$T"
	jq -e '.removed == {branch: true, worktree: true} and .dry_run == false' <<<"$output"
	TMPDIR="$BATS_TEST_TMPDIR/gc-tmp" run -0 forge gc
	assert_output "nothing to remove"
	[ "$(dirname "$(dirname "$wt")")" = "$FORGE_WORKTREES" ]   # (out of the checkout)
	# a runs dir whose checkout is gone (its root file names it) is named, not removed
	mkdir -p "$FORGE_WORKTREES/gone-0123456789abcdef/T1"
	echo "$BATS_TEST_TMPDIR/gone" >"$FORGE_WORKTREES/gone-0123456789abcdef/root"
	TMPDIR="$BATS_TEST_TMPDIR/gc-tmp" run -0 forge gc
	assert_output "runs' worktrees of a checkout that is gone ($BATS_TEST_TMPDIR/gone): $FORGE_WORKTREES/gone-0123456789abcdef (rm -rf it when nothing in it is wanted)"
	[ -d "$FORGE_WORKTREES/gone-0123456789abcdef/T1" ]
}

@test "forge gc keeps a failed run that forge resume continues unless --resumable; a resume whose commits git pruned says its work is gone (hunt68 #3c)" {
	# review fails on the provider after implement committed: exit 5, "forge resume T runs it again"
	use_mock
	mkdir -p .forge "$BATS_TEST_TMPDIR/gc-tmp"
	echo '{"llm": {"max_retries": 0}, "review": {"ai_min_risk": "low"}}' >.forge/config.json
	script "$(jq -nc --argjson p "$PLAN" --argjson i "$IMPL" '$p + $i + [{fault: "server_error", times: "always"}]')"
	run -5 --separate-stderr forge run -q "add a mul operation" </dev/null
	T=$(last_trace)
	[[ "$stderr" == *"\`forge resume $T\` runs it again"* ]]
	wt="$(run_worktree "$T")"
	commit=$(git -C "$REPO" rev-parse "forge/$T")
	[ "$commit" != "$BASE" ]
	# (before: gc removed its worktree, branch and refs without a word)
	kept="run $T (failed): kept: it can be resumed (forge resume $T); forge gc --resumable removes it, and its work with it"
	TMPDIR="$BATS_TEST_TMPDIR/gc-tmp" run -0 forge gc --dry-run
	assert_output "$kept"
	TMPDIR="$BATS_TEST_TMPDIR/gc-tmp" run -0 forge gc
	assert_output "$kept"
	[ -d "$wt" ]
	[ "$(git -C "$REPO" rev-parse "forge/$T")" = "$commit" ]
	run -0 forge gc --help
	assert_output --partial "--resumable"
	# asked for: it goes, as any failed run does
	TMPDIR="$BATS_TEST_TMPDIR/gc-tmp" run -0 forge gc --resumable
	assert_output "$(printf '%s\n' "run $T (failed):" "removed worktree $wt" \
		"deleted refs/heads/forge/$T" "deleted refs/forge/$T/base" "removed 3 things of 1 run")"
	# git prunes the commits nothing refers to any more
	git -C "$REPO" reflog expire --expire=now --all
	git -C "$REPO" gc -q --prune=now
	run ! git -C "$REPO" cat-file -e "$commit"
	# the resume says the work is gone (before: "cannot resolve", "free
	# some space if the disk is full", at every resume), and the run ends
	script '[]'
	AFTER=$(last_seq)
	run -5 --separate-stderr forge resume -q "$T" </dev/null
	assert_equal "$stderr" "forge resume: run $T cannot be resumed: the commit ${commit:0:12} of its last checkpoint is no longer in the repository: the run's branch and refs were removed (forge gc --resumable, git branch -D) and git has pruned what they held since, so the run's work is gone; start the task again with \`forge run\` (forge gc removes what is left of this one)"
	[[ "$stderr" != *"disk"* ]]
	[ "$(last_seq)" -eq "$AFTER" ]	# (no phase ran)
	run -0 forge show "$T"
	assert_line "next      forge run 'add a mul operation'"
	assert_line "why       the run's work is gone (its branch was removed, then pruned by git), so it cannot be resumed: run the task again (forge gc removes what is left of this one)"
	# no longer resumable: not kept (nothing of it is left here)
	TMPDIR="$BATS_TEST_TMPDIR/gc-tmp" run -0 forge gc
	assert_output "nothing to remove"
}

@test "forge show of a dry run says it made no worktree or branch, and that its base was not resolved (not 'base HEAD (?)')" {
	use_mock
	script "$PLAN"
	run -0 --separate-stderr forge run --dry-run "add a mul operation" </dev/null
	T=$(last_trace)
	run -0 forge show "$T"
	assert_line "branch    none (a dry run makes no worktree or branch)"
	assert_line "base      HEAD (a dry run: not resolved to a commit)"
	refute_line --partial "(?)"
	refute_line --regexp "^worktree"
	run -0 forge show --json "$T"
	jq -e '.dry_run == true and .removed == {branch: false, worktree: false}' <<<"$output"
}

@test "forge gc keeps a no-change run that has a change now: a commit on its branch, or uncommitted changes in its worktree" {
	no_change_run
	T1=$T
	wt1="$(run_worktree "$T1")"
	no_change_run
	T2=$T
	wt2="$(run_worktree "$T2")"
	# a person commits on the first run's branch, edits the second's worktree
	echo "// more" >>"$wt1/calc.c"
	git -C "$wt1" commit -qam "a person's change"
	echo "// edit" >>"$wt2/calc.c"
	mkdir -p "$BATS_TEST_TMPDIR/gc-tmp"
	TMPDIR="$BATS_TEST_TMPDIR/gc-tmp" run -0 forge gc
	assert_line "run $T1 (completed): kept: its branch has a change against its base (forge diff $T1, git -C '$(run_worktree "$T1")' status)"
	assert_line "run $T2 (completed): kept: its worktree has uncommitted changes (forge diff $T2, git -C '$(run_worktree "$T2")' status)"
	[ -d "$wt1" ]
	[ -d "$wt2" ]
	grep -q "// edit" "$wt2/calc.c"
	git -C "$REPO" rev-parse -q --verify "refs/heads/forge/$T1" >/dev/null
	git -C "$REPO" rev-parse -q --verify "refs/heads/forge/$T2" >/dev/null
	run -0 forge status "$T1"
	assert_line "worktree $wt1"
}

@test "an edit saved when a failed implement is resumed reaches the resumed prompt; a no-change run says it is kept, and forge gc keeps it (hunt69 #1)" {
	# implement edits calc.c, then the provider fails: exit 5, the edit left in the worktree
	use_mock
	mkdir -p .forge "$BATS_TEST_TMPDIR/gc-tmp"
	echo '{"llm": {"max_retries": 0}}' >.forge/config.json
	script "$(jq -nc --argjson p "$PLAN" '$p + [{tool_calls: [{name: "write_file",
		input: {path: "NOTES.md", content: "mul: a * b\nsaved-line\n"}}]}, {fault: "overloaded", times: "always"}]')"
	run -5 --separate-stderr forge run -q --auto-approve "add a mul operation" </dev/null
	T=$(last_trace)
	[ -f "$(run_worktree "$T")/NOTES.md" ]
	# the resume saves it on refs/forge/T/saved/1; the implementer finishes without doing it again
	script '[{"tool_calls": [{"name": "finish", "input": {"summary": "nothing to change"}}]}]'
	AFTER=$(last_seq)
	run -0 --separate-stderr forge resume --auto-approve "$T" </dev/null
	saved="refs/forge/$T/saved/1"
	[ "$(git -C "$REPO" show "$saved:NOTES.md" | tail -1)" = saved-line ]
	from=$(git -C "$REPO" rev-parse --short=12 "forge/$T")
	# (before: the prompt said nothing of it)
	prompt=$(curl -sS -f "$MOCK_URL/_mock/requests" | jq -r --argjson a "$AFTER" \
		'[.[] | select(.seq > $a and (.body.system | tostring | test("You are the implementer")))][0].body.messages[0].content
		 | if type == "array" then .[0].text else . end')
	[[ "$prompt" == *"# Work saved from an interrupted attempt"* ]]
	[[ "$prompt" == *"## $saved"* ]]
	[[ "$prompt" == *"- NOTES.md (create, +2 -0)"* ]]
	[[ "$prompt" == *"+saved-line"* ]]
	[ "$(events_of "$T" implement.saved_work | jq -c .saved)" = "[{\"ref\":\"$saved\",\"files\":1}]" ]
	# the summary, show and next name it (before: "no change: forge gc removes its worktree and branch")
	text="$saved (1 file, +2 -0: NOTES.md): git diff $from $saved shows it"
	assert_line "Run $T completed (no change)"
	assert_line "  saved     work saved from an interrupted attempt, not on the branch: $text"
	assert_line "  next      git diff $from $saved"
	assert_line "  why       the run made no change, but work saved from an interrupted attempt is kept on $text. forge gc keeps the run while it is there (git update-ref -d REF lets it go)"
	run -0 forge show "$T"
	assert_line "saved     work saved from an interrupted attempt, not on the branch: $text"
	assert_line "next      git diff $from $saved"
	run -0 forge show --json "$T"
	jq -e --arg r "$saved" '.saved | length == 1 and .[0].ref == $r and .[0].files[0].path == "NOTES.md"' <<<"$output"
	# gc keeps it, --dry-run too (before: "would delete refs/forge/T/saved/1")
	kept="run $T (completed): kept: work saved from an interrupted attempt is not on its branch: $text; once you have what you need of it, let it go (git update-ref -d REF) and forge gc removes the run"
	TMPDIR="$BATS_TEST_TMPDIR/gc-tmp" run -0 forge gc --dry-run
	assert_output "$kept"
	TMPDIR="$BATS_TEST_TMPDIR/gc-tmp" run -0 forge gc
	assert_output "$kept"
	git -C "$REPO" rev-parse -q --verify "$saved" >/dev/null
	# let go: the run is an ordinary no-change run again
	git -C "$REPO" update-ref -d "$saved"
	run -0 forge show "$T"
	refute_line --partial "saved "
	assert_line "next      forge gc"
	TMPDIR="$BATS_TEST_TMPDIR/gc-tmp" run -0 forge gc
	assert_line "run $T (no change):"
	[ ! -e "$(run_worktree "$T")" ]
}

@test "forge gc keeps a no-change run whose saved ref git cannot read (a missing object): it says why, the ref stays" {
	no_change_run
	mkdir -p "$BATS_TEST_TMPDIR/gc-tmp"
	# a saved ref naming an object the repository lacks (a damaged or
	# partial clone): git cannot tell what work it holds
	saved="refs/forge/$T/saved/1"
	mkdir -p "$REPO/.git/refs/forge/$T/saved"
	echo 0123456789abcdef0123456789abcdef01234567 >"$REPO/.git/$saved"
	# (before: taken for "nothing saved": "run T (no change):" and the ref deleted)
	TMPDIR="$BATS_TEST_TMPDIR/gc-tmp" run -0 forge gc
	assert_line --regexp "^run $T \(completed\): kept: cannot tell whether its saved refs \(refs/forge/$T/saved/\) hold work its branch lacks: .+"
	refute_line "run $T (no change):"
	[ -f "$REPO/.git/$saved" ]
	[ -d "$(run_worktree "$T")" ]
	# show still shows the run, without the saved part
	run -0 forge show --json "$T"
	jq -e '.saved == []' <<<"$output"
}

@test "a saved ref whose work the branch holds (done again by the resumed attempt) is not named, and gc goes on as before" {
	use_mock
	mkdir -p .forge "$BATS_TEST_TMPDIR/gc-tmp"
	echo '{"llm": {"max_retries": 0}}' >.forge/config.json
	script "$(jq -nc --argjson p "$PLAN" '$p + [{tool_calls: [{name: "write_file",
		input: {path: "NOTES.md", content: "mul\n"}}]}, {fault: "overloaded", times: "always"}]')"
	run -5 --separate-stderr forge run -q --auto-approve "add a mul operation" </dev/null
	T=$(last_trace)
	script '[{"tool_calls": [{"name": "write_file", "input": {"path": "NOTES.md", "content": "mul\n"}}]},
		{"tool_calls": [{"name": "finish", "input": {"summary": "notes"}}]}]'
	run -0 --separate-stderr forge resume --auto-approve "$T" </dev/null
	git -C "$REPO" rev-parse -q --verify "refs/forge/$T/saved/1" >/dev/null
	refute_line --partial "  saved "
	assert_line "  next      forge diff $T && forge merge $T"
	run -0 forge show --json "$T"
	jq -e '.saved == []' <<<"$output"
}

@test "a merge deploy of a run that changed nothing is skipped, not 'healthy' and recorded as merged" {
	echo '{"deploy": {"strategy": "merge"}}' >"$BATS_TEST_TMPDIR/merge.json"
	no_change_run --config "$BATS_TEST_TMPDIR/merge.json"
	[[ "$output" == *"  deploy    skipped (merge): nothing to deploy: the run made no change"* ]]
	run -0 forge status --json "$T"
	jq -e '.state.deployment.status == "skipped" and .state.deployment.strategy == "merge"' <<<"$output"
	# (before: "healthy" -- "'main' was already at forge/T" -- and a
	# run.merged, so the run showed as merged: forge merge "merged already")
	[ "$(forge events replay "$T" | jq -s '[.[] | select(.type == "run.merged")] | length')" -eq 0 ]
	run -0 --separate-stderr forge merge "$T"
	assert_output "run $T made no change; nothing to merge (forge gc removes its worktree and branch)"
}

implementer_called_after() {
	mock_logged "You are the implementer" "$1" && [ "$(calls implementer "$1")" -ge 1 ]
}

# until_true CMD...: poll until CMD succeeds (it waits on an event, not a time).
until_true() {
	local i
	for i in $(seq 600); do
		"$@" && return 0
		sleep 0.05
	done
	echo "timed out waiting for: $*" >&2
	return 1
}

@test "three resumes at once: the one holding the lease runs, the others are refused (exit 4); cancel stops it (130, cancelled)" {
	fail_implement
	# implement's first model call blocks until the run is cancelled
	script "$(jq -nc --argjson i "$IMPL" '[$i[0] + {delay_ms: 60000}] + $i[1:]')"
	AFTER=$(last_seq)
	setsid forge resume -q "$T" </dev/null >"$BATS_TEST_TMPDIR/r1.out" 2>"$BATS_TEST_TMPDIR/r1.err" 3>&- &
	R1=$!
	echo "$R1" >"$BATS_TEST_TMPDIR/r1.pid"
	until_true implementer_called_after "$AFTER"
	# the run is live: two more resumes at once are refused
	forge resume -q "$T" </dev/null >"$BATS_TEST_TMPDIR/r2.out" 2>"$BATS_TEST_TMPDIR/r2.err" 3>&- &
	R2=$!
	forge resume -q "$T" </dev/null >"$BATS_TEST_TMPDIR/r3.out" 2>"$BATS_TEST_TMPDIR/r3.err" 3>&- &
	R3=$!
	rc2=0; wait "$R2" || rc2=$?
	rc3=0; wait "$R3" || rc3=$?
	[ "$rc2" -eq 4 ]
	[ "$rc3" -eq 4 ]
	grep -q "run $T is already running: forge-supervisor, pid $R1 on " "$BATS_TEST_TMPDIR/r2.err"
	grep -q "forge cancel $T" "$BATS_TEST_TMPDIR/r3.err"
	[ "$(calls implementer "$AFTER")" -eq 1 ]
	# a phase run by hand on the run's state is refused too
	run -0 forge status --json "$T"
	state=$(jq -c .state <<<"$output")
	run -4 --separate-stderr forge-implement <<<"$state"
	[[ "$stderr" == *"trace $T is already being worked on: forge-supervisor, pid $R1"* ]]
	run -0 forge status "$T"
	assert_line --regexp "^status +running at implement"
	# cancel stops the live run; it stays cancelled
	run -0 --separate-stderr forge cancel "$T"
	assert_line "cancelled $T"
	rc1=0; wait "$R1" || rc1=$?
	[ "$rc1" -eq 130 ]
	grep -q "run $T was cancelled" "$BATS_TEST_TMPDIR/r1.err"
	run -0 forge status --json "$T"
	jq -e '.run.status == "cancelled"' <<<"$output"
	[ "$(sqlite3 "$FORGE_DB" "select count(*) from leases where trace_id = '$T'")" -eq 0 ]
	run -0 forge events replay "$T"
	jq -e -s '([.[] | select(.type == "run.cancelled")] | length == 1) and
	  ((map(select(.type == "run.cancelled"))[0].ts) as $c | [.[] | select(.type == "run.completed" and .ts > $c)] == [])' <<<"$output"
	[ "$(calls implementer "$AFTER")" -eq 1 ]
	run -1 --separate-stderr forge resume "$T" </dev/null
	[[ "$stderr" == *"already cancelled"* ]]
}

@test "a run left running by a dead process shows as interrupted; resume takes its lease over and completes it" {
	fail_implement
	# as if the process had died before it could record the failure
	true & dead=$!
	wait "$dead"
	sqlite3 "$FORGE_DB" "update runs set status = 'running', completed_at = null where id = '$T';
		insert into leases (trace_id, holder, pid, host, program, acquired_at) values ('$T', 'GONE', $dead, '$(hostname)', 'forge-supervisor', '2026-01-01T00:00:00.000Z')"
	run -0 forge status "$T"
	assert_line --regexp "^status +interrupted at implement"
	run -0 forge history --json
	jq -e --arg t "$T" 'select(.trace_id == $t) | .status == "interrupted"' <<<"$output"
	run -0 forge history
	assert_line --regexp "^$T +interrupted "
	script "$IMPL"
	run -0 --separate-stderr forge resume -q "$T" </dev/null
	run -0 forge status --json "$T"
	jq -e '.run.status == "completed"' <<<"$output"
	run -0 events_of "$T" run.lease_taken_over
	jq -e --argjson p "$dead" '.pid == $p' <<<"$output"
	[ "$(sqlite3 "$FORGE_DB" "select count(*) from leases")" -eq 0 ]
}

@test "forge-test on a state: refused while a live process holds the trace, not when it is its supervisor's (FORGE_LEASE)" {
	state='{"kind":"state","v":1,"trace_id":"t1","phase":"review","status":"ok","task":{"description":"x"},
		"review":{"findings":[],"decision":"approve"}}'
	state=$(jq -c . <<<"$state")
	# alone it takes the lease and gives it back
	run -0 --separate-stderr forge-test <<<"$state"
	[ "$(sqlite3 "$FORGE_DB" "select count(*) from leases")" -eq 0 ]
	# a live process of the lease's program holds it
	cp /bin/sleep "$BATS_TEST_TMPDIR/forge-supervisor"
	"$BATS_TEST_TMPDIR/forge-supervisor" 600 3>&- &
	live=$!
	sqlite3 "$FORGE_DB" "insert into leases (trace_id, holder, pid, host, program, acquired_at) values ('t1', 'HOLDER1', $live, '$(hostname)', 'forge-supervisor', '2026-01-01T00:00:00.000Z')"
	run -4 --separate-stderr forge-test <<<"$state"
	kill "$live"
	[[ "$stderr" == *"trace t1 is already being worked on: forge-supervisor, pid $live"* ]]
	[ -z "$output" ]
	run -0 --separate-stderr env FORGE_LEASE=HOLDER1 forge-test <<<"$state"
	tail -n 1 <<<"$output" | jq -e '.status == "ok"'
	# the supervisor's lease is left to the supervisor
	[ "$(sqlite3 "$FORGE_DB" "select holder from leases where trace_id = 't1'")" = "HOLDER1" ]
}

@test "a phase its supervisor started (its parent is \$FORGE_SUPERVISOR_PID) takes \$FORGE_LEASE as that supervisor's without reading the lease; without a supervisor the lease is read" {
	state='{"kind":"state","v":1,"trace_id":"t1","phase":"review","status":"ok","task":{"description":"x"},
		"review":{"findings":[],"decision":"approve"}}'
	state=$(jq -c . <<<"$state")
	run -0 --separate-stderr forge-test <<<"$state"     # (makes the database)
	# the lease row names another holder, a live process
	cp /bin/sleep "$BATS_TEST_TMPDIR/forge-supervisor"
	"$BATS_TEST_TMPDIR/forge-supervisor" 600 3>&- &
	live=$!
	sqlite3 "$FORGE_DB" "insert into leases (trace_id, holder, pid, host, program, acquired_at) values ('t1', 'HOLDER1', $live, '$(hostname)', 'forge-supervisor', '2026-01-01T00:00:00.000Z')"
	# started by the process the variable names: the supervisor vouches
	# for its lease (it checked it in the commit that started the phase),
	# and the phase does not open the database for it before its first event
	run -0 --separate-stderr bash -c 'FORGE_SUPERVISOR_PID=$$ FORGE_LEASE=HOLDER2 forge-test <<<"$1"; exit $?' _ "$state"
	tail -n 1 <<<"$output" | jq -e '.status == "ok"'
	# without a supervisor (a shell that inherited the variable): the lease
	# is read, and refused (a phase whose $FORGE_SUPERVISOR_PID is not its
	# parent stops at once, exit 130)
	run -4 --separate-stderr env FORGE_LEASE=HOLDER2 forge-test <<<"$state"
	[[ "$stderr" == *"trace t1 is already being worked on: forge-supervisor, pid $live"* ]]
	kill "$live"
	[ "$(sqlite3 "$FORGE_DB" "select holder from leases where trace_id = 't1'")" = "HOLDER1" ]
}

@test "a write of the run's record that fails mid-run stops it there (exit 5), not a completed run" {
	forge-db migrate >/dev/null
	# the checkpoint after the plan cannot be written (as on a full disk)
	sqlite3 "$FORGE_DB" "create trigger no_room before insert on checkpoints when new.phase = 'plan' begin select raise(abort, 'database or disk is full'); end"
	demo_replay
	run -5 --separate-stderr forge run "$TASK" </dev/null
	# (before: exit 0, "completed", review, test and deploy run unrecorded)
	[[ "$stderr" == *"forge run: the run cannot be recorded: "*"database or disk is full"*"; it stops here (forge resume "* ]]
	T=$(forge history --json -n 1 | jq -r .trace_id)
	[ "$(forge status --json "$T" | jq -r .run.status)" = paused ]
	[ -z "$(git -C "$REPO" log --oneline "main..forge/$T" 2>/dev/null)" ]
	# the disk has room again: resume carries it on
	sqlite3 "$FORGE_DB" "drop trigger no_room"
	run -0 --separate-stderr forge resume --auto-approve "$T" </dev/null
	[ "$(forge status --json "$T" | jq -r .run.status)" = completed ]
}

@test "a run whose row cannot be written leaves no worktree and no branch (exit 5)" {
	forge-db migrate >/dev/null   # makes the database
	sqlite3 "$FORGE_DB" "create trigger no_runs before insert on runs begin select raise(abort, 'no room for runs'); end"
	demo_replay
	run -5 --separate-stderr forge run "$TASK" </dev/null
	[[ "$stderr" == *"no room for runs"* ]]
	[ -z "$(git -C "$REPO" branch --list 'forge/*')" ]
	no_run_worktrees
	[ "$(git -C "$REPO" worktree list | wc -l)" -eq 1 ]
}

# ---- the time limits bound what is in flight (hunt52 #1) -------------------

# hang_implement JSON-CONFIG: implement's first call streams keep-alive pings
# and never its answer (pause_file never made); forge run under CONFIG.
hang_implement() {
	use_mock
	mkdir -p .forge
	echo "$1" >.forge/config.json
	script "$(jq -nc --argjson p "$PLAN" --arg f "$BATS_TEST_TMPDIR/never" \
		'$p + [{text: "thinking", pause_after: 1, pause_file: $f, ping_ms: 200, times: "always"}]')"
	run -3 --separate-stderr timeout 100 forge run -q "add a mul operation" </dev/null
	T=$(last_trace)
}

@test "a model call kept alive by pings is cut at the phase's time limit: the time breaker trips (exit 3), not the provider" {
	# (before: the stall timer never fired, bytes kept coming: the run hung)
	hang_implement '{"safety": {"time_s": {"implement": 2}}}'
	run -0 events_of "$T" breaker.tripped
	jq -se 'length == 1 and .[0].breaker == "time" and .[0].limit_ms == 2000' <<<"$output"
	run -0 forge status --json "$T"
	jq -e '.run.status == "failed" and (.run.error | contains("could not be reached") | not)' <<<"$output"
}

@test "a model call kept alive by pings is cut at the run's time limit (safety.time_s.total): exit 3" {
	hang_implement '{"safety": {"time_s": {"total": 2, "implement": 600}}}'
	run -0 events_of "$T" breaker.tripped
	jq -se 'length >= 1 and all(.breaker == "time")' <<<"$output"
	jq -se 'any(.reason | contains("safety.time_s.total"))' <<<"$output"
}

@test "a breaker that stops the run says so on stderr with -q and --json too: the run, the breaker, the command that continues it (hunt68 #3)" {
	# (before: -q printed nothing at all, exit 3; --json only the phase's
	# own "tripped" line, no run id and no way on)
	use_mock
	script "$(jq -nc --argjson p "$PLAN" --argjson i "$IMPL" '$p + $i')"
	run -3 --separate-stderr forge run -q --budget 0.03 "add a mul operation" </dev/null
	T=$(last_trace)
	[ -z "$output" ]
	next="\`forge resume --budget USD $T\` continues it (the run's budget is spent: USD is its new budget)"
	assert_equal "$stderr" "forge run: run $T stopped: breaker cost tripped in implement: cost \$0.0144 reached the limit of \$0.0104 (this phase's share of what the run's budget, safety.cost.per_run and safety.cost.per_day leave); $next"
	# a run-level breaker (the resume as it is: the budget is spent), the same way
	run -3 --separate-stderr forge resume -q "$T" </dev/null
	[ -z "$output" ]
	assert_equal "$stderr" "forge resume: run $T stopped: breaker budget tripped: the run has cost \$0.0340, its budget is \$0.03 (forge resume --budget USD gives it more); $next"
	# --json: the same line on stderr; stdout says it as a failed run's
	# does: the breaker's event, the run's end with its reason, and last
	# the state, tripped (DESIGN.md section 2)
	script "$(jq -nc --argjson p "$PLAN" --argjson i "$IMPL" '$p + $i')"
	run -3 --separate-stderr forge run --json --budget 0.03 "add a mul operation" </dev/null
	T=$(last_trace)
	[[ "$stderr" == *$'\n'"forge run: run $T stopped: breaker cost tripped in implement: cost \$0.0144 reached the limit of \$0.0104 (this phase's share of what the run's budget, safety.cost.per_run and safety.cost.per_day leave); \`forge resume --budget USD $T\` continues it (the run's budget is spent: USD is its new budget)" ]]
	jq -se --arg t "$T" '(last | .kind == "state" and .status == "tripped" and .trace_id == $t) and
		([.[] | select(.type == "breaker.tripped") | .payload.breaker] == ["cost"]) and
		([.[] | select(.type == "run.completed") | .payload.reason] ==
		 ["a circuit breaker tripped in implement: cost $0.0144 reached the limit of $0.0104 (this phase'"'"'s share of what the run'"'"'s budget, safety.cost.per_run and safety.cost.per_day leave)"])' <<<"$output"
	# the command it names continues the run
	script "$IMPL"
	run -0 --separate-stderr forge resume -q --budget 1 "$T" </dev/null
	[ -z "$stderr" ]
	[ "$(forge status --json "$T" | jq -r .run.status)" = completed ]
}

@test "tool calls cut at llm.max_tokens are no tool errors: the run's error-rate breaker does not stop it, the model is told the limit (both providers)" {
	# (before: three cut calls tripped the error_rate breaker right after
	# implement ended ok, exit 3, and a plain resume then completed the run)
	use_mock
	cut='{"tool_calls":[{"name":"write_file","arguments":"{\"path\":\"calc.c\",\"content\":\"int"}],"stop_reason":"max_tokens"}'
	for prov in anthropic openai; do
		url=$MOCK_URL
		[ $prov = openai ] && url=$MOCK_URL/v1
		script "$(jq -nc --argjson p "$PLAN" --argjson i "$IMPL" --argjson c "$cut" '$p + [$c, $c, $c] + $i')"
		AFTER=$(last_seq)
		FORGE_PROVIDER=$prov FORGE_BASE_URL=$url OPENAI_API_KEY=test-key \
			run -0 --separate-stderr forge run -q "add a mul operation" </dev/null
		T=$(last_trace)
		[ "$(forge status --json "$T" | jq -r .run.status)" = completed ]
		[ -z "$(events_of "$T" breaker.tripped)" ]
		[ -z "$(events_of "$T" tool.failed)" ]
		run -0 events_of "$T" tool.cut
		[ "${#lines[@]}" -eq 3 ]
		jq -e '.tool == "write_file" and .max_tokens == 8192' <<<"${lines[0]}"
		# the model is told its call was cut at that limit, and to make smaller calls
		curl -sS -f "$MOCK_URL/_mock/requests" | jq -e --argjson after "$AFTER" '[.[] | select(.seq > $after) |
			.body.messages | tostring | select(test("write_file: your answer reached the limit of 8192 output tokens.*Make the change in smaller calls"))] | length >= 3'
	done
}

@test "-v shows a tool call cut at llm.max_tokens as one line of its phase, as it shows the calls that ran" {
	# (before: nothing, the call that ran next shown as if it were the first)
	use_mock
	cut='{"tool_calls":[{"name":"write_file","arguments":"{\"path\":\"calc.c\",\"content\":\"int"}],"stop_reason":"max_tokens"}'
	script "$(jq -nc --argjson p "$PLAN" --argjson i "$IMPL" --argjson c "$cut" '$p + [$c] + $i')"
	run -0 --separate-stderr forge run -v "add a mul operation" </dev/null
	run -0 grep -cF '  [implement] forge-implement: write_file cut at the output limit of 8192 tokens: nothing ran' <<<"$stderr"
	assert_output 1
	# without -v, none
	script "$(jq -nc --argjson p "$PLAN" --argjson i "$IMPL" --argjson c "$cut" '$p + [$c] + $i')"
	run -0 --separate-stderr forge run "add a mul operation" </dev/null
	[[ "$stderr" != *"cut at the output limit"* ]]
}

@test "tool errors of a phase that ended ok do not stop the run before the next phase (the error-rate breaker)" {
	# (before: implement's failed reads tripped the run's breaker once
	# implement had finished ok, exit 3; a resume, which does not count
	# them, went on with nothing changed)
	use_mock
	# (each failed call's reflection asks the model too: the text step)
	miss='[{"tool_calls":[{"name":"read_file","input":{"path":"a.c"}}]}, {"text":"noted"},
	       {"tool_calls":[{"name":"read_file","input":{"path":"b.c"}}]}, {"text":"noted"},
	       {"tool_calls":[{"name":"read_file","input":{"path":"c.c"}}]}, {"text":"noted"}]'
	script "$(jq -nc --argjson p "$PLAN" --argjson i "$IMPL" --argjson m "$miss" '$p + $m + $i')"
	run -0 --separate-stderr forge run -q "add a mul operation" </dev/null
	T=$(last_trace)
	[ "$(forge status --json "$T" | jq -r .run.status)" = completed ]
	[ -z "$(events_of "$T" breaker.tripped)" ]
	# (over the run's limit of 25%: the breaker's to judge had implement not ended ok)
	failed=$(events_of "$T" tool.failed | wc -l)
	ran=$(events_of "$T" tool.executed | wc -l)
	[ "$failed" -ge 3 ] && [ $((failed * 4)) -ge $((failed + ran)) ]
}

@test "a model call that waits to be retried says so: an llm.retry event, and a line in forge run's view (not with -q)" {
	# (before: the run sat silent through each wait, up to llm.retry_max_delay_s)
	use_mock
	busy='[{"fault":"rate_limit","retry_after_ms":1500},{"fault":"overloaded","retry_after":"1"}]'
	script "$(jq -nc --argjson p "$PLAN" --argjson i "$IMPL" --argjson b "$busy" '$p + $b + $i')"
	run -0 --separate-stderr forge run "add a mul operation" </dev/null
	T=$(last_trace)
	run -0 events_of "$T" llm.retry
	assert_output '{"attempt":2,"max_attempts":3,"status":429,"wait_s":1.5,"reason":"rate limited"}
{"attempt":3,"max_attempts":3,"status":529,"wait_s":1,"reason":"provider overloaded"}'
	[[ $stderr == *$'\n'"    implement: rate limited (429), retrying in 1.5 s (attempt 2 of 3)"$'\n'* ]]
	[[ $stderr == *$'\n'"    implement: provider overloaded (529), retrying in 1 s (attempt 3 of 3)"$'\n'* ]]
	# (said once: the phase itself says it only when run by hand)
	[[ $stderr != *"forge-implement: rate limited"* ]]
	# -q: no line; the events as before
	script "$(jq -nc --argjson p "$PLAN" --argjson i "$IMPL" --argjson b "$busy" '$p + $b + $i')"
	run -0 --separate-stderr forge run -q "add a mul operation" </dev/null
	[[ $stderr != *retrying* ]]
	[ "$(events_of "$(last_trace)" llm.retry | wc -l)" -eq 2 ]
}

@test "a provider that stays rate limited or overloaded after every retry is said to be so, not 'could not be reached': wait, then resume (both providers)" {
	use_mock
	mkdir -p .forge
	echo '{"llm": {"max_retries": 0}}' >.forge/config.json
	script "$(jq -nc --argjson p "$PLAN" '$p + [{fault: "overloaded", times: "always"}]')"
	run -5 --separate-stderr forge run "add a mul operation" </dev/null
	T=$(last_trace)
	[[ $stderr == *"forge-implement: failed: the provider is overloaded (529) after 1 attempt: anthropic: HTTP 529 overloaded_error"* ]]
	[[ $stderr == *"forge run: node 'implement' failed; the provider's trouble passes: wait a while, then \`forge resume $T\` runs it again"* ]]
	[[ $stderr$output != *"could not be reached"* && $stderr != *"once what failed is fixed"* ]]
	assert_line "  next      forge resume $T"
	assert_line --regexp "^  why +the provider's trouble passes \(the reason above\): wait a while first"
	# a 429 without retry-after: when the spent limit resets, as the headers say
	# (OpenAI's x-ratelimit-reset-requests "1s", its remaining requests 0)
	script "$(jq -nc --argjson p "$PLAN" '$p + [{fault: "rate_limit", times: "always"}]')"
	FORGE_PROVIDER=openai FORGE_BASE_URL=$MOCK_URL/v1 OPENAI_API_KEY=test-key \
		run -5 --separate-stderr forge run -q "add a mul operation" </dev/null
	[[ $stderr == *"node 'implement' failed: the provider refused: rate limited (429) after 1 attempt: openai: HTTP 429"*"; the rate limit resets in 1 s (at "[0-9][0-9]:[0-9][0-9]:[0-9][0-9]")"* ]]
	[[ $stderr == *"the provider's trouble passes: wait a while, then \`forge resume $(last_trace)\` runs it again"* ]]
	[[ $stderr != *"could not be reached"* ]]
	# a 500: the provider failed
	script "$(jq -nc --argjson p "$PLAN" '$p + [{fault: "server_error", times: "always"}]')"
	run -5 --separate-stderr forge run -q "add a mul operation" </dev/null
	[[ $stderr == *"node 'implement' failed: the provider failed (500) after 1 attempt: anthropic: HTTP 500"* ]]
}

@test "a phase that ends ok leaves out its own tool errors only: a node still running beside it counts with its errors (the error-rate breaker)" {
	# (before: plan's ok end left out every call made before it, the four
	# failed ones of the node running beside it too; the node after plan
	# started and the run completed)
	use_mock
	marks=$BATS_TEST_TMPDIR/marks
	mkdir -p "$marks"
	# beside: four failed tool calls, then it waits until the node after plan
	# has started or the run has stopped (bounded), and ends ok
	cat >"$BATS_TEST_TMPDIR/beside.sh" <<-EOF
		#!/bin/sh
		state=\$(head -n 1)
		trace=\$(printf '%s' "\$state" | jq -r .trace_id)
		for i in 1 2 3 4; do
			printf '{"kind":"event","id":"01AAAAAAAAAAAAAAAAAAAAAAA%d","trace_id":"%s","ts":"%s","source":"beside","phase":null,"type":"tool.failed","payload":{"tool":"read_file","error":"no such file"}}\n' "\$i" "\$trace" "\$(date -u +%Y-%m-%dT%H:%M:%S.%3NZ)"
		done
		touch "$marks/failed"
		n=0
		until [ -e "$marks/after" ] || FORGE_DB="$FORGE_DB" "$FORGE_BINDIR/forge" events replay "\$trace" | grep -q breaker.tripped; do
			n=\$((n + 1))
			[ \$n -lt 600 ] || exit 3
			sleep 0.05
		done
		printf '%s\n' "\$state"
	EOF
	cat >"$BATS_TEST_TMPDIR/after.sh" <<-EOF
		#!/bin/sh
		touch "$marks/after"
		head -n 1
	EOF
	chmod +x "$BATS_TEST_TMPDIR/beside.sh" "$BATS_TEST_TMPDIR/after.sh"
	jq -n --arg b "$BATS_TEST_TMPDIR/beside.sh" --arg a "$BATS_TEST_TMPDIR/after.sh" \
		'{pipeline: "beside", version: 1, nodes: [{id: "plan", phase: "plan"}, {id: "beside", program: $b},
		  {id: "after", program: $a, needs: ["plan"]}]}' >"$BATS_TEST_TMPDIR/p.json"
	# plan answers once beside's failed calls are in
	script "$(jq -nc --argjson p "$PLAN" --arg f "$marks/failed" '[$p[0] + {wait_file: $f}] + $p[1:]')"
	run -3 --separate-stderr forge run -q --pipeline "$BATS_TEST_TMPDIR/p.json" --jobs 2 "add a mul operation" </dev/null
	T=$(last_trace)
	[ ! -e "$marks/after" ]
	run -0 events_of "$T" breaker.tripped
	jq -e '.breaker == "error_rate" and (.reason | test("tool error rate 100% over 4 calls"))' <<<"$output"
	[ "$(forge status --json "$T" | jq -r '[.run.status, .state.nodes.plan, .state.nodes.after] | join(" ")')" = "failed done pending" ]
}

# plan_cut STEP: forge-plan's first call, answered by STEP, stalls forever
# after its pause_after events (the pause_file is never made): only the
# phase's time limit (safety.time_s.plan, 2 s) ends it.
plan_cut() {
	mkdir -p .forge
	echo '{"safety": {"time_s": {"plan": 2}}}' >.forge/config.json
	script "$(jq -nc --argjson s "$1" --arg f "$BATS_TEST_TMPDIR/never" '[$s + {pause_file: $f}]')"
	run -3 --separate-stderr timeout 100 forge-plan --task "add a mul operation" </dev/null
}

@test "a call the phase's time limit cuts once sent is billed by estimate, with its llm.called event (hunt56 #3)" {
	# (before: 0 tokens, cost null, no llm.called, "no answer ... within the time left")
	use_mock
	# OpenAI: 100 events of the answer arrived; its usage comes only at the end
	export FORGE_PROVIDER=openai FORGE_BASE_URL="$MOCK_URL/v1" OPENAI_API_KEY=test-key FORGE_MODEL=gpt-4o
	plan_cut "$(jq -nc '{text: ([range(300)] | map("word") | join(" ")),
		usage: {input_tokens: 100000, output_tokens: 10000}, pause_after: 100}')"
	[[ $stderr == *"tripped"* ]]
	local events=$output
	run -0 db_q "SELECT input_tokens > 1000, output_tokens BETWEEN 50 AND 150, cost_usd > 0,
		error LIKE '%the answer from % was cut off by the time limit left to the call, after % tokens and % s%'
		FROM llm_calls WHERE phase = 'plan'"
	assert_output "1|1|1|1"
	# marked as estimated, as a Ctrl-C's is; the state counts it
	run -0 jq -sc 'map(select(.type == "llm.called")) | [length, (.[0].cost.usd > 0), .[0].payload.usage_estimated]' <<<"$events"
	assert_output "[1,true,true]"
	run -0 jq -sc 'map(select(.kind == "state")) | .[-1].cost.usd > 0' <<<"$events"
	assert_output true
}

@test "an Anthropic call the phase's time limit cuts before message_start is billed its input (hunt56 #3)" {
	use_mock
	plan_cut '{"text": "never seen", "usage": {"input_tokens": 100000, "output_tokens": 10}, "pause_after": 0}'
	local events=$output
	# (the request asked for the prompt cache: its input is estimated as a
	# cache write, the most it can cost)
	run -0 db_q "SELECT input_tokens + cache_write_tokens > 1000, cost_usd > 0, error LIKE '%no answer from % within the time left%'
		FROM llm_calls WHERE phase = 'plan'"
	assert_output "1|1|1"
	run -0 jq -sc 'map(select(.type == "llm.called")) | [length, (.[0].cost.usd > 0)]' <<<"$events"
	assert_output "[1,true]"
	run -0 jq -sc 'map(select(.kind == "state")) | .[-1].cost.usd > 0' <<<"$events"
	assert_output true
}

@test "a command under the phase's time limit ends with it, not at its own timeout" {
	use_mock
	mkdir -p .forge
	# (sandbox.command_timeout_s, by default longer than the guard's 100 s:
	# only the phase's 2 s can end it in time)
	echo '{"safety": {"time_s": {"implement": 2}}}' >.forge/config.json
	script "$(jq -nc --argjson p "$PLAN" \
		'$p + [{tool_calls: [{name: "run_command", input: {command: "sleep 300"}}]}]')"
	run -3 --separate-stderr timeout 100 forge run -q "add a mul operation" </dev/null
	T=$(last_trace)
	run -0 --separate-stderr events_of "$T" tool.failed
	jq -se 'length == 1 and .[0].tool == "run_command" and .[0].data.timed_out == true' <<<"$output"
	run -0 events_of "$T" breaker.tripped
	jq -se 'length == 1 and .[0].breaker == "time"' <<<"$output"
}

# ---- a model failure says whose it is to mend (hunt52 #4) ------------------

@test "a key the provider rejects is not 'could not be reached', and the next step says to fix it before resuming" {
	use_mock
	mkdir -p .forge
	script "$(jq -nc --argjson p "$PLAN" '$p + [{fault: "auth", times: "always"}]')"
	run -5 --separate-stderr forge run "add a mul operation" </dev/null
	T=$(last_trace)
	[[ "$stderr" == *"the provider refused the request"*"the API key was rejected"* ]]
	[[ "$stderr$output" != *"could not be reached"* ]]
	assert_line "  next      forge resume $T"
	assert_line --regexp "^  why +first fix what the provider refused "
}

@test "a model the provider does not serve names the setting that chose it (a phase's own: --model does not change it), is not asked again, and resumes once it is changed (both providers)" {
	use_mock
	mkdir -p .forge
	echo '{"llm": {"phases": {"implement": {"model": "claude-haiku-4-5"}}}}' >.forge/config.json
	script "$(jq -nc --argjson p "$PLAN" '$p + [{fault: "error", status: 404, type: "not_found_error",
		message: "model: claude-haiku-4-5", times: "always"}]')"
	run -5 --separate-stderr forge run "add a mul operation" </dev/null
	T=$(last_trace)
	# (before: "unknown model 'claude-haiku-4-5': model: claude-haiku-4-5; check --model",
	# and --model does not change a phase's own model)
	[[ "$stderr" == *"[implement] forge-implement: failed: the provider refused the request: anthropic: unknown model 'claude-haiku-4-5', chosen by llm.phases.implement.model (project: $REPO/.forge/config.json): model: claude-haiku-4-5; set llm.phases.implement.model to a model the provider serves (--model does not change a phase's own model)"* ]]
	[[ "$stderr" != *"check --model"* ]]
	[ "$(calls implementer)" -eq 1 ]
	assert_line "  next      forge resume $T"
	echo '{}' >.forge/config.json
	script "$IMPL"
	AFTER=$(last_seq)
	run -0 --separate-stderr forge resume -q "$T" </dev/null
	[ "$(calls planner "$AFTER")" -eq 0 ]
	run -0 forge status --json "$T"
	jq -e '.run.status == "completed"' <<<"$output"
	# OpenAI, a phase alone: the phase's own model, and llm.model by --model
	export FORGE_PROVIDER=openai FORGE_BASE_URL="$MOCK_URL/v1" OPENAI_API_KEY=test-key
	mock_reset
	script '[{"fault": "error", "status": 404, "type": "invalid_request_error", "code": "model_not_found",
		"message": "The model `gpt-4o-mini` does not exist or you do not have access to it.", "times": "always"}]'
	echo '{"llm": {"phases": {"plan": {"model": "gpt-4o-mini"}}}}' >.forge/config.json
	run -5 --separate-stderr forge-plan --task "add a mul operation" </dev/null
	[[ "$stderr" == *"openai: unknown model 'gpt-4o-mini', chosen by llm.phases.plan.model (project: $REPO/.forge/config.json): The model"*"; set llm.phases.plan.model to a model the provider serves (--model does not change a phase's own model)"* ]]
	echo '{}' >.forge/config.json
	run -5 --separate-stderr forge-plan --model gpt-4o-mini --task "add a mul operation" </dev/null
	[[ "$stderr" == *"openai: unknown model 'gpt-4o-mini', chosen by llm.model (flags: command line): The model"*"; set llm.model (--model, FORGE_MODEL) to a model the provider serves"* ]]
	run -0 bash -c "curl -sS '$MOCK_URL/_mock/requests' | jq length"
	assert_output 2
}

@test "a server that wants a key when none was sent says so, not that a key was rejected (hunt67 #3)" {
	use_mock
	mkdir -p .forge
	script "$PLAN"
	# a compatible server off the official endpoint needs no key to be sent
	# to; this one (the mock) answers 401 to a request without one
	unset ANTHROPIC_API_KEY OPENAI_API_KEY
	export FORGE_PROVIDER=openai FORGE_BASE_URL="$MOCK_URL/v1" FORGE_MODEL=gpt-4o-mini
	run -5 --separate-stderr forge run "add a mul operation" </dev/null
	T=$(last_trace)
	[[ "$stderr" == *"the provider refused the request: openai: the server at $MOCK_URL/v1 wants an API key, and none was sent (OPENAI_API_KEY is not set)"*"; set OPENAI_API_KEY (or put the key in a file named by FORGE_OPENAI_KEY_FILE)"* ]]
	[[ "$stderr" != *"rejected"* && "$stderr" != *"check the key"* ]]
	assert_line "  next      forge resume $T"
	assert_line "  why       first give the server the API key it wants (the reason above says how)"
	run -0 bash -c "curl -sS '$MOCK_URL/_mock/requests' | jq -r '.[0].auth'"
	assert_output absent
}

@test "an account out of quota or credit: forge run says so, not 'could not be reached', exit 5, and the next step is to add credit" {
	use_mock
	mkdir -p .forge
	script '[{"fault": "quota", "times": "always"}]'
	run -5 --separate-stderr forge run "add a mul operation" </dev/null
	T=$(last_trace)
	[[ "$stderr" == *"the provider's account cannot pay for the request"*"You have reached your specified API usage limits"*"the account's quota or credit is exhausted"* ]]
	[[ "$stderr$output" != *"could not be reached"* && "$stderr" != *"gave up after"* ]]
	assert_line "  next      forge resume $T"
	assert_line "  why       first add credit to the provider's account or raise its spending limit (the reason above)"
	# one request: a spending cap is not retried as a rate limit
	run -0 bash -c "curl -sS '$MOCK_URL/_mock/requests' | jq length"
	assert_output 1
}

# cost_line FILE: the "  cost" line of a run's summary in FILE.
cost_line() {
	grep '^  cost ' "$1"
}

@test "the run reflection's paid call has its llm.called (phase reflect): the cost of each phase adds up to the total in the summary, show, show --json, report and the resume's summary" {
	use_mock
	# every call billed with cache tokens too; a budget the plan spends more
	# than half of fires the run reflection (">50% of budget"), then the
	# budget breaker stops the run (exit 3)
	script "$(jq -c -n --argjson p "$PLAN" --argjson i "$IMPL" '$p + $i | map(.usage = {input_tokens: 1000,
		output_tokens: 100, cache_read_input_tokens: 2000, cache_creation_input_tokens: 500})')"
	local rc=0
	forge run --budget 0.03 "add a mul operation" </dev/null >"$BATS_TEST_TMPDIR/run.out" 2>&1 || rc=$?
	[ "$rc" = 3 ] || { cat "$BATS_TEST_TMPDIR/run.out"; false; }
	T=$(last_trace)
	run -0 forge events replay "$T"
	jq -e -s '[.[] | select(.type == "llm.called" and .phase == "reflect")] | length == 1
		and .[0].cost.usd > 0 and .[0].payload.model == "claude-haiku-4-5"' <<<"$output"
	run -0 forge show --json "$T"
	jq -e '([.phase_cost[] | select(.phase == "reflect")] | length == 1 and .[0].calls == 1)
		and ([.phase_cost[].tokens] | add) == .cost.tokens
		and (([.phase_cost[].usd] | add) - .cost.usd | fabs) < 1e-9' <<<"$output"
	reflect=$(jq -r '.phase_cost[] | select(.phase == "reflect") | .usd' <<<"$output")
	shown=$(printf '%.4f' "$reflect")
	run -0 cost_line "$BATS_TEST_TMPDIR/run.out"
	assert_output --partial " reflect \$$shown · "
	run -0 forge show "$T"
	assert_line --regexp "^cost .* reflect \\\$$shown \(1 call\) · .*total "
	run -0 forge report "$T"
	assert_output --partial "<tr><td>reflect</td><td class=\"n\">$shown</td>"
	# the resume's summary rebuilds the cost of each phase from the events
	# (the run itself fails there: the mock has no answers left)
	forge resume --budget 5 "$T" </dev/null >"$BATS_TEST_TMPDIR/resume.out" 2>&1 || true
	run -0 cost_line "$BATS_TEST_TMPDIR/resume.out"
	assert_output --partial "reflect \$$shown · "
}

@test "the end-of-run summary, forge status, show and history print one total: \$0.01725 is \$0.0173 in each" {
	export FORGE_PROVIDER=anthropic FORGE_BASE_URL="$MOCK_URL" ANTHROPIC_API_KEY=test-key
	curl -sS -f -X POST "$MOCK_URL/_mock/reset" >/dev/null
	# plan $0.0045, implement $0.0045 + $0.0045 + $0.00375 (claude-sonnet-4-5):
	# summed in floating point the total is 0.017249999… one way, 0.01725 another
	local u='"usage":{"input_tokens":1000,"output_tokens":100}'
	script "[{\"forced_tool\":\"report_findings\",\"times\":\"always\",
		\"tool_calls\":[{\"name\":\"report_findings\",\"input\":{\"findings\":[]}}]},
	 {\"when_prompt_contains\":\"architecture\",\"then\":{$u,\"tool_calls\":[{\"name\":\"finish\",\"input\":{
		\"summary\":\"Add a note.\",\"architecture\":{\"components\":[\"NOTES\"],\"interfaces\":[],\"decisions\":[\"x\"]},
		\"tasks\":[{\"id\":\"t1\",\"title\":\"n\",\"description\":\"n\",\"files\":[\"NOTES\"],\"depends_on\":[],
		\"acceptance\":[\"ok\"]}],\"risk\":{\"level\":\"low\",\"score\":0.1,\"reasons\":[\"small\"]},
		\"estimates\":{\"complexity\":\"low\",\"effort\":\"5m\"}}}]}},
	 {$u,\"tool_calls\":[{\"name\":\"read_file\",\"input\":{\"path\":\"Makefile\"}}]},
	 {$u,\"tool_calls\":[{\"name\":\"write_file\",\"input\":{\"path\":\"NOTES\",\"content\":\"a note\\\\n\"}}]},
	 {\"usage\":{\"input_tokens\":1000,\"output_tokens\":50},
		\"tool_calls\":[{\"name\":\"finish\",\"input\":{\"summary\":\"done\",\"files\":[\"NOTES\"]}}]}]"
	forge run "add a note" </dev/null >"$BATS_TEST_TMPDIR/run.out" 2>&1 || { cat "$BATS_TEST_TMPDIR/run.out"; false; }
	T=$(last_trace)
	run -0 forge history --json -n 1
	jq -e '.total_cost_usd > 0.017249 and .total_cost_usd < 0.017251' <<<"$output"
	run -0 cost_line "$BATS_TEST_TMPDIR/run.out"
	assert_output --regexp ' total \$0\.0173 \('
	run -0 forge status "$T"
	assert_line --regexp '^cost +\$0\.0173 \('
	run -0 forge show "$T"
	assert_line --regexp '^cost .* total \$0\.0173 \('
	run -0 forge history -n 1
	assert_output --partial " 0.0173 "
}
