#!/usr/bin/env bats
# gate-ui.bats - what the person at the terminal sees during `forge run`: the
# gate that shows what is decided (app/gateview.h) with [y]es / [n]o /
# [e]dit note / [v]iew full / [?], and the status line of a running model
# call (app/term.h), relayed from the phases through forge-supervisor.  Driven
# on a pseudo-terminal (tests/helpers/pty_run.py); answers are typed ahead, so
# nothing waits on time, and only content is asserted, never durations.  The
# high-risk cassette's plan fires architecture_approval (see
# tests/fixtures/supervisor/high-risk.json).

bats_require_minimum_version 1.5.0

load test_helper/mock
mock_per_file 120

setup() {
	load test_helper/common
	forge_setup
	gate_tty_setup
	unset NO_COLOR PAGER
}

QUESTION='approve? [y]es / [n]o / [e]dit note / [v]iew full / [?]: '

last_trace() { forge history --json -n 1 | jq -r .trace_id; }
events_of() { forge events replay "$1" | jq -c --arg t "$2" 'select(.type == $t) | .payload'; }
# The terminal's text without colour (SGR) sequences.
# The "stream" of each request the mock got since its reset.
mock_streamed() { curl -sS -f "$MOCK_URL/_mock/requests" | jq -c '[.[].body.stream]'; }
plain() { sed 's/\x1b\[[0-9;]*m//g' "$SHOWN"; }

@test "the architecture gate shows the plan: summary, risk and reasons, estimate, tasks and files; y approves" {
	run -0 on_tty --type 'y\n' -- forge run --config "$CFG" "add a mul operation"
	run -0 plain
	[[ "$output" == *"forge run: gate architecture_approval: Review proposed architecture before implementation begins."* ]]
	[[ "$output" == *"  Plan: Add a mul operation to calc: calc mul A B prints A times B."* ]]
	[[ "$output" == *$'  Risk: high (score 0.60)\n    - changes the command-line interface\n'* ]]
	[[ "$output" == *"  Estimate: complexity low, effort 15m"* ]]
	[[ "$output" == *$'  Tasks (2):\n    t1  Add calc_mul and the mul operation\n        files: calc.c\n'* ]]
	[[ "$output" == *$'    t2  Test mul\n        files: tests/check.sh\n'* ]]
	[[ "$output" == *"$QUESTION"* ]]
	# the summary leaves the descriptions and the JSON to [v]
	[[ "$output" != *"The plan as JSON"* ]]
	# colour on a terminal: the risk in red
	grep -qF $'Risk: \e[31mhigh\e[0m' "$SHOWN"
	T=$(last_trace)
	events_of "$T" gate.approved | jq -e '.gate == "architecture_approval" and .by == "human" and .note == null'
	[ "$(forge status --json "$T" | jq -r .run.status)" = completed ]
}

@test "n at the gate rejects it: the run fails (exit 1)" {
	run -1 on_tty --type 'n\n' -- forge run --config "$CFG" "add a mul operation"
	plain | grep -qF "  Plan: Add a mul operation to calc"
	events_of "$(last_trace)" gate.rejected | jq -e '.gate == "architecture_approval" and .by == "human"'
	# the run is over: its next step is not a resume, which would only say
	# "rejected" again
	T=$(last_trace)
	plain | grep -qF "  next      forge run 'add a mul operation'"
	run -0 --separate-stderr forge show "$T"
	# (a command only: the why on a line of its own)
	assert_line "next      forge run 'add a mul operation'"
	assert_line "why       a rejected gate ended this run: run the task again (forge gc removes this one's worktree)"
	[[ $output != *"forge resume"* ]]
}

@test "forge gate reject says the run ends there" {
	run -4 forge run --config "$CFG" "add a mul operation" </dev/null
	T=$(last_trace)
	G=$(forge gate list --json "$T" | jq -r '.id')
	run -0 --separate-stderr forge gate reject "$G"
	[ "$output" = "rejected $G; this ends run $T (forge resume $T records the end; forge run the task again to start anew)" ]
	run -1 --separate-stderr forge resume --config "$CFG" "$T" </dev/null
	[[ $output == *"  next      forge run 'add a mul operation'"$'\n'"  why       a rejected gate ended this run"* ]]
}

@test "e at the gate asks for a note, recorded with the approval" {
	run -0 on_tty --type 'e\nkeep the usage line in sync\n' -- forge run --config "$CFG" "add a mul operation"
	grep -qF "  note: " "$SHOWN"
	run -0 events_of "$(last_trace)" gate.approved
	jq -e '.by == "human" and .note == "keep the usage line in sync"' <<<"$output"
}

@test "v shows the whole plan in \$PAGER (cat here), then asks again" {
	PAGER=cat run -0 on_tty --type 'v\ny\n' -- forge run --config "$CFG" "add a mul operation"
	run -0 plain
	[[ "$output" == *"        Add long calc_mul(long a, long b) beside calc_add and calc_sub"* ]]
	[[ "$output" == *$'        after: t1\n        ✓ make check passes and checks mul\n'* ]]
	[[ "$output" == *"  Architecture, components:"* ]]
	[[ "$output" == *"  The plan as JSON:"* ]]
	[ "$(grep -cF "$QUESTION" <<<"$output")" -eq 2 ]
	events_of "$(last_trace)" gate.approved | jq -e '.by == "human"'
}

@test "Ctrl-C in the pager is the pager's: the gate asks again and the run goes on" {
	# (before: the Ctrl-C stayed pending in forge, and paused the run, exit 130,
	# once the pager was gone)
	PAGER='cat >/dev/null; echo PAGER-OPEN; exec sleep 60' run -0 on_tty --type 'v\n' --wait 'PAGER-OPEN' --intr \
		--type 'y\n' -- forge run --config "$CFG" "add a mul operation"
	[ "$(grep -cF "$QUESTION" < <(plain))" -eq 2 ]
	events_of "$(last_trace)" gate.approved | jq -e '.by == "human"'
}

@test "a gate rejected elsewhere while it is asked here: a y typed here does not pass it" {
	# the pager stands in for a person at another terminal (forge gate, forge tui)
	PAGER='cat >/dev/null; forge gate reject "$(forge gate list --json | jq -r .id)" --note "too risky" >/dev/null' \
		run -1 on_tty --type 'v\ny\n' -- forge run --config "$CFG" "add a mul operation"
	grep -qF "the answer typed here is not recorded: gate architecture_approval was decided elsewhere (forge gate, forge tui) while it was asked; that decision stands" "$SHOWN"
	grep -q "was rejected by human: too risky: the run stops" "$SHOWN"
	T=$(last_trace)
	[ -z "$(events_of "$T" gate.approved)" ]
	[ "$(forge status --json "$T" | jq -r .run.status)" = failed ]
}

@test "the answer at the gate cannot be written (the database fails meanwhile): exit 5, not waiting for a human" {
	# the pager stands in for the database failing while the question is
	# up: from then on every write of a gate is refused
	PAGER='cat >/dev/null; sqlite3 "$FORGE_DB" "CREATE TRIGGER gates_down BEFORE UPDATE ON gates BEGIN SELECT RAISE(ABORT, '"'"'the database went away'"'"'); END"' \
		run -5 on_tty --type 'v\ny\n' -- forge run --config "$CFG" "add a mul operation"
	grep -qF "forge run: the answer to gate architecture_approval could not be recorded: " "$SHOWN"
	grep -qF "the database went away" "$SHOWN"
	grep -qF "forge run: the run cannot be recorded: " "$SHOWN"
	# (before: exit 4 and the summary's "waiting for a human", to the person who had just answered)
	run ! grep -qF "waiting for a human" "$SHOWN"
	sqlite3 "$FORGE_DB" "DROP TRIGGER gates_down"
	T=$(last_trace)
	[ -z "$(events_of "$T" gate.approved)" ]
	[ "$(forge gate list --json "$T" | jq -r .status)" = pending ]
}

@test "the state a gate shows cannot be committed: no one is asked, the run stops there (exit 5)" {
	# the COMMIT of the checkpoint after the plan fails, as on a disk full
	# then (a deferred foreign key that does not hold)
	forge-db migrate >/dev/null
	sqlite3 "$FORGE_DB" "CREATE TABLE no_room (r TEXT REFERENCES runs (id) DEFERRABLE INITIALLY DEFERRED);
		CREATE TRIGGER no_room AFTER INSERT ON checkpoints WHEN new.phase = 'plan'
		BEGIN INSERT INTO no_room VALUES ('no such run'); END"
	run -5 on_tty --type 'y\n' -- forge run --config "$CFG" "add a mul operation"
	# (before: the plan was shown and approved, its approval then refused)
	run ! grep -qF "$QUESTION" "$SHOWN"
	T=$(last_trace)
	plain | grep -qF "forge run: the run cannot be recorded: "
	plain | grep -qF "; it stops here (forge resume $T when the database can be written again)"
}

# The pager stands in for a person at another terminal again; nothing is
# typed after it: the prompt itself sees the decision (it reads the gate row
# while it waits), where before it waited for ever.
@test "a gate rejected elsewhere: the question on the terminal ends by itself and the run stops (exit 1)" {
	SAID="$BATS_TEST_TMPDIR/said" PAGER='cat >/dev/null; forge gate reject "$(forge gate list --json | jq -r .id)" --note "too risky" >"$SAID"' \
		run -1 on_tty --type 'v\n' -- forge run --config "$CFG" "add a mul operation"
	T=$(last_trace)
	grep -qF "forge run: gate architecture_approval was decided elsewhere (forge gate, forge tui) while it was asked here; that decision stands" "$SHOWN"
	grep -q "was rejected by human: too risky: the run stops" "$SHOWN"
	# forge gate knew the run was live, asking: not "forge resume", which it would refuse
	grep -qE "^rejected [0-9A-Z]+; run $T, waiting on it \(pid [0-9]+ on .*\), stops by itself$" "$BATS_TEST_TMPDIR/said"
	[ -z "$(events_of "$T" gate.approved)" ]
	[ "$(events_of "$T" gate.rejected | jq -s length)" -eq 2 ]   # forge gate's, the run's stop
	[ "$(forge status --json "$T" | jq -r .run.status)" = failed ]
}

@test "a gate approved elsewhere: the question on the terminal ends by itself and the run goes on" {
	SAID="$BATS_TEST_TMPDIR/said" PAGER='cat >/dev/null; forge gate approve "$(forge gate list --json | jq -r .id)" --note "keep it small" >"$SAID"' \
		run -0 on_tty --type 'v\n' -- forge run --config "$CFG" "add a mul operation"
	T=$(last_trace)
	grep -q "was approved by human: keep it small: the run goes on" "$SHOWN"
	grep -qE "^approved [0-9A-Z]+; run $T, waiting on it \(pid [0-9]+ on .*\), goes on by itself$" "$BATS_TEST_TMPDIR/said"
	run -0 events_of "$T" gate.approved
	jq -e '.by == "human" and .note == "keep it small"' <<<"$output"     # one approval: forge gate's
	[ "$(forge status --json "$T" | jq -r .run.status)" = completed ]
	[ "$(git rev-list --count "main..forge/$T")" -ge 1 ]
}

@test "a gate that expires while it is asked: the question ends by itself, the run stops as rejected (exit 1)" {
	jq '.gates = [{"id":"architecture_approval","phase":"plan","condition":".plan.risk.level == \"high\"",
		"prompt":"Review the architecture.","timeout_s":1,"auto_approve_level":null}]' "$CFG" >"$BATS_TEST_TMPDIR/cfg.json"
	run -1 on_tty -- forge run --config "$BATS_TEST_TMPDIR/cfg.json" "add a mul operation"
	grep -qF "forge run: gate architecture_approval expired (its timeout_s) while it was asked here" "$SHOWN"
	grep -q "expired without a decision (its timeout_s): it counts as rejected and the run stops" "$SHOWN"
	T=$(last_trace)
	[ -z "$(events_of "$T" gate.approved)" ]
	[ "$(git rev-list --count "main..forge/$T")" -eq 0 ]
}

@test "v without a usable pager writes the plan to the terminal" {
	PAGER='exit 127' run -0 on_tty --type 'v\ny\n' -- forge run --config "$CFG" "add a mul operation"
	grep -qF "  The plan as JSON:" "$SHOWN"
}

@test "? explains the keys, then asks again" {
	run -0 on_tty --type '?\ny\n' -- forge run --config "$CFG" "add a mul operation"
	grep -qF "  y, yes    approve: the run goes on" "$SHOWN"
	grep -qF "  v, view   everything about the decision" "$SHOWN"
	grep -qF "  Ctrl-D    decide later: the run pauses (exit 4)" "$SHOWN"
	[ "$(grep -cF "$QUESTION" "$SHOWN")" -eq 2 ]
}

@test "Ctrl-D at the gate decides nothing: the run pauses (exit 4)" {
	run -4 on_tty --type '\x04' -- forge run --config "$CFG" "add a mul operation"
	plain | grep -qF "  Plan: Add a mul operation to calc"
	grep -qF "gate architecture_approval is waiting for a human" "$SHOWN"
}

@test "a model call shows a status line on a terminal: the phase, tokens and the streamed text; erased after" {
	run -0 on_tty --type 'y\n' -- forge run --config "$CFG" "add a mul operation"
	run -0 plain
	# drawn by the supervisor from the phase's relayed line
	grep -E $'\r\e\\[K  \\[plan\\] [^ ]+ forge-plan: model · [0-9]+\\.[0-9] s · ~[0-9]+ tokens · Let me look at the' <<<"$output"
	grep -E $'\\[implement\\] [^ ]+ forge-implement: model · [0-9.]+ s · ~[0-9]+ tokens · I will read' <<<"$output"
	# erased before the next line: the tool lines start on a clean line
	grep -qE $'\r\e\\[K    · read_file' <<<"$output"
	# never a relay record on the terminal
	! grep -qF $'\001forge-status' "$SHOWN" || false
}

@test "no status line and no colour when stderr is piped" {
	run -0 --separate-stderr forge run --config "$CFG" --auto-approve "add a mul operation" </dev/null
	[[ "$stderr" == *"▶ plan"* ]]
	[[ "$stderr" != *"tokens ·"* ]]
	[[ "$stderr" != *$'\e'* ]]
	[[ "$stderr" != *$'\001'* ]]
	[[ "$stderr" != *$'\r'* ]]
}

@test "TERM=dumb: no status line (its erasing escapes would show as they are)" {
	run -0 on_tty -- env TERM=dumb forge run --config "$CFG" --auto-approve "add a mul operation"
	[[ "$(cat "$SHOWN")" != *$'\e[K'* ]]
	[[ "$(cat "$SHOWN")" != *"tokens ·"* ]]
}

@test "no TERM on a terminal is taken as TERM=dumb: no status line, no colour" {
	# (before: the progress coloured, ESC[32m and ESC[2m)
	run -0 on_tty -- env -u TERM forge run --config "$CFG" --auto-approve "add a mul operation"
	[[ "$(cat "$SHOWN")" == *"plan"* ]]
	[[ "$(cat "$SHOWN")" != *$'\e'* ]]
	[[ "$(cat "$SHOWN")" != *"tokens ·"* ]]
}

@test "NO_COLOR: the gate and progress without colour, the status line still drawn" {
	run -0 on_tty --type 'y\n' -- env NO_COLOR=1 forge run --config "$CFG" "add a mul operation"
	grep -qF "  Risk: high (score 0.60)" "$SHOWN"
	grep -qF "  ✓ ok" "$SHOWN"
	! grep -q $'\e\\[[0-9;]*m' "$SHOWN" || false
	grep -qF "forge-plan: model · " "$SHOWN"
}

@test "-v shows each tool call's arguments and the head of its result" {
	run -0 --separate-stderr forge run -v --config "$CFG" --auto-approve "add a mul operation" </dev/null
	[[ "$stderr" == *'  [plan] forge-plan: read_file {"path":"calc.c"}'* ]]
	[[ "$stderr" == *'  [plan]     → '* ]]
	[[ "$stderr" == *'  [implement] forge-implement: edit_file {'* ]]
	run -0 --separate-stderr forge run --config "$CFG" --auto-approve "add a mul operation" </dev/null
	[[ "$stderr" != *'read_file {"path"'* ]]
}

@test "a phase alone draws its status line on a terminal stderr, and nothing when stderr is piped" {
	run -0 on_tty -- sh -c 'forge-plan --task "add a mul operation" >plan.jsonl'
	run -0 plain
	grep -E $'\r\e\\[K[^ ]+ forge-plan: model · [0-9.]+ s · ~[0-9]+ tokens · Let me look at the calculator first\\.' <<<"$output"
	grep -qE $'\r\e\\[Kforge-plan: iteration 1 · read_file' <<<"$output"
	jq -se '.[-1].plan.risk.level == "high"' plan.jsonl
	run -0 --separate-stderr forge-plan --task "add a mul operation"
	[[ "$stderr" != *"tokens"* && "$stderr" != *$'\r'* && "$stderr" != *$'\001'* ]]
}

@test "the status line is cut by display columns: a model writing Chinese never makes it wider than the terminal" {
	unset FORGE_PROVIDER FORGE_CASSETTE
	FIN=$(jq -c 'select(.phase == "plan") | .response.tool_calls[]? | select(.name == "finish") | .input' "$FORGE_ROOT/tests/fixtures/cassettes/run-highrisk.jsonl")
	mock_reset
	mock_steps "$(jq -nc --argjson f "$FIN" '[{"provider":"anthropic","text":"我们先阅读计算器的源代码然后为它增加一个乘法运算并且补充相应的测试用例和文档说明","dribble":200,"tool_calls":[{"name":"finish","input":$f}]}]')"
	ANTHROPIC_API_KEY=sk-test run -0 on_tty --cols 60 -- sh -c "forge-plan --provider anthropic --base-url $MOCK_URL --task 'add a mul operation' >plan.jsonl"
	grep -qF '我们先阅读' "$SHOWN"
	"$TEST_PYTHON3" - "$SHOWN" <<'PY'
import re, sys, unicodedata
def w(s): return sum(0 if unicodedata.combining(c) else 2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in s)
text = re.sub(r"\x1b\[[0-9;]*m", "", open(sys.argv[1], encoding="utf-8", errors="replace").read())
lines = [seg for l in text.split("\n") for seg in re.split(r"\r|\x1b\[K", l) if "tokens" in seg]
assert lines, text
for seg in lines:
    assert w(seg) <= 59, (w(seg), seg)
PY
}

@test "a real provider's call streams on a terminal: its text's last line on the status line, control characters blanked" {
	unset FORGE_PROVIDER FORGE_CASSETTE
	FIN=$(jq -c 'select(.phase == "plan") | .response.tool_calls[]? | select(.name == "finish") | .input' "$FORGE_ROOT/tests/fixtures/cassettes/run-highrisk.jsonl")
	mock_reset
	mock_steps "$(jq -nc --argjson f "$FIN" '[{"provider":"anthropic","text":"Reading the calculator.\nThe plan adds \u001b[2J\u009b2Jcalc_mul.","dribble":200,"tool_calls":[{"name":"finish","input":$f}]}]')"
	ANTHROPIC_API_KEY=sk-test run -0 on_tty -- sh -c "forge-plan --provider anthropic --base-url $MOCK_URL --task 'add a mul operation' >plan.jsonl"
	run -0 plain
	grep -qE 'forge-plan: model · [0-9.]+ s · ~[0-9]+ tokens · The plan adds  \[2J  2Jcalc_mul\.' <<<"$output"
	! grep -qF $'\e[2J' "$SHOWN" || false	# the model's control characters never reach the terminal
	! grep -qF $'\xc2\x9b' "$SHOWN" || false	# C1 (8-bit CSI) neither
	[[ "$output" != *"tokens · Reading the calculator. The plan"* ]]	# one line, the last
	run -0 mock_streamed
	[ "$output" = '[true]' ]
	# piped: no streaming asked for the status line (nor, with agent.live_text
	# false, for forge tui's live text: tui.bats)
	mock_reset
	mock_steps "$(jq -nc --argjson f "$FIN" '[{"provider":"anthropic","text":"ok","tool_calls":[{"name":"finish","input":$f}]}]')"
	echo '{"agent": {"live_text": false}}' >"$BATS_TEST_TMPDIR/nolive.json"
	ANTHROPIC_API_KEY=sk-test run -0 --separate-stderr forge-plan --config "$BATS_TEST_TMPDIR/nolive.json" \
		--provider anthropic --base-url "$MOCK_URL" --task 'add a mul operation'
	run -0 mock_streamed
	[ "$output" = '[null]' ]
}

@test "a task's control characters never reach the terminal: run's header, status, events list, history; the commit subject without them" {
	task=$(printf 'add mul \e]0;PWNED\a\e[41mRED\e[0m \xc2\x9b2J')
	run -0 on_tty -- forge run --config "$CFG" --auto-approve "$task"
	grep -qF 'add mul  ]0;PWNED  [41mRED [0m   2J' "$SHOWN"
	! grep -qF $'\e]0;PWNED' "$SHOWN" || false
	! grep -qF $'\xc2\x9b' "$SHOWN" || false
	T=$(last_trace)
	for cmd in "forge status $T" "forge events list" "forge history"; do
		run -0 --separate-stderr $cmd
		[[ $output == *'add mul  ]0;PWNED  [41mRED [0m   2J'* ]] || { echo "$cmd: $output"; false; }
		[[ $output != *$'\e'* && $output != *$'\a'* && $output != *$'\xc2\x9b'* ]] || { echo "$cmd"; false; }
	done
	run -0 git log --format=%s -1 "forge/$T"
	[ "$output" = 'forge: add mul  ]0;PWNED  [41mRED [0m   2J (attempt 1)' ]
	# --json keeps the task as it was given
	[ "$(forge status --json "$T" | jq -r .run.task)" = "$task" ]
}

@test "forge gate approve/reject: an unknown id is bad input (exit 2); a unique prefix of an id will do" {
	run -4 forge run --config "$CFG" "add a mul operation" </dev/null
	T=$(last_trace)
	run -2 --separate-stderr forge gate approve NOSUCH
	[[ $stderr == "forge-gate: no gate 'NOSUCH'"* ]]
	run -2 --separate-stderr forge gate reject NOSUCH
	[[ $stderr == "forge-gate: no gate 'NOSUCH'"* ]]
	G=$(forge gate list --json "$T" | jq -r '.id')
	run -0 --separate-stderr forge gate approve "${G:0:${#G}-3}"
	[[ $output == "approved $G; "* ]]
	# decided already: the gate's own "no" stays exit 1
	run -1 --separate-stderr forge gate reject "$G"
}
