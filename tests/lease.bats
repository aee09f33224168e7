#!/usr/bin/env bats
# lease.bats - a run's lease across machines: the supervisor, and a phase
# filter run by hand on a state, renew it (supervisor.lease_renew_s) while
# silent; a lease of another host that this host has seen unchanged (no
# renewal) for supervisor.lease_ttl_s, by its own clock, is dead and
# `forge resume` takes it over; one not seen so is refused (exit 4, naming
# the host and the renewal) unless `forge resume --steal`, whatever the two
# clocks say; a live one of this host never, and that is the process that
# took it (pid and start), not whatever has its pid now.  Another host's
# lease is faked by writing its row (db_q), what this host saw of it by
# ageing its lease_sightings row, and another machine by a preloaded
# library (tests/fixtures/preload/host-clock.c).  make check-pg runs it on
# PostgreSQL too.

bats_require_minimum_version 1.5.0

load test_helper/mock
MOCK_BACKENDS=1   # make check-pg: also on PostgreSQL
mock_per_file

setup() {
	load test_helper/common
	forge_setup
	export BATS_TEST_TIMEOUT=120
	calc_setup
}

teardown() {
	[ -s "$BATS_TEST_TMPDIR/r1.pid" ] && kill -9 -- "-$(cat "$BATS_TEST_TMPDIR/r1.pid")" 2>/dev/null
	[ -s "$BATS_TEST_TMPDIR/other.pid" ] && kill -9 "$(cat "$BATS_TEST_TMPDIR/other.pid")" 2>/dev/null
	true
}

last_trace() {
	forge history --json -n 1 | jq -r .trace_id
}

events_of() {
	forge events replay "$1" | jq -c --arg t "$2" 'select(.type == $t) | .payload'
}

use_mock() {
	export FORGE_PROVIDER=anthropic FORGE_BASE_URL="$MOCK_URL" ANTHROPIC_API_KEY=test-key
	curl -sS -f -X POST "$MOCK_URL/_mock/reset" >/dev/null
	local c=$FORGE_ROOT/tests/fixtures/cassettes
	if [ ! -s "$BATS_FILE_TMPDIR/impl.json" ]; then
		jq -sc '[.[].response | {text: (.text // ""), tool_calls, usage}]' "$c/plan-calc.jsonl" \
			>"$BATS_FILE_TMPDIR/plan.json"
		jq -sc '[.[].response | {text: (.text // ""), tool_calls, usage}]' "$c/implement-calc.jsonl" \
			>"$BATS_FILE_TMPDIR/impl.json"
	fi
	PLAN=$(<"$BATS_FILE_TMPDIR/plan.json")
	IMPL=$(<"$BATS_FILE_TMPDIR/impl.json")
}

script() {
	printf '%s' "$1" | curl -sS -f -X POST -H 'content-type: application/json' \
		--data-binary @- "$MOCK_URL/_mock/script?replace=1" >/dev/null
}

# A run that failed at implement (the model down), recorded as still running
# under a lease of HOST (pid 4242) renewed at RENEWED ("null": never).
left_on_host() {
	use_mock
	mkdir -p .forge
	echo '{"llm": {"max_retries": 0}}' >.forge/config.json
	script "$(jq -nc --argjson p "$PLAN" '$p + [{fault: "server_error", times: "always"}]')"
	run -5 --separate-stderr forge run -q "add a mul operation" </dev/null
	T=$(last_trace)
	local r=$2
	[ "$r" = null ] || r="'$r'"
	db_q "update runs set status = 'running', completed_at = null where id = '$T';
		insert into leases (trace_id, holder, pid, host, program, acquired_at, renewed_at)
		values ('$T', 'FAR', 4242, '$1', 'forge-supervisor', '2026-01-01T00:00:00.000Z', $r)"
	script "$IMPL"
}

now_iso() {
	date -u +%Y-%m-%dT%H:%M:%S.000Z
}

# seen_since AT: what this host saw of trace $T's lease is as it was at AT
# (this host's clock): it has seen it unchanged since then.
seen_since() {
	[ "$(db_q "select count(*) from lease_sightings where trace_id = '$T'")" -eq 1 ]
	db_q "update lease_sightings set seen_at = '$1' where trace_id = '$T'"
}

@test "another host's lease this host has seen unchanged for lease_ttl_s is dead: forge status says interrupted, resume takes it over" {
	at=$(date -u -d '-10 minutes' +%Y-%m-%dT%H:%M:%S.000Z)
	left_on_host far.example "$at"
	# renewed 10 minutes ago by its holder's clock: not seen so from here
	# yet, and that clock may be behind this one (before: dead at once)
	run -0 forge status "$T"
	assert_line --regexp "^status +running at implement"
	[ "$(db_q "select count(*) from lease_sightings")" -eq 0 ]   # (status only reads)
	run -4 --separate-stderr forge resume "$T" </dev/null
	seen_since "$(date -u -d '-3 minutes' +%Y-%m-%dT%H:%M:%S.000Z)"
	run -0 forge status "$T"
	assert_line --regexp "^status +interrupted at implement"
	run -0 --separate-stderr forge resume "$T" </dev/null
	[[ "$stderr" == *"run $T was left by pid 4242 on far.example, last renewed at $at: taking it over"* ]]
	run -0 forge status --json "$T"
	jq -e '.run.status == "completed"' <<<"$output"
	run -0 events_of "$T" run.lease_taken_over
	jq -e --arg at "$at" '.holder == "FAR" and .host == "far.example" and .pid == 4242 and .renewed_at == $at' <<<"$output"
	[ "$(db_q "select count(*) from leases")" -eq 0 ]
	[ "$(db_q "select count(*) from lease_sightings")" -eq 0 ]
}

@test "another host's lease last renewed more than an hour past the TTL ago is dead at the first look: clocks that far apart are broken" {
	left_on_host far.example '2026-01-01T00:05:00.000Z'
	run -0 forge status "$T"
	assert_line --regexp "^status +interrupted at implement"
	run -0 --separate-stderr forge resume "$T" </dev/null
	[[ "$stderr" == *"run $T was left by pid 4242 on far.example, last renewed at 2026-01-01T00:05:00.000Z: taking it over"* ]]
	run -0 forge status --json "$T"
	jq -e '.run.status == "completed"' <<<"$output"
	[ "$(db_q "select count(*) from leases")" -eq 0 ]
}

@test "another host's fresh lease is refused (exit 4, the host and the renewal named); --steal takes it and records whose it was" {
	at=$(now_iso)
	left_on_host far.example "$at"
	run -0 forge status "$T"
	assert_line --regexp "^status +running at implement"
	run -4 --separate-stderr forge resume "$T" </dev/null
	[[ "$stderr" == *"run $T is already running: forge-supervisor, pid 4242 on far.example, since 2026-01-01T00:00:00.000Z, last renewed at $at;"* ]]
	[[ "$stderr" == *"forge resume --steal $T\` (\`forge resume\` takes it once this host has seen no renewal of it for supervisor.lease_ttl_s, 120s)"* ]]
	[ "$(db_q "select holder from leases where trace_id = '$T'")" = FAR ]
	# a longer TTL in the config keeps a lease seen unchanged for ten minutes alive
	echo '{"llm": {"max_retries": 0}, "supervisor": {"lease_ttl_s": 86400}}' >.forge/config.json
	seen_since "$(date -u -d '-10 minutes' +%Y-%m-%dT%H:%M:%S.000Z)"
	run -4 --separate-stderr forge resume "$T" </dev/null
	[[ "$stderr" == *"last renewed at $at;"* ]]
	run -0 --separate-stderr forge resume -q --steal "$T" </dev/null
	[[ "$stderr" == *"took run $T's lease from forge-supervisor (holder FAR), pid 4242 on far.example, last renewed at $at"* ]]
	run -0 forge status --json "$T"
	jq -e '.run.status == "completed"' <<<"$output"
	run -0 events_of "$T" run.lease_stolen
	jq -e '.holder == "FAR" and .host == "far.example" and .pid == 4242
		and .renewed_at == $at and .since == "2026-01-01T00:00:00.000Z"' --arg at "$at" <<<"$output"
}

@test "a lease of another host never renewed (its holder killed before its first renewal) is dead once seen so for lease_ttl_s; a fresh one lives" {
	left_on_host far.example null
	at=$(now_iso)
	db_q "update leases set acquired_at = '$at'"
	run -4 --separate-stderr forge resume "$T" </dev/null
	[[ "$stderr" == *"pid 4242 on far.example, since $at, never renewed;"* ]]
	# this host has seen it never renewed since long ago (before: alive
	# forever, whatever the TTL)
	seen_since 2026-01-01T00:00:00.000Z
	run -0 forge status "$T"
	assert_line --regexp "^status +interrupted at implement"
	run -0 --separate-stderr forge resume "$T" </dev/null
	[[ "$stderr" == *"run $T was left by pid 4242 on far.example, never renewed: taking it over"* ]]
	[ "$(db_q "select count(*) from leases")" -eq 0 ]
}

@test "a phase job's lease: another host's never renewed one is taken over once seen so for the TTL, a fresh one refused (exit 4) without pointing at forge cancel" {
	use_mock
	mkdir -p .forge
	echo '{"llm": {"max_retries": 0}}' >.forge/config.json
	script "$PLAN"
	forge-plan -q --task "add a mul operation" >"$BATS_TEST_TMPDIR/plan.jsonl"
	T=$(tail -n 1 "$BATS_TEST_TMPDIR/plan.jsonl" | jq -r .trace_id)
	at=$(now_iso)
	db_q "insert into leases (trace_id, holder, pid, host, program, acquired_at, renewed_at)
		values ('$T', 'FAR', 4242, 'far.example', 'forge-implement', '$at', null)"
	run -4 --separate-stderr forge-implement <"$BATS_TEST_TMPDIR/plan.jsonl"
	[[ "$stderr" == *"trace $T is already being worked on: forge-implement, pid 4242 on far.example, since $at; wait for it or stop it (cancel its job); a lease whose process is gone is taken over: on its host at once, on another once this host has seen no renewal of it for supervisor.lease_ttl_s (120s)"* ]]
	[[ "$stderr" != *"forge cancel"* ]]
	seen_since 2026-01-01T00:00:00.000Z
	script "$IMPL"
	run -0 --separate-stderr forge-implement -q <"$BATS_TEST_TMPDIR/plan.jsonl"
	tail -n 1 <<<"$output" | jq -e '.status == "ok" and .phase == "implement"'
	[ "$(db_q "select count(*) from leases")" -eq 0 ]
}

@test "--steal never takes the lease of a live process of this host (exit 4, saying why); --steal is for resume only" {
	left_on_host "$(hostname)" null
	# a live process of the lease's program (a supervisor that is working)
	cp /bin/sleep "$BATS_TEST_TMPDIR/forge-supervisor"
	"$BATS_TEST_TMPDIR/forge-supervisor" 600 3>&- &
	live=$!
	db_q "update leases set pid = $live"
	run -4 --separate-stderr forge resume --steal "$T" </dev/null
	[[ "$stderr" == *"run $T is held by a live process of this host: forge-supervisor, pid $live, since 2026-01-01T00:00:00.000Z; --steal takes only another host's lease"* ]]
	[ "$(db_q "select holder from leases where trace_id = '$T'")" = FAR ]
	kill "$live"
	# the same pid running something else (reused after a restart): the
	# holder is gone, and resume takes the run over (before: refused, exit 4)
	db_q "update leases set pid = $$"
	run -0 --separate-stderr forge resume "$T" </dev/null
	[[ "$stderr" != *"held by a live process"* ]]
	[ "$(db_q "select count(*) from leases where trace_id = '$T' and holder = 'FAR'")" = 0 ]
	run -2 --separate-stderr forge run --steal "a task"
	[[ "$stderr" == "forge run: unknown option '--steal'"* ]]
}

@test "supervisor.lease_ttl_s must be more than twice supervisor.lease_renew_s (exit 2)" {
	left_on_host far.example '2026-01-01T00:05:00.000Z'
	echo '{"supervisor": {"lease_renew_s": 60, "lease_ttl_s": 120}}' >.forge/config.json
	run -2 --separate-stderr forge resume "$T" </dev/null
	[[ "$stderr" == *"supervisor.lease_ttl_s (120) must be more than twice supervisor.lease_renew_s (60)"* ]]
	[ "$(db_q "select holder from leases where trace_id = '$T'")" = FAR ]
	# a new run is refused before it exists (before: its row was left "interrupted")
	runs=$(db_q "select count(*) from runs")
	run -2 --separate-stderr forge run "add a mul operation" </dev/null
	[[ "$stderr" == *"must be more than twice"* ]]
	[ "$(db_q "select count(*) from runs")" = "$runs" ]
}

renewed_at() {
	db_q "select coalesce(renewed_at, '') from leases where trace_id = '$T'"
}

renewed_after() {
	local r
	r=$(renewed_at) && [ -n "$r" ] && [ -n "$1" ] && [[ "$r" > "$1" ]]
}

renewed_once() {
	[ -n "$(renewed_at)" ]
}

# until_true CMD...: poll until CMD succeeds (it waits on a change, not a time).
until_true() {
	local i
	for i in $(seq 1200); do
		"$@" && return 0
		sleep 0.05
	done
	echo "timed out waiting for: $*" >&2
	return 1
}

@test "the supervisor renews its lease while its phase says nothing (a model call paused)" {
	left_on_host "$(hostname)" null
	true & dead=$!
	wait "$dead"
	db_q "update leases set pid = $dead"
	echo '{"llm": {"max_retries": 0}, "supervisor": {"lease_renew_s": 0.1, "lease_ttl_s": 1}}' >.forge/config.json
	# implement's first model call stops after its first event until the file exists
	script "$(jq -nc --argjson i "$IMPL" --arg f "$BATS_TEST_TMPDIR/go" \
		'[$i[0] + {pause_after: 1, pause_file: $f}] + $i[1:]')"
	setsid forge resume -q "$T" </dev/null >"$BATS_TEST_TMPDIR/r1.out" 2>"$BATS_TEST_TMPDIR/r1.err" 3>&- &
	R1=$!
	echo "$R1" >"$BATS_TEST_TMPDIR/r1.pid"
	until_true renewed_once
	first=$(renewed_at)
	[ "$(db_q "select pid from leases where trace_id = '$T'")" -eq "$R1" ]
	until_true renewed_after "$first"
	second=$(renewed_at)
	until_true renewed_after "$second"
	# the phase was silent all along: still at implement
	run -0 forge status "$T"
	assert_line --regexp "^status +running at implement"
	touch "$BATS_TEST_TMPDIR/go"
	rc=0; wait "$R1" || rc=$?
	[ "$rc" -eq 0 ]
	[ "$(db_q "select count(*) from leases")" -eq 0 ]
}

@test "a supervisor whose lease another process took over stops its phase and records nothing more (exit 4)" {
	left_on_host "$(hostname)" null
	true & dead=$!
	wait "$dead"
	db_q "update leases set pid = $dead"
	echo '{"llm": {"max_retries": 0}, "supervisor": {"lease_renew_s": 0.1, "lease_ttl_s": 1}}' >.forge/config.json
	# implement's first model call stops after its first event until the file exists (never)
	script "$(jq -nc --argjson i "$IMPL" --arg f "$BATS_TEST_TMPDIR/go" \
		'[$i[0] + {pause_after: 1, pause_file: $f}] + $i[1:]')"
	setsid forge resume -q "$T" </dev/null >"$BATS_TEST_TMPDIR/r1.out" 2>"$BATS_TEST_TMPDIR/r1.err" 3>&- &
	R1=$!
	echo "$R1" >"$BATS_TEST_TMPDIR/r1.pid"
	until_true renewed_once
	# a resume elsewhere took it over (this host's clock ahead, or this one asleep past the TTL)
	db_q "update leases set holder = 'FAR', host = 'far.example', pid = 4242, program = 'forge-supervisor'"
	before=$(db_q "select count(*) from events where trace_id = '$T'")
	rc=0; wait "$R1" || rc=$?
	[ "$rc" -eq 4 ]
	grep -q "forge resume: run $T is being worked on by another process, which took its lease over; this one stopped its phase and recorded nothing more" "$BATS_TEST_TMPDIR/r1.err"
	# nothing of its end is the run's: not paused, no new events, the lease the other's
	[ "$(db_q "select status from runs where id = '$T'")" = running ]
	[ "$(db_q "select count(*) from events where trace_id = '$T'")" -eq "$before" ]
	[ "$(db_q "select holder from leases where trace_id = '$T'")" = FAR ]
	# and its phase is gone (no forge-implement of this run left)
	run ! pgrep -f "forge-implement.*$REPO"
}

@test "a supervisor whose lease was taken before its heartbeat saw it writes nothing more: its commits check the lease (exit 4)" {
	left_on_host "$(hostname)" null
	true & dead=$!
	wait "$dead"
	db_q "update leases set pid = $dead"
	# its heartbeat renews only after 600 s: the run's own writes are what find the takeover
	echo '{"llm": {"max_retries": 0}, "supervisor": {"lease_renew_s": 600, "lease_ttl_s": 1300}}' >.forge/config.json
	seen=$(tail -n 1 "$MOCK_LOG" | jq .seq)
	# implement's first model call stops after its first event until the file exists
	script "$(jq -nc --argjson i "$IMPL" --arg f "$BATS_TEST_TMPDIR/go" \
		'[$i[0] + {pause_after: 1, pause_file: $f}] + $i[1:]')"
	setsid forge resume -q "$T" </dev/null >"$BATS_TEST_TMPDIR/r1.out" 2>"$BATS_TEST_TMPDIR/r1.err" 3>&- &
	R1=$!
	echo "$R1" >"$BATS_TEST_TMPDIR/r1.pid"
	until_true mock_logged "You are the implementer" "$seen"
	# while it waits on the model (its machine asleep), a resume elsewhere takes the run over
	db_q "update leases set holder = 'FAR', host = 'far.example', pid = 4242, program = 'forge-supervisor'"
	events=$(db_q "select count(*) from events where trace_id = '$T'")
	checkpoints=$(db_q "select count(*) from checkpoints where trace_id = '$T'")
	# it wakes: the model answers, the phase goes on and ends
	touch "$BATS_TEST_TMPDIR/go"
	rc=0; wait "$R1" || rc=$?
	[ "$rc" -eq 4 ]
	grep -q "forge resume: run $T is being worked on by another process, which took its lease over; this one stopped its phase and recorded nothing more" "$BATS_TEST_TMPDIR/r1.err"
	# nothing of it after the takeover is the run's (before: its phase's events, a
	# checkpoint and its end, the run completed)
	[ "$(db_q "select count(*) from events where trace_id = '$T'")" -eq "$events" ]
	[ "$(db_q "select count(*) from checkpoints where trace_id = '$T'")" -eq "$checkpoints" ]
	[ "$(db_q "select status from runs where id = '$T'")" = running ]
	[ "$(db_q "select holder from leases where trace_id = '$T'")" = FAR ]
	run ! pgrep -f "forge-implement.*$REPO"
}

@test "a phase filter run by hand on a state takes the run's lease, renews it while silent and releases it at its end" {
	use_mock
	mkdir -p .forge
	echo '{"llm": {"max_retries": 0}, "supervisor": {"lease_renew_s": 0.1, "lease_ttl_s": 1}}' >.forge/config.json
	script "$PLAN"
	forge-plan -q --task "add a mul operation" >"$BATS_TEST_TMPDIR/plan.jsonl"
	T=$(tail -n 1 "$BATS_TEST_TMPDIR/plan.jsonl" | jq -r .trace_id)
	[ -n "$T" ]
	[ "$T" != null ]
	# implement's first model call stops after its first event until the file exists
	script "$(jq -nc --argjson i "$IMPL" --arg f "$BATS_TEST_TMPDIR/go" \
		'[$i[0] + {pause_after: 1, pause_file: $f}] + $i[1:]')"
	setsid forge-implement -q <"$BATS_TEST_TMPDIR/plan.jsonl" >"$BATS_TEST_TMPDIR/r1.out" \
		2>"$BATS_TEST_TMPDIR/r1.err" 3>&- &
	R1=$!
	echo "$R1" >"$BATS_TEST_TMPDIR/r1.pid"
	until_true renewed_once
	first=$(renewed_at)
	[ "$(db_q "select program || ' ' || pid from leases where trace_id = '$T'")" = \
		"forge-implement $R1" ]
	until_true renewed_after "$first"
	touch "$BATS_TEST_TMPDIR/go"
	rc=0; wait "$R1" || rc=$?
	[ "$rc" -eq 0 ] || { cat "$BATS_TEST_TMPDIR/r1.err"; false; }
	[ "$(db_q "select count(*) from leases")" -eq 0 ]
	tail -n 1 "$BATS_TEST_TMPDIR/r1.out" | jq -e --arg t "$T" '.kind == "state" and .trace_id == $t' >/dev/null
}

@test "a phase filter stopped by SIGTERM before its first renewal releases the run's lease (exit 130): its retry is not refused" {
	use_mock
	mkdir -p .forge
	echo '{"llm": {"max_retries": 0}}' >.forge/config.json
	script "$PLAN"
	forge-plan -q --task "add a mul operation" >"$BATS_TEST_TMPDIR/plan.jsonl"
	T=$(tail -n 1 "$BATS_TEST_TMPDIR/plan.jsonl" | jq -r .trace_id)
	# implement's first model call stops after its first event until the file exists (never)
	script "$(jq -nc --argjson i "$IMPL" --arg f "$BATS_TEST_TMPDIR/go" \
		'[$i[0] + {pause_after: 1, pause_file: $f}] + $i[1:]')"
	setsid forge-implement <"$BATS_TEST_TMPDIR/plan.jsonl" >"$BATS_TEST_TMPDIR/r1.out" \
		2>"$BATS_TEST_TMPDIR/r1.err" 3>&- &
	R1=$!
	echo "$R1" >"$BATS_TEST_TMPDIR/r1.pid"
	# its model call is under way: the lease is taken and renewed from now on
	until_true mock_logged "You are the implementer"
	[ "$(db_q "select pid || ' ' || coalesce(renewed_at, 'never') from leases where trace_id = '$T'")" = "$R1 never" ]
	kill -TERM "$R1"
	rc=0; wait "$R1" || rc=$?
	[ "$rc" -eq 130 ] || { cat "$BATS_TEST_TMPDIR/r1.err"; false; }
	grep -q "forge-implement: interrupted (no state written; phases run by hand are no run" "$BATS_TEST_TMPDIR/r1.err"
	[ "$(db_q "select count(*) from leases where trace_id = '$T'")" -eq 0 ]
	script "$IMPL"
	run -0 --separate-stderr forge-implement -q <"$BATS_TEST_TMPDIR/plan.jsonl"
	tail -n 1 <<<"$output" | jq -e '.status == "ok"'
}

# A run whose supervisor was killed (kill -9, an OOM kill) during
# implement, and whose pid another forge process has now (as a reused pid
# would: simulated by pointing the lease at a live process named forge).
killed_run_pid_reused() {
	left_on_host "$(hostname)" null
	true & dead=$!
	wait "$dead"
	db_q "update leases set pid = $dead"
	# implement's first model call stops after its first event until the file exists (never)
	script "$(jq -nc --argjson i "$IMPL" --arg f "$BATS_TEST_TMPDIR/go" \
		'[$i[0] + {pause_after: 1, pause_file: $f}] + $i[1:]')"
	seen=$(tail -n 1 "$MOCK_LOG" | jq .seq)
	setsid forge resume -q "$T" </dev/null >"$BATS_TEST_TMPDIR/r1.out" 2>"$BATS_TEST_TMPDIR/r1.err" 3>&- &
	R1=$!
	echo "$R1" >"$BATS_TEST_TMPDIR/r1.pid"
	until_true mock_logged "You are the implementer" "$seen"
	[ "$(db_q "select pid from leases where trace_id = '$T'")" -eq "$R1" ]
	kill -9 -- "-$R1"
	wait "$R1" || true
	cp /bin/sleep "$BATS_TEST_TMPDIR/forge"
	"$BATS_TEST_TMPDIR/forge" 600 3>&- &
	other=$!
	echo "$other" >"$BATS_TEST_TMPDIR/other.pid"
	db_q "update leases set pid = $other where trace_id = '$T'"
	script "$IMPL"
}

@test "a killed supervisor whose pid another forge process got: the run is interrupted, and forge resume takes it over" {
	killed_run_pid_reused
	# (before: running, and resume refused, exit 4, also with --steal)
	run -0 forge status "$T"
	assert_line --regexp "^status +interrupted at implement"
	run -0 --separate-stderr forge resume -q "$T" </dev/null
	run -0 forge status --json "$T"
	jq -e '.run.status == "completed"' <<<"$output"
	run -0 events_of "$T" run.lease_taken_over
	jq -e --argjson p "$other" '.pid == $p' <<<"$output"
	kill -0 "$other"
}

@test "forge cancel of a killed supervisor's run never signals the process that got its pid" {
	killed_run_pid_reused
	run -0 --separate-stderr forge cancel "$T"
	assert_line "cancelled $T"
	refute_output --partial "stopping pid"
	# the other process lives on (before: SIGTERM, it was gone)
	kill -0 "$other"
	[ "$(db_q "select status from runs where id = '$T'")" = cancelled ]
}

@test "a lease written without the holder's start (older forge) needs its program's exact name: another forge command with its pid is not it" {
	left_on_host "$(hostname)" null
	cp /bin/sleep "$BATS_TEST_TMPDIR/forge"
	"$BATS_TEST_TMPDIR/forge" 600 3>&- &
	other=$!
	echo "$other" >"$BATS_TEST_TMPDIR/other.pid"
	db_q "update leases set pid = $other"
	# comm "forge" is a prefix of forge-supervisor (before: alive, exit 4)
	run -0 forge status "$T"
	assert_line --regexp "^status +interrupted at implement"
	run -0 --separate-stderr forge resume -q "$T" </dev/null
	run -0 forge status --json "$T"
	jq -e '.run.status == "completed"' <<<"$output"
	kill -0 "$other"
}

@test "another machine whose clock is 5 minutes ahead sees a live run of this one as running: its forge resume is refused (exit 4)" {
	case ${FORGE_SUITE:-default} in
	*asan*) skip "a preloaded library cannot come before the sanitizers' runtime" ;;
	esac
	cc -shared -fPIC -o "$BATS_TEST_TMPDIR/host-clock.so" "$FORGE_ROOT/tests/fixtures/preload/host-clock.c" -ldl
	left_on_host "$(hostname)" null
	true & dead=$!
	wait "$dead"
	db_q "update leases set pid = $dead"
	# this machine's run, its implementer's model call under way (and held)
	script "$(jq -nc --argjson i "$IMPL" --arg f "$BATS_TEST_TMPDIR/go" \
		'[$i[0] + {pause_after: 1, pause_file: $f}] + $i[1:]')"
	seen=$(tail -n 1 "$MOCK_LOG" | jq .seq)
	setsid forge resume -q "$T" </dev/null >"$BATS_TEST_TMPDIR/r1.out" 2>"$BATS_TEST_TMPDIR/r1.err" 3>&- &
	R1=$!
	echo "$R1" >"$BATS_TEST_TMPDIR/r1.pid"
	until_true mock_logged "You are the implementer" "$seen"
	holder=$(db_q "select holder from leases where trace_id = '$T'")
	# machine-b, its clock 300 s ahead (more than lease_ttl_s): the
	# lease's times are old by its clock (before: interrupted, and a plain
	# resume took the live run over)
	export FAKE_HOST=machine-b FAKE_SKEW=300
	run -0 env LD_PRELOAD="$BATS_TEST_TMPDIR/host-clock.so" forge status "$T"
	assert_line --regexp "^status +running at implement"
	# its status and resume again, after the first resume saw the lease
	for i in 1 2; do
		run -4 --separate-stderr env LD_PRELOAD="$BATS_TEST_TMPDIR/host-clock.so" forge resume -q "$T" </dev/null
		[[ "$stderr" == *"run $T is already running: forge-supervisor, pid $R1 on $(hostname)"* ]]
		run -0 env LD_PRELOAD="$BATS_TEST_TMPDIR/host-clock.so" forge status "$T"
		assert_line --regexp "^status +running at implement"
	done
	# what machine-b saw, by its own clock
	[ "$(db_q "select observer || ' ' || holder from lease_sightings where trace_id = '$T'")" = "machine-b $holder" ]
	unset FAKE_HOST FAKE_SKEW
	[ "$(db_q "select holder from leases where trace_id = '$T'")" = "$holder" ]
	# this machine's run goes on to its end, its lease its own
	touch "$BATS_TEST_TMPDIR/go"
	rc=0; wait "$R1" || rc=$?
	[ "$rc" -eq 0 ] || { cat "$BATS_TEST_TMPDIR/r1.err"; false; }
	[ "$(db_q "select status from runs where id = '$T'")" = completed ]
	[ "$(db_q "select count(*) from leases")" -eq 0 ]
	[ "$(db_q "select count(*) from lease_sightings")" -eq 0 ]
}
