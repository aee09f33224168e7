#!/usr/bin/env bats
# lifecycle.bats - the life of a run under forge-supervisor: a human's (or
# --auto-approve's) override of review reaches deploy, also across resume;
# a failed run resumes from its last checkpoint; one process at a time holds
# a run (its lease); cancel stops a live run; a run whose holder died shows
# as interrupted and resumes.

bats_require_minimum_version 1.5.0

setup_file() {
	load test_helper/mock
	mock_start
}

teardown_file() {
	mock_stop
}

setup() {
	load test_helper/common
	forge_setup
	export BATS_TEST_TIMEOUT=120
	REPO="$BATS_TEST_TMPDIR/calc"
	calc_repo "$REPO"
	BASE=$(git -C "$REPO" rev-parse HEAD)
	cd "$REPO"
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
	PLAN=$(jq -sc '[.[].response | {text: (.text // ""), tool_calls, usage}]' "$c/plan-calc.jsonl")
	IMPL=$(jq -sc '[.[].response | {text: (.text // ""), tool_calls, usage}]' "$c/implement-calc.jsonl")
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
	[[ "$stderr" == *"gate escalation_review approved (--auto-approve)"* ]]
	T=$(last_trace)
	run -0 forge status --json "$T"
	jq -e '.run.status == "completed" and .state.deployment.status == "healthy"
		and .state.review.decision == "require_human"
		and .state.review.approved_by.by == "flag" and .state.review.approved_by.gate == "escalation_review"' <<<"$output"
}

@test "a human approves review's escalation with forge gate approve; the override survives resume to deploy" {
	demo_replay
	run -4 --separate-stderr forge run "$TASK" </dev/null
	[[ "$stderr" == *"gate architecture_approval is waiting for a human"* ]]
	T=$(last_trace)
	G=$(forge gate list --json | jq -r .id)
	run -0 forge gate approve "$G"
	run -4 --separate-stderr forge resume "$T" </dev/null
	[[ "$stderr" == *"gate escalation_review is waiting for a human"* ]]
	run -0 forge status --json "$T"
	jq -e '.run.status == "paused" and .state.review.decision == "require_human" and .state.review.approved_by == null' <<<"$output"
	G=$(forge gate list --json | jq -r .id)
	run -0 forge gate approve "$G" --note "division by zero is handled"
	run -0 --separate-stderr forge resume "$T" </dev/null
	run -0 forge status --json "$T"
	jq -e --arg g "$G" '.run.status == "completed" and .state.deployment.status == "healthy"
		and .state.review.approved_by == {by: "human", gate: "escalation_review", gate_id: $g,
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
	# past the guard: it stops later, at the state having no branch
	run -5 --separate-stderr forge-deploy --strategy branch <<<"$over"
	[[ "$stderr" == *"no branch to deploy"* ]]
	[[ "$output" != *'"type":"phase.skipped"'* ]]
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
