#!/usr/bin/env bats
# readonly.bats - the commands that only read (status, history, events
# list/replay, findings list, memory list/search/show/stats, metrics, gate
# list) serve a database in a read-only place: a read-only bind mount of its
# directory, made in a private mount namespace (chmod would not stop root).

bats_require_minimum_version 1.5.0

setup() {
	load test_helper/common
	forge_setup
	unshare -m true 2>/dev/null || skip "no mount namespaces here (unshare -m)"
	export BATS_TEST_TIMEOUT=120
	REPO="$BATS_TEST_TMPDIR/calc"
	cp -r "$FORGE_ROOT/tests/fixtures/repos/calc" "$REPO"
	git -C "$REPO" init -q -b main
	git -C "$REPO" add -A
	git -C "$REPO" commit -q -m "calc"
	cd "$REPO"
	export FORGE_DB="$BATS_TEST_TMPDIR/db/forge.db"
	export FORGE_PROVIDER=replay FORGE_CASSETTE="$FORGE_ROOT/tests/fixtures/cassettes/run-clean.jsonl"
	forge run --dry-run --json "add a mul operation" </dev/null >"$BATS_TEST_TMPDIR/run.jsonl"
	T=$(forge history --json -n 1 | jq -r .trace_id)
	[ -n "$T" ]
	forge memory add --type semantic "multiplication lives in calc.c" >/dev/null
}

# ro CMD...: CMD with the database's directory mounted read-only.
ro() {
	unshare -m sh -c 'mount --bind "$1" "$1" && mount -o remount,ro,bind "$1" && shift && exec "$@"' \
		_ "$BATS_TEST_TMPDIR/db" "$@"
}

@test "the read-only mount really is read-only" {
	run -1 ro touch "$BATS_TEST_TMPDIR/db/x"
	[[ "$output" == *"Read-only file system"* ]]
}

@test "history, status and events serve a database in a read-only directory" {
	run -0 --separate-stderr ro forge history
	[[ "$output" == *"$T"* ]]
	[[ "$output" == *"add a mul operation"* ]]
	run -0 --separate-stderr ro forge history --json
	[ "$(jq -r .trace_id <<<"$output")" = "$T" ]
	run -0 --separate-stderr ro forge status "$T"
	[[ "$output" == *"$T"* ]]
	run -0 --separate-stderr ro forge status --json
	[ "$(jq -r .run.trace_id <<<"$output")" = "$T" ]
	run -0 --separate-stderr ro forge events list
	[[ "$output" == *"$T"* ]]
	run -0 --separate-stderr ro forge events replay "$T"
	[ "$(head -n 1 <<<"$output" | jq -r .trace_id)" = "$T" ]
	[ -z "$stderr" ]
}

@test "findings, memory, metrics and gate list serve it too" {
	run -0 --separate-stderr ro forge findings list
	run -0 --separate-stderr ro forge memory list
	[[ "$output" == *"multiplication lives in calc.c"* ]]
	run -0 --separate-stderr ro forge memory search multiplication
	[[ "$output" == *"multiplication lives in calc.c"* ]]
	run -0 --separate-stderr ro forge memory stats
	run -0 --separate-stderr ro forge metrics
	run -0 --separate-stderr ro forge gate list
	[ -z "$stderr" ]
}

@test "a command that writes says why it cannot (exit 5), and nothing changed" {
	run -5 --separate-stderr ro forge cancel "$T"
	[[ "$stderr" == *"forge.db"* ]]
	run -0 --separate-stderr forge status --json "$T"
	[ "$(jq -r .run.status <<<"$output")" != cancelled ]
}
