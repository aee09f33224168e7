# mock.bash - the mock LLM server for a bats file (tests/helpers/mock_llm.py).
#
#	load test_helper/mock
#	mock_per_file 120     # setup_file/teardown_file start and stop it
# or, by hand:
#	setup_file() { load test_helper/mock; mock_start; }
#	teardown_file() { mock_stop; }
#
# Exports MOCK (the script), MOCK_URL (http://127.0.0.1:PORT), MOCK_LOG (its
# request log, one JSON line per request).  Extra arguments go to the mock.
# The file's tests share the mock, so they run one at a time (bats --jobs
# still runs this file beside the others; scripts/check runs every file's
# tests one at a time anyway).

# shellcheck source=tests/test_helper/python.bash
source "${BASH_SOURCE[0]%/*}/python.bash"

mock_start() {
	BATS_NO_PARALLELIZE_WITHIN_FILE=true
	MOCK="$BATS_TEST_DIRNAME/helpers/mock_llm.py"
	MOCK_LOG="$BATS_FILE_TMPDIR/mock.jsonl"
	export MOCK MOCK_LOG
	test_python3
	"$TEST_PYTHON3" "$MOCK" --port-file "$BATS_FILE_TMPDIR/port" --log "$MOCK_LOG" "$@" \
		2>"$BATS_FILE_TMPDIR/mock.err" 3>&- &
	local pid=$!
	echo $pid >"$BATS_FILE_TMPDIR/mock.pid"
	# it writes the port file once it listens; wait for that or its end (a
	# loaded machine may take seconds to start python: bounded at 60 s)
	for _ in $(seq 1200); do
		[ -s "$BATS_FILE_TMPDIR/port" ] || ! kill -0 $pid 2>/dev/null && break
		sleep 0.05
	done
	[ -s "$BATS_FILE_TMPDIR/port" ] || { cat "$BATS_FILE_TMPDIR/mock.err" >&2; return 1; }
	MOCK_URL="http://127.0.0.1:$(cat "$BATS_FILE_TMPDIR/port")"
	export MOCK_URL
}

mock_stop() {
	[ -f "$BATS_FILE_TMPDIR/mock.pid" ] && kill "$(cat "$BATS_FILE_TMPDIR/mock.pid")" 2>/dev/null
	return 0
}

# mock_script STEPS-JSON: replace the mock's script and forget earlier requests.
mock_script() {
	mock_reset
	mock_steps "$1"
}

# mock_steps STEPS-JSON: replace the mock's script, keeping its request log.
mock_steps() {
	printf '%s' "$1" | curl -sS -f -X POST -H 'content-type: application/json' \
		--data-binary @- "$MOCK_URL/_mock/script?replace=1" >/dev/null
}

# mock_reset: forget the mock's script and its request log.
mock_reset() {
	curl -sS -f -X POST "$MOCK_URL/_mock/reset" >/dev/null
}

# mock_per_file [SECONDS]: at the top level of a bats file whose tests share
# one mock server: its setup_file starts the mock (and sets BATS_TEST_TIMEOUT
# to SECONDS when given), its teardown_file stops it.  With MOCK_BACKENDS=1
# set before, they also start and stop the PostgreSQL cluster of
# FORGE_TEST_BACKEND=postgres (test_helper/pg.bash: pg_backend_setup_file).
#
#	load test_helper/mock
#	mock_per_file 120
mock_per_file() {
	MOCK_FILE_TIMEOUT=${1:-}
	setup_file() {
		[ -z "$MOCK_FILE_TIMEOUT" ] || export BATS_TEST_TIMEOUT=$MOCK_FILE_TIMEOUT
		mock_start
		[ -z "${MOCK_BACKENDS:-}" ] || { load test_helper/pg && pg_backend_setup_file; }
	}
	teardown_file() {
		mock_stop
		[ -z "${MOCK_BACKENDS:-}" ] || { load test_helper/pg && pg_backend_teardown_file; }
	}
}

# mock_logged TEXT [AFTER]: a request with a seq above AFTER (default 0)
# whose log line contains TEXT is in $MOCK_LOG.  One awk over the log: cheap
# enough to poll with, as a first filter before an exact (jq) check of
# /_mock/requests - jq takes ~50 ms of CPU to start, a poll every 50 ms with
# it alone keeps a core busy.
mock_logged() {
	awk -v t="$1" -v a="${2:-0}" '
	  index($0, t) && match($0, /^\{"seq": [0-9]+/) && substr($0, 9, RLENGTH - 8) + 0 > a { f = 1; exit }
	  END { exit !f }' "$MOCK_LOG"
}
