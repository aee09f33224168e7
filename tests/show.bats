#!/usr/bin/env bats
# show.bats - what a person does with a run afterwards: forge show, diff,
# merge, gc/clean, cancel's clean-up, unique trace prefixes everywhere a
# TRACE is taken, history in local time with long tasks cut, and the next
# command at the end of the run's summary.  Two real runs on the calc
# fixture are made once in setup_file (replayed model answers): a clean one
# that completes (cassette run-clean.jsonl) and a high-risk one that pauses
# at its architecture gate (run-highrisk.jsonl); each test works on a copy
# of the repository (worktree links repaired) and of the database.

bats_require_minimum_version 1.5.0

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
		export FORGE_PROVIDER=replay
		rc=0
		FORGE_CASSETTE="$FORGE_ROOT/tests/fixtures/cassettes/run-clean.jsonl" \
			forge run "add a mul operation" </dev/null >"$SHARED/run1.out" 2>&1 || rc=$?
		echo $rc >"$SHARED/run1.rc"
		rc=0
		FORGE_CASSETTE="$FORGE_ROOT/tests/fixtures/cassettes/run-highrisk.jsonl" \
			forge run --config "$FORGE_ROOT/tests/fixtures/supervisor/high-risk.json" \
			"add a mul operation, carefully" </dev/null >"$SHARED/run2.out" 2>&1 || rc=$?
		echo $rc >"$SHARED/run2.rc"
	)
}

setup() {
	forge_setup
	[ "$(cat "$SHARED/run1.rc")" = 0 ] || { cat "$SHARED/run1.out"; false; }
	[ "$(cat "$SHARED/run2.rc")" = 4 ] || { cat "$SHARED/run2.out"; false; }
	REPO="$BATS_TEST_TMPDIR/calc"
	cp -a "$SHARED/calc" "$REPO"
	cp "$SHARED/forge.db" "$FORGE_DB"
	cd "$REPO"
	# the runs' worktrees copied into this copy's own runs dir, out of the
	# checkout as Forge makes them; they point at the shared repository
	# (libgit2 writes absolute paths): relink them (not with git worktree
	# repair, which rewrites the shared side too)
	local wt t runs
	runs=$(runs_dir)
	mkdir -p "$runs"
	cp -a "$SHARED"/worktrees/calc-*/. "$runs/"
	echo "$REPO" >"$runs/root"
	for wt in "$runs"/*/; do
		t=${wt%/}
		t=${t##*/}
		echo "gitdir: $REPO/.git/worktrees/$t" >"$wt.git"
		echo "${wt}.git" >"$REPO/.git/worktrees/$t/gitdir"
		echo "$REPO/.git/" >"$REPO/.git/worktrees/$t/commondir"
	done
	T1=$(forge history --json | jq -r 'select(.status == "completed") | .trace_id')
	T2=$(forge history --json | jq -r 'select(.status == "paused") | .trace_id')
	BASE=$(git rev-parse main)
	# the longest prefix the two trace ids share
	P=""
	while [ "${T1:0:${#P}+1}" = "${T2:0:${#P}+1}" ]; do P=${T1:0:${#P}+1}; done
}

@test "the run's summary ends with the next command: diff and merge when completed, the gate when paused" {
	run -0 tail -n 1 "$SHARED/run1.out"
	assert_output "  next      forge diff $T1 && forge merge $T1"
	G=$(forge gate list --json "$T2" | jq -r .id)
	run -0 tail -n 1 "$SHARED/run2.out"
	assert_output "  next      forge gate approve $G && forge resume $T2"
}

@test "forge show: summary, plan, diff stat, review, tests, deploy, cost per phase, timeline in local time, next" {
	started=$(forge status --json "$T1" | jq -r .run.started_at)
	run -0 --separate-stderr env TZ=JST-9 forge show "${T1:0:20}"
	assert_line "run       $T1"
	assert_line "task      add a mul operation"
	assert_line "status    completed at deploy"
	assert_line "started   $(TZ=JST-9 date -d "$started" '+%Y-%m-%d %H:%M:%S')"
	assert_line "branch    forge/$T1"
	assert_line --regexp "^base      HEAD \\(${BASE:0:12}\\)$"
	assert_line "plan      Add a mul operation to calc: calc mul A B prints A times B."
	assert_line "          risk low (0.10), estimate low, 15m"
	assert_line "  t1   Add calc_mul and the mul operation [calc.c]"
	assert_line --regexp "^changes   2 files \\(\\+10 -1\\), ${BASE:0:12}\\.\\.[0-9a-f]{12}$"
	assert_line --regexp "^  M calc.c +\\+8 -1$"
	assert_line --regexp "^  M tests/check.sh +\\+2 -0$"
	assert_line "review    approve, 0 findings"
	assert_line "tests     5 passed, 0 failed, 0 skipped (make check)"
	assert_line "deploy    healthy (branch, staging)"
	# (a total of $0.06945: half away from zero, as every view rounds money, core/money.h)
	assert_line --regexp '^cost      plan \$0\.0191 \(3 calls\) · implement \$0\.0504 \(7 calls\) · total \$0\.0695 \(19430 tokens\)$'
	assert_line --regexp "^  [0-9:]{8}  plan started$"
	assert_line --regexp "^  [0-9:]{8}  model claude-sonnet-4-5: 1200 in \\+ 40 out tokens, \\\$0\\.0042$"
	assert_line --regexp "^  [0-9:]{8}  review ok in [0-9]+ ms: approve: .*$"
	assert_line --regexp "^  [0-9:]{8}  run completed$"
	assert_line "next      forge diff $T1 && forge merge $T1"
	# the timeline's times are local too
	first=$(forge events replay "$T1" | head -n 1 | jq -r .ts)
	assert_line "  $(TZ=JST-9 date -d "$first" '+%H:%M:%S')  run started: add a mul operation"
}

@test "forge show: a flaky test is shown as flaky, not FAIL; a failure with its classification, its analysis, no empty message" {
	REPO="$BATS_TEST_TMPDIR/flaky"
	calc_repo "$REPO"
	cd "$REPO"
	# one test fails, then passes on the rerun (the rerun shares the first
	# run's TMPDIR); one fails every time, with no diagnostics
	cat >flaky.sh <<-'EOF'
		echo 1..3
		echo "ok 1 - stable"
		if [ -e "$TMPDIR/seen" ]; then echo "ok 2 - sometimes"; else : >"$TMPDIR/seen"; echo "not ok 2 - sometimes"; echo "# timed out"; fi
		echo "not ok 3 - always"
		exit 1
	EOF
	git add flaky.sh && git commit -qm flaky
	mkdir -p .forge
	echo '{"tools": {"test_command": "sh flaky.sh"}, "implement": {"validate": false}}' >.forge/config.json
	# the analysis of "always" is not sure of its fix: the run waits at the
	# escalation_test gate, whose human reads forge show
	cp "$FORGE_ROOT/tests/fixtures/cassettes/run-clean.jsonl" "$BATS_TEST_TMPDIR/cassette.jsonl"
	echo '{"phase": "test-fast", "response": {"tool_calls": [{"id": "t1", "name": "report_failure_analysis",
		"input": {"analyses": [{"test": "always", "root_cause": "the test fails on purpose",
		"suggested_fix": "remove the test", "confidence": 0.4}]}}]}}' | jq -c . >>"$BATS_TEST_TMPDIR/cassette.jsonl"
	run -4 --separate-stderr env FORGE_PROVIDER=replay FORGE_CASSETTE="$BATS_TEST_TMPDIR/cassette.jsonl" \
		forge run -q "add a mul operation" </dev/null
	T=$(forge history --json -n 1 | jq -r .trace_id)
	run -0 --separate-stderr forge show "$T"
	# (before: "2 passed, 1 failed, 0 skipped", "FAIL sometimes: timed out",
	# "FAIL always: " and not a word of the analysis)
	assert_line "tests     2 passed, 1 failed, 0 skipped, 1 flaky (sh flaky.sh)"
	assert_line "  flaky sometimes (failed, then passed on rerun)"
	assert_line "  FAIL always (real)"
	assert_line "       cause: the test fails on purpose"
	assert_line "       fix (confidence 0.40): remove the test"
	refute_line --partial "FAIL sometimes"
}

@test "forge show --json: the whole view, the diff from git with its patch" {
	run -0 --separate-stderr forge show --json "$T1"
	jq -e --arg t "$T1" --arg b "$BASE" '.trace_id == $t and .status == "completed" and .merged == null
		and .diff.from == "git" and .diff.base == $b and (.diff.files | map(.path)) == ["calc.c", "tests/check.sh"]
		and (.diff.patch | contains("+long calc_mul(long a, long b)"))
		and .plan.risk.level == "low" and .tests.summary.passed == 5 and .review.decision == "approve"
		and .deployment.status == "healthy"
		and (.phase_cost | map(.phase)) == ["plan", "implement"] and .phase_cost[0].calls == 3
		and ([.timeline[] | select(.type == "phase.completed") | .phase]) == ["plan", "implement", "review", "test", "deploy"]
		and ([.timeline[] | select(.type == "llm.called")] | length) == 10' <<<"$output"
	# the paused run: its pending gate, no diff yet (the branch is at its base)
	run -0 --separate-stderr forge show --json "$T2"
	jq -e '.status == "paused" and (.gates | length) == 1 and .gates[0].status == "pending" and .diff.files == []' <<<"$output"
	run -0 --separate-stderr forge show "$T2"
	assert_line "changes   0 files (+0 -0), ${BASE:0:12}..${BASE:0:12}"
	assert_line --regexp "^next      forge gate approve [0-9A-Z]+ && forge resume $T2$"
}

@test "a unique prefix names a run everywhere a TRACE is taken; ambiguous or unknown: exit 2" {
	short=${T1:0:${#P}+1}
	run -0 forge status "$short"
	assert_line "run      $T1"
	run -0 forge status "${short,,}"    # ULIDs are upper case; lower case is taken too
	assert_line "run      $T1"
	run -0 forge show "$short"
	run -0 forge diff --stat "$short"
	run -0 forge report "$short"
	run -0 forge events replay "$short"
	[ "$(jq -r .trace_id <<<"${lines[0]}")" = "$T1" ]
	run -0 forge events replay --state "$short"
	run -0 forge gate list --json "${T2:0:${#P}+1}"
	[ "$(jq -r .trace_id <<<"$output")" = "$T2" ]
	run -0 --separate-stderr forge findings list --json --trace "$short"
	[ "$output" = "$(forge findings list --json --trace "$T1")" ]
	run -2 --separate-stderr forge findings list --trace "$P"
	[[ $stderr == *"'$P' matches 2 runs; give more of the trace id:"* ]]
	# the prefix both share
	for cmd in "status" "show" "diff" "merge" "report" "resume" "cancel" "events replay" "gate list"; do
		# shellcheck disable=SC2086
		run -2 --separate-stderr forge $cmd "$P" </dev/null
		[[ $stderr == *"'$P' matches 2 runs; give more of the trace id:"* ]] || { echo "$cmd: $stderr"; false; }
		[[ $stderr == *"  $T1"* && $stderr == *"  $T2"* ]]
	done
	# nothing matches
	for cmd in status show diff merge report resume cancel "gate list"; do
		# shellcheck disable=SC2086
		run -2 --separate-stderr forge $cmd 7NOSUCHRUN </dev/null
		[[ $stderr == *"no run matches '7NOSUCHRUN'" ]] || { echo "$cmd: $stderr"; false; }
	done
	run -2 --separate-stderr forge show 'a*'
	[[ $stderr == *"no run matches 'a*'"* ]]
	# events replay of a trace nothing has stays what it was: no events, status 1
	run -1 --separate-stderr forge events replay 7NOSUCHRUN
	[[ $stderr == *"no events for trace '7NOSUCHRUN'"* ]]
}

@test "a trace of phases run by hand (a shell pipeline): show says so with its branch, worktree and a next that works; status, merge, resume, cancel exit 2 saying so (hunt67 #5)" {
	local c="$FORGE_ROOT/tests/fixtures/cassettes"
	cat "$c/plan-calc.jsonl" "$c/implement-calc.jsonl" >"$BATS_TEST_TMPDIR/cassette.jsonl"
	export FORGE_PROVIDER=replay FORGE_CASSETTE="$BATS_TEST_TMPDIR/cassette.jsonl"
	forge-plan -q --task "add a mul operation" | forge-events store | forge-implement -q >"$BATS_TEST_TMPDIR/out.jsonl"
	local t wt
	t=$(tail -n 1 "$BATS_TEST_TMPDIR/out.jsonl" | jq -r .trace_id)
	wt="$(run_worktree "$t")"
	git rev-parse -q --verify "forge/$t" >/dev/null
	run -0 --separate-stderr forge show "$t"
	[[ $output == *"status    none: not a forge run but a trace of phases run by hand (a shell pipeline)"* ]]
	[[ $output == *"branch    forge/$t"* ]]
	[[ $output == *"worktree  $wt"* ]]
	[[ $output == *"changes   2 files"* ]]
	[[ $output == *"next      forge diff $t && git merge forge/$t"* ]]
	[[ $output == *"why       a trace of phases run by hand (a shell pipeline), not a forge run: forge resume, merge and gc do not take it; git merges its branch into the checked-out one; to remove it: git worktree remove --force '$wt' && git branch -D forge/$t && git update-ref -d refs/forge/$t/base"* ]]
	[[ $output != *"forge resume $t"* ]]
	run -0 forge show --json "$t"
	[ "$(jq -c '[.status, .pipeline, .task.branch]' <<<"$output")" = "[\"pipeline\",true,\"forge/$t\"]" ]
	local said="$t is not a forge run: phases run by hand (a shell pipeline) made that trace; forge show $t says what is left of it"
	run -2 --separate-stderr forge status "$t"
	[ "$stderr" = "forge status: $said" ]
	run -2 --separate-stderr forge resume "$t" </dev/null
	[ "$stderr" = "forge resume: $said" ]
	run -2 --separate-stderr forge cancel "$t"
	[ "$stderr" = "forge cancel: $said" ]
	run -2 --separate-stderr forge merge "$t"
	[ "$stderr" = "forge-merge: $t is not a forge run but a trace of phases run by hand (a shell pipeline): merge its branch with git: git merge forge/$t (forge show $t says how to remove it after)" ]
	# what show says works: the diff, the merge, the removal
	run -0 forge diff --stat "$t"
	[[ $output == *"calc.c"* ]]
	run -0 git merge -q --no-edit "forge/$t"
	grep -q calc_mul calc.c
	git worktree remove --force "$wt" && git branch -D "forge/$t" && git update-ref -d "refs/forge/$t/base"
	[ -z "$(git for-each-ref "refs/forge/$t" "refs/heads/forge/$t")" ]
	run -0 --separate-stderr forge show "$t"
	[[ $output != *"next "* ]]
	[[ $output == *"why       a trace of phases run by hand (a shell pipeline), not a forge run: forge resume, merge and gc do not take it" ]]
}

@test "forge history: local times, long tasks cut to 60 columns (whole with --json)" {
	task="add a mul operation, carefully, $(printf 'and then some more words %.0s' 1 2 3 4)"
	sqlite3 "$FORGE_DB" "update runs set task = '$task' where id = '$T2'"
	started=$(forge status --json "$T2" | jq -r .run.started_at)
	run -0 env TZ=JST-9 forge history
	assert_line --index 0 --regexp '^TRACE +STATUS +PHASE +COST +STARTED +TASK$'
	line=$(grep "^$T2" <<<"$output")
	[[ $line == *"$(TZ=JST-9 date -d "$started" '+%Y-%m-%d %H:%M:%S')  ${task:0:59}…" ]] || { echo "$line"; false; }
	[[ $line != *"${task:0:60}"* ]]
	run -0 forge history --json
	[ "$(jq -r --arg t "$T2" 'select(.trace_id == $t) | .task' <<<"$output")" = "$task" ]
	[ "$(jq -r --arg t "$T2" 'select(.trace_id == $t) | .started_at' <<<"$output")" = "$started" ]
	# a task of several lines (or with an escape) is one line of the table
	sqlite3 "$FORGE_DB" "update runs set task = 'fix the parser' || char(10) || char(10) || 'Steps:' || char(27) || '[2J' where id = '$T2'"
	run -0 forge history
	[ "${#lines[@]}" -eq 3 ]
	line=$(grep "^$T2" <<<"$output")
	[[ $line == *"  fix the parser  Steps: [2J" ]] || { echo "$line"; false; }
}

@test "forge history, status and show --json: money as it is printed, without a float sum's noise (0.3, not 0.30000000000000004)" {
	# the run's cost from its model calls' log: 0.1 + 0.2 (before: history
	# and status said 0.30000000000000004; show's implement cost
	# 0.05039999999999999, its sum of events)
	sqlite3 "$FORGE_DB" "update llm_calls set cost_usd = 0 where trace_id = '$T1';
		update llm_calls set cost_usd = 0.1 where id = (select min(id) from llm_calls where trace_id = '$T1');
		update llm_calls set cost_usd = 0.2 where id = (select max(id) from llm_calls where trace_id = '$T1');
		update runs set total_cost_usd = 0 where id = '$T1'"
	[ "$(sqlite3 "$FORGE_DB" "select printf('%!.17g', sum(cost_usd)) from llm_calls where trace_id = '$T1'")" = 0.30000000000000004 ]
	run -0 forge history --json
	[[ $output == *'"trace_id":"'$T1'"'*'"total_cost_usd":0.3,'* ]] || { echo "$output"; false; }
	run -0 forge status --json "$T1"
	[[ $output == *'"total_cost_usd":0.3,'* ]] || { echo "$output"; false; }
	run -0 forge show --json "$T1"
	jq -e '.run.total_cost_usd == 0.3 and .cost.usd == 0.3 and ([.phase_cost[].usd] == [0.01905, 0.0504])' <<<"$output"
	for cmd in "history --json" "status --json $T1" "show --json $T1"; do
		run -0 forge $cmd
		! grep -Eo '"[a-z_]*usd":-?[0-9]+\.[0-9]{10,}' <<<"$output"
	done
	# the text as before
	run -0 forge status "$T1"
	assert_line "cost     \$0.3000 (19430 tokens)"
}

@test "forge diff: a binary file and a Latin-1 one in the patch as git apply takes them" {
	wt="$(run_worktree "$T1")"
	git -C "$wt" checkout -q "forge/$T1" 2>/dev/null || true
	printf '\x00\x01\x02\xff binary' >"$wt/logo.bin"
	printf 'caf\351 au lait\n' >"$wt/latin1.txt"
	git -C "$wt" add logo.bin latin1.txt && git -C "$wt" commit -q -m "binary and latin-1"
	forge diff "$T1" >"$BATS_TEST_TMPDIR/run.patch"
	# (before: "Binary files … differ" and U+FFFD for the byte 0xE9: git
	# apply refused the patch)
	grep -q '^GIT binary patch' "$BATS_TEST_TMPDIR/run.patch"
	git worktree add -q --detach "$BATS_TEST_TMPDIR/check" "$BASE"
	git -C "$BATS_TEST_TMPDIR/check" apply "$BATS_TEST_TMPDIR/run.patch"
	cmp "$wt/logo.bin" "$BATS_TEST_TMPDIR/check/logo.bin"
	cmp "$wt/latin1.txt" "$BATS_TEST_TMPDIR/check/latin1.txt"
}

@test "forge diff on a terminal shows a file's control characters as less does (^[); to a pipe the patch stays byte for byte" {
	# (before: a file a model wrote with an escape sequence drove the
	# terminal of the person reading the diff: a title set, a line hidden)
	wt="$(run_worktree "$T1")"
	git -C "$wt" checkout -q "forge/$T1" 2>/dev/null || true
	printf 'title \033]0;owned\007 clear \033[2J cr\rover del\177 c1 \302\233 tab\tend\n' >"$wt/planted.txt"
	git -C "$wt" add planted.txt && git -C "$wt" commit -q -m planted
	tty="$BATS_TEST_TMPDIR/tty"
	run -0 env NO_COLOR=1 python3 "$FORGE_ROOT/tests/helpers/pty_run.py" --transcript "$tty" -- forge diff "$T1"
	grep -qF '+title ^[]0;owned^G clear ^[[2J cr^Mover del^? c1 <U+009B> tab'$'\t''end' "$tty"
	! grep -q $'\033\\]0;\\|\033\\[2J\\|\302\233' "$tty" || false
	# coloured too: the colour's escapes are forge's, the file's visible
	run -0 python3 "$FORGE_ROOT/tests/helpers/pty_run.py" --transcript "$tty" -- forge diff "$T1"
	grep -qF $'\033[32m+title ^[]0;owned^G clear ^[[2J' "$tty"
	# to a pipe: the bytes as git wrote them, a patch git apply takes
	forge diff "$T1" >"$BATS_TEST_TMPDIR/run.patch"
	grep -qF $'+title \033]0;owned\007 clear \033[2J cr\rover' "$BATS_TEST_TMPDIR/run.patch"
	git worktree add -q --detach "$BATS_TEST_TMPDIR/check" "$BASE"
	git -C "$BATS_TEST_TMPDIR/check" apply "$BATS_TEST_TMPDIR/run.patch"
	cmp "$wt/planted.txt" "$BATS_TEST_TMPDIR/check/planted.txt"
}

@test "forge diff: the run's branch against its base as a patch git applies; --stat; colour only on a terminal" {
	run -0 --separate-stderr forge diff "$T1"
	[[ ${lines[0]} == "diff --git a/calc.c b/calc.c" ]]
	[[ $output != *$'\033['* ]]
	printf '%s\n' "$output" >"$BATS_TEST_TMPDIR/run.patch"
	# the patch on the base gives the branch's tree
	git worktree add -q --detach "$BATS_TEST_TMPDIR/check" "$BASE"
	git -C "$BATS_TEST_TMPDIR/check" apply "$BATS_TEST_TMPDIR/run.patch"
	[ -z "$(git -C "$BATS_TEST_TMPDIR/check" diff "forge/$T1" --stat)" ]
	run -0 --separate-stderr forge diff --stat "$T1"
	assert_output "$(printf ' %-50s +8 -1\n %-50s +2 -0\n 2 files changed, 10 insertions(+), 1 deletion(-)' calc.c tests/check.sh)"
	# on a terminal: coloured, unless NO_COLOR
	tty="$BATS_TEST_TMPDIR/tty"
	run -0 python3 "$FORGE_ROOT/tests/helpers/pty_run.py" --transcript "$tty" -- forge diff "$T1"
	[[ $(<"$tty") == *$'\033[32m+long calc_mul'* ]]
	run -0 env NO_COLOR=1 python3 "$FORGE_ROOT/tests/helpers/pty_run.py" --transcript "$tty" -- forge diff "$T1"
	[[ $(<"$tty") != *$'\033['* && $(<"$tty") == *"+long calc_mul"* ]]
	run -2 --separate-stderr forge diff
	[[ $stderr == *"one trace id is needed"* ]]
}

@test "forge merge: refused on a dirty checkout, a detached HEAD, a paused run; then a fast-forward, recorded, shown as merged" {
	echo "/* local edit */" >>calc.c
	run -2 --separate-stderr forge merge "$T1"
	[[ $stderr == *"has uncommitted changes to tracked files: commit or stash them (git stash), then forge merge $T1" ]]
	[ "$(git rev-parse main)" = "$BASE" ]
	git checkout -q calc.c
	git checkout -q --detach
	run -2 --separate-stderr forge merge "$T1"
	[[ $stderr == *"is not on a branch (detached HEAD); switch to the branch the run should go into"* ]]
	# the run started from HEAD on main: main is where it goes, not the
	# branch the checkout is on now (which contains the base commit too)
	run -0 forge status --json "$T1"
	jq -e '.state.task.base_branch == "main"' <<<"$output"
	git checkout -q -b topic
	run -2 --separate-stderr forge merge "$T1"
	[[ $stderr == *"the run's base branch 'main' is not checked out (the checkout is on 'topic'): git switch main, then forge merge $T1" ]]
	git checkout -q main
	run -2 --separate-stderr forge merge "$T2"
	[[ $stderr == *"run $T2 is paused, not completed; see forge show $T2" ]]
	run -0 --separate-stderr forge merge "$T1"
	assert_output --regexp "^merged forge/$T1 into main \\(fast-forward\\) at [0-9a-f]{12}$"
	[ "$(git rev-parse main)" = "$(git rev-parse "forge/$T1")" ]
	grep -q calc_mul calc.c            # the checkout's files moved with the branch
	[ -z "$(git status --porcelain --untracked-files=no)" ]
	run -0 forge events replay "$T1"
	jq -e -s '[.[] | select(.type == "run.merged")] | length == 1 and .[0].payload.branch == "main"
		and .[0].payload.how == "fast-forward" and .[0].source == "forge-merge"' <<<"$output"
	run -0 forge status "$T1"
	assert_line --regexp "^status   merged into main at [0-9a-f]{12}$"
	run -0 forge status --json "$T1"
	jq -e '.run.status == "completed" and .merged.branch == "main"' <<<"$output"
	run -0 forge history
	assert_line --regexp "^$T1 +merged "
	run -0 forge show "$T1"
	assert_line "next      forge gc"
	run -0 --separate-stderr forge merge "$T1"
	assert_output "run $T1 is merged already"
}

@test "forge merge of a dry run, or in another repository than the run's (a shared database): exit 2 saying so and what works, not 'removed by forge gc?'" {
	# a repository sharing the database ($FORGE_DB): the run's branch is
	# where it ran ($SHARED/calc, which $REPO is a copy of)
	make_repo "$BATS_TEST_TMPDIR/other repo"
	cd "$BATS_TEST_TMPDIR/other repo"
	run -2 --separate-stderr forge merge "$T1"
	[ "$stderr" = "forge-merge: run $T1 was made in the repository '$SHARED/calc', not in this one ('$BATS_TEST_TMPDIR/other repo'): its branch is there; merge it there: forge merge --repo '$SHARED/calc' $T1" ]
	[ "$(git log --oneline | wc -l)" = 1 ]
	# --repo as it says (here: the copy)
	run -0 --separate-stderr forge merge --repo "$REPO" "$T1"
	assert_output --regexp "^merged forge/$T1 into main \\(fast-forward\\) at [0-9a-f]{12}$"
	# a dry run makes no branch (before: "has no branch forge/TRACE (removed by forge gc?)")
	cd "$REPO"
	FORGE_PROVIDER=replay FORGE_CASSETTE="$FORGE_ROOT/tests/fixtures/cassettes/plan-calc.jsonl" \
		run -0 forge run --dry-run --json "add a mul operation"
	local dry
	dry=$(forge history --json -n 1 | jq -r .trace_id)
	run -2 --separate-stderr forge merge "$dry"
	[ "$stderr" = "forge-merge: run $dry was a dry run (forge run --dry-run): it planned only, and made no branch or change to merge; forge run without --dry-run makes them" ]
}

@test "forge merge of a run merged by hand (git merge), with commits since: recorded as merged, not refused as 'moved'" {
	git merge -q --no-edit "forge/$T1"
	echo "extra" >NOTES
	git add NOTES && git commit -q -m "notes on main"
	tip=$(git rev-parse main)
	run -0 --separate-stderr forge merge "$T1"
	assert_output "run $T1 is in main already (merged outside forge); recorded as merged"
	[ "$(git rev-parse main)" = "$tip" ]
	run -0 forge events replay "$T1"
	jq -e -s '[.[] | select(.type == "run.merged")] | length == 1 and .[0].payload.how == "already"' <<<"$output"
	run -0 forge history
	assert_line --regexp "^$T1 +merged "
}

@test "forge merge with a stale .git/index.lock: refused before a file is written, the lock named (hunt65 #5)" {
	git update-index -q --refresh || true   # (the copied checkout's stat data)
	: >.git/index.lock
	for no_ff in "" --no-ff; do
		run -5 --separate-stderr forge merge $no_ff "$T1"
		[[ $stderr == *".git/index.lock exists: a git command is at work in '"*"', or one was killed there; when none runs, remove that file and try again (nothing was changed)" ]]
		[ "$(git rev-parse main)" = "$BASE" ]
		rm .git/index.lock
		[ -z "$(git status --porcelain --untracked-files=no)" ]   # (before: the run's files written)
		: >.git/index.lock
	done
	rm .git/index.lock
	run -0 --separate-stderr forge merge "$T1"
	assert_output --regexp "^merged forge/$T1 into main \\(fast-forward\\) at [0-9a-f]{12}$"
	[ -z "$(git status --porcelain --untracked-files=no)" ]
}

@test "forge merge again after one killed between the checkout and the branch: it finishes the fast-forward, not 'stash them'" {
	# what the killed merge left: the checkout's index and files are the
	# run's (a fast-forward's two-tree read-tree), main not moved
	git update-index -q --refresh || true   # (the copied checkout's stat data)
	git read-tree -m -u main "forge/$T1"
	[ "$(git rev-parse main)" = "$BASE" ]
	# with an edit of the person's on top, the change is theirs: refused as before
	echo "/* local edit */" >>calc.c
	run -2 --separate-stderr forge merge "$T1"
	[[ $stderr == *"has uncommitted changes to tracked files: commit or stash them (git stash), then forge merge $T1" ]]
	git checkout -q calc.c     # (back to the index: the run's)
	run -2 --separate-stderr forge merge --no-ff "$T1"
	[[ $stderr == *"holds run $T1's change already, 'main' not moved yet (a merge of it was interrupted): forge merge $T1 (without --no-ff) finishes it, git reset --hard undoes it" ]]
	# a stale lock of the branch (the merge killed while it moved it) is named, not removed
	: >.git/refs/heads/main.lock
	run -5 --separate-stderr forge merge "$T1"
	[[ $stderr == *"cannot move branch 'main': "*".git/refs/heads/main.lock exists: a git command is at work on it, or one was killed there; when none runs, remove that file and try again" ]]
	[ "$(git rev-parse main)" = "$BASE" ]
	rm .git/refs/heads/main.lock
	run -0 --separate-stderr forge merge "$T1"
	[[ $stderr == *"holds run $T1's change already, 'main' not moved yet (a merge of it was interrupted): finishing it" ]]
	assert_output --regexp "^merged forge/$T1 into main \\(fast-forward\\) at [0-9a-f]{12}$"
	[ "$(git rev-parse main)" = "$(git rev-parse "forge/$T1")" ]
	[ -z "$(git status --porcelain --untracked-files=no)" ]
}

@test "forge merge after a merge killed while it wrote the files (index not written, some files the run's): it finishes the fast-forward" {
	git update-index -q --refresh || true   # (the copied checkout's stat data)
	# some of the run's files written, the index still main's
	git checkout -q "forge/$T1" -- .
	git reset -q
	[ -n "$(git status --porcelain --untracked-files=no)" ]
	run -0 --separate-stderr forge merge "$T1"
	[[ $stderr == *"holds run $T1's change already, 'main' not moved yet (a merge of it was interrupted): finishing it" ]]
	[ "$(git rev-parse main)" = "$(git rev-parse "forge/$T1")" ]
	[ -z "$(git status --porcelain --untracked-files=no)" ]
}

@test "a sparse checkout is not dirty; forge merge leaves it to git (exit 2, saying why) instead of writing out what it leaves out" {
	git update-index -q --refresh || true   # (the copied checkout's stat data)
	git sparse-checkout set --no-cone '/Makefile' '/README.md' '/tests/' '/.forge/' '/.gitignore'   # calc.c left out
	[ -z "$(git status --porcelain)" ]
	# (before: "uncommitted changes to tracked files: commit or stash them",
	# which git stash finds none of)
	run -2 --separate-stderr forge merge "$T1"
	[[ "$stderr" == *"is a sparse checkout (git sparse-checkout), which forge cannot update and keep sparse; merge with git instead (git merge)"* ]]
	[[ "$stderr" != *"uncommitted"* ]]
	[ ! -e calc.c ]
	git merge -q --ff-only "forge/$T1"
	[ ! -e calc.c ]
}

@test "forge merge: when the base branch moved, a fast-forward is refused and --no-ff makes a merge commit" {
	echo "extra" >NOTES
	git add NOTES && git commit -q -m "notes on main"
	moved=$(git rev-parse main)
	run -2 --separate-stderr forge merge "$T1"
	[[ $stderr == *"'main' has moved since run $T1 started: a fast-forward is not possible; forge merge --no-ff $T1 makes a merge commit" ]]
	[ "$(git rev-parse main)" = "$moved" ]
	# (the identity from the configuration: the tests' GIT_AUTHOR_* would win, as with git)
	git config user.name "A. Person" && git config user.email person@example.com
	run -0 --separate-stderr env -u GIT_AUTHOR_NAME -u GIT_AUTHOR_EMAIL -u GIT_COMMITTER_NAME \
		-u GIT_COMMITTER_EMAIL forge merge --no-ff "$T1"
	assert_output --regexp "^merged forge/$T1 into main \\(merge commit\\) at [0-9a-f]{12}$"
	[ "$(git rev-parse main^1)" = "$moved" ]
	[ "$(git rev-parse main^2)" = "$(git rev-parse "forge/$T1")" ]
	[ "$(git log -1 --format='%an %s' main)" = "A. Person Merge forge/$T1: add a mul operation" ]
	grep -q calc_mul calc.c
	[ -f NOTES ]
	[ -z "$(git status --porcelain --untracked-files=no)" ]
	# a branch the run's base is not in is not where the run goes
	git checkout -q --orphan elsewhere && git rm -rq --cached . && git commit -q --allow-empty -m elsewhere
	run -2 --separate-stderr forge merge "$T2"
}

@test "forge merge of two runs at once: the second waits for the first's checkout and branch move, then says main moved (exit 2); the checkout holds the first's files, nothing staged" {
	pause_preload
	# a second completed run, whose branch also adds NOTES
	FORGE_PROVIDER=replay FORGE_CASSETTE="$FORGE_ROOT/tests/fixtures/cassettes/run-clean.jsonl" \
		forge run -q "add a mul operation" </dev/null >/dev/null
	t=$(forge history --json | jq -r "select(.status == \"completed\" and .trace_id != \"$T1\") | .trace_id")
	[ -n "$t" ]
	wt=$(git worktree list --porcelain | awk -v b="branch refs/heads/forge/$t" '/^worktree /{w=substr($0, 10)} $0 == b {print w}')
	echo notes >"$wt/NOTES"
	git -C "$wt" add NOTES && git -C "$wt" commit -q -m notes
	# the first stops half-way through writing the checkout
	LD_PRELOAD="$PAUSE_SO" FORGE_PAUSE_DIR="$PAUSE" FORGE_PAUSE_UNDER="$(pwd -P)/" \
		forge merge "$T1" >"$BATS_TEST_TMPDIR/out1" 2>&1 &
	p1=$!
	until_signal "$PAUSE/paused" "$p1"
	[ -e "$PAUSE/paused" ]
	LD_PRELOAD="$PAUSE_SO" FORGE_PAUSE_DIR="$PAUSE" forge merge "$t" >"$BATS_TEST_TMPDIR/out2" 2>&1 &
	p2=$!
	# it waits for the merge lock (before: it looked at the checkout then,
	# or landed while the first's checkout was half-written)
	until_signal "$PAUSE/waiting" "$p2"
	touch "$PAUSE/go"
	rc1=0; wait "$p1" || rc1=$?
	rc2=0; wait "$p2" || rc2=$?
	# (before: the first failed, exit 5, "old reference value does not
	# match", its files staged on the second's commit and NOTES staged as
	# deleted: the next commit would have reverted the second run)
	[ "$rc1" = 0 ] || { cat "$BATS_TEST_TMPDIR/out1"; false; }
	[ "$rc2" = 2 ] || { cat "$BATS_TEST_TMPDIR/out2"; false; }
	grep -q "^merged forge/$T1 into main (fast-forward)" "$BATS_TEST_TMPDIR/out1"
	grep -q "'main' has moved since run $t started: a fast-forward is not possible; forge merge --no-ff $t makes a merge commit" \
		"$BATS_TEST_TMPDIR/out2"
	[ "$(git rev-parse main)" = "$(git rev-parse "forge/$T1")" ]
	[ -z "$(git status --porcelain)" ]
	[ ! -e NOTES ]
	run -0 --separate-stderr forge merge --no-ff "$t"
	[ "$(git rev-parse main^2)" = "$(git rev-parse "forge/$t")" ]
	[ -z "$(git status --porcelain)" ]
	[ -f NOTES ]
}

@test "forge merge whose base branch git moves while it writes the checkout: the checkout is put back, exit 2 'merge again'" {
	pause_preload
	other=$(git commit-tree -p main -m "pushed meanwhile" "main^{tree}")
	LD_PRELOAD="$PAUSE_SO" FORGE_PAUSE_DIR="$PAUSE" FORGE_PAUSE_UNDER="$(pwd -P)/" \
		forge merge "$T1" >"$BATS_TEST_TMPDIR/out1" 2>&1 &
	p1=$!
	until_signal "$PAUSE/paused" "$p1"
	[ -e "$PAUSE/paused" ]
	git update-ref refs/heads/main "$other" "$BASE"
	touch "$PAUSE/go"
	rc=0; wait "$p1" || rc=$?
	# (before: exit 5, "old reference value does not match", the run's
	# change staged on a branch that does not have it)
	[ "$rc" = 2 ] || { cat "$BATS_TEST_TMPDIR/out1"; false; }
	grep -q "forge-merge: cannot fast-forward 'main': it moved while '.*' was updated for it (a git command moved it); nothing changed: merge again; forge merge $T1 again sees where 'main' is now" \
		"$BATS_TEST_TMPDIR/out1"
	[ "$(git rev-parse main)" = "$other" ]
	[ -z "$(git status --porcelain)" ]
	! grep -q calc_mul calc.c
}

@test "extensions.worktreeConfig (git sparse-checkout sets it) and preciousObjects: forge opens the repository and reads config.worktree as git does" {
	git config core.repositoryformatversion 1
	git config extensions.worktreeConfig true
	git config extensions.preciousObjects true
	git status --porcelain >/dev/null
	# (before: "'…' is not in a git repository: unsupported extension name extensions.worktreeconfig")
	run -0 --separate-stderr forge show "$T1"
	assert_line "branch    forge/$T1"
	# a setting of the working tree's own (git config --worktree) counts, as for git
	git config --worktree commit.gpgsign true
	run -2 --separate-stderr forge merge --no-ff "$T1"
	[[ $stderr == *"forge-merge: cannot make the merge commit: commit.gpgsign is set, and Forge makes commits without (unsigned, no hooks); nothing changed."* ]]
	[ "$(git rev-parse main)" = "$BASE" ]
	git config --worktree --unset commit.gpgsign
	run -0 --separate-stderr forge merge --no-ff "$T1"
	[ "$(git rev-list --parents -n 1 main | wc -w)" -eq 3 ]
	[ -z "$(git status --porcelain --untracked-files=no)" ]
}

@test "forge merge --no-ff where git signs commits or runs a commit hook: refused (exit 2), nothing changed; git's own merge is then recorded" {
	echo "extra" >NOTES
	git add NOTES && git commit -q -m "notes on main"
	moved=$(git rev-parse main)
	git config commit.gpgsign true
	git config gpg.program /bin/false       # no key: git itself fails
	run ! git merge --no-ff -m m "forge/$T1"
	git merge --abort
	# (before: an unsigned merge commit on main)
	run -2 --separate-stderr forge merge --no-ff "$T1"
	[[ $stderr == *"forge-merge: cannot make the merge commit: commit.gpgsign is set, and Forge makes commits without (unsigned, no hooks); nothing changed.  Merge with git instead: git merge --no-ff forge/$T1, then forge merge $T1 records the run as merged" ]]
	[ "$(git rev-parse main)" = "$moved" ]
	[ -z "$(git status --porcelain --untracked-files=no)" ]
	git config --unset commit.gpgsign
	# a commit-msg hook (here through core.hooksPath) is git's to run
	mkdir -p "$BATS_TEST_TMPDIR/hooks"
	printf '#!/bin/sh\nexit 1\n' >"$BATS_TEST_TMPDIR/hooks/commit-msg"
	chmod +x "$BATS_TEST_TMPDIR/hooks/commit-msg"
	git config core.hooksPath "$BATS_TEST_TMPDIR/hooks"
	run -2 --separate-stderr forge merge --no-ff "$T1"
	[[ $stderr == *"cannot make the merge commit: the commit-msg hook '$BATS_TEST_TMPDIR/hooks/commit-msg' would run"* ]]
	[ "$(git rev-parse main)" = "$moved" ]
	# one not executable is not run by git either
	chmod -x "$BATS_TEST_TMPDIR/hooks/commit-msg"
	git config --unset core.hooksPath
	git merge -q --no-ff -m "merged by hand" "forge/$T1"
	run -0 --separate-stderr forge merge "$T1"
	[ "$output" = "run $T1 is in main already (merged outside forge); recorded as merged" ]
}

@test "forge merge: changes that conflict with the base branch stop it with exit 1, nothing changed" {
	sed -i 's/a - b/b - a/; s/usage: calc/usage:  calc/' calc.c
	git commit -qam "a conflicting edit on main"
	moved=$(git rev-parse main)
	run -1 --separate-stderr forge merge --no-ff "$T1"
	[[ $stderr == *"the changes conflict in calc.c"* ]]
	[ "$(git rev-parse main)" = "$moved" ]
	[ -z "$(git status --porcelain)" ]
	run -0 forge events replay "$T1"
	[ "$(jq -s '[.[] | select(.type == "run.merged")] | length' <<<"$output")" -eq 0 ]
}

@test "forge merge --no-ff that conflicts says to merge by hand, and forge show's next is that merge; done so, forge merge records it (hunt67 #4)" {
	sed -i 's/a - b/b - a/; s/usage: calc/usage:  calc/' calc.c
	git commit -qam "a conflicting edit on main"
	run -1 --separate-stderr forge merge --no-ff "$T1"
	[[ $stderr == *"the changes conflict in calc.c (nothing changed): merge it by hand on 'main': git merge forge/$T1, resolve the conflicts, git commit; then forge merge $T1 records the run as merged"* ]]
	run -0 --separate-stderr forge show "$T1"
	[[ $output == *"next      git merge forge/$T1"* ]]
	[[ $output == *"why       forge merge refused it (the changes conflict in calc.c with 'main'): on 'main', run that, resolve the conflicts and git commit; then forge merge $T1 records the run as merged"* ]]
	[[ $output == *"merge into main refused: the changes conflict in calc.c"* ]]
	[[ $output != *"forge merge $T1"$'\n'* ]]
	# what it says works: git merges, the person resolves, forge records
	run -1 git merge -q --no-edit "forge/$T1"
	git checkout -q --theirs calc.c
	git add calc.c
	git commit -q --no-edit
	run -0 --separate-stderr forge merge "$T1"
	[[ $output == *"run $T1 is in main already (merged outside forge); recorded as merged"* ]]
	run -0 --separate-stderr forge show "$T1"
	[[ $output == *"status    merged into main"* ]]
	[[ $output != *"git merge"* ]]
}

@test "forge merge: a file git does not track in the way is named, exit 2, nothing changed; then it merges" {
	# the run's branch adds NOTES.md; the checkout has one of its own, untracked
	git -C "$(run_worktree "$T1")" checkout -q "forge/$T1" 2>/dev/null || true
	echo "from the run" >"$(run_worktree "$T1")/NOTES.md"
	git -C "$(run_worktree "$T1")" add NOTES.md
	git -C "$(run_worktree "$T1")" commit -q -m notes
	echo "my own notes" >NOTES.md
	run -2 --separate-stderr forge merge "$T1"
	# (before: exit 5 and libgit2's "1 conflict prevents checkout")
	[[ $stderr == *"cannot fast-forward 'main': 1 file in '$REPO' that git does not track would be overwritten: NOTES.md; move or remove it (or commit it), then try again" ]]
	[ "$(cat NOTES.md)" = "my own notes" ]
	[ "$(git rev-parse main)" = "$BASE" ]
	! grep -q calc_mul calc.c || false
	run -2 --separate-stderr forge merge --no-ff "$T1"
	[[ $stderr == *"cannot merge into 'main': 1 file in '$REPO' that git does not track would be overwritten: NOTES.md"* ]]
	[ "$(git rev-parse main)" = "$BASE" ]
	mv NOTES.md ../mine.md
	run -0 --separate-stderr forge merge "$T1"
	[ "$(cat NOTES.md)" = "from the run" ]
}

@test "forge merge: an ignored file of the person's in the way is not overwritten either (exit 2)" {
	# the person ignores settings.json (.git/info/exclude) and has one; the
	# run adds its own (before: merged, the person's file overwritten)
	echo settings.json >>"$(git rev-parse --git-common-dir)/info/exclude"
	echo '{"my": "local settings"}' >settings.json
	[ -z "$(git status --porcelain)" ]
	wt="$(run_worktree "$T1")"
	git -C "$wt" checkout -q "forge/$T1" 2>/dev/null || true
	echo '{"default": true}' >"$wt/settings.json"
	git -C "$wt" add -f settings.json && git -C "$wt" commit -q -m settings
	run -2 --separate-stderr forge merge "$T1"
	[[ $stderr == *"1 file in '$REPO' that git does not track would be overwritten: settings.json"* ]]
	[ "$(cat settings.json)" = '{"my": "local settings"}' ]
}

@test "forge merge of a run that makes a directory a file, with what git does not track or ignores in it: exit 2 naming it, nothing changed; then it merges" {
	wt="$(run_worktree "$T1")"
	git -C "$wt" checkout -q "forge/$T1" 2>/dev/null || true
	git -C "$wt" rm -q -r tests
	echo "now a file" >"$wt/tests"
	git -C "$wt" add tests && git -C "$wt" commit -q -m "tests becomes a file"
	echo "my notes" >tests/mine.txt         # the person's, untracked
	# (before: exit 5 "Is a directory", tests/check.sh deleted from the
	# checkout, main not moved, and each retry "finished an interrupted
	# merge" into the same failure; hunt60 #1)
	for i in 1 2; do
		run -2 --separate-stderr forge merge "$T1"
		[[ $stderr == *"cannot fast-forward 'main': the change puts a file where '$REPO' has a directory, tests, holding what git does not track (ignored files too): tests/mine.txt; move or remove it, then try again (nothing was changed)" ]]
		[[ $stderr != *interrupted* ]]
		[ "$(git rev-parse main)" = "$BASE" ]
		[ -z "$(git status --porcelain --untracked-files=no)" ]
		[ -f tests/check.sh ] && [ "$(cat tests/mine.txt)" = "my notes" ]
	done
	run -2 --separate-stderr forge merge --no-ff "$T1"
	[[ $stderr == *"cannot merge into 'main': the change puts a file where '$REPO' has a directory, tests, holding what git does not track (ignored files too): tests/mine.txt;"* ]]
	[ "$(git rev-parse main)" = "$BASE" ]
	[ -z "$(git status --porcelain --untracked-files=no)" ]
	# an ignored file and an empty directory are in the way too (libgit2
	# removes neither)
	mv tests/mine.txt ../mine.txt
	echo '*.local' >>"$(git rev-parse --git-common-dir)/info/exclude"
	echo "my settings" >tests/settings.local
	mkdir -p tests/empty/deeper
	run -2 --separate-stderr forge merge "$T1"
	[[ $stderr == *"has a directory, tests, holding what git does not track (ignored files too): "* ]]
	[[ $stderr == *tests/settings.local* && $stderr == *tests/empty/deeper/* ]]
	[ "$(cat tests/settings.local)" = "my settings" ] && [ -f tests/check.sh ]
	# what such a merge left before: the checkout half written (the
	# directory's tracked files gone), main not moved; the file in the way
	# is named as above, and nothing more is written
	rm tests/check.sh
	run -2 --separate-stderr forge merge "$T1"
	[[ $stderr == *"holds run $T1's change already, 'main' not moved yet (a merge of it was interrupted): finishing it"* ]]
	[[ $stderr == *"has a directory, tests, holding what git does not track (ignored files too): "*tests/settings.local* ]]
	[ "$(git rev-parse main)" = "$BASE" ]
	[ "$(cat tests/settings.local)" = "my settings" ]
	# moved out of the way: it merges
	mv tests/settings.local ../settings.local
	rm -r tests/empty
	run -0 --separate-stderr forge merge "$T1"
	assert_output --regexp "^merged forge/$T1 into main \\(fast-forward\\) at [0-9a-f]{12}$"
	[ "$(git rev-parse main)" = "$(git rev-parse "forge/$T1")" ]
	[ "$(cat tests)" = "now a file" ]
	[ -z "$(git status --porcelain --untracked-files=no)" ]
}

@test "forge merge from a linked worktree whose base branch is checked out in another checkout: the advice names that checkout, and works" {
	git worktree add -q -b side "$BATS_TEST_TMPDIR/side"
	cd "$BATS_TEST_TMPDIR/side"
	run -2 --separate-stderr forge merge "$T1"
	# (before: "git switch main", which git refuses there: "'main' is
	# already checked out at ..."; hunt60 #6)
	[[ $stderr == *"the run's base branch 'main' is checked out in '$REPO', not here (this checkout is on 'side'): merge it there: cd '$REPO' && forge merge $T1" ]]
	git checkout -q --detach
	run -2 --separate-stderr forge merge "$T1"
	[[ $stderr == *"the run's base branch 'main' is checked out in '$REPO', not here (HEAD is detached here): merge it there: cd '$REPO' && forge merge $T1" ]]
	[ "$(git -C "$REPO" rev-parse main)" = "$BASE" ]
	run -0 --separate-stderr bash -c "${stderr##*merge it there: }"
	[ "$(git -C "$REPO" rev-parse main)" = "$(git rev-parse "forge/$T1")" ]
}

@test "forge merge: a file marked skip-worktree or assume-unchanged is called so, with advice that works (not 'a sparse checkout', not 'git does not track')" {
	git update-index -q --refresh || true   # (the copied checkout's stat data)
	echo "/* my local settings */" >>calc.c
	git update-index --skip-worktree calc.c
	[ -z "$(git status --porcelain)" ]
	run -2 --separate-stderr forge merge "$T1"
	# (before: "is a sparse checkout (git sparse-checkout)"; hunt60 #7)
	[[ $stderr == *"cannot fast-forward 'main': 1 file in '$REPO' is marked skip-worktree (git update-index --skip-worktree): calc.c, and forge cannot update the checkout and keep the mark; merge with git instead (git merge), or lift the mark (git update-index --no-skip-worktree 'calc.c': then commit or stash its changes) and try again" ]]
	[[ $stderr != *sparse* ]]
	[ "$(git rev-parse main)" = "$BASE" ]
	git update-index --no-skip-worktree 'calc.c'
	git stash -q
	echo "# mine" >>tests/check.sh
	git update-index --assume-unchanged tests/check.sh
	[ -z "$(git status --porcelain)" ]
	run -2 --separate-stderr forge merge "$T1"
	# (before: "1 file ... that git does not track would be overwritten:
	# tests/check.sh; move or remove it (or commit it)": it is tracked, and
	# git commit finds nothing to commit)
	[[ $stderr == *"cannot fast-forward 'main': 1 tracked file in '$REPO' would be overwritten whose changes git status does not show (marked with git update-index --assume-unchanged): tests/check.sh; git update-index --no-assume-unchanged 'tests/check.sh' lets git see its changes: commit or stash them, then try again" ]]
	[[ $stderr != *"does not track"* ]]
	[ "$(git rev-parse main)" = "$BASE" ]
	[ "$(tail -n 1 tests/check.sh)" = "# mine" ]
	! grep -q calc_mul calc.c || false
	git update-index --no-assume-unchanged 'tests/check.sh'
	git stash -q
	run -0 --separate-stderr forge merge "$T1"
	[ "$(git rev-parse main)" = "$(git rev-parse "forge/$T1")" ]
}

@test "forge gc: only cancelled, failed and merged runs; --dry-run removes nothing; forge clean is the same" {
	own_tmpdir
	wt1="$(run_worktree "$T1")" wt2="$(run_worktree "$T2")"
	[ -d "$wt1" ]
	[ -d "$wt2" ]
	# completed-unmerged and paused: left alone
	run -0 forge gc
	assert_output "nothing to remove"
	run -0 forge merge "$T1"
	run -0 forge gc --dry-run
	assert_output "$(printf '%s\n' "run $T1 (merged):" "would remove worktree $wt1" \
		"would delete refs/heads/forge/$T1" "would delete refs/forge/$T1/base" "would remove 3 things of 1 run")"
	[ -d "$wt1" ]
	git rev-parse -q --verify "refs/heads/forge/$T1" >/dev/null
	run -0 forge clean
	assert_output "$(printf '%s\n' "run $T1 (merged):" "removed worktree $wt1" \
		"deleted refs/heads/forge/$T1" "deleted refs/forge/$T1/base" "removed 3 things of 1 run")"
	[ ! -e "$wt1" ]
	[ -z "$(git for-each-ref "refs/forge/$T1" "refs/heads/forge/$T1")" ]
	[ -d "$wt2" ]
	git rev-parse -q --verify "refs/heads/forge/$T2" >/dev/null
	[ "$(git worktree list | wc -l)" -eq 2 ]
	# the merged work is in main; the run's records stay
	[ "$(git rev-parse main)" = "$(forge events replay "$T1" | jq -r 'select(.type == "run.merged") | .payload.commit')" ]
	run -0 forge show "$T1"
	run -0 forge gc
	assert_output "nothing to remove"
	# a failed run goes too -- not while a resume of it holds its lease (a
	# live process of this host: this shell)
	sqlite3 "$FORGE_DB" "update runs set status = 'failed' where id = '$T2'"
	now=$(date -u +%Y-%m-%dT%H:%M:%S.000Z)
	sqlite3 "$FORGE_DB" "insert into leases (trace_id, holder, pid, host, program, acquired_at, renewed_at)
		values ('$T2', 'RESUMING', $$, '$(hostname)', '$(cat /proc/$$/comm)', '$now', '$now')"
	run -0 forge gc
	assert_output "nothing to remove"
	[ -d "$wt2" ]
	sqlite3 "$FORGE_DB" "delete from leases where trace_id = '$T2'"
	# one that forge resume continues stays unless --resumable (hunt68 #3c)
	run -0 forge gc
	assert_output --regexp "^run $T2 \(failed\): kept: it can be resumed \(forge gate approve [0-9A-Z]+ && forge resume $T2\); forge gc --resumable removes it, and its work with it\$"
	[ -d "$wt2" ]
	run -0 forge gc --resumable
	assert_line "run $T2 (failed):"
	[ ! -e "$wt2" ]
	run -2 --separate-stderr forge gc extra
}

@test "forge gc skips a run whose branch is checked out, says so, and goes on with the others (exit 0, only what went counted)" {
	own_tmpdir
	run -0 forge merge "$T1"
	git worktree remove --force "$(run_worktree "$T1")"
	git switch -q "forge/$T1"	# the person looks at the run's branch
	sqlite3 "$FORGE_DB" "update runs set status = 'failed' where id = '$T2'"
	run -0 --separate-stderr forge gc --resumable
	assert_output "$(printf '%s\n' "run $T1 (merged):" \
		"kept branch forge/$T1: it is checked out in $REPO (switch that checkout to another branch, then forge gc)" \
		"run $T2 (failed):" "removed worktree $(run_worktree "$T2")" "deleted refs/heads/forge/$T2" \
		"deleted refs/forge/$T2/base" "removed 3 things of 1 run")"
	[ -z "$stderr" ]
	git rev-parse -q --verify "refs/heads/forge/$T1" >/dev/null
	git rev-parse -q --verify "refs/forge/$T1/base" >/dev/null
	[ -z "$(git for-each-ref "refs/forge/$T2" "refs/heads/forge/$T2")" ]
	git switch -q main
	run -0 forge gc
	assert_line "deleted refs/heads/forge/$T1"
}

@test "forge gc keeps a merged run whose branch has commits made since the merge" {
	own_tmpdir
	run -0 forge merge "$T1"
	wt="$(run_worktree "$T1")"
	echo "a follow-up" >>"$wt/README.md"
	git -C "$wt" commit -qam "follow-up on the run's branch"
	tip=$(git rev-parse "forge/$T1")
	run -0 forge gc
	assert_output "run $T1 (merged): kept: forge/$T1 has commits made since it was merged into main (git log main..forge/$T1); merge them or delete the branch (git branch -D forge/$T1), then forge gc"
	[ "$(git rev-parse "forge/$T1")" = "$tip" ]
	[ -d "$wt" ]
	git merge -q --ff-only "forge/$T1"	# merged now: it goes
	run -0 forge gc
	assert_line "deleted refs/heads/forge/$T1"
}

@test "forge gc leaves a run worktree the person locked (git worktree lock), saying why" {
	own_tmpdir
	run -0 forge merge "$T1"
	wt="$(run_worktree "$T1")"
	echo data >"$wt/bench.log"
	git worktree lock --reason "keep: benchmarking" "$wt"
	run -0 forge gc
	assert_output "$(printf '%s\n' "run $T1 (merged):" \
		"kept worktree $wt and branch forge/$T1: the worktree is locked (keep: benchmarking) (git worktree unlock $wt, then forge gc)")"
	[ -f "$wt/bench.log" ]
	git rev-parse -q --verify "refs/heads/forge/$T1" >/dev/null
	git worktree unlock "$wt"
	run -0 forge gc
	assert_line "removed worktree $wt"
}

# merge_deploy_run CONFIG STATUS: in a repository of its own with CONFIG as
# the user's config file, `forge run` of the mul task (run-clean.jsonl) ends
# with STATUS; t is its trace.
merge_deploy_run() {
	own_tmpdir
	calc_setup
	cd "$REPO"
	# (your own file: a repository's may not choose a merge over the default branch)
	mkdir -p "$XDG_CONFIG_HOME/forge"
	echo "$1" >"$XDG_CONFIG_HOME/forge/config.json"
	export FORGE_PROVIDER=replay FORGE_CASSETTE="$CASSETTES/run-clean.jsonl"
	run "-$2" forge run -q "add a mul operation" </dev/null
	t=$(forge history --json | jq -r "select(.task == \"add a mul operation\" and .trace_id != \"$T2\" and .trace_id != \"$T1\") | .trace_id")
}

@test "a merge deploy refused because main moved: the run stays mergeable (forge merge --no-ff) and forge gc keeps it" {
	merge_deploy_run '{"deploy":{"strategy":"merge","environment":"production"}}' 4
	echo more >>README.md && git commit -qam "the person keeps working on main"
	forge gate approve "$(forge gate list "$t" | awk '{print $1}')" >/dev/null
	run -1 forge resume -q "$t" </dev/null
	forge status --json "$t" | jq -e '.run.status == "failed" and .state.deployment.strategy == "merge"'
	# the next command lands it (before: forge resume, which refuses again for ever)
	run -0 forge show "$t"
	assert_line --regexp "^next +forge merge --no-ff $t\$"
	run -0 forge gc --dry-run
	assert_output "nothing to remove"
	git rev-parse -q --verify "forge/$t" >/dev/null
	run -2 --separate-stderr forge merge "$t"
	[[ $stderr == *"forge merge --no-ff $t makes a merge commit" ]]
	run -0 --separate-stderr forge merge --no-ff "$t"
	[ "$(git rev-parse main^2)" = "$(git rev-parse "forge/$t")" ]
	run -0 forge gc --dry-run
	assert_line "run $t (merged):"
}

@test "a merge deploy refused because the checkout was in the way (main not moved): next is a plain forge merge, a fast-forward" {
	merge_deploy_run '{"deploy":{"strategy":"merge","environment":"production"}}' 4
	echo "a local edit" >>README.md
	forge gate approve "$(forge gate list "$t" | awk '{print $1}')" >/dev/null
	run -1 forge resume -q "$t" </dev/null
	# (before: forge merge --no-ff, a merge commit though main never moved)
	run -0 forge show "$t"
	# (a command only, that a shell takes as it is: the why on its own line;
	# before: "forge merge T (once … the deploy's reason)", a syntax error)
	assert_line "next      forge merge $t"
	assert_line "why       once the checkout is clear: see the deploy's reason"
	git checkout -q README.md
	next=$(forge show "$t" | sed -n 's/^next  *//p')
	run -0 --separate-stderr bash -c "$next"
	[ "$(git rev-parse main)" = "$(git rev-parse "forge/$t")" ]
}

@test "a run its merge deploy landed is merged: next is forge gc, forge gc removes it, forge merge has nothing to do" {
	merge_deploy_run '{"deploy":{"strategy":"merge"}}' 0
	[ "$(git rev-parse main)" = "$(git rev-parse "forge/$t")" ]
	# (before: forge diff && forge merge, and forge gc kept it as unmerged)
	run -0 forge show "$t"
	assert_line --regexp "^next +forge gc\$"
	run -0 forge gc --dry-run
	assert_line "run $t (merged):"
	run -0 --separate-stderr forge merge "$t"
	assert_output "run $t is merged already"
}

@test "forge gc removes the live text of calls whose process is gone (another host's after a day)" {
	own_tmpdir
	now=$(date -u +%Y-%m-%dT%H:%M:%S.000Z)
	sqlite3 "$FORGE_DB" "insert into live_text (call_id, trace_id, pid, host, started_at, updated_at) values
		('dead', '$T1', 999999999, '$(hostname)', '$now', '$now'),
		('alive', '$T1', $$, '$(hostname)', '$now', '$now'),
		('far-old', '$T1', 1, 'elsewhere.invalid', '2020-01-01T00:00:00.000Z', '2020-01-01T00:00:00.000Z'),
		('far-new', '$T1', 1, 'elsewhere.invalid', '$now', '$now')"
	run -0 forge gc --dry-run
	assert_output "live text: would remove 2 rows of calls whose process is gone"
	[ "$(sqlite3 "$FORGE_DB" "select count(*) from live_text")" -eq 4 ]
	run -0 forge gc
	assert_output "live text: removed 2 rows of calls whose process is gone"
	[ "$(sqlite3 "$FORGE_DB" "select group_concat(call_id) from (select call_id from live_text order by call_id)")" = "alive,far-new" ]
	run -0 forge gc
	assert_output "nothing to remove"
}

@test "forge cancel removes the run's worktree; a branch without commits goes, uncommitted work is kept on a ref" {
	wt2="$(run_worktree "$T2")"
	echo "half done" >"$wt2/WIP"
	run -0 --separate-stderr forge cancel "${T2:0:20}"
	assert_line "cancelled $T2"
	assert_line "kept uncommitted changes on refs/forge/$T2/saved/1"
	assert_line "removed worktree $wt2"
	assert_line "deleted refs/heads/forge/$T2"
	[ ! -e "$wt2" ]
	[ "$(git show "refs/forge/$T2/saved/1:WIP")" = "half done" ]
	# gc then takes what is left
	run -0 forge gc
	assert_line "run $T2 (cancelled):"
	assert_line "deleted refs/forge/$T2/saved/1"
	[ -z "$(git for-each-ref "refs/forge/$T2")" ]
}

@test "forge cancel keeps a branch with commits (forge diff shows them; gc removes it)" {
	own_tmpdir
	wt2="$(run_worktree "$T2")"
	echo "a commit" >"$wt2/DONE"
	git -C "$wt2" add DONE && git -C "$wt2" commit -q -m done
	run -0 --separate-stderr forge cancel "$T2"
	assert_line "removed worktree $wt2"
	assert_line "kept branch forge/$T2: it has the run's commits (forge diff $T2; forge gc removes it)"
	run -0 forge diff --stat "$T2"
	assert_line --partial "DONE"
	run -0 forge show "$T2"
	assert_line "next      forge gc"
}

@test "once forge cancel or forge gc left nothing of a run, forge show names no forge gc to run (hunt59 #10)" {
	run -0 --separate-stderr forge cancel "$T2"
	assert_line "deleted refs/heads/forge/$T2"
	# (before: "next forge gc", and forge gc said "nothing to remove" for ever)
	run -0 forge show "$T2"
	refute_line --regexp "^next "
	assert_line "why       nothing is left to do: the run is cancelled and its worktree and branch are removed"
	run -0 forge merge "$T1"
	run -0 forge show "$T1"
	assert_line "next      forge gc"
	next=$(forge show "$T1" | sed -n 's/^next  *//p')
	run -0 bash -c "$next"
	assert_line "run $T1 (merged):"
	run -0 forge show "$T1"
	refute_line --regexp "^next "
	assert_line "why       nothing is left to do: the run is merged and its worktree and branch are removed"
}

@test "a cancelled run another host still holds: forge show and forge gc say when gc removes it, and it does then (hunt59 #8)" {
	now=$(date -u +%Y-%m-%dT%H:%M:%S.000Z)
	db_q "update runs set status = 'running', completed_at = null where id = '$T2';
		insert into leases (trace_id, holder, pid, host, program, acquired_at, renewed_at)
		values ('$T2', 'FAR', 4242, 'elsewhere.invalid', 'forge-supervisor', '$now', '$now')"
	run -0 --separate-stderr forge cancel "$T2"
	assert_line "cancelled $T2"
	wt2="$(run_worktree "$T2")"
	[ -d "$wt2" ]
	run -0 forge show "$T2"
	assert_line "next      forge gc"
	assert_line --regexp "^why       pid 4242 on elsewhere\.invalid still holds the run: forge gc removes its worktree and branch once that stops, or after [0-9]{2}:[0-9]{2}:[0-9]{2} if its host is gone$"
	# (before: "nothing to remove", the run never named)
	next=$(forge show "$T2" | sed -n 's/^next  *//p')
	run -0 bash -c "$next"
	assert_line --regexp "^run $T2 \(cancelled\): kept: pid 4242 on elsewhere\.invalid holds it still; forge gc removes it once that stops, or after [0-9]{2}:[0-9]{2}:[0-9]{2} if its host is gone$"
	[ -d "$wt2" ]
	# the time it named has come: this host saw the lease unrenewed that long
	db_q "update lease_sightings set seen_at = '$(date -u -d '-3 minutes' +%Y-%m-%dT%H:%M:%S.000Z)' where trace_id = '$T2'"
	run -0 bash -c "$next"
	assert_line "run $T2 (cancelled):"
	assert_line "removed worktree $wt2"
	[ ! -e "$wt2" ]
}

@test "--help of each command; bad usage exits 2" {
	for c in show diff merge gc clean report; do
		run -0 --separate-stderr forge "$c" --help
		[[ ${lines[0]} == "usage: forge-"* ]] || { echo "$c: ${lines[0]}"; false; }
	done
	run -0 forge --help
	for c in show diff merge gc clean report; do
		assert_line --regexp "^  $c +"
	done
	run -2 --separate-stderr forge show
	run -2 --separate-stderr forge show a b
	run -2 --separate-stderr forge merge --frobnicate "$T1"
	run -2 --separate-stderr forge report
}

@test "forge history on an 80-, 60- and 120-column terminal: no row wider, each header over its column, C1 blanked" {
	task="add a mul operation, $(printf '\xc2\x9b2J') carefully, $(printf 'and then some more words %.0s' 1 2 3 4)"
	sqlite3 "$FORGE_DB" "update runs set task = '$task' where id = '$T2'"
	SHOWN="$BATS_TEST_TMPDIR/terminal"
	test_python3
	for cols in 80 60 120; do
		run -0 on_tty --cols "$cols" -- forge history
		! grep -qF $'\xc2\x9b' "$SHOWN" || false
		"$TEST_PYTHON3" - "$SHOWN" "$cols" <<'PY'
import sys
lines = [l for l in open(sys.argv[1], encoding="utf-8").read().split("\n") if l]
cols = int(sys.argv[2])
head, rows = lines[0], lines[1:]
assert len(rows) == 2, lines
for l in lines:
    assert len(l) <= cols - 1, (cols, len(l), l)
for w in head.split():
    p = head.index(w)
    for r in rows:
        if w == "COST":     # right-aligned
            e = p + len(w) - 1
            assert r[e] != " " and (e + 1 == len(r) or r[e + 1] == " "), (w, r)
        else:
            assert r[p] != " " and (p == 0 or r[p - 1] == " "), (w, head, r)
PY
	done
}

@test "forge show's changes and forge diff --stat pad file names by columns: accented and wide names keep the counts in line" {
	wt="$(run_worktree "$T1")"
	git -C "$wt" checkout -q "forge/$T1" 2>/dev/null || true
	mkdir -p "$wt/docs"
	for f in plain.txt café.txt 説明書.md; do echo x >"$wt/docs/$f"; done
	git -C "$wt" add docs && git -C "$wt" commit -q -m docs
	test_python3
	for cmd in "forge show" "forge diff --stat"; do
		run -0 --separate-stderr $cmd "$T1"
		"$TEST_PYTHON3" - "$output" <<'PY'
import sys, unicodedata
def w(s): return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in s)
rows = [l for l in sys.argv[1].split("\n") if "docs/" in l and " +" in l]
assert len(rows) == 3, rows
at = {w(l[:l.rindex(" +")]) for l in rows}
assert len(at) == 1, rows
PY
	done
}

@test "forge show's changes and forge diff --stat: a name holding a newline or an escape is one entry, quoted as git quotes it" {
	wt="$(run_worktree "$T1")"
	git -C "$wt" checkout -q "forge/$T1" 2>/dev/null || true
	mkdir -p "$wt/docs"
	echo x >"$wt/docs/$(printf 'a\nM  b.txt')"
	echo y >"$wt/docs/$(printf 'c\033[2Jd.txt')"
	echo z >"$wt/docs/plain.txt"
	git -C "$wt" add docs && git -C "$wt" commit -q -m docs
	run -0 --separate-stderr forge show "$T1"
	# (before: "  A docs/a" and "M  b.txt  +1 -0" on two lines, one a made-up entry)
	grep -qE '^  A "docs/a\\nM  b\.txt" +\+1 -0$' <<<"$output"
	grep -qE '^  A "docs/c\\033\[2Jd\.txt" +\+1 -0$' <<<"$output"
	grep -qE '^  A docs/plain\.txt +\+1 -0$' <<<"$output"
	[ "$(grep -c 'b\.txt' <<<"$output")" -eq 1 ]
	run -0 --separate-stderr forge diff --stat "$T1"
	grep -qE '^ "docs/a\\nM  b\.txt" +\+1 -0$' <<<"$output"
	grep -qE '^ "docs/c\\033\[2Jd\.txt" +\+1 -0$' <<<"$output"
	[ "$(grep -c 'b\.txt' <<<"$output")" -eq 1 ]
	# the JSON keeps the names as they are
	run -0 forge show --json "$T1"
	jq -e '[.diff.files[].path] | index("docs/a\nM  b.txt") != null' <<<"$output"
}
