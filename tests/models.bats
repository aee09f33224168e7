#!/usr/bin/env bats
# models.bats - the model options and what reaches the model: `forge run`
# with --provider/--model/--base-url completes all five phases against the
# mock, Anthropic or OpenAI-compatible (a non-Claude model is never paired
# with claude-haiku as its fast model, from flags or from the config); every
# phase takes the model options; llm.called names the provider and model;
# a matching SKILL.md reaches the model's request in forge-plan |
# forge-implement.

bats_require_minimum_version 1.5.0

load test_helper/mock
mock_per_file 180

setup() {
	load test_helper/common
	forge_setup
	calc_setup
	# the models the price table does not know, priced (free) for the budget
	mkdir -p "$XDG_CONFIG_HOME/forge"
	echo '{"llm":{"pricing":{"mock-model-1":{"input":0,"output":0},"qwen2.5-coder":{"input":0,"output":0}}}}' \
		>"$XDG_CONFIG_HOME/forge/config.json"
}

# script_run CASSETTE: the mock answers with the cassette's answers, in
# order, each with the model the request asked for.
script_run() {
	mock_script "$(jq -c -s '[.[] | .response | del(.model)]' "$CASSETTES/$1")"
}

requests() {
	curl -sS -f "$MOCK_URL/_mock/requests"
}

last_trace() {
	forge history --json -n 1 | jq -r .trace_id
}

# The high-risk plan makes review ask the (fast) model; with
# review.human_min_risk critical the architecture gate, passed by
# --auto-approve, is the only stop.
HIGH_RISK='{"review":{"human_min_risk":"critical"}}'

# check_run MODEL PATH: all five phases ran, and every one of the run's 11
# requests (plan 3, implement 7, review 1) went to PATH asking for MODEL.
check_run() {
	local T
	T=$(last_trace)
	run -0 forge status --json "$T"
	jq -e '.run.status == "completed" and .state.phase == "deploy" and .state.deployment.status == "healthy"
		and (.state.review.decision == "approve" or .state.review.approved_by.by == "flag")' <<<"$output"
	run -0 forge events replay "$T"
	jq -e -s '[.[] | select(.type == "phase.completed") | .source] ==
		["forge-plan", "forge-implement", "forge-review", "forge-test", "forge-deploy"]' <<<"$output"
	# review asked the model (layer 3)
	jq -e -s '[.[] | select(.type == "review.layer" and .payload.layer == "ai")] | length == 1' <<<"$output"
	run -0 requests
	jq -e --arg m "$1" --arg p "$2" 'length == 11 and all(.[]; .body.model == $m and .path == $p)' <<<"$output"
	[[ "$output" != *claude-haiku* ]]
}

@test "forge run --provider anthropic --base-url URL --model M: five phases, every request asks for M" {
	# the default configuration: review asks a human at high risk and
	# --auto-approve answers, as a new user's first run would
	script_run run-highrisk.jsonl
	export ANTHROPIC_API_KEY=test-key
	run -0 --separate-stderr forge run --auto-approve \
		--provider anthropic --base-url "$MOCK_URL" --model mock-model-1 "add a mul operation" </dev/null
	[[ "$stderr" != *"unknown option"* ]]
	[[ "$output" == *"review    require_human (0 findings), approved by flag at a gate"* ]]
	check_run mock-model-1 /v1/messages
	# llm.called names the provider and the model
	run -0 forge events replay "$(last_trace)"
	# (11: review's AI call has one too, as every paid call)
	jq -e -s '[.[] | select(.type == "llm.called") | .payload] | length == 11
		and all(.[]; .provider == "anthropic" and .model == "mock-model-1")' <<<"$output"
}

@test "forge run --provider openai --base-url URL/v1 --model qwen2.5-coder: five phases, never claude-haiku" {
	echo "$HIGH_RISK" >"$BATS_TEST_TMPDIR/high.json"
	script_run run-highrisk.jsonl
	export OPENAI_API_KEY=test-key
	run -0 --separate-stderr forge run --auto-approve --config "$BATS_TEST_TMPDIR/high.json" \
		--provider openai --base-url "$MOCK_URL/v1" --model qwen2.5-coder "add a mul operation" </dev/null
	check_run qwen2.5-coder /v1/chat/completions
	run -0 forge events replay "$(last_trace)"
	jq -e -s '[.[] | select(.type == "llm.called") | .payload] | length == 11
		and all(.[]; .provider == "openai" and .model == "qwen2.5-coder")' <<<"$output"
}

@test "an OpenAI-compatible model from .forge/config.json is its own fast model (review asks it, not claude-haiku)" {
	mkdir -p .forge
	jq -n '{llm: {provider: "openai", model: "qwen2.5-coder"}, review: {human_min_risk: "critical"}}' \
		>.forge/config.json
	# (the server is the user's to name: a repository's base URL is ignored)
	jq --arg url "$MOCK_URL/v1" '.llm.base_url = $url' "$XDG_CONFIG_HOME/forge/config.json" >"$BATS_TEST_TMPDIR/u.json"
	mv "$BATS_TEST_TMPDIR/u.json" "$XDG_CONFIG_HOME/forge/config.json"
	script_run run-highrisk.jsonl
	export OPENAI_API_KEY=test-key
	run -0 --separate-stderr forge run --auto-approve "add a mul operation" </dev/null
	check_run qwen2.5-coder /v1/chat/completions
	# forge config and forge doctor say the same
	run -0 --separate-stderr forge config get llm.fast_model
	assert_output qwen2.5-coder
	run -0 --separate-stderr forge doctor --json
	jq -e '.provider.provider == "openai" and .provider.model == "qwen2.5-coder"
		and .provider.fast_model == "qwen2.5-coder"' <<<"$output"
}

@test "every phase takes the model options; forge-deploy accepts and ignores them" {
	for p in plan implement review test deploy; do
		run -0 --separate-stderr "forge-$p" --help
		assert_output --partial "--provider P"
		assert_output --partial "--base-url URL"
	done
	run -0 --separate-stderr forge-deploy --help
	assert_output --partial "Model options (accepted and ignored: forge-deploy calls no model)"
	run -0 --separate-stderr forge-deploy --no-input --provider openai --model m --base-url http://127.0.0.1:9/v1 \
		--cassette "$BATS_TEST_TMPDIR/none.jsonl" </dev/null
	tail -n 1 <<<"$output" | jq -e '.phase == "deploy" and .status == "ok" and .deployment.strategy == "branch"'
}

@test "a matching SKILL.md (not committed) reaches the model's requests in forge-plan | forge-implement" {
	mkdir -p .forge/skills/arith
	cat >.forge/skills/arith/SKILL.md <<-'EOF'
	---
	name: arith
	description: How to add an arithmetic operation to calc
	phases: [plan, implement]
	triggers: ["operation"]
	---
	SKILL-TEXT-7f3a: put calc_OP beside calc_add and list OP in the usage line.
	EOF
	run -0 forge skills implement --task "add a mul operation"
	assert_output --partial arith
	mock_script "$(head -n 10 "$CASSETTES/run-clean.jsonl" | jq -c -s '[.[] | .response | del(.model)]')"
	export ANTHROPIC_API_KEY=test-key FORGE_PROVIDER=anthropic FORGE_BASE_URL="$MOCK_URL"
	run -0 --separate-stderr bash -c 'forge-plan --task "add a mul operation" | forge-implement'
	tail -n 1 <<<"$output" | jq -e '.phase == "implement" and .status == "ok"'
	jq -e -s '[.[] | select(.type == "skills.matched") | .payload.skills] == [["arith"], ["arith"]]' <<<"$output"
	run -0 requests
	[ "$(jq length <<<"$output")" -eq 10 ]
	# the first request of each phase carries the skill's description and text
	for i in 0 3; do
		jq -e --argjson i "$i" '.[$i].body.messages[0].content | tostring |
			contains("## Skills") and contains("How to add an arithmetic operation to calc")
			and contains("SKILL-TEXT-7f3a")' <<<"$output"
	done
	jq -e '.[0].body.system | tostring | contains("planner")' <<<"$output"
}

@test "a model without a price: forge run and a phase refuse it (exit 2) before any call; llm.pricing makes it usable" {
	export OPENAI_API_KEY=test-key
	mock_reset
	local why="no price known for model 'proxy-9', so the cost limits (budget.usd, --budget, safety.cost.*) cannot hold: add its price under llm.pricing in USD per million tokens, e.g. forge config set --global 'llm.pricing.proxy-9' '{\"input\":0,\"output\":0}' for a free local model"
	run -2 --separate-stderr forge run --auto-approve --budget 0.01 \
		--provider openai --base-url "$MOCK_URL/v1" --model proxy-9 "add a mul operation" </dev/null
	assert_equal "$stderr" "forge run: the plan phase cannot use its model: $why; nothing was started"
	run -0 forge history --json
	assert_output ""
	# a phase on its own: forge-plan, and implement's agent
	run -2 --separate-stderr forge-plan --provider openai --base-url "$MOCK_URL/v1" --model proxy-9 \
		--task "add a mul operation"
	[[ "$stderr" == *"plan model: $why"* ]]
	run -0 requests
	assert_output "[]"
	# priced (free) by llm.pricing, the same model runs
	script_run run-clean.jsonl
	echo '{"llm":{"pricing":{"proxy-9":{"input":0,"output":0}}}}' >"$BATS_TEST_TMPDIR/priced.json"
	run -0 --separate-stderr forge-plan --config "$BATS_TEST_TMPDIR/priced.json" --provider openai \
		--base-url "$MOCK_URL/v1" --model proxy-9 --task "add a mul operation"
	tail -n 1 <<<"$output" | jq -e '.status == "ok" and .cost.usd == 0'
}

@test "the price advice, followed for two models with dots in their names, keeps both prices" {
	# (before: it set llm.pricing whole, and the second model's price
	# dropped the first's, hunt59 #7)
	export OPENAI_API_KEY=test-key HOME="$BATS_TEST_TMPDIR/home" XDG_CONFIG_HOME="$BATS_TEST_TMPDIR/home/.config"
	local m advice
	for m in qwen2.5-coder:7b llama3.1:8b; do
		run -2 --separate-stderr forge-plan --provider openai --base-url "$MOCK_URL/v1" --model "$m" \
			--task "add a mul operation"
		advice=$(grep -o "forge config set --global 'llm.pricing[^ ]*' '[^']*'" <<<"$stderr")
		assert_equal "$advice" "forge config set --global 'llm.pricing.\"$m\"' '{\"input\":0,\"output\":0}'"
		eval "run -0 $advice"
	done
	run -0 forge config get llm.pricing
	jq -e '.["qwen2.5-coder:7b"] == {input: 0, output: 0} and .["llama3.1:8b"] == {input: 0, output: 0}' <<<"$output"
	run -0 forge config get 'llm.pricing."qwen2.5-coder:7b".output'
	assert_output 0
	# a quote left open is a bad path (exit 2), not a key
	run -2 --separate-stderr forge config get 'llm.pricing."qwen2.5-coder:7b'
	[[ "$stderr" == *"invalid configuration path"* ]]
	script_run run-clean.jsonl
	run -0 --separate-stderr forge-plan --provider openai --base-url "$MOCK_URL/v1" --model qwen2.5-coder:7b \
		--task "add a mul operation"
	tail -n 1 <<<"$output" | jq -e '.status == "ok" and .cost.usd == 0'
}

@test "cache tokens: llm.called carries them and counts them in its tokens, so forge show's phases add up to the run's" {
	export ANTHROPIC_API_KEY=test-key
	mock_script "$(jq -c -s '[.[] | .response | del(.model) | .usage = {input_tokens: 1000, output_tokens: 100,
		cache_read_input_tokens: 2000, cache_creation_input_tokens: 3000}]' "$CASSETTES/run-clean.jsonl")"
	run -0 --separate-stderr forge run --dry-run --provider anthropic --base-url "$MOCK_URL" \
		--model claude-sonnet-4-5 "add a mul operation" </dev/null
	T=$(last_trace)
	run -0 forge events replay "$T"
	jq -e -s '[.[] | select(.type == "llm.called")] | length == 3 and all(.[]; .payload.input_tokens == 1000
		and .payload.cache_read_tokens == 2000 and .payload.cache_write_tokens == 3000 and .cost.tokens == 6100)' <<<"$output"
	run -0 forge show --json "$T"
	jq -e '.cost.tokens == 18300 and ([.phase_cost[].tokens] | add) == 18300' <<<"$output"
	run -0 forge show "$T"
	# (each call $0.01635: half away from zero, as every view rounds money, core/money.h)
	assert_output --partial 'model claude-sonnet-4-5: 1000 in + 100 out + 2000 cache read + 3000 cache write tokens, $0.0164'
}

@test "a streamed call that breaks off after its usage arrived is billed for it: priced, in llm.called and the phase's cost" {
	export ANTHROPIC_API_KEY=test-key
	# plan's second call: message_start says 100000 input tokens ($0.30 on
	# claude-sonnet-4-5), then the connection drops before message_stop
	mock_script "$(jq -c -s '[.[] | .response | del(.model) | .usage = {input_tokens: 2000, output_tokens: 100}]
		| .[1] += {usage: {input_tokens: 100000, output_tokens: 5000}, cut_after: 2}' "$CASSETTES/run-clean.jsonl")"
	# (no retries: a cut stream is otherwise asked again whole, llm.bats)
	echo '{"llm":{"max_retries":0}}' >"$BATS_TEST_TMPDIR/no-retry.json"
	run -5 --separate-stderr forge-plan --provider anthropic --base-url "$MOCK_URL" --model claude-sonnet-4-5 \
		--config "$BATS_TEST_TMPDIR/no-retry.json" --task "add a mul operation"
	[[ "$stderr" == *"broke off"* ]]
	tail -n 1 <<<"$output" | jq -e '.status == "failed" and (.cost.usd * 1e6 | round) == 307515'
	jq -e -s '[.[] | select(.type == "llm.called") | .cost.usd * 1e6 | round] == [7500, 300015]' <<<"$output"
	run -0 sqlite3 "$FORGE_DB" "select round(cost_usd * 1e6), error is not null from llm_calls order by id"
	assert_output $'7500.0|0\n300015.0|1'
}

@test "every paid call has its llm.called event: the agent's reflection counts in its phase, and forge show's phases add up to the total" {
	# each phase call: 5000 in + 100 out on claude-sonnet-4-5 ($0.0165): implement's
	# 7 calls pass the $0.10 of the agent's success reflection, one more call
	local steps
	steps=$(jq -c -s '[{forced_tool: "record_learnings", times: "always", usage: {input_tokens: 1000, output_tokens: 200},
		tool_calls: [{name: "record_learnings", input: {learnings: [{content: "calc.c keeps one function per operation",
			type: "semantic", context: "adding an operation to calc", confidence: 0.6, tags: ["c"]}]}}]}] +
		[.[] | .response | {text: (.text // ""), tool_calls: (.tool_calls // []), usage: {input_tokens: 5000, output_tokens: 100}}]' \
		"$CASSETTES/run-clean.jsonl")
	mock_script "$steps"
	unset FORGE_CASSETTE
	run -0 --separate-stderr env FORGE_PROVIDER=anthropic ANTHROPIC_API_KEY=test-key \
		forge run --base-url "$MOCK_URL" --model claude-sonnet-4-5 --auto-approve "add a mul operation"
	T=$(forge history --json -n 1 | jq -r .trace_id)
	# (before: the reflection's $0.006 was in the total only)
	[ "$(sqlite3 "$FORGE_DB" "select count(*) from llm_calls where trace_id = '$T' and phase = 'implement-fast'")" -ge 1 ]
	run -0 forge show --json "$T"
	jq -e '(([.phase_cost[].usd] | add) * 1e6 | round) == (.cost.usd * 1e6 | round)' <<<"$output"
	forge events replay "$T" | jq -s -e --argjson db "$(sqlite3 "$FORGE_DB" "select round(sum(cost_usd), 6) from llm_calls where trace_id = '$T'")" \
		'([.[] | select(.type == "llm.called") | .cost.usd] | add * 1e6 | round) == ($db * 1e6 | round) and
		 any(.[]; .type == "llm.called" and .payload.fast == true and .phase == "implement")'
}
