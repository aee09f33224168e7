#!/usr/bin/env bats
# learning.bats - learning that measurably helps, end to end with `forge run`
# on the calc fixture and the mock model (tests/fixtures/learning/):
#   run 1 "add calc_trace": the scripted implementer writes printf(msg) unless
#     its prompt says "format string is not a constant"; review's security
#     scan finds insecure/c-format, the run bounces to implement, whose prompt
#     now holds the finding: fixed, the run passes; its memories keep the lesson.
#   run 2 "add calc_log" (another function, another file) on the same store:
#     implement's first prompt holds the recalled lesson, so the model writes
#     the constant format string at once: no bounce, fewer turns and tokens.
#   reverse: a store of unrelated memories (Python, JavaScript, operations):
#     none reaches a prompt, the model takes its "else" path and run 2 bounces.
#   the admission rules: a memory of the project's language that is similar to
#     the task gets in; memory.min_similarity 0 lets a dissimilar one in, while
#     a lang: tag of another language still keeps one out.
# What the model saw is asserted on the mock's request log; nothing depends on
# timing.

bats_require_minimum_version 1.5.0

load test_helper/mock
mock_per_file 180

LESSON="format string is not a constant"

setup() {
	load test_helper/common
	forge_setup
	export FORGE_PROVIDER=anthropic FORGE_BASE_URL="$MOCK_URL" ANTHROPIC_API_KEY=test-key
	FIX="$FORGE_ROOT/tests/fixtures/learning"
	REPO="$BATS_TEST_TMPDIR/calc"
	calc_repo "$REPO"
	cd "$REPO"
}

# learn_run SCRIPT TASK: `forge run` of TASK (plan..test) with the mock answering
# from SCRIPT (its request log restarted); the run's JSON lines in $BATS_TEST_TMPDIR/SCRIPT.out.
learn_run() {
	mock_script "$(cat "$FIX/$1.json")"
	forge run --phases plan,implement,review,test --json "$2" </dev/null \
		>"$BATS_TEST_TMPDIR/$1.out" 2>"$BATS_TEST_TMPDIR/$1.err"
}

# requests_of WHO: the mock's requests whose system prompt says "You are the WHO".
requests_of() {
	curl -sS -f "$MOCK_URL/_mock/requests" |
		jq -c --arg who "$1" '[.[] | select(.body.system | tostring | test("You are the " + $who))]'
}

# first_prompt: the first user message of implement's first request.
first_prompt() {
	requests_of implementer | jq -r '.[0].body.messages[0].content | if type == "string" then . else map(.text // "") | join("\n") end'
}

# figures OUT: bounces, agent turns, tokens, usd of a run's output.
figures() {
	jq -s -c '{bounces: (map(select(.kind == "state")) | last | .bounces | length),
		turns: (map(select(.type == "agent.iteration")) | length),
		tokens: (map(select(.kind == "state")) | last | .cost.tokens),
		usd: (map(select(.kind == "state")) | last | .cost.usd)}' "$1"
}

@test "run 2 of the same class of task recalls run 1's review finding into implement's prompt: no bounce, fewer turns and tokens" {
	# run 1: no memory, the model's "else" path, review bounces it once
	run -0 learn_run run1 "add calc_trace, a helper that prints a message"
	r1=$(figures "$BATS_TEST_TMPDIR/run1.out")
	jq -e '.bounces == 1' <<<"$r1"
	run -0 requests_of implementer
	jq -e '[.[].branch] == ["else", "else", "then", "then"]' <<<"$output"
	run -0 first_prompt
	refute_output --partial "$LESSON"
	refute_output --partial "Relevant past learnings"
	# the lesson is in the store, in words
	run -0 forge memory list --json --tag lesson
	assert_output --partial 'Lesson for implement (C) from the run \"add calc_trace, a helper that prints a message\"'
	assert_output --partial "insecure/c-format in calc.c:"
	assert_output --partial "$LESSON"
	assert_output --partial 'Fixed in attempt 2: calc_trace prints the message with printf(\"%s\", msg)'

	# run 2: another helper in another file; implement's first prompt holds the lesson
	run -0 learn_run run2 "add calc_log, a helper in log.c that prints a message"
	r2=$(figures "$BATS_TEST_TMPDIR/run2.out")
	run -0 first_prompt
	assert_output --partial "## Relevant past learnings"
	assert_output --partial "- [semantic] Lesson for implement (C) from the run \"add calc_trace"
	assert_output --partial "insecure/c-format in calc.c:"
	assert_output --partial "$LESSON"
	# ... so the model wrote the constant format string at once: no bounce
	run -0 requests_of implementer
	jq -e '[.[].branch] == ["then", "then"]' <<<"$output"
	jq -e '.bounces == 0' <<<"$r2"
	run -0 jq -s -e 'map(select(.type == "memory.recalled" and .phase == "implement")) | length == 1' "$BATS_TEST_TMPDIR/run2.out"
	git -C "$REPO" show "forge/$(jq -r 'select(.kind == "state") | .trace_id' "$BATS_TEST_TMPDIR/run2.out" | tail -n 1):log.c" | grep -qF 'printf("%s", msg);'
	# fewer bounces, turns, tokens and dollars than run 1
	jq -n -e --argjson a "$r1" --argjson b "$r2" \
		'$b.bounces < $a.bounces and $b.turns < $a.turns and $b.tokens < $a.tokens and $b.usd < $a.usd'
}

@test "reverse: only unrelated memories in the store - none reaches the prompt, the model takes its else path" {
	run -0 forge memory import "$FIX/unrelated.jsonl"
	assert_output "imported 5, skipped 0 (already present)"
	# recall finds some of them for this task ...
	run -0 forge memory search --peek --json "add calc_log, a helper in log.c that prints a message"
	[ -n "$output" ]
	found=$(grep -c . <<<"$output")
	run -0 learn_run run2 "add calc_log, a helper in log.c that prints a message"
	# ... but neither the planner's nor the implementer's prompt holds any of them
	run -0 curl -sS -f "$MOCK_URL/_mock/requests"
	log=$output
	while IFS= read -r content; do
		key=${content:0:40}
		! grep -qF "$key" <<<"$log" || { echo "in a prompt: $content"; false; }
	done < <(jq -r .content "$FIX/unrelated.jsonl")
	! grep -q "Relevant past learnings" <<<"$log" || false
	# every one recall found was kept out: the Python and JavaScript ones by the
	# language rule, the rest by the similarity floor
	run -0 jq -s -c 'map(select(.type == "memory.withheld" and .phase == "implement") | .payload) | first' \
		"$BATS_TEST_TMPDIR/run2.out"
	jq -e --argjson n "$found" '.language >= 1 and (.language + (.similarity // 0)) >= $n' <<<"$output"
	# the model took its "else" path: printf(msg), and review bounced it as in run 1
	run -0 requests_of implementer
	jq -e '.[0].branch == "else"' <<<"$output"
	run -0 figures "$BATS_TEST_TMPDIR/run2.out"
	jq -e '.bounces == 1' <<<"$output"
}

@test "a memory tagged with the project's language and similar to the task does reach the prompt" {
	run -0 forge memory add --type semantic --tags lang:c,printf --context "C output helpers" \
		"C helpers that print a message: $LESSON - use printf(\"%s\", msg)"
	run -0 learn_run run2 "add calc_log, a helper in log.c that prints a message"
	run -0 first_prompt
	assert_output --partial "C helpers that print a message: $LESSON"
	run -0 requests_of implementer
	jq -e '[.[].branch] == ["then", "then"]' <<<"$output"
}

@test "memory.min_similarity 0 admits a dissimilar memory; a lang: tag of another language still keeps one out" {
	run -0 forge memory import "$FIX/unrelated.jsonl"
	echo '{"memory": {"min_similarity": 0}}' >"$BATS_TEST_TMPDIR/all.json"
	mock_script "$(cat "$FIX/run2.json")"
	run -0 --separate-stderr forge run --phases plan,implement,review,test --json --config "$BATS_TEST_TMPDIR/all.json" \
		"add calc_log, a helper in log.c that prints a message" </dev/null
	run -0 first_prompt
	assert_output --partial "Deploys to staging need the VPN up"
	refute_output --partial "In Python, print a message"
	refute_output --partial "React hooks"
}

@test "a project with no source files yet admits no lang: memory: a memory.withheld event counts them" {
	mkdir "$BATS_TEST_TMPDIR/notes"
	cd "$BATS_TEST_TMPDIR/notes"
	git init -q -b main && echo "# calculator notes" >README.md && git add -A && git commit -q -m init
	echo '{"memory": {"min_similarity": 0}}' >"$BATS_TEST_TMPDIR/all.json"
	forge memory add --tags lang:python,pytest --context "python calculator tests" \
		"For the calculator, write pytest tests with fixtures in tests/test_calc.py" >/dev/null
	forge memory add --tags lang:go --context "go calculator tests" \
		"For the calculator in Go, write table-driven tests in calc_test.go" >/dev/null
	forge memory add --context "calculator tests" "The calculator's tests must cover division by zero" >/dev/null
	mock_script "$(jq -c '{steps: [.steps[1]]}' "$FIX/run1.json")"
	run -0 --separate-stderr forge-plan --config "$BATS_TEST_TMPDIR/all.json" --task "write tests for the calculator"
	jq -se 'map(select(.type == "memory.withheld")) | length == 1 and .[0].payload.language == 2' <<<"$output"
	run -0 requests_of planner
	jq -e '.[0].body.messages[0].content | tostring | contains("division by zero")
		and (contains("pytest") or contains("table-driven") | not)' <<<"$output"
}

@test "a lone memory that shares one word with the task is kept out by memory.min_similarity (not similar for being the best hit)" {
	forge memory add --context "ops" \
		"Our staging cluster message queue is RabbitMQ 3.12 behind HAProxy; restart it with systemctl on host q1." >/dev/null
	run -0 forge memory search --json --peek "add calc_log, a helper in log.c that prints a message"
	# (before: 0.82, the best hit's lexical share being 1)
	jq -e '.similarity < 0.15 and .coverage < 0.2' <<<"$output"
	mock_script "$(jq -c '{steps: [.steps[1]]}' "$FIX/run1.json")"
	run -0 --separate-stderr forge-plan --task "add calc_log, a helper in log.c that prints a message"
	jq -se 'map(select(.type == "memory.withheld")) | length == 1 and .[0].payload.similarity == 1' <<<"$output"
	run -0 requests_of planner
	jq -e '.[0].body.messages[0].content | tostring | contains("RabbitMQ") | not' <<<"$output"
	# a memory that says what the task is about still gets in
	forge memory add --type semantic --tags lang:c,printf --context "C output helpers" \
		"C helpers that print a message: $LESSON - use printf(\"%s\", msg)" >/dev/null
	run -0 forge memory search --json --peek "add calc_log, a helper in log.c that prints a message"
	jq -se 'map(select(.memory.content | contains("C helpers"))) | .[0].similarity >= 0.3' <<<"$output"
}

@test "copies of one lesson (each run that learnt it stored one) reach the prompt once; the others are withheld as duplicate" {
	echo '{"memory": {"min_similarity": 0, "recall_limit": 3}}' >"$BATS_TEST_TMPDIR/three.json"
	for _ in 1 2 3; do
		forge memory add --type semantic --tags lang:c --context "C output helpers" \
			"C helpers that print a message: $LESSON" >/dev/null
	done
	forge memory add --type semantic --tags lang:c --context "C log helpers" \
		"A helper in log.c that prints a message ends it with a newline" >/dev/null
	run -0 forge memory list --json
	[ "$(jq -s 'length' <<<"$output")" -eq 4 ]
	mock_script "$(jq -c '{steps: [.steps[1]]}' "$FIX/run1.json")"
	run -0 --separate-stderr forge-plan --config "$BATS_TEST_TMPDIR/three.json" --task "add calc_log, a helper in log.c that prints a message"
	jq -se 'map(select(.type == "memory.withheld")) | length == 1 and .[0].payload.duplicate == 2' <<<"$output"
	jq -se 'map(select(.type == "memory.recalled")) | .[0].payload.count == 2' <<<"$output"
	run -0 requests_of planner
	# the lesson once, and the copies did not take the other memory's place
	jq -e '.[0].body.messages[0].content | tostring | (split("format string is not a constant") | length == 2)
		and contains("ends it with a newline")' <<<"$output"
}

# test_bounce_script ROOT-CAUSE-FILE: implement breaks calc_add first (the
# tests fail), the test analysis gives the root cause in the file, attempt 2
# puts calc_add back.
test_bounce_script() {
	python3 - "$FORGE_ROOT/tests/fixtures/repos/calc/calc.c" "$1" <<'PY'
import json, sys
src = open(sys.argv[1]).read()
cause = open(sys.argv[2]).read()
bad = src.replace("return a + b;", "return a - b;", 1)
plan = {"summary": "Tidy calc_add.", "architecture": {"components": ["calc.c"], "interfaces": [], "decisions": ["small"]},
        "tasks": [{"id": "t1", "title": "tidy", "description": "tidy calc_add", "files": ["calc.c"], "depends_on": [],
                   "acceptance": ["make check passes"]}],
        "risk": {"level": "low", "score": 0.1, "reasons": ["small"]}, "estimates": {"complexity": "low", "effort": "10m"}}
def impl(content, summary):
    return {"tool_calls": [{"name": "write_file", "input": {"path": "calc.c", "content": content}},
                           {"name": "finish", "input": {"summary": summary, "files": ["calc.c"]}}]}
steps = [
    {"when_prompt_contains": "Call report_findings once", "times": "always",
     "then": {"tool_calls": [{"name": "report_findings", "input": {"findings": []}}]}},
    {"forced_tool": "report_failure_analysis", "times": "always",
     "tool_calls": [{"name": "report_failure_analysis", "input": {"analyses": [
         {"test": "calc add 2 3: expected '5', got '-1'", "root_cause": cause,
          "suggested_fix": "make calc_add return a + b", "confidence": 0.95}]}}]},
    {"when_prompt_contains": "You are the planner", "times": "always",
     "then": {"tool_calls": [{"name": "finish", "input": plan}]}},
    {"when_prompt_contains": "You are the implementer", "then": impl(bad + "/* v1 */\n", "Tidied calc_add.")},
    {"when_prompt_contains": "You are the implementer", "times": "always",
     "then": impl(src + "/* v2 */\n", "calc_add adds again.")},
]
print(json.dumps({"steps": steps}))
PY
}

# key_steps FN MESSAGE [ONCE]: the mock's steps for "add FN": plan, an
# implementer that writes FN into calc.c, an AI review that reports one
# finding saying MESSAGE on its first call (with ONCE=no, never) then none.
key_steps() {
	python3 - "$REPO/calc.c" "$1" "$2" "${3:-yes}" <<'PY'
import json, sys
path, fn, msg, once = sys.argv[1:5]
src = open(path).read()
new = src.replace("static int parse", "void %s(const char *msg)\n{\n\tfputs(msg, stdout);\n}\n\nstatic int parse" % fn, 1)
plan = {"summary": "Add %s to calc.c." % fn,
	"architecture": {"components": ["calc.c"], "interfaces": [], "decisions": ["small"]},
	"tasks": [{"id": "t1", "title": "Add " + fn, "description": "Add %s to calc.c" % fn, "files": ["calc.c"],
		   "depends_on": [], "acceptance": ["make check passes"]}],
	"risk": {"level": "low", "score": 0.1, "reasons": ["small"]}, "estimates": {"complexity": "low", "effort": "10m"}}
finding = {"file": "calc.c", "line": 19, "severity": "error", "category": "correctness", "rule": "bad-thing",
	   "message": msg, "confidence": 0.95}
review = "Call report_findings once"
steps = [{"when_prompt_contains": review, "then": {"tool_calls": [{"name": "report_findings", "input": {"findings": [finding]}}]}}] if once == "yes" else []
steps += [
	{"when_prompt_contains": review, "times": "always", "then": {"tool_calls": [{"name": "report_findings", "input": {"findings": []}}]}},
	{"when_prompt_contains": "You are the planner", "times": "always", "then": {"tool_calls": [{"name": "finish", "input": plan}]}},
	{"when_prompt_contains": "You are the implementer", "times": "always", "then": {"tool_calls": [
		{"name": "write_file", "input": {"path": "calc.c", "content": new}},
		{"name": "finish", "input": {"summary": "Added %s." % fn, "files": ["calc.c"]}}]}},
]
print(json.dumps({"steps": steps}))
PY
}

@test "a test analysis' 280 KB root cause: the run's episode and lesson are stored all the same, the root cause cut with …" {
	# (before: both were over a memory's 256 KiB, refused, and the run said nothing)
	python3 -c 'print("calc_add subtracts its arguments. " + "x " * 140000)' >"$BATS_TEST_TMPDIR/cause.txt"
	mock_script "$(test_bounce_script "$BATS_TEST_TMPDIR/cause.txt")"
	echo '{"implement":{"validate":false}}' >"$BATS_TEST_TMPDIR/nv.json"
	run -0 --separate-stderr forge run --config "$BATS_TEST_TMPDIR/nv.json" --phases plan,implement,review,test \
		--json "tidy calc_add" </dev/null
	jq -s -e 'map(select(.kind == "state")) | last | .bounces | length == 1' <<<"$output"
	jq -s -e '[.[] | select(.type == "memory.stored") | .payload.source] == ["run_episode", "run_lesson"]' <<<"$output"
	[[ "$stderr" != *"could not be stored in memory"* ]]
	run -0 forge memory list --json --tag lesson
	jq -e '.content | contains("(root cause: calc_add subtracts its arguments. x x x") and test("x ?…\\)")
		and (length < 4000) and contains("Fixed in attempt 2: calc_add adds again")' <<<"$output"
	run -0 forge memory list --json --type episodic
	jq -e '.content | contains("completed after 1 bounce") and test("x ?…\\)") and (length < 4000)' <<<"$output"
}

@test "an OpenAI and an Anthropic key quoted by a review finding reach neither memory nor the next run's prompt" {
	local oai=sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789 ant=sk-ant-api03-ZyXwVuTsRqPoNmLkJiHgFeDcBa9876543210
	echo '{"review":{"ai_min_risk":"low"}}' >"$BATS_TEST_TMPDIR/ai.json"
	# run 1: the AI review quotes both keys, the run bounces once and learns
	mock_script "$(key_steps calc_note "hard-coded keys $oai and $ant in calc.c")"
	run -0 forge run --config "$BATS_TEST_TMPDIR/ai.json" --phases plan,implement,review,test --json \
		"add calc_note, a helper that prints a note" </dev/null
	run -0 forge memory export
	assert_output --partial "hard-coded keys [REDACTED] and [REDACTED] in calc.c"
	refute_output --partial "$oai"
	refute_output --partial "$ant"
	# run 2: a similar task recalls the lesson, without the keys
	mock_script "$(key_steps calc_memo x no)"
	run -0 forge run --config "$BATS_TEST_TMPDIR/ai.json" --phases plan,implement,review,test --json \
		"add calc_memo, a helper that prints a note" </dev/null
	run -0 first_prompt
	assert_output --partial "## Relevant past learnings"
	assert_output --partial "hard-coded keys [REDACTED] and [REDACTED] in calc.c"
	run -0 curl -sS -f "$MOCK_URL/_mock/requests"
	refute_output --partial "$oai"
	refute_output --partial "$ant"
}
