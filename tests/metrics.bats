#!/usr/bin/env bats
# forge-metrics: the feedback-loop figures from the database.

load test_helper/common

setup() {
	forge_setup
}

@test "an empty database has every figure, without data" {
	run -0 forge-metrics --json
	jq -e '.finding_dismissal_rate.value == null and .finding_dismissal_rate.n == 0' <<<"$output"
	jq -e 'has("avg_bounces_per_run") and has("tool_success_rate") and has("first_pass_approval_rate")' <<<"$output"
	run -0 forge-metrics
	assert_output --partial "finding_dismissal_rate"
}

@test "figures follow the events, findings and memories" {
	ev() { printf '{"kind":"event","id":"%s","trace_id":"01JDB2AAAAAAAAAAAAAAAAAAAA","ts":"2026-01-01T00:00:0%s.000Z","source":"t","phase":"%s","type":"%s","payload":%s}\n' "$@"; }
	{
		ev 01JDB3AAAAAAAAAAAAAAAAAAA1 1 implement tool.executed '{"tool":"read_file","ok":true}'
		ev 01JDB3AAAAAAAAAAAAAAAAAAA2 2 implement tool.executed '{"tool":"write_file","ok":false}'
		ev 01JDB3AAAAAAAAAAAAAAAAAAA3 3 review review.completed '{}'
		ev 01JDB3AAAAAAAAAAAAAAAAAAA4 4 review loop.phase_bounce '{"from":"review","to":"implement"}'
	} | forge-events store >/dev/null
	for m in a b; do
		printf '{"trace_id":"01JDB2AAAAAAAAAAAAAAAAAAAA","severity":"info","category":"style","message":"%s"}\n' "$m" | forge-findings add
	done >"$BATS_TEST_TMPDIR/ids"
	forge-findings dismiss "$(head -1 "$BATS_TEST_TMPDIR/ids")" >/dev/null
	run -0 forge-metrics --json
	jq -e '.tool_success_rate.value == 0.5 and .tool_success_rate.n == 2' <<<"$output"
	jq -e '.finding_dismissal_rate.value == 0.5' <<<"$output"
	jq -e '.first_pass_approval_rate.value == 0 and .first_pass_approval_rate.n == 1' <<<"$output"
	# a human's answer to a gate, matched to its question by the gate's id
	# (payload.id, as the supervisor writes them): 4 s after it was asked
	{
		ev 01JDB3AAAAAAAAAAAAAAAAAAA5 1 plan gate.requested '{"id":"01JDB4GATE0000000000000001","gate":"plan_approval"}'
		ev 01JDB3AAAAAAAAAAAAAAAAAAA6 5 plan gate.approved '{"id":"01JDB4GATE0000000000000001","gate":"plan_approval"}'
	} | forge-events store >/dev/null
	run -0 forge-metrics --json
	jq -e '.time_to_human_response_s.value == 4 and .time_to_human_response_s.n == 1' <<<"$output"
	run -2 forge-metrics extra
}
