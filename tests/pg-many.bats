#!/usr/bin/env bats
# pg-many.bats - many machines, one PostgreSQL (issue 19): 8 whole `forge
# run`s started at once from 8 clones of one repository (each clone a
# machine: its own checkout, the same FORGE_DB, the run's branch pushed to
# one shared bare repository), half of them pausing at a gate that is
# approved from another clone and resumed, all at once, on a third.  Then
# the database must hold exactly what the runs did: every run completed,
# every event once, the whole pipeline's state changes, the checkpoints,
# the model calls, each gate decided once, no lease left, and the server
# logged no error.  The runs migrate the new database as they open it.  A cluster of its
# own (test_helper/pg.bash), so that it may run beside pg.bats.  No timing:
# the processes are waited for.

bats_require_minimum_version 1.5.0

setup_file() {
	load test_helper/pg
	pg_setup_file
}

teardown_file() {
	load test_helper/pg
	pg_teardown_file
}

setup() {
	load test_helper/common
	load test_helper/pg
	forge_setup
	pg_require
	export BATS_TEST_TIMEOUT=600
	pg_test_db
}

# machines N: a bare repository $REMOTE holding the calc project on main,
# and N clones of it, $BATS_TEST_TMPDIR/m1 … mN; $BASE is main's commit.
machines() {
	REMOTE="$BATS_TEST_TMPDIR/remote.git"
	git init -q --bare -b main "$REMOTE"
	calc_repo "$BATS_TEST_TMPDIR/seed"
	git -C "$BATS_TEST_TMPDIR/seed" push -q "$REMOTE" main
	BASE=$(git -C "$BATS_TEST_TMPDIR/seed" rev-parse HEAD)
	local i
	for ((i = 1; i <= $1; i++)); do
		git clone -q "$REMOTE" "$BATS_TEST_TMPDIR/m$i"
	done
}

# on MACHINE COMMAND...: COMMAND run in that clone ($BATS_TEST_TMPDIR/MACHINE).
on() {
	local m=$1
	shift
	(cd "$BATS_TEST_TMPDIR/$m" && exec "$@" </dev/null)
}

@test "8 whole forge runs at once from 8 clones into one PostgreSQL, 4 paused at a gate approved elsewhere and resumed on a third clone: consistent" {
	# (the runs of pg.bats's run test, 12 at once: ASan has nothing new to see)
	skip_repeat_under_sanitizers
	CONFIGS="$FORGE_ROOT/tests/fixtures/supervisor"
	CASSETTES="$FORGE_ROOT/tests/fixtures/cassettes"
	export FORGE_PROVIDER=replay FORGE_PUSH_REMOTE=origin
	machines 8
	# no `forge db migrate` first: the 8 runs migrate the empty database as they open it

	# 8 runs at once: m1-m4 clean, m5-m8 high-risk (the architecture gate stops them, exit 4)
	declare -A pid
	for i in 1 2 3 4 5 6 7 8; do
		if [ "$i" -le 4 ]; then
			FORGE_CASSETTE="$CASSETTES/run-clean.jsonl" on "m$i" forge run -q "add a mul operation" \
				>"$BATS_TEST_TMPDIR/run$i.out" 2>"$BATS_TEST_TMPDIR/run$i.err" &
		else
			FORGE_CASSETTE="$CASSETTES/run-highrisk.jsonl" on "m$i" forge run -q \
				--config "$CONFIGS/high-risk.json" "add a mul operation" \
				>"$BATS_TEST_TMPDIR/run$i.out" 2>"$BATS_TEST_TMPDIR/run$i.err" &
		fi
		pid[$i]=$!
	done
	declare -A rc
	for i in 1 2 3 4 5 6 7 8; do
		rc[$i]=0
		wait "${pid[$i]}" || rc[$i]=$?
	done
	for i in 1 2 3 4 5 6 7 8; do
		echo "run $i: exit ${rc[$i]}"
		cat "$BATS_TEST_TMPDIR/run$i.err"
	done
	for i in 1 2 3 4; do [ "${rc[$i]}" -eq 0 ]; done
	for i in 5 6 7 8; do [ "${rc[$i]}" -eq 4 ]; done

	# which run is whose: the run's repository is the clone it started in
	declare -A trace
	for i in 1 2 3 4 5 6 7 8; do
		trace[$i]=$(psql_q "select id from runs where repo = '$BATS_TEST_TMPDIR/m$i'")
		[[ ${trace[$i]} =~ ^[0-9A-Z]{26}$ ]]
	done
	[ "$(psql_q "select count(distinct id) from runs")" -eq 8 ]
	[ "$(psql_q "select count(*) from gates where status = 'pending'")" -eq 4 ]

	# each gate approved from another clone (m(k-4)), the run resumed on a third (m(k-3)), all at once
	for k in 5 6 7 8; do
		G=$(psql_q "select id from gates where trace_id = '${trace[$k]}' and status = 'pending'")
		on "m$((k - 4))" forge gate approve "$G" --note "approved on m$((k - 4))" >/dev/null
	done
	for k in 5 6 7 8; do
		FORGE_CASSETTE="$CASSETTES/run-highrisk.jsonl" on "m$((k - 3))" forge resume -q \
			--config "$CONFIGS/high-risk.json" "${trace[$k]}" \
			>"$BATS_TEST_TMPDIR/resume$k.out" 2>"$BATS_TEST_TMPDIR/resume$k.err" &
		pid[$k]=$!
	done
	for k in 5 6 7 8; do
		rc[$k]=0
		wait "${pid[$k]}" || rc[$k]=$?
		echo "resume of run $k on m$((k - 3)): exit ${rc[$k]}"
		cat "$BATS_TEST_TMPDIR/resume$k.err"
	done
	for k in 5 6 7 8; do [ "${rc[$k]}" -eq 0 ]; done

	# the database: 8 distinct runs, all completed, nothing held, nothing pending
	[ "$(psql_q "select count(*) from runs where status = 'completed'")" -eq 8 ]
	[ "$(psql_q "select count(*) from leases")" -eq 0 ]
	[ "$(psql_q "select count(*) from event_log") " -eq "$(psql_q "select count(distinct id) from event_log")" ]
	[ "$(psql_q "select count(*) from gates")" -eq 4 ]
	[ "$(psql_q "select count(*) from gates where status = 'approved' and decided_at is not null")" -eq 4 ]
	REST="implementing>reviewing reviewing>testing testing>deploying deploying>completed "
	for i in 1 2 3 4 5 6 7 8; do
		T=${trace[$i]}
		forge events replay "$T" >"$BATS_TEST_TMPDIR/events$i"
		# every event of the trace, once; replay gives each back
		[ "$(psql_q "select count(*) from event_log where trace_id = '$T'")" -eq "$(wc -l <"$BATS_TEST_TMPDIR/events$i")" ]
		[ "$(jq -r .id "$BATS_TEST_TMPDIR/events$i" | sort | uniq -d)" = "" ]
		[ "$(jq -r 'select(.trace_id != "'"$T"'") | .id' "$BATS_TEST_TMPDIR/events$i")" = "" ]
		# the whole pipeline, in order; m5-m8 paused after planning
		FULL="idle>planning planning>implementing $REST"
		[ "$i" -le 4 ] || FULL="idle>planning planning>paused paused>implementing $REST"
		SEQ=$(jq -r 'select(.type == "pipeline.state_changed") | "\(.payload.from)>\(.payload.to)"' \
			"$BATS_TEST_TMPDIR/events$i" | tr '\n' ' ')
		[ "$SEQ" = "$FULL" ]
		[ "$(psql_q "select count(*) >= 5 from checkpoints where trace_id = '$T'")" = t ]
		[ "$(psql_q "select count(*) > 0 from llm_calls where trace_id = '$T'")" = t ]
		[ "$(psql_q "select count(*) from runs where id = '$T' and status = 'completed'")" -eq 1 ]
		# the branch: the run's commit, on the shared remote too
		[ "$(git -C "$REMOTE" log --format=%s "$BASE..forge/$T")" = "forge: add a mul operation (attempt 1)" ]
	done
	for k in 5 6 7 8; do
		T=${trace[$k]}
		# the gate decided once, from m(k-4); the run adopted by m(k-3), which finished it
		[ "$(psql_q "select count(*) from gates where trace_id = '$T' and status = 'approved'")" -eq 1 ]
		[ "$(jq -c 'select(.type == "gate.approved")' "$BATS_TEST_TMPDIR/events$k" | wc -l)" -eq 1 ]
		[ "$(jq -c 'select(.type == "gate.requested")' "$BATS_TEST_TMPDIR/events$k" | wc -l)" -eq 1 ]
		jq -e -s --arg was "$BATS_TEST_TMPDIR/m$k" --arg now "$BATS_TEST_TMPDIR/m$((k - 3))" \
			'[.[] | select(.type == "run.adopted") | .payload] | length == 1 and .[0].fetched == true
			and .[0].was.repo == $was and .[0].repo == $now' "$BATS_TEST_TMPDIR/events$k"
		[ "$(forge status --json "$T" | jq -r .state.task.repo)" = "$BATS_TEST_TMPDIR/m$((k - 3))" ]
		[ "$(git -C "$REMOTE" rev-parse "forge/$T")" = "$(git -C "$BATS_TEST_TMPDIR/m$((k - 3))" rev-parse "forge/$T")" ]
	done
	# the server saw no failed statement, deadlock or lost connection on the way
	run -1 grep -E 'ERROR|FATAL|PANIC|deadlock' "$PG_TOP/data/server.log"
	# history on any machine lists all 8
	run -0 on m8 forge history --json -n 20
	[ "$(jq -s 'map(select(.status == "completed")) | length' <<<"$output")" -eq 8 ]
}
