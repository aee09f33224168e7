#!/usr/bin/env bats
# forge pipeline: check (every error named by its node, exit 2), show (text,
# --dot, --json), list (built-in and the project's), names and paths.

load test_helper/common

setup() {
	forge_setup
	REPO="$BATS_TEST_TMPDIR/repo"
	make_repo "$REPO"
	cd "$REPO"
}

# pipeline FILE NODES...: FILE is a pipeline of the given node objects.
pipeline() {
	local file=$1 IFS=,
	shift
	printf '{"pipeline":"t","version":1,"nodes":[%s]}\n' "$*" >"$file"
}

@test "check: the shipped pipelines are valid, with a one-line summary" {
	run -0 --separate-stderr forge pipeline check default
	assert_output "default (built-in): ok: pipeline 'default', 5 nodes in 5 layers (at most 1 at once), 4 edges, 2 bounces"
	[ -z "$stderr" ]
	run -0 --separate-stderr forge pipeline check review-and-test
	assert_output "review-and-test (built-in): ok: pipeline 'review-and-test', 5 nodes in 4 layers (at most 2 at once), 5 edges, 2 bounces"
	# the files themselves, by path
	run -0 --separate-stderr forge pipeline check "$FORGE_ROOT/pipelines/default.json"
	assert_output --partial "/pipelines/default.json: ok: pipeline 'default'"
	run -0 --separate-stderr forge-pipeline check --json default
	[ "$(jq -c '[.ok, .pipeline, (.nodes | length), (.edges | map(.kind) | group_by(.) | map(length)), .errors]' <<<"$output")" = '[true,"default",5,[2,4],[]]' ]
	[ "$(jq -c '.nodes[2].bounce' <<<"$output")" = '{"to":"implement","when":".review.decision == \"request_changes\"","when_from":"bounces.review_condition","max":3,"max_from":"bounces.review_max"}' ]
}

@test "check: every error is listed, each naming its node, exit 2" {
	pipeline bad.json \
		'{"id":"a","phase":"plan"}' \
		'{"id":"a","phase":"implement"}' \
		'{"id":"b","phase":"lint"}' \
		'{"id":"c","program":"forge-no-such-program","needs":["a","zz"]}' \
		'{"id":"d","phase":"review","program":"true","result_key":"d"}' \
		'{"id":"e","phase":"review","needs":["a"],"when":".x ==","bounce":{"to":"f"}}' \
		'{"id":"f","phase":"test","needs":["g"]}' \
		'{"id":"g","phase":"test","needs":["f"],"result_key":"g"}' \
		'{"id":"h","phase":"deploy","needs":["g"]}' \
		'{"id":"i","program":"true","needs":["a"],"bounce":{"to":"a"}}' \
		'{"id":"j","phase":"implement","needs":["a"],"result_key":"j","gate":{"ladder":"nope"}}'
	run -2 --separate-stderr forge pipeline check bad.json
	[ -z "$output" ]
	assert_equal "$(sed -n 1p <<<"$stderr")" "bad.json: node 'a': the id is taken by node #1: ids must be unique"
	assert_equal "$(sed -n 2p <<<"$stderr")" "bad.json: node 'b': unknown phase 'lint': a phase is plan, implement, review, test or deploy; another program is given with \"program\""
	[[ "$(sed -n 3p <<<"$stderr")" == "bad.json: node 'c': program 'forge-no-such-program' not found beside forge ("*") or on PATH: install it, or give its path" ]]
	assert_equal "$(sed -n 4p <<<"$stderr")" "bad.json: node 'c': needs unknown node 'zz'"
	assert_equal "$(sed -n 5p <<<"$stderr")" "bad.json: node 'd': has both phase 'review' and program 'true': give one"
	[[ "$(sed -n 6p <<<"$stderr")" == "bad.json: node 'e': when: jq expression '.x ==' does not compile: "* ]]
	assert_equal "$(sed -n 7p <<<"$stderr")" "bad.json: node 'e': bounce to 'f', which is not before it: a bounce goes back to a node it needs, directly or not"
	assert_equal "$(sed -n 8p <<<"$stderr")" "bad.json: node 'f': needs go round in a cycle ('f' needs 'g', 'g' needs 'f'): only a bounce may go back, and it needs a max"
	assert_equal "$(sed -n 9p <<<"$stderr")" "bad.json: node 'h': unreachable from the roots: it needs 'g', which waits on a cycle"
	assert_equal "$(sed -n 10p <<<"$stderr")" "bad.json: node 'i': bounce to 'a' has no bound: give it a max (only a review or test phase takes bounces.PHASE_max from the configuration)"
	assert_equal "$(sed -n 11p <<<"$stderr")" "bad.json: node 'j': .gate.ladder: value is not one of the allowed values (phase_result, review_changes, test_failures, approved_review, staging_deploy, production_deploy, security_findings, architecture_approval)"
	[ "${#stderr_lines[@]}" -eq 11 ]
	# --json: the same errors on stdout, nothing on stderr
	run -2 --separate-stderr forge pipeline check --json bad.json
	[ -z "$stderr" ]
	[ "$(jq -c '[.ok, (.errors | length), .errors[1]]' <<<"$output")" = '[false,11,{"node":"b","message":"unknown phase '"'lint'"': a phase is plan, implement, review, test or deploy; another program is given with \"program\""}]' ]
	# show refuses it the same way
	run -2 --separate-stderr forge pipeline show bad.json
	[ -z "$output" ]
	[ "${#stderr_lines[@]}" -eq 11 ]
}

@test "check: every schema error of a node and of the file is listed, not only the first" {
	printf '%s\n' '{"pipeline":"t","version":1,"extra":1,"desc":"x",' \
		'"nodes":[{"id":"a","phase":"plan","need":["b"],"retry":{"max":0,"on":["nope"]}},' \
		'{"id":"b","phase":"implement","needs":["a"],"args":[1,"ok",2]}]}' >bad.json
	run -2 --separate-stderr forge pipeline check bad.json
	[ -z "$output" ]
	assert_equal "$stderr" "bad.json: .: unexpected property 'extra'
bad.json: .: unexpected property 'desc'
bad.json: node 'a': unexpected property 'need'
bad.json: node 'a': .retry.max: 0 is less than the minimum 1
bad.json: node 'a': .retry.on[0]: value is not one of the allowed values (failed, rejected)
bad.json: node 'b': .args[0]: expected string, got number
bad.json: node 'b': .args[2]: expected string, got number"
	run -2 --separate-stderr forge pipeline check --json bad.json
	[ "$(jq '.errors | length' <<<"$output")" -eq 7 ]
}

@test "check: a result key the executor writes (nodes, node_runs) or adds up (usage) is refused; a debug or an import in a condition neither crashes nor aborts" {
	# (before: accepted, and the node's result was overwritten at run time)
	for key in nodes node_runs usage; do
		pipeline rk.json '{"id":"a","program":"true","result_key":"'$key'"}'
		run -2 --separate-stderr forge pipeline check rk.json
		assert_equal "$stderr" "rk.json: node 'a': result_key '$key' is the state's own: choose another"
	done
	# (before: `debug` crashed the run, SIGSEGV; `include` aborted, SIGABRT)
	pipeline dbg.json '{"id":"a","program":"true","when":"debug | .task != null"}'
	run -0 --separate-stderr forge pipeline check dbg.json
	pipeline inc.json '{"id":"a","program":"true","when":"include \"x\"; true"}'
	run -2 --separate-stderr forge pipeline check inc.json
	[[ $stderr == "inc.json: node 'a': when: jq expression 'include \"x\"; true' does not compile: "*"module not found: x"* ]]
}

@test "check: malformed JSON, no nodes, a missing file, an unknown name, a wrong version: exit 2" {
	printf '{"pipeline":\n' >broken.json
	run -2 --separate-stderr forge pipeline check broken.json
	assert_equal "$stderr" "broken.json: malformed JSON: Unfinished JSON term at EOF at line 2, column 0"
	pipeline empty.json
	run -2 --separate-stderr forge pipeline check empty.json
	assert_equal "$stderr" "empty.json: no nodes: a pipeline needs at least one (see forge pipeline show default)"
	run -2 --separate-stderr forge pipeline check missing.json
	assert_equal "$stderr" "missing.json: no such file"
	run -2 --separate-stderr forge pipeline check nothing
	assert_equal "$stderr" "nothing: no pipeline named 'nothing' (forge pipeline list shows them; a file is named by its path)"
	printf '{"pipeline":"t","version":2,"nodes":[{"id":"a","phase":"plan"}]}' >v2.json
	run -2 --separate-stderr forge pipeline check v2.json
	assert_equal "$stderr" "v2.json: .version: value must be 1"
	printf '[]' >array.json
	run -2 --separate-stderr forge pipeline check array.json
	assert_equal "$stderr" 'array.json: a pipeline is a JSON object {"pipeline", "version", "nodes"}'
}

@test "check: a bounce needs a bound; the configuration gives a review's, the file overrides it" {
	pipeline p.json '{"id":"i","phase":"implement"}' '{"id":"d","phase":"deploy","needs":["i"],"bounce":{"to":"i"}}'
	run -2 --separate-stderr forge pipeline check p.json
	assert_equal "$stderr" "p.json: node 'd': bounce to 'i' has no bound: give it a max (only a review or test phase takes bounces.PHASE_max from the configuration)"
	pipeline p.json '{"id":"i","phase":"implement"}' '{"id":"d","phase":"deploy","needs":["i"],"bounce":{"to":"i","max":2}}'
	run -0 --separate-stderr forge pipeline check p.json
	mkdir -p .forge
	# (fewer than the default's 3: a repository may not allow more)
	echo '{"bounces":{"review_max":2}}' >.forge/config.json
	run -0 --separate-stderr forge pipeline show default
	assert_line "             bounce back to implement when .review.decision == \"request_changes\" (bounces.review_condition), at most 2 times (bounces.review_max), then a human"
	pipeline p.json '{"id":"i","phase":"implement"}' '{"id":"r","phase":"review","needs":["i"],"bounce":{"to":"i","max":1,"when":".review.x"}}'
	run -0 --separate-stderr forge pipeline show p.json
	assert_line "     bounce back to i when .review.x, at most 1 time, then a human"
}

@test "check: programs are found beside forge, on PATH, or relative to the pipeline's file" {
	mkdir -p pl
	printf '#!/bin/sh\ncat\n' >pl/step.sh
	chmod +x pl/step.sh
	pipeline pl/p.json '{"id":"a","program":"./step.sh","args":["-x"]}' '{"id":"b","program":"cat","needs":["a"]}' \
		'{"id":"c","program":"forge-review","needs":["b"],"result_key":"lint"}'
	run -0 --separate-stderr forge pipeline check --json pl/p.json
	# absolute, so that it runs the same from the run's worktree
	path=$(jq -r '.nodes[0].path' <<<"$output")
	[[ "$path" == /*/pl/./step.sh ]]
	[ "$path" -ef pl/step.sh ]
	[[ "$(jq -r '.nodes[1].path' <<<"$output")" == */cat ]]
	[ "$(jq -r '.nodes[2].path' <<<"$output")" -ef "$FORGE_BINDIR/forge-review" ]
	chmod -x pl/step.sh
	run -2 --separate-stderr forge pipeline check pl/p.json
	assert_equal "$stderr" "pl/p.json: node 'a': program './step.sh' is not an executable file (a path with '/' is relative to pl)"
}

@test "show: default.json as text, layer by layer with its bounces and the configured gates" {
	run -0 --separate-stderr forge pipeline show default
	assert_output "$(cat <<'EOF'
pipeline default: plan, implement, review, test and deploy; review and test go back to implement
source: default (built-in)
flow: plan -> implement -> review -> test -> deploy
at every node: configured gate cost_overrun when .cost.usd > .budget.usd * 0.8

layer 1
  plan       phase plan
             configured gate architecture_approval when .plan.risk.level == "high" or .plan.risk.level == "critical"

layer 2
  implement  phase implement; needs plan

layer 3
  review     phase review; needs implement
             bounce back to implement when .review.decision == "request_changes" (bounces.review_condition), at most 3 times (bounces.review_max), then a human
             configured gate security_findings when [.review.findings[]? | select(.severity == "critical" and .category == "security")] | length > 0

layer 4
  test       phase test; needs review
             bounce back to implement when .tests.summary.failed > 0 (bounces.test_condition), at most 2 times (bounces.test_max), then a human
             (only failures with a confident fix go back: bounces.test_fix_confidence; none: a human)

layer 5
  deploy     phase deploy; needs test
             configured gate production_deploy when .task.environment == "production"
EOF
)"
	[ -z "$stderr" ]
}

@test "show: parallel nodes side by side; when, retry, gate and result key shown" {
	run -0 --separate-stderr forge pipeline show review-and-test
	assert_line "flow: plan -> implement -> [review | test] -> deploy"
	assert_line "layer 3 (these run at the same time)"
	assert_line "  test       phase test --force; needs implement"
	assert_line "  deploy     phase deploy; needs review, test"
	pipeline g.json '{"id":"build","program":"true","retry":{"max":2,"on":["failed","rejected"]}}' \
		'{"id":"ship","phase":"deploy","needs":["build"],"when":".build.ok","gate":{"ladder":"staging_deploy","when":".task.environment != null","prompt":"Ship it?"}}'
	run -0 --separate-stderr forge pipeline show g.json
	assert_line "         result in .build"
	assert_line "         retry on failed or rejected, at most 2 more times"
	assert_line "         runs when .build.ok, else skipped"
	assert_line "         gate staging_deploy before it runs when .task.environment != null: Ship it?"
}

@test "show --dot: Graphviz DOT that dot draws, with bounce edges and parallel ranks" {
	run -0 --separate-stderr forge pipeline show --dot review-and-test
	assert_line --index 0 'digraph "review-and-test" {'
	assert_line '	"plan" -> "implement";'
	assert_line '	"review" -> "implement" [style=dashed, constraint=false, label="bounce <= 3"];'
	assert_line '	"test" [label="test\nphase test --force"];'
	assert_line '	{ rank=same; "review"; "test"; }'
	command -v dot >/dev/null || skip "graphviz is not installed (scripts/install-deps)"
	printf '%s\n' "$output" >p.dot
	run -0 --separate-stderr dot -Tsvg p.dot
	[[ "$output" == *"<svg"* ]]
	[ -z "$stderr" ]
	# quotes in a condition are escaped
	pipeline q.json '{"id":"a","phase":"plan","when":".task.x == \"y\\\\z\""}'
	run -0 --separate-stderr forge pipeline show --dot q.json
	assert_line '	"a" [label="a\nphase plan\nwhen .task.x == \"y\\\\z\""];'
	printf '%s\n' "$output" | dot -Tsvg >/dev/null
}

@test "list: the built-in pipelines and the project's, which come first by name" {
	run -0 --separate-stderr forge pipeline list
	assert_output "$(printf '%-20s %-9s %s\n' compile built-in "forge compile: interview (or change), flows, contracts, rules, gate, schema, gate, tests, code, integrate, review" \
		default built-in "plan, implement, review, test and deploy; review and test go back to implement" \
		review-and-test built-in "plan and implement, then review and test of the same commit in parallel, then deploy")"
	mkdir -p .forge/pipelines
	printf '{"pipeline":"default","version":1,"description":"ours","nodes":[{"id":"p","phase":"plan"}]}' >.forge/pipelines/default.json
	printf '{"pipeline":' >.forge/pipelines/broken.json
	run -0 --separate-stderr forge pipeline list
	assert_line --regexp '^default +built-in +plan, implement, .* \(the project.s file of this name comes first\)$'
	assert_line --regexp '^broken +project +malformed JSON: '
	assert_line --regexp '^default +project +ours$'
	run -0 --separate-stderr forge pipeline list --json
	[ "$(jq -c '[.[] | [.name, .where, .overridden]]' <<<"$output")" = '[["compile","built-in",false],["default","built-in",true],["review-and-test","built-in",false],["broken","project",false],["default","project",false]]' ]
	# by name, the project's file
	run -0 --separate-stderr forge pipeline check default
	assert_output "$REPO/.forge/pipelines/default.json: ok: pipeline 'default', 1 node in 1 layer (at most 1 at once), 0 edges, 0 bounces"
	# outside a repository: the built-in ones (--repo names one)
	cd "$BATS_TEST_TMPDIR"
	run -0 --separate-stderr forge pipeline list
	[ "${#lines[@]}" -eq 3 ]
	run -0 --separate-stderr forge pipeline --repo "$REPO" list
	[ "${#lines[@]}" -eq 5 ]
}

@test "usage: subcommands and options; forge --help lists the command" {
	run -2 --separate-stderr forge pipeline
	assert_equal "${stderr_lines[0]}" "forge-pipeline: a subcommand is needed: check, show or list"
	run -2 --separate-stderr forge pipeline draw default
	assert_equal "${stderr_lines[0]}" "forge-pipeline: unknown subcommand 'draw' (check, show, list)"
	run -2 --separate-stderr forge pipeline check
	assert_equal "${stderr_lines[0]}" "forge-pipeline: check needs a PIPELINE: a name or a file"
	run -2 --separate-stderr forge pipeline check --dot default
	assert_equal "${stderr_lines[0]}" "forge-pipeline: --dot goes with show alone, without --json"
	run -0 --separate-stderr forge --help
	assert_line --regexp '^  pipeline +check, draw and list pipelines: graphs of phases and programs$'
	run -0 --separate-stderr forge help pipeline
	assert_line --index 0 "usage: forge-pipeline check PIPELINE [--json]"
}

@test "--config is read and checked as by every program; --db is taken, opens nothing, and --help says so" {
	# (before: --help listed --db as "the database" and nothing said it was not used)
	run -0 --separate-stderr forge-pipeline --help
	assert_output --partial "--db
is taken and not opened: pipelines are files, not records in the database."
	run -2 --separate-stderr forge-pipeline list --config "$BATS_TEST_TMPDIR/nosuch.json"
	[ "$stderr" = "forge-pipeline: cannot open '$BATS_TEST_TMPDIR/nosuch.json': No such file or directory" ]
	run -0 --separate-stderr forge pipeline --db "$BATS_TEST_TMPDIR/x.db" check default
	[ ! -e "$BATS_TEST_TMPDIR/x.db" ]
	run -0 --separate-stderr forge --db "$BATS_TEST_TMPDIR/no/such/dir/x.db" pipeline list
	[ ! -e "$BATS_TEST_TMPDIR/no" ]
}

@test "bash completion: PIPELINE operands complete with the names forge pipeline list prints" {
	run -0 bash -c 'source "$1" && shift && COMP_WORDS=("$@") && COMP_CWORD=$(($# - 1)) && _forge &&
		printf "%s\n" "${COMPREPLY[@]}"' _ "$FORGE_ROOT/share/completions/forge.bash" forge pipeline show rev
	assert_output "review-and-test"
	run -0 bash -c 'source "$1" && shift && COMP_WORDS=("$@") && COMP_CWORD=$(($# - 1)) && _forge &&
		printf "%s\n" "${COMPREPLY[@]}"' _ "$FORGE_ROOT/share/completions/forge.bash" forge pipeline ""
	assert_output "$(printf '%s\n' check show list)"
}
