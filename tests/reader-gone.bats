#!/usr/bin/env bats
# reader-gone.bats - a phase whose standard output can no longer be written
# (its reader gone: EPIPE; a write error: > /dev/full) stops at its next step
# boundary -- before the next model call, the next tool, the test command --
# and exits 141 quietly (as SIGPIPE would end it) or 5 saying why.  Before,
# it went on to the end of its phase: every model call paid for, files
# edited and committed, for output no one could read.
#
# No timing: the mock holds its first answer until the reader has closed
# its end of the pipe (wait_file), so the phase learns its output is gone
# from the write that follows that answer.

bats_require_minimum_version 1.5.0

load test_helper/mock
mock_per_file 120

setup() {
	load test_helper/common
	forge_setup
	calc_setup
	export FORGE_PROVIDER=anthropic FORGE_BASE_URL="$MOCK_URL" ANTHROPIC_API_KEY=test-key
	unset FORGE_CASSETTE
	mock_reset
	PLAN=$(jq -sc '[.[].response | {text: (.text // ""), tool_calls, usage}]' "$CASSETTES/plan-calc.jsonl")
	IMPL=$(jq -sc '[.[].response | {text: (.text // ""), tool_calls, usage}]' "$CASSETTES/implement-calc.jsonl")
	export GONE="$BATS_TEST_TMPDIR/gone"
}

# held STEPS-JSON: the mock's script, its first answer held until $GONE exists.
held() {
	mock_script "$(jq -c --arg gone "$GONE" '.[0] += {wait_file: $gone}' <<<"$1")"
}

# requests: how many model requests the mock got.
requests() {
	jq -s '[.[] | select(.path == "/v1/messages")] | length' "$MOCK_LOG"
}

# gone_at_first_request: a reader that reads nothing: once the phase's first
# model request has come, it closes the pipe -- no process holds its read end
# after that -- and only then lets the mock answer.
gone_at_first_request() {
	until [ -s "$MOCK_LOG" ]; do sleep 0.05; done
	exec 0<&-
	touch "$GONE"
}
export -f gone_at_first_request

@test "forge-plan whose reader went away during its first model call makes no other (exit 141, nothing said)" {
	held "$PLAN"
	run -0 bash -c 'forge-plan --task "add a mul operation" 2>"$1" | gone_at_first_request; echo "${PIPESTATUS[0]}"' \
		_ "$BATS_TEST_TMPDIR/err"
	assert_output 141
	# (before: all 3 of the plan's calls, then 141)
	[ "$(requests)" -eq 1 ]
	[ ! -s "$BATS_TEST_TMPDIR/err" ]
}

@test "forge-implement whose reader went away runs no tool: nothing edited, nothing committed (exit 141)" {
	mock_script "$PLAN"
	forge-plan -q --task "add a mul operation" >"$BATS_TEST_TMPDIR/plan.out"
	T=$(tail -n 1 "$BATS_TEST_TMPDIR/plan.out" | jq -r .trace_id)
	# its first answer an edit (the cassette's read_file left out)
	held "$(jq -c '.[1:]' <<<"$IMPL")"
	run -0 bash -c 'forge-implement <"$1" 2>"$2" | gone_at_first_request; echo "${PIPESTATUS[0]}"' \
		_ "$BATS_TEST_TMPDIR/plan.out" "$BATS_TEST_TMPDIR/err"
	assert_output 141
	# (before: all 6 calls, calc.c edited, the branch committed, the tests run)
	[ "$(requests)" -eq 1 ]
	[ ! -s "$BATS_TEST_TMPDIR/err" ]
	! grep -rq calc_mul --include=calc.c "$REPO" || false
	if git rev-parse -q --verify "forge/$T" >/dev/null; then
		[ "$(git rev-parse "forge/$T")" = "$BASE" ]
	fi
	# the lease was released: the phase can be run again on the same state
	mock_script "$IMPL"
	run -0 --separate-stderr forge-implement -q <"$BATS_TEST_TMPDIR/plan.out"
	[ "$(tail -n 1 <<<"$output" | jq -r .status)" = ok ]
}

@test "> /dev/full: exit 5 before any model call, the write error said once" {
	mock_script "$PLAN"
	run -5 --separate-stderr bash -c 'forge-plan --task "add a mul operation" >/dev/full'
	assert_equal "$stderr" "forge-plan: cannot write to standard output: No space left on device; stopped with nothing more done (no state written)"
	[ "$(requests)" -eq 0 ]
	# a stream on stdin whose events cannot be passed on: said once too
	forge-plan -q --task "add a mul operation" >"$BATS_TEST_TMPDIR/plan.out"
	run -5 --separate-stderr bash -c 'forge-implement <"$1" >/dev/full' _ "$BATS_TEST_TMPDIR/plan.out"
	assert_equal "$stderr" "forge-implement: cannot write to standard output: No space left on device"
}

@test "forge-test whose reader has gone runs no test command (exit 141)" {
	python3 - "$REPO" <<-'PY'
		import os, subprocess, sys
		r, w = os.pipe()
		os.close(r)
		p = subprocess.run(["forge-test", "-q", "--no-input", "--command", "touch ran"], cwd=sys.argv[1],
		                   stdout=w, stdin=subprocess.DEVNULL)
		sys.exit(0 if p.returncode == 141 else 1)
	PY
	# (before: the command ran, then 141)
	[ ! -e "$REPO/ran" ]
}
