# python.bash - test_python3: sets $TEST_PYTHON3 to the interpreter that
# `python3` on PATH runs (loaded by common.bash and mock.bash).
#
# python3 is often a version manager's shim (pyenv: a bash script that runs
# a dozen more before the interpreter, ~0.15 s of CPU each time).  The
# interpreter is found once per bats run (sys.executable, kept in
# $BATS_RUN_TMPDIR) and then started directly:
#	test_python3; "$TEST_PYTHON3" script.py ... &
test_python3() {
	[ -n "${TEST_PYTHON3:-}" ] && return 0
	local cache="${BATS_RUN_TMPDIR:-}/python3.path"
	if [ -n "${BATS_RUN_TMPDIR:-}" ] && [ -s "$cache" ]; then
		read -r TEST_PYTHON3 <"$cache"
	else
		TEST_PYTHON3=$(python3 -c 'import sys; print(sys.executable)' 2>/dev/null)
		[ -x "$TEST_PYTHON3" ] || TEST_PYTHON3=$(command -v python3)
		if [ -n "${BATS_RUN_TMPDIR:-}" ] && [ -n "$TEST_PYTHON3" ]; then
			printf '%s\n' "$TEST_PYTHON3" >"$cache.$BASHPID" && mv -f "$cache.$BASHPID" "$cache"
		fi
	fi
	export TEST_PYTHON3
}

# test_python_first: when `python3` on PATH is not the interpreter itself (a
# shim), a directory holding only python3 -> the interpreter goes first on
# PATH, so that what a test runs (`#!/usr/bin/env python3` scripts,
# forge-doctor's probes, `python3 ...` in a test) starts the same interpreter
# directly.  Decided once per bats run; called by forge_setup.
test_python_first() {
	[ -n "${BATS_RUN_TMPDIR:-}" ] || return 0
	local dir="$BATS_RUN_TMPDIR/python-first" p
	if [ ! -e "$dir.decided" ]; then
		test_python3
		p=$(command -v python3)
		if [ -n "$p" ] && [ -n "$TEST_PYTHON3" ] &&
			[ "$(readlink -f "$p")" != "$(readlink -f "$TEST_PYTHON3")" ]; then
			# (another file's test may have made it meanwhile: keep theirs)
			mkdir -p "$dir.$BASHPID" && ln -sf "$TEST_PYTHON3" "$dir.$BASHPID/python3" &&
				{ mv -T "$dir.$BASHPID" "$dir" 2>/dev/null || true; }
			rm -rf "$dir.$BASHPID"
		fi
		: >"$dir.decided"
	fi
	[ -d "$dir" ] && PATH="$dir:$PATH"
	return 0
}
