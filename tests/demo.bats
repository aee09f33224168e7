#!/usr/bin/env bats
# make demo: the whole offline run keeps working (a review bounce, an
# auto-approved gate, a branch that builds and passes its tests).

load test_helper/common

setup() {
	forge_setup
	unset FORGE_DB
}

@test "the demo runs a whole pipeline with a bounce and an auto-approved gate" {
	run -0 --separate-stderr env DEMO_DIR="$BATS_TEST_TMPDIR/demo" "$FORGE_ROOT/scripts/demo"
	repo=$BATS_TEST_TMPDIR/demo/calc
	[[ "$stderr" == *"gate architecture_approval approved (--auto-approve)"* ]]
	[[ "$stderr" == *"back to implement"* ]]
	[[ "$stderr" == *"Run "*" completed"* ]] || [[ "$output$stderr" == *" completed"* ]]
	trace=$(forge history --repo "$repo" -n 1 --json | jq -r .trace_id)
	[ "$(git -C "$repo" rev-list --count "main..forge/$trace")" -eq 2 ]
	run -0 forge events --repo "$repo" replay "$trace"
	[[ "$output" == *'"type":"loop.phase_bounce"'* ]]
	[[ "$output" == *'"type":"gate.approved"'* ]]
	# The user's own checkout is untouched.
	[ "$(git -C "$repo" rev-list --count main)" -eq 1 ]
	[ -z "$(git -C "$repo" status --porcelain)" ]
}
