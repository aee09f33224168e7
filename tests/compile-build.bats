#!/usr/bin/env bats
# compile-build.bats - forge compile's build stages (forge-stage tests, code,
# integrate, review; app/stage.h) from cassettes, each run alone on a state
# made from a docs fixture, in a git repository that is the project: the
# generated tests are really run (pytest for the todo API, make + TAP for a
# small C library) and really fail after `tests`, really pass after `code`;
# `code` fails when a test still fails or when it edits a test file;
# `review` marks a rule violated when its test fails; a malformed document
# goes back to the model; the four stages piped by hand end passed.

bats_require_minimum_version 1.5.0

load test_helper/common

setup() {
	forge_setup
	FIX="$FORGE_ROOT/tests/fixtures/compile"
	PROJECT="$BATS_TEST_TMPDIR/project"
	mkdir -p "$PROJECT"
	git -C "$PROJECT" init -q
	git -C "$PROJECT" commit -q --allow-empty -m init
	cd "$PROJECT"
	export FORGE_PROVIDER=replay
}

# state DOCS: a full state (kind, v, trace_id, phase, status, task) holding
# the documents of tests/fixtures/compile/DOCS.
state() {
	jq -c '. + {kind:"state", v:1, trace_id:"t-compile", phase:"schema", status:"ok",
		    task:{description:.compile.idea}}' "$FIX/$1"
}

replay() {
	export FORGE_CASSETTE="$FIX/$1"
}

last_state() {
	tail -n 1 <<<"$output"
}

reason() {
	jq -r 'select(.type == "phase.completed") | .payload.reason' <<<"$output"
}

# red: the todo project after the tests stage (its state in $BATS_TEST_TMPDIR/red.json).
red() {
	replay todo-build.jsonl
	state todo-docs.json | forge-stage tests | tail -n 1 >"$BATS_TEST_TMPDIR/red.json"
	jq -e '.status == "ok"' "$BATS_TEST_TMPDIR/red.json" >/dev/null
}

@test "tests (python): one test per rule written into the project, really run by pytest, every one failing" {
	replay todo-build.jsonl
	run -0 --separate-stderr bash -c "jq -c '. + {kind:\"state\", v:1, trace_id:\"t\", phase:\"schema\", status:\"ok\", task:{description:\"todo\"}}' '$FIX/todo-docs.json' | forge-stage tests"
	last_state | jq -e '
	  .phase == "tests" and .status == "ok" and
	  (.test_suite | .language == "python" and .framework == "pytest" and
	    ([.tests[] | .rule] == ["R1","R2","R3","R4","R5","R6"]) and
	    ([.tests[] | .status] | unique == ["failing"]) and
	    (.tests[0] | .name == "test_r1_create_stores_the_item" and .file == "tests/test_todo_api.py") and
	    (.digests | keys == ["tests/test_todo_api.py"]) and
	    (.run | .passed == 0 and .failed == 6 and .format == "junit" and .exit_status == 1) and
	    ([.run.results[].message] | all(test("NotImplementedError"))))'
	[ "$(reason)" = "6 tests for 6 rules, 6 failing as they must" ]
	# the files are in the project, and pytest there agrees they fail
	[ -f tests/test_todo_api.py ]
	[ -f todo_api/app.py ]
	run -1 pytest -q -p no:cacheprovider
	assert_output --partial "6 failed"
}

@test "tests: a rule without a test and a test that passes before the code exists fail the stage, naming them" {
	replay build-todo-green.jsonl
	state todo-docs.json >"$BATS_TEST_TMPDIR/in.json"
	run -5 --separate-stderr forge-stage tests <"$BATS_TEST_TMPDIR/in.json"
	[ "$(reason)" = "the tests are not a failing suite: rules without a test: R5; tests that pass before the code exists: test_r6_delete_removes_the_item" ]
	last_state | jq -e '.status == "failed" and (has("test_suite") | not)'
	assert_equal "$stderr" "forge-stage tests: failed: $(reason)"
}

@test "tests: a malformed test suite goes back to the model with the schema's error, then the right one is taken" {
	replay build-todo-malformed.jsonl
	state todo-docs.json >"$BATS_TEST_TMPDIR/in.json"
	run -0 --separate-stderr forge-stage tests <"$BATS_TEST_TMPDIR/in.json"
	[ "$(jq -r 'select(.type == "agent.finish_rejected") | .payload.error' <<<"$output")" = ".: required property 'framework' is missing" ]
	last_state | jq -e '.status == "ok" and (.test_suite.tests | length) == 6'
}

@test "tests: a state without a rule set is skipped (exit 1); a state whose language has no profile fails naming the languages" {
	run -1 --separate-stderr bash -c "jq -c '{kind:\"state\", v:1, trace_id:\"t\", phase:\"init\", status:\"ok\", task:{description:\"x\"}, compile:{language:\"python\"}}' <<<'{}' | forge-stage tests"
	last_state | jq -e '.status == "skipped"'
	state todo-docs.json | jq -c '.compile.language = "cobol"' >"$BATS_TEST_TMPDIR/in.json"
	run -5 --separate-stderr forge-stage tests <"$BATS_TEST_TMPDIR/in.json"
	[ "$(reason)" = "no profile for the language 'cobol' (compile.languages has: c, python)" ]
}

@test "code (python): the implementation makes every test pass, run by pytest for real" {
	red
	# (the cassette's entries name their stage: this process gets the code entries)
	replay todo-build.jsonl
	run -0 --separate-stderr forge-stage code <"$BATS_TEST_TMPDIR/red.json"
	last_state | jq -e '
	  .phase == "code" and .status == "ok" and
	  (.implementation | .passed and .iterations == 4 and .files == ["todo_api/app.py"] and
	    ([.results[].status] | unique == ["passed"]) and (.results | length) == 6 and
	    (.results[4] | .rule == "R5" and .test == "test_r5_an_unknown_id_is_not_found"))'
	[ "$(reason)" = "all 6 tests pass" ]
	run -0 pytest -q -p no:cacheprovider
	assert_output --partial "6 passed"
}

@test "code: a test that still fails fails the stage naming it (so the node's retry runs it again)" {
	red
	replay build-todo-wrong.jsonl
	run -5 --separate-stderr forge-stage code <"$BATS_TEST_TMPDIR/red.json"
	[ "$(reason)" = "1 test fail: test_r5_an_unknown_id_is_not_found (R5)" ]
	last_state | jq -e '.status == "failed" and .implementation.passed == false and
	  ([.implementation.results[] | select(.status == "failed") | .rule] == ["R5"])'
}

@test "code: changing a test file fails the stage, even when the tests then pass" {
	red
	replay build-todo-edits-test.jsonl
	run -5 --separate-stderr forge-stage code <"$BATS_TEST_TMPDIR/red.json"
	[ "$(reason)" = "the code stage changed the tests: tests/test_todo_api.py" ]
	# the weakened test would pass: the digest decided, not the run
	run -0 pytest -q -p no:cacheprovider
}

@test "review: a rule whose test fails is violated whatever the model says; the stage is rejected" {
	red
	replay build-todo-wrong.jsonl
	forge-stage code <"$BATS_TEST_TMPDIR/red.json" | tail -n 1 >"$BATS_TEST_TMPDIR/wrong.json" || true
	run -1 --separate-stderr forge-stage review <"$BATS_TEST_TMPDIR/wrong.json"
	last_state | jq -e '
	  .phase == "review" and .status == "rejected" and
	  (.compile_review | .passed == false and .rules_violated == ["R5"] and
	    (.rules[4] | .status == "violated" and (.evidence | startswith("the test test_r5_an_unknown_id_is_not_found fails"))) and
	    ([.rules[] | select(.id != "R5") | .status] | unique == ["satisfied"]) and
	    ([.tools[].name] == ["py_compile", "pyflakes"]) and .tests.failed == 1)'
	[ "$(reason)" = "not passed: rules violated: R5" ]
}

@test "tests | code | integrate | review by hand on the todo API: red, then green, integrated, review passed" {
	replay todo-build.jsonl
	state todo-docs.json >"$BATS_TEST_TMPDIR/in.json"
	run -0 --separate-stderr bash -c "forge-stage tests <'$BATS_TEST_TMPDIR/in.json' | forge-stage code | forge-stage integrate | forge-stage review"
	last_state | jq -e '
	  .phase == "review" and .status == "ok" and
	  (.test_suite.run | .failed == 6 and .passed == 0) and
	  (.implementation | .passed and ([.results[].status] | unique == ["passed"])) and
	  (.integration | .entry_point == "todo_api/__main__.py" and .run_command == "python3 -m todo_api" and
	    .tests.passed == 6 and .tests.failed == 0) and
	  (.compile_review | .passed and .rules_violated == [] and ([.rules[].status] | unique == ["satisfied"]) and
	    ([.tools[] | .name + ":" + (.exit_status | tostring)] == ["py_compile:0", "pyflakes:0"]) and
	    (.findings == [{"severity":"info","message":"the HTTP server answers 404 for paths it does not know",
			    "file":"todo_api/app.py","tool":"model"}]))'
	# every stage ran its tests for real
	[ "$(jq -c 'select(.type == "compile.tests_run") | [.payload.stage, .payload.passed, .payload.failed]' <<<"$output" | tr -d '\n')" = \
	  '["tests",0,6]["code",6,0]["integrate",6,0]["review",6,0]' ]
	[ -f README.md ]
	[ -f requirements.txt ]
	[ -f todo_api/__main__.py ]
	run -0 python3 -c 'import sys; sys.path.insert(0, "."); import todo_api.__main__ as m; print(callable(m.serve))'
	assert_output "True"
}

@test "tests | code | review on a C library: make + TAP really run, red then green, cppcheck and cc clean" {
	replay build-strlib.jsonl
	state strlib-docs.json >"$BATS_TEST_TMPDIR/in.json"
	run -0 --separate-stderr bash -c "forge-stage tests <'$BATS_TEST_TMPDIR/in.json' | forge-stage code | forge-stage review"
	last_state | jq -e '
	  .status == "ok" and
	  (.test_suite | .language == "c" and .framework == "tap" and .command == "make -s test" and
	    .run.format == "tap" and .run.failed == 2 and
	    ([.tests[] | .rule + " " + .status] == ["R1 failing", "R2 failing"]) and
	    (.tests[0].name == "r1: a word comes back reversed") and (.digests | keys == ["tests/test_strlib.c"])) and
	  (.implementation | .passed and ([.results[] | .rule + " " + .status] == ["R1 passed", "R2 passed"])) and
	  (.compile_review | .passed and ([.tools[] | .name + ":" + (.exit_status | tostring)] == ["cppcheck:0", "cc:0"]))'
	run -0 make -s test
	assert_output "1..2
ok 1 - r1: a word comes back reversed
ok 2 - r2: an empty or NULL string is refused"
}

@test "review (c): cppcheck's error-level finding fails the review although every test passes" {
	replay build-strlib.jsonl
	state strlib-docs.json | forge-stage tests | forge-stage code | tail -n 1 >"$BATS_TEST_TMPDIR/green.json"
	# a null pointer dereference cppcheck finds
	printf 'int strlib_bad(void)\n{\n\tint *p = 0;\n\treturn *p;\n}\n' >src/bad.c
	run -1 --separate-stderr forge-stage review <"$BATS_TEST_TMPDIR/green.json"
	last_state | jq -e '.compile_review | .passed == false and .rules_violated == [] and
	  any(.findings[]; .tool == "cppcheck" and .severity == "error" and .file == "src/bad.c" and .line == 4)'
	[ "$(reason)" = "not passed: 1 error-level finding" ]
}

@test "edit mode: only the new rule's test is written (and fails), the removed rule's test is gone, then code makes all pass" {
	replay todo-build.jsonl
	state todo-docs.json | forge-stage tests | forge-stage code | tail -n 1 >"$BATS_TEST_TMPDIR/green.json"
	jq -e '.implementation.passed' "$BATS_TEST_TMPDIR/green.json"
	# the change: R6 (delete) goes, R7 (completing twice is a conflict) comes
	jq -c '.compile += {mode:"edit", request:"completing a done item is a conflict; no more deleting"} |
	  .delta = {request:.compile.request, preserve:["R1","R2","R3","R4","R5"], change:[],
		    new:[{id:"R7", if:"a client completes an item that is done already", then:"the answer is 409"}],
		    remove:["R6"], rerun:["tests","code"]} |
	  .rules.rules = ([.rules.rules[] | select(.id != "R6")] +
			  [{id:"R7", if:"a client completes an item that is done already", then:"the answer is 409", contract:"C3", entity:"todo"}])' \
		"$BATS_TEST_TMPDIR/green.json" >"$BATS_TEST_TMPDIR/edit.json"
	replay build-todo-edit.jsonl
	run -0 --separate-stderr forge-stage tests <"$BATS_TEST_TMPDIR/edit.json"
	last_state | jq -e '
	  .test_suite | ([.tests[] | .rule + " " + .status] ==
	    ["R1 passing", "R2 passing", "R3 passing", "R4 passing", "R5 passing", "R7 failing"]) and
	  ([.tests[].file] | unique == ["tests/test_todo_api.py"]) and .run.failed == 1 and .run.passed == 5'
	[ "$(reason)" = "6 tests for 6 rules, 1 failing as they must" ]
	! grep -q test_r6 tests/test_todo_api.py || false
	last_state >"$BATS_TEST_TMPDIR/red2.json"
	run -0 --separate-stderr forge-stage code <"$BATS_TEST_TMPDIR/red2.json"
	last_state | jq -e '.implementation.passed and (.implementation.results | length) == 6'
}

@test "edit mode: a test of a removed rule left in place fails the tests stage" {
	replay todo-build.jsonl
	state todo-docs.json | forge-stage tests | forge-stage code | tail -n 1 >"$BATS_TEST_TMPDIR/green.json"
	jq -c '.compile.mode = "edit" | .delta = {request:"no more deleting", preserve:["R1","R2","R3","R4","R5"],
	  change:[], new:[], remove:["R6"], rerun:["tests"]} | .rules.rules |= map(select(.id != "R6"))' \
		"$BATS_TEST_TMPDIR/green.json" >"$BATS_TEST_TMPDIR/edit.json"
	# the model writes nothing and finishes
	printf '%s\n' '{"phase":"tests","response":{"tool_calls":[{"id":"t1","name":"finish","input":{"language":"python","framework":"pytest","command":"pytest","tests":[]}}]}}' \
		>"$BATS_TEST_TMPDIR/c.jsonl"
	export FORGE_CASSETTE="$BATS_TEST_TMPDIR/c.jsonl"
	run -5 --separate-stderr forge-stage tests <"$BATS_TEST_TMPDIR/edit.json"
	[ "$(reason)" = "the tests are not a failing suite: tests of removed rules: test_r6_delete_removes_the_item" ]
}

@test "integrate: a file the document names that does not exist, or the profile's build file missing, fails the stage" {
	replay todo-build.jsonl
	state todo-docs.json | forge-stage tests | forge-stage code | tail -n 1 >"$BATS_TEST_TMPDIR/green.json"
	# the model names files it never wrote
	printf '%s\n' '{"phase":"integrate","response":{"tool_calls":[{"id":"i1","name":"finish","input":{"entry_point":"todo_api/__main__.py","run_command":"python3 -m todo_api","build_files":["pyproject.toml"],"readme":"README.md"}}]}}' \
		>"$BATS_TEST_TMPDIR/c.jsonl"
	export FORGE_CASSETTE="$BATS_TEST_TMPDIR/c.jsonl"
	run -5 --separate-stderr forge-stage integrate <"$BATS_TEST_TMPDIR/green.json"
	[ "$(reason)" = "files that do not exist: todo_api/__main__.py, README.md, pyproject.toml; no build file: the python profile needs pyproject.toml or requirements.txt" ]
	last_state | jq -e '.status == "failed" and (has("integration") | not)'
}

@test "integrate (python): pyproject.toml without requirements.txt is the build file" {
	replay todo-build.jsonl
	state todo-docs.json | forge-stage tests | forge-stage code | tail -n 1 >"$BATS_TEST_TMPDIR/green.json"
	# the cassette's integrate stage, writing pyproject.toml where it wrote requirements.txt
	jq -c 'select(.phase == "integrate") |
	  .response.tool_calls |= map(
	    if .name == "write_file" and .input.path == "requirements.txt" then
	      .input = {path:"pyproject.toml", content:"[project]\nname = \"todo-api\"\nversion = \"0.1.0\"\nrequires-python = \">=3.9\"\n"}
	    elif .name == "finish" then .input.build_files = ["pyproject.toml"] else . end)' \
		"$FIX/todo-build.jsonl" >"$BATS_TEST_TMPDIR/c.jsonl"
	export FORGE_CASSETTE="$BATS_TEST_TMPDIR/c.jsonl"
	run -0 --separate-stderr forge-stage integrate <"$BATS_TEST_TMPDIR/green.json"
	last_state | jq -e '.status == "ok" and .integration.build_files == ["pyproject.toml"] and .integration.tests.passed == 6'
	[ -f pyproject.toml ]
	[ ! -e requirements.txt ]
}

# The end to end run of issue 16: forge compile on the todo-list HTTP API from
# one cassette (todo-spec.jsonl then todo-build.jsonl), both gates paused and
# approved; the generated tests really fail after `tests` and really pass at
# the end; the product lands on the project's branch, where pytest passes.
@test "forge compile end to end: a todo-list HTTP API, gates paused then approved, red then green, landed" {
	cat "$FIX/todo-spec.jsonl" "$FIX/todo-build.jsonl" >"$BATS_TEST_TMPDIR/todo.jsonl"
	replay "$BATS_TEST_TMPDIR/todo.jsonl"
	export FORGE_CASSETTE="$BATS_TEST_TMPDIR/todo.jsonl"
	jq -r '.compile.answers[]' "$FIX/todo-docs.json" >"$BATS_TEST_TMPDIR/answers.txt"
	P="$BATS_TEST_TMPDIR/todo"
	cd "$BATS_TEST_TMPDIR"
	run -4 --separate-stderr forge compile --dir "$P" --lang python --answers answers.txt "a todo-list HTTP API"
	[[ "$stderr" == *"Gate 1: approve the rule set"* ]]
	cd "$P"
	T=$(forge history --json | head -1 | jq -r .trace_id)
	run -0 --separate-stderr forge status "$T" --json
	G=$(jq -r '.pending_gates[0].id' <<<"$output")
	run -0 forge gate approve "$G"
	run -4 --separate-stderr forge resume "$T"
	[[ "$stderr" == *"Gate 2: approve the database schema"* ]]
	run -0 --separate-stderr forge status "$T" --json
	run -0 forge gate approve "$(jq -r '.pending_gates[0].id' <<<"$output")"
	run -0 --separate-stderr forge resume "$T"
	# red first, green at the end: the real test runs of each stage
	run -0 --separate-stderr forge events replay "$T"
	runs=$(jq -c 'select(.type == "compile.tests_run") | [.payload.stage, .payload.passed, .payload.failed]' <<<"$output")
	assert_equal "$runs" '["tests",0,6]
["code",6,0]
["integrate",6,0]
["review",6,0]'
	landed=$(jq -c 'select(.type == "compile.landed") | .payload' <<<"$output")
	[[ "$landed" == *"\"branch\":\"main\""* || "$landed" == *"\"branch\":\"master\""* ]] || { echo "$landed"; false; }
	# the run's state: a failing suite, then code and review passed
	run -0 --separate-stderr forge events replay --state "$T"
	jq -e '.status == "ok" and ([.test_suite.tests[].status] | unique) == ["failing"]
		and .implementation.passed and .compile_review.passed and .compile_review.rules_violated == []
		and .rules.approved_by != null' <<<"$output" >/dev/null
	# the product is the project's: four stage commits on its branch, its tests pass for real
	run -0 git log --format=%s
	assert_line --index 0 "forge compile: the review, every rule holding"
	assert_line --index 1 "forge compile: entry point, build files, README"
	assert_line --index 3 "forge compile: the tests, one per rule, failing"
	[ -f todo_api/app.py ]
	[ -f README.md ]
	[ -f requirements.txt ]
	# the documents too, each in the commit of the stage that made it, nothing left untracked
	run -0 git ls-files .forge/compile
	assert_equal "$(sort <<<"$output" | tr '\n' ' ')" ".forge/compile/compile_review.json .forge/compile/contracts.json .forge/compile/db_schema.json .forge/compile/flows.json .forge/compile/implementation.json .forge/compile/integration.json .forge/compile/intent.json .forge/compile/rules.json .forge/compile/test_suite.json "
	run -0 git show --name-only --format= HEAD~3
	assert_line ".forge/compile/test_suite.json"
	assert_line ".forge/compile/intent.json"
	run -0 git show --name-only --format= HEAD
	assert_output ".forge/compile/compile_review.json"
	jq -e '.passed and .rules_violated == []' .forge/compile/compile_review.json
	jq -e '.approved_by != null' .forge/compile/rules.json
	[ -z "$(git status --porcelain --untracked-files=all -- .forge/compile)" ]
	run -0 pytest -q -p no:cacheprovider
	assert_output --partial "6 passed"
	# every stage's document is kept, version 1
	run -0 --separate-stderr forge compile --docs --json
	assert_equal "$(jq -s 'map(select(.version == 1)) | length' <<<"$output")" 9
}
