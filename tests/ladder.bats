#!/usr/bin/env bats
# ladder.bats - the automation ladder (safety.ladder, seed 000 §8.3): the same
# replayed task run at each level 0..4 without a terminal and without
# --auto-approve, and where it stops.  The task (cassette run-review-bounce):
# a low-risk plan, implement, a review that requests changes once (a
# non-constant format string), implement again, the review approves, the
# tests pass, a deploy to staging (strategy branch).  A stop is a pending gate:
# exit 4 (FORGE_EXIT_HUMAN), the run paused; `forge gate approve` then
# `forge resume` goes on to the next stop.  Also: failing tests at level 1
# ask instead of bouncing (cassette run-test-bounce), --level's checks and
# precedence, resume keeping the run's level, --auto-approve at level 1, and
# `forge config --explain` at two levels.

bats_require_minimum_version 1.5.0

setup() {
	load test_helper/common
	forge_setup
	export BATS_TEST_TIMEOUT=180
	CONFIGS="$FORGE_ROOT/tests/fixtures/supervisor"
	calc_setup
	export FORGE_PROVIDER=replay FORGE_CASSETTE="$CASSETTES/run-review-bounce.jsonl"
}

last_trace() { forge history --json -n 1 | jq -r .trace_id; }

# The payloads of events of TYPE of trace $1, one JSON line each.
events_of() { forge events replay "$1" | jq -c --arg t "$2" 'select(.type == $t) | .payload'; }

# stopped_at GATE PHASE STATUS: run $T is paused at GATE, its only pending
# gate, after PHASE ended with STATUS.
stopped_at() {
	run -0 --separate-stderr forge status --json "$T"
	jq -e --arg g "$1" --arg p "$2" --arg s "$3" '.run.status == "paused" and .state.phase == $p
		and .state.status == $s and [.pending_gates[].gate] == [$g]' <<<"$output"
}

# approve_and_resume N [OPTION...]: a human approves the pending gate; the
# resume (with the options) exits N.
approve_and_resume() {
	local g want=$1
	shift
	g=$(forge gate list --json | jq -r .id)
	run -0 forge gate approve "$g"
	run "-$want" --separate-stderr forge resume "$@" "$T" </dev/null
}

# The gates the run asked at, in order, each "name:who".
gates_passed() {
	forge events replay "$T" | jq -r 'select(.type == "gate.approved") | "\(.payload.gate):\(.payload.by)"'
}

# completed_once: run $T completed with the one review bounce, the change on its branch.
completed_once() {
	run -0 forge status --json "$T"
	jq -e '.run.status == "completed" and .state.deployment.status == "healthy"
		and [.state.bounces[].from] == ["review"] and .state.review.decision == "approve"' <<<"$output"
	run -0 git -C "$REPO" log --format=%s "$BASE..forge/$T"
	assert_output "$(printf 'forge: add a mul operation (attempt %s)\n' 2 1)"
}

@test "level 0: every phase's result waits, the review's request for changes too, and the staging deploy" {
	run -4 --separate-stderr forge run --level 0 "add a mul operation" </dev/null
	[[ $stderr == *"gate plan_result is waiting for a human"* ]]
	T=$(last_trace)
	stopped_at plan_result plan ok
	# nothing was implemented before a human looked at the plan
	[ "$(git -C "$REPO" rev-parse "forge/$T")" = "$BASE" ]
	approve_and_resume 4
	stopped_at implement_result implement ok
	approve_and_resume 4
	stopped_at review_changes review rejected
	# the review's findings are a suggestion: no bounce yet
	[ -z "$(events_of "$T" loop.phase_bounce)" ]
	approve_and_resume 4
	stopped_at implement_result_2 implement ok
	approve_and_resume 4
	stopped_at review_approved_2 review ok
	approve_and_resume 4
	# the tests' result and the deploy are one question
	stopped_at staging_deploy test ok
	approve_and_resume 0
	completed_once
	run -0 gates_passed
	assert_output "$(printf '%s:human\n' plan_result implement_result review_changes implement_result_2 \
		review_approved_2 staging_deploy)"
	run -0 events_of "$T" run.started
	jq -e '.automation_level == 0 and .level_from == "--level"' <<<"$output"
	run -0 events_of "$T" run.resumed
	jq -e -s 'length == 6 and all(.[]; .automation_level == 0 and .level_from == "the run")' <<<"$output"
}

@test "level 1: a review's request for changes is a suggestion a human takes; approved reviews and staging ask" {
	run -4 --separate-stderr forge run --level 1 "add a mul operation" </dev/null
	T=$(last_trace)
	stopped_at review_changes review rejected
	[ -z "$(events_of "$T" loop.phase_bounce)" ]
	run -0 forge gate list --json
	jq -e '.prompt | test("review requested changes \\(2 findings\\)")' <<<"$output"
	approve_and_resume 4
	run -0 events_of "$T" loop.phase_bounce
	jq -e '.from == "review" and .n == 1' <<<"$output"
	stopped_at review_approved_2 review ok
	approve_and_resume 4
	stopped_at staging_deploy test ok
	approve_and_resume 0
	completed_once
	run -0 gates_passed
	assert_output "$(printf '%s:human\n' review_changes review_approved_2 staging_deploy)"
}

@test "level 2: the bounce and the low-risk review pass by themselves; the staging deploy asks" {
	run -4 --separate-stderr forge run --level 2 "add a mul operation" </dev/null
	T=$(last_trace)
	stopped_at staging_deploy test ok
	run -0 events_of "$T" loop.phase_bounce
	jq -e '.from == "review" and .n == 1' <<<"$output"
	[ "$(forge gate list --all --json | jq -s 'length')" -eq 1 ]
	approve_and_resume 0
	# the resumed run's cost line names every phase, those that ran before
	# the pause and called no model too (before: test was missing, hunt67)
	[[ $output == *"  cost      plan \$"*" · implement \$"*" · review \$"*" · test \$"*" · deploy \$"*" · total \$"* ]] ||
		{ grep cost <<<"$output"; false; }
	completed_once
}

@test "level 3: nothing asks for this low-risk task, staging deploys by itself" {
	run -0 --separate-stderr forge run --level 3 "add a mul operation" </dev/null
	T=$(last_trace)
	completed_once
	run -0 forge gate list --all --json
	assert_output ""
}

@test "level 4 (the default): nothing asks; the level and where it came from are recorded" {
	run -0 --separate-stderr forge run "add a mul operation" </dev/null
	T=$(last_trace)
	completed_once
	run -0 forge gate list --all --json
	assert_output ""
	run -0 events_of "$T" run.started
	jq -e '.automation_level == 4 and .level_from == "default: built-in"' <<<"$output"
	run -0 forge status "$T"
	assert_line --regexp '^level +4$'
}

@test "levels 3 and 4 differ on a medium-risk review: 3 asks, 4 goes on" {
	# no plan phase: the task's own plan is medium risk, and so is the review
	# (its AI layer is left out: the cassette has no answers for it)
	echo '{"review":{"ai_min_risk":"high"}}' >"$BATS_TEST_TMPDIR/medium.json"
	run -4 --separate-stderr forge run --level 3 --config "$BATS_TEST_TMPDIR/medium.json" \
		--phases implement,review,test,deploy "add a mul operation" </dev/null
	T=$(last_trace)
	stopped_at review_approved_2 review ok
	run -0 forge gate list --json
	jq -e '.prompt == "The review approved the changes (risk medium): approve to go on to test."' <<<"$output"
	run -0 --separate-stderr forge run --level 4 --config "$BATS_TEST_TMPDIR/medium.json" \
		--phases implement,review,test,deploy "add a mul operation" </dev/null
	T=$(last_trace)
	run -0 forge status --json "$T"
	jq -e '.run.status == "completed" and .state.review.risk.level == "medium"' <<<"$output"
}

@test "level 1: failing tests with a confident fix ask a human instead of going back to implement" {
	export FORGE_CASSETTE="$CASSETTES/run-test-bounce.jsonl"
	cfg=(--config "$CONFIGS/no-validate.json")
	run -4 --separate-stderr forge run --level 1 "${cfg[@]}" "add a mul operation" </dev/null
	T=$(last_trace)
	stopped_at review_approved review ok
	approve_and_resume 4
	stopped_at test_failures test rejected
	[ -z "$(events_of "$T" loop.phase_bounce)" ]
	run -0 forge gate list --json
	jq -e '.prompt | startswith("Tests failed: 2 fixable test failures. Approve to send the failures back to implement")' <<<"$output"
	approve_and_resume 4
	run -0 events_of "$T" loop.phase_bounce
	jq -e '.from == "test" and .n == 1' <<<"$output"
	stopped_at review_approved_2 review ok
	# at level 2 the same failure goes back by itself
	run -4 --separate-stderr forge run --level 2 "${cfg[@]}" "add a mul operation" </dev/null
	T=$(last_trace)
	stopped_at staging_deploy test ok
	run -0 events_of "$T" loop.phase_bounce
	jq -e '.from == "test"' <<<"$output"
}

@test "a rejected review_changes gate ends the run (exit 1) without a bounce" {
	run -4 --separate-stderr forge run --level 1 "add a mul operation" </dev/null
	T=$(last_trace)
	run -0 forge gate reject "$(forge gate list --json | jq -r .id)"
	run -1 --separate-stderr forge resume "$T" </dev/null
	run -0 forge status --json "$T"
	jq -e '.run.status == "failed" and .state.bounces == []' <<<"$output"
}

@test "--auto-approve at level 1: the suggestion is taken, every gate passed by flag" {
	run -0 --separate-stderr forge run --level 1 --auto-approve "add a mul operation" </dev/null
	T=$(last_trace)
	completed_once
	run -0 gates_passed
	assert_output "$(printf '%s:flag\n' review_changes review_approved_2 staging_deploy)"
	run -0 forge gate list --all --json
	jq -e -s 'length == 3 and all(.[]; .status == "approved" and .decided_by == "flag")' <<<"$output"
}

@test "--level: 0..4 only, else exit 2 before any run exists" {
	for bad in 9 -1 5 x 1.5 ""; do
		run -2 --separate-stderr forge run --level "$bad" "add a mul operation" </dev/null
		[[ $stderr == *"--level wants an automation level from 0 to 4, not '$bad'"* ]]
	done
	run -2 --separate-stderr forge resume --level 7 01ARZ3NDEKTSV4RRFFQ69G5FAV </dev/null
	[[ $stderr == *"--level wants an automation level from 0 to 4, not '7'"* ]]
	run -2 --separate-stderr forge-supervisor run --level 9 "add a mul operation" </dev/null
	[[ $stderr == *"--level wants an automation level from 0 to 4, not '9'"* ]]
	run -0 forge history --json
	assert_output ""
	run -0 git -C "$REPO" branch --list 'forge/*'
	assert_output ""
}

@test "--level overrides the configured level (project file, FORGE_AUTOMATION_LEVEL) for one run" {
	mkdir -p .forge
	echo '{"safety":{"automation_level":0}}' >.forge/config.json
	run -0 --separate-stderr forge-supervisor run --level 3 "add a mul operation" </dev/null
	T=$(last_trace)
	run -0 events_of "$T" run.started
	jq -e '.automation_level == 3 and .level_from == "--level"' <<<"$output"
	# without it, the project's level
	echo '{"safety":{"automation_level":2}}' >.forge/config.json
	run -4 --separate-stderr forge run "add a mul operation" </dev/null
	T=$(last_trace)
	stopped_at staging_deploy test ok
	run -0 events_of "$T" run.started
	jq -e --arg f "project: $REPO/.forge/config.json" '.automation_level == 2 and .level_from == $f' <<<"$output"
	# the variable over the file, --level over both
	FORGE_AUTOMATION_LEVEL=3 run -0 --separate-stderr forge run "add a mul operation" </dev/null
	run -0 events_of "$(last_trace)" run.started
	jq -e '.automation_level == 3 and .level_from == "env: FORGE_AUTOMATION_LEVEL"' <<<"$output"
	FORGE_AUTOMATION_LEVEL=3 run -4 --separate-stderr forge run --level 1 "add a mul operation" </dev/null
	T=$(last_trace)
	stopped_at review_changes review rejected
}

@test "a cloned repository's configuration cannot pass a gate by raising the level or loosening the ladder: ignored, with a warning, unless the user trusts it" {
	mkdir -p "$XDG_CONFIG_HOME/forge" .forge
	local user="$XDG_CONFIG_HOME/forge/config.json" project="$REPO/.forge/config.json"
	echo '{"safety":{"automation_level":2}}' >"$user"
	# the repository asks for level 4, where the staging deploy goes by itself
	echo '{"safety":{"automation_level":4}}' >"$project"
	run -4 --separate-stderr forge run "add a mul operation" </dev/null
	local said=$stderr
	T=$(last_trace)
	stopped_at staging_deploy test ok
	[ "$(grep -c 'warning: ignoring' <<<"$said")" -eq 1 ]
	[[ $said == *"forge run: warning: ignoring safety.automation_level of $project: a repository's configuration may not choose where your API key is sent, nor loosen your sandbox, tool permissions, gates, automation level, prices or limits; to let it, set \"trust_project\": true in your own configuration"* ]]
	run -0 --separate-stderr events_of "$T" run.started
	jq -e --arg f "user: $user" '.automation_level == 2 and .level_from == $f' <<<"$output"
	run -0 --separate-stderr events_of "$T" run.config_ignored
	jq -e --arg f "$project" '.ignored == [{"path": "safety.automation_level", "source": $f}]' <<<"$output"
	# nor a ladder whose level 2 deploys to staging by itself
	echo '{}' >"$project"
	run -0 --separate-stderr forge config get safety.ladder
	jq -c '{safety: {ladder: (.[2].staging_deploy = "auto")}}' <<<"$output" >"$project"
	run -4 --separate-stderr forge run "add a mul operation" </dev/null
	said=$stderr
	T=$(last_trace)
	stopped_at staging_deploy test ok
	[[ $said == *"forge run: warning: ignoring safety.ladder of $project: "* ]]
	# the user's trust lets both through: nothing asks
	echo '{"safety":{"automation_level":4}}' >"$project"
	echo '{"safety":{"automation_level":2},"trust_project":true}' >"$user"
	run -0 --separate-stderr forge run "add a mul operation" </dev/null
	[[ $stderr != *"warning: ignoring"* ]]
	T=$(last_trace)
	completed_once
}

@test "resume keeps the run's level (not the configured one); --level on resume overrides it for later resumes too; status shows it" {
	run -4 --separate-stderr forge run --level 1 "add a mul operation" </dev/null
	T=$(last_trace)
	stopped_at review_changes review rejected
	run -0 forge status "$T"
	assert_line --regexp '^level +1$'
	# the configuration says 4 (the default): the run still asks as level 1
	approve_and_resume 4
	[[ $stderr == *"automation level 1 (the run)"* ]]
	stopped_at review_approved_2 review ok
	run -0 forge status --json "$T"
	jq -e '.run.automation_level == 1' <<<"$output"
	# a resume may raise it explicitly: at 2 the staging deploy asks ...
	approve_and_resume 4 --level 2
	stopped_at staging_deploy test ok
	run -0 forge status --json "$T"
	jq -e '.run.automation_level == 2' <<<"$output"
	# ... and the resumes after it keep what the last one ran at
	approve_and_resume 0
	run -0 events_of "$T" run.resumed
	jq -e -s '[.[] | "\(.automation_level) \(.level_from)"] == ["1 the run", "2 --level", "2 the run"]' <<<"$output"
}

@test "forge config --explain says what the level means and where it came from, at two levels" {
	cd "$BATS_TEST_TMPDIR"
	run -0 --separate-stderr forge config --explain
	assert_line 'Automation level 4: full autonomy for low-risk changes (safety.automation_level, default: built-in; forge run --level N for one run)'
	assert_line '    - an approved review goes on to the tests (low, medium, high, critical risk)'
	assert_line '    - a deploy to staging (any environment but production)'
	assert_line '  asks a human (--auto-approve answers yes):'
	assert_line '    - a high or critical-risk plan goes on to implement'
	assert_line '  always asks a human in person (--auto-approve does not):'
	assert_line '    - a production deploy'
	assert_line 'safety.automation_level = 4  (default: built-in)'
	FORGE_AUTOMATION_LEVEL=1 run -0 --separate-stderr forge config --explain
	assert_line 'Automation level 1: AI suggests, a human decides (safety.automation_level, env: FORGE_AUTOMATION_LEVEL; forge run --level N for one run)'
	run -0 sed -n '/^  runs by itself:/,/^  asks/p' <<<"$output"
	assert_output "$(printf '%s\n' '  runs by itself:' '    - a phase'"'"'s result goes on to the next phase' \
		'  asks a human (--auto-approve answers yes):')"
	run -0 --separate-stderr forge config --explain --set safety.automation_level=2 --json
	jq -e '.[] | select(.path == "safety.automation_level") | .value == 2 and .layer == "flags"
		and .meaning.name == "AI acts, a human reviews"
		and .meaning.auto == ["phase_result", "review_changes", "test_failures", "approved_review.low"]
		and .meaning.human == ["production_deploy"]
		and (.meaning.ask | index("approved_review.medium") and index("staging_deploy"))' <<<"$output"
	# the table is checked: production deploys stay a human's at every level
	mkdir -p .forge
	jq '.safety.ladder[4].production_deploy = "auto" | {safety: {ladder: .safety.ladder}}' \
		"$FORGE_ROOT/schemas/config.defaults.json" >"$BATS_TEST_TMPDIR/bad.json"
	run -2 --separate-stderr forge config --config "$BATS_TEST_TMPDIR/bad.json"
	[[ $stderr == *".safety.ladder[4].production_deploy"* ]]
}

# risk_cassette LEVEL SCORE: the recorded high-risk run (cassette
# run-highrisk) with its plan's risk set to LEVEL and SCORE, in
# $BATS_TEST_TMPDIR/LEVEL.jsonl, replayed.
risk_cassette() {
	jq -c --arg l "$1" --argjson s "$2" 'if .phase == "plan" and .response.tool_calls[0].name == "finish"
		then .response.tool_calls[0].input.risk = {level: $l, score: $s, reasons: ["a new operation"]} else . end' \
		"$CASSETTES/run-highrisk.jsonl" >"$BATS_TEST_TMPDIR/$1.jsonl"
	export FORGE_CASSETTE="$BATS_TEST_TMPDIR/$1.jsonl"
}

@test "level 3 asks about a medium-risk approved review when review and test run at the same time: --jobs 2 as --jobs 1" {
	risk_cassette medium 0.4
	for jobs in 1 2; do
		# (before, with --jobs 2 only the node that merged last, test, had its
		# result gated: the review was never asked about and the run deployed)
		run -4 --separate-stderr forge run --level 3 --pipeline review-and-test --jobs "$jobs" "add a mul operation" </dev/null
		T=$(last_trace)
		run -0 forge status --json "$T"
		jq -e --arg j "$jobs" '.run.status == "paused" and [.pending_gates[].gate] == ["review_approved"]
			and .state.review.risk.level == "medium" and .state.deployment == null
			and .state.nodes.review == "done" and ($j == "1" or .state.nodes.test == "done")' <<<"$output"
	done
	# approved, the resume asks nothing more and deploys
	run -0 forge gate approve "$(forge status --json "$T" | jq -r '.pending_gates[0].id')"
	run -0 --separate-stderr forge resume "$T" </dev/null
	run -0 forge status --json "$T"
	jq -e '.run.status == "completed" and .state.deployment.status == "healthy"' <<<"$output"
	run -0 gates_passed
	assert_output "review_approved:human"
}

@test "an approved critical-risk deploy runs forge-deploy again with the approval; --auto-approve does not pass it" {
	risk_cassette critical 0.9
	echo '{"deploy":{"strategy":"merge"}}' >"$BATS_TEST_TMPDIR/merge.json"
	run -4 --separate-stderr forge run --config "$BATS_TEST_TMPDIR/merge.json" "add a mul operation" </dev/null
	T=$(last_trace)
	for g in architecture_approval escalation_review; do
		run -0 forge status --json "$T"
		jq -e --arg g "$g" '[.pending_gates[].gate] == [$g]' <<<"$output"
		approve_and_resume 4 --config "$BATS_TEST_TMPDIR/merge.json"
	done
	# forge-deploy asked for a human (critical_deploy) and deployed nothing
	run -0 forge status --json "$T"
	jq -e '[.pending_gates[].gate] == ["escalation_deploy"] and .state.deployment.gate.status == "pending"' <<<"$output"
	assert_equal "$(git rev-parse main)" "$BASE"
	# --auto-approve is not a human in person: it stays pending
	run -4 --separate-stderr forge resume --auto-approve --config "$BATS_TEST_TMPDIR/merge.json" "$T" </dev/null
	assert_equal "$(git rev-parse main)" "$BASE"
	# a human's yes: forge-deploy runs again with --approve and merges (before:
	# the node was marked done, the run completed, nothing deployed)
	approve_and_resume 0 --config "$BATS_TEST_TMPDIR/merge.json"
	run -0 forge status --json "$T"
	jq -e '.run.status == "completed" and .state.deployment.gate.status == "approved"
		and .state.deployment.status != "skipped"' <<<"$output"
	assert_equal "$(git rev-parse main)" "$(git rev-parse "forge/$T")"
}
