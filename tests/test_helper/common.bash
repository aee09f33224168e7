# common.bash - loaded by every bats file: `load test_helper/common` then
# `forge_setup` in setup().
#
# Gives each test its own HOME/XDG config, database and scratch directory so
# tests never see each other's state or the developer's own config.

bats_require_minimum_version 1.5.0

# shellcheck source=tests/test_helper/python.bash
source "${BASH_SOURCE[0]%/*}/python.bash"

# forge_load_libraries: bats-support and bats-assert.  Their load.bash runs
# `dirname` once a file (some 15 processes a test); their src/*.bash only
# define functions, so they are sourced directly, found as bats_load_library
# finds them (BATS_LIB_PATH, default /usr/lib/bats).
forge_load_libraries() {
	local lib dir found f
	for lib in bats-support bats-assert; do
		found=
		local IFS=:
		for dir in ${BATS_LIB_PATH:-/usr/lib/bats}; do
			[ -d "$dir/$lib/src" ] || continue
			found=$dir/$lib
			break
		done
		unset IFS
		if [ -z "$found" ]; then
			bats_load_library "$lib"
			continue
		fi
		for f in "$found"/src/*.bash; do
			# shellcheck disable=SC1090
			source "$f"
		done
	done
}

# forge_setup: what every test starts with.  It runs without bats's DEBUG
# trap (restored after): bats traces each command a test runs, ~0.2 ms a
# command, so that a failure names its line; the setup is the same for
# every test, and untraced it costs 18-33 ms of CPU a test less (of ~90, the
# harness's own, 2026-12-02).  A failure in it still fails the test.
forge_setup() {
	local debug_trap rc=0
	debug_trap=$(trap -p DEBUG)
	trap - DEBUG
	forge_setup_untraced || rc=$?
	eval "${debug_trap:-trap - DEBUG}"
	return $rc
}

forge_setup_untraced() {
	forge_load_libraries
	export LC_ALL=C
	FORGE_ROOT=${BATS_TEST_DIRNAME%/*}
	case $FORGE_ROOT in /*) ;; *) FORGE_ROOT="$(cd "$BATS_TEST_DIRNAME/.." && pwd)" ;; esac
	export FORGE_ROOT
	: "${FORGE_BINDIR:=$FORGE_ROOT/bin}"
	: "${FORGE_TESTBIN:=$FORGE_ROOT/build/tests}"
	export FORGE_BINDIR FORGE_TESTBIN
	test_python_first
	PATH="$FORGE_BINDIR:$PATH"
	export HOME="$BATS_TEST_TMPDIR/home"
	export XDG_CONFIG_HOME="$HOME/.config"
	mkdir -p "$XDG_CONFIG_HOME"
	export FORGE_DB="$BATS_TEST_TMPDIR/forge.db"
	# FORGE_TEST_BACKEND=postgres (make check-pg): a file that started a
	# cluster (pg_backend_setup_file) gives each test a database of its own
	backend_db || return
	# One cache directory for the whole bats run: what is kept there is keyed
	# by its whole input (SHA-256), so sharing it is sound.  A review's
	# linter and scanner runs on files another test reviewed come from it
	# (review.tool_cache: they are most of a whole run's CPU time), and a
	# configuration validated once is not validated again.  Tests of the
	# caches themselves set their own.
	export XDG_CACHE_HOME="${BATS_RUN_TMPDIR:-$BATS_TEST_TMPDIR}/cache"
	# Nothing from the developer's environment may steer a test.
	local v
	for v in "${!FORGE_@}"; do
		case $v in FORGE_ROOT | FORGE_BINDIR | FORGE_TESTBIN | FORGE_SUITE | FORGE_DB) ;; *) unset "$v" ;; esac
	done
	unset ANTHROPIC_API_KEY OPENAI_API_KEY OPENAI_BASE_URL
	# runs' worktrees out of the checkouts (README: FORGE_WORKTREES), never
	# in the real ~/.local/state (CI runs the suite as root)
	export FORGE_WORKTREES="$BATS_TEST_TMPDIR/worktrees"
	export GIT_AUTHOR_NAME=test GIT_AUTHOR_EMAIL=test@example.com
	export GIT_COMMITTER_NAME=test GIT_COMMITTER_EMAIL=test@example.com
}

# backend_db: with FORGE_TEST_BACKEND=postgres and a cluster started by
# the file (test_helper/pg.bash: pg_backend_setup_file), FORGE_DB becomes a
# new database of it; the test is skipped, saying why, when PostgreSQL is
# not installed.  Otherwise (SQLite, the default) nothing changes.
backend_db() {
	[ "${FORGE_TEST_BACKEND:-sqlite}" = postgres ] || return 0
	[ -z "${PG_SKIP:-}" ] || skip "$PG_SKIP"
	[ -n "${PG_SOCK:-}" ] || return 0
	local name="t${BATS_SUITE_TEST_NUMBER:-0}_$$_$RANDOM"
	"$PG_BIN/createdb" -h "$PG_SOCK" -U forge "$name" || return
	FORGE_DB="postgresql://forge@/$name?host=$PG_SOCK"
}

# db_q SQL: SQL run against $FORGE_DB, SQLite's or PostgreSQL's (psql),
# its rows printed as sqlite3 prints them (columns joined by |).
db_q() {
	case $FORGE_DB in
	postgres://* | postgresql://*) "$PG_BIN/psql" -X -At -q -v ON_ERROR_STOP=1 -d "$FORGE_DB" -c "$1" ;;
	*) sqlite3 "$FORGE_DB" "$1" ;;
	esac
}

# db_dump: everything in $FORGE_DB as SQL text (sqlite3 .dump, pg_dump).
db_dump() {
	case $FORGE_DB in
	postgres://* | postgresql://*) "$PG_BIN/pg_dump" -d "$FORGE_DB" ;;
	*) sqlite3 "$FORGE_DB" .dump ;;
	esac
}

# db_intact: the SQLite file passes its integrity check (after a kill -9);
# on PostgreSQL there is no file of ours to check: the server's own.
db_intact() {
	case $FORGE_DB in postgres://* | postgresql://*) return 0 ;; esac
	[ "$(sqlite3 "$FORGE_DB" "pragma integrity_check")" = ok ]
}

# skip_on_postgres WHY: skip the test on PostgreSQL (FORGE_TEST_BACKEND=postgres),
# saying WHY: it looks at the SQLite file itself, or at what is not on
# PostgreSQL yet (memories, findings).  on_postgres: whether FORGE_DB is one.
on_postgres() {
	case $FORGE_DB in postgres://* | postgresql://*) return 0 ;; esac
	return 1
}

skip_on_postgres() {
	! on_postgres || skip "not on PostgreSQL: $1"
}

# json_quote STRING: STRING as a JSON string in $REPLY, without starting a jq
# (~40 ms of CPU each): backslash, quote, newline, tab and CR escaped here,
# a string with other control characters goes through jq.
json_quote() {
	local s=$1
	s=${s//\\/\\\\}
	s=${s//\"/\\\"}
	s=${s//$'\n'/\\n}
	s=${s//$'\t'/\\t}
	s=${s//$'\r'/\\r}
	if [[ $s == *[$'\x01'-$'\x1f']* ]]; then
		REPLY=$(jq -n --arg s "$1" '$s')
	else
		REPLY="\"$s\""
	fi
}

# from_template NAME DIR MAKER [ARGS...]: DIR (new, or existing: merged)
# becomes a copy of the template NAME, which `MAKER ARGS... TEMPLATE-DIR`
# makes once per bats run (in $BATS_RUN_TMPDIR, shared by every file; a
# template is complete before it appears under its name).  A copy is one
# `cp -a` where making it is a handful of git processes.
from_template() {
	local name=$1 dir=$2 tmpl new
	shift 2
	tmpl="${BATS_RUN_TMPDIR:-$BATS_FILE_TMPDIR}/templates/$name"
	if [ ! -d "$tmpl" ]; then
		new="$tmpl.new.$BASHPID.$RANDOM"
		mkdir -p "$new" || return
		"$@" "$new" || { rm -rf "$new"; return 1; }
		# another test may have made it meanwhile: keep theirs
		mv -T "$new" "$tmpl" 2>/dev/null || rm -rf "$new"
	fi
	if [ -e "$dir" ]; then
		cp -a "$tmpl/." "$dir/"
	else
		[ -d "${dir%/*}" ] || mkdir -p "${dir%/*}"
		cp -a "$tmpl" "$dir"
	fi
}

# run_shared NAME COMMAND [ARGS...]: print what COMMAND printed (stdout, then
# stderr to stderr) and return its status, COMMAND run once per bats run for
# every file that asks for NAME (kept in $BATS_RUN_TMPDIR/shared; a file that
# asks while another file's run of it is under way waits for it).  For a
# costly, deterministic command whose output several files check (the recall
# set's score: ~80 forge processes).  COMMAND must not depend on the test's
# own environment (HOME, FORGE_DB, its directory).
run_shared() {
	local name=$1 dir="${BATS_RUN_TMPDIR:-$BATS_FILE_TMPDIR}/shared"
	shift
	mkdir -p "$dir" || return
	(
		flock 9 || exit
		[ -e "$dir/$name.rc" ] && exit 0
		"$@" >"$dir/$name.out" 2>"$dir/$name.err" 9>&-
		echo $? >"$dir/$name.rc"
	) 9>"$dir/$name.lock" || return
	cat "$dir/$name.out"
	cat "$dir/$name.err" >&2
	return "$(cat "$dir/$name.rc")"
}

# skip_repeat_under_sanitizers: skip this test in the sanitizer suite
# (FORGE_SUITE other than default: scripts/check's asan+ubsan) because it runs
# the programs again on exactly the inputs another test of that suite runs
# them on (deterministic runs: the same code paths, nothing new for ASan and
# UBSan to find).  What it checks besides is checked in the default suite.
skip_repeat_under_sanitizers() {
	[ "${FORGE_SUITE:-default}" = default ] ||
		skip "repeats runs another test makes under $FORGE_SUITE (checked in the default suite)"
}

# own_tmpdir: TMPDIR of this test alone, for a test that runs forge gc and
# checks what it says: gc also removes the temporary directories that
# processes killed by other tests (crash.bats) left in a shared TMPDIR.
own_tmpdir() {
	export TMPDIR="$BATS_TEST_TMPDIR/tmp"
	mkdir -p "$TMPDIR"
}

# make_repo DIR: a git repository with one commit.
make_repo() {
	from_template hello "$1" make_repo_now
}

make_repo_now() {
	local dir=$1
	mkdir -p "$dir"
	git -C "$dir" init -q -b main
	echo "hello" >"$dir/README"
	git -C "$dir" add README
	git -C "$dir" commit -q -m "initial"
}

# calc_setup: the calc fixture (see calc_repo) as $REPO, the current directory;
# $BASE its commit, $CASSETTES the recorded model answers.
calc_setup() {
	CASSETTES="$FORGE_ROOT/tests/fixtures/cassettes"
	REPO="$BATS_TEST_TMPDIR/calc"
	calc_repo "$REPO"
	BASE=$(git -C "$REPO" rev-parse HEAD)
	cd "$REPO" || return
}

# calc_repo DIR: a git repository holding the sample project
# tests/fixtures/repos/calc (a tiny C calculator with `make check`).
calc_repo() {
	from_template calc "$1" calc_repo_now
}

calc_repo_now() {
	local dir=$1
	cp -r "$FORGE_ROOT/tests/fixtures/repos/calc/." "$dir"
	git -C "$dir" init -q -b main
	git -C "$dir" add -A
	git -C "$dir" commit -q -m "calc"
}

# runs_dir [REPO]: the directory of the runs' worktrees of the checkout
# REPO (default $REPO, else the current directory), as Forge names it:
# $FORGE_WORKTREES/KEY, KEY the checkout's name (32 bytes at most, each
# byte but [A-Za-z0-9._-] as '_'), '-' and 16 hex digits of the SHA-256 of
# the real path of its common git directory.  Computed here, so a test that
# uses it checks the name too.
runs_dir() {
	local repo=${1:-${REPO:-.}} common root name hash
	common=$(cd "$repo" && cd "$(git rev-parse --git-common-dir)" && pwd -P) || return
	case $common in
	*/.git) root=${common%/.git} ;;
	*) root=$(cd "$repo" && git rev-parse --show-toplevel) ;;
	esac
	name=$(basename "$root" | LC_ALL=C tr -c 'A-Za-z0-9._\n-' '_' | LC_ALL=C cut -b1-32)
	hash=$(printf %s "$common" | sha256sum | cut -c1-16)
	printf '%s/%s-%s\n' "$(cd "$FORGE_WORKTREES" 2>/dev/null && pwd -P || echo "$FORGE_WORKTREES")" "$name" "$hash"
}

# run_worktree [NAME [REPO]]: the path of the worktree of the run named
# NAME (its trace id, for a ULID): where git's record of it says, else
# where Forge makes it (runs_dir/NAME).  Without NAME: the worktrees git
# knows on a forge/ branch (none: nothing printed).
run_worktree() {
	local name=${1:-} repo=${2:-${REPO:-.}} path
	if [ -z "$name" ]; then
		git -C "$repo" worktree list --porcelain |
			awk '/^worktree / { p = substr($0, 10) } /^branch refs\/heads\/forge\// { print p }'
		return
	fi
	path=$(git -C "$repo" worktree list --porcelain | sed -n 's/^worktree //p' | grep -m1 "/$name\$")
	if [ -n "$path" ]; then
		echo "$path"
	else
		echo "$(runs_dir "$repo")/$name"
	fi
}

# no_run_worktrees [REPO]: no run's worktree of REPO is there: its runs dir
# holds nothing but its root file (or is not there), and nothing is in the
# legacy .forge/worktrees.
no_run_worktrees() {
	local repo=${1:-${REPO:-.}} runs
	runs=$(runs_dir "$repo") || return
	[ ! -e "$runs" ] || [ -z "$(ls -A "$runs" | grep -vx root)" ] || return
	[ ! -e "$repo/.forge/worktrees" ] || [ -z "$(ls -A "$repo/.forge/worktrees")" ]
}

# deep_repo: the calc fixture as $REPO (the current directory) at a path
# 3770 bytes long -- nested directories under the test's own, whatever its
# length -- with a file $DEEP (300 bytes) committed in it: the repository and
# its files are within the system's PATH_MAX (4096), the same file in a
# run's worktree ($FORGE_WORKTREES/KEY/TRACE/, FORGE_WORKTREES the
# repository's path and ".w") is not.
deep_repo() {
	local dir name
	dir=$(cd "$BATS_TEST_TMPDIR" && pwd -P) || return
	[ "${#dir}" -lt 3500 ] || skip "the test's directory ($dir) is too long to nest a repository in"
	name=$(printf 'd%.0s' {1..200})
	while [ $((${#dir} + 201)) -le 3750 ]; do dir=$dir/$name; done
	dir=$dir/$(printf 'r%.0s' $(seq $((3770 - ${#dir} - 1))))
	REPO=$dir
	export FORGE_WORKTREES=$REPO.w
	calc_repo "$REPO"
	DEEP=$(printf 'a%.0s' {1..200})/$(printf 'b%.0s' {1..99})
	mkdir "$REPO/${DEEP%/*}" && echo deep >"$REPO/$DEEP"
	git -C "$REPO" add -A && git -C "$REPO" commit -qm "a deep file"
	BASE=$(git -C "$REPO" rev-parse HEAD)
	cd "$REPO" || return
}

# gate_tty_setup: the calc fixture as $REPO (the current directory), replaying
# the high-risk cassette whose plan fires architecture_approval ($CFG makes it
# the run's only stop), and on_tty to run a command on a pseudo-terminal
# (tests/helpers/pty_run.py) with what it showed in $SHOWN.  For the files
# that drive a gate at the terminal (gate-prompt, gate-ui).
gate_tty_setup() {
	export BATS_TEST_TIMEOUT=120
	export FORGE_PROVIDER=replay FORGE_CASSETTE="$FORGE_ROOT/tests/fixtures/cassettes/run-highrisk.jsonl"
	CFG="$FORGE_ROOT/tests/fixtures/supervisor/high-risk.json"
	REPO="$BATS_TEST_TMPDIR/calc"
	calc_repo "$REPO"
	cd "$REPO" || return
	SHOWN="$BATS_TEST_TMPDIR/terminal"
}

# on_tty STEP... -- COMMAND...: COMMAND on a terminal; what it showed is in $SHOWN.
on_tty() {
	test_python3
	"$TEST_PYTHON3" "$FORGE_ROOT/tests/helpers/pty_run.py" --transcript "$SHOWN" "$@"
}

# wait_catching PID: wait until process PID has a handler for SIGTERM (bit
# 14 of /proc/PID/status's SigCgt), polled, for at most a minute; false if
# it never does (or is gone).
wait_catching() {
	local m i
	for i in $(seq 1200); do
		m=$(awk '/^SigCgt:/ {print $2}' "/proc/$1/status" 2>/dev/null) || return 1
		[ -n "$m" ] || return 1
		(((16#$m >> 14) & 1)) && return 0
		sleep 0.05
	done
	return 1
}

# pause_preload: tests/fixtures/preload/pause-at-checkout-write.c built
# into $PAUSE_SO; $PAUSE, a new directory, is where it signals (its
# FORGE_PAUSE_DIR).  Not under the sanitizers (skipped there).
pause_preload() {
	[ "${FORGE_SUITE:-default}" = default ] || skip "a preloaded library cannot come before the sanitizers' runtime"
	PAUSE_SO="$BATS_TEST_TMPDIR/pause.so"
	cc -shared -fPIC -o "$PAUSE_SO" "$FORGE_ROOT/tests/fixtures/preload/pause-at-checkout-write.c" -ldl
	PAUSE="$BATS_TEST_TMPDIR/pause"
	mkdir -p "$PAUSE"
}

# until_signal FILE [PID]: poll until FILE exists (or process PID has
# ended), for at most a minute; false if neither.
until_signal() {
	local i
	for i in $(seq 1200); do
		[ -e "$1" ] && return 0
		[ -n "${2:-}" ] && ! kill -0 "$2" 2>/dev/null && return 0
		sleep 0.05
	done
	return 1
}

# interrupt_ends_130 NAME CMD...: CMD, waiting on a stdin that never comes
# (a FIFO held open), ends with exit 130 and "NAME: interrupted" on stderr
# on SIGTERM and on SIGINT -- not a death by the signal (the shell's 143).
interrupt_ends_130() {
	local name=$1 sig pid rc
	shift
	mkfifo "$BATS_TEST_TMPDIR/in"
	for sig in TERM INT; do
		exec 5<>"$BATS_TEST_TMPDIR/in"
		"$@" <"$BATS_TEST_TMPDIR/in" >/dev/null 2>"$BATS_TEST_TMPDIR/err" 3>&- &
		pid=$!
		wait_catching "$pid"
		kill -"$sig" "$pid"
		rc=0; wait "$pid" || rc=$?
		exec 5>&-
		[ "$rc" -eq 130 ]
		grep -qx "$name: interrupted" "$BATS_TEST_TMPDIR/err"
	done
	rm -f "$BATS_TEST_TMPDIR/in"
}
