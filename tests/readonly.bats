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
	# the database as this Forge leaves it: its emptied -wal and -shm kept
	[ -e "$FORGE_DB-wal" ] && [ ! -s "$FORGE_DB-wal" ] || false
	run -5 --separate-stderr ro forge memory add --type semantic "a lesson never stored"
	[[ "$stderr" == *"forge.db"*"readonly"* ]]
	# what is in the way and what to do (hunt65 #6; before: SQLite's words alone)
	[[ "$stderr" == *"attempt to write a readonly database (sqlite code 8); '$FORGE_DB' is on a read-only file system: no chown or chmod lets it be written; keep the database where it can be written: --db PATH or FORGE_DB=PATH" ]]
	run -0 --separate-stderr forge memory list
	[[ "$output" != *"a lesson never stored"* ]]
	# as an older Forge (or a copy) leaves it: no -wal and -shm beside it
	rm "$FORGE_DB-wal" "$FORGE_DB-shm"
	run -5 --separate-stderr ro forge cancel "$T"
	[[ "$stderr" == *"forge.db"* ]]
	[[ "$stderr" == *"cannot set WAL journal mode: unable to open database file (sqlite code 14); '$FORGE_DB' is on a read-only file system: no chown or chmod lets it be written; keep the database where it can be written: --db PATH or FORGE_DB=PATH" ]]
	run -0 --separate-stderr forge status --json "$T"
	[ "$(jq -r .run.status <<<"$output")" != cancelled ]
}

# other_user CMD...: CMD as nobody, on the database in a directory of root's
# it may read and not write (HOME its own).
other_user() {
	setpriv --reuid=65534 --regid=65534 --clear-groups \
		env HOME="$BATS_TEST_TMPDIR/nb" XDG_CONFIG_HOME="$BATS_TEST_TMPDIR/nb/.config" \
		XDG_CACHE_HOME="$BATS_TEST_TMPDIR/nb/.cache" FORGE_DB="$FORGE_DB" "$@"
}

@test "another user's database, in a directory they may not write: the reads answer, closed cleanly or still open" {
	[ "$(id -u)" = 0 ] || skip "needs root to switch to nobody"
	setpriv --reuid=65534 --regid=65534 --clear-groups true || skip "cannot switch to nobody here"
	forge memory search multiplication >/dev/null   # its vector file made by the owner
	mkdir -p "$BATS_TEST_TMPDIR/nb" && chown 65534 "$BATS_TEST_TMPDIR/nb"
	# (bats makes its directories 700: nobody may pass through them)
	local d="$BATS_TEST_TMPDIR"
	while [ "$d" != / ] && [ -n "$d" ]; do chmod a+x "$d"; d=${d%/*}; done
	chmod 755 "$BATS_TEST_TMPDIR" "$BATS_TEST_TMPDIR/db"
	chmod 644 "$BATS_TEST_TMPDIR"/db/*
	cd /
	# closed cleanly: its emptied -wal and -shm kept, not writable by
	# nobody, or (an older Forge's, a copy) none to read it through
	# (before: exit 5, "sqlite code 1544", from every read command)
	[ ! -s "$FORGE_DB-wal" ]
	run -0 --separate-stderr other_user forge memory search multiplication
	[[ "$output" == *"multiplication lives in calc.c"* ]]
	rm "$FORGE_DB-wal" "$FORGE_DB-shm"
	run -0 --separate-stderr other_user forge history --json
	[ "$(jq -r .trace_id <<<"$output")" = "$T" ]
	run -0 --separate-stderr other_user forge memory list
	[[ "$output" == *"multiplication lives in calc.c"* ]]
	run -0 --separate-stderr other_user forge memory search multiplication
	[[ "$output" == *"multiplication lives in calc.c"* ]]
	run -0 --separate-stderr other_user forge metrics
	# still open by its owner: -wal and -shm there (before: a search failed on
	# the vector file's lock, or on recording the access)
	test_python3
	"$TEST_PYTHON3" - "$FORGE_DB" "$BATS_TEST_TMPDIR/open" "$BATS_TEST_TMPDIR/done" <<-'PY' 3>&- &
		import os, sqlite3, sys, time
		c = sqlite3.connect(sys.argv[1])
		c.execute("select count(*) from memories").fetchall()
		open(sys.argv[2], "w").close()
		deadline = time.time() + 60
		[time.sleep(0.05) for _ in iter(lambda: os.path.exists(sys.argv[3]) or time.time() > deadline, True)]
	PY
	holder=$!
	for _ in $(seq 200); do [ -e "$BATS_TEST_TMPDIR/open" ] && break; sleep 0.05; done
	chmod 644 "$BATS_TEST_TMPDIR"/db/*
	[ -e "$FORGE_DB-wal" ]
	run -0 --separate-stderr other_user forge memory search multiplication
	[[ "$output" == *"multiplication lives in calc.c"* ]]
	run -0 --separate-stderr other_user forge memory search --peek multiplication
	run -0 --separate-stderr other_user forge memory list
	touch "$BATS_TEST_TMPDIR/done"
	wait "$holder"
}

# ro_at DIR CMD...: CMD with DIR mounted read-only (a checkout given to a
# container as `-v src:/src:ro`).
ro_at() {
	unshare -m sh -c 'mount --bind "$1" "$1" && mount -o remount,ro,bind "$1" && shift && exec "$@"' \
		_ "$@"
}

# ro_checkout: $CO, a repository whose last commit changes README; no FORGE_DB.
ro_checkout() {
	CO="$BATS_TEST_TMPDIR/co"
	make_repo "$CO"
	echo more >>"$CO/README" && git -C "$CO" commit -qam more
	unset FORGE_DB
	cd "$CO"
}

@test "forge-review in a read-only checkout: refused before the review (exit 5), saying to give --db or FORGE_DB" {
	ro_checkout
	run -5 --separate-stderr ro_at "$CO" forge-review --base HEAD~1 --no-input
	assert_equal "$stderr" "forge-review: failed: cannot store findings: cannot create directory '$CO/.forge' for database '$CO/.forge/forge.db': Read-only file system; keep the database where it can be written: --db PATH or FORGE_DB=PATH"
	[ "$(jq -s '[.[] | select(.type == "review.layer")] | length' <<<"$output")" -eq 0 ]
	# as it says
	run -0 --separate-stderr ro_at "$CO" forge-review --base HEAD~1 --no-input --db "$BATS_TEST_TMPDIR/ci.db"
	[ "$(tail -n 1 <<<"$output" | jq -r .review.decision)" = approve ]
}

@test "forge-review in a read-only checkout holding a database: refused before the review, findings are not dropped unsaid" {
	ro_checkout
	forge-review -q --base HEAD~1 --no-input >/dev/null   # .forge/forge.db made
	# (before: opened for reading, the review ran and its findings were
	# dropped with a findings.not_stored event only)
	run -5 --separate-stderr ro_at "$CO" forge-review --base HEAD~1 --no-input
	assert_equal "$stderr" "forge-review: failed: cannot store findings: database '$CO/.forge/forge.db' can only be read here ('$CO/.forge/forge.db' is on a read-only file system: no chown or chmod lets it be written); keep the database where it can be written: --db PATH or FORGE_DB=PATH"
}

@test "another user on a read-only checkout is not told to chown it: no chown makes a read-only mount writable" {
	[ "$(id -u)" = 0 ] || skip "needs root to switch to nobody"
	setpriv --reuid=65534 --regid=65534 --clear-groups true || skip "cannot switch to nobody here"
	ro_checkout
	forge-review -q --base HEAD~1 --no-input >/dev/null   # .forge/forge.db made, root's
	mkdir -p "$BATS_TEST_TMPDIR/nb" && chown 65534 "$BATS_TEST_TMPDIR/nb"
	local d="$BATS_TEST_TMPDIR"
	while [ "$d" != / ] && [ -n "$d" ]; do chmod a+x "$d"; d=${d%/*}; done
	chmod -R a+rX "$CO"
	chmod 700 "$CO/.forge" && chmod 600 "$CO/.forge"/forge.db*   # as forge made them
	git config --file "$BATS_TEST_TMPDIR/nb/.gitconfig" --add safe.directory "$CO"
	as_nobody() {
		ro_at "$CO" setpriv --reuid=65534 --regid=65534 --clear-groups \
			env HOME="$BATS_TEST_TMPDIR/nb" XDG_CONFIG_HOME="$BATS_TEST_TMPDIR/nb/.config" \
			XDG_CACHE_HOME="$BATS_TEST_TMPDIR/nb/.cache" "$@"
	}
	# (before: "… and user nobody may not enter it (made by a command run
	# with sudo?); give it back with: sudo chown -R nobody …", which fails
	# on a read-only mount as any write does)
	run -2 --separate-stderr as_nobody forge-review --base HEAD~1 --no-input
	[[ "$stderr" == *"'$CO/.forge' belongs to root (mode 0700), and user nobody may not enter it; it is on a read-only file system: no chown or chmod can change that" ]]
	chmod 755 "$CO/.forge"
	run -5 --separate-stderr as_nobody forge-review --base HEAD~1 --no-input
	[[ "$stderr" == *"; '$CO/.forge/forge.db' is on a read-only file system: no chown or chmod lets it be written; keep the database where it can be written: --db PATH or FORGE_DB=PATH" ]]
	[[ "$stderr" != *chown\ -R* ]]
}
