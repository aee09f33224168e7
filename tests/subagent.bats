#!/usr/bin/env bats
# subagent.bats - the delegate tool (README "Subagents"): a phase's agent
# hands a sub-task to forge-agent, a process of its own.  Read mode (the
# result reaches the parent's next model call, asserted on the mock
# provider's request log), write mode (the child's diff lands in the
# parent's worktree and its commit), the child's cost in the phase's and the
# run's, the depth and count limits, a crashing child, tools the parent
# lacks, and the tree in `forge status` and `forge show`.  The children's
# model calls are the cassette phase implement-sub (plan-sub), attempt = the
# child's number.

bats_require_minimum_version 1.5.0

load test_helper/mock
mock_per_file 180

setup() {
	load test_helper/common
	forge_setup
	calc_setup
	CFG="$BATS_TEST_TMPDIR/config.json"
	echo '{}' >"$CFG"
}

# cassette LINE...: the lines are the cassette the model answers from.
cassette() {
	printf '%s\n' "$@" >"$BATS_TEST_TMPDIR/cassette.jsonl"
	export FORGE_PROVIDER=replay FORGE_CASSETTE="$BATS_TEST_TMPDIR/cassette.jsonl"
}

# A cassette line: answer PHASE [ATTEMPT] with one call of TOOL with INPUT.
call() {
	local phase=$1 attempt=$2 tool=$3 input=$4
	printf '{"phase":"%s"%s,"response":{"tool_calls":[{"name":"%s","input":%s}],"usage":{"input_tokens":1000,"output_tokens":50}}}' \
		"$phase" "${attempt:+,\"attempt\":$attempt}" "$tool" "$input"
}

FINISH='{"summary":"done"}'
READ_TASK='{"task":"Read calc.c and say which operations it has.","tools":["read_file","grep"]}'
CHILD_FINISH='{"summary":"calc has add and sub","output":"OPS: add, sub"}'

# A state with the plan of plan-calc.jsonl for trace $1.
plan_state() {
	sed -n 3p "$CASSETTES/plan-calc.jsonl" | jq -c --arg t "$1" --arg r "$REPO" \
		'{kind:"state", v:1, trace_id:$t, phase:"plan", status:"ok",
		  task:{description:"add a mul operation", repo:$r, base_ref:"main"},
		  plan:.response.tool_calls[0].input, bounces:[], cost:{tokens:0, usd:0}}'
}

implement() {
	plan_state "$1" >"$BATS_TEST_TMPDIR/in.json"
	shift
	run "$@" --separate-stderr forge-implement --config "$CFG" <"$BATS_TEST_TMPDIR/in.json"
}

events_of() {
	jq -c "select(.kind == \"event\" and .type == \"$1\")" <<<"$output"
}

@test "read mode: the child gets only the tools asked for, its events carry its span, its result reaches the parent's next model call" {
	mock_script "$(jq -nc --argjson read "$READ_TASK" --argjson fin "$CHILD_FINISH" '[
		{tool_calls:[{name:"delegate", input:$read}]},
		{tool_calls:[{name:"read_file", input:{path:"calc.c"}}]},
		{tool_calls:[{name:"finish", input:$fin}]},
		{tool_calls:[{name:"finish", input:{summary:"nothing to do"}}]}]')"
	unset FORGE_CASSETTE
	export FORGE_PROVIDER=anthropic FORGE_BASE_URL="$MOCK_URL" ANTHROPIC_API_KEY=test-key
	implement T1 -0
	stream=$output
	# the requests in order: parent, child, child, parent
	requests=$(curl -sS -f "$MOCK_URL/_mock/requests")
	jq -e 'length == 4' <<<"$requests"
	# the child: its own context, the sub-agent prompt, exactly the tools asked for
	jq -e '.[1].body | (.system | tostring | contains("You are a helper agent of Forge")) and
	       ([.tools[].name] == ["read_file","grep","finish","ask_human"]) and
	       (.messages[0].content | tostring | contains("Read calc.c and say which operations it has."))' <<<"$requests"
	# the parent's next call has the child's result as the delegate tool's result
	jq -e '.[3].body.messages | tostring | contains("OPS: add, sub") and contains("calc has add and sub")' <<<"$requests"
	jq -e '.[0].body.tools | map(.name) | index("delegate") != null' <<<"$requests"
	# events: started and completed under the parent (no span), the child's under its span
	span=$(events_of subagent.started | jq -r .payload.span)
	events_of subagent.started | jq -e '(has("span") | not) and (.payload | .parent_span == null and
	  .depth == 1 and .number == 1 and .mode == "read" and .tools == ["read_file","grep"])'
	events_of subagent.completed | jq -e --arg s "$span" '(has("span") | not) and .payload.span == $s and
	  .payload.status == "ok" and .payload.iterations == 2 and .payload.summary == "calc has add and sub"'
	run -0 jq -sc --arg s "$span" '[.[] | select(.kind == "event" and .span == $s) |
	  [.source, .phase, .type, .parent_span]] | unique' <<<"$stream"
	assert_output '[["forge-agent","implement","agent.iteration",null],["forge-agent","implement","context.window",null],["forge-agent","implement","llm.called",null],["forge-agent","implement","tool.executed",null]]'
	# every event of the stream keeps the parent's trace
	run -0 jq -sc '[.[] | .trace_id] | unique' <<<"$stream"
	assert_output '["T1"]'
}

@test "the child's model call writes its live text under the run (phase implement-sub, its span), for forge tui" {
	GO="$BATS_TEST_TMPDIR/go"
	# the child's first answer: its text, then the stream waits (message_start,
	# block start, ping, the text, the block's end: 5 events) until $GO exists
	mock_script "$(jq -nc --argjson read "$READ_TASK" --argjson fin "$CHILD_FINISH" --arg go "$GO" '[
		{tool_calls:[{name:"delegate", input:$read}]},
		{text:"Reading calc.c for its operations.", chunk:1000, pause_after:5, pause_file:$go,
		 tool_calls:[{name:"read_file", input:{path:"calc.c"}}]},
		{tool_calls:[{name:"finish", input:$fin}]},
		{tool_calls:[{name:"finish", input:{summary:"nothing to do"}}]}]')"
	unset FORGE_CASSETTE
	export FORGE_PROVIDER=anthropic FORGE_BASE_URL="$MOCK_URL" ANTHROPIC_API_KEY=test-key
	plan_state T1 >"$BATS_TEST_TMPDIR/in.json"
	forge-implement --config "$CFG" <"$BATS_TEST_TMPDIR/in.json" >"$BATS_TEST_TMPDIR/out" 2>&1 &
	pid=$!
	for i in $(seq 300); do
		got=$(sqlite3 "$FORGE_DB" "select phase || '|' || coalesce(span_id, '-') || '|' || text from live_text
			where trace_id = 'T1' and text != ''" 2>/dev/null || true)
		[ -n "$got" ] && break
		sleep 0.1
	done
	touch "$GO"
	wait "$pid"
	# the row is the child's: its span, as its subagent.started event says
	span=$(jq -Rr 'fromjson? | select(.kind == "event" and .type == "subagent.started") | .payload.span' "$BATS_TEST_TMPDIR/out")
	[[ "$span" =~ ^[0-9A-Z]{26}$ ]]
	[ "$got" = "implement-sub|$span|Reading calc.c for its operations." ]
	[ "$(sqlite3 "$FORGE_DB" "select count(*) from live_text")" -eq 0 ]
}

@test "write mode: subagent.completed names the files as git does: a space in a name, a name git quotes" {
	cassette "$(call implement "" delegate '{"task":"Add two notes.","mode":"write","tools":["write_file"]}')" \
		"$(call implement-sub 1 write_file '{"path":"my file.txt","content":"a note\n"}')" \
		"$(call implement-sub 1 write_file '{"path":"café.txt","content":"une note\n"}')" \
		"$(call implement-sub 1 finish '{"summary":"notes added","output":"done"}')" \
		"$(call implement "" finish "$FINISH")"
	implement T9 -0
	# (before: ["my"], the quoted name left out)
	events_of subagent.completed | jq -e '.payload | .applied == true and .files == ["café.txt", "my file.txt"]'
}

@test "write mode: the child's diff lands in the parent's worktree and commit; its worktree is gone" {
	cassette "$(call implement "" delegate '{"task":"Change the usage text.","mode":"write","tools":["read_file","edit_file"]}')" \
		"$(call implement-sub 1 edit_file '{"path":"calc.c","old":"usage: calc add|sub A B","new":"usage: calc add|sub|mul A B"}')" \
		"$(call implement-sub 1 finish '{"summary":"usage updated","output":"done"}')" \
		"$(call implement "" finish "$FINISH")"
	implement T2 -0
	events_of subagent.completed | jq -e '.payload | .status == "ok" and .applied == true and .files == ["calc.c"]'
	tail -n 1 <<<"$output" | jq -e '.changes.files == [{"path":"calc.c","action":"modify","additions":1,"deletions":1}]'
	run -0 git show forge/T2:calc.c
	assert_output --partial "usage: calc add|sub|mul A B"
	# the child's worktree was removed; the user's checkout is untouched
	run -0 git worktree list --porcelain
	[ "$(grep -c '^worktree ' <<<"$output")" -eq 2 ]
	run -0 git status --porcelain
	assert_output ""
}

@test "write mode: a helper's change of over 16 MiB lands whole (its diff is not a line of its output)" {
	cassette "$(call implement "" delegate '{"task":"Generate the test data.","mode":"write","tools":["run_command"]}')" \
		"$(call implement-sub 1 run_command '{"command":"seq 1 2500000 > big.txt; echo small > small.txt"}')" \
		"$(call implement-sub 1 finish '{"summary":"generated","output":"ok"}')" \
		"$(call implement "" finish "$FINISH")"
	implement T10 -0
	# (before: its result line, which held the diff, was over 16 MiB and
	# dropped: "crashed ... exit status 0 and no result", nothing applied)
	events_of subagent.completed | jq -e '.payload | .status == "ok" and .applied == true and
	  .files == ["big.txt", "small.txt"] and (has("reason") | not)'
	run -0 git show forge/T10:small.txt
	assert_output small
	[ "$(git show forge/T10:big.txt | wc -l)" -eq 2500000 ]
	[ "$(git show forge/T10:big.txt | tail -n 1)" = 2500000 ]
}

@test "write mode: the user's git settings for diffs and GIT_* variables do not shape the helper's patch" {
	# settings for diffs a person reads: no a/ b/ prefixes, colour, an
	# external tool, whitespace "fixed" on apply, no context lines
	git config --global diff.noprefix true
	git config --global diff.mnemonicPrefix true
	git config --global color.diff always
	git config --global diff.external /bin/false
	git config --global apply.whitespace fix
	export GIT_DIFF_OPTS=--unified=0
	cassette "$(call implement "" delegate '{"task":"Add a note, change the check.","mode":"write","tools":["write_file","edit_file"]}')" \
		"$(call implement-sub 1 write_file '{"path":"tests/NOTE.txt","content":"a note \n"}')" \
		"$(call implement-sub 1 edit_file '{"path":"tests/check.sh","old":"#!/bin/sh","new":"#!/bin/sh\n# checked"}')" \
		"$(call implement-sub 1 finish '{"summary":"noted","output":"done"}')" \
		"$(call implement "" finish "$FINISH")"
	implement T3 -0
	events_of subagent.completed | jq -e '.payload | .status == "ok" and .applied == true and
	  .files == ["tests/NOTE.txt", "tests/check.sh"]'
	# (before: NOTE.txt at the top and check.sh a conflict; with colour "No valid
	# patches", with diff.external the helper failed)
	run -0 git diff --no-ext-diff --name-only main forge/T3
	assert_output "tests/NOTE.txt
tests/check.sh"
	run -0 git show forge/T3:tests/NOTE.txt
	[ "$output" = "a note " ]   # its trailing space as the helper wrote it
	run -0 git show forge/T3:tests/check.sh
	assert_output --partial "# checked"
}

@test "write mode: the git that makes, diffs and applies the helper's work runs no program of the worktree and gets no key" {
	# a relative hooks path (husky's .husky/_, a .githooks directory) and an
	# fsmonitor name files of the run's worktree, which the model writes
	git config core.hooksPath .githooks
	git config core.fsmonitor .githooks/fsmonitor
	# every git the delegate tool starts writes its environment to git-env
	mkdir "$BATS_TEST_TMPDIR/spy"
	printf '#!/bin/sh\nenv >>"%s"\nexec %s "$@"\n' "$BATS_TEST_TMPDIR/git-env" "$(command -v git)" \
		>"$BATS_TEST_TMPDIR/spy/git"
	chmod +x "$BATS_TEST_TMPDIR/spy/git"
	export PATH="$BATS_TEST_TMPDIR/spy:$PATH" ANTHROPIC_API_KEY=sk-ant-canary-delegate-git
	local ran="$BATS_TEST_TMPDIR/ran" plant=""
	for h in post-checkout post-index-change reference-transaction fsmonitor; do
		plant="$plant printf '#!/bin/sh\\necho $h >>$ran\\n' >.githooks/$h;"
	done
	cassette "$(call implement "" run_command "$(jq -nc --arg c "mkdir .githooks &&$plant chmod +x .githooks/*" '{command:$c}')")" \
		"$(call implement "" delegate '{"task":"Add a note.","mode":"write","tools":["write_file"]}')" \
		"$(call implement-sub 1 write_file '{"path":"NOTE.txt","content":"a note\n"}')" \
		"$(call implement-sub 1 finish '{"summary":"noted","output":"done"}')" \
		"$(call implement "" finish "$FINISH")"
	implement T4 -0
	events_of subagent.completed | jq -e '.payload | .status == "ok" and .applied == true and .files == ["NOTE.txt"]'
	# (before: git worktree add ran the model's post-checkout hook, git add -A
	# its post-index-change hook and fsmonitor, as the user, with the key)
	[ -s "$BATS_TEST_TMPDIR/git-env" ]
	run -1 grep -c sk-ant-canary "$BATS_TEST_TMPDIR/git-env"
	[ -x "$(run_worktree T4)/.githooks/post-checkout" ]   # the model's hooks are there
	[ ! -e "$ran" ]
	run -0 git show forge/T4:NOTE.txt
}

@test "on a terminal, the model's task and tool names are shown without their control characters" {
	echo '{"memory":{"reflect":false}}' >"$CFG"   # no reflection call on the tool error
	cassette "$(call implement "" delegate '{"task":"\u001b]0;TITLE\u0007\u001b[2JRead calc.c, café.","tools":["read_file"]}')" \
		"$(call implement-sub 1 finish "$CHILD_FINISH")" \
		"$(call implement "" 'x\u001b[2Jy' '{}')" \
		"$(call implement "" finish "$FINISH")"
	plan_state T4 >"$BATS_TEST_TMPDIR/in.json"
	run -0 python3 "$FORGE_ROOT/tests/helpers/pty_run.py" --transcript "$BATS_TEST_TMPDIR/tty" -- \
		sh -c 'forge-implement --config "$0" <"$1" >/dev/null' "$CFG" "$BATS_TEST_TMPDIR/in.json"
	# (before: ESC ] 0 ; TITLE BEL set the window's title, ESC [ 2 J cleared the screen)
	grep -aF '↳ sub-agent 1 (read):  ]0;TITLE  [2JRead calc.c, café.' "$BATS_TEST_TMPDIR/tty"
	grep -aF 'iteration 2 · x [2Jy · $' "$BATS_TEST_TMPDIR/tty"
	run -1 grep -ac -e $'\e]' -e $'\e\\[2J' "$BATS_TEST_TMPDIR/tty"
}

@test "the child's cost is the phase's: phase state cost = parent's calls + child's calls" {
	cassette "$(call implement "" delegate "$READ_TASK")" \
		"$(call implement-sub 1 read_file '{"path":"calc.c"}')" \
		"$(call implement-sub 1 finish "$CHILD_FINISH")" \
		"$(call implement "" finish "$FINISH")"
	implement T3 -0
	jq -se '[.[] | select(.type == "llm.called")] as $calls |
	  ($calls | map(select(has("span"))) | map(.cost.usd) | add) as $child |
	  ($calls | map(select(has("span") | not)) | map(.cost.usd) | add) as $parent |
	  (.[-1].cost.usd - ($child + $parent) | fabs) < 1e-9 and $child > 0 and
	  ([.[] | select(.type == "subagent.completed")][0].payload.cost_usd - $child | fabs) < 1e-9 and
	  .[-1].cost.tokens == 4200' <<<"$output"
}

@test "budget: a child that would spend past its share is stopped by its own cost breaker; the parent goes on" {
	# implement may spend $0.01: after the parent's first call ($0.00375) the
	# child gets half of the rest, $0.003125, and its first call costs more
	echo '{"safety":{"cost":{"per_phase":{"implement":0.01}}}}' >"$CFG"
	cassette "$(call implement "" delegate "$READ_TASK")" \
		"$(call implement-sub 1 read_file '{"path":"calc.c"}')" \
		"$(call implement-sub 1 finish "$CHILD_FINISH")" \
		"$(call implement "" finish "$FINISH")"
	implement T8 -0
	events_of subagent.started | jq -e '.payload.budget_usd == 0.003125'
	span=$(events_of subagent.started | jq -r .payload.span)
	events_of breaker.tripped | jq -e --arg s "$span" '.span == $s and .payload.breaker == "cost"'
	events_of subagent.completed | jq -e '.payload | .status == "tripped" and .iterations == 1 and .cost_usd == 0.00375'
	tail -n 1 <<<"$output" | jq -e '.status == "ok" and .cost.usd == 0.01125'
}

@test "depth: with max_depth 1 a child is not given delegate, and its call is refused without a process" {
	echo '{"agent":{"subagents":{"max_depth":1}}}' >"$CFG"
	cassette "$(call implement "" delegate '{"task":"Look around."}')" \
		"$(call implement-sub 1 delegate '{"task":"Look deeper."}')" \
		"$(call implement-sub 1 finish "$CHILD_FINISH")" \
		"$(call implement "" finish "$FINISH")"
	implement T4 -0
	[ "$(events_of subagent.started | wc -l)" -eq 1 ]
	span=$(events_of subagent.started | jq -r .payload.span)
	events_of subagent.started | jq -e '.payload.tools | index("delegate") == null'
	events_of tool.failed | jq -e --arg s "$span" 'select(.payload.tool == "delegate") | .span == $s and
	  (.payload.error | contains("sub-agent at depth 1 and sub-agents nest at most 1 deep (agent.subagents.max_depth)"))'
	# with the default (2) the child is given delegate
	echo '{}' >"$CFG"
	implement T4b -0
	events_of subagent.started | jq -se '.[0].payload.tools | index("delegate") != null'
}

@test "count: past max_count the tool refuses; the parent goes on" {
	echo '{"agent":{"subagents":{"max_count":1}}}' >"$CFG"
	cassette '{"phase":"implement","response":{"tool_calls":[{"name":"delegate","input":{"task":"One."}},{"name":"delegate","input":{"task":"Two."}}],"usage":{"input_tokens":1000,"output_tokens":50}}}' \
		"$(call implement-sub 1 finish "$CHILD_FINISH")" \
		"$(call implement "" finish "$FINISH")"
	implement T5 -0
	[ "$(events_of subagent.started | wc -l)" -eq 1 ]
	events_of tool.failed | jq -e '.payload.tool == "delegate" and
	  (.payload.error | contains("already started 1 sub-agent, the limit (agent.subagents.max_count)"))'
	tail -n 1 <<<"$output" | jq -e '.status == "ok"'
}

@test "a child that crashes: the tool result says so and the parent finishes" {
	mkdir "$BATS_TEST_TMPDIR/bin"
	cp "$FORGE_BINDIR/forge-implement" "$BATS_TEST_TMPDIR/bin/"
	cat >"$BATS_TEST_TMPDIR/bin/forge-agent" <<-'EOF'
		#!/bin/sh
		cat >"${0%/*}/doc.json"
		echo "forge-agent: something broke" >&2
		kill -KILL $$
	EOF
	chmod +x "$BATS_TEST_TMPDIR/bin/forge-agent"
	cassette "$(call implement "" delegate "$READ_TASK")" "$(call implement "" finish "$FINISH")"
	plan_state T6 >"$BATS_TEST_TMPDIR/in.json"
	run -0 --separate-stderr "$BATS_TEST_TMPDIR/bin/forge-implement" --config "$CFG" <"$BATS_TEST_TMPDIR/in.json"
	events_of subagent.completed | jq -e '.payload | .status == "crashed" and .cost_usd == 0 and
	  (.reason | contains("the sub-agent crashed: killed by signal 9") and contains("something broke"))'
	events_of tool.failed | jq -e '.payload.tool == "delegate" and (.payload.error | contains("crashed"))'
	tail -n 1 <<<"$output" | jq -e '.status == "ok"'
	# what it was given (subagent.schema.json $defs/task): the parent's
	# worktree to read, half the phase's budget, the time the phase has left
	jq -e --arg wt "$(run_worktree T6)" '.root == $wt and .mode == "read" and
	  .tools == ["read_file","grep"] and .phase == "implement" and .call_phase == "implement-sub" and
	  .number == 1 and .parent == {"trace_id":"T6","span":null,"depth":0} and
	  .budget_usd > 4.99 and .budget_usd <= 5 and .time_s > 3000 and .time_s <= 3600 and (has("base") | not)' \
		"$BATS_TEST_TMPDIR/bin/doc.json"
}

@test "a helper's line over 16 MiB is not dropped silently: the reason says its result was lost to it" {
	mkdir "$BATS_TEST_TMPDIR/bin"
	cp "$FORGE_BINDIR/forge-implement" "$BATS_TEST_TMPDIR/bin/"
	cat >"$BATS_TEST_TMPDIR/bin/forge-agent" <<-'EOF'
		#!/bin/sh
		cat >/dev/null
		printf '{"kind":"subagent_result","output":"'
		head -c 17000000 /dev/zero | tr '\0' x
		printf '"}\n'
	EOF
	chmod +x "$BATS_TEST_TMPDIR/bin/forge-agent"
	cassette "$(call implement "" delegate "$READ_TASK")" "$(call implement "" finish "$FINISH")"
	plan_state T11 >"$BATS_TEST_TMPDIR/in.json"
	run -0 --separate-stderr "$BATS_TEST_TMPDIR/bin/forge-implement" --config "$CFG" <"$BATS_TEST_TMPDIR/in.json"
	# (before: "the sub-agent crashed: it ended with exit status 0 and no result")
	events_of subagent.completed | jq -e '.payload | .status == "crashed" and .reason == "the sub-agent'"'"'s result was lost: 1 line of its output was over 16 MiB, the most a line may hold, and could not be read (exit status 0)"'
	tail -n 1 <<<"$output" | jq -e '.status == "ok"'
}

@test "write mode: a diff that does not apply is named as a conflict and changes nothing" {
	mkdir "$BATS_TEST_TMPDIR/bin"
	cp "$FORGE_BINDIR/forge-implement" "$BATS_TEST_TMPDIR/bin/"
	# a helper whose change was made against other text than the file
	# holds now: the delegating agent's first line changed meanwhile
	cat >"$BATS_TEST_TMPDIR/bin/forge-agent" <<-'EOF'
		#!/bin/sh
		doc=$(cat)
		span=$(printf '%s' "$doc" | jq -r .span)
		root=$(printf '%s' "$doc" | jq -r .root)
		sed -i '1s|.*|/* other line */|' "$root/calc.c"
		sed -i '1s|.*|/* changed meanwhile */|' "$PARENT_WT/calc.c"
		printf '{"kind":"subagent_result","span":"%s","status":"ok","summary":"s","output":"o","cost":{"usd":0.5,"tokens":7},"iterations":1}\n' "$span"
	EOF
	chmod +x "$BATS_TEST_TMPDIR/bin/forge-agent"
	export PARENT_WT="$(run_worktree T9)"
	echo '{"memory":{"reflect":false}}' >"$CFG"   # no reflection call on the tool error
	mock_script '[{"tool_calls":[{"name":"delegate","input":{"task":"Edit.","mode":"write"}}]},
		{"tool_calls":[{"name":"finish","input":{"summary":"done"}}]}]'
	unset FORGE_CASSETTE
	export FORGE_PROVIDER=anthropic FORGE_BASE_URL="$MOCK_URL" ANTHROPIC_API_KEY=test-key
	plan_state T9 >"$BATS_TEST_TMPDIR/in.json"
	# on a terminal, for its progress lines
	run -0 python3 "$FORGE_ROOT/tests/helpers/pty_run.py" --transcript "$BATS_TEST_TMPDIR/tty" -- \
		sh -c '"$0" --config "$1" <"$2" >"$3"' "$BATS_TEST_TMPDIR/bin/forge-implement" "$CFG" \
		"$BATS_TEST_TMPDIR/in.json" "$BATS_TEST_TMPDIR/out.jsonl"
	# the helper's line says its work was not applied (before: a plain "ok")
	grep -aF '↳ sub-agent 1 ok, its changes did not apply (conflict) · $0.5000' "$BATS_TEST_TMPDIR/tty"
	output=$(cat "$BATS_TEST_TMPDIR/out.jsonl")
	events_of subagent.completed | jq -e '.payload | .status == "ok" and .applied == false and .files == ["calc.c"] and
	  (.conflict | contains("patch failed: calc.c:1")) and .cost_usd == 0.5 and .tokens == 7'
	events_of tool.failed | jq -e '.payload.tool == "delegate" and (.payload.error | contains("\"conflict\":"))'
	# the model gets the conflict and the diff, to use by hand
	curl -sS -f "$MOCK_URL/_mock/requests" | jq -e '.[1].body.messages | tostring |
	  contains("patch failed: calc.c:1") and contains("-/* calc - a tiny calculator") and contains("+/* other line */")'
	# nothing of the helper's changed; its 0.5 USD is the phase's all the same
	tail -n 1 <<<"$output" | jq -e '[.changes.files[].path] == ["calc.c"] and .cost.usd > 0.5'
	[ "$(git show forge/T9:calc.c | head -n 1)" = "/* changed meanwhile */" ]
	run -1 grep -c "other line" "$PARENT_WT/calc.c"
	run -0 git worktree list --porcelain
	[ "$(grep -c '^worktree ' <<<"$output")" -eq 2 ]
}

@test "tools the parent lacks, and writes for a planner, are refused: nothing starts" {
	plan=$(sed -n 3p "$CASSETTES/plan-calc.jsonl")
	cassette "$(call plan "" delegate '{"task":"Build it.","tools":["run_command"]}')" \
		"$(call plan "" delegate '{"task":"Fix it.","mode":"write"}')" \
		"$(call plan "" delegate '{"task":"Edit it.","tools":["read_file","edit_file"]}')" \
		"$plan"
	run -0 --separate-stderr forge-plan --config "$CFG" --task "add a mul operation"
	[ "$(events_of subagent.started | wc -l)" -eq 0 ]
	run -0 jq -rs '.[] | select(.type == "tool.failed") | .payload.error' <<<"$output"
	assert_output "delegate: refused: the sub-agent cannot have 'run_command': this agent does not have it
delegate: refused: mode \"write\" needs tools that change files, and this agent has none; use mode \"read\"
delegate: refused: the sub-agent cannot have 'edit_file': this agent does not have it"
}

@test "tools.permissions of the phase hold for its helpers: a denied or ask tool is refused to delegate and never given" {
	echo '{"tools":{"permissions":{"implement":{"deny":["run_command"],"ask":["write_file"]}}},"memory":{"reflect":false}}' >"$CFG"
	mock_script "$(jq -nc '[
		{tool_calls:[{name:"delegate", input:{task:"Run it.", mode:"write", tools:["run_command"]}}]},
		{tool_calls:[{name:"delegate", input:{task:"Write it.", mode:"write", tools:["read_file","write_file"]}}]},
		{tool_calls:[{name:"delegate", input:{task:"Do it.", mode:"write"}}]},
		{tool_calls:[{name:"run_command", input:{command:"echo child > child_ran.txt"}}]},
		{tool_calls:[{name:"finish", input:{summary:"tried"}}]},
		{tool_calls:[{name:"finish", input:{summary:"done"}}]}]')"
	unset FORGE_CASSETTE
	export FORGE_PROVIDER=anthropic FORGE_BASE_URL="$MOCK_URL" ANTHROPIC_API_KEY=test-key
	implement T9 -0
	[ "$(events_of tool.failed | jq -r 'select(.payload.tool == "delegate") | .payload.error')" = \
	  "delegate: refused: the sub-agent cannot have 'run_command': this agent may not use it (tools.permissions.implement.deny)
delegate: refused: the sub-agent cannot have 'write_file': it needs a human's approval (tools.permissions.implement.ask); call it yourself" ]
	# the one helper that started has neither, nor is it offered them; its call is refused
	[ "$(events_of subagent.started | wc -l)" -eq 1 ]
	events_of subagent.started | jq -e '.payload.tools | index("run_command") == null and
	  index("write_file") == null and index("edit_file") != null'
	curl -sS -f "$MOCK_URL/_mock/requests" | jq -e '.[3].body.tools | map(.name) |
	  index("run_command") == null and index("write_file") == null and index("edit_file") != null'
	events_of tool.failed | jq -e 'select(.payload.tool == "run_command") | .span != null and
	  .payload.error == "this tool was not given to this sub-agent; use the tools it has"'
	[ ! -e "$(run_worktree T9)/child_ran.txt" ]
	run -0 git -C "$REPO" ls-tree -r --name-only forge/T9
	refute_line child_ran.txt
}

@test "a helper enforces its phase's tools.permissions itself: a denied tool it was given is refused, an ask tool escalates" {
	echo '{"tools":{"permissions":{"implement":{"deny":["run_command"],"ask":["write_file"]}}},"memory":{"reflect":false}}' >"$CFG"
	mock_script "$(jq -nc '[
		{tool_calls:[{name:"run_command", input:{command:"echo child > ran.txt"}}]},
		{tool_calls:[{name:"write_file", input:{path:"wrote.txt", content:"x"}}]}]')"
	unset FORGE_CASSETTE
	export FORGE_PROVIDER=anthropic FORGE_BASE_URL="$MOCK_URL" ANTHROPIC_API_KEY=test-key
	# a sub-task document given straight to forge-agent: as if delegate had not checked
	jq -nc --arg r "$REPO" '{task:"Do it.", tools:["read_file","run_command","write_file"], mode:"write", root:$r,
	  span:"01J0000000000000000000000A", phase:"implement", call_phase:"implement-sub", number:1,
	  parent:{trace_id:"T10", span:null, depth:0}}' >"$BATS_TEST_TMPDIR/doc.json"
	run -4 --separate-stderr forge-agent --config "$CFG" <"$BATS_TEST_TMPDIR/doc.json"
	curl -sS -f "$MOCK_URL/_mock/requests" | jq -e '.[0].body.tools | map(.name) == ["read_file","write_file","finish","ask_human"]'
	events_of tool.failed | jq -se 'map(.payload | [.tool, .kind, .error]) == [
	  ["run_command","denied","run_command: refused: the tool is not allowed in implement (tools.permissions.implement.deny)"],
	  ["write_file","ask","write_file: needs a human'"'"'s approval (tools.permissions.implement.ask)"]]'
	tail -n 1 <<<"$output" | jq -e '.kind == "subagent_result" and .status == "escalated"'
	[ ! -e "$REPO/ran.txt" ]
	[ ! -e "$REPO/wrote.txt" ]
}

@test "off: agent.subagents.enabled false offers no delegate tool" {
	echo '{"agent":{"subagents":{"enabled":false}}}' >"$CFG"
	cassette "$(call implement "" delegate "$READ_TASK")" "$(call implement "" finish "$FINISH")"
	implement T7 -0
	[ "$(events_of subagent.started | wc -l)" -eq 0 ]
	events_of tool.failed | jq -e '.payload.error == "this tool is not available to the implementer"'
}

@test "forge run: the child's cost is in the run's total; forge status and forge show draw the tree" {
	{
		grep '"phase": *"plan"' "$CASSETTES/run-clean.jsonl"
		call implement "" delegate '{"task":"Read calc.c and say which operations it has.","tools":["read_file","grep","delegate"]}'; echo
		call implement-sub 1 delegate '{"task":"Check the tests.","tools":["read_file"]}'; echo
		call implement-sub-sub 1 finish '{"summary":"tests check add and sub"}'; echo
		call implement-sub 1 finish "$CHILD_FINISH"; echo
		grep '"phase": *"implement"' "$CASSETTES/run-clean.jsonl"
	} >"$BATS_TEST_TMPDIR/run.jsonl"
	export FORGE_PROVIDER=replay FORGE_CASSETTE="$BATS_TEST_TMPDIR/run.jsonl"
	run -0 --separate-stderr forge run --config "$CFG" "add a mul operation"
	trace=$(forge history --json -n 1 | jq -r .trace_id)
	run -0 forge status "$trace" --json
	st_json=$output
	jq -e '.run.status == "completed" and (.subagents | length) == 2 and
	  (.subagents[0] | .phase == "implement" and .depth == 1 and .parent_span == null and .status == "ok") and
	  (.subagents[1] | .depth == 2 and .status == "ok" and .task == "Check the tests.") and
	  .subagents[1].parent_span == .subagents[0].span' <<<"$st_json"
	# the run's total is every model call's, the children's included
	total=$(sqlite3 "$FORGE_DB" "SELECT sum(cost_usd) FROM events WHERE trace_id = '$trace' AND type = 'llm.called'")
	sub=$(sqlite3 "$FORGE_DB" "SELECT sum(cost_usd) FROM events WHERE trace_id = '$trace' AND type = 'llm.called' AND record ->> '\$.span' IS NOT NULL")
	jq -e --argjson t "$total" --argjson s "$sub" '$s > 0 and (.run.total_cost_usd - $t | fabs) < 1e-9 and
	  (.state.cost.usd - $t | fabs) < 1e-9' <<<"$st_json"
	s1=$(jq -r '.subagents[0].span[-8:]' <<<"$st_json")
	s2=$(jq -r '.subagents[1].span[-8:]' <<<"$st_json")
	run -0 forge status "$trace"
	assert_output --regexp "
subagents
  implement
    └ ok       \\\$0\.[0-9]{4}  read  $s1  Read calc\.c and say which operations it has\.
      └ ok       \\\$0\.[0-9]{4}  read  $s2  Check the tests\.\$"
	run -0 forge show "$trace"
	assert_output --partial "subagents
  implement
    └ ok "
	run -0 forge show "$trace" --json
	jq -e --argjson st "$st_json" '.subagents == $st.subagents' <<<"$output"
}

@test "forge status and forge show draw a helper's task on one line, without its escape sequences" {
	{
		grep '"phase": *"plan"' "$CASSETTES/run-clean.jsonl"
		call implement "" delegate '{"task":"Look\u001b]0;PWNED\u0007\u001b[31m around\nsecond\rline\u009b2J","tools":["read_file"]}'; echo
		call implement-sub 1 finish "$CHILD_FINISH"; echo
		grep '"phase": *"implement"' "$CASSETTES/run-clean.jsonl"
	} >"$BATS_TEST_TMPDIR/run.jsonl"
	export FORGE_PROVIDER=replay FORGE_CASSETTE="$BATS_TEST_TMPDIR/run.jsonl"
	run -0 --separate-stderr forge run --config "$CFG" "add a mul operation"
	trace=$(forge history --json -n 1 | jq -r .trace_id)
	# the record keeps the model's words as they were
	run -0 forge status "$trace" --json
	jq -e '.subagents[0].task == "Look\u001b]0;PWNED\u0007\u001b[31m around\nsecond\rline\u009b2J"' <<<"$output"
	s1=$(jq -r '.subagents[0].span[-8:]' <<<"$output")
	# (before: forge status wrote the OSC (the terminal's title) and the
	# colour as they were, and both broke the tree at the newline)
	for cmd in status show; do
		run -0 forge "$cmd" "$trace"
		shown=$output
		assert_output --regexp "
subagents
  implement
    └ ok       \\\$0\.[0-9]{4}  read  $s1  Look \]0;PWNED  \[31m around second line  2J(\$|
)"
		run -1 grep -c -e $'\e' -e $'\a' -e $'\r' -e $'\xc2\x9b' <<<"$shown"
	done
}
