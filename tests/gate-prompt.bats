#!/usr/bin/env bats
# gate-prompt.bats - a human answering a gate at the terminal during `forge run`
# (app/prompt.h): the run is driven on a pseudo-terminal by
# tests/helpers/pty_run.py.  No timing: answers are typed ahead (the prompt
# keeps typeahead), and Ctrl-C is typed only once the question is on the
# terminal.  The high-risk cassette's plan fires architecture_approval, the
# run's only stop (see tests/fixtures/supervisor/high-risk.json).

bats_require_minimum_version 1.5.0

setup() {
	load test_helper/common
	forge_setup
	gate_tty_setup
}

QUESTION='approve? [y]es / [n]o / [e]dit note / [v]iew full / [?]: '

last_trace() { forge history --json -n 1 | jq -r .trace_id; }
run_status() { forge status --json "$1" | jq -r .run.status; }
pending_gate() { forge gate list --json | jq -r 'select(.gate == "architecture_approval") | .id'; }
events_of() { forge events replay "$1" | jq -c --arg t "$2" 'select(.type == $t) | .payload'; }

@test "Enter and a typo ask again, then y approves: the run completes (exit 0)" {
	run -0 on_tty --type '\nmaybe\ny\n' -- forge run --config "$CFG" "add a mul operation"
	[ "$(grep -o 'approve? \[y\]es' "$SHOWN" | wc -l)" -eq 3 ]
	[ "$(grep -c 'please answer y, n, e, v or ? (help)' "$SHOWN")" -eq 2 ]
	T=$(last_trace)
	[ "$(run_status "$T")" = completed ]
	run -0 events_of "$T" gate.approved
	jq -e '.gate == "architecture_approval" and .by == "human" and .note == null' <<<"$output"
	[ -z "$(events_of "$T" gate.rejected)" ]
}

@test "n at the prompt rejects the gate: the run fails (exit 1), nothing implemented" {
	run -1 on_tty --type 'n\n' -- forge run --config "$CFG" "add a mul operation"
	T=$(last_trace)
	[ "$(run_status "$T")" = failed ]
	events_of "$T" gate.rejected | jq -e '.by == "human"'
	[ -z "$(git -C "$REPO" log --oneline "main..forge/$T")" ]
}

@test "Ctrl-D pauses the run (exit 4) with the gate pending; forge gate approve + forge resume completes it" {
	run -4 on_tty --type '\x04' -- forge run --config "$CFG" "add a mul operation"
	grep -q "gate architecture_approval is waiting for a human" "$SHOWN"
	T=$(last_trace)
	G=$(pending_gate)
	grep -qF "approve with \`forge gate approve $G [--note TEXT]\`, then \`forge resume $T\`" "$SHOWN"
	[ "$(run_status "$T")" = paused ]
	[ -z "$(events_of "$T" gate.rejected)" ]
	run -0 forge gate approve "$G"
	run -0 --separate-stderr forge resume --config "$CFG" "$T" </dev/null
	[ "$(run_status "$T")" = completed ]
	[ "$(git -C "$REPO" log --format=%s "main..forge/$T")" = "forge: add a mul operation (attempt 1)" ]
}

@test "killed while the question is on the terminal: the plan was checkpointed first; resume asks again, the plan not run again" {
	run -137 on_tty --wait "$QUESTION" --kill -- forge run --config "$CFG" "add a mul operation"
	T=$(last_trace)
	# (before: the plan's checkpoint came after the answer; resume ran and
	# paid for the plan again)
	[[ ",$(db_q "select group_concat(phase) from checkpoints where trace_id = '$T'")," == *,plan,* ]]
	run -0 on_tty --type 'y\n' -- forge resume --config "$CFG" "$T"
	[ "$(run_status "$T")" = completed ]
	[ "$(forge events replay "$T" | jq -s '[.[] | select(.type == "phase.completed" and .source == "forge-plan")] | length')" -eq 1 ]
}

@test "the terminal closing at the prompt pauses the run as Ctrl-C does (exit 130), gate pending" {
	# (before: exit 129, the run left "running", nothing recorded)
	run -130 on_tty --wait "$QUESTION" --hup -- forge run --config "$CFG" "add a mul operation"
	T=$(last_trace)
	[ "$(run_status "$T")" = paused ]
	[ -n "$(pending_gate)" ]
	[ -n "$(events_of "$T" run.paused)" ]
}

@test "Ctrl-C at the prompt pauses the run (exit 130), gate pending; forge resume asks again and e approves with a note" {
	run -130 on_tty --wait "$QUESTION" --intr -- forge run --config "$CFG" "add a mul operation"
	T=$(last_trace)
	G=$(pending_gate)
	grep -qF "forge run: interrupted at gate architecture_approval; it stays pending" "$SHOWN"
	run -0 forge status --json "$T"
	jq -e '.run.status == "paused" and .run.error == "interrupted" and (.pending_gates | length) == 1' <<<"$output"
	[ -z "$(events_of "$T" gate.rejected)" ]
	events_of "$T" run.paused | jq -e '.reason == "interrupted"'
	# the same gate is asked again on resume
	run -0 on_tty --type 'e\nkeep the usage line in sync\n' -- forge resume --config "$CFG" "$T"
	grep -qF "forge resume: gate architecture_approval: Review proposed architecture" "$SHOWN"
	[ "$(run_status "$T")" = completed ]
	run -0 events_of "$T" gate.approved
	jq -e --arg g "$G" '.id == $g and .by == "human" and .note == "keep the usage line in sync"' <<<"$output"
}

@test "no terminal (stdin not one, no /dev/tty): the gate waits, exit 4" {
	run -4 --separate-stderr setsid -w forge run --config "$CFG" "add a mul operation" </dev/null
	[[ "$stderr" == *"gate architecture_approval is waiting for a human"* ]]
	[ "$(run_status "$(last_trace)")" = paused ]
	[ -n "$(pending_gate)" ]
}

@test "a phase whose guard does not hold ends the run with a no (exit 1), not a failure (5)" {
	# The supervisor's own programs, with a forge-deploy that hands the real one
	# a state whose review asks for changes: its guard refuses (skipped).
	BIN="$BATS_TEST_TMPDIR/bin"
	mkdir -p "$BIN"
	cp "$FORGE_BINDIR"/forge-supervisor "$FORGE_BINDIR"/forge-plan "$FORGE_BINDIR"/forge-implement \
		"$FORGE_BINDIR"/forge-review "$FORGE_BINDIR"/forge-test "$BIN"/
	cat >"$BIN/forge-deploy" <<EOF
#!/usr/bin/env bash
jq -c 'if .kind == "state" then .review.decision = "request_changes" | del(.review.approved_by) else . end' \
	>"$BATS_TEST_TMPDIR/deploy-input"
exec "$FORGE_BINDIR/forge-deploy" "\$@" <"$BATS_TEST_TMPDIR/deploy-input"
EOF
	chmod +x "$BIN/forge-deploy"
	run -1 --separate-stderr "$BIN/forge-supervisor" run --config "$CFG" --auto-approve "add a mul operation" </dev/null
	T=$(last_trace)
	run -0 forge status --json "$T"
	jq -e '.run.status == "failed" and (.run.error | startswith("the guard of deploy did not hold"))
		and .state.deployment.status == "skipped"' <<<"$output"
}
