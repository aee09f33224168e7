#!/usr/bin/env bats
# test.bats - forge-test on fixture repositories: passing and failing suites,
# the model's analysis through the mock provider (asserted on its request
# log), a deliberately flaky test, no test command, --junit (and reading it
# back), the exit-status fallback, environment failures (and the test
# command's untranslated messages), timeouts, the
# review guard and bad input.

bats_require_minimum_version 1.5.0

load test_helper/mock
mock_per_file 120

setup() {
	load test_helper/common
	forge_setup
	export TMPDIR="$BATS_TEST_TMPDIR"
	REPO="$BATS_TEST_TMPDIR/repo"
	# ft: forge-test without this bats' variables, functions, libexec PATH
	# entry and fd 3, so that the bats it runs as a test command is a fresh one
	mkdir -p "$BATS_TEST_TMPDIR/bin"
	cat >"$BATS_TEST_TMPDIR/bin/ft" <<-'EOF'
		#!/usr/bin/env bash
		for v in $(compgen -e | grep '^BATS_'); do unset "$v"; done
		for f in $(declare -Fx | awk '{print $3}'); do unset -f "$f"; done
		PATH=$(tr ':' '\n' <<<"$PATH" | grep -v '/bats-core' | paste -sd: -)
		exec forge-test "$@" 3>&-
	EOF
	chmod +x "$BATS_TEST_TMPDIR/bin/ft"
	PATH="$BATS_TEST_TMPDIR/bin:$PATH"
}

# bats_repo BODY...: a repository whose tests/t.bats holds the given tests.
bats_repo() {
	make_repo "$REPO"
	mkdir -p "$REPO/tests"
	printf '%s\n' "$@" >"$REPO/tests/t.bats"
	git -C "$REPO" add -A && git -C "$REPO" commit -qm tests
}

# tests_of FILTER: FILTER over the tests part of the last line of $output.
tests_of() { tail -n 1 <<<"$output" | jq -c ".tests | $1"; }
events_of() { jq -c "select(.kind == \"event\") | $1" <<<"$output"; }

mock() {
	printf '%s' "$1" | curl -sS -f -X POST -H 'content-type: application/json' \
		--data-binary @- "$MOCK_URL/_mock/script?replace=1" >/dev/null
}

@test "a passing suite: exit 0, counts from the TAP output, the detected command" {
	bats_repo '@test "one" { true; }' '@test "two" { [ 1 -eq 1 ]; }' '@test "later" { skip "not yet"; }'
	run -0 --separate-stderr bash -c "cd '$REPO' && ft --no-input </dev/null"
	run jq -rs '.[-1] | [.kind, .phase, .status] | join(" ")' <<<"$output"
	assert_output "state test ok"
	run -0 --separate-stderr bash -c "cd '$REPO' && ft --no-input </dev/null"
	assert_equal "$(tests_of '[.command, .format, .parsed, .summary]')" \
		'["bats tests","tap",true,{"total":3,"passed":2,"failed":0,"skipped":1,"flaky":0}]'
	assert_equal "$(tests_of '[.failures, .rerun, .exit_code]')" '[[],null,0]'
	assert_equal "$(events_of '.type' | tr -d '"' | tr '\n' ' ')" \
		"phase.started test.started test.ran test.parsed phase.completed "
}

@test "forge-test killed between starting its test command and letting it go: the command does not stay behind" {
	[ "${FORGE_SUITE:-default}" = default ] || skip "a preloaded library cannot come before the sanitizers' runtime"
	[ "$(id -u)" = 0 ] && [ -d /sys/fs/cgroup/pids ] || skip "the go pipe exists with the pids cgroup, as root"
	# (with cgroup v1 the command moves itself into the cgroup: no go pipe;
	# sandbox-walls.bats has that Forge then writes into no cgroup.procs)
	! grep -Eq '^[0-9]+:([^:]*,)?pids(,[^:]*)?:' /proc/self/cgroup || skip "cgroup v1: no go pipe"
	cc -shared -fPIC -o "$BATS_TEST_TMPDIR/kill.so" "$FORGE_ROOT/tests/fixtures/preload/kill-at-cgroup-write.c" -ldl
	bats_repo '@test "one" { true; }'
	run -137 bash -c "cd '$REPO' && LD_PRELOAD='$BATS_TEST_TMPDIR/kill.so' exec forge-test --no-input --repo '$REPO' </dev/null >'$BATS_TEST_TMPDIR/out' 2>&1"
	# the child forked for the test command still has forge-test's command
	# line; it must end (the go pipe's end of file), not wait for ever (its
	# output goes to a file: a child left behind would hold run's pipe)
	for i in $(seq 200); do
		pgrep -f -- "--repo $REPO" >/dev/null || break
		sleep 0.1
	done
	run -1 pgrep -af -- "--repo $REPO"
}

@test "an empty stdin is bad input (exit 2): no test runs; --no-input runs them" {
	bats_repo '@test "one" { touch "$BATS_TEST_DIRNAME/../ran"; }'
	run -2 --separate-stderr bash -c "cd '$REPO' && ft </dev/null"
	assert_equal "$stderr" "forge-test: empty input: expected a state on stdin; to work on the repository alone, pass --no-input"
	assert_equal "$(jq -r .type <<<"$output")" input.rejected
	[ ! -e "$REPO/ran" ]
	run -0 --separate-stderr bash -c "cd '$REPO' && ft --no-input </dev/null"
	[ -e "$REPO/ran" ]
}

@test "a node --test failure: stderr shows the message's lines and the values, not the TAP YAML's keys; its file is the repository's name (hunt69 #2)" {
	make_repo "$REPO"
	mkdir -p "$REPO/.forge" "$REPO/test"
	# what node --test prints for a failing strictEqual, its location under the directory it ran in
	cat >"$REPO/tap.sh" <<-'EOF'
		printf 'TAP version 13\n# Subtest: shout\nnot ok 1 - shout\n  ---\n  duration_ms: 12.46\n'
		printf "  location: '%s/test/shout.test.js:4:1'\n" "$(pwd -P)"
		printf "  failureType: 'testCodeFailure'\n  error: |-\n    Expected values to be strictly equal:\n    \n"
		printf "    'HI?' !== 'HI!'\n    \n  code: 'ERR_ASSERTION'\n  name: 'AssertionError'\n"
		printf "  expected: 'HI!'\n  actual: 'HI?'\n  operator: 'strictEqual'\n  stack: |-\n"
		printf '    TestContext.<anonymous> (%s/test/shout.test.js:4:30)\n  ...\n1..1\n' "$(pwd -P)"
		printf '# tests 1\n# suites 0\n# pass 0\n# fail 1\n'
		exit 1
	EOF
	echo '{"tools":{"test_command":"sh tap.sh"}}' >"$REPO/.forge/config.json"
	printf 'x\n' >"$REPO/test/shout.test.js"
	git -C "$REPO" add -A && git -C "$REPO" commit -qm tests
	curl -sS -f -X POST "$MOCK_URL/_mock/reset" >/dev/null
	mock '[{"tool_calls":[{"name":"report_failure_analysis","input":{"analyses":[{"test":"shout","root_cause":"? for !","suggested_fix":"use !","confidence":0.9}]}}],"usage":{"input_tokens":900,"output_tokens":60}}]'
	export ANTHROPIC_API_KEY=sk-ant-test-key-0000000000 FORGE_BASE_URL="$MOCK_URL" FORGE_PROVIDER=anthropic
	run -1 --separate-stderr bash -c "cd '$REPO' && ft --no-input </dev/null"
	# (before: /…/repo/test/shout.test.js:4, the message's first line, then
	# duration_ms, location, failureType and "error: |-")
	assert_equal "$(tests_of '.failures[0] | [.test, .file, .line]')" '["shout","test/shout.test.js",4]'
	assert_equal "$(head -n 6 <<<"$stderr")" "test/shout.test.js:4: FAIL shout (real)
    Expected values to be strictly equal:
    'HI?' !== 'HI!'
    expected: 'HI!'
    actual: 'HI?'
    operator: 'strictEqual'"
	[[ "$(sed -n 7p <<<"$stderr")" == "forge-test: 0 passed, 1 failed, 0 skipped, 0 flaky (sh tap.sh)" ]]
}

@test "a failure message that reads like a YAML key ('error: …') is shown, not taken for TAP's noise (review of hunt69 #2)" {
	make_repo "$REPO"
	mkdir -p "$REPO/.forge"
	cat >"$REPO/tap.sh" <<-'EOF'
		printf 'TAP version 13\nnot ok 1 - status\n  ---\n  message: "error: expected 200, got 500"\n'
		printf '  duration_ms: 3\n  expected: 200\n  actual: 500\n  ...\n1..1\n'
		exit 1
	EOF
	echo '{"tools":{"test_command":"sh tap.sh"}}' >"$REPO/.forge/config.json"
	git -C "$REPO" add -A && git -C "$REPO" commit -qm tests
	curl -sS -f -X POST "$MOCK_URL/_mock/reset" >/dev/null
	mock '[{"tool_calls":[{"name":"report_failure_analysis","input":{"analyses":[{"test":"status","root_cause":"500","suggested_fix":"fix","confidence":0.9}]}}],"usage":{"input_tokens":900,"output_tokens":60}}]'
	export ANTHROPIC_API_KEY=sk-ant-test-key-0000000000 FORGE_BASE_URL="$MOCK_URL" FORGE_PROVIDER=anthropic
	run -1 --separate-stderr bash -c "cd '$REPO' && ft --no-input </dev/null"
	assert_equal "$(tests_of '.failures[0] | [.test, .message]')" '["status","error: expected 200, got 500"]'
	# (before: the message's one line was dropped as the YAML key "error",
	# so only the values were shown)
	assert_equal "$(head -n 4 <<<"$stderr")" "forge-test: FAIL status (real)
    error: expected 200, got 500
    expected: 200
    actual: 500"
}

@test "a real failure: rerun by name, then one structured call to the model for its analysis" {
	make_repo "$REPO"
	mkdir -p "$REPO/tests"
	printf 'add() { echo $(( $1 - $2 )); }\n' >"$REPO/add.sh"
	# (written with printf: a line starting with the test keyword would be this file's own test)
	printf '%s\n' '@test "adds numbers" {' '  . "$BATS_TEST_DIRNAME/../add.sh"' '  [ "$(add 2 2)" -eq 4 ]' '}' \
		'@test "ok" { true; }' >"$REPO/tests/t.bats"
	git -C "$REPO" add -A && git -C "$REPO" commit -qm tests
	curl -sS -f -X POST "$MOCK_URL/_mock/reset" >/dev/null
	mock '[{"tool_calls":[{"name":"report_failure_analysis","input":{"analyses":[{"test":"adds numbers","root_cause":"add() subtracts","suggested_fix":"use + in add() in add.sh","confidence":0.9}]}}],"usage":{"input_tokens":900,"output_tokens":60}}]'
	export ANTHROPIC_API_KEY=sk-ant-test-key-0000000000 FORGE_BASE_URL="$MOCK_URL" FORGE_PROVIDER=anthropic
	run -1 --separate-stderr bash -c "cd '$REPO' && ft --no-input </dev/null"
	assert_equal "$(tests_of '.summary')" '{"total":2,"passed":1,"failed":1,"skipped":0,"flaky":0}'
	assert_equal "$(tests_of '.failures[0] | [.test, .file, .line, .classification, .root_cause, .suggested_fix, .confidence]')" \
		'["adds numbers","tests/t.bats",3,"real","add() subtracts","use + in add() in add.sh",0.9]'
	assert_equal "$(tests_of '.rerun | [.command, .by_name, .exit_code]')" \
		"[\"bats -f '^(adds numbers)\$' tests\",true,1]"
	assert_equal "$(events_of 'select(.type == "test.analyzed") | [.payload.failures, .payload.analysed, .cost]')" '[1,1,null]'
	# the call's cost is on its llm.called, as every paid call's (what cost recovery after a crash sums)
	assert_equal "$(events_of 'select(.type == "llm.called") | [.payload.input_tokens, .cost.tokens]')" '[900,960]'
	assert_equal "$(tail -n 1 <<<"$output" | jq -c '.cost.tokens')" 960
	# exactly one request: the fast model, forced to the analysis tool, the failure and its source in the prompt
	run curl -sS -f "$MOCK_URL/_mock/requests"
	assert_equal "$(jq -c 'length' <<<"$output")" 1
	assert_equal "$(jq -c '.[0].body | [.model, .tool_choice, .tools[0].name]' <<<"$output")" \
		'["claude-haiku-4-5",{"type":"tool","name":"report_failure_analysis"},"report_failure_analysis"]'
	run jq -r '.[0].body.messages[0].content' <<<"$output"
	assert_output --partial '### 1. adds numbers'
	assert_output --partial 'file: tests/t.bats:3'
	assert_output --partial '>    3    [ "$(add 2 2)" -eq 4 ]'
	run jq -r '.[0].body.system' <<<"$(curl -sS -f "$MOCK_URL/_mock/requests")"
	assert_output --partial 'report_failure_analysis'
	# the tool's input schema is schemas/tools/report_failure_analysis.json's
	assert_equal "$(curl -sS -f "$MOCK_URL/_mock/requests" | jq -cS '.[0].body.tools[0].input_schema')" \
		"$(jq -cS 'del(."$schema", ."$id", .title, .description, ."$comment")' "$FORGE_ROOT/schemas/tools/report_failure_analysis.json")"
}

@test "the analysis call fails after its retries (provider outage): the phase fails (exit 5), the failures not taken for unfixable" {
	# (before: test.analysis_failed alone, the failures at confidence 0,
	# status rejected: a run read that as "no fixable failure", a gate
	# --auto-approve passed, and the failing change was deployed, hunt68 #1)
	bats_repo '@test "broken" { false; }' '@test "fine" { true; }'
	curl -sS -f -X POST "$MOCK_URL/_mock/reset" >/dev/null
	mock '[{"forced_tool":"report_failure_analysis","fault":"server_error","times":"always"}]'
	export ANTHROPIC_API_KEY=sk-ant-test-key-0000000000 FORGE_BASE_URL="$MOCK_URL" FORGE_PROVIDER=anthropic
	echo '{"llm":{"max_retries":0}}' >"$BATS_TEST_TMPDIR/c.json"
	run -5 --separate-stderr bash -c "cd '$REPO' && ft --no-input --config '$BATS_TEST_TMPDIR/c.json' </dev/null"
	assert_equal "$(tail -n 1 <<<"$output" | jq -c '[.status, .tests.summary.failed, .tests.failures[0].confidence]')" '["failed",1,0]'
	assert_equal "$(events_of 'select(.type == "test.analysis_failed") | .payload.error | test("500")')" true
	[[ "$stderr" == *"forge-test: failed: the analysis of the failing tests failed: the provider failed (500) after 1 attempt: "*"500"*"1 of 2 tests failed (1 real, 0 environment), none known to be unfixable: run the phase again once the model answers"* ]]
	assert_equal "$(curl -sS -f "$MOCK_URL/_mock/requests" | jq length)" 1
}

@test "nothing left to spend (safety.cost.per_phase.test 0): the analysis is skipped with an event, no model call" {
	bats_repo '@test "broken" { false; }'
	curl -sS -f -X POST "$MOCK_URL/_mock/reset" >/dev/null
	mock '[{"tool_calls":[{"name":"report_failure_analysis","input":{"analyses":[]}}]}]'
	export ANTHROPIC_API_KEY=sk-ant-test-key-0000000000 FORGE_BASE_URL="$MOCK_URL" FORGE_PROVIDER=anthropic
	echo '{"safety":{"cost":{"per_phase":{"test":0}}}}' >"$BATS_TEST_TMPDIR/c.json"
	run -1 --separate-stderr bash -c "cd '$REPO' && ft --no-input --config '$BATS_TEST_TMPDIR/c.json' </dev/null"
	assert_equal "$(events_of 'select(.type == "test.analysis_skipped") | .payload.reason')" \
		"\"budget spent: the run's remaining budget or safety.cost.per_phase.test leaves nothing\""
	assert_equal "$(curl -sS -f "$MOCK_URL/_mock/requests" | jq length)" 0
}

@test "no model configured: the analysis is skipped with an event, confidence 0" {
	bats_repo '@test "broken" { false; }'
	run -1 --separate-stderr bash -c "cd '$REPO' && ft --no-input </dev/null"
	assert_equal "$(events_of 'select(.type == "test.analysis_skipped") | .payload.reason')" '"no model configured"'
	assert_equal "$(tests_of '.failures[0] | [.classification, .root_cause, .confidence]')" '["real",null,0]'
}

@test "a deliberately flaky test is classified flaky; the real failure stays real" {
	cp -r "$FORGE_ROOT/tests/fixtures/repos/flaky" "$REPO"
	git -C "$REPO" init -q -b main && git -C "$REPO" add -A && git -C "$REPO" commit -qm fixture
	run -1 --separate-stderr bash -c "cd '$REPO' && ft --no-input </dev/null"
	assert_equal "$(tests_of '.summary')" '{"total":3,"passed":2,"failed":1,"skipped":0,"flaky":1}'
	assert_equal "$(tests_of '[.failures[] | [.test, .classification]]')" \
		'[["flaky on first run","flaky"],["real failure","real"]]'
	assert_equal "$(events_of 'select(.type == "test.rerun") | .payload | [.by_name, .flaky, .still_failing]')" \
		'[true,["flaky on first run"],["real failure"]]'
}

@test "a failure that a rerun by name does not run again stays real; cargo's test mode is not part of the name" {
	make_repo "$REPO"
	# a cargo whose rerun by name selects no test, as libtest's --exact did
	# with the name "tests::p - should panic" (before: "0 passed" counted as
	# a pass, the failure flaky, exit 0)
	cat >"$REPO/cargo" <<-'EOF'
		#!/bin/sh
		case "$*" in *--exact*)
			printf 'running 0 tests\n\ntest result: ok. 0 passed; 0 failed; 0 ignored; 0 measured; 2 filtered out\n'
			exit 0 ;;
		esac
		printf 'running 2 tests\ntest tests::p - should panic ... FAILED\ntest tests::q ... ok\n\n'
		printf 'test result: FAILED. 1 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out\n'
		exit 101
	EOF
	chmod +x "$REPO/cargo"
	git -C "$REPO" add -A && git -C "$REPO" commit -qm cargo
	run -1 --separate-stderr bash -c "cd '$REPO' && ft --no-input --command './cargo test' </dev/null"
	assert_equal "$(tests_of '[.summary.failed, .summary.flaky, [.failures[] | [.test, .classification]], .rerun.command]')" \
		"[1,0,[[\"tests::p\",\"real\"]],\"./cargo test -- --exact 'tests::p'\"]"
}

@test "a Cargo project: the detected command runs every test target, a failing unit test does not hide the integration tests" {
	command -v cargo >/dev/null || skip "cargo is not installed"
	make_repo "$REPO"
	mkdir -p "$REPO/src" "$REPO/tests"
	printf '[package]\nname = "calc"\nversion = "0.1.0"\nedition = "2021"\n' >"$REPO/Cargo.toml"
	printf 'pub fn add(a: i64, b: i64) -> i64 { a + b }\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn adds() { assert_eq!(super::add(2, 2), 5); }\n}\n' \
		>"$REPO/src/lib.rs"
	printf '#[test]\nfn integ() { assert_eq!(calc::add(1, 1), 2); }\n#[test]\nfn integ_bad() { assert_eq!(calc::add(1, 1), 3); }\n' \
		>"$REPO/tests/it.rs"
	printf 'target/\nCargo.lock\n' >"$REPO/.gitignore"
	git -C "$REPO" add -A && git -C "$REPO" commit -qm crate
	# (before: `cargo test` stopped after the unit tests' target failed:
	# 1 test, 1 failed, tests/it.rs never ran)
	run -1 --separate-stderr bash -c "cd '$REPO' && ft --no-input </dev/null"
	assert_equal "$(tests_of '[.command, .summary.total, .summary.passed, .summary.failed, [.failures[] | [.test, .file]]]')" \
		'["cargo test --no-fail-fast",3,1,2,[["tests::adds","src/lib.rs"],["integ_bad","tests/it.rs"]]]'
}

@test "only a flaky failure: exit 0, the flaky test reported" {
	cp -r "$FORGE_ROOT/tests/fixtures/repos/flaky" "$REPO"
	git -C "$REPO" init -q -b main && git -C "$REPO" add -A && git -C "$REPO" commit -qm fixture
	# the test command's environment is scrubbed: a variable reaches it through sandbox.env
	echo '{"sandbox":{"env":["FLAKY_ONLY"]}}' >"$BATS_TEST_TMPDIR/env.json"
	run -0 --separate-stderr bash -c "cd '$REPO' && FLAKY_ONLY=1 ft --no-input --config '$BATS_TEST_TMPDIR/env.json' </dev/null"
	assert_equal "$(tests_of '[.summary.failed, .summary.flaky, .failures[0].test, .failures[0].classification]')" \
		'[0,1,"flaky on first run","flaky"]'
	assert_equal "$(tail -n 1 <<<"$output" | jq -r .status)" ok
}

@test "no test command found: ok, format none, a test.no_command event" {
	make_repo "$REPO"
	run -0 --separate-stderr ft --repo "$REPO" --no-input </dev/null
	assert_equal "$(tests_of '[.format, .parsed, .summary.total, .failures]')" '["none",false,0,[]]'
	assert_equal "$(events_of 'select(.type == "test.no_command") | .payload.dir')" "\"$REPO\""
}

@test "npm init's placeholder test script is no test command: nothing tested, exit 0" {
	make_repo "$REPO"
	cat >"$REPO/package.json" <<-'EOF'
		{
		  "name": "x",
		  "version": "1.0.0",
		  "scripts": {
		    "test": "echo \"Error: no test specified\" && exit 1"
		  }
		}
	EOF
	git -C "$REPO" add -A && git -C "$REPO" commit -qm npm
	# (before: "npm test" ran it, exit 1 and a real failure, hunt48 #3)
	run -0 --separate-stderr ft --repo "$REPO" --no-input </dev/null
	assert_equal "$(tests_of '[.command, .format, .not_run, .failures]')" \
		'[null,"none","no test command (set tools.test_command)",[]]'
	[[ $stderr == *"warning: nothing was tested"* ]]
}

@test "a lower-case makefile is read as make reads it: its check target is the test command" {
	make_repo "$REPO"
	printf 'check:\n\t@echo 1..1; echo "not ok 1 - broken"; exit 1\n' >"$REPO/makefile"
	git -C "$REPO" add -A && git -C "$REPO" commit -qm makefile
	# (before: not seen, "nothing was tested" and exit 0, hunt48 #6)
	run -1 --separate-stderr ft --repo "$REPO" --no-input </dev/null
	assert_equal "$(tests_of '[.command, .failures[0].test]')" '["make check","broken"]'
}

@test "a test command that ran no test says nothing was tested: ctest's no tests, pytest's no tests ran" {
	make_repo "$REPO"
	# (before: ctest's "1 passed" from its exit status, pytest's "0 passed",
	# neither with the warning, hunt48 #5)
	local none='"the test command ran no test (add tests, or set tools.test_command)"'
	run -0 --separate-stderr ft --repo "$REPO" --no-input \
		--command "printf 'Test project /x/build\nNo tests were found!!!\n'" </dev/null
	assert_equal "$(tests_of '[.format, .summary.total, .summary.passed, .not_run, .failures]')" "[\"ctest\",0,0,$none,[]]"
	assert_equal "$(events_of 'select(.type == "test.none_ran") | .payload.format')" '"ctest"'
	[[ $stderr == *"warning: nothing was tested: the test command ran no test"* ]]
	run -0 --separate-stderr ft --repo "$REPO" --no-input \
		--command "printf '===== test session starts =====\ncollected 0 items\n\n===== no tests ran in 0.01s =====\n'; exit 5" </dev/null
	assert_equal "$(tests_of '[.format, .summary.total, .not_run, .failures]')" "[\"pytest\",0,$none,[]]"
	[[ $stderr == *"warning: nothing was tested"* ]]
	# a command that ran tests, and one whose exit status failed, are tested
	run -0 --separate-stderr ft --repo "$REPO" --no-input --command "printf '1..1\nok 1 a\n'" </dev/null
	assert_equal "$(tests_of '.not_run')" null
	run -1 --separate-stderr ft --repo "$REPO" --no-input \
		--command "printf 'Test project /x/build\nNo tests were found!!!\n'; exit 8" </dev/null
	assert_equal "$(tests_of '[.not_run, .failures[0].test]')" '[null,"exit status"]'
}

@test "a test command whose every test was skipped says nothing was tested; one test that passed is tested" {
	make_repo "$REPO"
	# (before: "0 passed, 2 skipped", status ok, no warning: a run shown as tested)
	run -0 --separate-stderr ft --repo "$REPO" --no-input \
		--command "printf '1..2\nok 1 a # SKIP no database\nok 2 b # SKIP no database\n'" </dev/null
	assert_equal "$(tests_of '[.summary.total, .summary.skipped, .not_run]')" \
		'[2,2,"every test the command ran was skipped (see why they skip, or set tools.test_command)"]'
	assert_equal "$(events_of 'select(.type == "test.none_ran") | .payload.skipped')" 2
	[[ $stderr == *"warning: nothing was tested: every test the command ran was skipped"* ]]
	run -0 --separate-stderr ft --repo "$REPO" --no-input \
		--command "printf '1..2\nok 1 a # SKIP no database\nok 2 b\n'" </dev/null
	assert_equal "$(tests_of '[.summary.passed, .not_run]')" '[1,null]'
	[[ $stderr != *"nothing was tested"* ]]
}

@test "a NUL byte in a failing test's output is shown as \\u0000, not the end of its message" {
	make_repo "$REPO"
	# (before: message "expected abc", output "expected abcsecond line", hunt48 #8)
	run -1 --separate-stderr ft --repo "$REPO" --no-input \
		--command "printf '1..1\nnot ok 1 - b\n# expected abc\\0def but got xyz\n# second line\n'" </dev/null
	assert_equal "$(tests_of '.failures[0] | [.message, .output]')" \
		'["expected abc\\u0000def but got xyz","expected abc\\u0000def but got xyz\nsecond line\n"]'
	# unparsed output: the exit status's failure keeps the whole tail
	run -1 --separate-stderr ft --repo "$REPO" --no-input --command "printf 'a\\0b\nlast\n'; exit 3" </dev/null
	assert_equal "$(tests_of '.failures[0].output')" '"a\\u0000b\nlast\n"'
}

@test "--junit writes JUnit XML that forge-test reads back to the same results" {
	bats_repo '@test "good" { true; }' '@test "bad <&>" { echo "got \"x\""; false; }' '@test "skip" { skip; }'
	run -1 --separate-stderr bash -c "cd '$REPO' && ft --junit '$BATS_TEST_TMPDIR/out.xml' --no-input </dev/null"
	first=$(tests_of '[.summary, [.failures[] | [.test, .file, .line, .message]]]')
	run grep -c '<testcase' "$BATS_TEST_TMPDIR/out.xml"
	assert_output 3
	run grep -F '<testcase name="bad &lt;&amp;&gt;" classname="bats tests" file="tests/t.bats" line="2"' "$BATS_TEST_TMPDIR/out.xml"
	assert_success
	grep -qF '<failure message="' "$BATS_TEST_TMPDIR/out.xml"
	grep -qF 'type="real"' "$BATS_TEST_TMPDIR/out.xml"
	# a test command that only writes that report: the results come back from it
	# (the report is put in the repository: commands see nothing of the host's /tmp)
	cp "$BATS_TEST_TMPDIR/out.xml" "$REPO/report.xml"
	run -1 --separate-stderr ft --repo "$REPO" \
		--command "cp report.xml junit.xml; exit 1" --no-input </dev/null
	assert_equal "$(tests_of '[.summary, [.failures[] | [.test, .file, .line, .message]]]')" "$first"
	assert_equal "$(tests_of '[.format, .report]')" "[\"junit\",\"$REPO/junit.xml\"]"
}

@test "a JUnit report the run wrote that cannot be read (not XML, over the size read) is said, and the results come from the output" {
	make_repo "$REPO"
	# (TAP on stdout, a broken report beside it)
	run -1 --separate-stderr ft --repo "$REPO" --no-input \
		--command "echo 'Error: reporter crashed' >junit.xml; printf '1..2\\nok 1 a\\nnot ok 2 b\\n'; exit 1" </dev/null
	[[ $stderr == *"warning: the test report $REPO/junit.xml could not be read ("*"): the results come from the test command's output"* ]] || { echo "$stderr"; false; }
	[ "$(events_of 'select(.type == "test.report_unread") | [.payload.report, .payload.results_from]')" = "[\"$REPO/junit.xml\",\"output\"]" ]
	assert_equal "$(tests_of '[.format, .summary.failed]')" '["tap",1]'
	# one larger than forge reads (64 MiB): the same, naming the size (before: silently)
	run -1 --separate-stderr ft --repo "$REPO" --no-input \
		--command "truncate -s 65M junit.xml; printf '1..1\\nnot ok 1 b\\n'; exit 1" </dev/null
	[[ $stderr == *"warning: the test report $REPO/junit.xml could not be read ('junit.xml': too large ("*"): the results come from"* ]] || { echo "$stderr"; false; }
	assert_equal "$(tests_of '.format')" '"tap"'
}

# junit_case NAME [BODY]: a <testcase> of class T.
junit_case() { printf '<testcase name="%s" classname="T" time="0.01">%s</testcase>\n' "$1" "${2:-}"; }

@test "JUnit reports: every file of a directory of them (Surefire's, one a class), and a <flakyFailure> is flaky" {
	make_repo "$REPO"
	mkdir -p "$REPO/fixtures"
	{ echo '<testsuite name="A" tests="2">'; junit_case a1 '<failure message="a1 broke">at A</failure>'; junit_case a2; echo '</testsuite>'; } \
		>"$REPO/fixtures/TEST-A.xml"
	# Surefire's rerunFailingTestsCount: failed, then passed on its rerun
	{ echo '<testsuite name="B" tests="2" flakes="1">'; junit_case b1 '<flakyFailure message="once">at B</flakyFailure>'
	  junit_case b2 '<failure message="b2 broke">at B</failure>'; echo '</testsuite>'; } >"$REPO/fixtures/TEST-B.xml"
	printf 'target/\n' >"$REPO/.gitignore"
	git -C "$REPO" add -A && git -C "$REPO" commit -qm reports
	# (before: only the first file was read -- a1 or b2 lost -- and the flaky
	# case crashed forge-test: SIGSEGV, no state)
	run -1 --separate-stderr ft --repo "$REPO" --no-input \
		--command "mkdir -p target/surefire-reports && cp fixtures/TEST-*.xml target/surefire-reports/; exit 1" </dev/null
	assert_equal "$(tests_of '.summary')" '{"total":4,"passed":2,"failed":2,"skipped":0,"flaky":1}'
	assert_equal "$(tests_of '[.failures[] | [.test, .classification]]')" '[["a1","real"],["b1","flaky"],["b2","real"]]'
	assert_equal "$(tests_of '[.report, .reports]')" \
		"[\"$REPO/target/surefire-reports/TEST-A.xml\",[\"$REPO/target/surefire-reports/TEST-A.xml\",\"$REPO/target/surefire-reports/TEST-B.xml\"]]"
}

@test "a report the tests made a symlink to a file outside is not read: its content reaches neither the state nor the model" {
	make_repo "$REPO"
	echo "SECRET-OUTSIDE-THE-WORKTREE" >"$BATS_TEST_TMPDIR/secret"
	chmod 600 "$BATS_TEST_TMPDIR/secret"
	# the report opens a failure message, a link to the secret, then closes it
	# (the rerun by name passes: exit 0, flaky)
	run -0 --separate-stderr ft --repo "$REPO" --no-input --command "mkdir -p test-results &&
		printf '<testsuite name=\"S\" tests=\"1\"><testcase name=\"leak\" classname=\"T\"><failure message=\"' >test-results/a.xml &&
		ln -s '$BATS_TEST_TMPDIR/secret' test-results/b.xml &&
		printf '\"/></testcase></testsuite>\\n' >test-results/c.xml; exit 1" </dev/null
	[[ $output != *SECRET-OUTSIDE* ]]
	[[ $(db_dump) != *SECRET-OUTSIDE* ]]
	# said, and the results come from the other two
	[[ $stderr == *"warning: the test report $REPO/test-results/b.xml could not be read ("*"): the results come from the other reports"* ]] || { echo "$stderr"; false; }
}

@test "a report left from before the run is not its results, even from the same second; --junit's own output never is" {
	bats_repo '@test "one" { true; }'
	# a junit.xml the run does not write, its time in the run's second or
	# after (the second is all a time stamp told before: a report of a run
	# just before, or one whose clock is ahead)
	{ echo '<testsuite name="old" tests="1">'; junit_case stale '<failure message="old">x</failure>'; echo '</testsuite>'; } >"$REPO/junit.xml"
	touch -d '+1 minute' "$REPO/junit.xml"
	run -0 --separate-stderr ft --repo "$REPO" --no-input </dev/null
	assert_equal "$(tests_of '[.format, .report, .summary.passed, .summary.failed]')" '["tap",null,1,0]'
	# forge-test --junit report.xml twice: the second run's results are its own
	run -0 --separate-stderr bash -c "cd '$REPO' && ft --junit report.xml --no-input </dev/null"
	[ -s "$REPO/report.xml" ]
	touch -d '+1 minute' "$REPO/report.xml"
	run -0 --separate-stderr bash -c "cd '$REPO' && ft --junit report.xml --no-input </dev/null"
	assert_equal "$(tests_of '[.format, .report]')" '["tap",null]'
}

@test "output in no known format: the exit status decides, and says so" {
	make_repo "$REPO"
	run -1 --separate-stderr ft --repo "$REPO" --command 'echo checking; exit 3' --no-input </dev/null
	assert_equal "$(tests_of '[.format, .parsed, .summary.total, .summary.failed, .exit_code]')" '["exit_code",false,1,1,3]'
	assert_equal "$(events_of 'select(.type == "test.unparsed") | .payload.exit_code')" 3
	assert_equal "$(tests_of '.failures[0] | [.test, .message, .output]')" \
		'["echo checking; exit 3","the test command exited with status 3","checking\n"]'
	run -0 --separate-stderr ft --repo "$REPO" --command 'echo fine' --no-input </dev/null
	assert_equal "$(tests_of '[.format, .summary]')" '["exit_code",{"total":1,"passed":1,"failed":0,"skipped":0,"flaky":0}]'
}

@test "a missing program is an environment failure; the test command gets no API key" {
	make_repo "$REPO"
	# (exit 5: the tests could not run at all, see the next test)
	run -5 --separate-stderr env ANTHROPIC_API_KEY=sk-ant-secret-123456789 \
		ft --repo "$REPO" --command 'echo "key=${ANTHROPIC_API_KEY:-none}"; no-such-test-runner-xyz' --no-input </dev/null
	assert_equal "$(tests_of '.failures[0] | [.classification, (.output | test("key=none"))]')" '["environment",true]'
	# the message names what is missing (before: "exited with status 127" alone)
	# (/bin/sh's own words: dash's "/bin/sh: 1: x: not found", bash's "sh: line 1: x: command not found")
	tests_of '.failures[0].message | test("^the test command exited with status 127 [(]a command was not found: .*sh: .*no-such-test-runner-xyz: (command )?not found[)]$")' | grep -qx true
	run -5 --separate-stderr ft --repo "$REPO" --command 'exit 127' --no-input </dev/null
	assert_equal "$(tests_of '.failures[0].message')" '"the test command exited with status 127"'
}

@test "a test command that could not run at all (a program not found, not runnable) fails the phase (exit 5) saying what is missing, not a rejection" {
	# (before: exit 1, "1 of 1 test failed (0 real, 1 environment)", which
	# under forge run was a gate: approve deployed untested code, reject
	# ended the run, and nothing ran the tests again once it was installed)
	make_repo "$REPO"
	run -5 --separate-stderr ft --repo "$REPO" --command 'no-such-test-runner-xyz ./...' --no-input </dev/null
	[[ $stderr == *"forge-test: failed: the tests could not run: 'no-such-test-runner-xyz' was not found ("*"no-such-test-runner-xyz: "*"not found): install it, then run forge-test again"* ]]
	assert_equal "$(tail -n 1 <<<"$output" | jq -c '[.status, .tests.summary.failed, .tests.failures[0].classification]')" '["failed",1,"environment"]'
	assert_equal "$(events_of 'select(.type == "test.could_not_run") | .payload | [.exit_code, .missing]')" '[127,"no-such-test-runner-xyz"]'
	assert_equal "$(events_of 'select(.type == "phase.completed") | .payload.reason | test("^the tests could not run: ")')" true
	# a program that is not runnable (126)
	printf 'echo hi\n' >"$REPO/run-tests"
	run -5 --separate-stderr ft --repo "$REPO" --command './run-tests' --no-input </dev/null
	[[ $stderr == *"the tests could not run: './run-tests' could not be run ("*"Permission denied): make it executable (chmod +x) or install what it needs, then run forge-test again"* ]]
	# make running a missing program through the shell: exit 2, the shell's line names it
	printf 'check:\n\tno-such-test-runner-xyz && true\n' >"$REPO/Makefile"
	run -5 --separate-stderr ft --repo "$REPO" --command 'make check' --no-input </dev/null
	[[ $stderr == *"the tests could not run: 'no-such-test-runner-xyz' was not found"* ]]
	assert_equal "$(tests_of '.exit_code')" 2
	# make running it itself, no shell: make's "make: X: No such file or directory", Error 127
	# (before: exit 1, a real failure: the tests that never ran taken for failing)
	printf 'check:\n\tno-such-test-runner-xyz ./...\n' >"$REPO/Makefile"
	run -5 --separate-stderr ft --repo "$REPO" --command 'make check' --no-input </dev/null
	[[ $stderr == *"the tests could not run: 'no-such-test-runner-xyz' was not found (make: no-such-test-runner-xyz: No such file or directory): install it, then run forge-test again"* ]]
	assert_equal "$(tests_of '[.exit_code, .failures[0].classification]')" '[2,"environment"]'
	assert_equal "$(events_of 'select(.type == "test.could_not_run") | .payload | [.exit_code, .missing]')" '[2,"no-such-test-runner-xyz"]'
	# in a sub-make too (make[1]: …), and make's own -f file it cannot read is not a program
	printf 'check:\n\t$(MAKE) -f inner.mk\n' >"$REPO/Makefile"
	printf 'all:\n\tno-such-test-runner-xyz\n' >"$REPO/inner.mk"
	run -5 --separate-stderr ft --repo "$REPO" --command 'make check' --no-input </dev/null
	[[ $stderr == *"the tests could not run: 'no-such-test-runner-xyz' was not found (make[1]: no-such-test-runner-xyz: No such file or directory)"* ]]
	run -1 --separate-stderr ft --repo "$REPO" --command 'make -f no-such.mk' --no-input </dev/null
	assert_equal "$(tests_of '.failures[0].classification')" '"real"'
	# a test that failed on a missing program among tests that ran is a test's failure (exit 1)
	run -1 --separate-stderr ft --repo "$REPO" --no-input --command "printf '1..2\nok 1 a\nnot ok 2 tool\n# sh: 1: frobnicate: not found\n'" </dev/null
	assert_equal "$(tests_of '[.failures[] | .classification]')" '["environment"]'
}

@test "the test command runs in the sandbox: no writes outside the worktree, no network, no key in /proc" {
	run -0 "$FORGE_TESTBIN/tool-run" --features
	FEATURES=$output
	[ "$(jq -r .landlock.available <<<"$FEATURES")" = true ] || skip "no Landlock on this kernel"
	make_repo "$REPO"
	OUT="$BATS_TEST_TMPDIR/outside"
	mkdir -p "$OUT"
	run -0 --separate-stderr env ANTHROPIC_API_KEY=sk-ant-secret-123456789 ft --no-input --repo "$REPO" \
		--command "echo x >$OUT/written; echo in >inside; cat /proc/\$PPID/environ >env-of-parent; awk 'NR > 2' /proc/net/dev | wc -l >ifaces; true" </dev/null
	[ ! -e "$OUT/written" ]
	[ "$(cat "$REPO/inside")" = in ]
	run -1 grep -c sk-ant-secret "$REPO/env-of-parent"
	if [ "$(jq -r .network_namespace.available <<<"$FEATURES")" = true ]; then
		[ "$(cat "$REPO/ifaces")" -eq 1 ]        # lo alone
	fi
}

@test "a test command over its time limit is stopped as a whole: an environment failure" {
	make_repo "$REPO"
	mkdir -p "$REPO/.forge"
	echo '{"tools":{"test_command":"sleep 30 & sleep 30","test_timeout_s":1}}' >"$REPO/.forge/config.json"
	SECONDS=0
	run -1 --separate-stderr ft --repo "$REPO" --no-input </dev/null
	[ "$SECONDS" -lt 20 ]
	assert_equal "$(tests_of '[.timed_out, .failures[0].test, .failures[0].classification, .rerun]')" \
		'[true,"timeout","environment",null]'
}

@test "guard: {\"task\": …} or --task has nothing approved: skipped (exit 1), no test runs; --force runs them" {
	# (before: taken as a run on the repository alone, the checkout tested, ok)
	bats_repo '@test "one" { touch "$BATS_TEST_DIRNAME/../ran"; }'
	run -1 --separate-stderr bash -c "cd '$REPO' && echo '{\"task\":\"add mul\"}' | ft"
	assert_equal "$(tail -n 1 <<<"$output" | jq -c '[.status, has("tests"), .task.description]')" '["skipped",false,"add mul"]'
	assert_equal "$(events_of 'select(.type == "phase.skipped") | .payload.reason')" \
		'"the changes have not been reviewed: run forge-review first, or --force"'
	run -1 --separate-stderr bash -c "cd '$REPO' && ft --task 'add mul' </dev/null"
	assert_equal "$(tail -n 1 <<<"$output" | jq -r .status)" skipped
	[ ! -e "$REPO/ran" ]
	run -0 --separate-stderr bash -c "cd '$REPO' && ft --force --task 'add mul' </dev/null"
	[ -e "$REPO/ran" ]
}

@test "a state whose review approved: tests run in task.worktree" {
	bats_repo '@test "one" { true; }'
	state=$(jq -cn --arg r "$REPO" '{kind:"state",v:1,trace_id:"01TEST",phase:"review",status:"ok",
		task:{description:"t",repo:$r,worktree:$r},review:{findings:[],decision:"approve"}}')
	run -0 --separate-stderr bash -c "cd / && ft <<<'$state'"
	assert_equal "$(tail -n 1 <<<"$output" | jq -c '[.phase, .status, .trace_id, .tests.summary.passed, .review.decision]')" \
		'["test","ok","01TEST",1,"approve"]'
}

@test "guard: a review that did not approve skips the phase (exit 1); --force runs it" {
	bats_repo '@test "one" { true; }'
	state=$(jq -cn --arg r "$REPO" '{kind:"state",v:1,trace_id:"01TEST",phase:"review",status:"rejected",
		task:{description:"t",repo:$r,worktree:$r},review:{findings:[],decision:"request_changes"}}')
	run -1 --separate-stderr bash -c "ft <<<'$state'"
	assert_equal "$(tail -n 1 <<<"$output" | jq -c '[.status, has("tests")]')" '["skipped",false]'
	assert_equal "$(events_of 'select(.type == "phase.skipped") | .payload.reason | test("did not approve")')" true
	run -0 --separate-stderr bash -c "ft --force <<<'$state'"
	assert_equal "$(tail -n 1 <<<"$output" | jq -r .status)" ok
}

@test "guard: a failed review phase, or a review of another commit, is not tested (exit 1); the commit tested is recorded" {
	bats_repo '@test "one" { true; }'
	head=$(git -C "$REPO" rev-parse HEAD) old=$(git -C "$REPO" rev-parse HEAD~1)
	s() { jq -cn --arg r "$REPO" --arg h "$head" --arg o "$old" '{kind:"state",v:1,trace_id:"01TEST",phase:"review",
		status:"ok",task:{description:"t",repo:$r,worktree:$r},changes:{files:[],commit:$h,base_commit:$o},
		review:{findings:[],decision:"approve",commit:$h}} | '"$1"; }
	state=$(s '.status = "failed" | del(.review.commit)')
	run -1 --separate-stderr bash -c "ft <<<'$state'"
	assert_equal "$(tail -n 1 <<<"$output" | jq -c '[.status, has("tests")]')" '["skipped",false]'
	[[ "$stderr" == *"the input state's review phase ended 'failed'"*"run forge-review (and what comes before it) again, or --force"* ]]
	state=$(s '.review.commit = $o')
	run -1 --separate-stderr bash -c "ft <<<'$state'"
	[[ "$stderr" == *"the review is of commit ${old:0:12}, but the changes are now commit ${head:0:12}"* ]]
	state=$(s .)
	run -0 --separate-stderr bash -c "ft <<<'$state'"
	assert_equal "$(tests_of .commit)" "\"$head\""
}

@test "bad input: exit 2 with input.rejected, events before it forwarded" {
	make_repo "$REPO"
	run -2 --separate-stderr bash -c "printf '%s\n%s\n' '{\"kind\":\"event\",\"id\":\"01JDB3ABCDEFGHJKMNPQRSTVWX\",\"trace_id\":\"t\",\"ts\":\"2026-01-01T00:00:00.000Z\",\"source\":\"x\",\"type\":\"x.y\",\"payload\":{}}' '{\"kind\":\"state\",' | ft --repo '$REPO'"
	assert_equal "$(jq -sc '[.[] | .type // .kind]' <<<"$output")" '["x.y","input.rejected"]'
	assert_equal "$(jq -r 'select(.type == "input.rejected") | .payload.line' <<<"$output")" 2
}

@test "a failure is matched on its rerun by its file too: the passing test of the same name elsewhere does not make it flaky" {
	make_repo "$REPO"
	mkdir -p "$REPO/tests"
	printf '@test "works" {\n  true\n}\n' >"$REPO/tests/a.bats"
	printf '@test "works" {\n  false\n}\n' >"$REPO/tests/b.bats"
	git -C "$REPO" add -A && git -C "$REPO" commit -qm tests
	run -1 --separate-stderr bash -c "cd '$REPO' && ft --no-input </dev/null"
	assert_equal "$(tests_of '[.summary.failed, .summary.flaky, .rerun.exit_code, [.failures[] | [.test, .file, .classification]]]')" \
		'[1,0,1,[["works","tests/b.bats","real"]]]'
	# a TAP point printed twice, passing and failing, every run: not flaky
	run -1 --separate-stderr ft --repo "$REPO" --no-input --command "printf '1..2\nok 1 a\nnot ok 2 a\n'" </dev/null
	assert_equal "$(tests_of '[.summary.failed, .summary.flaky, [.failures[] | .classification]]')" '[1,0,["real"]]'
	# JUnit: the same name in two classes
	cat >"$REPO/junit.sh" <<-'EOF2'
		cat >junit.xml <<XML
		<testsuite><testcase classname="test_a" name="test_same"/>
		<testcase classname="test_b" name="test_same"><failure message="1 != 2"/></testcase></testsuite>
		XML
		exit 1
	EOF2
	run -1 --separate-stderr ft --repo "$REPO" --no-input --command "sh junit.sh" </dev/null
	assert_equal "$(tests_of '[.format, .summary.failed, .summary.flaky, [.failures[] | .classification]]')" \
		'["junit",1,0,["real"]]'
}

@test "past the limit of test cases kept, a failure, the plan and a timeout still count: exit 1, the truncation said" {
	make_repo "$REPO"
	printf '%s\n' 'echo "1..100006"' \
		"awk 'BEGIN{for(i=1;i<100005;i++) print \"ok \" i \" t\" i; print \"not ok 100005 the_last\"}'" \
		'exit 1' >"$REPO/gen.sh"
	run -1 --separate-stderr ft --repo "$REPO" --no-input --command "sh gen.sh" </dev/null
	assert_equal "$(tests_of '[.truncated, .summary.total, .summary.failed]')" '[true,100006,2]'
	assert_equal "$(tests_of '[.failures[] | [.test, .classification]]')" \
		'[["TAP plan","real"],["unnamed failures","real"]]'
	assert_equal "$(tests_of '.note')" \
		'"1 planned test did not run; only the first 100000 test cases are kept: 5 more counted (1 failing)"'
	# the whole command's timeout after more than the limit of passing points
	echo '{"tools":{"test_timeout_s":2}}' >"$BATS_TEST_TMPDIR/t.json"
	run -1 --separate-stderr ft --repo "$REPO" --no-input --config "$BATS_TEST_TMPDIR/t.json" \
		--command "awk 'BEGIN{print \"1..100001\"; for(i=1;i<=100001;i++) print \"ok \" i}'; sleep 60" </dev/null
	assert_equal "$(tests_of '[.timed_out, .truncated, [.failures[] | .test]]')" '[true,true,["timeout"]]'
}

@test "a test's own text is not an environment failure: a 'not found' or 'Connection refused' in its assertion or source is real" {
	make_repo "$REPO"
	cat >"$REPO/t.sh" <<-'EOF'
		echo 1..3
		echo 'not ok 1 lookup'
		echo "#   KeyError: 'user 1: not found'"
		echo '#   >  raise KeyError(f"user {uid}: not found")'
		echo 'not ok 2 retry'
		echo '#       def get(): raise ConnectionRefusedError("Connection refused")'
		echo 'not ok 3 tool'
		echo '# /w/tests/t.bats: line 3: frobnicate: command not found'
	EOF
	run -1 --separate-stderr ft --repo "$REPO" --no-input --command "sh t.sh" </dev/null
	assert_equal "$(tests_of '[.failures[] | [.test, .classification]]')" \
		'[["lookup","real"],["retry","real"],["tool","environment"]]'
}

@test "a read-only file system, a disk quota, the process and file-size limits are environment failures" {
	make_repo "$REPO"
	cat >"$REPO/t.sh" <<-'EOF'
		echo 1..6
		echo 'not ok 1 link'
		echo '# ld: cannot open output file calc: Read-only file system'
		echo 'not ok 2 copy'
		echo "# cp: error writing 'big': Disk quota exceeded"
		echo 'not ok 3 spawn'
		echo '# sh: 1: Cannot fork'
		echo 'not ok 4 build'
		echo '# make: /bin/sh: Resource temporarily unavailable'
		echo 'not ok 5 write'
		echo '# File size limit exceeded'
		echo 'not ok 6 socket'
		echo '# recv: Resource temporarily unavailable'
	EOF
	run -1 --separate-stderr ft --repo "$REPO" --no-input --command "sh t.sh" </dev/null
	assert_equal "$(tests_of '[.failures[] | .classification]')" \
		'["environment","environment","environment","environment","environment","real"]'
}

# A test command that speaks as gettext does (LANGUAGE, then LC_ALL,
# LC_MESSAGES, LANG; LANGUAGE not in the C locale): German under a German
# locale.  It also writes the locale variables it got to locale-seen.
GERMAN_LD='l=${LC_ALL:-${LC_MESSAGES:-$LANG}}
case $l in C|C.*|POSIX|"") ;; *) l=${LANGUAGE:-$l} ;; esac
env | grep -E "^(LANG|LANGUAGE|LC_[A-Z]+)=" | sort >locale-seen
case $l in
de*) echo "ld: cannot open output file calc: Auf dem Gerät ist kein Speicherplatz mehr verfügbar" ;;
*) echo "ld: cannot open output file calc: No space left on device" ;;
esac
exit 1'

@test "the test command's messages are untranslated: a full disk under a German locale is an environment failure; the rest of the locale stays" {
	make_repo "$REPO"
	local unset="-u LANG -u LANGUAGE -u LC_ALL -u LC_MESSAGES -u LC_CTYPE -u LC_COLLATE -u LC_NUMERIC"
	for lc in LC_ALL=de_DE.UTF-8 LANG=de_DE.UTF-8 LC_MESSAGES=de_DE.UTF-8 "LANG=en_US.UTF-8 LANGUAGE=de"; do
		# shellcheck disable=SC2086 # the words of $unset and $lc are meant
		run -1 --separate-stderr env $unset $lc ft --repo "$REPO" --no-input --command "$GERMAN_LD" </dev/null
		assert_equal "$lc: $(tests_of '.failures[0] | [.classification, .output]')" \
			"$lc: [\"environment\",\"ld: cannot open output file calc: No space left on device\\n\"]"
	done
	# LC_ALL became LANG (the categories it overrode go with it); LANGUAGE is gone
	# shellcheck disable=SC2086
	run -1 --separate-stderr env $unset LC_ALL=de_DE.UTF-8 LC_COLLATE=sv_SE.UTF-8 LANGUAGE=de \
		ft --repo "$REPO" --no-input --command "$GERMAN_LD" </dev/null
	run -0 cat "$REPO/locale-seen"
	assert_output --regexp $'^LANG=de_DE.UTF-8\nLC_MESSAGES=C(.UTF-8)?$'
	# shellcheck disable=SC2086
	run -1 --separate-stderr env $unset LANG=de_DE.UTF-8 LC_CTYPE=tr_TR.UTF-8 LC_COLLATE=sv_SE.UTF-8 \
		ft --repo "$REPO" --no-input --command "$GERMAN_LD" </dev/null
	run -0 cat "$REPO/locale-seen"
	assert_output --regexp $'^LANG=de_DE.UTF-8\nLC_COLLATE=sv_SE.UTF-8\nLC_CTYPE=tr_TR.UTF-8\nLC_MESSAGES=C(.UTF-8)?$'
}

@test "the test command's messages are untranslated by the C library too: a German locale made with localedef" {
	[ -r /usr/share/locale/de/LC_MESSAGES/coreutils.mo ] || skip "no German messages of coreutils"
	mkdir -p "$BATS_TEST_TMPDIR/locale"
	# localedef exits 1 on a warning, with the locale made
	localedef -i de_DE -f UTF-8 "$BATS_TEST_TMPDIR/locale/de_DE.UTF-8" >/dev/null 2>&1 ||
		[ -d "$BATS_TEST_TMPDIR/locale/de_DE.UTF-8" ] ||
		skip "localedef cannot make de_DE.UTF-8 (the locales package; scripts/install-deps installs it)"
	export LOCPATH="$BATS_TEST_TMPDIR/locale"
	run env LC_ALL=de_DE.UTF-8 ls /no-such-file-forge
	[[ "$output" == *"nicht gefunden"* ]] || skip "ls does not speak German here"
	make_repo "$REPO"
	cat >"$REPO/t.sh" <<-'EOF'
		ls /no-such-file-forge
		/usr/bin/printf "%'d\n" 1234567
		exit 1
	EOF
	printf '{"sandbox":{"env":["LOCPATH"],"read_paths":["%s"]}}\n' "$LOCPATH" >"$BATS_TEST_TMPDIR/loc.json"
	for lc in LC_ALL=de_DE.UTF-8 "LANG=de_DE.UTF-8 LANGUAGE=de"; do
		# shellcheck disable=SC2086 # the words of $lc are meant
		run -1 --separate-stderr env -u LANG -u LANGUAGE -u LC_ALL -u LC_MESSAGES -u LC_NUMERIC $lc \
			ft --repo "$REPO" --no-input --config "$BATS_TEST_TMPDIR/loc.json" --command "sh t.sh" </dev/null
		# English messages; the numbers still German
		assert_equal "$lc: $(tests_of '.failures[0].output')" \
			"$lc: \"ls: cannot access '/no-such-file-forge': No such file or directory\\n1.234.567\\n\""
	done
}

@test "what the tests leave untracked in a run's worktree is removed after them; files there before stay; not in a checkout" {
	# (before: a bounce's or resume's forge-implement took them for a
	# stopped phase's work: "the run's worktree had changes its state does
	# not have", a saved ref of .pyc files, hunt68 #2)
	bats_repo '@test "makes files" { d="$BATS_TEST_DIRNAME/.."; mkdir -p "$d/build/__pycache__"; echo x >"$d/build/__pycache__/m.pyc"; echo b >"$d/out.bin"; echo i >"$d/made.log"; }'
	printf '*.log\n' >"$REPO/.gitignore" && git -C "$REPO" add .gitignore && git -C "$REPO" commit -qm ignore
	WT="$BATS_TEST_TMPDIR/wt"
	git -C "$REPO" worktree add -q "$WT" -b forge/t1
	# the model's own file, not committed (forge-implement commits it: it stays either way)
	mkdir -p "$WT/build" && echo mine >"$WT/build/mine.txt"
	state=$(jq -nc --arg wt "$WT" '{kind: "state", v: 1, trace_id: "t1", phase: "review", status: "ok",
		task: {description: "x", worktree: $wt}}')
	run -0 --separate-stderr bash -c "cd '$REPO' && ft --force <<<'$state'"
	assert_equal "$(events_of 'select(.type == "test.cleaned") | .payload.removed')" '["build/__pycache__/m.pyc","out.bin"]'
	[ ! -e "$WT/out.bin" ] && [ ! -e "$WT/build/__pycache__" ]
	[ "$(cat "$WT/build/mine.txt")" = mine ]
	[ -e "$WT/made.log" ]   # (ignored: no commit takes it)
	run -0 git -C "$WT" status --porcelain
	assert_output '?? build/'
	# run alone in a checkout, the tests leave what they leave there
	run -0 --separate-stderr bash -c "cd '$REPO' && ft --no-input </dev/null"
	[ -e "$REPO/out.bin" ] && [ -e "$REPO/build/__pycache__/m.pyc" ]
	refute_output --partial test.cleaned
}

@test "what a killed forge-test's tests left in a run's worktree (its note is still there) is removed when the tests run again" {
	bats_repo '@test "ok" { true; }'
	WT="$BATS_TEST_TMPDIR/wt"
	git -C "$REPO" worktree add -q "$WT" -b forge/t2
	echo mine >"$WT/mine.txt"
	# a forge-test killed in its command: the untracked files noted before
	# it, a report it made after
	printf '{"mine.txt":true}' >"$REPO/.git/worktrees/wt/forge-command-untracked.json"
	echo '<testsuite/>' >"$WT/test-results.xml"
	state=$(jq -nc --arg wt "$WT" '{kind: "state", v: 1, trace_id: "t2", phase: "review", status: "ok",
		task: {description: "x", worktree: $wt}}')
	run -0 --separate-stderr bash -c "cd '$REPO' && ft --force <<<'$state'"
	assert_equal "$(events_of 'select(.type == "worktree.cleaned") | .payload.removed')" '["test-results.xml"]'
	[ ! -e "$WT/test-results.xml" ] && [ "$(cat "$WT/mine.txt")" = mine ]
	[ ! -e "$REPO/.git/worktrees/wt/forge-command-untracked.json" ]
}

@test "a FIFO the tests left where a failure is located is not opened: the analysis goes on without it" {
	make_repo "$REPO"
	curl -sS -f -X POST "$MOCK_URL/_mock/reset" >/dev/null
	mock '[{"tool_calls":[{"name":"report_failure_analysis","input":{"analyses":[{"test":"b","root_cause":"x","suggested_fix":"y","confidence":0.9}]}}]}]'
	export ANTHROPIC_API_KEY=sk-ant-test-key-0000000000 FORGE_BASE_URL="$MOCK_URL" FORGE_PROVIDER=anthropic
	printf '%s\n' 'line one' 'line two' 'line three' >"$REPO/real.py"
	# (timeout(1) stops a forge-test that would block on the FIFO for ever)
	run -1 --separate-stderr timeout 60 ft --repo "$REPO" --no-input \
		--command "mkfifo trap.py; printf '1..2\nnot ok 1 b\n  ---\n  location: trap.py:3:1\n  ...\nnot ok 2 c\n  ---\n  location: real.py:2:1\n  ...\n'" </dev/null
	assert_equal "$(tests_of '[.failures[] | [.test, .file, .root_cause]]')" '[["b","trap.py","x"],["c","real.py",null]]'
	run jq -r '.[0].body.messages[0].content' <<<"$(curl -sS -f "$MOCK_URL/_mock/requests")"
	refute_output --partial 'source trap.py'
	assert_output --partial '>    2  line two'
}

@test "FIFOs a run's commands left under build files' names are not opened: the test command is detected past them" {
	bats_repo '@test "one" { true; }'
	mkfifo "$REPO/GNUmakefile" "$REPO/makefile" "$REPO/package.json" "$REPO/.gitmodules" "$REPO/.gitattributes"
	# (before: forge-test blocked for ever opening the FIFO GNUmakefile, hunt27 #3;
	# timeout(1) stops one that would)
	run -0 --separate-stderr timeout 60 ft --repo "$REPO" --no-input </dev/null
	assert_equal "$(tests_of '[.command, .summary.passed]')" '["bats tests",1]'
}

@test "TAP with more test points than its plan is a failure (prove's bad plan)" {
	make_repo "$REPO"
	run -1 --separate-stderr ft --repo "$REPO" --no-input --command "printf '1..2\nok 1 a\nok 2 b\nok 3 c\n'" </dev/null
	assert_equal "$(tests_of '[.summary.passed, .summary.failed, .failures[0].test, .note]')" \
		'[3,1,"TAP plan","bad plan: 1 test more than planned ran"]'
}

@test "a failing TAP test point in the middle cut from output over 8 MiB fails the run, its exit status 0 notwithstanding" {
	make_repo "$REPO"
	# 700000 points (10 MB): the middle is cut; one fails there, one more is
	# a failing TODO (not a failure)
	cat >"$REPO/tap.awk" <<-'EOF'
		BEGIN {
			for (i = 1; i <= 700000; i++)
				print (i == 350000 ? "not ok " i " - middle" : i == 350001 ? "not ok " i " - later # TODO x" : "ok " i " - t")
			print "1..700000"
		}
	EOF
	git -C "$REPO" add -A && git -C "$REPO" commit -qm tap
	# (before: "ok", only a note that 1 planned test was not seen, hunt26)
	run -1 --separate-stderr ft --repo "$REPO" --no-input --command "awk -f tap.awk" </dev/null
	assert_equal "$(tests_of '[.exit_code, .summary.failed, [.failures[].test]]')" '[0,1,["TAP cut output"]]'
	[[ "$(tests_of .note)" == *'1 failing test point (\"not ok\") in the middle of the output, which was cut'* ]]
}


@test "many failures with long messages: the state lists the first 200 (messages cut), counts the rest and says where they all are" {
	# (before: every failure with its 4 KB message and output: 2500 of them
	# made a 20 MB state line, over the stream's 16 MiB limit that the next
	# filter holds it to, and a failing test phase broke the run, hunt58)
	make_repo "$REPO"
	cat >"$REPO/t.py" <<-'EOF'
		with open("junit.xml", "w") as f:
		    f.write('<?xml version="1.0"?>\n<testsuite name="s" tests="300" failures="300">\n')
		    for i in range(300):
		        f.write('<testcase classname="c" name="t%d"><failure message="%s">%s</failure></testcase>\n'
		                % (i, "m" * 6000, "x" * 100))
		    f.write('</testsuite>\n')
		raise SystemExit(1)
	EOF
	echo junit.xml >"$REPO/.gitignore"
	git -C "$REPO" add -A && git -C "$REPO" commit -qm tests
	echo '{"tools":{"test_command":"python3 t.py","test_report":"junit.xml"}}' >"$BATS_TEST_TMPDIR/c.json"
	run -1 --separate-stderr bash -c "cd '$REPO' && ft --no-input --config '$BATS_TEST_TMPDIR/c.json' </dev/null"
	assert_equal "$(tests_of '[.summary.failed, (.failures | length), .failures_omitted, .failures[0].test, .failures[199].test]')" \
		'[300,200,100,"t0","t199"]'
	assert_equal "$(tests_of '[.failures[] | .message | length] | max')" 4003
	[[ $(tests_of '.note') == '"only the first 200 failures are listed: 100 more counted in the summary (100 failing, 0 flaky); all of them are in '*'/repo/junit.xml"' ]]
	[[ $stderr == *"forge-test: only the first 200 failures are listed: 100 more"* ]]
}

@test "thousands of failures are rerun by name in batches that each fit one command (all flaky here)" {
	# (before: one -f regex naming all 4000 was 171 KB, over Linux's 128 KiB
	# for one argument: the rerun could not start, said nowhere, and every
	# one stayed real, hunt58)
	make_repo "$REPO"
	mkdir -p "$REPO/tests"
	cat >"$REPO/bats" <<-'EOF'
		#!/usr/bin/env python3
		import sys
		print("1..4000")
		rerun = "-f" in sys.argv
		for i in range(1, 4001):
		    print("%s %d a rather descriptive test name number %d" % ("ok" if rerun else "not ok", i, i))
		sys.exit(0 if rerun else 1)
	EOF
	git -C "$REPO" add -A && git -C "$REPO" commit -qm tests
	echo '{"tools":{"test_command":"python3 bats tests"}}' >"$BATS_TEST_TMPDIR/c.json"
	run -0 --separate-stderr bash -c "cd '$REPO' && ft --no-input --config '$BATS_TEST_TMPDIR/c.json' </dev/null"
	assert_equal "$(tests_of '.summary')" '{"total":4000,"passed":4000,"failed":0,"skipped":0,"flaky":4000}'
	# each event lists 1000 names at most, and counts the rest
	assert_equal "$(events_of 'select(.type == "test.rerun") | .payload | [.batch, .batches, .exit_code, (.command | length < 65536), (.flaky | length), .still_failing]' | tr '\n' ' ')" \
		'[1,3,0,true,1000,[]] [2,3,0,true,1000,[]] [3,3,0,true,1000,[]] '
	assert_equal "$(events_of 'select(.type == "test.rerun") | .payload.flaky_not_listed + 1000' | jq -s add)" 4000
	assert_equal "$(tests_of '[.rerun.batches, .rerun.exit_code, .failures_omitted]')" '[3,0,3800]'
}

# node_run: $REPO a Node project whose tests need jest, a devDependency: the
# checkout has node_modules (a fake jest, offline), git ignores it; $WT a
# run's worktree of it (made from git: no node_modules); $STATE a state of
# that run; npm a stand-in that runs scripts.test with node_modules/.bin
# first in PATH, as npm does.  The fake jest passes, says where it was
# found, and fails when it could write where it lies.
node_run() {
	make_repo "$REPO"
	printf 'node_modules/\n.venv/\n' >"$REPO/.gitignore"
	echo '{"name":"x","version":"1.0.0","scripts":{"test":"jest"},"devDependencies":{"jest":"^29"}}' >"$REPO/package.json"
	git -C "$REPO" add -A && git -C "$REPO" commit -qm node
	mkdir -p "$REPO/node_modules/.bin" "$REPO/node_modules/jest"
	cat >"$REPO/node_modules/jest/jest.sh" <<-'EOF2'
		#!/bin/sh
		echo "1..1"
		if touch "$(dirname "$0")/written" 2>/dev/null; then echo "not ok 1 jest could write the checkout's node_modules"; exit 1; fi
		echo "ok 1 jest at $0 NODE_PATH=${NODE_PATH:-}"
	EOF2
	chmod +x "$REPO/node_modules/jest/jest.sh"
	ln -s ../jest/jest.sh "$REPO/node_modules/.bin/jest"
	cat >"$BATS_TEST_TMPDIR/bin/npm" <<-'EOF2'
		#!/bin/sh
		PATH="$PWD/node_modules/.bin:$PATH" exec sh -c "$(jq -r .scripts.test package.json)"
	EOF2
	chmod +x "$BATS_TEST_TMPDIR/bin/npm"
	WT="$BATS_TEST_TMPDIR/wt"
	git -C "$REPO" worktree add -q "$WT" -b forge/n1
	STATE=$(jq -nc --arg wt "$WT" '{kind: "state", v: 1, trace_id: "n1", phase: "review", status: "ok",
		task: {description: "x", worktree: $wt}}')
}

# The worktree as the run leaves it: nothing of the checkout's dependencies.
worktree_clean() {
	[ ! -e "$WT/node_modules" ] && [ ! -e "$WT/.venv" ]
	run -0 git -C "$WT" status --porcelain --ignored
	assert_output ''
	run -0 git -C "$REPO" ls-tree -r --name-only forge/n1
	refute_output --partial node_modules
	[ ! -e "$REPO/node_modules/jest/written" ]
}

@test "a run's tests find the devDependencies installed in the checkout (git-ignored node_modules), read-only; the worktree stays clean" {
	# (before: "sh: 1: jest: not found", an environment failure in every run of a Node project)
	node_run
	run -0 --separate-stderr bash -c "cd '$REPO' && ft --force <<<'$STATE'"
	assert_equal "$(tests_of '[.command, .summary.passed, .summary.failed]')" '["npm test",1,0]'
	assert_equal "$(events_of 'select(.type == "sandbox.dependencies") | .payload.lent')" \
		"[{\"dir\":\"node_modules\",\"from\":\"$(realpath "$REPO")/node_modules\"}]"
	worktree_clean
}

@test "without the mount view (sandbox.namespaces off) the checkout's node_modules is reached through PATH and NODE_PATH" {
	node_run
	echo '{"sandbox":{"namespaces":"off"}}' >"$BATS_TEST_TMPDIR/off.json"
	run -0 --separate-stderr bash -c "cd '$REPO' && ft --force --config '$BATS_TEST_TMPDIR/off.json' --junit '$BATS_TEST_TMPDIR/j.xml' <<<'$STATE'"
	assert_equal "$(tests_of '[.summary.passed, .summary.failed]')" '[1,0]'
	grep -q "jest at $(realpath "$REPO")/node_modules/.bin/jest NODE_PATH=$(realpath "$REPO")/node_modules" "$BATS_TEST_TMPDIR/j.xml"
	worktree_clean
}

@test "a checkout's node_modules that is a link out of the checkout is not lent (it would make what it points to readable)" {
	node_run
	mv "$REPO/node_modules" "$BATS_TEST_TMPDIR/elsewhere"
	ln -s "$BATS_TEST_TMPDIR/elsewhere" "$REPO/node_modules"
	# (jest is then not found: the tests could not run, exit 5)
	run -5 --separate-stderr bash -c "cd '$REPO' && ft --force <<<'$STATE'"
	refute_output --partial sandbox.dependencies
	[ ! -e "$WT/node_modules" ]
}

@test "a run's worktree with a node_modules of its own keeps it: nothing of the checkout's is lent" {
	node_run
	mkdir -p "$WT/node_modules/.bin"
	printf '#!/bin/sh\necho 1..1\necho "not ok 1 own"\nexit 1\n' >"$WT/node_modules/.bin/jest"
	chmod +x "$WT/node_modules/.bin/jest"
	run -1 --separate-stderr bash -c "cd '$REPO' && ft --force <<<'$STATE'"
	assert_equal "$(tests_of '[.failures[].test]')" '["own"]'
	refute_output --partial sandbox.dependencies
	[ -x "$WT/node_modules/.bin/jest" ]
}

@test "the checkout's Python virtualenv (.venv) is the run's tests' VIRTUAL_ENV, its scripts found by PATH and at .venv/bin, with and without the mount view" {
	node_run
	rm -rf "$REPO/node_modules"
	mkdir -p "$REPO/.venv/bin"
	printf 'home = /usr/bin\ninclude-system-site-packages = false\n' >"$REPO/.venv/pyvenv.cfg"
	ln -s /bin/sh "$REPO/.venv/bin/python"
	# a script's #! names the virtualenv's python where it was made
	printf '#!%s/.venv/bin/python\necho 1..1\necho "ok 1 pytest VIRTUAL_ENV=$VIRTUAL_ENV"\n' "$(realpath "$REPO")" >"$REPO/.venv/bin/pytest"
	chmod +x "$REPO/.venv/bin/pytest"
	echo '{"sandbox":{"namespaces":"off"}}' >"$BATS_TEST_TMPDIR/off.json"
	for cmd in pytest .venv/bin/pytest; do
		for config in /dev/null "$BATS_TEST_TMPDIR/off.json"; do
			[ "$cmd.$config" = ".venv/bin/pytest.$BATS_TEST_TMPDIR/off.json" ] && continue   # (the view's alone)
			run -0 --separate-stderr bash -c "cd '$REPO' && ft --force --config '$config' --command '$cmd' --junit '$BATS_TEST_TMPDIR/j.xml' <<<'$STATE'"
			assert_equal "$cmd $config $(tests_of '[.summary.passed, .summary.failed]')" "$cmd $config [1,0]"
			assert_equal "$(events_of 'select(.type == "sandbox.dependencies") | .payload.lent[].dir')" '".venv"'
			grep -q "VIRTUAL_ENV=$(realpath "$REPO")/.venv" "$BATS_TEST_TMPDIR/j.xml"
			worktree_clean
		done
	done
}

@test "a package directory's node_modules in the checkout (packages/web) is lent at its place in the run's worktree" {
	run -0 "$FORGE_TESTBIN/tool-run" --features
	[ "$(jq -r .namespaces.available <<<"$output")" = true ] || skip "no mount view here: only the root's node_modules is in PATH then"
	node_run
	rm -rf "$REPO/node_modules"
	mkdir -p "$REPO/packages/web" && cp "$REPO/package.json" "$REPO/packages/web/"
	git -C "$REPO" add -A && git -C "$REPO" commit -qm web && git -C "$WT" merge -q --ff-only main
	mkdir -p "$REPO/packages/web/node_modules/.bin"
	printf '#!/bin/sh\necho 1..1\necho "ok 1 web jest"\n' >"$REPO/packages/web/node_modules/.bin/jest"
	chmod +x "$REPO/packages/web/node_modules/.bin/jest"
	run -0 --separate-stderr bash -c "cd '$REPO' && ft --force --command 'cd packages/web && npm test' <<<'$STATE'"
	assert_equal "$(tests_of '[.summary.passed, .summary.failed]')" '[1,0]'
	assert_equal "$(events_of 'select(.type == "sandbox.dependencies") | .payload.lent[].dir')" '"packages/web/node_modules"'
	[ ! -e "$WT/packages/web/node_modules" ]
	run -0 git -C "$WT" status --porcelain --ignored
	assert_output ''
}

@test "a virtualenv whose pyvenv.cfg names a python in the home directory does not make the home readable" {
	node_run
	mkdir -p "$REPO/.venv/bin" "$HOME/bin"
	printf 'home = %s/bin\n' "$HOME" >"$REPO/.venv/pyvenv.cfg"
	printf '#!/bin/sh\necho 1..1\necho "ok 1 pytest"\n' >"$REPO/.venv/bin/pytest"
	chmod +x "$REPO/.venv/bin/pytest"
	run -0 --separate-stderr bash -c "cd '$REPO' && ft --force --command pytest <<<'$STATE'"
	assert_equal "$(events_of 'select(.type == "sandbox.unconfined") | .payload.missing[] | select(startswith("the virtualenv")) | sub(" \\(.*"; "")')" \
		"\"the virtualenv's python: $(realpath "$HOME") is left out of what commands may read\""
}
