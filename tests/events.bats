#!/usr/bin/env bats
# forge-events: store (pass-through + persist), replay, list.

load test_helper/common

setup() {
	forge_setup
	# events N TRACE [C]: N well-formed events of TRACE with varied spacing;
	# their ids start 01JDB then the character C (default 3) so that
	# calls with different C never share an id.
	events() {
		local n=$1 trace=$2 c=${3:-3} i
		for ((i = 1; i <= n; i++)); do
			printf '{"kind":"event","id":"01JDB'"$c"'%020d","trace_id":"%s","ts":"2026-11-21T21:30:%02d.%03dZ","source":"test", "phase":"plan","type":"agent.iteration","payload":{"i":%d,"s":"caf\\u00e9"},"cost":{"tokens":%d,"usd":0.001}}\n' \
				"$i" "$trace" $((i / 1000 % 60)) $((i % 1000)) "$i" "$i"
		done
	}
}

@test "store passes the whole stream through unchanged and replay gives the events back byte for byte" {
	events 50 01JDB2TRACEAAAAAAAAAAAAAAA >"$BATS_TEST_TMPDIR/in"
	state='{"kind":"state","v":1,"trace_id":"01JDB2TRACEAAAAAAAAAAAAAAA","phase":"plan","status":"ok","task":{"description":"x"}}'
	{ head -n 25 "$BATS_TEST_TMPDIR/in"; echo "$state"; echo '{"kind":"note"}'; tail -n 25 "$BATS_TEST_TMPDIR/in"; } >"$BATS_TEST_TMPDIR/stream"
	run -0 --separate-stderr forge-events store <"$BATS_TEST_TMPDIR/stream"
	diff -u "$BATS_TEST_TMPDIR/stream" <(printf '%s\n' "${lines[@]}")
	run -0 --separate-stderr forge-events replay 01JDB2TRACEAAAAAAAAAAAAAAA
	diff -u "$BATS_TEST_TMPDIR/in" <(printf '%s\n' "${lines[@]}")
}

@test "store: lines libjq reads otherwise than SQLite pass through unchanged and are kept as libjq reads them" {
	T=01JDB2TRACEODDAAAAAAAAAAAA
	head='"kind":"event","trace_id":"'$T'","source":"test","type":"tool.executed"'
	{
		echo '{'"$head"',"id":"01JDB3DDD00000000000000001","ts":"2026-11-21T21:30:00.001Z","payload":{"n":01}}'
		echo '{'"$head"',"id":"01JDB3DDD00000000000000002","ts":"2026-11-21T21:30:00.002Z","payload":{"ok":true},"payload":{"ok":false}}'
		echo '{'"$head"',"id":"01JDB3DDD00000000000000003","ts":"2026-11-21T21:30:00.003Z","payload":{"ok":true}, "duration_ms":5}'
	} >"$BATS_TEST_TMPDIR/in"
	run -0 --separate-stderr forge-events store <"$BATS_TEST_TMPDIR/in"
	diff -u "$BATS_TEST_TMPDIR/in" <(printf '%s\n' "${lines[@]}")
	# the view's columns say what libjq read: 1, the last payload, the plain line as it was
	[ "$(sqlite3 "$FORGE_DB" "select coalesce(json_extract(payload, '\$.n'), '-') || '/' || coalesce(json_extract(payload, '\$.ok'), '-') || '/' || coalesce(duration_ms, '-') from events where trace_id = '$T' order by id" | tr '\n' ' ')" = "1/-/- -/0/- -/1/5 " ]
	run -0 --separate-stderr forge-events replay "$T"
	[ "${lines[0]}" = '{"kind":"event","trace_id":"'$T'","source":"test","type":"tool.executed","id":"01JDB3DDD00000000000000001","ts":"2026-11-21T21:30:00.001Z","payload":{"n":1}}' ]
	[ "$(jq -c .payload <<<"${lines[1]}")" = '{"ok":false}' ]
	[ "${lines[2]}" = "$(sed -n 3p "$BATS_TEST_TMPDIR/in")" ]
}

@test "storing the same events again adds nothing" {
	events 20 01JDB2TRACEBBBBBBBBBBBBBBB >"$BATS_TEST_TMPDIR/in"
	forge-events store <"$BATS_TEST_TMPDIR/in" >/dev/null
	forge-events store <"$BATS_TEST_TMPDIR/in" >/dev/null
	[ "$(sqlite3 "$FORGE_DB" 'select count(*) from events')" -eq 20 ]
	run -0 forge-events replay 01JDB2TRACEBBBBBBBBBBBBBBB
	[ "${#lines[@]}" -eq 20 ]
}

@test "several store processes writing one database at once lose nothing" {
	for p in 1 2 3 4; do
		events 500 "01JDB2TRACE${p}AAAAAAAAAAAAAA" "$p" >"$BATS_TEST_TMPDIR/in$p"
	done
	pids=()
	for p in 1 2 3 4; do
		forge-events store --batch 50 <"$BATS_TEST_TMPDIR/in$p" >/dev/null 2>"$BATS_TEST_TMPDIR/err$p" &
		pids+=($!)
	done
	for pid in "${pids[@]}"; do wait "$pid"; done
	cat "$BATS_TEST_TMPDIR"/err*
	[ "$(sqlite3 "$FORGE_DB" 'select count(*) from events')" -eq 2000 ]
	[ "$(sqlite3 "$FORGE_DB" 'select count(distinct trace_id) from events')" -eq 4 ]
}

@test "events are committed while a slow writer is still open" {
	mkfifo "$BATS_TEST_TMPDIR/fifo"
	forge-events store <"$BATS_TEST_TMPDIR/fifo" >/dev/null 3>&- &
	pid=$!
	exec 4>"$BATS_TEST_TMPDIR/fifo"
	events 3 01JDB2TRACESLOWAAAAAAAAAAA >&4
	for _ in $(seq 50); do
		n=$(sqlite3 "$FORGE_DB" 'select count(*) from events' 2>/dev/null || echo 0)
		[ "$n" = 3 ] && break
		sleep 0.1
	done
	exec 4>&-
	wait "$pid"
	[ "$n" = 3 ]
}

@test "store forwards each record before it waits for more input" {
	mkfifo "$BATS_TEST_TMPDIR/in" "$BATS_TEST_TMPDIR/out"
	forge-events store <"$BATS_TEST_TMPDIR/in" >"$BATS_TEST_TMPDIR/out" 3>&- &
	pid=$!
	exec 4>"$BATS_TEST_TMPDIR/in" 5<"$BATS_TEST_TMPDIR/out"
	events 3 01JDB2TRACEFWDAAAAAAAAAAAA >&4
	# The writer stays open: the three lines must come out now (the timeout
	# only keeps a broken build from hanging the suite).
	run -0 timeout 60 head -n 3 <&5
	exec 4>&- 5<&-
	wait "$pid"
	[ "${#lines[@]}" -eq 3 ]
	[ "$(jq -r .trace_id <<<"${lines[2]}")" = 01JDB2TRACEFWDAAAAAAAAAAAA ]
}

@test "list shows traces with counts and time span" {
	events 5 01JDB2TRACELISTAAAAAAAAAAA | forge-events store >/dev/null
	events 2 01JDB2TRACELISTBBBBBBBBBBB 4 | forge-events store >/dev/null
	run -0 --separate-stderr forge-events list --json
	[ "${#lines[@]}" -eq 2 ]
	[ "$(jq -s 'map(select(.trace_id=="01JDB2TRACELISTAAAAAAAAAAA"))[0].events' <<<"$output")" -eq 5 ]
	run -0 --separate-stderr forge-events list
	[[ "${lines[0]}" == TRACE* ]]
	[[ "$output" == *"01JDB2TRACELISTBBBBBBBBBBB"* ]]
}

@test "list prints local times as forge history does; --json keeps UTC" {
	events 5 01JDB2TRACELISTAAAAAAAAAAA | forge-events store >/dev/null
	run -0 --separate-stderr env TZ=JST-9 forge-events list --json
	[ "$(jq -r '[.first_ts, .last_ts] | join(" ")' <<<"$output")" = "2026-11-21T21:30:00.001Z 2026-11-21T21:30:00.005Z" ]
	# (before: the table too printed 2026-11-21T21:30:00.001Z)
	run -0 --separate-stderr env TZ=JST-9 forge-events list
	[ "${#lines[@]}" -eq 2 ]
	[[ "${lines[1]}" =~ ^01JDB2TRACELISTAAAAAAAAAAA\ +5\ \ 2026-11-22\ 06:30:00\ \ 2026-11-22\ 06:30:00\ \  ]] ||
		{ echo "${lines[1]}"; false; }
}

@test "forge events reaches forge-events" {
	events 1 01JDB2TRACEDISPATCHAAAAAAA | forge events store >/dev/null
	run -0 forge events replay 01JDB2TRACEDISPATCHAAAAAAA
	[ "${#lines[@]}" -eq 1 ]
}

@test "replay of an unknown trace exits 1 with a message" {
	run -1 --separate-stderr forge-events replay NOSUCHTRACE
	[[ "$stderr" == *"no events for trace 'NOSUCHTRACE'"* ]]
}

@test "store rejects bad input after storing what came before it" {
	events 3 01JDB2TRACEBADAAAAAAAAAAAA >"$BATS_TEST_TMPDIR/in"
	echo '{"kind":"event","id":"oops' >>"$BATS_TEST_TMPDIR/in"
	run -2 --separate-stderr forge-events store <"$BATS_TEST_TMPDIR/in"
	[[ "$stderr" == "forge-events: line 4: malformed JSON"* ]]
	[ "$(jq -r .type <<<"${lines[-1]}")" = input.rejected ]
	[ "$(sqlite3 "$FORGE_DB" 'select count(*) from events')" -eq 3 ]
}

@test "store refuses text that is not JSON lines (exit 2); a byte order mark before the records is skipped" {
	# (before: exit 0, nothing on stdout or stderr, nothing stored)
	run -2 --separate-stderr forge-events store < <(printf 'plain text\nmore\n')
	[[ "$stderr" == "forge-events: line 1: not JSON lines: forge events store reads events and states"* ]]
	[ "$(jq -r .type <<<"${lines[-1]}")" = input.rejected ]
	events 2 01JDB2TRACEBOMAAAAAAAAAAAA >"$BATS_TEST_TMPDIR/in"
	run -0 --separate-stderr forge-events store < <(printf '\xef\xbb\xbf'; cat "$BATS_TEST_TMPDIR/in")
	[ "$output" = "$(cat "$BATS_TEST_TMPDIR/in")" ]
	[ "$(sqlite3 "$FORGE_DB" "select count(*) from events where trace_id = '01JDB2TRACEBOMAAAAAAAAAAAA'")" -eq 2 ]
}

@test "forge-events takes the configuration: --config (a missing one is exit 2), stream.max_line_bytes, FORGE_MAX_LINE_BYTES" {
	run -2 --separate-stderr forge-events list --config "$BATS_TEST_TMPDIR/missing.json"
	[[ "$stderr" == *"missing.json"* ]]
	# a 5000-byte event: over a limit of 4096 set either way, under the default
	printf '{"kind":"event","id":"01JDB3CQNFGAAAAAAAAAAAAAAA","trace_id":"01JDB2TRACECFGAAAAAAAAAAAA","ts":"2026-11-21T21:30:00.000Z","source":"test","type":"a.b","payload":{"s":"%s"}}\n' \
		"$(head -c 5000 /dev/zero | tr '\0' a)" >"$BATS_TEST_TMPDIR/in"
	echo '{"stream":{"max_line_bytes":4096}}' >"$BATS_TEST_TMPDIR/c.json"
	run -2 --separate-stderr forge-events store --config "$BATS_TEST_TMPDIR/c.json" <"$BATS_TEST_TMPDIR/in"
	[[ "$stderr" == "forge-events: line 1: record is longer than the limit of 4096 bytes"* ]]
	FORGE_MAX_LINE_BYTES=4096 run -2 --separate-stderr forge-events store <"$BATS_TEST_TMPDIR/in"
	[[ "$stderr" == "forge-events: line 1: record is longer than the limit of 4096 bytes"* ]]
	run -0 --separate-stderr forge-events store <"$BATS_TEST_TMPDIR/in"
}

@test "the database defaults to .forge/forge.db in the repository" {
	unset FORGE_DB
	make_repo "$BATS_TEST_TMPDIR/repo"
	mkdir "$BATS_TEST_TMPDIR/repo/sub"
	events 1 01JDB2TRACEREPOAAAAAAAAAAA >"$BATS_TEST_TMPDIR/in"
	(cd "$BATS_TEST_TMPDIR/repo/sub" && forge-events store <"$BATS_TEST_TMPDIR/in" >/dev/null)
	[ -f "$BATS_TEST_TMPDIR/repo/.forge/forge.db" ]
	run -0 forge-events --repo "$BATS_TEST_TMPDIR/repo" replay 01JDB2TRACEREPOAAAAAAAAAAA
	[ "${#lines[@]}" -eq 1 ]
}

@test "outside a repository without --db the error says what to do" {
	unset FORGE_DB
	mkdir "$BATS_TEST_TMPDIR/plain"
	run -2 --separate-stderr bash -c 'cd "$1" && forge-events list' _ "$BATS_TEST_TMPDIR/plain"
	[[ "$stderr" == *"not in a git repository"*"--db"* ]]
}

@test "one session for every program: a --repo that is no repository is exit 2, also with --db" {
	mkdir "$BATS_TEST_TMPDIR/plain"
	for cmd in "forge-events list" "forge-gate list" "forge-supervisor history"; do
		run -2 --separate-stderr ${cmd%% *} --repo "$BATS_TEST_TMPDIR/plain" --db "$BATS_TEST_TMPDIR/x.db" ${cmd#* }
		[[ "$stderr" == "${cmd%% *}: "*"not in a git repository"* ]]
	done
	run -2 --separate-stderr forge-memory --repo "$BATS_TEST_TMPDIR/plain" list
	[[ "$stderr" == "forge-memory: "*"not in a git repository"* ]]
	# outside a repository, with no database named, each says how to name one
	unset FORGE_DB
	for cmd in "forge-events list" "forge-gate list" "forge-memory list" "forge-findings list" \
		   "forge-metrics" "forge-supervisor history"; do
		run --separate-stderr bash -c 'cd "$1" && $2' _ "$BATS_TEST_TMPDIR/plain" "$cmd"
		[ "$status" -eq 2 ] || { echo "$cmd: $status $stderr"; false; }
		[[ "$stderr" == *"not in a git repository"*"; use --repo DIR or --db PATH" ]]
	done
	[ ! -e "$BATS_TEST_TMPDIR/x.db" ]
}

@test "a database from a newer forge is refused" {
	events 1 01JDB2TRACENEWAAAAAAAAAAAA | forge-events store >/dev/null
	sqlite3 "$FORGE_DB" 'PRAGMA user_version = 999'
	run -5 --separate-stderr forge-events list
	[[ "$stderr" == *"newer"* ]]
	# forge db status reports it, and says so (before: "version 999 of N" alone)
	run -0 --separate-stderr forge db status
	assert_line --regexp '^schema: +version 999 of [0-9]+ \(newer than this forge knows: its commands refuse this database; upgrade forge\)$'
}

@test "the default database leaves the user's checkout clean" {
	unset FORGE_DB
	make_repo "$BATS_TEST_TMPDIR/repo"
	events 1 01JDB2TRACECLEANAAAAAAAAAA | forge-events --repo "$BATS_TEST_TMPDIR/repo" store >/dev/null
	[ -f "$BATS_TEST_TMPDIR/repo/.forge/forge.db" ]
	run -0 git -C "$BATS_TEST_TMPDIR/repo" status --porcelain
	[ -z "$output" ]
}

@test "store: SIGTERM and SIGINT end it with exit 130 (not a death by the signal)" {
	# (before: no handler, killed by the signal: the shell's 143)
	interrupt_ends_130 forge-events forge-events store
}
