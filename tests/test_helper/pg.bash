# pg.bash - a throwaway PostgreSQL cluster for one bats file.
#
#   setup_file()    { load test_helper/pg; pg_setup_file; }
#   teardown_file() { load test_helper/pg; pg_teardown_file; }
#   setup()         { ...; pg_require; FORGE_DB=$(pg_newdb); }
#
# pg_setup_file: initdb + pg_ctl start of a cluster that listens on a Unix
# socket only (listen_addresses=''), with trust authentication for the
# superuser "forge"; under $BATS_FILE_TMPDIR, except as root: PostgreSQL
# refuses to run as root, so the server runs as the user "postgres"
# (runuser) in a directory of its own under /tmp, which root's 0700 temp
# directories would keep it out of.  When the PostgreSQL binaries are not
# installed, PG_SKIP says so and pg_require skips the test with it.
# pg_newdb [NAME]: a new database of the cluster, its URI on stdout.
# pg_test_db: pg_newdb as FORGE_DB, its name DBNAME, and psql_q SQL.
# pg_teardown_file: stop the server (immediate) and remove its files; with
# PG_CPU_LOG=FILE it first appends "BATS-FILE SECONDS", the CPU time the
# server and its finished backends used (how make check-pg's cost was
# measured: the server is no child of bats, so `time bats` misses it).
# pg_backend_setup_file / pg_backend_teardown_file: the same, only with
# FORGE_TEST_BACKEND=postgres: for the end-to-end files that run on both
# backends (make check-pg); forge_setup (common.bash) then gives each test a
# new database of the cluster as FORGE_DB.
# PG_BINDIR may name the binaries' directory (default: the newest
# /usr/lib/postgresql/*/bin, else initdb on PATH).

pg_bindir() {
	if [ -n "${PG_BINDIR:-}" ]; then
		echo "$PG_BINDIR"
		return
	fi
	local d
	d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
	[ -n "$d" ] || d=$(dirname "$(command -v initdb 2>/dev/null || echo /nonexistent/initdb)")
	echo "$d"
}

# As the server's user: root runs it as postgres.
pg_as() {
	if [ "$(id -u)" -eq 0 ]; then
		runuser -u postgres -- "$@"
	else
		"$@"
	fi
}

pg_setup_file() {
	local bin
	bin=$(pg_bindir)
	if [ ! -x "$bin/initdb" ] || [ ! -x "$bin/pg_ctl" ]; then
		export PG_SKIP="PostgreSQL is not installed (no initdb/pg_ctl; scripts/install-deps installs the postgresql package)"
		return 0
	fi
	if [ "$(id -u)" -eq 0 ] && ! id postgres >/dev/null 2>&1; then
		export PG_SKIP="running as root without a 'postgres' user to run the PostgreSQL server as"
		return 0
	fi
	local top
	if [ "$(id -u)" -eq 0 ]; then
		top=$(mktemp -d /tmp/forge-pg.XXXXXX)
		chmod 755 "$top"
	else
		top="$BATS_FILE_TMPDIR/pg"
		mkdir -p "$top"
	fi
	# A socket's path must fit in 107 bytes: a short directory when it would not.
	local sock="$top/s"
	if [ ${#sock} -gt 80 ]; then
		sock=$(mktemp -d /tmp/forge-pgs.XXXXXX)
		chmod 755 "$sock"
		echo "$sock" >"$top/sockdir"
	fi
	mkdir -p "$top/data" "$sock"
	[ "$(id -u)" -ne 0 ] || chown postgres "$top/data" "$sock"
	pg_as "$bin/initdb" -D "$top/data" -A trust -U forge -E UTF8 --no-sync >"$top/initdb.log" 2>&1 ||
		{ cat "$top/initdb.log" >&2; return 1; }
	pg_as "$bin/pg_ctl" -D "$top/data" -l "$top/data/server.log" -w -t 60 \
		-o "-k $sock -c listen_addresses='' -c fsync=off -c max_connections=60" start >/dev/null ||
		{ cat "$top/data/server.log" >&2; return 1; }
	export PG_TOP="$top" PG_SOCK="$sock" PG_BIN="$bin"
}

pg_require() {
	[ -z "${PG_SKIP:-}" ] || skip "$PG_SKIP"
}

pg_newdb() {
	local name=${1:-t$(date +%s%N)$RANDOM}
	"$PG_BIN/createdb" -h "$PG_SOCK" -U forge "$name" >&2 || return 1
	echo "postgresql://forge@/$name?host=$PG_SOCK"
}

# pg_test_db: a new database of the cluster as FORGE_DB (exported), its
# name in DBNAME, and psql_q SQL to query it (rows bare, columns joined by |).
pg_test_db() {
	FORGE_DB=$(pg_newdb) || return
	export FORGE_DB
	DBNAME=${FORGE_DB#postgresql://forge@/}
	DBNAME=${DBNAME%%\?*}
	psql_q() { "$PG_BIN/psql" -X -At -h "$PG_SOCK" -U forge -d "$DBNAME" -c "$1"; }
}

pg_teardown_file() {
	[ -n "${PG_TOP:-}" ] || return 0
	if [ -n "${PG_CPU_LOG:-}" ]; then
		local pm; pm=$(head -n1 "$PG_TOP/data/postmaster.pid")
		awk -v f="$BATS_TEST_FILENAME" -v hz="$(getconf CLK_TCK)" '{ print f, ($14+$15+$16+$17)/hz }' /proc/$pm/stat >>"$PG_CPU_LOG"
	fi
	pg_as "$PG_BIN/pg_ctl" -D "$PG_TOP/data" -m immediate -w stop >/dev/null 2>&1 || true
	[ ! -f "$PG_TOP/sockdir" ] || rm -rf "$(cat "$PG_TOP/sockdir")"
	rm -rf "$PG_TOP"
}

pg_backend_setup_file() {
	[ "${FORGE_TEST_BACKEND:-sqlite}" != postgres ] || pg_setup_file
}

pg_backend_teardown_file() {
	[ "${FORGE_TEST_BACKEND:-sqlite}" != postgres ] || pg_teardown_file
}
