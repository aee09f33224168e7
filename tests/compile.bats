#!/usr/bin/env bats
# compile.bats - forge compile, the spec side (issue 16 part C): the stages
# interview, change, flows, contracts, rules and schema (forge-stage), the
# documents they keep (versions in the database, .forge/compile/KIND.json),
# the compile pipeline's gates and edit mode.  The cassette todo-spec.jsonl
# makes the stages produce the documents of tests/fixtures/compile/todo-docs.json.
# The stages after schema (tests, code, integrate, review) are BUILD's: the
# whole runs here follow $SPEC, compile.json's nodes up to schema (with a
# stand-in tests node where gate 2 is tested).

load test_helper/common

setup() {
	forge_setup
	FIX="$FORGE_ROOT/tests/fixtures/compile"
	DOCS="$FIX/todo-docs.json"
	export FORGE_PROVIDER=replay FORGE_CASSETTE="$FIX/todo-spec.jsonl"
	SPEC="$BATS_TEST_TMPDIR/spec.json"
	jq '.nodes |= map(select(.id as $i | ["interview","change","flows","contracts","rules","schema"] | index($i)))' \
		"$FORGE_ROOT/pipelines/compile.json" >"$SPEC"
	ANSWERS="$BATS_TEST_TMPDIR/answers.txt"
	jq -r '.compile.answers[]' "$DOCS" >"$ANSWERS"
	PROJECT="$BATS_TEST_TMPDIR/todo"
}

# state KEY...: a state of the fixture's compile input and the documents KEY…, for $REPO.
state() {
	local keys
	keys=$(printf '"%s",' compile "$@")
	jq -c --arg repo "$REPO" "{kind: \"state\", v: 1, trace_id: \"01JCOMPILETEST0000000000AA\", phase: \"init\",
		status: \"ok\", task: {description: \"a todo-list HTTP API\", repo: \$repo}}
		+ with_entries(select(.key | IN(${keys%,})))" "$DOCS"
}

stage_setup() {
	REPO="$BATS_TEST_TMPDIR/repo"
	make_repo "$REPO"
	cd "$REPO"
}

last_state() {
	tail -n 1 <<<"$output"
}

events_of() {
	jq -c --arg t "$1" 'select(.kind == "event" and .type == $t) | .payload' <<<"$output"
}

last_trace() {
	forge --repo "$PROJECT" history --json | head -1 | jq -r .trace_id
}

# The fixture's document KEY, sorted, compact.
want() {
	jq -cS ".$1" "$DOCS"
}

@test "each stage alone: the fixture's documents from the cassette, each kept as version 1 and in .forge/compile" {
	stage_setup
	run -0 --separate-stderr forge-stage interview < <(state)
	[ "$(last_state | jq -cS .intent)" = "$(want intent)" ]
	last_state | jq -e '.phase == "interview" and .status == "ok" and .compile.language == "python"'
	run -0 jq -r '.source' < <(events_of compile.question)
	assert_output "$(printf 'answers\nanswers\nanswers')"
	run -0 --separate-stderr forge-stage flows < <(state intent)
	[ "$(last_state | jq -cS .flows)" = "$(want flows)" ]
	run -0 events_of compile.document
	assert_output '{"kind":"flows","version":1,"path":".forge/compile/flows.json"}'
	run -0 --separate-stderr forge-stage contracts < <(state intent flows)
	[ "$(last_state | jq -cS .contracts)" = "$(want contracts)" ]
	run -0 --separate-stderr forge-stage rules < <(state intent flows contracts)
	[ "$(last_state | jq -cS .rules)" = "$(want rules)" ]
	run -0 --separate-stderr forge-stage schema < <(state intent flows contracts rules)
	[ "$(last_state | jq -cS .db_schema)" = "$(want db_schema)" ]
	# kept: the database's version 1 of each, and the project's files
	run -0 sqlite3 "$FORGE_DB" "select kind || ' ' || version from compile_docs order by rowid"
	assert_output "$(printf 'intent 1\nflows 1\ncontracts 1\nrules 1\ndb_schema 1')"
	for k in intent flows contracts rules db_schema; do
		[ "$(jq -cS . ".forge/compile/$k.json")" = "$(want "$k")" ]
	done
	# the model's calls are tagged with the stage
	run -0 sqlite3 "$FORGE_DB" "select phase from llm_calls group by phase order by min(id)"
	assert_output "$(printf 'interview\nflows\ncontracts\nrules\nschema')"
}

@test "a stage without the documents it needs is skipped (exit 1) with the state forwarded; an unknown stage is bad input" {
	stage_setup
	run -1 --separate-stderr forge-stage contracts < <(state intent)
	last_state | jq -e '.status == "skipped" and (has("contracts") | not)'
	[[ "$(events_of phase.skipped)" == *"the state has no flows document"* ]]
	run -1 --separate-stderr forge-stage change < <(state intent rules)
	[[ "$(events_of phase.skipped)" == *'not an edit'* ]]
	run -2 --separate-stderr forge-stage bogus
	[[ "$stderr" == *"unknown stage 'bogus'"* ]]
	run -2 --separate-stderr forge-stage
	[[ "$stderr" == *"a stage is needed"* ]]
}

@test "the interview without answers: the model is told to decide and say what it assumed" {
	stage_setup
	run -0 --separate-stderr forge-stage interview < <(state | jq -c 'del(.compile.answers)')
	run -0 jq -r '[.source, .answer] | join("|")' < <(events_of compile.question)
	assert_output "$(printf '%s\n' 'none|(no answer: decide and say what you assumed)' \
		'none|(no answer: decide and say what you assumed)' 'none|(no answer: decide and say what you assumed)')"
	# what the model got back for its ask
	run -0 sqlite3 "$FORGE_DB" "select count(*) from llm_calls where phase = 'interview'"
	assert_output 4
}

@test "change and rules alone in edit mode: the delta, its blast radius, the rules with R7; an unknown rule id fails" {
	stage_setup
	edit() {
		state intent flows contracts rules db_schema |
			jq -c '.compile += {"mode": "edit", "request": "items get an optional due date"} | del(.compile.answers)'
	}
	export FORGE_CASSETTE="$FIX/spec-edit.jsonl"
	run -0 --separate-stderr forge-stage change < <(edit)
	last_state | jq -e '.delta.rerun == ["rules","schema","tests","code","integrate","review"] and .delta.new[0].id == "R7"'
	last_state >"$BATS_TEST_TMPDIR/delta.json"
	run -0 --separate-stderr forge-stage rules <"$BATS_TEST_TMPDIR/delta.json"
	last_state | jq -e '[.rules.rules[].id] == ["R1","R2","R3","R4","R5","R6","R7"] and .rules.rules[6].entity == "todo.due"'
	run -0 events_of compile.rules_applied
	[[ "$output" == '{"rules":7,'* ]]
	export FORGE_CASSETTE="$FIX/spec-edit-bad.jsonl"
	run -5 --separate-stderr forge-stage change < <(edit)
	[[ "$stderr" == *"delta: change names rule R9, which the rule set does not have (it has R1, R2, R3, R4, R5, R6)"* ]]
	last_state | jq -e '.status == "failed" and (has("delta") | not)'
}

@test "a document that fails its schema goes back to the model with the errors, and the fixed one is kept" {
	stage_setup
	export FORGE_CASSETTE="$FIX/spec-malformed.jsonl"
	run -0 --separate-stderr forge-stage flows < <(state intent)
	[ "$(last_state | jq -cS .flows)" = "$(want flows)" ]
	run -0 jq -r .error < <(events_of agent.finish_rejected)
	assert_output --partial ".flows[1]"
	assert_output --partial "outcome"
	run -0 sqlite3 "$FORGE_DB" "select kind || ' ' || version from compile_docs"
	assert_output "flows 1"
}

@test "forge compile: a new project becomes a git repository; gate 1 pauses (exit 4), approved it goes on to the schema" {
	run -4 --separate-stderr forge compile --pipeline "$SPEC" --dir "$PROJECT" --answers "$ANSWERS" "a todo-list HTTP API"
	[[ "$stderr" == *"gate architecture_approval_schema is waiting for a human: Gate 1: approve the rule set"* ]]
	# an empty initial commit, and the run's branch from it
	run -0 git -C "$PROJECT" log --format=%s HEAD
	assert_output "forge compile: initial commit"
	[ "$(git -C "$PROJECT" rev-parse --show-toplevel)" = "$PROJECT" ]
	T=$(last_trace)
	run -0 --separate-stderr forge --repo "$PROJECT" status --json "$T"
	jq -e '.run.status == "paused" and .state.nodes.rules == "done" and (.state | has("db_schema") | not)' <<<"$output"
	G=$(jq -r '.pending_gates[0].id' <<<"$output")
	cd "$PROJECT"
	run -0 --separate-stderr forge gate approve "$G"
	run -0 --separate-stderr forge resume "$T"
	run -0 --separate-stderr forge status --json "$T"
	jq -e '.run.status == "completed"' <<<"$output"
	for k in intent flows contracts db_schema; do
		[ "$(jq -cS ".state.$k" <<<"$output")" = "$(want "$k")" ]
	done
	# the rules as the fixture's, with gate 1's approval
	[ "$(jq -cS '.state.rules | del(.approved_at, .approved_by)' <<<"$output")" = "$(want rules)" ]
	jq -e '.state.rules.approved_by == "human" and (.state.rules.approved_at | test("^20"))' <<<"$output"
	jq -e '.state.compile == {"mode":"new","idea":"a todo-list HTTP API","language":"python","language_default":"python",
		"answers":["one user, no login","title required, at most 200 characters","JSON over HTTP on port 8080, kept in SQLite"]}' <<<"$output"
	run -0 --separate-stderr forge compile --docs
	assert_line --index 0 --regexp '^KIND +VERSION +TRACE +CREATED$'
	assert_line --index 4 --regexp "^rules +1  $T  20"
	assert_line --index 5 --regexp "^rules +2  $T  20"      # approved at gate 1
	assert_line --index 6 --regexp "^db_schema +1  $T  20"
}

@test "--auto-approve passes both gates; gate 2 stops before the tests without it" {
	run -0 --separate-stderr forge compile --auto-approve --pipeline "$SPEC" --dir "$PROJECT" --answers "$ANSWERS" "a todo-list HTTP API"
	T=$(last_trace)
	run -0 --separate-stderr forge --repo "$PROJECT" events replay "$T"
	run -0 jq -c 'select(.type == "gate.approved") | [.payload.gate, .payload.by]' <<<"$output"
	assert_output '["architecture_approval_schema","flag"]'

	# gate 2: the database schema, before the tests (a stand-in tests node)
	export MARKS="$BATS_TEST_TMPDIR/marks"
	mkdir -p "$MARKS"
	jq --arg node "$FORGE_ROOT/tests/fixtures/pipelines/node.sh" --slurpfile full "$FORGE_ROOT/pipelines/compile.json" \
		'.nodes += [$full[0].nodes[] | select(.id == "tests") | .program = $node | .args = ["--id", "tests"]]' "$SPEC" >"$BATS_TEST_TMPDIR/gate2.json"
	rm -rf "$PROJECT"
	run -4 --separate-stderr forge compile --pipeline "$BATS_TEST_TMPDIR/gate2.json" --dir "$PROJECT" --answers "$ANSWERS" "a todo-list HTTP API"
	G=$(forge --repo "$PROJECT" status --json "$(last_trace)" | jq -r '.pending_gates[0].id')
	cd "$PROJECT"
	run -0 forge gate approve "$G"
	run -4 --separate-stderr forge resume "$(last_trace)"
	[[ "$stderr" == *"gate architecture_approval_tests is waiting for a human: Gate 2: approve the database schema"* ]]
	[ ! -e "$MARKS/tests.start" ]
	run -0 --separate-stderr forge status --json "$(last_trace)"
	jq -e '.state.db_schema.tables[0].name == "todo"' <<<"$output"
	run -0 forge gate approve "$(jq -r '.pending_gates[0].id' <<<"$output")"
	run -0 --separate-stderr forge resume "$(last_trace)"
	[ -e "$MARKS/tests.start" ]
}

@test "the interview asks on the terminal when there is one; the answers file is not used then" {
	test_python3
	SHOWN="$BATS_TEST_TMPDIR/terminal"
	run -0 "$TEST_PYTHON3" "$FORGE_ROOT/tests/helpers/pty_run.py" --transcript "$SHOWN" \
		--wait "a login?" --type 'just me\n' --wait "how long may it be?" --type 'required, 200 at most\n' \
		--wait "items kept?" --type '\x04' \
		-- forge compile --auto-approve --pipeline "$SPEC" --dir "$PROJECT" --answers "$ANSWERS" "a todo-list HTTP API"
	grep -q "forge compile asks:" "$SHOWN"
	run -0 --separate-stderr forge --repo "$PROJECT" events replay "$(last_trace)"
	run -0 jq -r 'select(.type == "compile.question") | [.payload.source, .payload.answer] | join("|")' <<<"$output"
	# Ctrl-D at the third: no more terminal, the answers file from its first answer
	assert_output "$(printf '%s\n' 'terminal|just me' 'terminal|required, 200 at most' 'answers|one user, no login')"
}

@test "documents are versioned: the approved rule set is a version of its own; an edit makes new rules and db_schema; --show gives any" {
	run -0 --separate-stderr forge compile --auto-approve --pipeline "$SPEC" --dir "$PROJECT" --answers "$ANSWERS" "a todo-list HTTP API"
	cd "$PROJECT"
	export FORGE_CASSETTE="$FIX/spec-edit.jsonl"
	run -0 --separate-stderr forge compile --auto-approve --pipeline "$SPEC" --edit "items get an optional due date"
	run -0 --separate-stderr forge compile --docs --json
	run -0 jq -r '"\(.kind) \(.version)"' <<<"$output"
	# rules: 1 the rules stage's, 2 approved at gate 1, 3 the edit's, 4 the edit's approved
	assert_output "$(printf '%s\n' 'intent 1' 'delta 1' 'flows 1' 'contracts 1' 'rules 1' 'rules 2' 'rules 3' 'rules 4' 'db_schema 1' 'db_schema 2')"
	run -0 --separate-stderr forge compile --show rules --doc-version 1
	[ "$(jq -cS . <<<"$output")" = "$(want rules)" ]
	run -0 --separate-stderr forge compile --show rules --doc-version 2
	[ "$(jq -cS 'del(.approved_at, .approved_by)' <<<"$output")" = "$(want rules)" ]
	jq -e '.approved_by != null and .approved_at != null' <<<"$output"
	run -0 --separate-stderr forge compile --show rules --doc-version 3
	jq -e '(.rules | length) == 7 and (has("approved_by") | not)' <<<"$output"
	run -0 --separate-stderr forge compile --show rules
	jq -e '[.rules[].id] == ["R1","R2","R3","R4","R5","R6","R7"] and .rules[6].entity == "todo.due"' <<<"$output"
	jq -e '.approved_by != null' <<<"$output"
	run -0 --separate-stderr forge compile --show db_schema --json
	jq -e '.version == 2 and (.doc.tables[0].columns | map(.name)) == ["id","title","done","due"]' <<<"$output"
	# the documents' files are the run's commits' (none in a spec-only pipeline): none in the checkout
	[ ! -e .forge/compile ]
	run -1 --separate-stderr forge compile --show rules --doc-version 5
	[[ "$stderr" == *"has no version 5 of rules"* ]]
}

@test "edit mode: the delta names the stages to rerun; the unaffected ones are skipped, their documents kept" {
	run -0 --separate-stderr forge compile --auto-approve --pipeline "$SPEC" --dir "$PROJECT" --answers "$ANSWERS" "a todo-list HTTP API"
	export FORGE_CASSETTE="$FIX/spec-edit.jsonl"
	run -0 --separate-stderr forge compile --auto-approve --pipeline "$SPEC" --dir "$PROJECT" --edit "items get an optional due date"
	[[ "$stderr" == *"flows skipped"* && "$stderr" == *"contracts skipped"* && "$stderr" == *"interview skipped"* ]]
	T=$(last_trace)
	run -0 --separate-stderr forge --repo "$PROJECT" status --json "$T"
	jq -e '.state.delta.rerun == ["rules","schema","tests","code","integrate","review"]' <<<"$output"
	jq -e '.state.delta.new[0].id == "R7" and .state.delta.preserve == ["R1","R2","R3","R4","R5","R6"]' <<<"$output"
	jq -e '.state.delta.request == "items get an optional due date" and .state.compile.mode == "edit"' <<<"$output"
	jq -e '[.state.nodes | to_entries[] | select(.value == "skipped") | .key] == ["interview","flows","contracts"]' <<<"$output"
	[ "$(jq -cS .state.flows <<<"$output")" = "$(want flows)" ]
	[ "$(jq -cS .state.contracts <<<"$output")" = "$(want contracts)" ]
	run -0 --separate-stderr forge --repo "$PROJECT" events replay "$T"
	run -0 jq -c 'select(.type == "compile.delta") | .payload.why[1]' <<<"$output"
	assert_output '{"stage":"schema","because":"R7 names field todo.due, which the database schema lacks"}'
	# the rules stage applied the delta without a model
	run -0 sqlite3 "$FORGE_DB" "select count(*) from llm_calls where trace_id = '$T' and phase = 'rules'"
	assert_output 0
}

@test "edit mode reads .forge/compile when the database has no documents; a project never compiled is refused (exit 2)" {
	mkdir -p "$PROJECT"
	run -2 --separate-stderr forge compile --dir "$PROJECT" --edit "add tags"
	[[ "$stderr" == *"is not a compiled project: not a git repository"* ]]
	git init -q "$PROJECT"
	git -C "$PROJECT" commit -q --allow-empty -m init
	run -2 --separate-stderr forge compile --dir "$PROJECT" --edit "add tags"
	[[ "$stderr" == *"is not a compiled project: no intent and rules"* ]]
	# a project that carries its spec: nothing in the database, the files
	mkdir -p "$PROJECT/.forge/compile"
	for k in intent flows contracts rules db_schema; do jq ".$k" "$DOCS" >"$PROJECT/.forge/compile/$k.json"; done
	export FORGE_CASSETTE="$FIX/spec-edit.jsonl"
	run -0 --separate-stderr forge compile --auto-approve --pipeline "$SPEC" --dir "$PROJECT" --edit "items get an optional due date"
	run -0 --separate-stderr forge compile --dir "$PROJECT" --show rules --json
	jq -e '.version == 2 and (.doc.rules | length) == 7 and .doc.approved_by != null' <<<"$output"
}

@test "an edit that leaves the schema alone still asks gate 1 about the changed rules, and keeps the schema" {
	run -0 --separate-stderr forge compile --auto-approve --pipeline "$SPEC" --dir "$PROJECT" --answers "$ANSWERS" "a todo-list HTTP API"
	export FORGE_CASSETTE="$FIX/spec-edit-rules.jsonl"
	run -4 --separate-stderr forge compile --pipeline "$SPEC" --dir "$PROJECT" --edit "a title is trimmed before it is checked"
	[[ "$stderr" == *"Gate 1: approve the rule set"* ]]
	T=$(last_trace)
	cd "$PROJECT"
	run -0 --separate-stderr forge status --json "$T"
	jq -e '.state.delta.rerun == ["rules","tests","code","integrate","review"]' <<<"$output"
	jq -e '.state.rules.rules[1].if | test("once trimmed")' <<<"$output"
	run -0 forge gate approve "$(jq -r '.pending_gates[0].id' <<<"$output")"
	run -0 --separate-stderr forge resume "$T"
	run -0 --separate-stderr forge status --json "$T"
	jq -e '.state.nodes.schema == "done" and .state.rules.approved_by != null' <<<"$output"
	[ "$(jq -cS .state.db_schema <<<"$output")" = "$(want db_schema)" ]
	# no model call for the schema, and no new version of it
	run -0 sqlite3 "$FORGE_DB" "select count(*) from llm_calls where trace_id = '$T' and phase = 'schema'"
	assert_output 0
	run -0 --separate-stderr forge compile --show db_schema --json
	jq -e '.version == 1' <<<"$output"
}

@test "forge pipeline check compile; bad input is exit 2 before anything is made" {
	run -0 --separate-stderr forge pipeline check compile
	assert_output "compile (built-in): ok: pipeline 'compile', 10 nodes in 10 layers (at most 1 at once), 9 edges, 0 bounces"
	cd "$BATS_TEST_TMPDIR"
	run -2 --separate-stderr forge compile
	[[ "$stderr" == *"an idea is needed"* ]]
	run -2 --separate-stderr forge compile --dir "$PROJECT" --lang cobol "a todo-list HTTP API"
	[[ "$stderr" == *"--lang: no profile for the language 'cobol' (compile.languages has: c, python)"* ]]
	[ ! -e "$PROJECT" ]
	# a language the configuration adds is one
	jq -n '{compile: {languages: {cobol: {framework: "tap", test_command: "make test", output: "tap",
		layout: "COBOL", test_name: "r1: …", build_files: ["Makefile"], static_tools: []}}}}' >"$BATS_TEST_TMPDIR/cobol.json"
	run -2 --separate-stderr forge compile --config "$BATS_TEST_TMPDIR/cobol.json" --dir "$BATS_TEST_TMPDIR/cobol" \
		--lang cobol --pipeline "$BATS_TEST_TMPDIR/none.json" "a todo-list HTTP API"
	[[ "$stderr" == *"none.json: no such file"* && "$stderr" != *"--lang"* ]]
	# no model: nothing is made (before: the repository, a run and its
	# worktree, then exit 5 in the interview)
	(unset FORGE_PROVIDER FORGE_CASSETTE ANTHROPIC_API_KEY OPENAI_API_KEY
	 run -2 --separate-stderr forge compile --dir "$PROJECT" "a todo-list HTTP API"
	 [[ "$stderr" == "forge compile: no model to compile with: "*"; nothing was made" ]])
	[ ! -e "$PROJECT" ]
	run -2 --separate-stderr forge compile --answers "$BATS_TEST_TMPDIR/nope.txt" "a todo-list HTTP API"
	[[ "$stderr" == *"--answers: cannot read"* ]]
	run -2 --separate-stderr forge compile --edit "x" "an idea too"
	[[ "$stderr" == *"give the change, not a new idea"* ]]
	run -2 --separate-stderr forge compile --doc-version 2 "an idea"
	[[ "$stderr" == *"--doc-version N goes with --show KIND"* ]]
	printf '["one", 2]' >"$BATS_TEST_TMPDIR/bad.json"
	run -2 --separate-stderr forge compile --dir "$PROJECT" --answers "$BATS_TEST_TMPDIR/bad.json" "a todo-list HTTP API"
	[[ "$stderr" == *"is not a JSON array of strings"* ]]
	[ ! -e "$PROJECT" ]
	# a --dir that is a file (before: "directory exists", exit 5)
	echo notes >"$BATS_TEST_TMPDIR/notes.txt"
	run -2 --separate-stderr forge compile --dir "$BATS_TEST_TMPDIR/notes.txt" --answers "$ANSWERS" "a todo-list HTTP API"
	[[ "$stderr" == *"--dir $BATS_TEST_TMPDIR/notes.txt is not a directory"* ]]
	[ "$(cat "$BATS_TEST_TMPDIR/notes.txt")" = notes ]
	run -0 forge-compile --help
	assert_line --index 0 "usage: forge-compile IDEA [--dir DIR] [--lang LANG] [--answers FILE]"
	assert_line --index 1 "                       [--auto-approve] [--level N] [--json]"
}

@test "--dir inside a checkout: the new project is a repository of its own, not the checkout's" {
	REPO="$BATS_TEST_TMPDIR/repo"
	make_repo "$REPO"
	cd "$REPO"
	run -0 --separate-stderr forge compile --auto-approve --pipeline "$SPEC" --dir todo --answers "$ANSWERS" "a todo-list HTTP API"
	[ "$(git -C todo rev-parse --show-toplevel)" = "$REPO/todo" ]
	run -0 --separate-stderr forge compile --dir todo --show db_schema --json
	jq -e '.version == 1' <<<"$output"
	[ ! -e .forge/compile ]
	[ ! -e todo/.forge/compile ]
}
