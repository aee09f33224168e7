#!/usr/bin/env bats
# crash.bats - crash safety of forge-supervisor: kill -9 the supervisor (with
# its phase, like a machine going down; or alone) at several points of a run,
# and kill -9 a phase under a living supervisor; every time `forge resume
# TRACE` completes the run, the events stored before the kill are all still
# there, implement is committed once per attempt on forge/TRACE, and no model
# call of a finished phase is made again (counted on the mock server's
# request log).  Timing only picks the kill point; what is asserted holds
# wherever the kill lands.

bats_require_minimum_version 1.5.0

load test_helper/mock
MOCK_BACKENDS=1   # make check-pg: also on PostgreSQL
mock_per_file 120

setup() {
	load test_helper/common
	forge_setup
	CASSETTES="$FORGE_ROOT/tests/fixtures/cassettes"
	export FORGE_PROVIDER=anthropic FORGE_BASE_URL="$MOCK_URL" ANTHROPIC_API_KEY=test-key
	mock_reset
	# the model's answers, phase by phase (the mock serves them in order)
	# (made once a file: they are the same for every test)
	if [ ! -s "$BATS_FILE_TMPDIR/impl.json" ]; then
		jq -sc '[.[].response | {text: (.text // ""), tool_calls, usage}]' "$CASSETTES/plan-calc.jsonl" \
			>"$BATS_FILE_TMPDIR/plan.json"
		jq -sc '[.[].response | {text: (.text // ""), tool_calls, usage}]' "$CASSETTES/implement-calc.jsonl" \
			>"$BATS_FILE_TMPDIR/impl.json"
	fi
	PLAN=$(<"$BATS_FILE_TMPDIR/plan.json")
	IMPL=$(<"$BATS_FILE_TMPDIR/impl.json")
}

teardown() {
	# a run left behind by a failed assertion
	[ -s "$BATS_TEST_TMPDIR/sup.pid" ] && kill -9 -- "-$(cat "$BATS_TEST_TMPDIR/sup.pid")" 2>/dev/null
	true
}

# new_repo: a fresh copy of calc in $REPO (cwd), base commit in $BASE.
new_repo() {
	REPO="$BATS_TEST_TMPDIR/calc-$1"
	rm -rf "$REPO"
	calc_repo "$REPO"
	BASE=$(git -C "$REPO" rev-parse HEAD)
	cd "$REPO"
}

# script JSON-ARRAY: what the mock answers from now on (the request log stays).
script() {
	printf '%s' "$1" | curl -sS -f -X POST -H 'content-type: application/json' \
		--data-binary @- "$MOCK_URL/_mock/script?replace=1" >/dev/null
}

# calls WHO [AFTER]: model requests of the planner/implementer (their system
# prompts) with a sequence number above AFTER.
calls() {
	curl -sS -f "$MOCK_URL/_mock/requests" |
		jq --arg who "$1" --argjson after "${2:-0}" \
			'[.[] | select(.seq > $after and (.body.system | tostring | test("You are the " + $who)))] | length'
}

# all_calls AFTER: "PLANNER IMPLEMENTER" requests above AFTER, then all of
# them: four counts from one look at the log.
all_calls() {
	curl -sS -f "$MOCK_URL/_mock/requests" | jq -r --argjson after "$1" '
	  def n(who; after): [.[] | select(.seq > after and (.body.system | tostring | test("You are the " + who)))] | length;
	  "\(n("planner"; $after)) \(n("implementer"; $after)) \(n("planner"; 0)) \(n("implementer"; 0))"'
}

implementer_called() {
	mock_logged "You are the implementer" && [ "$(calls implementer)" -ge 1 ]
}

last_seq() {
	curl -sS -f "$MOCK_URL/_mock/requests" | jq '[.[].seq] | max // 0'
}

# start_run: `forge run` in its own session (so the whole run can be killed
# like a crashed machine); its pid in $SUP.
start_run() {
	setsid forge run -q "$@" "add a mul operation" </dev/null >"$BATS_TEST_TMPDIR/run.out" \
		2>"$BATS_TEST_TMPDIR/run.err" 3>&- &
	SUP=$!
	echo "$SUP" >"$BATS_TEST_TMPDIR/sup.pid"
}

# until_true CMD...: poll (at most ~20 s) until CMD succeeds.
until_true() {
	local i
	for i in $(seq 400); do
		"$@" && return 0
		sleep 0.05
	done
	echo "timed out waiting for: $*" >&2
	return 1
}

trace_of_run() {
	db_q "select id from runs order by started_at desc limit 1" 2>/dev/null
}

# db_has SQL-CONDITION: an event of the newest run matches it.
db_has() {
	local t
	t=$(trace_of_run) && [ -n "$t" ] &&
		[ "$(db_q "select count(*) from events where trace_id = '$t' and ($1)" 2>/dev/null)" -gt 0 ]
}

# finished PHASE: the run has a checkpoint of PHASE's own state with status ok.
finished() {
	local phase="json_extract(state, '\$.phase')"
	[[ $FORGE_DB != postgres* ]] || phase="state::jsonb ->> 'phase'"
	[ "$(db_q "select count(*) from checkpoints where trace_id = '$T' and status = 'ok' and
		$phase = '$1'")" -gt 0 ]
}

event_ids() {
	db_q "select id from events where trace_id = '$T' order by id"
}

# After a kill: load the answers the unfinished phases need, resume, and check
# everything the brief promises.  Uses $T, $BASE; the kill was at request $KILL_SEQ.
resume_and_check() {
	local plan_done=0 impl_done=0 steps='[]'
	db_intact
	event_ids >"$BATS_TEST_TMPDIR/before"
	local n_before
	n_before=$(wc -l <"$BATS_TEST_TMPDIR/before")
	[ "$n_before" -ge "${SEEN_EVENTS:-1}" ]
	finished plan && plan_done=1
	finished implement && impl_done=1
	[ "$plan_done" = 1 ] || steps=$PLAN
	[ "$impl_done" = 1 ] || steps=$(jq -nc --argjson a "$steps" --argjson b "$IMPL" '$a + $b')
	script "$steps"
	KILL_SEQ=$(last_seq)

	run -0 --separate-stderr forge resume -q "$T" </dev/null
	run -0 forge status --json "$T"
	jq -e '.run.status == "completed" and .state.deployment.status == "healthy"' <<<"$output"
	# every event stored before the kill is still there, and the run went on
	event_ids >"$BATS_TEST_TMPDIR/after"
	run -0 comm -23 "$BATS_TEST_TMPDIR/before" "$BATS_TEST_TMPDIR/after"
	assert_output ""
	[ "$(wc -l <"$BATS_TEST_TMPDIR/after")" -gt "$n_before" ]
	run -0 forge events replay "$T"
	jq -e -s 'any(.[]; .type == "run.resumed") and any(.[]; .type == "run.completed")
	  and [.[] | select(.type == "pipeline.invalid_transition")] == []' <<<"$output"
	# one commit for the one implement attempt, and the change is right
	run -0 git -C "$REPO" log --format=%s "$BASE..forge/$T"
	assert_output "forge: add a mul operation (attempt 1)"
	git -C "$REPO" show "forge/$T:calc.c" | grep -q 'return a \* b'
	# no model call of a finished phase was made again; an unfinished one ran
	# whole ($PLANNER_CALLS, $IMPLEMENTER_CALLS: all of them, for the caller)
	local p_after i_after
	read -r p_after i_after PLANNER_CALLS IMPLEMENTER_CALLS < <(all_calls "$KILL_SEQ")
	[ "$p_after" -eq $((plan_done ? 0 : 3)) ]
	[ "$i_after" -eq $((impl_done ? 0 : 7)) ]
	[ "$PLANNER_CALLS" -ge 3 ]
	db_intact
}

@test "kill -9 the run (supervisor and phase) while implement waits for the model; resume completes it" {
	new_repo a
	script "$(jq -nc --argjson p "$PLAN" --argjson i "$IMPL" '$p + [$i[0] + {delay_ms: 30000}]')"
	start_run
	until_true implementer_called
	kill -9 -- "-$SUP"
	rc=0; wait "$SUP" || rc=$?
	[ "$rc" -eq 137 ]
	T=$(trace_of_run)
	run -0 db_q "select status, current_phase from runs where id = '$T'"
	assert_output "running|implement"
	# its process is gone: shown as interrupted
	run -0 forge status "$T"
	assert_line --regexp "^status +interrupted at implement"
	SEEN_EVENTS=$(db_q "select count(*) from events where trace_id = '$T'")
	finished plan
	! finished implement || false
	resume_and_check
	# plan's three calls, once; implement: the killed call and its whole rerun
	[ "$PLANNER_CALLS" -eq 3 ]
	[ "$IMPLEMENTER_CALLS" -eq 8 ]
}

@test "killed while it committed: git's stale locks of the run are removed by resume, which completes it" {
	new_repo lk
	script "$(jq -nc --argjson p "$PLAN" --argjson i "$IMPL" '$p + [$i[0] + {delay_ms: 30000}]')"
	start_run
	until_true implementer_called
	kill -9 -- "-$SUP"
	wait "$SUP" || true
	T=$(trace_of_run)
	# what a kill in the middle of the commit leaves (before: every resume
	# paid for implement again and failed at the commit, for ever)
	touch "$REPO/.git/refs/heads/forge/$T.lock" "$REPO/.git/worktrees/$T/index.lock"
	resume_and_check
	[ ! -e "$REPO/.git/refs/heads/forge/$T.lock" ]
	[ ! -e "$REPO/.git/worktrees/$T/index.lock" ]
	forge events replay "$T" | jq -s -e '[.[] | select(.type == "worktree.locks_removed") | .payload.count] == [2]'
}

# held_test_command: a test command (for .forge/config.json) that writes a
# report and a cache, untracked, then waits for $REPO/.git/go (the sandbox
# lets a command read the main repository's .git); held_config VALIDATE:
# .forge/config.json with it, implement.validate VALIDATE.
held_test_command() {
	printf '%s' "echo '<testsuite tests=\"1\"><testcase name=\"t\"/></testsuite>' >test-results.xml && mkdir -p .tcache && touch .tcache/c && while [ ! -e '$REPO/.git/go' ]; do sleep 0.05; done && make check"
}
held_config() {
	mkdir -p .forge
	jq -nc --arg c "$(held_test_command)" --argjson v "$1" '{tools: {test_command: $c}, implement: {validate: $v}}' \
		>.forge/config.json
}

# no_saved_refs: the run $T has no refs/forge/T/saved/N.
no_saved_refs() {
	run -0 git -C "$REPO" for-each-ref --format='%(refname)' "refs/forge/$T/saved/"
	assert_output ""
}

@test "kill -9 the run while forge-test's command runs: what the command left is removed on resume, not kept as the run's saved work" {
	new_repo tc
	held_config false
	script "$(jq -nc --argjson p "$PLAN" --argjson i "$IMPL" '$p + $i')"
	start_run
	until_true eval 'ls "$(runs_dir)"/*/test-results.xml >/dev/null 2>&1'
	kill -9 -- "-$SUP"
	wait "$SUP" || true
	T=$(trace_of_run)
	finished implement
	touch "$REPO/.git/go"
	run -0 --separate-stderr forge resume "$T" </dev/null
	# (before: "the run's worktree had changes its last checkpoint does not
	# have: kept on refs/forge/T/saved/1", a saved ref of the test's report)
	refute_output --partial "saved"
	[[ $stderr != *"kept on refs/forge"* ]]
	[ "$(forge status --json "$T" | jq -r .run.status)" = completed ]
	no_saved_refs
	run -0 forge events replay "$T"
	jq -e -s '[.[] | select(.type == "worktree.cleaned") | .payload.removed] ==
	  [[".tcache/c", "test-results.xml"]]' <<<"$output"
	# moved aside, not deleted (a file a person added there looks the same)
	kept=$(jq -r -s '.[] | select(.type == "worktree.cleaned") | .payload.kept_in' <<<"$output")
	[[ $kept == "$REPO/.git/worktrees/"*"/forge-leftovers/"* ]]
	[ -f "$kept/test-results.xml" ] && [ -f "$kept/.tcache/c" ]
	[[ $stderr == *"moved to $kept (not the run's work)"* ]]
	jq -e -s '[.[] | select(.type == "worktree.recovered" and .payload.saved_ref != null)] == []' <<<"$output"
	run -0 git -C "$REPO" ls-tree -r --name-only "forge/$T"
	refute_line test-results.xml
	refute_line --partial .tcache
}

@test "kill -9 the run while implement's validation runs: the model's edits are kept on a saved ref, what validation left is not" {
	new_repo vc
	held_config true
	script "$(jq -nc --argjson p "$PLAN" --argjson i "$IMPL" '$p + $i')"
	start_run
	until_true eval 'ls "$(runs_dir)"/*/test-results.xml >/dev/null 2>&1'
	kill -9 -- "-$SUP"
	wait "$SUP" || true
	T=$(trace_of_run)
	! finished implement || false
	touch "$REPO/.git/go"
	script "$IMPL"
	run -0 --separate-stderr forge resume "$T" </dev/null
	[ "$(forge status --json "$T" | jq -r .run.status)" = completed ]
	# the model's uncommitted edits: kept; the command's files: removed
	run -0 git -C "$REPO" for-each-ref --format='%(refname)' "refs/forge/$T/saved/"
	assert_output "refs/forge/$T/saved/1"
	run -0 git -C "$REPO" diff --name-only "$BASE" "refs/forge/$T/saved/1"
	assert_output "calc.c
tests/check.sh"
	run -0 forge events replay "$T"
	jq -e -s '[.[] | select(.type == "worktree.cleaned") | .payload.removed] ==
	  [[".tcache/c", "test-results.xml"]]' <<<"$output"
	run -0 git -C "$REPO" ls-tree -r --name-only "forge/$T"
	refute_line test-results.xml
	refute_line --partial .tcache
}

@test "kill -9 the run while forge-review's lint command runs: what it left is moved out on resume, not saved; forge status and gc say where" {
	new_repo lc
	mkdir -p .forge
	jq -nc --arg c "touch .eslintcache && while [ ! -e '$REPO/.git/go' ]; do sleep 0.05; done" \
		'{tools: {test_command: "make check", lint_command: $c}}' >.forge/config.json
	script "$(jq -nc --argjson p "$PLAN" --argjson i "$IMPL" '$p + $i')"
	start_run
	until_true eval '[ -n "$(run_worktree)" ] && [ -e "$(run_worktree)/.eslintcache" ]'
	kill -9 -- "-$SUP"
	wait "$SUP" || true
	T=$(trace_of_run)
	finished implement
	! finished review || false
	touch "$REPO/.git/go"
	run -0 --separate-stderr forge resume "$T" </dev/null
	# (before: "kept on refs/forge/T/saved/1", a saved ref of .eslintcache)
	[[ $stderr != *"kept on refs/forge"* ]]
	[ "$(forge status --json "$T" | jq -r .run.status)" = completed ]
	no_saved_refs
	run -0 forge events replay "$T"
	jq -e -s '[.[] | select(.type == "worktree.cleaned") | .payload.removed] == [[".eslintcache"]]' <<<"$output"
	# the resumed review's own run of the command: removed after it
	jq -e -s '[.[] | select(.type == "review.cleaned") | .payload.removed] == [[".eslintcache"]]' <<<"$output"
	kept=$(jq -r -s '.[] | select(.type == "worktree.cleaned") | .payload.kept_in' <<<"$output")
	[ -f "$kept/.eslintcache" ] && [ ! -e "$(run_worktree)/.eslintcache" ]
	run -0 git -C "$REPO" ls-tree -r --name-only "forge/$T"
	refute_line .eslintcache
	# where they are, while the worktree stays (a file of yours may be there)
	run -0 forge status "$T"
	assert_line "leftover ${kept%/*}: what stopped commands left in the worktree (removed with it)"
	forge status --json "$T" | jq -e --arg l "${kept%/*}" '.leftovers == $l'
	run -0 forge gc --dry-run
	assert_line "run $T: its worktree $(run_worktree) keeps what stopped commands left there in ${kept%/*} (removed with the worktree)"
}

@test "a run killed and resumed after its time limit: the time it lay dead is not running time" {
	[ "${FORGE_TEST_BACKEND:-sqlite}" = sqlite ] || skip "the test moves SQLite's event log back in time"
	new_repo dead
	script "$(jq -nc --argjson p "$PLAN" --argjson i "$IMPL" '$p + [$i[0] + {delay_ms: 30000}]')"
	start_run
	until_true implementer_called
	kill -9 -- "-$SUP"
	wait "$SUP" || true
	T=$(trace_of_run)
	# as if it had been killed three hours ago (safety.time_s.total: 2 h)
	db_q "drop trigger events_no_update;
		update event_log set ts = strftime('%Y-%m-%dT%H:%M:%fZ', ts, '-3 hours') where trace_id = '$T';
		update runs set started_at = strftime('%Y-%m-%dT%H:%M:%fZ', started_at, '-3 hours') where id = '$T'"
	# (before: breaker time tripped at every resume, exit 3)
	resume_and_check
	forge events replay "$T" | jq -s -e '[.[] | select(.type == "run.resumed") | .payload.dead_ms > 10000000] == [true]'
}

@test "kill -9 the run at several points (after N events in the database); resume completes it every time" {
	local point
	for point in "type = 'run.started'" \
		"source = 'forge-plan' and type = 'phase.completed'" \
		"source = 'forge-implement' and type = 'tool.executed'" \
		"source = 'forge-implement' and type = 'phase.completed'" \
		"source = 'forge-review' and type = 'phase.started'"; do
		new_repo "p$RANDOM"
		mock_reset
		script "$(jq -nc --argjson p "$PLAN" --argjson i "$IMPL" '$p + $i')"
		rm -f "$FORGE_DB" "$FORGE_DB-wal" "$FORGE_DB-shm"
		start_run
		until_true db_has "$point"
		kill -9 -- "-$SUP" 2>/dev/null || true
		wait "$SUP" || true
		T=$(trace_of_run)
		SEEN_EVENTS=$(db_q "select count(*) from events where trace_id = '$T'")
		status=$(db_q "select status from runs where id = '$T'")
		if [ "$status" = completed ]; then
			continue        # the kill came too late to matter: nothing to resume
		fi
		echo "# killed at [$point]: plan $(finished plan && echo done || echo unfinished), implement $(finished implement && echo done || echo unfinished)" >&3
		resume_and_check
	done
}

@test "kill -9 the supervisor alone: its orphaned phase dies on the broken pipe; resume completes the run" {
	new_repo b
	# implement's first answer is held until the supervisor is dead (wait_file)
	script "$(jq -nc --argjson p "$PLAN" --argjson i "$IMPL" --arg f "$BATS_TEST_TMPDIR/answer" \
		'$p + [$i[0] + {wait_file: $f}]')"
	start_run
	until_true implementer_called
	child=$(pgrep -P "$SUP" -f forge-implement)
	[ -n "$child" ]
	kill -9 "$SUP"
	rc=0; wait "$SUP" || rc=$?
	[ "$rc" -eq 137 ]
	# the phase finishes its model call, then cannot write its event: it ends
	touch "$BATS_TEST_TMPDIR/answer"
	until_true eval '! kill -0 '"$child"' 2>/dev/null'
	T=$(trace_of_run)
	SEEN_EVENTS=$(db_q "select count(*) from events where trace_id = '$T'")
	resume_and_check
	[ "$PLANNER_CALLS" -eq 3 ]
}

@test "kill -9 a phase: the run pauses (exit 5) at its last checkpoint; resume runs the phase again" {
	new_repo c
	script "$(jq -nc --argjson p "$PLAN" --argjson i "$IMPL" '$p + [$i[0] + {delay_ms: 30000}]')"
	# (a TMPDIR of the test's own: what the killed phase leaves there is seen)
	mkdir "$BATS_TEST_TMPDIR/tmp"
	TMPDIR="$BATS_TEST_TMPDIR/tmp" start_run
	until_true implementer_called
	child=$(pgrep -P "$SUP" -f forge-implement)
	[ -n "$child" ]
	kill -9 "$child"
	rc=0; wait "$SUP" || rc=$?
	[ "$rc" -eq 5 ]
	grep -q "forge-implement exited with status 137 without a state" "$BATS_TEST_TMPDIR/run.err"
	# its temporary directory stays (nothing runs in a killed process); once
	# it is older than a minute (its process might have made it just now),
	# forge gc removes it (before: nothing ever did)
	left=("$BATS_TEST_TMPDIR"/tmp/forge-implement-*)
	[ "${#left[@]}" -eq 1 ]
	[ -d "${left[0]}" ]
	TMPDIR="$BATS_TEST_TMPDIR/tmp" run -0 --separate-stderr forge gc
	[ -d "${left[0]}" ]
	touch -d '2 minutes ago' "${left[0]}"
	TMPDIR="$BATS_TEST_TMPDIR/tmp" run -0 --separate-stderr forge gc --dry-run
	assert_line "temporary directory ${left[0]}: would remove (its process was killed)"
	[ -d "${left[0]}" ]
	TMPDIR="$BATS_TEST_TMPDIR/tmp" run -0 --separate-stderr forge gc
	assert_line "temporary directory ${left[0]}: removed (its process was killed)"
	[ ! -e "${left[0]}" ]
	T=$(trace_of_run)
	run -0 forge status --json "$T"
	jq -e '.run.status == "paused" and .state.phase == "plan" and (.run.error | test("killed"))' <<<"$output"
	run -0 forge events replay "$T"
	jq -e -s '[.[] | select(.type == "pipeline.state_changed") | .payload.to] | last == "paused"' <<<"$output"
	SEEN_EVENTS=$(db_q "select count(*) from events where trace_id = '$T'")
	resume_and_check
	[ "$PLANNER_CALLS" -eq 3 ]
	[ "$IMPLEMENTER_CALLS" -eq 8 ]
}

@test "kill -9 a phase while a write-mode helper runs: forge gc removes the helper's temp dir and forgets its git worktree" {
	new_repo wt
	script "$PLAN"
	forge-plan -q --task "add a mul operation" </dev/null >"$BATS_TEST_TMPDIR/plan.out"
	script "$(jq -nc '[{tool_calls: [{name: "delegate", input: {task: "Edit.", mode: "write"}}]},
		{delay_ms: 60000, tool_calls: [{name: "finish", input: {summary: "x"}}]}]')"
	mkdir "$BATS_TEST_TMPDIR/tmp"
	TMPDIR="$BATS_TEST_TMPDIR/tmp" setsid forge-implement -q <"$BATS_TEST_TMPDIR/plan.out" \
		>"$BATS_TEST_TMPDIR/impl.out" 2>"$BATS_TEST_TMPDIR/impl.err" 3>&- &
	SUP=$!
	echo "$SUP" >"$BATS_TEST_TMPDIR/sup.pid"
	until_true mock_logged "You are a helper agent of Forge"
	kill -9 "$SUP"
	wait "$SUP" || true
	left=("$BATS_TEST_TMPDIR"/tmp/forge-sub-*)
	[ "${#left[@]}" -eq 1 ]
	wt="${left[0]}/worktree"
	run -0 git worktree list --porcelain
	assert_line "worktree $wt"
	# a person's own worktree whose directory is gone is theirs to prune
	git worktree add -q --detach "$BATS_TEST_TMPDIR/mine" HEAD
	rm -rf "$BATS_TEST_TMPDIR/mine"
	touch -d '2 minutes ago' "${left[0]}"
	# (forge gc in another repository: the sweep is TMPDIR's, the worktree is
	# forgotten in the repository its .git file names)
	calc_repo "$BATS_TEST_TMPDIR/other"
	TMPDIR="$BATS_TEST_TMPDIR/tmp" run -0 --separate-stderr forge gc --repo "$BATS_TEST_TMPDIR/other" --dry-run
	assert_line "temporary directory ${left[0]}: would remove (its process was killed)"
	assert_line "sub-agent worktree $wt: would be unregistered from $REPO (its directory is gone)"
	run -0 git worktree list --porcelain
	assert_line "worktree $wt"
	# (before: the directory went, and git listed the worktree "prunable" for ever)
	TMPDIR="$BATS_TEST_TMPDIR/tmp" run -0 --separate-stderr forge gc --repo "$BATS_TEST_TMPDIR/other"
	assert_line "temporary directory ${left[0]}: removed (its process was killed)"
	assert_line "sub-agent worktree $wt: unregistered from $REPO (its directory is gone)"
	[ ! -e "${left[0]}" ]
	run -0 git worktree list --porcelain
	refute_line "worktree $wt"
	assert_line "worktree $BATS_TEST_TMPDIR/mine"
	TMPDIR="$BATS_TEST_TMPDIR/tmp" run -0 --separate-stderr forge gc
	refute_output --partial "sub-agent worktree"
}

@test "a helper's worktree whose temp dir is gone already (cleared, a second Ctrl-C): forge gc forgets it in the repository" {
	new_repo wg
	git worktree add -q --detach "$BATS_TEST_TMPDIR/elsewhere/forge-sub-Ab12Cd/worktree" HEAD
	git worktree add -q --detach "$BATS_TEST_TMPDIR/elsewhere/forge-sub-Xy34Zw/worktree" HEAD
	git worktree lock "$BATS_TEST_TMPDIR/elsewhere/forge-sub-Xy34Zw/worktree"
	rm -rf "$BATS_TEST_TMPDIR/elsewhere"
	run -0 --separate-stderr forge gc
	assert_line "sub-agent worktree $BATS_TEST_TMPDIR/elsewhere/forge-sub-Ab12Cd/worktree: unregistered from $REPO (its directory is gone)"
	run -0 git worktree list --porcelain
	refute_line "worktree $BATS_TEST_TMPDIR/elsewhere/forge-sub-Ab12Cd/worktree"
	# a locked one stays, as git worktree prune leaves it
	assert_line "worktree $BATS_TEST_TMPDIR/elsewhere/forge-sub-Xy34Zw/worktree"
}

# cost_agrees: the run's cost (state and runs row) is what its llm.called
# events cost. Compared to a nano-dollar, not after rounding to micro-dollars:
# cache prices make half micro-dollars, where two sums of the same doubles
# in another order round apart (CI saw 48368 against 48367).
cost_agrees() {
	local events state
	run -0 forge events replay "$T"
	events=$(jq -s '[.[] | select(.type == "llm.called") | .cost.usd] | add' <<<"$output")
	run -0 forge status --json "$T"
	state=$(jq '.state.cost.usd' <<<"$output")
	echo "events $events state $state"
	jq -ne --argjson e "$events" --argjson s "$state" '$e > 0 and ($s - $e | fabs) < 1e-9'
}

# A run whose process group is killed (kill -9) while implement's second
# model call is held, after paid calls; T its trace.
kill_run_in_implement() {
	new_repo d
	script "$(jq -nc --argjson p "$PLAN" --argjson i "$IMPL" '$p + [$i[0], $i[1] + {delay_ms: 30000}]')"
	start_run
	until_true db_has "source = 'forge-implement' and type = 'llm.called'"
	until_true eval '[ "$(calls implementer)" -ge 2 ]'
	kill -9 -- "-$SUP"
	rc=0; wait "$SUP" || rc=$?
	[ "$rc" -eq 137 ]
	T=$(trace_of_run)
}

@test "the whole run killed after paid model calls (kill -9 of the group): resume counts what they cost" {
	kill_run_in_implement
	SEEN_EVENTS=$(db_q "select count(*) from events where trace_id = '$T'")
	# (before: the killed attempt's calls, after the last checkpoint, were
	# never counted: the resumed run's cost left them out)
	resume_and_check
	cost_agrees
	run -0 forge events replay "$T"
	[ "$(jq -s '[.[] | select(.type == "run.cost_recovered")] | length' <<<"$output")" -eq 1 ]
}

# usd6 X: X dollars in millionths, rounded (as a whole number).
usd6() {
	jq -n --argjson x "$1" '$x * 1e6 | round'
}

@test "the whole run killed after paid model calls: status, history, show and metrics count them before any resume" {
	kill_run_in_implement
	# a paid call whose llm.called event was lost (a full disk): in the log only
	# (its cost puts no total at a half of the 4th decimal, which %.4f could round either way)
	db_q "insert into llm_calls (ts, trace_id, phase, provider, input_tokens, cost_usd)
		values ('2026-11-30T00:00:00.000Z', '$T', 'implement', 'anthropic', 1000, 0.50003)"
	logged=$(usd6 "$(db_q "select sum(cost_usd) from llm_calls where trace_id = '$T'")")
	tokens=$(db_q "select sum(input_tokens + output_tokens + cache_read_tokens + cache_write_tokens)
		from llm_calls where trace_id = '$T'")
	recorded=$(usd6 "$(db_q "select total_cost_usd from runs where id = '$T'")")
	echo "llm_calls $logged, the run row $recorded"
	[ "$recorded" -lt "$logged" ]
	# (before: every view said what the run row did, the plan's $0.0191)
	run -0 forge status --json "$T"
	[ "$(usd6 "$(jq .run.total_cost_usd <<<"$output")")" -eq "$logged" ]
	[ "$(jq .run.total_tokens <<<"$output")" -eq "$tokens" ]
	shown=$(printf '%.4f' "$(jq .run.total_cost_usd <<<"$output")")
	run -0 forge status "$T"
	assert_line "cost     \$$shown ($tokens tokens)"
	run -0 forge history --json
	[ "$(usd6 "$(jq -s --arg t "$T" '.[] | select(.trace_id == $t) | .total_cost_usd' <<<"$output")")" -eq "$logged" ]
	run -0 forge metrics --json
	[ "$(usd6 "$(jq .cost_per_run_usd.value <<<"$output")")" -eq "$logged" ]
	# forge show's total is no less than its parts (before: $0.0191 after
	# "plan $0.0191 · implement $0.0432")
	run -0 forge show --json "$T"
	[ "$(usd6 "$(jq .cost.usd <<<"$output")")" -eq "$logged" ]
	[ "$(usd6 "$(jq '[.phase_cost[].usd] | add' <<<"$output")")" -le "$logged" ]
	run -0 forge show "$T"
	assert_line --partial "total \$$shown ($tokens tokens)"
	# the resume counts the logged call too (before: only the calls whose
	# events it found), and the views say what the state does
	SEEN_EVENTS=$(db_q "select count(*) from events where trace_id = '$T'")
	resume_and_check
	run -0 forge status --json "$T"
	[ "$(usd6 "$(jq .state.cost.usd <<<"$output")")" -eq "$(usd6 "$(jq .run.total_cost_usd <<<"$output")")" ]
	[ "$(usd6 "$(jq .run.total_cost_usd <<<"$output")")" -eq \
		"$(usd6 "$(db_q "select sum(cost_usd) from llm_calls where trace_id = '$T'")")" ]
	run -0 forge events replay "$T"
	[ "$(jq -s '[.[] | select(.type == "run.cost_recovered")] | length' <<<"$output")" -eq 1 ]
	# the logged call is implement's: the phases add up to the total in show
	# (and report, the same view; before: implement left it out)
	run -0 forge show --json "$T"
	total=$(usd6 "$(jq .cost.usd <<<"$output")")
	parts=$(usd6 "$(jq '[.phase_cost[].usd] | add' <<<"$output")")
	echo "total $total, phases $parts"
	[ $((total - parts)) -le 1 ] && [ $((parts - total)) -le 1 ]
	[ "$(usd6 "$(jq '.phase_cost[] | select(.phase == "implement") | .usd' <<<"$output")")" -gt 500030 ]
}

# killed_over_budget RUN-BUDGET [RESUME-ARGS...]: the whole run killed
# after plan ($0.0191) and five implement calls ($0.0360), the sixth hanging;
# then resumed with RESUME-ARGS: what is left is 0.08 - 0.0551, and the
# resumed implement stops there, a call past it at most (before: it was
# given what the plan checkpoint had left, made all its calls, $0.1055 in all).
killed_over_budget() {
	new_repo d
	script "$(jq -nc --argjson p "$PLAN" --argjson i "$IMPL" '$p + $i[0:5] + [$i[5] + {delay_ms: 30000}]')"
	start_run --budget "$1"
	shift
	until_true eval '[ "$(db_q "select count(*) from events where source = '\''forge-implement'\'' and type = '\''llm.called'\''")" -ge 5 ]'
	kill -9 -- "-$SUP"
	rc=0; wait "$SUP" || rc=$?
	[ "$rc" -eq 137 ]
	T=$(trace_of_run)
	script "$IMPL"
	run -3 --separate-stderr forge resume -q "$@" "$T" </dev/null
	run -0 forge status --json "$T"
	# (status rounds money to nano-dollars: compared within that)
	jq -e '.state.budget.usd == 0.08 and
		(.state.budget.remaining_usd - (.state.budget.usd - .state.cost.usd) | fabs) < 1e-8' <<<"$output"
	spent=$(db_q "select round(sum(cost_usd) * 10000) from events where trace_id = '$T' and type = 'llm.called'")
	echo "spent ${spent} / 10000 USD"
	[ "${spent%.*}" -le 850 ]
}

@test "the whole run killed in implement: the resumed phase gets the budget less the killed attempt's spend" {
	killed_over_budget 0.08
}

@test "the whole run killed in implement: forge resume --budget counts the killed attempt's spend too" {
	killed_over_budget 1 --budget 0.08
}

@test "SIGINT to the phase alone: it stops itself, the run pauses as interrupted (exit 130), not crashed" {
	new_repo d
	script "$(jq -nc --argjson p "$PLAN" --argjson i "$IMPL" '$p + [$i[0], $i[1] + {delay_ms: 30000}]')"
	start_run
	until_true eval '[ "$(calls implementer)" -ge 2 ]'
	child=$(pgrep -P "$SUP" -f forge-implement)
	[ -n "$child" ]
	kill -INT "$child"
	rc=0; wait "$SUP" || rc=$?
	# (before: exit 5, "crashed", "killed by a signal")
	[ "$rc" -eq 130 ]
	grep -q "forge run: node 'implement' was interrupted; resume runs it again" "$BATS_TEST_TMPDIR/run.err"
	T=$(trace_of_run)
	[ "$(forge status --json "$T" | jq -r .run.status)" = paused ]
	# the node it stopped in is not shown running (before: "implement …")
	run -0 forge status "$T"
	assert_line --regexp "^nodes .*implement ⏸ stopped"
	cost_agrees
}

# live_has TEXT: the store's live text of a streaming call holds TEXT (so
# the stream's message_start, sent before it, has reached the phase).
live_has() {
	local n
	n=$(db_q "select count(*) from live_text where text like '%$1%'" 2>/dev/null)
	[ "${n:-0}" -gt 0 ]
}

# ctrl_c_mid_answer: implement's second answer sends message_start (30000
# input tokens) and some text, then is held; Ctrl-C (SIGINT to the group)
# once the phase has the text.  Sets $T.
ctrl_c_mid_answer() {
	script "$(jq -nc --argjson p "$PLAN" --argjson i "$IMPL" --arg go "$BATS_TEST_TMPDIR/go" \
		'$p + [$i[0], $i[1] + {text: "Adding mul to calc.c next.", chunk: 1000,
		  usage: {input_tokens: 30000, output_tokens: 90}, pause_after: 4, pause_file: $go}]')"
	start_run
	ctrl_c_once_shown "Adding mul to calc.c next."
}

# ctrl_c_once_shown TEXT: once the run's live text shows TEXT, Ctrl-C (SIGINT
# to the group): the run pauses, exit 130; the held answer is let go.  Sets $T.
ctrl_c_once_shown() {
	until_true live_has "$1"
	kill -INT -- "-$SUP"
	rc=0; wait "$SUP" || rc=$?
	touch "$BATS_TEST_TMPDIR/go"
	[ "$rc" -eq 130 ]
	T=$(trace_of_run)
	[ "$(forge status --json "$T" | jq -r .run.status)" = paused ]
}

@test "Ctrl-C while an answer streams: the call is recorded with what arrived, priced, and counted in the run's cost" {
	new_repo d
	ctrl_c_mid_answer
	# (before: no llm_calls row, no llm.called: the input it was billed for
	# dropped out of the run's cost and its budget)
	run -0 db_q "select input_tokens, error from llm_calls where trace_id = '$T' and phase = 'implement'
		and call = 2 and output_tokens > 0 and cost_usd > 0.08"
	assert_output --regexp '^30000\|.*interrupted$'
	run -0 forge events replay "$T"
	run -0 jq -sc '[.[] | select(.type == "llm.called" and .source == "forge-implement")] | last
		| [.payload.input_tokens, .payload.output_tokens > 0, .payload.error, .cost.usd > 0.08]' <<<"$output"
	assert_output '[30000,true,"interrupted",true]'
	cost_agrees
	# the run's end has the shape of every run.paused and run.completed:
	# status, reason, cost (before: the reason alone)
	run -0 jq -sc '[.[] | select(.type == "run.paused")] | last | .payload
		| [.status, .reason, (.cost.usd | type), (.cost.tokens | type)]' <<<"$(forge events replay "$T")"
	assert_output '["paused","interrupted","number","number"]'
	# and after a resume too (the budget breakers read it)
	SEEN_EVENTS=$(db_q "select count(*) from events where trace_id = '$T'")
	resume_and_check
	cost_agrees
}

@test "Ctrl-C to forge-implement alone while an answer streams: it writes the call's llm.called, priced, and exits 130" {
	new_repo d
	script "$PLAN"
	forge-plan -q --task "add a mul operation" </dev/null >"$BATS_TEST_TMPDIR/plan.out"
	script "$(jq -nc --argjson i "$IMPL" --arg go "$BATS_TEST_TMPDIR/go" \
		'[$i[0], $i[1] + {text: "Adding mul to calc.c next.", chunk: 1000,
		  usage: {input_tokens: 30000, output_tokens: 90}, pause_after: 4, pause_file: $go}]')"
	setsid forge-implement -q <"$BATS_TEST_TMPDIR/plan.out" >"$BATS_TEST_TMPDIR/impl.out" \
		2>"$BATS_TEST_TMPDIR/impl.err" 3>&- &
	SUP=$!
	echo "$SUP" >"$BATS_TEST_TMPDIR/sup.pid"
	until_true live_has "Adding mul to calc.c next."
	kill -INT -- "-$SUP"
	rc=0; wait "$SUP" || rc=$?
	touch "$BATS_TEST_TMPDIR/go"
	[ "$rc" -eq 130 ]
	# (run by hand: no run, no checkpoint; what it made is named, hunt69 #3)
	grep -q "forge-implement: interrupted (no state written; phases run by hand are no run" "$BATS_TEST_TMPDIR/impl.err"
	# no state: the call is the last record
	run -0 jq -sc '[.[] | select(.kind == "state")] | length' "$BATS_TEST_TMPDIR/impl.out"
	assert_output 0
	run -0 jq -sc 'last | [.type, .payload.input_tokens, .payload.error, .payload.usage_estimated, .cost.usd > 0.08]' \
		"$BATS_TEST_TMPDIR/impl.out"
	assert_output '["llm.called",30000,"interrupted",true,true]'
	run -0 db_q "select count(*) from llm_calls where phase = 'implement' and error like '%interrupted' and cost_usd > 0.08"
	assert_output 1
}

@test "Ctrl-C to a hand-made pipeline: each filter says no state was written and no run holds it; implement names its worktree and branch and the git command that removes them (hunt69 #3)" {
	new_repo hp
	# plan answers; implement's first call is held until the signal
	script "$(jq -nc --argjson p "$PLAN" --argjson i "$IMPL" '$p + [$i[0] + {delay_ms: 60000}]')"
	setsid bash -c 'forge-plan -q --task "add a mul operation" </dev/null | forge-implement -q | forge-review -q \
		>"$0/pipe.out"; echo "${PIPESTATUS[*]}" >"$0/pipe.rc"' "$BATS_TEST_TMPDIR" \
		2>"$BATS_TEST_TMPDIR/pipe.err" 3>&- &
	SUP=$!
	echo "$SUP" >"$BATS_TEST_TMPDIR/sup.pid"
	until_true implementer_called
	kill -INT -- "-$SUP"
	wait "$SUP" || true
	[ "$(cat "$BATS_TEST_TMPDIR/pipe.rc")" = "0 130 130" ]
	T=$(git -C "$REPO" for-each-ref --format='%(refname:lstrip=3)' refs/heads/forge/)
	[ -n "$T" ]
	wt="$(run_worktree "$T")"
	[ -d "$wt" ]
	# (before: "interrupted; the last checkpoint stands" from both, of a run that is not)
	run -0 cat "$BATS_TEST_TMPDIR/pipe.err"
	assert_line "forge-review: interrupted (no state written)"
	assert_line "forge-implement: interrupted (no state written; phases run by hand are no run: no checkpoint, nothing for forge resume). Left: the worktree $wt and the branch forge/$T; remove them with \`git worktree remove --force '$wt' && git branch -D forge/$T && git update-ref -d refs/forge/$T/base\`"
	refute_output --partial "checkpoint stands"
	# the command it names removes them
	cmd=$(sed -n 's/.*remove them with `\(.*\)`$/\1/p' "$BATS_TEST_TMPDIR/pipe.err")
	(cd "$REPO" && eval "$cmd")
	[ ! -e "$wt" ]
	[ -z "$(git -C "$REPO" for-each-ref "refs/forge/$T" "refs/heads/forge/$T")" ]
}

@test "Ctrl-C to forge-review run by hand on a run's state: the run stays resumable, so no command that removes its worktree is offered (review of hunt69 #3)" {
	new_repo rh
	mkdir -p .forge
	# (the AI review runs whatever the risk)
	echo '{"llm": {"max_retries": 0}, "review": {"ai_min_risk": "low"}}' >.forge/config.json
	# a run that fails in review: plan and implement done, worktree and branch made
	script "$(jq -nc --argjson p "$PLAN" --argjson i "$IMPL" '$p + $i + [{fault: "overloaded", times: "always"}]')"
	run -5 --separate-stderr forge run -q --auto-approve "add a mul operation" </dev/null
	T=$(trace_of_run)
	forge status --json "$T" | jq -c '.state + {kind: "state"}' >"$BATS_TEST_TMPDIR/state.json"
	jq -e '.task.worktree and (.task.branch | startswith("forge/"))' "$BATS_TEST_TMPDIR/state.json"
	# the person runs its review by hand; the model's answer is held
	AFTER=$(last_seq)
	script '[{"text": "looking", "delay_ms": 60000}]'
	setsid forge-review -q <"$BATS_TEST_TMPDIR/state.json" >"$BATS_TEST_TMPDIR/rv.out" \
		2>"$BATS_TEST_TMPDIR/rv.err" 3>&- &
	SUP=$!
	echo "$SUP" >"$BATS_TEST_TMPDIR/sup.pid"
	until_true mock_logged "AI layer of Forge's code review" "$AFTER"
	kill -INT -- "-$SUP"
	rc=0; wait "$SUP" || rc=$?
	[ "$rc" -eq 130 ]
	# (before: "no checkpoint, nothing for forge resume ... remove them with
	# `git worktree remove --force ...`": a resumable run's work, removed)
	run -0 cat "$BATS_TEST_TMPDIR/rv.err"
	assert_output "forge-review: interrupted; the last checkpoint stands"
	[ -d "$(run_worktree "$T")" ]
	[ "$(forge status --json "$T" | jq -r .run.status)" != completed ]
}

@test "Ctrl-C to a phase forge run runs: it still says the last checkpoint stands (a run, resumable)" {
	new_repo sv
	script "$(jq -nc --argjson p "$PLAN" --argjson i "$IMPL" '$p + [$i[0] + {delay_ms: 60000}]')"
	start_run_shown
	until_true implementer_called
	kill -INT -- "-$SUP"
	rc=0; wait "$SUP" || rc=$?
	[ "$rc" -eq 130 ]
	grep -q "forge-implement: interrupted; the last checkpoint stands" "$BATS_TEST_TMPDIR/run.err"
}

@test "a call cut off before its answer began (Ctrl-C, the phase's time limit): its llm.called says stop_reason error, not end_turn" {
	new_repo sr
	script "$PLAN"
	forge-plan -q --task "add a mul operation" </dev/null >"$BATS_TEST_TMPDIR/plan.out"
	script "$(jq -nc --argjson i "$IMPL" '[$i[0] + {delay_ms: 60000}]')"
	setsid forge-implement -q <"$BATS_TEST_TMPDIR/plan.out" >"$BATS_TEST_TMPDIR/impl.out" \
		2>"$BATS_TEST_TMPDIR/impl.err" 3>&- &
	SUP=$!
	echo "$SUP" >"$BATS_TEST_TMPDIR/sup.pid"
	until_true implementer_called
	kill -INT -- "-$SUP"
	rc=0; wait "$SUP" || rc=$?
	[ "$rc" -eq 130 ]
	# (before: "stop_reason":"end_turn", as if an answer had ended)
	run -0 jq -sc 'last | [.type, .payload.error, .payload.stop_reason]' "$BATS_TEST_TMPDIR/impl.out"
	assert_output '["llm.called","interrupted","error"]'
	# the time limit (safety.time_s) cuts it off the same way
	mock_reset
	script "$(jq -nc --argjson i "$IMPL" '[$i[0] + {delay_ms: 60000}]')"
	echo '{"safety":{"time_s":{"implement":2}},"memory":{"reflect":false}}' >"$BATS_TEST_TMPDIR/time.json"
	run -3 --separate-stderr forge-implement -q --config "$BATS_TEST_TMPDIR/time.json" <"$BATS_TEST_TMPDIR/plan.out"
	run -0 jq -sc '[.[] | select(.type == "llm.called" and .source == "forge-implement") | [.payload.error, .payload.stop_reason]]' <<<"$output"
	assert_output '[["timeout","error"]]'
}

@test "Ctrl-C while a sub-agent's answer streams: its call is recorded with what arrived, priced, and counted in the run's cost" {
	new_repo d
	# implement's agent delegates; the helper's first answer sends
	# message_start (30000 input tokens) and its text, then is held
	script "$(jq -nc --argjson p "$PLAN" --arg go "$BATS_TEST_TMPDIR/go" '$p + [
		{tool_calls: [{name: "delegate", input: {task: "Read calc.c and say which operations it has.",
		   tools: ["read_file"]}}]},
		{text: "Reading calc.c for its operations.", chunk: 1000, usage: {input_tokens: 30000, output_tokens: 90},
		 pause_after: 4, pause_file: $go, tool_calls: [{name: "read_file", input: {path: "calc.c"}}]}]')"
	start_run
	ctrl_c_once_shown "Reading calc.c for its operations."
	# (before: the phase left at once and the helper with it: no llm_calls
	# row, no llm.called, its input dropped out of the run's cost)
	run -0 db_q "select input_tokens, error from llm_calls where trace_id = '$T' and phase = 'implement-sub'
		and output_tokens > 0 and cost_usd > 0.08"
	assert_output --regexp '^30000\|.*interrupted$'
	run -0 forge events replay "$T"
	run -0 jq -sc '[.[] | select(.type == "llm.called" and .source == "forge-agent")]
		| [length, .[0].payload.input_tokens, .[0].payload.error, .[0].cost.usd > 0.08]' <<<"$output"
	assert_output '[1,30000,"interrupted",true]'
	cost_agrees
}

@test "Ctrl-C to forge llm while its answer streams: the call is recorded with what arrived, priced, and it exits 130" {
	script "$(jq -nc --arg go "$BATS_TEST_TMPDIR/go" '[{text: "Hello from the model.", chunk: 1000,
		usage: {input_tokens: 30000, output_tokens: 90}, pause_after: 4, pause_file: $go}]')"
	setsid forge llm --stream "say hello" </dev/null >"$BATS_TEST_TMPDIR/llm.out" 2>"$BATS_TEST_TMPDIR/llm.err" 3>&- &
	SUP=$!
	echo "$SUP" >"$BATS_TEST_TMPDIR/sup.pid"
	until_true grep -q "Hello from the model." "$BATS_TEST_TMPDIR/llm.out"
	kill -INT -- "-$SUP"
	rc=0; wait "$SUP" || rc=$?
	touch "$BATS_TEST_TMPDIR/go"
	[ "$rc" -eq 130 ]
	grep -q "forge-llm: interrupted" "$BATS_TEST_TMPDIR/llm.err"
	# (before: it exited at once, and the call was recorded nowhere)
	run -0 db_q "select input_tokens, output_tokens > 0, error from llm_calls where cost_usd > 0.08"
	assert_output --regexp '^30000\|1\|.*interrupted$'
}

# reflection_cut_short HOW: the run's Loop 3 call (the "budget" trigger,
# fired before implement, its answer held) cut off by HOW: "ctrl-c" (SIGINT
# to the group) or "cancel" (forge cancel, a SIGTERM to the supervisor).
reflection_cut_short() {
	new_repo d
	script "$(jq -nc --argjson p "$PLAN" --arg go "$BATS_TEST_TMPDIR/go" '$p + [{forced_tool: "record_run_learnings",
		wait_file: $go, tool_calls: [{name: "record_run_learnings", input: {learnings: []}}]}]')"
	start_run --budget 0.03
	until_true mock_logged record_run_learnings
	T=$(trace_of_run)
	if [ "$1" = cancel ]; then
		run -0 forge cancel "$T"
	else
		kill -INT -- "-$SUP"
	fi
	# (before: the Ctrl-C waited for the whole answer, and implement started after it)
	until_true eval '! kill -0 "$SUP" 2>/dev/null'
	rc=0; wait "$SUP" || rc=$?
	touch "$BATS_TEST_TMPDIR/go"
	[ "$rc" -eq 130 ]
	[ "$(calls implementer)" -eq 0 ]
	# the call is recorded as interrupted and billed: its request was sent
	# whole, and the provider answers and bills it all the same (before:
	# no answer came, so no usage: $0, and the run's cost understated it)
	run -0 db_q "select count(*) from llm_calls where trace_id = '$T' and phase = 'reflect-fast'
		and error like '%interrupted' and input_tokens > 100 and cost_usd > 0"
	assert_output 1
	USD=$(db_q "select cost_usd * 1e6 from llm_calls where trace_id = '$T' and phase = 'reflect-fast'")
	run -0 forge events replay "$T"
	EVENTS=$output
	# a run stopped is no failed reflection: its firing is skipped, saying
	# why and what its call cost (before: run.reflection_failed "interrupted", cost 0)
	jq -e -s '[.[] | select(.type == "run.reflection_failed")] | length == 0' <<<"$EVENTS"
	run -0 jq -c -s --argjson usd "$USD" '[.[] | select(.type == "run.reflection_skipped") | .payload
		| [.trigger, .reason, .cut_short, .usage_estimated, (.cost * 1e6 | round) == ($usd | round)]]' <<<"$EVENTS"
	RUN_STATUS=$(forge status --json "$T" | jq -r .run.status)
	# its cost is the run's too
	forge status --json "$T" | jq -e --argjson usd "$USD" '(.state.reflection.cost_usd * 1e6 | round) == ($usd | round)
		and .state.cost.usd * 1e6 >= $usd'
}

@test "Ctrl-C while the supervisor's reflection waits for its answer: the call ends, billed, the firing skipped (not failed), and the run pauses (exit 130) at once" {
	reflection_cut_short ctrl-c
	assert_output '[[">50% of budget","the run was interrupted (Ctrl-C or SIGTERM): its call was cut short",true,true,true]]'
	[ "$RUN_STATUS" = paused ]
	# not counted as fired: forge resume fires it again (before: the lesson
	# was lost with the Ctrl-C)
	forge status --json "$T" | jq -e '.state.reflection.fired // [] | index(">50% of budget") == null'
}

@test "forge cancel while the supervisor's reflection waits for its answer: the call ends, billed, and the firing is skipped as cancelled, not failed" {
	reflection_cut_short cancel
	assert_output '[[">50% of budget","the run was cancelled (forge cancel): its call was cut short",true,true,true]]'
	[ "$RUN_STATUS" = cancelled ]
}

@test "forge cancel mid-phase: the end-of-run reflection makes no call and is skipped as cancelled, not failed as interrupted" {
	new_repo d
	# implement's first answer: 10 tool calls, 2 failed (Loop 3's tool
	# error trigger holds at the end); its second is held until the cancel
	# (the agent's own reflections on its tool errors learn nothing)
	script "$(jq -nc --argjson p "$PLAN" --arg go "$BATS_TEST_TMPDIR/go" '[{forced_tool: "record_learnings",
		times: "always", tool_calls: [{name: "record_learnings", input: {learnings: []}}]}] + $p + [
		{tool_calls: ([range(8) | {name: "read_file", input: {path: "calc.c"}}]
			+ [range(2) | {name: "read_file", input: {path: "no-such-file.c"}}])},
		{wait_file: $go, text: "done"}]')"
	start_run
	until_true eval '[ "$(calls implementer)" -ge 2 ]'
	T=$(trace_of_run)
	run -0 forge cancel "$T"
	until_true eval '! kill -0 "$SUP" 2>/dev/null'
	rc=0; wait "$SUP" || rc=$?
	touch "$BATS_TEST_TMPDIR/go"
	[ "$rc" -eq 130 ]
	[ "$(forge status --json "$T" | jq -r .run.status)" = cancelled ]
	run -0 forge events replay "$T"
	EVENTS=$output
	# (before: the call was refused at once as interrupted: run.reflection_failed)
	jq -e -s '[.[] | select(.type == "run.reflection_failed")] | length == 0' <<<"$EVENTS"
	run -0 jq -c -s '[.[] | select(.type == "run.reflection_skipped") | .payload | [.trigger, .phase, .reason, .cut_short]]' <<<"$EVENTS"
	assert_output '[[">10% tool error rate","end","the run was cancelled (forge cancel)",null]]'
	run -0 db_q "select count(*) from llm_calls where trace_id = '$T' and phase = 'reflect-fast'"
	assert_output 0
}

@test "Ctrl-C while a model call waits out a provider's retry-after (429): exit 130 at once, not after the wait" {
	new_repo d
	# (55 s: under llm.retry_max_delay_s, so the client waits it out)
	script '[{"fault":"rate_limit","retry_after":"55"},{"text":"x"}]'
	setsid forge-plan -q --task "add a mul operation" </dev/null >"$BATS_TEST_TMPDIR/plan.out" \
		2>"$BATS_TEST_TMPDIR/plan.err" 3>&- &
	SUP=$!
	echo "$SUP" >"$BATS_TEST_TMPDIR/sup.pid"
	until_true eval '[ "$(calls planner)" -ge 1 ]'
	kill -INT -- "-$SUP"
	# (before: the Ctrl-C was acted on when the 55 s were over)
	until_true eval '! kill -0 "$SUP" 2>/dev/null'
	rc=0; wait "$SUP" || rc=$?
	[ "$rc" -eq 130 ]
	# the one request that was answered 429; none after the Ctrl-C
	[ "$(calls planner)" -eq 1 ]
}

@test "a phase killed after paid model calls: what they cost stays in the run's cost, before and after resume" {
	new_repo d
	# implement's second answer is held: the first call is made and paid for
	script "$(jq -nc --argjson p "$PLAN" --argjson i "$IMPL" '$p + [$i[0], $i[1] + {delay_ms: 30000}]')"
	start_run
	until_true db_has "source = 'forge-implement' and type = 'llm.called'"
	until_true eval '[ "$(calls implementer)" -ge 2 ]'
	child=$(pgrep -P "$SUP" -f forge-implement)
	[ -n "$child" ]
	kill -9 "$child"
	rc=0; wait "$SUP" || rc=$?
	[ "$rc" -eq 5 ]
	T=$(trace_of_run)
	# (before: the killed attempt's calls dropped out of the run's cost, so a
	# run interrupted again and again could spend past safety.cost.per_run)
	cost_agrees
	SEEN_EVENTS=$(db_q "select count(*) from events where trace_id = '$T'")
	resume_and_check
	cost_agrees
}


# start_run_shown: start_run without -q: the run's summary is on run.out.
start_run_shown() {
	setsid forge run "$@" "add a mul operation" </dev/null >"$BATS_TEST_TMPDIR/run.out" \
		2>"$BATS_TEST_TMPDIR/run.err" 3>&- &
	SUP=$!
	echo "$SUP" >"$BATS_TEST_TMPDIR/sup.pid"
}

# summary_says STATUS HEADER: the run ($T) is recorded STATUS, and the
# summary forge run printed starts "Run $T HEADER", as forge show's status does.
summary_says() {
	[ "$(forge status --json "$T" | jq -r .run.status)" = "$1" ]
	run -0 grep "^Run $T" "$BATS_TEST_TMPDIR/run.out"
	assert_output "Run $T $2"
	run -0 forge show "$T"
	assert_line --regexp "^status +$1 at implement"
}

@test "kill -9 a phase: forge run's summary says the run is paused and resumable, as its status does (not failed)" {
	new_repo c
	script "$(jq -nc --argjson p "$PLAN" --argjson i "$IMPL" '$p + [$i[0] + {delay_ms: 30000}]')"
	start_run_shown
	until_true implementer_called
	child=$(pgrep -P "$SUP" -f forge-implement)
	[ -n "$child" ]
	kill -9 "$child"
	rc=0; wait "$SUP" || rc=$?
	[ "$rc" -eq 5 ]
	T=$(trace_of_run)
	# (before: "Run T failed" over a paused run)
	summary_says paused "paused (resumable): node 'implement' was killed by a signal; resume runs it again"
	grep -qx "  next      forge resume $T" "$BATS_TEST_TMPDIR/run.out"
	# stderr says it too, as for an interrupted phase (before: "✗ crashed" alone)
	grep -qxF "forge run: node 'implement' was killed by a signal; resume runs it again (forge resume $T)" \
		"$BATS_TEST_TMPDIR/run.err"
}

@test "SIGTERM to forge run: its summary says the run is paused (interrupted) and resumable" {
	new_repo c
	script "$(jq -nc --argjson p "$PLAN" --argjson i "$IMPL" '$p + [$i[0] + {delay_ms: 30000}]')"
	start_run_shown
	until_true implementer_called
	kill -TERM "$SUP"
	rc=0; wait "$SUP" || rc=$?
	[ "$rc" -eq 130 ]
	T=$(trace_of_run)
	summary_says paused "paused (resumable): interrupted (Ctrl-C, SIGTERM or SIGHUP)"
	grep -qx "  next      forge resume $T" "$BATS_TEST_TMPDIR/run.out"
}

@test "forge cancel of a live run: forge run's summary says cancelled, as its status does (not interrupted)" {
	new_repo c
	script "$(jq -nc --argjson p "$PLAN" --argjson i "$IMPL" '$p + [$i[0] + {delay_ms: 30000}]')"
	start_run_shown
	until_true implementer_called
	T=$(trace_of_run)
	run -0 forge cancel "$T"
	rc=0; wait "$SUP" || rc=$?
	[ "$rc" -eq 130 ]
	# (before: "Run T interrupted" over a cancelled run)
	summary_says cancelled cancelled
	run ! grep -q "forge resume" "$BATS_TEST_TMPDIR/run.out"
}
