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
