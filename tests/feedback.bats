#!/usr/bin/env bats
# feedback.bats - `forge feedback production` (the production loop, seed 000
# section 10.6): anomaly and error records become events of the run that
# shipped the code and production memories (confidence 0.9) that name it;
# bad input stores nothing; --create-task opens a run whose task quotes the
# record.  The shipped run is one clean `forge run` on the calc fixture
# (cassette run-clean.jsonl), made once in setup_file; each test works on a
# copy of its database.

load test_helper/common

setup_file() {
	SHARED="$BATS_FILE_TMPDIR/shared"
	export SHARED
	(
		BATS_TEST_TMPDIR=$SHARED
		mkdir -p "$SHARED"
		forge_setup
		cp -r "$FORGE_ROOT/tests/fixtures/repos/calc" "$SHARED/calc"
		cd "$SHARED/calc" || exit 1
		git init -q -b main && git add -A && git commit -q -m calc
		FORGE_PROVIDER=replay FORGE_CASSETTE="$FORGE_ROOT/tests/fixtures/cassettes/run-clean.jsonl" \
			forge run "add a mul operation" </dev/null >"$SHARED/run.out" 2>&1
		echo $? >"$SHARED/run.rc"
	)
}

setup() {
	forge_setup
	[ "$(cat "$SHARED/run.rc")" = 0 ] || { cat "$SHARED/run.out"; false; }
	REPO="$BATS_TEST_TMPDIR/calc"
	cp -r "$SHARED/calc" "$REPO"
	cp "$SHARED/forge.db" "$FORGE_DB"
	cd "$REPO"
	T=$(forge history --json -n 1 | jq -r .trace_id)
	COMMIT=$(forge status "$T" --json | jq -r '.state.deployment.commit // .state.changes.commit')
}

production_memories() {
	forge memory list --json | jq -c 'select(.source == "production")'
}

@test "an error report is linked to the run that shipped its commit: event + memory 0.9 naming task, commit, files" {
	[[ $COMMIT =~ ^[0-9a-f]{40}$ ]]
	rec=$(jq -nc --arg c "${COMMIT:0:10}" \
		'{stack:"Segfault in calc_mul\n  at calc.c:42\n  at main", frequency:17, affectedUsers:3, relatedCommit:$c}')
	run -0 --separate-stderr forge feedback production <<<"$rec"
	assert_output --regexp "^line 1: production error remembered as [0-9A-Z]{26}; linked to run $T\$"
	run -0 production_memories
	[ "${#lines[@]}" -eq 1 ]
	jq -e --arg t "$T" --arg c "${COMMIT:0:12}" '.type == "episodic" and .confidence == 0.9
		and (.content | contains("Production error after the deploy of run " + $t)
		               and contains("add a mul operation") and contains("commit " + $c)
		               and contains("calc.c") and contains("seen 17 times by 3 users")
		               and contains("Segfault in calc_mul | at calc.c:42"))
		and .episode.trace_id == $t and (.tags | index("production") and index("error"))' <<<"$output"
	id=$(jq -r .id <<<"$output")
	run -0 forge events replay "$T"
	printf '%s\n' "$output" | jq -se --arg id "$id" '
		map(select(.type == "production.error")) | length == 1
		and .[0].source == "forge-feedback" and .[0].payload.memory_id == $id
		and .[0].payload.frequency == 17 and .[0].payload.affected_users == 3'
}

@test "an anomaly names its deploy by trace id; --json says where each record went" {
	run -0 --separate-stderr forge feedback production --json - \
		<<<"{\"kind\":\"anomaly\",\"metric\":\"latency_p95\",\"baseline\":120,\"current\":950,\"deployment_id\":\"$T\",\"service\":\"calc-api\"}"
	jq -e --arg t "$T" '.line == 1 and .kind == "anomaly" and .run == $t and .trace_id == $t
		and (.memory_id | test("^[0-9A-Z]{26}$")) and (.event_id | test("^[0-9A-Z]{26}$"))' <<<"$output"
	run -0 production_memories
	jq -e '.content | contains("latency_p95 went from 120 to 950 in calc-api after the deploy of run")' <<<"$output"
	# the anomaly is recalled by a later task on the same code
	run -0 forge memory search --json "calc.c latency"
	jq -se 'map(select(.memory.source == "production")) | length == 1' <<<"$output"
}

@test "a deployment id that is a deployed commit finds its run; an unknown one is kept unlinked" {
	printf '%s\n' "{\"metric\":\"error_rate\",\"baseline\":0.01,\"current\":0.2,\"deployment_id\":\"${COMMIT:0:7}\"}" \
		'{"metric":"error_rate","baseline":0.01,"current":0.2,"deployment_id":"0000000"}' >records.jsonl
	run -0 --separate-stderr forge feedback production records.jsonl --json
	[ "$(printf '%s\n' "$output" | jq -r .run | paste -sd' ')" = "$T null" ]
	unlinked=$(printf '%s\n' "$output" | jq -r 'select(.run == null) | .trace_id')
	run -0 forge events replay "$unlinked"
	jq -e '.type == "production.anomaly" and .payload.run == null' <<<"$output"
	run -0 production_memories
	printf '%s\n' "$output" | jq -se 'map(select(.content | contains("after commit 0000000"))) | length == 1'
}

@test "bad input: the line and the field are named, exit 2, and nothing is stored" {
	good='{"kind":"error","stack":"boom","frequency":1}'
	run -2 --separate-stderr forge feedback production <<<"$good"$'\n''{"kind":"anomaly","metric":"m","baseline":"high","current":2,"trace_id":"x"}'
	[ "$stderr" = "forge-feedback: stdin:2: .baseline: expected number, got string" ]
	run -2 --separate-stderr forge feedback production <<<'{"metric":"m","baseline":1,"current":2}'
	[[ $stderr == *"stdin:1: .deployment_id: missing"* ]]
	run -2 --separate-stderr forge feedback production <<<'{"stack":"x","frequency":-1}'
	[[ $stderr == *"stdin:1: .frequency: "* ]]
	run -2 --separate-stderr forge feedback production <<<'{"kind":"outage"}'
	[[ $stderr == *'.kind: "outage" is not "anomaly" or "error"'* ]]
	run -2 --separate-stderr forge feedback production <<<'{"stack":"x",'
	[[ $stderr == *"stdin:1: not JSON"* ]]
	run -2 --separate-stderr forge feedback production <<<'{"stack":"x","frequency":1,"related_commit":"xyz"}'
	[[ $stderr == *".related_commit"* ]]
	run -2 --separate-stderr forge feedback production </dev/null
	[[ $stderr == *"no records"* ]]
	run -2 --separate-stderr forge feedback production "$BATS_TEST_TMPDIR/missing.jsonl"
	[[ $stderr == *"missing.jsonl: No such file or directory"* ]]
	run -2 --separate-stderr forge feedback prod
	[[ $stderr == *"unknown command 'prod'"* ]]
	run -0 production_memories
	[ -z "$output" ]
}

@test "--create-task opens a run whose task quotes the record" {
	export FORGE_PROVIDER=replay FORGE_CASSETTE="$FORGE_ROOT/tests/fixtures/cassettes/run-clean.jsonl"
	run -0 --separate-stderr forge feedback production --create-task --phases plan \
		<<<"{\"stack\":\"ZeroDivisionError in calc_div\",\"frequency\":5,\"related_commit\":\"${COMMIT:0:8}\"}"
	assert_line --index 0 --regexp "^line 1: production error remembered as .*; linked to run $T\$"
	run -0 forge history --json -n 1
	new=$(jq -r .trace_id <<<"$output")
	[ "$new" != "$T" ]
	jq -e --arg t "$T" '.status == "completed"
		and (.task | contains("Production error after the deploy of run " + $t)
		             and contains("\"stack\":\"ZeroDivisionError in calc_div\"")
		             and contains("\"frequency\":5"))' <<<"$output"
}

@test "a known API key in a record is redacted in the memory and in the task --create-task opens, as in the event" {
	export FORGE_PROVIDER=replay FORGE_CASSETTE="$FORGE_ROOT/tests/fixtures/cassettes/run-clean.jsonl"
	export ANTHROPIC_API_KEY=sk-ant-test-secret-value-123456
	run -0 --separate-stderr forge feedback production --create-task --phases plan \
		<<<"{\"stack\":\"AuthError: key $ANTHROPIC_API_KEY rejected\",\"frequency\":3}"
	run -0 production_memories
	jq -e '.content | contains("AuthError: key [REDACTED] rejected")' <<<"$output"
	run -0 forge history --json -n 1
	jq -e '.task | contains("AuthError: key [REDACTED] rejected")' <<<"$output"
	new=$(jq -r .trace_id <<<"$output")
	run -0 forge show "$new"
	refute_output --partial "$ANTHROPIC_API_KEY"
	# (before: the event redacted, the memory and runs.task in clear)
	run -0 sqlite3 "$FORGE_DB" "SELECT count(*) FROM memories WHERE content LIKE '%$ANTHROPIC_API_KEY%'
		UNION ALL SELECT count(*) FROM runs WHERE task LIKE '%$ANTHROPIC_API_KEY%'"
	assert_output $'0\n0'
}

@test "SIGTERM to forge-feedback --create-task stops the run it started (paused), then exit 130" {
	# (before: forge-feedback died by the signal, its run went on calling the model)
	# a provider that takes the connection and never answers: the run's plan waits on it
	python3 -c 'import socket, sys, os
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(8)
open(sys.argv[1] + ".tmp", "w").write(str(s.getsockname()[1])); os.rename(sys.argv[1] + ".tmp", sys.argv[1])
conns = []
while True:
    c, _ = s.accept(); conns.append(c); open(sys.argv[2], "w").close()' \
		"$BATS_TEST_TMPDIR/port" "$BATS_TEST_TMPDIR/asked" 3>&- &
	srv=$!
	for i in $(seq 200); do [ -s "$BATS_TEST_TMPDIR/port" ] && break; sleep 0.05; done
	export FORGE_PROVIDER=anthropic ANTHROPIC_API_KEY=sk-ant-test FORGE_BASE_URL="http://127.0.0.1:$(cat "$BATS_TEST_TMPDIR/port")"
	forge-feedback production --create-task --phases plan \
		<<<"{\"stack\":\"ZeroDivisionError in calc_div\",\"frequency\":5,\"related_commit\":\"${COMMIT:0:8}\"}" \
		>/dev/null 2>"$BATS_TEST_TMPDIR/err" 3>&- &
	fb=$!
	for i in $(seq 400); do [ -e "$BATS_TEST_TMPDIR/asked" ] && break; sleep 0.05; done
	[ -e "$BATS_TEST_TMPDIR/asked" ] || { cat "$BATS_TEST_TMPDIR/err"; false; }
	sup=$(pgrep -P "$fb")
	[ -n "$sup" ]
	kill -TERM "$fb"
	rc=0; wait "$fb" || rc=$?
	kill "$srv"
	# the run it started has stopped with it (else it is stopped here, and fails the test)
	alive=0
	! kill -0 "$sup" 2>/dev/null || { alive=1; kill "$sup"; }
	[ "$rc" -eq 130 ] || { cat "$BATS_TEST_TMPDIR/err"; false; }
	grep -q "forge-feedback: interrupted" "$BATS_TEST_TMPDIR/err"
	[ "$alive" -eq 0 ]
	run -0 forge history --json -n 1
	jq -e --arg t "$T" '.trace_id != $t and .status == "paused"' <<<"$output"
}
