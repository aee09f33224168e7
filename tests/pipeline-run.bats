#!/usr/bin/env bats
# forge run --pipeline: the supervisor runs a pipeline as data.  The nodes are
# tests/fixtures/pipelines/node.sh, which speaks the stream contract and
# leaves marks ($MARKS/ID.start, ID.end, a log of starts and ends), so the
# tests see what ran, how often and in which order without any timing: a
# node of a parallel pair waits (bounded) for its partner's start mark.

load test_helper/common

setup() {
	forge_setup
	REPO="$BATS_TEST_TMPDIR/repo"
	make_repo "$REPO"
	cd "$REPO"
	NODE="$FORGE_ROOT/tests/fixtures/pipelines/node.sh"
	PAIR="$FORGE_ROOT/tests/fixtures/pipelines/pair.json"
	export MARKS="$BATS_TEST_TMPDIR/marks"
	mkdir -p "$MARKS"
}

# pipeline FILE NODES...: FILE is a pipeline of the given node objects; $NODE
# in them is the fixture's path.
pipeline() {
	local file=$1 IFS=,
	shift
	printf '{"pipeline":"t","version":1,"nodes":[%s]}\n' "$*" >"$file"
}

# node ID [ARGS...]: a node object running node.sh --id ID ARGS (JSON array
# items), without the closing brace, so more members can follow.
node() {
	local id=$1 args=""
	shift
	for a in "$@"; do args+=",\"$a\""; done
	printf '{"id":"%s","program":"%s","args":["--id","%s"%s]' "$id" "$NODE" "$id" "$args"
}

last_trace() {
	forge history --json | head -1 | jq -r .trace_id
}

# The payloads of events of type $2 of run $1, one compact line each.
events_of() {
	forge events replay "$1" | jq -c --arg t "$2" 'select(.type == $t) | .payload'
}

# How many times node $1 started.
starts() {
	if [ -e "$MARKS/$1.start" ]; then wc -l <"$MARKS/$1.start"; else echo 0; fi
}

# The run's final state without what differs from run to run.
final_state() {
	forge status --json "$1" | jq -cS '.state | del(.trace_id, .task)'
}

@test "a parallel pair runs at the same time, then the node that needs both; node.status events, state.nodes" {
	# each of the pair ends only once the other has started: both were running at once
	PAIR_WAIT=left,right run -0 --separate-stderr forge run --pipeline "$PAIR" --jobs 2 "a pair"
	T=$(last_trace)
	assert_equal "$(head -2 "$MARKS/log" | sort | tr '\n' ' ')" "start left start right "
	assert_equal "$(tail -2 "$MARKS/log" | tr '\n' ' ')" "start join end join "
	assert_equal "$(forge status --json "$T" | jq -c '.state.nodes')" '{"left":"done","right":"done","join":"done"}'
	assert_equal "$(forge status --json "$T" | jq -c '.state.joined')" '{"by":"join","saw":["left","right"]}'
	assert_equal "$(forge status --json "$T" | jq -c '[.state.left_out, .state.right_out]')" '[{"by":"left"},{"by":"right"}]'
	assert_equal "$(events_of "$T" node.status | jq -r 'select(.node == "join") | "\(.from)>\(.status) \(.attempt) \(.reason)"' | tr '\n' '|')" \
		"pending>running 1 its needs are done|running>done 1 it ended ok|"
	assert_equal "$(events_of "$T" node.status | jq -r 'select(.node != "join") | "\(.node) \(.from)>\(.status)"' | sort | tr '\n' '|')" \
		"left pending>running|left running>done|right pending>running|right running>done|"
	# the node's own events are stored with the run's
	assert_equal "$(events_of "$T" node.work | jq -r .node | sort | tr '\n' ' ')" "join left right "
	# the run records the pipeline it ran
	assert_equal "$(events_of "$T" run.started | jq -c '[.pipeline.name, (.pipeline.doc.nodes | length)]')" '["pair",3]'
	[[ "$stderr" == *"▶ left, right (at the same time)"* ]]
}

@test "a program node gets no provider key in its environment (it runs from the run's worktree, whose files a model wrote)" {
	pipeline p.json "$(node a)}"
	ANTHROPIC_API_KEY=sk-ant-node-secret OPENAI_API_KEY=sk-node-secret GITHUB_TOKEN=ghp_node-secret \
		run -0 --separate-stderr forge run --pipeline p.json "env"
	grep -q '^MARKS=' "$MARKS/a.env"
	run -1 grep -e 'node-secret' -e '^ANTHROPIC_API_KEY=' -e '^OPENAI_API_KEY=' -e '^GITHUB_TOKEN=' "$MARKS/a.env"
}

@test "a node starts as soon as it is ready: slow, fast, then what needs fast starts while slow still runs" {
	# slow ends only once after_fast has started: with waves (after_fast waiting for
	# slow's end) it would give up waiting and fail
	pipeline p.json "$(node slow --key slow_out --wait-for after_fast)}" "$(node fast --key fast_out)}" \
		"$(node after_fast --key after_out --saw fast_out),\"needs\":[\"fast\"]}" \
		"$(node last --key last_out --saw slow_out,after_out),\"needs\":[\"slow\",\"after_fast\"]}"
	run -0 --separate-stderr forge run --pipeline p.json --jobs 2 "no waves"
	T=$(last_trace)
	# after_fast started before slow ended; last after both
	assert_equal "$(grep -n . "$MARKS/log" | grep -E 'start after_fast|end slow' | cut -d: -f2 | tr '\n' '|')" "start after_fast|end slow|"
	assert_equal "$(tail -2 "$MARKS/log" | tr '\n' ' ')" "start last end last "
	assert_equal "$(forge status --json "$T" | jq -c '[.run.status, .state.nodes, .state.last_out, .state.after_out]')" \
		'["completed",{"slow":"done","fast":"done","after_fast":"done","last":"done"},{"by":"last","saw":["slow","after_fast"]},{"by":"after_fast","saw":["fast"]}]'
	[[ "$stderr" == *"▶ after_fast (while slow runs)"* ]]
	# the merge kept what each node wrote; a checkpoint as nodes started or ended
	assert_equal "$(forge status --json "$T" | jq -c '[.state.slow_out, .state.fast_out]')" '[{"by":"slow"},{"by":"fast"}]'
}

@test "a node that ends while another runs is decided at once: its retry starts while the other still runs" {
	# slow ends only once flaky has started twice: with waves flaky's retry would
	# wait for slow's end
	pipeline p.json "$(node slow --key slow_out --wait-for flaky:2)}" \
		"$(node flaky --key flaky_out --fail-once),\"retry\":{\"max\":1}}"
	run -0 --separate-stderr forge run --pipeline p.json --jobs 2 "decided at once"
	T=$(last_trace)
	assert_equal "$(starts slow) $(starts flaky)" "1 2"
	assert_equal "$(grep -E 'slow' "$MARKS/log" | tr '\n' '|')" "start slow|end slow|"
	assert_equal "$(forge status --json "$T" | jq -c '[.run.status, .state.nodes, .state.node_runs.flaky]')" \
		'["completed",{"slow":"done","flaky":"done"},{"attempt":2,"status":"ok","retries":1}]'
	[[ "$stderr" == *"↻ flaky: retry 1 of 1: it ended failed"* ]]
}

@test "--jobs 1 runs the pair one after the other, with the same final state; pipeline.jobs is the default" {
	PAIR_WAIT=left,right run -0 forge run --pipeline "$PAIR" --jobs 2 "a pair"
	parallel=$(final_state "$(last_trace)")
	rm -f "$MARKS"/*
	run -0 forge run --pipeline "$PAIR" --jobs 1 "a pair"
	assert_equal "$(tr '\n' ' ' <"$MARKS/log")" "start left end left start right end right start join end join "
	assert_equal "$(final_state "$(last_trace)")" "$parallel"
	# without --jobs: pipeline.jobs (1 by default, here 2)
	rm -f "$MARKS"/*
	mkdir -p .forge
	echo '{"pipeline":{"jobs":2}}' >.forge/config.json
	PAIR_WAIT=left,right run -0 forge run --pipeline "$PAIR" "a pair"
	assert_equal "$(head -2 "$MARKS/log" | sort | tr '\n' ' ')" "start left start right "
	assert_equal "$(final_state "$(last_trace)")" "$parallel"
}

@test "a node's stderr line is relayed without its control characters: a name's escape sequences never reach the terminal" {
	pipeline one.json "$(node solo)}"
	# (OSC 52 sets the terminal's clipboard, ESC[2K erases the line; before:
	# relayed as they were, hunt27 #4)
	NODE_STDERR=$(printf 'warning: zz\033]52;c;cm0gLXJmIH4=\033\\\033[2K\vx.c was not linted \302\233 ok') \
		run -0 --separate-stderr forge run --pipeline one.json "one node"
	[[ "$stderr" == *"  [solo] warning: zz ]52;c;cm0gLXJmIH4= \\ [2K x.c was not linted    ok"* ]]
	[[ "$stderr" != *$'\033'* ]]
	[[ "$stderr" != *$'\v'* ]]
}

@test "a bounce edge: a node that says no once sends the run back; its bound, then a human" {
	pipeline p.json "$(node build --key built)}" \
		"$(node check --key checked --reject-once),\"needs\":[\"build\"],\"bounce\":{\"to\":\"build\",\"max\":2}}"
	run -0 forge run --pipeline p.json --auto-approve "bounce once"
	T=$(last_trace)
	assert_equal "$(starts build) $(starts check)" "2 2"
	assert_equal "$(forge status --json "$T" | jq -c '.state.bounces | map([.from, .to, .n])')" '[["check","build",1]]'
	assert_equal "$(events_of "$T" loop.phase_bounce | jq -c '[.from, .to]')" '["check","build"]'
	assert_equal "$(events_of "$T" node.status | jq -r 'select(.node == "check") | "\(.from)>\(.status)"' | tr '\n' ' ')" \
		"pending>running running>blocked blocked>pending pending>running running>done "
	assert_equal "$(events_of "$T" node.status | jq -r 'select(.node == "build" and .from == "done") | .reason')" \
		"bounce from check: node 'check' said no"
	assert_equal "$(forge status --json "$T" | jq -c '.state.node_runs.check')" '{"attempt":2,"status":"ok"}'

	# a node that always says no: at most max bounces, then a human (no terminal: the run waits)
	rm -f "$MARKS"/*
	pipeline q.json "$(node build --key build)}" \
		"$(node check --key check --status rejected),\"needs\":[\"build\"],\"bounce\":{\"to\":\"build\",\"max\":1}}"
	run -4 --separate-stderr forge run --pipeline q.json "always no"
	T=$(last_trace)
	assert_equal "$(starts build) $(starts check)" "2 2"
	assert_equal "$(forge status --json "$T" | jq -c '[.run.status, (.state.bounces | length), .state.nodes.check]')" '["paused",1,"blocked"]'
	# (check's second run asks: its attempt is in the gate's id)
	[[ "$stderr" == *"gate escalation_check_2 is waiting for a human: it said no and its bounces ran out"* ]]
	# approved: the node's result stands (it is not run again) and the run goes on
	run -0 forge gate approve "$(forge status --json "$T" | jq -r '.pending_gates[0].id')"
	run -0 forge resume "$T"
	assert_equal "$(starts check)" 2
	assert_equal "$(forge status --json "$T" | jq -c '[.run.status, .state.nodes.check, .state.check.approved_by.by]')" '["completed","done","human"]'
}

@test "retry: a node that fails runs again up to retry.max; without a retry the run fails" {
	pipeline p.json "$(node flaky --key flaked --fail-once),\"retry\":{\"max\":2}}" \
		"$(node after --key later),\"needs\":[\"flaky\"]}"
	run -0 forge run --pipeline p.json "flaky"
	T=$(last_trace)
	assert_equal "$(starts flaky) $(starts after)" "2 1"
	assert_equal "$(forge status --json "$T" | jq -c '.state.node_runs.flaky')" '{"attempt":2,"status":"ok","retries":1}'
	assert_equal "$(events_of "$T" node.status | jq -r 'select(.node == "flaky" and .from == "failed") | .reason')" \
		"retry 1 of 2: it ended failed"

	rm -f "$MARKS"/*
	pipeline q.json "$(node flaky --key flaked --fail-once)}" "$(node after --key later),\"needs\":[\"flaky\"]}"
	run -5 --separate-stderr forge run --pipeline q.json "flaky, no retry"
	T=$(last_trace)
	assert_equal "$(starts flaky) $(starts after)" "1 0"
	assert_equal "$(forge status --json "$T" | jq -c '[.run.status, .run.error, .state.nodes]')" \
		'["failed","node '"'"'flaky'"'"' failed",{"flaky":"failed","after":"pending"}]'
	# a failed run resumes: the failed node runs again (it passes the second time)
	run -0 forge resume "$T"
	assert_equal "$(starts flaky) $(starts after)" "2 1"
}

@test "when: a node whose condition does not hold is skipped, and the nodes after it still run" {
	pipeline p.json "$(node first --key one)}" \
		"$(node maybe --key two),\"needs\":[\"first\"],\"when\":\".one.by == \\\"nobody\\\"\"}" \
		"$(node last --key three),\"needs\":[\"maybe\"]}"
	run -0 forge run --pipeline p.json "skip one"
	T=$(last_trace)
	assert_equal "$(starts first) $(starts maybe) $(starts last)" "1 0 1"
	assert_equal "$(forge status --json "$T" | jq -c '[.state.nodes, has("two")]')" '[{"first":"done","maybe":"skipped","last":"done"},false]'
	assert_equal "$(events_of "$T" node.status | jq -r 'select(.node == "maybe") | "\(.from)>\(.status) \(.reason)"')" \
		'pending>skipped its when does not hold: .one.by == "nobody"'
}

@test "resume after kill -9 in a parallel section: the nodes that were running run again, the run completes" {
	HOLD=1 forge run --pipeline "$PAIR" --jobs 2 "killed" >/dev/null 2>&1 &
	pid=$!
	for _ in $(seq 600); do
		[ -e "$MARKS/left.start" ] && [ -e "$MARKS/right.start" ] && break
		sleep 0.05
	done
	[ -e "$MARKS/left.start" ]
	[ -e "$MARKS/right.start" ]
	kill -9 "$pid"
	wait "$pid" || true
	T=$(last_trace)
	assert_equal "$(forge status --json "$T" | jq -c '.state.nodes')" '{"left":"running","right":"running","join":"pending"}'
	touch "$MARKS/release"     # the orphaned nodes end too
	HOLD=1 run -0 --separate-stderr forge resume --jobs 2 "$T"
	assert_equal "$(starts left) $(starts right) $(starts join)" "2 2 1"
	assert_equal "$(forge status --json "$T" | jq -c '[.run.status, .state.nodes, .state.joined]')" \
		'["completed",{"left":"done","right":"done","join":"done"},{"by":"join","saw":["left","right"]}]'
	assert_equal "$(events_of "$T" node.status | jq -r 'select(.from == "running" and .status == "pending") | "\(.node) \(.reason)"' | sort | tr '\n' '|')" \
		"left it was running when the run stopped: it runs again|right it was running when the run stopped: it runs again|"
}

@test "resume runs the pipeline the run recorded, even when its file changed since" {
	pipeline p.json "$(node solo --key one --status escalated)}"
	run -4 forge run --pipeline p.json "recorded"
	T=$(last_trace)
	# the file now says something else: the resume still runs the recorded one
	pipeline p.json "$(node other --key x)}"
	run -0 forge gate approve "$(forge status --json "$T" | jq -r '.pending_gates[0].id')"
	run -0 forge resume "$T"
	assert_equal "$(starts solo) $(starts other)" "1 0"
	assert_equal "$(forge status --json "$T" | jq -c '.state.nodes')" '{"solo":"done"}'
}

@test "a pipeline with errors: exit 2 before any run exists, every error listed as forge pipeline check does" {
	pipeline bad.json "$(node a)}" "$(node a)}" '{"id":"b","program":"./no-such-node","needs":["zz"]}'
	run -2 --separate-stderr forge pipeline check bad.json
	check=$stderr
	run -2 --separate-stderr forge run --pipeline bad.json "bad"
	[ -z "$output" ]
	assert_equal "$(sed '$d' <<<"$stderr")" "$check"
	assert_equal "$(tail -1 <<<"$stderr")" "forge run: the pipeline has 3 errors: nothing was started"
	assert_equal "$(forge history --json | wc -l)" 0
	run -2 --separate-stderr forge run --pipeline no-such-pipeline "bad"
	assert_equal "$(head -1 <<<"$stderr")" "no-such-pipeline: no pipeline named 'no-such-pipeline' (forge pipeline list shows them; a file is named by its path)"
	run -2 --separate-stderr forge run --pipeline "$PAIR" --phases plan "bad"
	[[ "$stderr" == *"--pipeline runs the pipeline's own nodes: not with --phases or --dry-run"* ]]
	run -2 --separate-stderr forge run --pipeline "$PAIR" --jobs 0 "bad"
	[[ "$stderr" == *"--jobs wants a number of nodes from 1 to 64, not '0'"* ]]
	assert_equal "$(forge history --json | wc -l)" 0
}

@test "the built-in default pipeline through the graph executor: a clean run, a review bounce and a test bounce end as the phase loop's do" {
	calc_setup
	CASSETTES="$FORGE_ROOT/tests/fixtures/cassettes"
	export FORGE_PROVIDER=replay FORGE_CASSETTE="$CASSETTES/run-clean.jsonl"
	run -0 --separate-stderr forge run --pipeline default --json "add a mul operation" </dev/null
	last=$(tail -n 1 <<<"$output")
	T=$(jq -r .trace_id <<<"$last")
	jq -e '.status == "ok" and .deployment.status == "healthy" and .review.decision == "approve" and .tests.summary.failed == 0
		and .nodes == {"plan":"done","implement":"done","review":"done","test":"done","deploy":"done"}' <<<"$last"
	assert_equal "$(forge events replay "$T" | jq -r 'select(.type == "pipeline.state_changed") | "\(.payload.from)>\(.payload.to)"' | tr '\n' ' ')" \
		"idle>planning planning>implementing implementing>reviewing reviewing>testing testing>deploying deploying>completed "

	export FORGE_CASSETTE="$CASSETTES/run-review-bounce.jsonl"
	run -0 --separate-stderr forge run --pipeline default --json "add a mul operation" </dev/null
	last=$(tail -n 1 <<<"$output")
	T=$(jq -r .trace_id <<<"$last")
	jq -e '.status == "ok" and .review.decision == "approve" and (.bounces | map([.from, .to, .n])) == [["review","implement",1]]' <<<"$last"
	assert_equal "$(git -C "$REPO" log --reverse --format=%s "$BASE..forge/$T" | tr '\n' '|')" \
		"forge: add a mul operation (attempt 1)|forge: add a mul operation (attempt 2)|"

	export FORGE_CASSETTE="$CASSETTES/run-test-bounce.jsonl"
	run -0 --separate-stderr forge run --pipeline default --json --config "$FORGE_ROOT/tests/fixtures/supervisor/no-validate.json" "add a mul operation" </dev/null
	last=$(tail -n 1 <<<"$output")
	jq -e '.tests.summary.failed == 0 and .deployment.status == "healthy" and (.bounces | map([.from, .to])) == [["test","implement"]]' <<<"$last"
	jq -e '.node_runs.implement.attempt == 2 and .node_runs.test.attempt == 2 and .node_runs.plan.attempt == 1' <<<"$last"
}

@test "a bounce whose when does not hold: the run ends rejected (exit 1)" {
	pipeline p.json "$(node build --key build)}" \
		"$(node check --key check --status rejected),\"needs\":[\"build\"],\"bounce\":{\"to\":\"build\",\"max\":3,\"when\":\".build.by == \\\"nobody\\\"\"}}"
	run -1 --separate-stderr forge run --pipeline p.json "no bounce"
	T=$(last_trace)
	assert_equal "$(starts build) $(starts check)" "1 1"
	assert_equal "$(forge status --json "$T" | jq -c '[.run.status, .run.error, .state.bounces, .state.nodes.check]')" \
		'["failed","node '"'"'check'"'"' said no",[],"blocked"]'
}

@test "two nodes at the same time changing one key differently: the run fails naming both" {
	pipeline p.json "$(node one --key shared),\"result_key\":\"one\"}" "$(node two --key shared),\"result_key\":\"two\"}"
	PAIR_WAIT=one,two run -5 --separate-stderr forge run --pipeline p.json --jobs 2 "conflict"
	T=$(last_trace)
	[[ "$stderr" == *"forge run: key 'shared' was changed by both 'one' and 'two', which ran at the same time"* ]]
	assert_equal "$(forge status --json "$T" | jq -c '[.run.status, .run.error]')" \
		'["failed","key '"'"'shared'"'"' was changed by both '"'"'one'"'"' and '"'"'two'"'"', which ran at the same time"]'
	# one after the other there is no conflict: the second sees the first's value and replaces it
	rm -f "$MARKS"/*
	run -0 forge run --pipeline p.json --jobs 1 "no conflict"
	assert_equal "$(forge status --json "$(last_trace)" | jq -c '.state.shared')" '{"by":"two"}'
}

@test "a phase node's bounce.when and bounce.max in the pipeline file replace the configuration's bounces.*" {
	calc_setup
	export FORGE_PROVIDER=replay FORGE_CASSETTE="$FORGE_ROOT/tests/fixtures/cassettes/run-review-bounce.jsonl"
	# review requests changes, but the file's condition does not hold: no bounce, the run ends rejected
	jq '(.nodes[] | select(.id == "review") | .bounce.when) = ".review.decision == \"never\""' \
		"$FORGE_ROOT/pipelines/default.json" >"$BATS_TEST_TMPDIR/when.json"
	run -1 --separate-stderr forge run --pipeline "$BATS_TEST_TMPDIR/when.json" "add a mul operation" </dev/null
	T=$(last_trace)
	assert_equal "$(forge status --json "$T" | jq -c '[.run.status, .run.error, .state.bounces, .state.nodes.review]')" \
		'["failed","review said no and its bounce condition does not hold: request_changes: error findings on changed lines (risk medium; 0 critical, 2 error, 0 warning)",[],"blocked"]'
	# max 0 (the configuration allows 2): no bounce, a human decides at once
	jq '(.nodes[] | select(.id == "review") | .bounce.max) = 0' \
		"$FORGE_ROOT/pipelines/default.json" >"$BATS_TEST_TMPDIR/max.json"
	run -4 --separate-stderr forge run --pipeline "$BATS_TEST_TMPDIR/max.json" "add a mul operation" </dev/null
	[[ "$stderr" == *"gate escalation_review is waiting for a human: review still requests changes after 0 bounces (limit 0)"* ]]
	assert_equal "$(forge status --json "$(last_trace)" | jq -c '[.run.status, .state.bounces, .state.nodes.review]')" \
		'["paused",[],"blocked"]'
}

@test "forge status shows each node's status on one line, in the pipeline's order" {
	pipeline p.json "$(node first --key one)}" "$(node asks --key two --status escalated),\"needs\":[\"first\"]}" \
		"$(node maybe --key three),\"needs\":[\"first\"],\"when\":\"false\"}" "$(node last --key four),\"needs\":[\"asks\"]}"
	run -4 forge run --pipeline p.json "status"
	T=$(last_trace)
	run -0 forge status "$T"
	assert_line "nodes    first ✓  asks ✗ blocked  maybe – skipped  last ·"
	run -0 forge gate approve "$(forge status --json "$T" | jq -r '.pending_gates[0].id')"
	run -0 forge resume "$T"
	run -0 forge status "$T"
	assert_line "nodes    first ✓  asks ✓  maybe – skipped  last ✓"
}

@test "a run the phase loop recorded (no pipeline in run.started, no state.nodes) resumes as the default pipeline" {
	calc_setup
	export FORGE_PROVIDER=replay FORGE_CASSETTE="$FORGE_ROOT/tests/fixtures/cassettes/run-highrisk.jsonl"
	run -4 --separate-stderr forge run --config "$FORGE_ROOT/tests/fixtures/supervisor/high-risk.json" "add a mul operation" </dev/null
	T=$(last_trace)
	# what the phase loop left: its run.started names no pipeline, its checkpoints have no nodes
	sqlite3 "$FORGE_DB" "DROP TRIGGER events_no_update;
		UPDATE event_log SET record = json_remove(record, '\$.payload.pipeline') WHERE type = 'run.started';
		UPDATE checkpoints SET state = json_remove(state, '\$.nodes', '\$.node_runs')"
	assert_equal "$(forge status --json "$T" | jq -c '[.state.phase, .state.status, .state.nodes]')" '["plan","ok",null]'
	run -0 forge gate approve "$(forge gate list --json | jq -r .id)"
	run -0 --separate-stderr forge resume --config "$FORGE_ROOT/tests/fixtures/supervisor/high-risk.json" "$T" </dev/null
	assert_equal "$(forge status --json "$T" | jq -c '[.run.status, .state.nodes, .state.deployment.status]')" \
		'["completed",{"plan":"done","implement":"done","review":"done","test":"done","deploy":"done"},"healthy"]'
	# plan ran once, before the pause
	assert_equal "$(forge events replay "$T" | jq -r 'select(.type == "phase.started") | .source' | tr '\n' ' ')" \
		"forge-plan forge-implement forge-review forge-test forge-deploy "
}

@test "a bounce sends back a node that is still running: its result is dropped and it runs again after its needs" {
	# check says no once while slow (which needs build too) still runs; slow ends only
	# once build has started again, so it is still running when the bounce happens
	pipeline p.json "$(node build --key built)}" \
		"$(node check --key checked --reject-once),\"needs\":[\"build\"],\"bounce\":{\"to\":\"build\",\"max\":1}}" \
		"$(node slow --key slowed --wait-for build:2),\"needs\":[\"build\"]}"
	run -0 --separate-stderr forge run --pipeline p.json --jobs 2 "stale"
	T=$(last_trace)
	assert_equal "$(starts build) $(starts check) $(starts slow)" "2 2 2"
	[[ "$stderr" == *"– slow ended ok: dropped, a bounce sent it back"* ]]
	assert_equal "$(forge status --json "$T" | jq -c '[.run.status, .state.nodes, .state.node_runs.slow.attempt]')" \
		'["completed",{"build":"done","check":"done","slow":"done"},2]'
	assert_equal "$(events_of "$T" node.status | jq -r 'select(.node == "slow") | "\(.from)>\(.status)"' | tr '\n' ' ')" \
		"pending>running running>pending pending>running running>done "
}

@test "a gate condition that does not evaluate on the state fails the run as the pipeline's mistake (exit 2), not as a gate rejected (exit 1)" {
	# (before: exit 1, run.error "a gate was rejected", though nothing was asked)
	pipeline g.json "$(node a),\"gate\":{\"ladder\":\"phase_result\",\"when\":\".task.description | tonumber > 3\"}}"
	run -2 --separate-stderr forge run --pipeline g.json "ship it"
	[[ $stderr == *"node 'a': gate when: jq expression '.task.description | tonumber > 3' failed"* ]]
	run -0 forge status --json "$(last_trace)"
	jq -e '.run.status == "failed" and .run.error == "node '"'a'"' has a gate condition that does not evaluate"' <<<"$output"
	[ "$(starts a)" -eq 0 ]
}

@test "a when or gate condition of jq input fails the run with a clear error (exit 2), it does not crash the supervisor" {
	# (before: libjq 1.6's input callback was left unset: SIGSEGV, or "failed: break")
	pipeline w.json "$(node a),\"when\":\"input\"}"
	run -2 --separate-stderr forge run --pipeline w.json "ship it"
	[[ $stderr == *"node 'a': when: jq expression 'input' failed: no more inputs"* ]]
	pipeline g.json "$(node a),\"gate\":{\"ladder\":\"phase_result\",\"when\":\"input\"}}"
	run -2 --separate-stderr forge run --pipeline g.json "ship it"
	[[ $stderr == *"node 'a': gate when: jq expression 'input' failed: no more inputs"* ]]
	pipeline i.json "$(node a),\"when\":\"[inputs] == []\"}"
	run -0 --separate-stderr forge run --pipeline i.json "ship it"
	[ "$(starts a)" -eq 1 ]
}

@test "a when that never ends fails its node with a clear error (exit 2), it does not hang the run" {
	# (before: the supervisor hung for good, deaf to SIGINT/SIGTERM, holding the
	# database's write lock: every other run failed "database is locked")
	pipeline w.json "$(node a),\"when\":\"until(false; .)\"}"
	run -2 --separate-stderr forge run --pipeline w.json "ship it"
	[[ $stderr == *"node 'a': when: jq expression 'until(false; .)' did not end within 10000 ms: a condition must be quick"* ]]
	run -0 forge status --json "$(last_trace)"
	jq -e '.run.status == "failed" and .run.error == "node '"'a'"' has a when that does not evaluate"' <<<"$output"
	[ "$(starts a)" -eq 0 ]
}

@test "SIGTERM while a when that never ends is evaluated pauses the run (exit 130)" {
	# (before: the signal was only noted; the supervisor hung for good)
	# killer runs beside k0; once k0 ended, a's when is evaluated in a child of
	# the supervisor (the same image, not exec'd): killer waits for that child
	# (the same pid on two looks; comm is cut at 15 bytes), then sends the
	# supervisor SIGTERM
	cat >"$BATS_TEST_TMPDIR/killer.sh" <<'EOS'
#!/bin/bash
sup=$PPID prev=
for _ in $(seq 600); do
	cur=$(pgrep -P "$sup" -x forge-superviso | head -1)
	[ -n "$cur" ] && [ "$cur" = "$prev" ] && { kill -TERM "$sup"; break; }
	prev=$cur
	sleep 0.1
done
cat
EOS
	chmod +x "$BATS_TEST_TMPDIR/killer.sh"
	pipeline s.json "$(node k0)}" "{\"id\":\"killer\",\"program\":\"$BATS_TEST_TMPDIR/killer.sh\"}" \
		"$(node a),\"needs\":[\"k0\"],\"when\":\"until(false; .)\"}"
	run -130 --separate-stderr forge run --pipeline s.json --jobs 2 "ship it"
	[[ $stderr == *"forge run: interrupted; resume with \`forge resume "* ]]
	[[ $stderr != *"did not end within"* ]]
	run -0 forge status --json "$(last_trace)"
	jq -e '.run.status == "paused"' <<<"$output"
	[ "$(starts a)" -eq 0 ]
}

@test "a program node's state a reader would refuse (a newer v, not a state's shape, another run's) fails the node (exit 5); the run's state stays its own" {
	# (before: merged into the run's state, checkpointed, and the run completed)
	for bad in '.v = 2' 'del(.task)' '.trace_id = "01JDB2ZZZZZZZZZZZZZZZZZZZZ"'; do
		printf 'select(.kind == "state") | %s\n' "$bad" >"$BATS_TEST_TMPDIR/bad.jq"
		printf '#!/bin/sh\nexec jq -c -f "%s"\n' "$BATS_TEST_TMPDIR/bad.jq" >"$BATS_TEST_TMPDIR/bad.sh"
		chmod +x "$BATS_TEST_TMPDIR/bad.sh"
		pipeline b.json "{\"id\":\"a\",\"program\":\"$BATS_TEST_TMPDIR/bad.sh\",\"result_key\":\"lint\"}"
		run -5 --separate-stderr forge run --pipeline b.json "ship it"
		[[ $stderr == *"forge run: node 'a' wrote a state that cannot be taken: "* ]]
		T=$(last_trace)
		run -0 forge status --json "$T"
		jq -e --arg t "$T" '.run.status == "failed" and .state.v == 1 and .state.trace_id == $t and
			(.state.task | type) == "object"' <<<"$output"
	done
}

@test "an approval answers one decision: another node's bounce and a node's next escalation ask again; a resume passes the approved one" {
	# (a) level 1: lint's bounce is asked and approved; check's bounce is
	# another question (before: both were test_failures, the approval passed it)
	pipeline a.json "$(node build --key built)}" \
		"$(node lint --key linted --reject-once),\"needs\":[\"build\"],\"bounce\":{\"to\":\"build\",\"max\":2}}" \
		"$(node check --key checked --reject-once),\"needs\":[\"lint\"],\"bounce\":{\"to\":\"build\",\"max\":2}}"
	run -4 --separate-stderr forge run --level 1 --pipeline a.json "two bouncing nodes" </dev/null
	T=$(last_trace)
	run -0 forge status --json "$T"
	jq -e '[.pending_gates[] | [.gate, .prompt]] == [["test_failures_lint",
		"node '"'lint'"' said no. Approve to go back to build (its bounce); reject to end the run."]]' <<<"$output"
	run -0 forge gate approve "$(forge status --json "$T" | jq -r '.pending_gates[0].id')"
	run -4 --separate-stderr forge resume "$T" </dev/null
	run -0 forge status --json "$T"
	jq -e '[.pending_gates[].gate] == ["test_failures_check"] and [.state.bounces[].from] == ["lint"]' <<<"$output"
	run -0 forge gate approve "$(forge status --json "$T" | jq -r '.pending_gates[0].id')"
	run -0 --separate-stderr forge resume "$T" </dev/null
	assert_equal "$(forge status --json "$T" | jq -c '[.run.status, [.state.bounces[].from]]')" '["completed",["lint","check"]]'

	# (b) a node that escalates, approved, runs again after a later bounce and
	# escalates again: a new question (before: the first approval passed it)
	rm -f "$MARKS"/*
	pipeline b.json "$(node build --key built)}" \
		"$(node check --key checked --status escalated),\"needs\":[\"build\"]}" \
		"$(node final --key fin --reject-once),\"needs\":[\"check\"],\"bounce\":{\"to\":\"build\",\"max\":1}}"
	run -4 --separate-stderr forge run --pipeline b.json "escalates" </dev/null
	T=$(last_trace)
	assert_equal "$(forge status --json "$T" | jq -c '[.pending_gates[].gate]')" '["escalation_check"]'
	run -0 forge gate approve "$(forge status --json "$T" | jq -r '.pending_gates[0].id')"
	run -4 --separate-stderr forge resume "$T" </dev/null
	assert_equal "$(starts check)" 2
	assert_equal "$(forge status --json "$T" | jq -c '[.pending_gates[].gate]')" '["escalation_check_2"]'
	run -0 forge gate approve "$(forge status --json "$T" | jq -r '.pending_gates[0].id')"
	run -0 --separate-stderr forge resume "$T" </dev/null
	assert_equal "$(starts check)" 2
	assert_equal "$(forge status --json "$T" | jq -r .run.status)" completed
}

@test "a configured gate for a program node by its id (phase: the node's id) asks before it runs" {
	# (before: the configuration's schema refused any phase but the five and *)
	# (the user's list: a repository's list without the default gates
	# would be ignored, README "What a repository's configuration may not set")
	mkdir -p "$XDG_CONFIG_HOME/forge"
	echo '{"gates":[{"id":"release_ok","phase":"release","condition":"true","prompt":"Release?"}]}' \
		>"$XDG_CONFIG_HOME/forge/config.json"
	pipeline p.json "$(node build --key b)}" "$(node release --key r),\"needs\":[\"build\"]}"
	run -4 --separate-stderr forge run --pipeline p.json "ship" </dev/null
	T=$(last_trace)
	[[ $stderr == *"gate release_ok is waiting for a human: Release?"* ]]
	assert_equal "$(starts build) $(starts release)" "1 0"
	run -0 forge gate approve "$(forge status --json "$T" | jq -r '.pending_gates[0].id')"
	run -0 --separate-stderr forge resume "$T" </dev/null
	assert_equal "$(starts release)" 1
}

@test "a node's own gate asks again before the node's next run (its attempt in the id), and an approval resumes" {
	pipeline p.json "$(node build --key built)}" \
		"$(node ship --key shipped),\"needs\":[\"build\"],\"gate\":{\"ladder\":\"phase_result\"}}" \
		"$(node check --key checked --reject-once),\"needs\":[\"ship\"],\"bounce\":{\"to\":\"build\",\"max\":1}}"
	run -4 --separate-stderr forge run --level 0 --pipeline p.json "gated twice" </dev/null
	T=$(last_trace)
	for g in phase_result_ship test_failures_check phase_result_ship_2; do
		assert_equal "$(forge status --json "$T" | jq -c '[.pending_gates[].gate]')" "[\"$g\"]"
		run -0 forge gate approve "$(forge status --json "$T" | jq -r '.pending_gates[0].id')"
		run --separate-stderr forge resume "$T" </dev/null
	done
	assert_equal "$status" 0
	assert_equal "$(starts ship) $(starts check)" "2 2"
}

# deploy_pipeline FILE ARGS...: plan, implement and a deploy node given ARGS
# (JSON array items): no review, no tests.
deploy_pipeline() {
	local file=$1 args="" IFS=,
	shift
	for a in "$@"; do args+="${args:+,}\"$a\""; done
	mkdir -p "$(dirname "$file")"
	printf '{"pipeline":"default","version":1,"nodes":[{"id":"plan","phase":"plan"},%s,%s]}\n' \
		'{"id":"implement","phase":"implement","needs":["plan"]}' \
		"{\"id\":\"deploy\",\"phase\":\"deploy\",\"needs\":[\"implement\"],\"args\":[$args]}" >"$file"
}

@test "a repository's own pipeline may not give forge-deploy --force or a further strategy: ignored with a warning naming file, node and flag, and recorded" {
	calc_setup
	export FORGE_PROVIDER=replay FORGE_CASSETTE="$CASSETTES/run-clean.jsonl"
	deploy_pipeline "$REPO/.forge/pipelines/default.json" --force --strategy merge --approve
	run -1 --separate-stderr forge run "add a mul operation" </dev/null
	T=$(last_trace)
	[[ "$stderr" == *"warning: ignoring --force (node 'deploy'), --strategy merge (node 'deploy'), --approve (node 'deploy') of $REPO/.forge/pipelines/default.json: a repository's pipeline may not"*'"trust_project": true'* ]]
	assert_equal "$(git -C "$REPO" rev-parse main)" "$BASE"
	assert_equal "$(forge status --json "$T" | jq -r .state.deployment.status)" skipped
	[ -z "$(events_of "$T" deploy.forced)" ]
	assert_equal "$(events_of "$T" run.pipeline_ignored | jq -c '[.setting, [.ignored[] | .node + " " + .arg]]')" \
		'["trust_project",["deploy --force","deploy --strategy","deploy --approve"]]'
	# a resume runs the recorded pipeline under the same rule
	assert_equal "$(events_of "$T" run.started | jq -c .pipeline.project)" true

	# the same as a path inside the repository is the repository's too; -q: not said, still ignored
	run -1 --separate-stderr forge run -q --pipeline .forge/pipelines/default.json "add a mul operation" </dev/null
	[[ "$stderr" != *"warning: ignoring --force"* ]]
	assert_equal "$(git -C "$REPO" rev-parse main)" "$BASE"
}

@test "a repository's pipeline may name the strategy you chose and a production environment (tighter); your own pipeline file and trust_project pass --force" {
	calc_setup
	export FORGE_PROVIDER=replay FORGE_CASSETTE="$CASSETTES/run-clean.jsonl"
	# production is tighter than the default staging: it applies (no review here: skipped, exit 1)
	deploy_pipeline "$REPO/.forge/pipelines/default.json" --environment=production --strategy merge
	echo '{"deploy":{"strategy":"merge"}}' >"$BATS_TEST_TMPDIR/merge.json"
	run -1 --separate-stderr forge run --config "$BATS_TEST_TMPDIR/merge.json" "add a mul operation" </dev/null
	[[ "$stderr" != *"warning: ignoring"* ]]
	T=$(last_trace)
	[ -z "$(events_of "$T" run.pipeline_ignored)" ]
	assert_equal "$(git -C "$REPO" rev-parse main)" "$BASE"

	# your own file, outside the repository: its --force is yours
	deploy_pipeline "$BATS_TEST_TMPDIR/mine.json" --force --strategy merge
	run -0 --separate-stderr forge run --pipeline "$BATS_TEST_TMPDIR/mine.json" "add a mul operation" </dev/null
	T=$(last_trace)
	[ -n "$(events_of "$T" deploy.forced)" ]
	[ "$(git -C "$REPO" rev-parse main)" != "$BASE" ]

	# the repository's, trusted by your configuration
	git -C "$REPO" reset -q --hard "$BASE"
	deploy_pipeline "$REPO/.forge/pipelines/default.json" --force --strategy merge
	echo '{"trust_project":true}' >"$BATS_TEST_TMPDIR/trust.json"
	run -0 --separate-stderr forge run --config "$BATS_TEST_TMPDIR/trust.json" "add a mul operation" </dev/null
	[[ "$stderr" != *"warning: ignoring"* ]]
	T=$(last_trace)
	[ -n "$(events_of "$T" deploy.forced)" ]
	[ "$(git -C "$REPO" rev-parse main)" != "$BASE" ]
}

@test "what the supervisor recorded is committed before it waits for a node still running: another process sees a node's end meanwhile" {
	# (before: the end of 'fast' stayed in the supervisor's open transaction
	# while it waited for 'watch', so a phase writing to the database then --
	# its model call's log -- waited 10 s on the lock and lost the row)
	cat >"$BATS_TEST_TMPDIR/watch.sh" <<'SH'
#!/bin/sh
state=$(head -n 1)
trace=$(printf '%s' "$state" | jq -r .trace_id)
n=0
until forge events replay "$trace" 2>/dev/null |
	jq -e 'select(.type == "node.status" and .payload.node == "fast" and .payload.status == "done")' >/dev/null; do
	n=$((n + 1))
	if [ $n -gt 150 ]; then
		echo "watch: the end of node fast never reached the database" >&2
		exit 3
	fi
	sleep 0.1
done
printf '%s\n' "$state"
SH
	chmod +x "$BATS_TEST_TMPDIR/watch.sh"
	pipeline p.json "$(node fast)}" "{\"id\":\"watch\",\"program\":\"$BATS_TEST_TMPDIR/watch.sh\"}"
	run -0 --separate-stderr forge run --pipeline p.json --jobs 2 "seen meanwhile"
	T=$(last_trace)
	assert_equal "$(forge status --json "$T" | jq -c '.state.nodes')" '{"fast":"done","watch":"done"}'
}

@test "a node that drops or resets .bounces in its state cannot reset the count: the bounce's max holds, then a human" {
	# (before: a program writing a minimal state without .bounces, or with
	# .bounces = [], bounced back for ever; this one gives up after 5 runs)
	cat >"$BATS_TEST_TMPDIR/no.sh" <<'SH'
#!/bin/sh
echo x >>"$MARKS/no.start"
st=rejected
[ "$(wc -l <"$MARKS/no.start")" -gt 5 ] && st=ok
jq -c --arg st "$st" '{kind, v, trace_id, phase, task, status: $st, bounces: []}'
SH
	chmod +x "$BATS_TEST_TMPDIR/no.sh"
	pipeline p.json "$(node build)}" \
		"{\"id\":\"no\",\"program\":\"$BATS_TEST_TMPDIR/no.sh\",\"needs\":[\"build\"],\"bounce\":{\"to\":\"build\",\"max\":2}}"
	run -4 --separate-stderr forge run --pipeline p.json "always no"
	T=$(last_trace)
	assert_equal "$(starts build) $(starts no)" "3 3"
	assert_equal "$(forge status --json "$T" | jq -c '[.run.status, (.state.bounces | length), .state.nodes.no]')" '["paused",2,"blocked"]'
	[[ "$stderr" == *"it said no and its bounces ran out"* ]]
}

@test "a program that writes its state without cost, or with a lower one, spent nothing: no negative cost, the run's total kept" {
	cat >"$BATS_TEST_TMPDIR/spend.sh" <<'SH'
#!/bin/sh
jq -c '.cost = {"usd": 0.5, "tokens": 10}'
SH
	cat >"$BATS_TEST_TMPDIR/nocost.sh" <<'SH'
#!/bin/sh
jq -c '{kind, v, trace_id, phase, status, task}'
SH
	cat >"$BATS_TEST_TMPDIR/zero.sh" <<'SH'
#!/bin/sh
jq -c '.cost = {"usd": 0, "tokens": 0}'
SH
	chmod +x "$BATS_TEST_TMPDIR"/spend.sh "$BATS_TEST_TMPDIR"/nocost.sh "$BATS_TEST_TMPDIR"/zero.sh
	pipeline p.json "{\"id\":\"spend\",\"program\":\"$BATS_TEST_TMPDIR/spend.sh\"}" \
		"{\"id\":\"nocost\",\"program\":\"$BATS_TEST_TMPDIR/nocost.sh\",\"needs\":[\"spend\"]}" \
		"{\"id\":\"zero\",\"program\":\"$BATS_TEST_TMPDIR/zero.sh\",\"needs\":[\"nocost\"]}"
	run -0 --separate-stderr forge run --pipeline p.json "costs"
	T=$(last_trace)
	[[ "$output" == *'spend $0.5000 · nocost $0.0000 · zero $0.0000 · total $0.5000'* ]]
	assert_equal "$(forge status --json "$T" | jq -c '.state.cost.usd')" '0.5'
}

@test "forge resume from another directory runs a pipeline given by a relative path whose programs are relative paths" {
	mkdir -p ci/bin src
	cp "$NODE" ci/bin/node.sh
	printf '{"pipeline":"p","version":1,"nodes":[{"id":"a","program":"bin/node.sh","args":["--id","a"],%s}]}\n' \
		'"gate":{"ladder":"architecture_approval","prompt":"go?"}' >ci/p.json
	run -4 --separate-stderr forge run --pipeline ci/p.json "relative"
	T=$(last_trace)
	assert_equal "$(events_of "$T" run.started | jq -r .pipeline.path)" "$(realpath ci/p.json)"
	run -0 forge gate approve "$(forge status --json "$T" | jq -r '.pending_gates[0].id')"
	cd src
	run -0 --separate-stderr forge resume "$T"
	assert_equal "$(starts a)" 1
	assert_equal "$(forge status --json "$T" | jq -c '[.run.status, .state.nodes.a]')" '["completed","done"]'
}

# wait_file F: until F has something in it (bounded: a node that never gets there fails the test).
wait_file() {
	local n=0
	until [ -s "$1" ]; do
		n=$((n + 1))
		[ $n -le 600 ] || { echo "never written: $1" >&2; return 1; }
		sleep 0.05
	done
}

# gone PID: PID ends (dead or a zombie, which an init here may leave a while);
# bounded (a SIGKILL just sent is delivered a moment later): 10 s, then false.
gone() {
	local n=0
	while [ -e "/proc/$1" ] && ! sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | grep -q '^Z'; do
		n=$((n + 1))
		[ $n -le 200 ] || return 1
		sleep 0.05
	done
}

@test "SIGTERM to forge run reaches what a program node started: nothing is left running when the run pauses" {
	# (before: the node alone was signalled; its `sleep` ran on, reparented to init)
	cat >"$BATS_TEST_TMPDIR/bg.sh" <<'SH'
#!/bin/sh
sleep 300 &
echo $! >"$MARKS/grandchild"
wait
jq -c '.status = "ok"'
SH
	chmod +x "$BATS_TEST_TMPDIR/bg.sh"
	pipeline p.json "{\"id\":\"a\",\"program\":\"$BATS_TEST_TMPDIR/bg.sh\"}"
	forge run --pipeline p.json "stopped" </dev/null >"$BATS_TEST_TMPDIR/out" 2>&1 &
	P=$!
	wait_file "$MARKS/grandchild"
	G=$(cat "$MARKS/grandchild")
	kill -TERM "$P"
	rc=0
	wait "$P" || rc=$?
	assert_equal "$rc" 130
	if ! gone "$G"; then
		kill "$G"
		echo "the node's child $G outlived the run" >&2
		return 1
	fi
	assert_equal "$(forge status --json "$(last_trace)" | jq -r .run.status)" "paused"
}

@test "a program node that ignores SIGINT and SIGTERM is killed after the grace: forge run ends, nothing left running" {
	# (before: SIGINT waited for the node's whole command)
	cat >"$BATS_TEST_TMPDIR/deaf.sh" <<'SH'
#!/bin/sh
trap '' INT TERM
sleep 30 &
echo $! >"$MARKS/grandchild"
wait
echo x >"$MARKS/deaf.end"
jq -c '.status = "ok"'
SH
	chmod +x "$BATS_TEST_TMPDIR/deaf.sh"
	pipeline p.json "{\"id\":\"a\",\"program\":\"$BATS_TEST_TMPDIR/deaf.sh\"}"
	# (a background job of a script ignores SIGINT; set -m gives forge its own job that does not)
	set -m
	forge run --pipeline p.json "deaf" </dev/null >"$BATS_TEST_TMPDIR/out" 2>&1 &
	P=$!
	set +m
	wait_file "$MARKS/grandchild"
	G=$(cat "$MARKS/grandchild")
	kill -INT "$P"
	rc=0
	wait "$P" || rc=$?
	assert_equal "$rc" 130
	if ! gone "$G"; then
		kill -9 "$G"
		echo "the node's child $G outlived the run" >&2
		return 1
	fi
	[ ! -e "$MARKS/deaf.end" ]
}

@test "a run stopped by a condition that fails on the state advises a new run with the fixed file, not a resume; a skipped node shows –" {
	printf '{"pipeline":"t","version":1,"nodes":[{"id":"a","program":"%s","args":["--id","a"],"when":%s}]}\n' \
		"$NODE" '".task.description | tonumber > 1"' >p.json
	run -2 --separate-stderr forge run --pipeline p.json "not a number"
	[[ "$output" == *"next      forge run --pipeline '$(realpath p.json)' 'not a number'"* ]]
	[[ "$output" == *"a resume stops on the same condition"* ]]
	[[ "$output$stderr" != *"forge resume"* ]]

	pipeline q.json "$(node b --status skipped)}"
	run -0 --separate-stderr forge run --pipeline q.json "skip"
	[[ "$stderr" == *"  – b skipped  ("* ]]
}
