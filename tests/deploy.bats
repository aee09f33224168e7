#!/usr/bin/env bats
# deploy.bats - forge-deploy against real local targets: the fixture repo's
# branches (branch, merge with and without the base having moved), a bare
# repository as the push remote, and a health service on loopback
# (tests/helpers/health_server.py) switched unhealthy to force a rollback.
# Assertions are on files, markers, refs and exit codes, never on timing.
# Every run is detached from any terminal (setsid) so a gate never prompts.

bats_require_minimum_version 1.5.0

setup_file() {
	export BATS_TEST_TIMEOUT=120
	MODE="$BATS_FILE_TMPDIR/mode"
	export MODE
	BATS_NO_PARALLELIZE_WITHIN_FILE=true # the tests share the health server's mode
	load test_helper/python
	test_python3
	"$TEST_PYTHON3" "$BATS_TEST_DIRNAME/helpers/health_server.py" --port-file "$BATS_FILE_TMPDIR/port" \
		--mode-file "$MODE" --log "$BATS_FILE_TMPDIR/health.log" \
		2>"$BATS_FILE_TMPDIR/health.err" 3>&- &
	echo $! >"$BATS_FILE_TMPDIR/pid"
	for _ in $(seq 1200); do
		[ -s "$BATS_FILE_TMPDIR/port" ] || ! kill -0 $! 2>/dev/null && break
		sleep 0.05
	done
	HEALTH_URL="http://127.0.0.1:$(cat "$BATS_FILE_TMPDIR/port")/health"
	export HEALTH_URL
}

teardown_file() {
	kill "$(cat "$BATS_FILE_TMPDIR/pid")" 2>/dev/null || true
}

setup() {
	load test_helper/common
	forge_setup
	echo healthy >"$MODE"
	R="$BATS_TEST_TMPDIR/repo"
	from_template deploy "$R" deploy_repo
	{ read -r BASE && read -r TIP; } < <(git -C "$R" rev-parse main forge/t1)
	M="$BATS_TEST_TMPDIR/m"	# markers written by the commands
	mkdir -p "$M"
	CFG="$BATS_TEST_TMPDIR/config.json"
	config '{}'
	state
}

# deploy_repo DIR: the hello repository (make_repo) with the run's branch
# forge/t1, one commit on top of main; main checked out.
deploy_repo() {
	local r=$1
	make_repo_now "$r"
	git -C "$r" branch forge/t1
	git -C "$r" checkout -q forge/t1
	echo feature >"$r/feature.txt"
	git -C "$r" add feature.txt
	git -C "$r" commit -q -m feature
	git -C "$r" checkout -q main
}

# config JSON: the --config file (health checks fast; tools added by JSON).
# (config '{}', in every setup, is written without a jq: ~40 ms of CPU each.)
config() {
	if [ "$1" = '{}' ]; then
		echo '{"deploy":{"health":{"samples":3,"interval_s":0,"timeout_s":5}}}' >"$CFG"
		return
	fi
	jq -n --argjson extra "$1" '
	  {deploy:{health:{samples:3, interval_s:0, timeout_s:5}}} * $extra' >"$CFG"
}

# command_config [EXTRA]: the command strategy with marker-writing commands
# (they run in the sandbox: the marker dirs are made writable for them).
command_config() {
	jq -n --argjson extra "${1:-{\}}" --arg url "$HEALTH_URL" --arg m "$M" --arg f "$BATS_FILE_TMPDIR" '
	  {deploy:{strategy:"command", health:{samples:3, interval_s:0, timeout_s:5}},
	   sandbox:{writable:[$m, $f]},
	   tools:{deploy_command:("echo $FORGE_DEPLOY_PERCENT >>" + $m + "/steps"),
	          rollback_command:("touch " + $m + "/rolled_back"),
	          build_command:("touch " + $m + "/built"),
	          health_url:$url}} * $extra' >"$CFG"
}

# state [JQ-FILTER]: the input state (review approved, tests passed), changed by the filter.
state() {
	jq -nc --arg repo "$R" --arg base "$BASE" --arg tip "$TIP" '
	  ({kind:"state", v:1, trace_id:"t1", phase:"test", status:"ok",
	   task:{description:"add a feature", repo:$repo, base_ref:"main", branch:"forge/t1"},
	   changes:{files:[{path:"feature.txt", action:"create", additions:1, deletions:0}],
	            base_commit:$base, commit:$tip},
	   review:{findings:[], decision:"approve", risk:{level:"low", score:0.1}},
	   tests:{summary:{total:3, passed:3, failed:0}}}) | ('"${1:-.}"')' >"$BATS_TEST_TMPDIR/state.json"
}

# deploy ARGS: forge-deploy on the state, with no controlling terminal.
deploy() {
	setsid -w forge-deploy --config "$CFG" "$@" <"$BATS_TEST_TMPDIR/state.json"
}

final() { printf '%s\n' "$output" | tail -n 1; }
events() { printf '%s\n' "$output" | jq -c "select(.kind == \"event\" and .type == \"$1\") | .payload"; }
# event_ok TYPE FILTER [JQ-ARGS]: there are events of TYPE and FILTER holds for
# each one's payload (one jq where `events TYPE | jq -e FILTER` was two).
event_ok() {
	local t=$1 f=$2
	shift 2
	printf '%s\n' "$output" | jq -ne --arg t "$t" "$@" \
		"[inputs | select(.kind == \"event\" and .type == \$t) | .payload] | length > 0 and all(.[]; $f)"
}

# ---- guard and input ---------------------------------------------------------

@test "guard: a review that did not approve is skipped (exit 1), nothing runs" {
	command_config
	state '.review.decision = "request_changes"'
	run -1 --separate-stderr deploy
	final | jq -e '.status == "skipped" and .deployment.status == "skipped" and (.deployment.reason | test("did not approve"))'
	[ -n "$(events phase.skipped)" ]
	[ ! -e "$M/steps" ]
	[ ! -e "$M/built" ]
}

@test "guard: failed tests are skipped (exit 1)" {
	state '.tests.summary.failed = 2'
	run -1 --separate-stderr deploy
	final | jq -e '.status == "skipped" and (.deployment.reason | test("2 tests failed"))'
	[ "$(git -C "$R" rev-parse main)" = "$BASE" ]
}

@test "guard: a state without test results is skipped (exit 1)" {
	state 'del(.tests)'
	run -1 --separate-stderr deploy --strategy merge
	final | jq -e '.status == "skipped"'
	[ "$(git -C "$R" rev-parse main)" = "$BASE" ]
}

@test "guard: a state whose implement failed is skipped (exit 1) though its old review and tests passed" {
	# (forge-implement run again on a tested stream keeps review and tests)
	state '.phase = "implement" | .status = "failed" | .changes.validated = false'
	run -1 --separate-stderr deploy --strategy merge
	final | jq -e '.status == "skipped" and (.deployment.reason | test("implement phase ended .failed.*run forge-implement and the phases after it again"))'
	[ "$(git -C "$R" rev-parse main)" = "$BASE" ]
}

@test "guard: a test or review phase that ended rejected or escalated is skipped (exit 1) whatever its figures say; an approval passes it" {
	# (before: a test state rejected with 0 failed, or a review escalated
	# with decision approve, deployed)
	for ps in test:rejected test:escalated review:rejected review:escalated; do
		state ".phase = \"${ps%%:*}\" | .status = \"${ps#*:}\""
		run -1 --separate-stderr deploy --strategy merge
		final | jq -e --arg p "${ps%%:*}" --arg s "${ps#*:}" '.status == "skipped"
			and (.deployment.reason | contains("the input state'"'"'s \($p) phase ended '"'"'\($s)'"'"' and no one approved it"))'
		[ "$(git -C "$R" rev-parse main)" = "$BASE" ]
	done
	# a human's approval of the tests (tests.approved_by) is the override
	state '.status = "escalated" | .tests.approved_by = {"by": "human", "gate": "test_failure_escalation"}'
	run -0 --separate-stderr deploy --strategy merge
	final | jq -e '.status == "ok"'
	[ "$(git -C "$R" rev-parse main)" = "$TIP" ]
}

@test "guard: a review or test run of another commit than the changes name is skipped (exit 1)" {
	state '.review.commit = $base | .tests.commit = $tip'
	run -1 --separate-stderr deploy --strategy merge
	final | jq -e '.status == "skipped" and (.deployment.reason | test("review is of commit .*but the changes are now commit"))'
	state '.review.commit = $tip | .tests.commit = $base'
	run -1 --separate-stderr deploy --strategy merge
	final | jq -e '(.deployment.reason | test("test run is of commit"))'
	[ "$(git -C "$R" rev-parse main)" = "$BASE" ]
	state '.review.commit = $tip | .tests.commit = $tip'
	run -0 --separate-stderr deploy --strategy merge
	[ "$(git -C "$R" rev-parse main)" = "$TIP" ]
}

@test "input: a line of text before a stream's records is bad input (exit 2), nothing is deployed" {
	state '.tests.summary.failed = 1'
	run -2 --separate-stderr bash -c 'cd "$1" && { echo "note: artifact of job 42"; cat "$2"; } | setsid -w forge-deploy --config "$3" --strategy merge' _ "$R" "$BATS_TEST_TMPDIR/state.json" "$CFG"
	[[ "$stderr" == "forge-deploy: line 1: not a JSON record, but stream records follow (the first on line 2)"* ]]
	final | jq -e '.type == "input.rejected" and .payload.line == 1'
	[ "$(git -C "$R" rev-parse main)" = "$BASE" ]
}

@test "input: plain text alone is no task for forge-deploy (exit 2): working alone takes --no-input" {
	run -2 --separate-stderr bash -c 'cd "$1" && echo "404: Not Found" | setsid -w forge-deploy --config "$2" --strategy merge' _ "$R" "$CFG"
	[[ "$stderr" == "forge-deploy: line 1: plain text, not a JSON record: "*"--no-input" ]]
	[ "$(git -C "$R" rev-parse main)" = "$BASE" ]
}

@test "guard: {\"task\": …} or --task is a state with no review nor tests: skipped (exit 1), nothing runs" {
	# (before: taken as a run on the repository alone, the checkout built and deployed, healthy)
	command_config
	echo '{"task":"add a feature"}' >"$BATS_TEST_TMPDIR/state.json"
	cd "$R"
	run -1 --separate-stderr deploy
	final | jq -e '.status == "skipped" and .deployment.status == "skipped"
	  and .deployment.reason == "no review in the state: deploy needs an approved review"'
	[ -n "$(events phase.skipped)" ]
	run -1 --separate-stderr setsid -w forge-deploy --config "$CFG" --task "add a feature" </dev/null
	final | jq -e '.status == "skipped" and (.deployment.reason | test("no review in the state"))'
	[ ! -e "$M/steps" ]
	[ ! -e "$M/built" ]
}

@test "guard: a state that names no run branch (made from a diff) is skipped (exit 1), forced or not" {
	# (before: review invented task.branch forge/TRACE, never made, and the
	# deploy failed as if git had: exit 5)
	cd "$R"
	echo more >>README
	run -1 --separate-stderr bash -c 'git diff | forge-review -q | forge-test -q --command true | setsid -w forge-deploy --config "$1"' _ "$CFG"
	final | jq -e '.status == "skipped" and .review.decision == "approve" and .tests.summary.failed == 0
	  and (.task | has("branch") | not) and .task.description == "forge-review of the diff on stdin"
	  and (.deployment.reason | startswith("the state names no run branch (task.branch)"))'
	[[ "$stderr" == *"to deploy the checkout, run forge-deploy --no-input" ]]
	state 'del(.task.branch) | .review.decision = "require_human"'
	run -1 --separate-stderr deploy --strategy merge --force
	final | jq -e '.status == "skipped" and (.deployment.reason | test("no run branch"))'
	[ -z "$(events deploy.forced)" ]
	[ "$(git -C "$R" rev-parse main)" = "$BASE" ]
}

@test "guard: --force (a human overrode the no) deploys anyway, with a deploy.forced event" {
	state '.review.decision = "require_human"'
	run -0 --separate-stderr deploy --strategy merge --force
	event_ok deploy.forced '.guard | test("did not approve")'
	[ "$(git -C "$R" rev-parse main)" = "$TIP" ]
}

@test "guard: --force never passes the production gate" {
	command_config '{"deploy":{"environment":"production"}}'
	state '.tests.summary.failed = 1'
	run -4 --separate-stderr deploy --force
	[ ! -e "$M/steps" ]
}

@test "bad input: a malformed line exits 2 with input.rejected, after forwarding what came before" {
	printf '%s\n' '{"kind":"event","id":"01JDB3V2Q5W8X7Y6Z5A4B3C2D1","trace_id":"t1","ts":"2026-11-21T21:30:00.123Z","source":"x","type":"a.b","payload":{}}' \
		'{"kind":"state", broken' >"$BATS_TEST_TMPDIR/state.json"
	run -2 --separate-stderr deploy
	[[ "$stderr" == *"line 2"* ]]
	printf '%s\n' "$output" | head -n 1 | jq -e '.type == "a.b"'
	[ -n "$(events input.rejected)" ]
}

@test "usage: an unknown strategy or risk is a usage error (exit 2)" {
	run -2 --separate-stderr deploy --strategy teleport
	[[ "$stderr" == *"teleport"* ]]
	run -2 --separate-stderr deploy --risk extreme
}

# ---- branch, merge, push ------------------------------------------------------

@test "branch (default): reports the run's branch and tip, moves nothing" {
	run -0 --separate-stderr deploy
	final | jq -e --arg tip "$TIP" '.status == "ok" and .deployment.status == "healthy"
	  and .deployment.strategy == "branch" and .deployment.ref == "forge/t1" and .deployment.commit == $tip'
	[ "$(git -C "$R" rev-parse main)" = "$BASE" ]
}

@test "branch: run on the repository alone (--no-input) reports the checkout's branch" {
	: >"$BATS_TEST_TMPDIR/state.json"
	cd "$R"
	run -0 --separate-stderr deploy --no-input
	final | jq -e --arg base "$BASE" '.deployment.ref == "main" and .deployment.commit == $base'
}

@test "branch: alone on a detached HEAD there is no branch to deploy: skipped (exit 1); the command strategy runs" {
	cd "$R"
	git checkout -q --detach
	: >"$BATS_TEST_TMPDIR/state.json"
	run -1 --separate-stderr deploy --no-input
	final | jq -e --arg r "$R" '.status == "skipped" and .deployment.status == "skipped" and .deployment.reason ==
	  "HEAD of '"'\\(\$r)'"' is not on a branch: nothing for the '"'branch'"' strategy to deploy (check out a branch, or use --strategy command)"'
	command_config
	run -0 --separate-stderr deploy --no-input
	[ -e "$M/built" ]
}

@test "alone on a branch with no commits yet (fresh git init, orphan branch): skipped (exit 1), not failed" {
	# (before: "failed: the run's branch 'main' is not there", exit 5)
	: >"$BATS_TEST_TMPDIR/state.json"
	N="$BATS_TEST_TMPDIR/new"
	git init -q -b main "$N"
	echo hello >"$N/README"
	cd "$N"
	for s in branch merge push; do
		run -1 --separate-stderr deploy --no-input --strategy "$s" --remote "$R"
		final | jq -e --arg r "$N" --arg s "$s" '.status == "skipped" and .deployment.status == "skipped"
		  and .deployment.reason == "branch '"'main'"' of '"'\(\$r)'"' has no commits yet: nothing for the '"'\(\$s)'"' strategy to deploy (commit first, or use --strategy command)"'
		[[ "$stderr" != *"is not there"* ]]
	done
	# an orphan branch of a repository with commits
	cd "$R"
	git checkout -q --orphan fresh
	run -1 --separate-stderr deploy --no-input
	final | jq -e '.deployment.reason | startswith("branch '"'fresh'"' of ")'
	# the command strategy deploys the working tree: it runs
	command_config
	run -0 --separate-stderr deploy --no-input
	[ -e "$M/built" ]
}

@test "an empty stdin is bad input (exit 2): nothing is deployed" {
	command_config
	: >"$BATS_TEST_TMPDIR/state.json"
	cd "$R"
	run -2 --separate-stderr deploy --strategy command
	[ "$stderr" = "forge-deploy: empty input: expected a state on stdin; to work on the repository alone, pass --no-input" ]
	jq -se 'length == 1 and (.[0] | .type == "input.rejected"
	  and .payload.reason == "empty input: expected a state on stdin; to work on the repository alone, pass --no-input")' <<<"$output"
	[ ! -e "$M/steps" ]
	[ ! -e "$M/built" ]
	[ "$(git -C "$R" rev-parse main)" = "$BASE" ]
}

@test "merge: fast-forwards the base branch and the checkout" {
	run -0 --separate-stderr deploy --strategy merge
	final | jq -e --arg tip "$TIP" '.deployment.status == "healthy" and .deployment.strategy == "merge"
	  and .deployment.ref == "refs/heads/main" and .deployment.commit == $tip and .deployment.base_moved == false'
	[ "$(git -C "$R" rev-parse main)" = "$TIP" ]
	[ -f "$R/feature.txt" ]
	# the run's merge into its base: recorded as forge merge records it (forge gc, next)
	event_ok run.merged '.branch == "main" and .commit == $tip and .how == "deploy" and .run_branch == "forge/t1"' \
		--arg tip "$TIP"
}

@test "merge: refused (exit 1) when the base moved and the branch no longer fast-forwards it" {
	echo other >"$R/other.txt"
	git -C "$R" add other.txt
	git -C "$R" commit -q -m "someone else's change"
	moved=$(git -C "$R" rev-parse main)
	run -1 --separate-stderr deploy --strategy merge
	final | jq -e '.status == "rejected" and .deployment.status == "skipped" and (.deployment.reason | test("moved"))'
	event_ok deploy.base_moved '.to == $to and .base == "main"' --arg to "$moved"
	[ "$(git -C "$R" rev-parse main)" = "$moved" ]
	[ ! -e "$R/feature.txt" ]
}

@test "merge: uncommitted changes in the checkout are in the way, as untracked files are: rejected (exit 1), not a failed dependency" {
	echo "a local edit" >>"$R/README"
	run -1 --separate-stderr deploy --strategy merge
	final | jq -e '.status == "rejected" and .deployment.status == "skipped" and (.deployment.reason | test("uncommitted changes"))'
	[ "$(git -C "$R" rev-parse main)" = "$BASE" ]
	grep -q "a local edit" "$R/README"
}

# half_merged: the run's branch also edits README and adds two files;
# the checkout as a merge deploy killed while it wrote them leaves it (the
# index main's, README and one new file the run's, the other not written
# yet), beside the person's untracked notes.
half_merged() {
	git -C "$R" checkout -q forge/t1
	echo "hello, edited" >"$R/README"
	mkdir -p "$R/gen"
	echo one >"$R/gen/one.txt"
	echo two >"$R/gen/two.txt"
	git -C "$R" add README gen
	git -C "$R" commit -q -m "more"
	git -C "$R" checkout -q main
	TIP=$(git -C "$R" rev-parse forge/t1)
	state
	echo "hello, edited" >"$R/README"
	mkdir -p "$R/gen"
	echo one >"$R/gen/one.txt"
	echo feature >"$R/feature.txt"
	echo "my notes" >"$R/notes.txt"
}

@test "merge: a merge deploy killed while it updated the checkout is finished by the next one; the person's files are kept" {
	half_merged
	run -0 --separate-stderr deploy --strategy merge
	final | jq -e --arg tip "$TIP" '.deployment.status == "healthy" and .deployment.commit == $tip'
	[ "$(git -C "$R" rev-parse main)" = "$TIP" ]
	[ -z "$(git -C "$R" status --porcelain --untracked-files=no)" ]
	[ "$(cat "$R/gen/two.txt")" = two ]
	[ "$(cat "$R/notes.txt")" = "my notes" ]
}

@test "merge: the run's new file already written (untracked) by a merge deploy killed mid-way is no file in the way" {
	echo feature >"$R/feature.txt"
	run -0 --separate-stderr deploy --strategy merge
	[ "$(git -C "$R" rev-parse main)" = "$TIP" ]
	[ -z "$(git -C "$R" status --porcelain)" ]
}

@test "merge: a half-updated checkout with a change of the person's among the run's files is refused (exit 1), nothing moves" {
	half_merged
	echo "mine" >"$R/gen/two.txt"
	run -1 --separate-stderr deploy --strategy merge
	final | jq -e '.status == "rejected" and (.deployment.reason | test("uncommitted changes"))'
	[ "$(cat "$R/gen/two.txt")" = mine ]
	# a file that is the start of the run's is the person's too (they may
	# have cut it so; before, taken for one the killed merge was writing,
	# and overwritten)
	printf tw >"$R/gen/two.txt"
	run -1 --separate-stderr deploy --strategy merge
	final | jq -e '.status == "rejected" and (.deployment.reason | test("uncommitted changes"))'
	[ "$(cat "$R/gen/two.txt")" = tw ]
	[ "$(cat "$R/README")" = "hello, edited" ]
	rm "$R/gen/two.txt"
	echo "hello, mine" >"$R/README"
	run -1 --separate-stderr deploy --strategy merge
	final | jq -e '.status == "rejected" and (.deployment.reason | test("uncommitted changes"))'
	[ "$(cat "$R/README")" = "hello, mine" ]
	[ "$(git -C "$R" rev-parse main)" = "$BASE" ]
}

# merge_race_setup: a second run's branch forge/t2 from main too, with
# another file (other.txt); the states of both runs in $S1 and $S2; the
# preloaded pause (pause_preload).
merge_race_setup() {
	pause_preload
	git -C "$R" checkout -q -b forge/t2 main
	echo other >"$R/other.txt"
	git -C "$R" add other.txt
	git -C "$R" commit -q -m other
	git -C "$R" checkout -q main
	TIP2=$(git -C "$R" rev-parse forge/t2)
	S1="$BATS_TEST_TMPDIR/state1.json"
	S2="$BATS_TEST_TMPDIR/state2.json"
	cp "$BATS_TEST_TMPDIR/state.json" "$S1"
	TIP=$TIP2 state '.trace_id = "t2" | .task.branch = "forge/t2" | .changes.files[0].path = "other.txt"'
	cp "$BATS_TEST_TMPDIR/state.json" "$S2"
}

# deploy_paused STATE OUT: a merge deploy in the background ($!) that stops
# at the first file it writes in the checkout until $PAUSE/go; waits until
# it has stopped there.
deploy_paused() {
	LD_PRELOAD="$PAUSE_SO" FORGE_PAUSE_DIR="$PAUSE" FORGE_PAUSE_UNDER="$(cd "$R" && pwd -P)/" \
		setsid -w forge-deploy --config "$CFG" --strategy merge <"$1" >"$2" 2>"$2.err" &
	PAUSED=$!
	until_signal "$PAUSE/paused" "$PAUSED"
	[ -e "$PAUSE/paused" ]
}

@test "merge: two merge deploys at once: the second waits for the first's checkout and branch move, then is refused as diverged (mergeable); the checkout holds the first's files, nothing staged" {
	merge_race_setup
	deploy_paused "$S1" "$BATS_TEST_TMPDIR/out1"
	p1=$PAUSED
	LD_PRELOAD="$PAUSE_SO" FORGE_PAUSE_DIR="$PAUSE" setsid -w forge-deploy --config "$CFG" --strategy merge \
		<"$S2" >"$BATS_TEST_TMPDIR/out2" 2>"$BATS_TEST_TMPDIR/out2.err" &
	p2=$!
	# it waits for the merge lock (before the fix it went on: its merge
	# landed while the first's checkout was half-written)
	until_signal "$PAUSE/waiting" "$p2"
	touch "$PAUSE/go"
	rc1=0; wait "$p1" || rc1=$?
	rc2=0; wait "$p2" || rc2=$?
	# (before: the first failed, exit 5, "old reference value does not
	# match", its feature.txt staged and other.txt staged as deleted)
	[ "$rc1" = 0 ] || { cat "$BATS_TEST_TMPDIR/out1.err"; false; }
	[ "$rc2" = 1 ]
	tail -n 1 "$BATS_TEST_TMPDIR/out1" | jq -e --arg tip "$TIP" '.deployment.status == "healthy" and .deployment.commit == $tip'
	tail -n 1 "$BATS_TEST_TMPDIR/out2" | jq -e '.status == "rejected" and .deployment.diverged == true
	  and (.deployment.reason | test("moved since the run started"))'
	[ "$(git -C "$R" rev-parse main)" = "$TIP" ]
	[ -z "$(git -C "$R" status --porcelain)" ]
	[ -f "$R/feature.txt" ] && [ ! -e "$R/other.txt" ]
}

@test "merge: the base branch moved by git while a merge deploy wrote the checkout: the checkout is put back, rejected (diverged), not failed" {
	merge_race_setup
	deploy_paused "$S1" "$BATS_TEST_TMPDIR/out1"
	git -C "$R" update-ref refs/heads/main "$TIP2" "$BASE"	# (a git push into this clone, say)
	touch "$PAUSE/go"
	rc=0; wait "$PAUSED" || rc=$?
	[ "$rc" = 1 ] || { cat "$BATS_TEST_TMPDIR/out1.err"; false; }
	tail -n 1 "$BATS_TEST_TMPDIR/out1" | jq -e '.status == "rejected" and .deployment.diverged == true
	  and (.deployment.reason | test("moved while .* was updated for it .*nothing changed: merge again"))'
	[ "$(git -C "$R" rev-parse main)" = "$TIP2" ]
	# the files and the index as they were: main's before it moved
	[ ! -e "$R/feature.txt" ]
	[ "$(git -C "$R" write-tree)" = "$(git -C "$R" rev-parse "$BASE^{tree}")" ]
	[ -z "$(git -C "$R" status --porcelain --untracked-files=all | grep -v '^D  other.txt$')" ]
}

@test "merge: the base moved but the branch still fast-forwards it: merged, base_moved reported" {
	# main moves on; the run's branch is rebuilt on top of it (base_commit stays the old one).
	echo other >"$R/other.txt"
	git -C "$R" add other.txt
	git -C "$R" commit -q -m "someone else's change"
	git -C "$R" branch -f forge/t1 main
	git -C "$R" checkout -q forge/t1
	echo feature >"$R/feature.txt"
	git -C "$R" add feature.txt
	git -C "$R" commit -q -m feature
	git -C "$R" checkout -q main
	tip=$(git -C "$R" rev-parse forge/t1)
	TIP=$tip state	# the rebuilt branch is what review and test saw
	run -0 --separate-stderr deploy --strategy merge
	final | jq -e --arg tip "$tip" '.deployment.commit == $tip and .deployment.base_moved == true'
	[ -n "$(events deploy.base_moved)" ]
	[ "$(git -C "$R" rev-parse main)" = "$tip" ]
}

@test "merge: into the branch the run started from (task.base_branch), not the one checked out now" {
	# the run started from HEAD on main; the person has switched to a side branch since
	state '.task.base_ref = "HEAD" | .task.base_branch = "main"'
	git -C "$R" switch -q -c experiment
	run -0 --separate-stderr deploy --strategy merge
	final | jq -e --arg tip "$TIP" '.deployment.status == "healthy" and .deployment.ref == "refs/heads/main"
	  and .deployment.commit == $tip'
	[ "$(git -C "$R" rev-parse main)" = "$TIP" ]
	[ "$(git -C "$R" rev-parse experiment)" = "$BASE" ]
	[ ! -e "$R/feature.txt" ]	# experiment's files are left alone
}

@test "merge: a base branch checked out in a linked worktree moves with that worktree's files; the main checkout is untouched" {
	git -C "$R" worktree add -q -b feat "$BATS_TEST_TMPDIR/feat"
	state '.task.base_ref = "HEAD" | .task.base_branch = "feat"'
	run -0 --separate-stderr deploy --strategy merge
	final | jq -e --arg tip "$TIP" '.deployment.status == "healthy" and .deployment.ref == "refs/heads/feat"
	  and .deployment.commit == $tip'
	[ "$(git -C "$R" rev-parse feat)" = "$TIP" ]
	[ "$(git -C "$R" rev-parse main)" = "$BASE" ]
	[ -f "$BATS_TEST_TMPDIR/feat/feature.txt" ]
	[ -z "$(git -C "$BATS_TEST_TMPDIR/feat" status --porcelain)" ]
	[ ! -e "$R/feature.txt" ]
}

@test "merge: a linked worktree with uncommitted changes on the base branch is in the way: rejected (exit 1), nothing moves" {
	git -C "$R" worktree add -q -b feat "$BATS_TEST_TMPDIR/feat"
	echo "a local edit" >>"$BATS_TEST_TMPDIR/feat/README"
	state '.task.base_ref = "HEAD" | .task.base_branch = "feat"'
	run -1 --separate-stderr deploy --strategy merge
	final | jq -e '.status == "rejected" and (.deployment.reason | test("uncommitted changes"))'
	[ "$(git -C "$R" rev-parse feat)" = "$BASE" ]
	grep -q "a local edit" "$BATS_TEST_TMPDIR/feat/README"
}

@test "merge: in a shallow clone whose base did not move: fast-forwarded (the history past the cut is not needed)" {
	# history the clone cuts off: main has parents, forge/t1 one commit on top
	for i in 1 2; do
		echo "$i" >>"$R/README"
		git -C "$R" commit -q -am "c$i"
	done
	git -C "$R" branch -f forge/t1 main
	git -C "$R" checkout -q forge/t1
	echo feature >"$R/feature.txt"
	git -C "$R" add feature.txt
	git -C "$R" commit -q -m feature
	git -C "$R" checkout -q main
	S="$BATS_TEST_TMPDIR/shallow"
	git clone -q --depth 1 "file://$R" "$S"
	git -C "$S" fetch -q --depth 2 origin forge/t1:forge/t1
	git -C "$S" rev-parse --is-shallow-repository | grep -qx true
	{ read -r BASE && read -r TIP; } < <(git -C "$S" rev-parse main forge/t1)
	R=$S state
	run -0 --separate-stderr deploy --strategy merge
	final | jq -e --arg tip "$TIP" '.deployment.status == "healthy" and .deployment.commit == $tip
	  and .deployment.base_moved == false'
	[ "$(git -C "$S" rev-parse main)" = "$TIP" ]
	[ -f "$S/feature.txt" ]
}

@test "push: to a local bare repository given by --remote" {
	git init -q --bare "$BATS_TEST_TMPDIR/remote.git"
	run -0 --separate-stderr deploy --strategy push --remote "$BATS_TEST_TMPDIR/remote.git"
	final | jq -e --arg url "$BATS_TEST_TMPDIR/remote.git" '.deployment.status == "healthy"
	  and .deployment.url == $url and .deployment.ref == "refs/heads/forge/t1"'
	[ "$(git -C "$BATS_TEST_TMPDIR/remote.git" rev-parse refs/heads/forge/t1)" = "$TIP" ]
}

@test "push: to the configured remote (deploy.remote, a named remote)" {
	git init -q --bare "$BATS_TEST_TMPDIR/remote.git"
	git -C "$R" remote add origin "$BATS_TEST_TMPDIR/remote.git"
	config '{"deploy":{"strategy":"push","remote":"origin"}}'
	run -0 --separate-stderr deploy
	[ "$(git -C "$BATS_TEST_TMPDIR/remote.git" rev-parse refs/heads/forge/t1)" = "$TIP" ]
}

# hook REMOTE NAME SCRIPT: hooks/NAME of the bare repository REMOTE.
hook() {
	printf '#!/bin/sh\n%s\n' "$3" >"$1/hooks/$2"
	chmod +x "$1/hooks/$2"
}

@test "push: a local remote's pre-receive hook declines (as for git push): failed (exit 5) with its message, nothing pushed" {
	local rem=$BATS_TEST_TMPDIR/remote.git
	git init -q --bare "$rem"
	hook "$rem" pre-receive 'echo "policy: pushes to this repository are frozen" >&2; exit 1'
	run -5 --separate-stderr deploy --strategy push --remote "file://$rem"
	[[ "$stderr" == *"'refs/heads/forge/t1' rejected: pre-receive hook declined (the remote said: policy: pushes to this repository are frozen)"* ]]
	final | jq -e '.status == "failed" and .deployment.status != "healthy"
	  and (.deployment.reason | contains("pre-receive hook declined"))'
	[ -z "$(git -C "$rem" for-each-ref)" ]
}

@test "push: a local remote's post-receive hook runs (a push-to-deploy remote), without the model keys" {
	local rem=$BATS_TEST_TMPDIR/remote.git
	git init -q --bare "$rem"
	hook "$rem" post-receive "cat >'$M/received'; env >'$M/env'"
	git -C "$R" remote add origin "$rem"
	config '{"deploy":{"strategy":"push","remote":"origin"}}'
	ANTHROPIC_API_KEY=sk-ant-not-for-hooks run -0 --separate-stderr deploy
	final | jq -e '.deployment.status == "healthy"'
	[ "$(cut -d' ' -f2- "$M/received")" = "$TIP refs/heads/forge/t1" ]
	! grep -q ANTHROPIC_API_KEY "$M/env"
}

@test "push: to a local remote without git on PATH fails (exit 5): its hooks cannot run, nothing pushed" {
	local rem=$BATS_TEST_TMPDIR/remote.git fd
	git init -q --bare "$rem"
	fd=$(command -v forge-deploy)
	run -5 --separate-stderr setsid -w env PATH=/nonexistent "$fd" --config "$CFG" --strategy push --remote "$rem" \
		<"$BATS_TEST_TMPDIR/state.json"
	[[ "$stderr" == *"git is not on PATH (a push to a repository on this machine goes through git receive-pack, which runs its hooks)"* ]]
	[ -z "$(git -C "$rem" for-each-ref)" ]
}

@test "push: a deploy that failed (remote not there yet) runs again on its own failed state once the remote is there" {
	local rem=$BATS_TEST_TMPDIR/remote.git
	run -5 --separate-stderr deploy --strategy push --remote "$rem"
	final >"$BATS_TEST_TMPDIR/state.json"
	final | jq -e '.phase == "deploy" and .status == "failed"'
	git init -q --bare "$rem"
	# (what forge resume and a retry hand it: before, skipped for ever as an unfinished phase)
	run -0 --separate-stderr deploy --strategy push --remote "$rem"
	final | jq -e '.status == "ok" and .deployment.status == "healthy"'
	[ "$(git -C "$rem" rev-parse refs/heads/forge/t1)" = "$TIP" ]
	# a skipped deploy never looked at its input: it stays skipped
	state '.phase = "deploy" | .status = "skipped"'
	run -1 --separate-stderr deploy --strategy push --remote "$rem"
	final | jq -e '.status == "skipped" and (.deployment.reason | test("deploy phase ended .skipped."))'
}

@test "push: no remote configured fails (exit 5) with a message naming deploy.remote" {
	run -5 --separate-stderr deploy --strategy push
	[[ "$stderr" == *"deploy.remote"* ]]
	final | jq -e '.status == "failed" and .deployment.status == "skipped"'
}

@test "push: a declining hook's escape sequences never reach the terminal (stderr); the state keeps its words" {
	local rem=$BATS_TEST_TMPDIR/remote.git
	git init -q --bare "$rem"
	# an OSC title change, a clear screen and an OSC 52 clipboard write
	hook "$rem" pre-receive 'printf "nope \033]0;PWNED\007\033[2J\033]52;c;ZXZpbA==\007\n"; exit 1'
	run -5 --separate-stderr deploy --strategy push --remote "$rem"
	[[ "$stderr" == *"forge-deploy: failed: "*"(the remote said: nope "*"PWNED"*")"* ]]
	[[ "$stderr" != *$'\033'* && "$stderr" != *$'\007'* ]]
	final | jq -e '.status == "failed" and (.deployment.reason | contains("nope \u001b]0;PWNED\u0007"))'
	[ -z "$(git -C "$rem" for-each-ref)" ]
}

@test "push: a remote path that does not exist fails (exit 5) saying so, not 'unsupported URL protocol'" {
	run -5 --separate-stderr deploy --strategy push --remote "$BATS_TEST_TMPDIR/no-such.git"
	[[ "$stderr" == *"forge-deploy: failed: cannot push 'forge/t1' to '$BATS_TEST_TMPDIR/no-such.git': no such remote, and the path '$BATS_TEST_TMPDIR/no-such.git' does not exist"* ]]
	[[ "$stderr" != *"unsupported URL protocol"* ]]
	final | jq -e '.status == "failed" and (.deployment.reason | contains("does not exist"))'
}

@test "input: a state naming no worktree and --repo an unrelated repository: bad input (exit 2) naming both, never '(null)'" {
	local o=$BATS_TEST_TMPDIR/other
	git init -q -b main "$o"
	echo x >"$o/x"
	git -C "$o" add x
	git -C "$o" commit -qm other
	run -2 --separate-stderr deploy --repo "$o" --strategy merge
	[[ "$stderr" == *"forge-deploy: the input state names no worktree for the run (branch forge/t1), which is of the repository $R, and --repo $o is neither that repository nor a clone of it"* ]]
	[[ "$stderr" != *"(null)"* ]]
	final | jq -e '.type == "input.rejected"'
	[ "$(git -C "$R" rev-parse main)" = "$BASE" ]
	[ "$(git -C "$o" rev-parse --abbrev-ref HEAD)" = main ]
}

# ---- command: canary, health, rollback -----------------------------------------

@test "command: low risk deploys directly (100) after the build, healthy (exit 0)" {
	command_config
	run -0 --separate-stderr deploy
	[ -e "$M/built" ]
	[ "$(cat "$M/steps")" = "100" ]
	[ ! -e "$M/rolled_back" ]
	final | jq -e --arg url "$HEALTH_URL" '.deployment.status == "healthy" and .deployment.strategy == "command"
	  and .deployment.url == $url and (.deployment.steps | length) == 1
	  and .deployment.steps[0].percent == 100 and .deployment.steps[0].ok == true
	  and .deployment.steps[0].health.samples == 3 and .deployment.steps[0].health.errors == 0
	  and (.deployment.steps[0].started_at | type) == "string"
	  and (.deployment.steps[0].duration_ms | type) == "number"
	  and (.deployment.steps[0].health | has("p50_ms") and has("p95_ms") and has("error_rate"))
	  and .deployment.metrics.samples == 3 and .deployment.metrics.error_rate == 0'
}

@test "command: medium risk canary 5 -> 25 -> 100 with FORGE_DEPLOY_PERCENT" {
	command_config
	state '.review.risk.level = "medium"'
	run -0 --separate-stderr deploy
	[ "$(tr '\n' ' ' <"$M/steps")" = "5 25 100 " ]
	final | jq -e '[.deployment.steps[].percent] == [5, 25, 100] and all(.deployment.steps[]; .ok)'
}

@test "command: the same run's commit deployed again (a resume after a crash before the checkpoint) is not deployed twice" {
	command_config
	run -0 --separate-stderr deploy
	[ "$(tr '\n' ' ' <"$M/steps")" = "100 " ]
	first=$(final | jq -c '.deployment')
	# (the supervisor killed after forge-deploy ended, before its checkpoint:
	# the resume runs it again on the same state; before: it deployed again)
	run -0 --separate-stderr deploy
	[ "$(tr '\n' ' ' <"$M/steps")" = "100 " ]
	final | jq -e --argjson d "$first" '.status == "ok" and .deployment == $d'
	event_ok phase.completed '.reason | endswith("(deployed before the run was interrupted: not deployed again)")'
	event_ok deploy.done_before '.commit == $tip' --arg tip "$TIP"
	# another commit of the run is deployed
	state '.changes.commit = "'"$BASE"'"'
	run -0 --separate-stderr deploy
	[ "$(tr '\n' ' ' <"$M/steps")" = "100 100 " ]
}

@test "command: a rolled-back deploy is tried again by the next forge-deploy of the same commit" {
	command_config '{"tools":{"health_url":"http://127.0.0.1:9/health"}}'
	run -1 --separate-stderr deploy
	[ -e "$M/rolled_back" ]
	rm "$M/rolled_back"
	run -1 --separate-stderr deploy
	[ -e "$M/rolled_back" ]
	[ "$(tr '\n' ' ' <"$M/steps")" = "100 100 " ]
}

@test "command: high risk canary 5 -> 10 -> 25 -> 50 -> 100 (the plan's risk counts)" {
	command_config
	state '.plan = {summary:"s", tasks:[], risk:{level:"high"}}'
	run -0 --separate-stderr deploy
	[ "$(tr '\n' ' ' <"$M/steps")" = "5 10 25 50 100 " ]
}

@test "command: unhealthy at 25% runs the rollback command: rolled_back, exit 1" {
	command_config "$(jq -nc --arg m "$M" --arg mode "$MODE" '{tools:{
	  deploy_command:("echo $FORGE_DEPLOY_PERCENT >>" + $m + "/steps; if [ $FORGE_DEPLOY_PERCENT = 25 ]; then echo 500 >" + $mode + "; fi"),
	  rollback_command:("echo rollback >" + $m + "/rolled_back; echo healthy >" + $mode)}}')"
	state '.review.risk.level = "medium"'
	run -1 --separate-stderr deploy
	[ "$(cat "$M/rolled_back")" = "rollback" ]
	[ "$(tr '\n' ' ' <"$M/steps")" = "5 25 " ]
	final | jq -e '.status == "rejected" and .deployment.status == "rolled_back"
	  and [.deployment.steps[].ok] == [true, false]
	  and .deployment.steps[1].health.errors == 3 and .deployment.steps[1].health.error_rate == 1
	  and .deployment.metrics.rolled_back == true'
	printf '%s\n' "$output" | jq -ne '[inputs | select(.kind == "event")] |
	  any(.type == "deploy.unhealthy") and ([.[] | select(.type == "deploy.command" and .payload.command == "rollback")] | length == 1)'
	# remembered as production feedback (confidence 0.9) that the next run on this code recalls
	events memory.stored | jq -e '.source == "production"'
	run -0 forge memory search --json "add a feature"
	printf '%s\n' "$output" | jq -se --arg tip "${TIP:0:12}" 'map(.memory | select(.source == "production")) | length == 1
	  and (.[0].confidence == 0.9) and (.[0].episode.trace_id == "t1")
	  and (.[0].content | contains("A deploy to staging was rolled back after the deploy of run t1")
	       and contains("commit " + $tip) and contains("feature.txt") and contains("unhealthy"))'
}

@test "command: a slow service (latency over the limit) is rolled back" {
	command_config '{"deploy":{"health":{"latency_ms_max":200,"samples":1}}}'
	echo slow:1500 >"$MODE"
	run -1 --separate-stderr deploy
	[ -e "$M/rolled_back" ]
	final | jq -e '.deployment.status == "rolled_back" and .deployment.steps[0].health.errors == 0'
}

@test "command: an unreachable health URL is unhealthy and rolled back" {
	command_config '{"tools":{"health_url":"http://127.0.0.1:9/health"}}'
	run -1 --separate-stderr deploy
	[ -e "$M/rolled_back" ]
	final | jq -e '.deployment.status == "rolled_back" and .deployment.steps[0].health.errors == 3'
}

@test "command: a failing deploy command is rolled back without a health check" {
	command_config "$(jq -nc --arg m "$M" '{tools:{deploy_command:("echo $FORGE_DEPLOY_PERCENT >>" + $m + "/steps; exit 3")}}')"
	run -1 --separate-stderr deploy
	[ -e "$M/rolled_back" ]
	final | jq -e '.deployment.status == "rolled_back" and .deployment.steps[0].exit_code == 3
	  and .deployment.steps[0].health == null'
}

@test "command: unhealthy without a rollback command is degraded (exit 1)" {
	command_config '{"tools":{"rollback_command":null}}'
	echo 500 >"$MODE"
	run -1 --separate-stderr deploy
	final | jq -e '.deployment.status == "degraded" and (.deployment.reason | test("rollback_command"))'
}

@test "command: a failed rollback is degraded (exit 1)" {
	command_config '{"tools":{"rollback_command":"exit 1"}}'
	echo 500 >"$MODE"
	run -1 --separate-stderr deploy
	final | jq -e '.deployment.status == "degraded"'
}

@test "command: a failing build deploys nothing (exit 1)" {
	command_config '{"tools":{"build_command":"exit 2"}}'
	run -1 --separate-stderr deploy
	[ ! -e "$M/steps" ]
	final | jq -e '.status == "rejected" and .deployment.status == "skipped" and (.deployment.reason | test("build"))'
}

@test "command: no deploy command configured fails (exit 5) naming tools.deploy_command" {
	command_config '{"tools":{"deploy_command":null}}'
	run -5 --separate-stderr deploy
	[[ "$stderr" == *"tools.deploy_command"* ]]
}

@test "command: commands never see the model keys" {
	command_config "$(jq -nc --arg m "$M" '{tools:{deploy_command:("env >" + $m + "/env")}}')"
	ANTHROPIC_API_KEY=sk-ant-CANARY-deploy-1234567 OPENAI_API_KEY=sk-CANARY-deploy-1234567 run -0 --separate-stderr deploy
	grep -q '^FORGE_DEPLOY_PERCENT=100$' "$M/env"
	grep -q '^FORGE_DEPLOY_ENVIRONMENT=staging$' "$M/env"
	run -1 grep -c CANARY "$M/env"
}

@test "command: the caller's FORGE_DEPLOY_* variables reach the commands; Forge's own are replaced" {
	command_config "$(jq -nc --arg m "$M" '{tools:{deploy_command:("env >" + $m + "/env")}}')"
	FORGE_DEPLOY_DIR=/srv/app FORGE_DEPLOY_PERCENT=7 run -0 --separate-stderr deploy
	grep -q '^FORGE_DEPLOY_DIR=/srv/app$' "$M/env"
	run -0 grep -c '^FORGE_DEPLOY_PERCENT=' "$M/env"
	[ "$output" = 1 ]
	grep -q '^FORGE_DEPLOY_PERCENT=100$' "$M/env"
}

# ---- the production gate ---------------------------------------------------------

@test "gate: production without approval and without a terminal waits (exit 4), nothing deployed" {
	command_config '{"deploy":{"environment":"production"}}'
	run -4 --separate-stderr deploy
	[ ! -e "$M/steps" ]
	[ ! -e "$M/built" ]
	final | jq -e '.status == "escalated" and .deployment.status == "skipped"
	  and .deployment.gate.id == "production_deploy" and .deployment.gate.status == "pending"'
	event_ok gate.requested '.gate_id == "production_deploy" and .prompt == "Approve production deployment."
	  and .summary.environment == "production" and .summary.tests.passed == 3'
}

@test "gate: run alone, the wait names the way out that works (--approve): no gate is recorded for forge gate approve" {
	command_config '{"deploy":{"environment":"production"}}'
	run -4 --separate-stderr deploy
	[[ "$stderr" == *"gate production_deploy"*"run it again with --approve"* ]]
	[[ "$stderr" != *"forge gate approve"* ]]
}

@test "gate: task.environment production is gated too, even at automation level 4" {
	config '{"safety":{"automation_level":4}}'
	state '.task.environment = "production"'
	run -4 --separate-stderr deploy --strategy merge
	echo "$stderr" >&3
	[ "$(git -C "$R" rev-parse main)" = "$BASE" ]
	event_ok gate.requested '.gate_id == "production_deploy" and .automation_level == 4 and .auto_approvable == false'
}

@test "gate: the repository's deploy.environment may not turn your production into staging: ignored with a warning, the gate waits (exit 4); trust_project lets it" {
	mkdir -p "$XDG_CONFIG_HOME/forge" "$R/.forge"
	echo '{"deploy":{"environment":"production"}}' >"$XDG_CONFIG_HOME/forge/config.json"   # your own
	echo '{"deploy":{"environment":"staging","strategy":"push","canary":{"medium":[100]}}}' >"$R/.forge/config.json"
	run -4 --separate-stderr deploy --repo "$R" --strategy merge
	[[ "$stderr" == *"warning: ignoring deploy.canary.medium, deploy.environment, deploy.strategy of $R/.forge/config.json"*'"trust_project": true'* ]]
	[ "$(git -C "$R" rev-parse main)" = "$BASE" ]
	final | jq -e '.deployment.environment == "production" and .deployment.gate.id == "production_deploy"'
	# your own configuration trusts the project: its staging applies
	echo '{"deploy":{"environment":"production"},"trust_project":true}' >"$XDG_CONFIG_HOME/forge/config.json"
	run -0 --separate-stderr deploy --repo "$R" --strategy merge
	[[ "$stderr" != *"warning: ignoring"* ]]
	final | jq -e '.deployment.environment == "staging" and .deployment.gate == null'
	[ "$(git -C "$R" rev-parse main)" = "$TIP" ]
}

@test "strategy: the repository's deploy.strategy may not take the change further than yours (merge over branch): ignored, the branch is left" {
	mkdir -p "$XDG_CONFIG_HOME/forge" "$R/.forge"
	echo '{"deploy":{"strategy":"merge"}}' >"$R/.forge/config.json"
	run -0 --separate-stderr deploy --repo "$R"
	[[ "$stderr" == *"warning: ignoring deploy.strategy of $R/.forge/config.json"* ]]
	[ "$(git -C "$R" rev-parse main)" = "$BASE" ]
	# branch, short of your merge, applies
	echo '{"deploy":{"strategy":"merge"}}' >"$XDG_CONFIG_HOME/forge/config.json"
	echo '{"deploy":{"strategy":"branch"}}' >"$R/.forge/config.json"
	run -0 --separate-stderr deploy --repo "$R"
	[[ "$stderr" != *"warning: ignoring"* ]]
	[ "$(git -C "$R" rev-parse main)" = "$BASE" ]
	# your own merge, without the repository's say, merges
	rm "$R/.forge/config.json"
	run -0 --separate-stderr deploy --repo "$R"
	[ "$(git -C "$R" rev-parse main)" = "$TIP" ]
}

@test "gate: production with --approve deploys (exit 0)" {
	command_config '{"deploy":{"environment":"production"}}'
	run -0 --separate-stderr deploy --approve
	[ "$(cat "$M/steps")" = "100" ]
	final | jq -e '.deployment.status == "healthy" and .deployment.environment == "production"
	  and .deployment.gate.status == "approved"'
	event_ok gate.approved '.gate_id == "production_deploy" and .by == "flag"'
}

@test "gate: --no-prompt waits even on a terminal; staging needs no gate" {
	command_config '{"deploy":{"environment":"production"}}'
	run -4 --separate-stderr deploy --no-prompt
	[ ! -e "$M/steps" ]
	command_config
	run -0 --separate-stderr deploy
	[ -z "$(events gate.requested)" ]
}

@test "gate: a critical-risk deploy needs approval in any environment" {
	command_config
	state '.review.risk.level = "critical"'
	run -4 --separate-stderr deploy
	[ ! -e "$M/steps" ]
	event_ok gate.requested '.gate_id == "critical_deploy"'
	run -0 --separate-stderr deploy --approve
	[ "$(tr '\n' ' ' <"$M/steps")" = "5 10 25 50 100 " ]
}

@test "gate: answered on the terminal (stdin a pipe, /dev/tty a terminal): y deploys, n refuses" {
	command -v script >/dev/null || skip "script(1) is not installed"
	command_config '{"deploy":{"environment":"production"}}'
	cmd="forge-deploy --config '$CFG' <'$BATS_TEST_TMPDIR/state.json' >'$BATS_TEST_TMPDIR/out'; echo \$? >'$BATS_TEST_TMPDIR/rc'"
	printf 'n\n' | script -qec "$cmd" /dev/null >/dev/null
	[ "$(cat "$BATS_TEST_TMPDIR/rc")" = 1 ]
	[ ! -e "$M/steps" ]
	jq -se 'map(select(.type == "gate.rejected")) | length == 1' "$BATS_TEST_TMPDIR/out"
	printf 'y\n' | script -qec "$cmd" /dev/null >/dev/null
	[ "$(cat "$BATS_TEST_TMPDIR/rc")" = 0 ]
	[ "$(cat "$M/steps")" = "100" ]
	jq -se 'map(select(.type == "gate.approved" and .payload.by == "terminal")) | length == 1' "$BATS_TEST_TMPDIR/out"
}

# on_tty STEP... -- COMMAND...: on a pseudo-terminal (tests/helpers/pty_run.py),
# the one exception to running detached: answers are typed ahead, Ctrl-C only
# once the question is on the terminal.  What the terminal showed is in
# $BATS_TEST_TMPDIR/terminal.
on_tty() {
	test_python3
	"$TEST_PYTHON3" "$BATS_TEST_DIRNAME/helpers/pty_run.py" --transcript "$BATS_TEST_TMPDIR/terminal" "$@"
}

# the deploy on the terminal: stdin the state, stdout to $OUT, /dev/tty the pty.
DEPLOY_ON_TTY='exec forge-deploy --config "$CFG" <"$BATS_TEST_TMPDIR/state.json" >"$OUT"'

@test "gate: Enter and a typo on the terminal ask again (no silent no); n then refuses (exit 1)" {
	command_config '{"deploy":{"environment":"production"}}'
	export CFG OUT="$BATS_TEST_TMPDIR/out"
	SHOWN="$BATS_TEST_TMPDIR/terminal"
	run -1 on_tty --type '\nyep\nn\n' -- sh -c "$DEPLOY_ON_TTY"
	[ "$(grep -c 'Approve production deployment. \[y/n\]' "$SHOWN")" -eq 3 ]
	[ "$(grep -c 'please answer y (yes) or n (no)' "$SHOWN")" -eq 2 ]
	[ ! -e "$M/steps" ]
	tail -n 1 "$OUT" | jq -e '.status == "rejected" and .deployment.gate.status == "rejected"'
}

@test "gate: Ctrl-D on the terminal decides nothing: the gate waits (exit 4)" {
	command_config '{"deploy":{"environment":"production"}}'
	export CFG OUT="$BATS_TEST_TMPDIR/out"
	SHOWN="$BATS_TEST_TMPDIR/terminal"
	run -4 on_tty --type '\x04' -- sh -c "$DEPLOY_ON_TTY"
	[ ! -e "$M/steps" ]
	tail -n 1 "$OUT" | jq -e '.status == "escalated" and .deployment.gate.status == "pending"'
	[ "$(jq -s 'map(select(.type == "gate.rejected")) | length' "$OUT")" -eq 0 ]
}

@test "gate: Ctrl-C at the terminal prompt is no rejection: exit 130, gate pending, nothing deployed" {
	command_config '{"deploy":{"environment":"production"}}'
	export CFG OUT="$BATS_TEST_TMPDIR/out"
	SHOWN="$BATS_TEST_TMPDIR/terminal"
	run -130 on_tty --wait 'Approve production deployment. [y/n] ' --intr -- sh -c "$DEPLOY_ON_TTY"
	[ ! -e "$M/steps" ]
	[ ! -e "$M/built" ]
	tail -n 1 "$OUT" | jq -e '.kind == "state" and .status == "escalated" and .deployment.status == "skipped"
	  and .deployment.gate.status == "pending" and (.deployment.reason | test("interrupted at gate production_deploy"))'
	[ "$(jq -s 'map(select(.type == "gate.rejected")) | length' "$OUT")" -eq 0 ]
	grep -q "interrupted at gate production_deploy" "$SHOWN"
}

@test "command: the commands run in the sandbox; the build has no network, deploy and rollback keep it" {
	run -0 "$FORGE_TESTBIN/tool-run" --features
	FEATURES=$output
	[ "$(jq -r .landlock.available <<<"$FEATURES")" = true ] || skip "no Landlock on this kernel"
	OUT="$BATS_TEST_TMPDIR/outside"
	mkdir -p "$OUT"
	count="awk 'NR > 2' /proc/net/dev | wc -l"
	command_config "$(jq -nc --arg m "$M" --arg o "$OUT" --arg c "$count" '{tools:{
	  build_command:($c + " >" + $m + "/build-net; touch " + $o + "/built-outside; true"),
	  deploy_command:($c + " >" + $m + "/deploy-net")}}')"
	run -0 --separate-stderr deploy
	[ ! -e "$OUT/built-outside" ]
	[ "$(cat "$M/deploy-net")" -eq "$(awk 'NR > 2' /proc/net/dev | wc -l)" ]
	if [ "$(jq -r .network_namespace.available <<<"$FEATURES")" = true ]; then
		[ "$(cat "$M/build-net")" -eq 1 ]        # lo alone
	fi
}

@test "command: in the run's worktree what the commands leave untracked is removed after the last of them; files there before stay" {
	# (before: the build's output stayed in the run's worktree, taken for
	# the run's work by a resume's saved ref or the next commit)
	WT="$BATS_TEST_TMPDIR/wt"
	git -C "$R" worktree add -q "$WT" forge/t1
	echo mine >"$WT/mine.txt"
	command_config "$(jq -nc --arg m "$M" '{tools:{build_command:"mkdir -p dist && touch dist/app .buildcache",
	  deploy_command:("test -e dist/app && echo $FORGE_DEPLOY_PERCENT >>" + $m + "/steps")}}')"
	state ".task.worktree = \"$WT\""
	run -0 --separate-stderr deploy
	# the deploy command saw what the build made
	[ "$(cat "$M/steps")" = 100 ]
	event_ok deploy.cleaned '.removed == [".buildcache", "dist/app"]'
	[ ! -e "$WT/dist" ] && [ ! -e "$WT/.buildcache" ]
	run -0 git -C "$WT" status --porcelain
	assert_output '?? mine.txt'
}
