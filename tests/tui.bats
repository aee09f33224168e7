#!/usr/bin/env bats
# tui.bats - `forge tui` (app/tui.h) driven under tmux: it runs in a
# detached session of its own server (a socket in the test's directory) with
# a fixed size; keys go in with send-keys and the screen comes out with
# capture-pane.  Runs are made with the high-risk cassette, which pauses at
# the architecture_approval gate (tests/fixtures/supervisor/high-risk.json).
# Nothing waits on time: each step waits for what it expects on the screen
# (a bounded poll) and fails showing what was there.

bats_require_minimum_version 1.5.0

setup() {
	load test_helper/common
	forge_setup
	gate_tty_setup
	command -v tmux >/dev/null || skip "tmux is not installed (scripts/install-deps)"
	SOCK="$BATS_TEST_TMPDIR/tmux.sock"
	unset NO_COLOR
}

teardown() {
	tui_end
	tmux -S "$SOCK" kill-server 2>/dev/null || true
	[ -s "$BATS_TEST_TMPDIR/run.pid" ] && kill -- "-$(cat "$BATS_TEST_TMPDIR/run.pid")" 2>/dev/null
	# the mock of a test that started one (its files go: the next test starts its own)
	[ -f "$BATS_FILE_TMPDIR/mock.pid" ] && mock_stop && rm -f "$BATS_FILE_TMPDIR/mock.pid" "$BATS_FILE_TMPDIR/port"
	true
}

tm() { tmux -S "$SOCK" -f /dev/null "$@"; }

# tui_end: a forge tui the test left running ends by SIGTERM before the
# server goes.  Killing the server hangs the terminal up, and the kernel's
# SIGCONT that follows the SIGHUP can cancel the SIGSTOP of LeakSanitizer's
# exit-time check (ASan builds): the process then spins for ever, orphaned.
tui_end() {
	local shell i
	shell=$(tm list-panes -t tui -F '#{pane_pid}' 2>/dev/null) || return 0
	pkill -TERM -P "$shell" 2>/dev/null || return 0
	for i in $(seq 600); do
		pgrep -P "$shell" >/dev/null || return 0
		screen | grep -qF "tui exited " && return 0
		sleep 0.1
	done
}

# tm_fresh: kill the server and use a new socket: kill-server returns before
# the server is gone, and a session started at once on the same socket may
# reach the exiting server ("server exited unexpectedly", seen in CI).
tm_fresh() {
	tm kill-server
	SOCK="$BATS_TEST_TMPDIR/tmux.$RANDOM$RANDOM.sock"
}

# tui_start [ENV=VALUE...]: forge tui $TUI_ARGS in a 100x30 terminal; when it ends the
# pane shows "tui exited N" and whether the terminal is back in canonical
# mode with echo (the modes curses changed), and stays open.
tui_start() {
	local after="echo \"tui exited \$?\"; stty -a | tr ' ;' '\\n\\n' |"
	after+=" grep -x -e icanon -e -icanon -e echo -e -echo | tr '\\n' ' '; echo; exec sleep 600"
	tm new-session -d -x 100 -y 30 -s tui "env LC_ALL=C.UTF-8 $* forge tui ${TUI_ARGS:-}; $after"
}

screen() { tm capture-pane -p -t tui "$@"; }

# wait_for TEXT: the screen shows TEXT within 60 s (polled every 0.1 s),
# else fail with the screen.
wait_for() {
	local i
	for i in $(seq 600); do
		screen -J | grep -qF -- "$1" && return 0
		sleep 0.1
	done
	echo "never on the screen: $1" >&2
	screen >&2
	return 1
}

# A run that waits at the architecture gate (forge run exits 4); $T its trace.
paused_run() {
	run -4 --separate-stderr forge run --config "$CFG" "add a mul operation" </dev/null
	T=$(forge history --json -n 1 | jq -r .trace_id)
}

pending_gate() { forge gate list --json "$1" | jq -r .id; }

# quit_ok: q ends forge tui with status 0 (under ASan: nothing leaked).
quit_ok() {
	tm send-keys -t tui q
	wait_for "tui exited "
	wait_for "tui exited 0"
}

@test "the run list shows the store's runs: trace, status, a waiting gate, phase, cost, task" {
	paused_run
	tui_start
	wait_for "forge tui: 1 run in $FORGE_DB"
	run -0 screen
	[[ "$output" == *"TRACE                       STATUS           PHASE           COST   AGE  TASK"* ]]
	[[ "$output" =~ $T"  paused      gate plan          0.0191 "+[0-9]+[smhd]"  add a mul operation" ]]
}

@test "a store of more runs than the list holds: the header says how many, and an older run waiting at a gate is still listed" {
	paused_run
	# 600 newer runs (before: "500 runs", and the waiting run fell off the list)
	sqlite3 "$FORGE_DB" "with recursive n(i) as (select 1 union all select i + 1 from n where i < 600)
		insert into runs (id, task, repo, status, started_at, updated_at)
		select printf('01JFILL%019d', i), 'filler ' || i, '$REPO', 'completed', '2099-01-01T00:00:00.000Z',
		       '2099-01-01T00:00:00.000Z' from n"
	tui_start
	wait_for "forge tui: 501 of 601 runs (the newest, and those at a gate) in "
	tm send-keys -t tui End
	wait_for "$T"
	quit_ok
}

@test "the selected run at the end of a full list stays listed and selected when a new run comes in" {
	forge-db migrate >/dev/null
	sqlite3 "$FORGE_DB" "with recursive n(i) as (select 1 union all select i + 1 from n where i < 500)
		insert into runs (id, task, repo, status, started_at, updated_at)
		select printf('01JFILL%019d', i), 'filler ' || i, '$REPO', 'completed',
		       printf('2099-01-01T00:%02d:%02d.000Z', i / 60, i % 60), '2099-01-01T00:00:00.000Z' from n"
	tui_start
	wait_for "forge tui: 500 runs in"
	tm send-keys -t tui End
	wait_for "01JFILL0000000000000000001"
	sqlite3 "$FORGE_DB" "insert into runs (id, task, repo, status, started_at, updated_at)
		values ('01JNEW00000000000000000001', 'new', '$REPO', 'completed', '2099-01-02T00:00:00.000Z', '2099-01-02T00:00:00.000Z')"
	wait_for "forge tui: 501 runs in"
	# before: 500 of 501 listed, and the selection on …002
	tm send-keys -t tui Enter
	wait_for "run      01JFILL0000000000000000001"
	quit_ok
}

@test "Enter opens the run: cost against the budget, nodes, the gate, each phase's cost, the timeline, the model's replies" {
	paused_run
	tui_start
	wait_for "$T"
	tm send-keys -t tui Enter
	wait_for "run      $T"
	run -0 screen
	[[ "$output" == *"status   paused at plan"* ]]
	[[ "$output" == *'cost     $0.0191 of $50.00 budget (4870 tokens)'* ]]
	[[ "$output" == *"nodes    plan done  implement pending  review pending  test pending  deploy pending"* ]]
	[[ "$output" == *"gate     architecture_approval pending (g answers it): Review proposed architecture before"* ]]
	[[ "$output" == *'  plan       $0.0191  3 calls  4870 tokens'* ]]
	[[ "$output" == *"plan      plan ok in "*" ms: plan v1: 2 tasks, risk high"* ]]
	# the model's text and the tools it called
	[[ "$output" == *"    Let me look at the calculator first."* ]]
	[[ "$output" == *'  -> read_file {"path":"calc.c"}'* ]]
	# Esc goes back to the list
	tm send-keys -t tui Escape
	wait_for "TRACE                       STATUS"
	quit_ok
}

@test "g shows what the gate needs (the plan) and y approves it in the store; forge resume then completes the run, and the list follows" {
	paused_run
	G=$(pending_gate "$T")
	tui_start
	wait_for "$T"
	tm send-keys -t tui g
	wait_for "Plan: Add a mul operation to calc: calc mul A B prints A times B."
	run -0 screen
	[[ "$output" == *"gate architecture_approval ($G) of run $T"* ]]
	[[ "$output" == *"Risk: high (score 0.60)"* ]]
	[[ "$output" == *"y approve  n reject (a note)  e approve with a note  Esc back"* ]]
	tm send-keys -t tui y
	wait_for "approved $G; continue with: forge resume $T"
	# the store says so, as after `forge gate approve`
	forge gate list --all --json "$T" | jq -e --arg g "$G" 'select(.id == $g) | .status == "approved" and .decided_by == "human"'
	[ "$(forge status --json "$T" | jq -c .pending_gates)" = "[]" ]
	forge events replay "$T" | jq -se 'map(select(.type == "gate.approved")) | length == 1 and .[0].payload.by == "human" and .[0].payload.note == null' >/dev/null
	[ "$(forge events replay "$T" | jq -r 'select(.type == "gate.approved") | .source')" = forge-tui ]
	# resumed in another process: the run moves on the screen
	run -0 --separate-stderr forge resume --config "$CFG" "$T" </dev/null
	wait_for "$T  completed"
	quit_ok
}

@test "n rejects the gate with a note, e approves with one (remembered like forge gate's)" {
	paused_run
	G=$(pending_gate "$T")
	tui_start
	wait_for "$T"
	tm send-keys -t tui g
	wait_for "Risk: high"
	tm send-keys -t tui n
	wait_for "why rejected"
	tm send-keys -t tui -l "too risky"
	tm send-keys -t tui Enter
	wait_for "rejected $G"
	forge gate list --all --json "$T" | jq -e '.status == "rejected" and .note == "too risky"'
	# a second run, approved with a note
	paused_run
	G2=$(pending_gate "$T")
	wait_for "$T"
	# the selection stayed on its run; the new one is above it
	tm send-keys -t tui Up g
	wait_for "($G2)"
	tm send-keys -t tui e
	wait_for "note (Enter approves"
	tm send-keys -t tui -l "keep the usage line in sync"
	tm send-keys -t tui Enter
	wait_for "approved $G2"
	forge gate list --all --json "$T" | jq -e '.status == "approved" and .note == "keep the usage line in sync"'
	forge memory list --json | jq -se 'map(tostring) | any(contains("keep the usage line in sync"))'
	quit_ok
}

@test "Esc at the gate leaves it waiting; g on a run without a gate says so" {
	paused_run
	tui_start
	wait_for "$T"
	tm send-keys -t tui g
	wait_for "Risk: high"
	tm send-keys -t tui Escape
	wait_for "TRACE                       STATUS"
	[ "$(forge gate list --json "$T" | jq -r .status)" = pending ]
	forge gate approve "$(pending_gate "$T")" >/dev/null
	wait_for "$T  paused           plan"
	tm send-keys -t tui g
	wait_for "no gate is waiting in run $T"
	quit_ok
}

@test "a run started in another process while the TUI is open appears in the list" {
	tui_start
	wait_for "forge tui: 0 runs"
	wait_for "no runs yet"
	paused_run
	wait_for "forge tui: 1 run in"
	wait_for "$T  paused      gate plan"
}

@test "a database removed while the TUI runs is said on the screen (the runs shown are from before); a new one at its path is read" {
	paused_run
	tui_start
	wait_for "forge tui: 1 run in "
	wait_for "$T"
	rm -f "$FORGE_DB" "$FORGE_DB"-*
	# before: the open connection still read the removed file, and its run stayed as the store's
	# (the path last: the width of the screen may cut it)
	wait_for "database gone, the runs shown are from before: "
	wait_for "$T"
	forge-db migrate >/dev/null
	wait_for "forge tui: 0 runs in "
	wait_for "database replaced, the runs shown are the new one's: "
	quit_ok
}

@test "a run left running by a dead process is interrupted in the list and in the run view, as forge status and show say" {
	paused_run
	# as if its process had died while it ran (lifecycle.bats does the same)
	true & dead=$!
	wait "$dead"
	sqlite3 "$FORGE_DB" "update runs set status = 'running' where id = '$T';
		insert into leases (trace_id, holder, pid, host, program, acquired_at) values ('$T', 'GONE', $dead, '$(hostname)', 'forge-supervisor', '2026-01-01T00:00:00.000Z')"
	run -0 forge status "$T"
	assert_line --regexp "^status +interrupted at plan"
	run -0 forge show "$T"
	assert_line --regexp "^status +interrupted at plan"
	tui_start
	wait_for "$T  interrupted gate plan"
	tm send-keys -t tui Enter
	wait_for "status   interrupted at plan"
	tm send-keys -t tui Escape
	wait_for "TRACE                       STATUS"
	# a living holder (a process of the lease's program): running again, in both
	cp /bin/sleep "$BATS_TEST_TMPDIR/forge-supervisor"
	"$BATS_TEST_TMPDIR/forge-supervisor" 600 3>&- &
	live=$!
	sqlite3 "$FORGE_DB" "update leases set pid = $live where trace_id = '$T'"
	wait_for "$T  running     gate plan"
	quit_ok
	kill "$live"
}

@test "the model's text shows as it streams, from a run in another process, while the call is open" {
	load test_helper/mock
	mock_start
	export FORGE_PROVIDER=anthropic FORGE_BASE_URL="$MOCK_URL" ANTHROPIC_API_KEY=test-key
	unset FORGE_CASSETTE
	# plan's answers; the first one's text is sent, then the stream waits
	# (mock_llm pause_after: message_start, block start, ping, the text) until
	# $GO exists
	GO="$BATS_TEST_TMPDIR/go"
	mock_steps "$(jq -sc --arg go "$GO" '[.[].response | {text: (.text // ""), tool_calls, usage}]
	  | .[0] += {text: "Reading calc.c to see\nhow operations are added.", chunk: 1000, pause_after: 4, pause_file: $go}' \
	  "$FORGE_ROOT/tests/fixtures/cassettes/plan-calc.jsonl")"
	setsid forge run -q --phases plan "add a mul operation" </dev/null >"$BATS_TEST_TMPDIR/run.out" 2>&1 3>&- &
	echo $! >"$BATS_TEST_TMPDIR/run.pid"
	tui_start
	wait_for "  add a mul operation"
	tm send-keys -t tui Enter
	wait_for "model now (plan, "
	# the row is made when the call starts, its text written as it comes:
	# wait for the text, not just the heading
	wait_for "    how operations are added."
	run -0 screen
	[[ "$output" == *$'    Reading calc.c to see\n    how operations are added.'* ]]
	# the row is the store's, while the call is open
	T=$(forge history --json -n 1 | jq -r .trace_id)
	[ "$(sqlite3 "$FORGE_DB" "select text from live_text where trace_id = '$T'")" = $'Reading calc.c to see\nhow operations are added.' ]
	# the answer completes: the live row is gone, the reply is in the model's replies
	touch "$GO"
	wait "$(cat "$BATS_TEST_TMPDIR/run.pid")"
	rm "$BATS_TEST_TMPDIR/run.pid"
	wait_for "$T"
	run -0 sqlite3 "$FORGE_DB" "select count(*) from live_text"
	assert_output 0
	tm send-keys -t tui r
	run -0 screen
	[[ "$output" != *"model now"* ]]
	# nothing of it went to the events (the finished reply is in llm_calls)
	run -0 sqlite3 "$FORGE_DB" "select count(*) from events where payload like '%how operations are added%'"
	assert_output 0
	quit_ok
}

@test "two sub-agents of one phase streaming at once: each call headed by its span, their texts apart" {
	paused_run
	# the rows two sub-agents' processes write while their calls stream
	# (span_id: each one's span, phase the calls count under), and the
	# phase's own; alive: this shell's pid on this host
	now=$(date -u +%Y-%m-%dT%H:%M:%S.000Z)
	host=$(hostname)
	for r in "c1|implement||Handing out the reading." \
		 "c2|implement-sub|01JSUBAGENTAAAAAAAAAAAAAAA|Reading calc.c now." \
		 "c3|implement-sub|01JSUBAGENTBBBBBBBBBBBBBBB|Reading calc.h now."; do
		IFS='|' read -r id phase span text <<<"$r"
		sqlite3 "$FORGE_DB" "insert into live_text (call_id, trace_id, phase, model, span_id, pid, host, text,
			started_at, updated_at) values ('$id', '$T', '$phase', 'm-1', nullif('$span', ''), $$, '$host',
			'$text', '$now', '$now')"
	done
	tui_start
	wait_for "$T"
	tm send-keys -t tui Enter
	wait_for "model now (implement › sub-agent BBBBBBBB, m-1)"
	run -0 screen
	[[ "$output" == *$'model now (implement, m-1)\n    Handing out the reading.\n'* ]]
	[[ "$output" == *$'model now (implement › sub-agent AAAAAAAA, m-1)\n    Reading calc.c now.\n'* ]]
	[[ "$output" == *$'model now (implement › sub-agent BBBBBBBB, m-1)\n    Reading calc.h now.\n'* ]]
	# one ends: its row goes by its own id, the other sub-agent's stays
	sqlite3 "$FORGE_DB" "delete from live_text where call_id = 'c2'"
	tm send-keys -t tui r
	for i in $(seq 600); do
		screen | grep -qF "sub-agent AAAAAAAA" || break
		sleep 0.1
	done
	run -0 screen
	[[ "$output" != *"sub-agent AAAAAAAA"* ]]
	[[ "$output" == *$'model now (implement › sub-agent BBBBBBBB, m-1)\n    Reading calc.h now.\n'* ]]
	quit_ok
}

@test "a text block that ended is whole in the live row while the call goes on (its tool call's JSON still to come)" {
	load test_helper/mock
	mock_start
	export FORGE_PROVIDER=anthropic FORGE_BASE_URL="$MOCK_URL" ANTHROPIC_API_KEY=test-key
	unset FORGE_CASSETTE
	# the text in 10 pieces sent at once, the block's end, then the stream
	# waits before the tool call (message_start, block start, ping, 10 pieces,
	# content_block_stop: 14 events) until $GO exists; the pieces after the
	# first come within the write interval, so only the block's end writes them
	GO="$BATS_TEST_TMPDIR/go"
	mock_steps "$(jq -sc --arg go "$GO" '[.[].response | {text: (.text // ""), tool_calls, usage}]
	  | .[0] += {text: "Reading calc.c to see\nhow operations are added.", chunk: 5, pause_after: 14, pause_file: $go}' \
	  "$FORGE_ROOT/tests/fixtures/cassettes/plan-calc.jsonl")"
	setsid forge run -q --phases plan "add a mul operation" </dev/null >"$BATS_TEST_TMPDIR/run.out" 2>&1 3>&- &
	echo $! >"$BATS_TEST_TMPDIR/run.pid"
	want=$'Reading calc.c to see\nhow operations are added.'
	for i in $(seq 300); do
		got=$(sqlite3 "$FORGE_DB" "select text from live_text" 2>/dev/null || true)
		[ "$got" = "$want" ] && break
		sleep 0.1
	done
	[ "$got" = "$want" ]
	touch "$GO"
	wait "$(cat "$BATS_TEST_TMPDIR/run.pid")"
	rm "$BATS_TEST_TMPDIR/run.pid"
	[ "$(sqlite3 "$FORGE_DB" "select count(*) from live_text")" -eq 0 ]
}

@test "a piped phase's calls stream for the live text (agent.live_text, on by default); false: they do not" {
	load test_helper/mock
	mock_start
	export FORGE_PROVIDER=anthropic FORGE_BASE_URL="$MOCK_URL" ANTHROPIC_API_KEY=test-key
	unset FORGE_CASSETTE
	mock_steps "$(jq -sc '[.[].response | {text: (.text // ""), tool_calls, usage}]' "$FORGE_ROOT/tests/fixtures/cassettes/plan-calc.jsonl")"
	run -0 --separate-stderr forge-plan --task "add a mul operation"
	[ "$(curl -sS -f "$MOCK_URL/_mock/requests" | jq -c '[.[].body.stream] | unique')" = '[true]' ]
	# each call's row went when it ended
	[ "$(sqlite3 "$FORGE_DB" "select count(*) from live_text")" -eq 0 ]
	mock_reset
	mock_steps "$(jq -sc '[.[].response | {text: (.text // ""), tool_calls, usage}]' "$FORGE_ROOT/tests/fixtures/cassettes/plan-calc.jsonl")"
	forge config set agent.live_text false >/dev/null
	run -0 --separate-stderr forge-plan --task "add a mul operation"
	[ "$(curl -sS -f "$MOCK_URL/_mock/requests" | jq -c '[.[].body.stream] | unique')" = '[null]' ]
}

@test "colours by default; NO_COLOR: none at all" {
	paused_run
	sgr_colour=$'\e\\[([0-9;]*;)?[34][0-7](;[0-9;]*)?m'
	tui_start
	wait_for "$T"
	screen -e | grep -qE "$sgr_colour"
	tm_fresh
	tui_start NO_COLOR=1
	wait_for "$T"
	run -0 screen -e
	! grep -qE "$sgr_colour" <<<"$output" || false
	# the selection still shows, in reverse video
	grep -qF $'\e[7m'"$T" <<<"$output"
}

@test "a terminal too small says so; resized back, the list returns" {
	paused_run
	tui_start
	wait_for "$T"
	tm resize-window -t tui -x 50 -y 10
	wait_for "terminal too small (50x10): forge tui needs 65x12"
	tm resize-window -t tui -x 64 -y 12
	wait_for "terminal too small (64x12): forge tui needs 65x12"
	# the smallest size: a row holds its run up to the cost, the footer whole
	tm resize-window -t tui -x 65 -y 12
	wait_for "$T  paused      gate plan          0.0191"
	wait_for " q quit  Enter open  g gate  : commands  m models"
	run -0 screen
	[[ "$output" == *"TRACE                       STATUS           PHASE           COST"* ]]
	tm resize-window -t tui -x 100 -y 30
	wait_for "$T"
	run -0 screen
	[[ "$output" != *"too small"* ]]
}

@test "q exits with status 0 and the terminal restored; so does Ctrl-C" {
	tui_start
	wait_for "forge tui: 0 runs"
	tm send-keys -t tui q
	wait_for "tui exited 0"
	wait_for "icanon echo"
	[[ "$(screen)" != *"forge tui:"* ]]   # the alternate screen is gone
	tm_fresh
	tui_start
	wait_for "forge tui: 0 runs"
	tm send-keys -t tui C-c
	wait_for "tui exited 0"
	wait_for "icanon echo"
}

@test "the palette runs the command as a process: show of the selected run, then back" {
	paused_run
	tui_start
	wait_for "$T"
	tm send-keys -t tui :
	wait_for "commands (the selected run: $T"
	tm send-keys -t tui s Enter
	wait_for "[forge show exited 0; press Enter to return]"
	wait_for "next      forge gate approve"
	tm send-keys -t tui Enter
	wait_for "forge show exited 0"
	wait_for "TRACE                       STATUS"
	quit_ok
}

# palette_run_prompt: forge tui (--config $CFG) with no runs, its palette's
# first command (run) chosen: it asks for the task.
palette_run_prompt() {
	TUI_ARGS="--config $CFG" tui_start
	wait_for "forge tui: 0 runs"
	tm send-keys -t tui :
	wait_for "commands"
	tm send-keys -t tui Enter
	wait_for "task:"
}

@test "the palette's run asks for the task and runs forge run on the terminal with forge tui's options: its gate asks there" {
	palette_run_prompt
	tm send-keys -t tui -l "add a mul operation"
	tm send-keys -t tui Enter
	wait_for "\$ forge run --config $CFG -- add a mul operation"
	wait_for "approve? [y]es / [n]o"
	tm send-keys -t tui y Enter
	wait_for "[forge run exited 0; press Enter to return]"
	tm send-keys -t tui Enter
	T=$(forge history --json -n 1 | jq -r .trace_id)
	wait_for "$T  completed"
	forge events replay "$T" | jq -se 'map(select(.type == "gate.approved")) | length == 1 and .[0].payload.by == "human"' >/dev/null
	quit_ok
}

@test "the palette's run takes a task that starts with '-' as the task, not as an option of forge run" {
	palette_run_prompt
	# before: forge run: unknown option '--dry-run: add a mul operation', exit 2
	tm send-keys -t tui -l -- "--dry-run: add a mul operation"
	tm send-keys -t tui Enter
	wait_for "approve? [y]es / [n]o"
	tm send-keys -t tui n Enter
	wait_for "[forge run exited "
	tm send-keys -t tui Enter
	wait_for "TRACE                       STATUS"
	[ "$(forge history --json -n 1 | jq -r .task)" = "--dry-run: add a mul operation" ]
	quit_ok
}

# 40 runs 01JLIST…01 to …40, the newest (…40) first.
forty_runs() {
	forge-db migrate >/dev/null
	sqlite3 "$FORGE_DB" "with recursive n(i) as (select 1 union all select i + 1 from n where i < 40)
		insert into runs (id, task, repo, status, started_at, updated_at)
		select printf('01JLIST%019d', i), 'task ' || i, '$REPO', 'completed',
		       printf('2026-01-01T00:00:%02d.000Z', i), '2026-01-01T00:00:00.000Z' from n"
}

# wait_gone TEXT: the screen stops showing TEXT within 60 s, else fail.
wait_gone() {
	local i
	for i in $(seq 600); do
		screen | grep -qF -- "$1" || return 0
		sleep 0.1
	done
	echo "still on the screen: $1" >&2
	screen >&2
	return 1
}

@test "a message too long for the footer takes a row of its own: the selected run stays above it; the next key ends it" {
	forty_runs
	tui_start
	wait_for "forge tui: 40 runs"
	# the list's last row (…14, on the screen's row 29 of 30) selected
	for i in $(seq 26); do tm send-keys -t tui j; done
	tm send-keys -t tui g
	wait_for "no gate is waiting in run 01JLIST0000000000000000014"
	# before: the message covered that row, and the selection walked under it
	wait_for "01JLIST0000000000000000014  completed"
	tm send-keys -t tui j
	wait_gone "no gate is waiting"
	tm send-keys -t tui Enter
	wait_for "run      01JLIST0000000000000000013"
	quit_ok
}

@test "forge tui wants a terminal (exit 2) and takes no operands" {
	run -2 --separate-stderr forge tui </dev/null
	[ "$stderr" = "forge-tui: stdin and stdout must be a terminal" ]
	run -2 --separate-stderr forge tui extra
	[[ "$stderr" == *"no operands expected"* ]]
	# a terminal that cannot move its cursor (before: a header, a footer
	# and nothing between)
	run -0 python3 "$FORGE_ROOT/tests/helpers/pty_run.py" --transcript "$BATS_TEST_TMPDIR/t" -- \
		sh -c 'TERM=dumb forge tui; echo "tui exited $?"'
	grep -q "the terminal cannot move its cursor (TERM=dumb)" "$BATS_TEST_TMPDIR/t"
	grep -q "tui exited 2" "$BATS_TEST_TMPDIR/t"
}

@test "m picks a phase's provider and model and writes them to .forge/config.json (validated); the picker then shows them" {
	MODEL=$(jq -r '.models | keys_unsorted | map(select(startswith("claude-") | not)) | .[0]' "$FORGE_ROOT/schemas/pricing.json")
	tui_start
	wait_for "forge tui: 0 runs"
	tm send-keys -t tui m
	wait_for "model picker: the phase"
	# review, openai, the first openai model of the price table
	tm send-keys -t tui Down Down Enter
	wait_for "the provider"
	tm send-keys -t tui Down Enter
	wait_for "$MODEL"
	tm send-keys -t tui Enter
	# (the file relative to the repository: its absolute path was cut at the screen's edge)
	wait_for "review: openai / $MODEL in .forge/config.json"
	jq -e --arg m "$MODEL" '.llm.phases.review == {"provider": "openai", "model": $m}' "$REPO/.forge/config.json"
	[ "$(forge config get llm.phases.review.model)" = "$MODEL" ]
	tm send-keys -t tui m
	wait_for "review     openai / $MODEL"
	tm send-keys -t tui Escape
	wait_for "TRACE                       STATUS"
	quit_ok
}

@test "the model picker refuses to write over a project configuration that is not valid JSON" {
	tui_start
	wait_for "forge tui: 0 runs"
	# broken while the TUI is open (it would not start on it)
	mkdir -p "$REPO/.forge"
	echo '{"llm": ' >"$REPO/.forge/config.json"
	tm send-keys -t tui m
	wait_for "model picker: the phase"
	tm send-keys -t tui Enter Enter Enter
	wait_for ".forge/config.json: Unfinished JSON term"
	[ "$(cat "$REPO/.forge/config.json")" = '{"llm": ' ]
	quit_ok
}

@test "a run whose model call failed (no response) and whose tests have no failures list opens: the error shown, no crash" {
	paused_run
	# a call that failed after its retries has no response (lib/llm/llm_log.c:
	# its replies' tool_calls are null); a tests result needs only its summary
	sqlite3 "$FORGE_DB" "update llm_calls set response = null, error = 'HTTP 500 from the provider'
		where id = (select max(id) from llm_calls where trace_id = '$T')"
	sqlite3 "$FORGE_DB" "update checkpoints set state = json_set(state, '\$.tests',
		json('{\"summary\": {\"passed\": 3, \"failed\": 0, \"total\": 3}}'), '\$.review',
		json('{\"decision\": \"approve\"}')) where id = (select id from checkpoints where trace_id = '$T'
		order by ts desc, id desc limit 1)"
	tui_start
	wait_for "$T"
	tm send-keys -t tui Enter
	wait_for "error: HTTP 500 from the provider"
	wait_for "3 passed, 0 failed of 3"
	wait_for "findings (review: approve)"
	quit_ok
}

@test "a crash (SIGABRT) leaves the terminal restored: canonical mode, echo, the alternate screen left" {
	tui_start
	wait_for "forge tui: 0 runs"
	pid=$(pgrep -s "$(tm display -p -t tui '#{pane_pid}')" forge-tui)
	kill -ABRT "$pid"
	wait_for "tui exited 134"
	wait_for "icanon echo"
	[[ "$(screen)" != *"forge tui:"* ]]   # the alternate screen is gone
}

@test "a note pasted on two lines: the first line is the note, the rest is dropped, not taken as keys that answer another run's gate" {
	paused_run
	T1=$T
	paused_run
	G=$(pending_gate "$T")
	tui_start
	wait_for "$T1"
	tm send-keys -t tui g
	wait_for "($G)"
	tm send-keys -t tui e
	wait_for "note (Enter approves"
	# its second line as keys: j the other run, g its gate, y approve
	tm set-buffer -b p "$(printf 'LGTM\njust go, yes')"
	tm paste-buffer -b p -t tui
	wait_for "approved $G"
	# a key after the paste: what was pasted before it has been read
	tm send-keys -t tui :
	wait_for "commands (the selected run: $T"
	tm send-keys -t tui Escape
	forge gate list --all --json "$T" | jq -e '.status == "approved" and .note == "LGTM"'
	forge gate list --json "$T1" | jq -e '.status == "pending"'
	quit_ok
}

@test "control characters of a task or a gate's prompt are drawn as spaces: a \\r cannot overwrite the row's trace, status and gate" {
	paused_run
	G=$(pending_gate "$T")
	sqlite3 "$FORGE_DB" "update runs set task = 'delete every test' || char(13) || '01FAKEFAKEFAKEFAKEFAKEFAKE  completed' where id = '$T';
		update gates set prompt = 'it deletes the tests' || char(13) || 'Safe change' || char(8, 9) || 'press y' where id = '$G'"
	tui_start
	wait_for "$T  paused      gate plan"
	wait_for "delete every test 01FAKE"
	tm send-keys -t tui g
	wait_for "it deletes the tests Safe change  press y"
	tm send-keys -t tui Escape
	quit_ok
}

@test "wide characters are cut at the screen's edge by their width: a task of 80 CJK characters does not spill onto the next row" {
	paused_run
	sqlite3 "$FORGE_DB" "update runs set task = '$(printf '漢字%.0s' $(seq 40))' where id = '$T'"
	tui_start
	wait_for "$T  paused"
	run -0 screen
	# the row of the only run is the third; the fourth stays empty
	[ -z "$(sed -n 4p <<<"$output" | tr -d ' ')" ]
	quit_ok
}

@test "SIGTERM, SIGINT or SIGHUP end forge tui with status 130 (interrupted), the terminal restored" {
	for sig in TERM INT HUP; do
		[ "$sig" = TERM ] || tm_fresh
		tui_start
		wait_for "forge tui: 0 runs"
		kill "-$sig" "$(pgrep -s "$(tm display -p -t tui '#{pane_pid}')" forge-tui)"
		wait_for "tui exited 130"
		wait_for "icanon echo"
	done
}

@test "a terminal that goes away without a SIGHUP (not its controlling terminal) ends forge tui (130), no busy loop" {
	# forge tui in a session of its own on a pty; the pty's other end closed
	run -0 python3 - <<'PY'
import os, subprocess, select, sys
m, s = os.openpty()
import fcntl, termios, struct
fcntl.ioctl(s, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
env = dict(os.environ, TERM="xterm", LC_ALL="C.UTF-8")
p = subprocess.Popen(["forge", "tui"], stdin=s, stdout=s, stderr=s, env=env, start_new_session=True)
os.close(s)
seen = b""
while b"forge tui: 0 runs" not in seen:
    r, _, _ = select.select([m], [], [], 60)
    if not r:
        sys.exit("the list never came")
    seen += os.read(m, 65536)
os.close(m)
try:
    print("exited", p.wait(timeout=60))
except subprocess.TimeoutExpired:
    p.kill()
    print("still running")
PY
	assert_output "exited 130"
}

@test "a note that is not UTF-8 (a Latin-1 terminal) is refused as forge gate refuses it: the gate stays pending" {
	paused_run
	G=$(pending_gate "$T")
	tui_start LC_ALL=C
	wait_for "$T"
	tm send-keys -t tui g
	wait_for "($G)"
	tm send-keys -t tui e
	wait_for "note (Enter approves"
	tm send-keys -t tui -l "caf"
	tm send-keys -t tui -H e9
	tm send-keys -t tui -l " ok"
	tm send-keys -t tui Enter
	wait_for "the note is not valid UTF-8"
	forge gate list --json "$T" | jq -e '.status == "pending"'
	[ "$(sqlite3 "$FORGE_DB" "select count(*) from events where type in ('gate.approved', 'gate.rejected') and trace_id = '$T'")" = 0 ]
	quit_ok
}

@test "a resize at the palette's 'press Enter to return' does not return: the command's output stays until Enter" {
	paused_run
	tui_start
	wait_for "$T"
	tm send-keys -t tui :
	wait_for "commands (the selected run: $T"
	tm send-keys -t tui s Enter
	wait_for "[forge show exited 0; press Enter to return]"
	tm resize-window -t tui -x 120 -y 40
	# still waiting for Enter: q is not a key of the list here, Enter returns
	tm send-keys -t tui q Enter
	wait_for "TRACE                       STATUS"
	tm send-keys -t tui :
	wait_for "commands (the selected run: $T"
	tm send-keys -t tui Escape
	quit_ok
}

@test "another host's live text not written for over a day is not shown (its writer is gone, as forge gc judges); a fresh one is" {
	paused_run
	old=$(date -u -d '9 days ago' +%Y-%m-%dT%H:%M:%S.000Z)
	now=$(date -u +%Y-%m-%dT%H:%M:%S.000Z)
	for r in "c1|$old|half a sentence" "c2|$now|fresh text"; do
		IFS='|' read -r id at text <<<"$r"
		sqlite3 "$FORGE_DB" "insert into live_text (call_id, trace_id, phase, model, pid, host, text, started_at,
			updated_at) values ('$id', '$T', 'plan', 'm-1', 1, 'ci-runner-7', '$text', '$at', '$at')"
	done
	tui_start
	wait_for "$T"
	tm send-keys -t tui Enter
	wait_for "    fresh text"
	run -0 screen
	[[ "$output" != *"half a sentence"* ]]
	quit_ok
}
