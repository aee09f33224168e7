#!/usr/bin/env bats
# make install: programs, schemas and pipelines; an installed forge
# works without the source tree.

load test_helper/common

setup() {
	forge_setup
	[ "${FORGE_SUITE:-default}" = default ] || skip "install is checked once, in the default suite"
}

@test "make install DESTDIR=… PREFIX=… installs a working forge" {
	dest="$BATS_TEST_TMPDIR/dest"
	run -0 make -s -C "$FORGE_ROOT" install DESTDIR="$dest" PREFIX=/opt/forge
	# No install path is compiled in: installing elsewhere rebuilds nothing
	# (the suite runs in parallel against these very programs).
	[[ "$output" != *"  CC "* && "$output" != *"  LD "* && "$output" != *"  AR "* ]]
	[ -x "$dest/opt/forge/bin/forge" ]
	[ -x "$dest/opt/forge/bin/forge-events" ]
	[ -f "$dest/opt/forge/share/forge/schemas/event.schema.json" ]
	[ -f "$dest/opt/forge/share/forge/schemas/sql/001-core.sql" ]
	[ -f "$dest/opt/forge/share/forge/pipelines/default.json" ]
	run -0 --separate-stderr "$dest/opt/forge/bin/forge" --help
	[[ "$output" == *"  events "* ]]
	# Schemas and migrations are compiled in: no source tree needed at run time.
	mkdir "$BATS_TEST_TMPDIR/elsewhere"
	run -0 --separate-stderr bash -c 'cd "$1" && printf "%s\n" "$2" | "$3" events --db "$1/db" store' _ \
		"$BATS_TEST_TMPDIR/elsewhere" \
		'{"kind":"event","id":"01JDB3AAAAAAAAAAAAAAAAAAAA","trace_id":"t1","ts":"2026-11-21T21:30:00.000Z","source":"x","type":"a.b","payload":{}}' \
		"$dest/opt/forge/bin/forge"
	[ "$(sqlite3 "$BATS_TEST_TMPDIR/elsewhere/db" 'select count(*) from events')" -eq 1 ]
	# and so are the shipped pipelines, found by name
	run -0 --separate-stderr bash -c 'cd "$1" && "$2" pipeline check default' _ "$BATS_TEST_TMPDIR/elsewhere" \
		"$dest/opt/forge/bin/forge"
	[[ "$output" == "default (built-in): ok: "* ]]
}
