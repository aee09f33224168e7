# mock.bash - the mock LLM server for a bats file (tests/helpers/mock_llm.py).
#
#	setup_file() { load test_helper/mock; mock_start; }
#	teardown_file() { mock_stop; }
#
# Exports MOCK (the script), MOCK_URL (http://127.0.0.1:PORT), MOCK_LOG (its
# request log, one JSON line per request).  Extra arguments go to the mock.

mock_start() {
	MOCK="$BATS_TEST_DIRNAME/helpers/mock_llm.py"
	MOCK_LOG="$BATS_FILE_TMPDIR/mock.jsonl"
	export MOCK MOCK_LOG
	python3 "$MOCK" --port-file "$BATS_FILE_TMPDIR/port" --log "$MOCK_LOG" "$@" \
		2>"$BATS_FILE_TMPDIR/mock.err" 3>&- &
	echo $! >"$BATS_FILE_TMPDIR/mock.pid"
	for _ in $(seq 100); do [ -s "$BATS_FILE_TMPDIR/port" ] && break; sleep 0.05; done
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
	curl -sS -f -X POST "$MOCK_URL/_mock/reset" >/dev/null
	printf '%s' "$1" | curl -sS -f -X POST -H 'content-type: application/json' \
		--data-binary @- "$MOCK_URL/_mock/script?replace=1" >/dev/null
}
