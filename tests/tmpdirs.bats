#!/usr/bin/env bats
# tmpdirs.bats - the temporary directories of a phase (forge-implement's, the
# one run_command makes for its commands) are gone however the phase ends:
# done, a breaker, stagnation, SIGTERM.  Each case runs with a private
# TMPDIR and counts what is left in it.

bats_require_minimum_version 1.5.0

load test_helper/mock
mock_per_file 120

setup() {
	load test_helper/common
	forge_setup
	calc_setup
	export TMPDIR="$BATS_TEST_TMPDIR/tmp"
	mkdir -p "$TMPDIR"
	export FORGE_PROVIDER=anthropic FORGE_BASE_URL="$MOCK_URL" ANTHROPIC_API_KEY=test-key
	sed -n 3p "$FORGE_ROOT/tests/fixtures/cassettes/plan-calc.jsonl" | jq -c --arg r "$REPO" \
		'{kind:"state", v:1, trace_id:"01JDB2TMPD1RS0000000000000", phase:"plan", status:"ok",
		  task:{description:"add a mul operation", repo:$r, base_ref:"main"},
		  plan:.response.tool_calls[0].input, bounces:[], cost:{tokens:0, usd:0}}' \
		>"$BATS_TEST_TMPDIR/state.json"
	# a command that leaves a small tree in its TMPDIR (the phase's temp dir)
	CMD='mkdir -p "$TMPDIR/a/b" && touch "$TMPDIR/a/b/f" "$TMPDIR/x" && echo made'
}

# What the phase left in TMPDIR (names), nothing when all went.
leftovers() {
	find "$TMPDIR" -mindepth 1 -maxdepth 1 -printf '%f\n'
}

# command_step [TIMES]: the model asks to run $CMD.
command_step() {
	jq -nc --arg c "$CMD" --argjson t "${1:-1}" '{tool_calls:[{name:"run_command", input:{command:$c}}], times:$t}'
}

@test "a breaker (iterations): exit 3, no temp dir left" {
	mock_script "[$(command_step '"always"')]"
	echo '{"safety":{"iterations":{"implement":2}}}' >"$BATS_TEST_TMPDIR/c.json"
	run -3 --separate-stderr forge-implement --config "$BATS_TEST_TMPDIR/c.json" <"$BATS_TEST_TMPDIR/state.json"
	[ "$(tail -n 1 <<<"$output" | jq -r .status)" = tripped ]
	[ "$(jq -r 'select(.type == "tool.executed") | .payload.tool' <<<"$output" | head -n 1)" = run_command ]
	run -0 leftovers
	assert_output ""
}

@test "stagnation: exit 4, no temp dir left" {
	mock_script "[$(command_step '"always"')]"
	run -4 --separate-stderr forge-implement <"$BATS_TEST_TMPDIR/state.json"
	[[ "$stderr" == *"stagnat"* ]]
	run -0 leftovers
	assert_output ""
}

@test "SIGTERM while a command runs: exit 130, no temp dir left" {
	CMD='mkdir -p "$TMPDIR/a" && touch "$TMPDIR/a/f" started.mark && exec sleep 60'
	mock_script "[$(command_step)]"
	forge-implement <"$BATS_TEST_TMPDIR/state.json" >"$BATS_TEST_TMPDIR/out" 2>"$BATS_TEST_TMPDIR/err" 3>&- &
	pid=$!
	# wait for the command to have started (the file it makes in the worktree)
	for _ in $(seq 600); do
		compgen -G "$(runs_dir)/*/started.mark" >/dev/null && break
		sleep 0.1
	done
	compgen -G "$(runs_dir)/*/started.mark" >/dev/null
	[ -n "$(leftovers)" ]	# the temp dir exists while the phase runs
	kill -TERM "$pid"
	rc=0
	wait "$pid" || rc=$?	# (in this shell: only it can wait for its child)
	[ "$rc" -eq 130 ]
	grep -q "interrupted" "$BATS_TEST_TMPDIR/err"
	run -0 leftovers
	assert_output ""
}

@test "run_command's own temp dir (no phase temp dir) is made in TMPDIR and goes too" {
	CMD='mkdir -p "$TMPDIR/a" && touch "$TMPDIR/a/f" && echo "tmp=$TMPDIR"'
	run -0 --separate-stderr "$FORGE_TESTBIN/tool-run" -C "$REPO" run_command "$(jq -nc --arg c "$CMD" '{command:$c}')"
	[[ "$output" == *"tmp=$TMPDIR/forge-cmd-"* ]]
	run -0 leftovers
	assert_output ""
}

@test "a TMPDIR SQLite cannot use (too long a path): a new database is made all the same; an old one's migration names TMPDIR" {
	skip_on_postgres "SQLite's temporary files"
	# 494 characters: SQLite's temporary file names (512 at most) do not fit
	local long d
	long="$BATS_TEST_TMPDIR/$(printf 'x%.0s' {1..119})"
	long="$long/${long##*/}/${long##*/}/${long##*/}"
	long="${long:0:494}"
	mkdir -p "$long"
	# (before: "migration 'sql/008-memory-stemming.sql' failed: SQL logic
	# error", exit 5, from every command that made a database)
	run -0 --separate-stderr env TMPDIR="$long" forge-db migrate --db "$BATS_TEST_TMPDIR/new.db"
	run -0 --separate-stderr env TMPDIR="$long" forge memory add --db "$BATS_TEST_TMPDIR/mem.db" \
		--type semantic "multiplication lives in calc.c"
	# a database of the first schema: its upgrade keeps SQLite's temporary
	# files (a big one's journal is not held in memory), and says why it
	# cannot (before: the same "SQL logic error")
	d="$BATS_TEST_TMPDIR/old.db"
	sqlite3 "$d" <"$FORGE_ROOT/schemas/sql/001-core.sql"
	sqlite3 "$d" 'PRAGMA user_version = 1'
	run -5 --separate-stderr env TMPDIR="$long" forge-db migrate --db "$d"
	[[ $stderr == *"SQLite's temporary directory '$long' (TMPDIR) is 494 characters long, too long for the names of its temporary files (at most 488): set TMPDIR to a shorter path"* ]]
	run -0 --separate-stderr forge-db migrate --db "$d"
}
