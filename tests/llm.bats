#!/usr/bin/env bats
# llm.bats - lib/llm through `forge-llm` against the mock provider
# (tests/helpers/mock_llm.py): answers, streaming, every retry path asserted
# on the mock's request log, final errors, exit codes, cassettes, and that no
# API key leaks anywhere (canary key).

bats_require_minimum_version 1.5.0

CANARY=sk-ant-CANARY-7f3a9c1e5b2d4680aaaa

setup_file() {
	export BATS_TEST_TIMEOUT=60
	MOCK="$BATS_TEST_DIRNAME/helpers/mock_llm.py"
	MOCK_LOG="$BATS_FILE_TMPDIR/mock.jsonl"
	export MOCK MOCK_LOG
	python3 "$MOCK" --port-file "$BATS_FILE_TMPDIR/port" --log "$MOCK_LOG" \
		2>"$BATS_FILE_TMPDIR/mock.err" 3>&- &
	echo $! >"$BATS_FILE_TMPDIR/pid"
	for _ in $(seq 100); do [ -s "$BATS_FILE_TMPDIR/port" ] && break; sleep 0.05; done
	MOCK_URL="http://127.0.0.1:$(cat "$BATS_FILE_TMPDIR/port")"
	export MOCK_URL
}

teardown_file() {
	kill "$(cat "$BATS_FILE_TMPDIR/pid")" 2>/dev/null || true
}

setup() {
	load test_helper/common
	forge_setup
	curl -sS -f -X POST "$MOCK_URL/_mock/reset" >/dev/null
	export ANTHROPIC_API_KEY=$CANARY
}

# mock STEPS-JSON: load the mock's script.
mock() {
	printf '%s' "$1" | curl -sS -f -X POST -H 'content-type: application/json' \
		--data-binary @- "$MOCK_URL/_mock/script?replace=1" >/dev/null
}
# requests: the mock's request log as a JSON array.
requests() {
	curl -sS -f "$MOCK_URL/_mock/requests"
}
anth() { forge-llm --provider anthropic --base-url "$MOCK_URL" --model claude-haiku-4-5 "$@"; }
oai() { OPENAI_API_KEY=$CANARY forge-llm --provider openai --base-url "$MOCK_URL/v1" --model gpt-4o-mini "$@"; }

@test "anthropic: a prompt from arguments and stdin gets its answer on stdout" {
	mock '[{"provider":"anthropic","text":"Hello there!"}]'
	run --separate-stderr bash -c "echo 'from stdin' | forge-llm --provider anthropic --base-url '$MOCK_URL' --system 'be brief' say hi"
	assert_success
	assert_output "Hello there!"
	run bash -c "curl -sS '$MOCK_URL/_mock/requests' | jq -c '.[0] | [.headers[\"anthropic-version\"], .auth, .body.system, .body.messages[0].content]'"
	assert_output '["2023-06-01","present","be brief","say hi\n\nfrom stdin\n"]'
}

@test "anthropic: --json gives the normalised response with usage and cost" {
	mock '[{"text":"ok","usage":{"input_tokens":1000,"output_tokens":100}}]'
	run --separate-stderr anth --json hi
	assert_success
	run jq -c '[.text, .stop_reason, .usage.input_tokens, .usage.output_tokens, .cost_usd, (.request_id|type)]' <<<"$output"
	assert_output '["ok","end_turn",1000,100,0.0015,"string"]'
}

@test "anthropic streaming: a tool call assembled from input_json_delta" {
	mock '[{"tool_calls":[{"name":"read_file","input":{"path":"README","n":2}}],"chunk":3,"dribble":5}]'
	run --separate-stderr anth --json --stream hi
	assert_success
	run jq -c '[.stop_reason, .tool_calls[0].name, .tool_calls[0].input]' <<<"$output"
	assert_output '["tool_use","read_file",{"path":"README","n":2}]'
}

@test "openai streaming: text shows as it arrives; index-keyed tool deltas" {
	mock '[{"text":"one two three","dribble":3},{"tool_calls":[{"name":"a","input":{"x":1}},{"name":"b","input":{"y":"é"}}]}]'
	run --separate-stderr oai --stream hi
	assert_success
	assert_output "one two three"
	run --separate-stderr oai --json --stream hi
	assert_success
	run jq -c '[.stop_reason, [.tool_calls[].name], .tool_calls[1].input.y]' <<<"$output"
	assert_output '["tool_use",["a","b"],"é"]'
	run bash -c "curl -sS '$MOCK_URL/_mock/requests' | jq -c '.[0].body | [.stream, .stream_options.include_usage, .max_completion_tokens]'"
	assert_output '[true,true,4096]'
}

@test "retries: 429 with retry-after-ms, then 529, then an answer (3 requests)" {
	mock '[{"fault":"rate_limit","retry_after_ms":50},{"fault":"overloaded"},{"text":"finally"}]'
	run --separate-stderr anth hi
	assert_success
	assert_output "finally"
	run bash -c "curl -sS '$MOCK_URL/_mock/requests' | jq -c '[.[].status]'"
	assert_output '[429,529,200]'
}

@test "retries run out: 500 three times gives exit 5 and a plain message" {
	mock '[{"fault":"server_error","times":"always"}]'
	run --separate-stderr anth hi
	assert_failure 5
	[[ $stderr == *"HTTP 500"*"gave up after 2 retries"* ]]
	run bash -c "curl -sS '$MOCK_URL/_mock/requests' | jq length"
	assert_output 3
}

@test "x-should-retry: false is obeyed" {
	mock '[{"fault":"server_error","should_retry":false},{"text":"never"}]'
	run --separate-stderr anth hi
	assert_failure 5
	run bash -c "curl -sS '$MOCK_URL/_mock/requests' | jq length"
	assert_output 1
}

@test "a rejected key names the variable, never the key (canary)" {
	export FORGE_DB="$BATS_TEST_TMPDIR/forge.db"
	mock '[{"fault":"auth"}]'
	run --separate-stderr anth hi
	assert_failure 5
	[[ $stderr == *"ANTHROPIC_API_KEY"* ]]
	[[ $stderr != *CANARY* && $output != *CANARY* ]]
	run sqlite3 "$FORGE_DB" "SELECT count(*), max(error IS NOT NULL) FROM llm_calls"
	assert_output "1|1"
	run bash -c "sqlite3 '$FORGE_DB' .dump | grep -c CANARY"
	assert_output 0
	run bash -c "grep -c CANARY '$MOCK_LOG'"
	assert_output 0
}

@test "no key: exit 5 saying ANTHROPIC_API_KEY is not set" {
	unset ANTHROPIC_API_KEY
	run --separate-stderr forge-llm --provider anthropic --base-url "$MOCK_URL" hi
	assert_failure 5
	[[ $stderr == *"ANTHROPIC_API_KEY is not set"* ]]
}

@test "context overflow and unknown model are reported plainly, without retrying" {
	mock '[{"fault":"context_length"},{"provider":"openai","fault":"error","status":404,"type":"invalid_request_error","code":"model_not_found","message":"The model does not exist"}]'
	run --separate-stderr anth hi
	assert_failure 5
	[[ $stderr == *"does not fit the context window"* ]]
	run --separate-stderr oai hi
	assert_failure 5
	[[ $stderr == *"unknown model 'gpt-4o-mini'"* ]]
	run bash -c "curl -sS '$MOCK_URL/_mock/requests' | jq length"
	assert_output 2
}

@test "openai: a server that only knows max_tokens gets it on a second try" {
	mock '[{"fault":"error","status":400,"type":"invalid_request_error","code":"unsupported_parameter","param":"max_completion_tokens","message":"Unrecognized request argument supplied: max_completion_tokens"},{"text":"ok"}]'
	run --separate-stderr oai hi
	assert_success
	assert_output ok
	run bash -c "curl -sS '$MOCK_URL/_mock/requests' | jq -c '[.[1].body.max_tokens, .[1].body.max_completion_tokens]'"
	assert_output '[4096,null]'
}

@test "a mid-stream error and a cut stream fail with exit 5" {
	mock '[{"fault":"stream_error","text":"partial"},{"fault":"cut","text":"a b c d e f g","cut_after":3}]'
	run --separate-stderr anth --stream hi
	assert_failure 5
	[[ $stderr == *overloaded* ]]
	run --separate-stderr anth --stream hi
	assert_failure 5
}

@test "--record writes a cassette that replays strictly; a changed prompt names the field" {
	mock '[{"text":"recorded answer"}]'
	cas="$BATS_TEST_TMPDIR/c.jsonl"
	run --separate-stderr anth --record "$cas" hello
	assert_success
	run grep -c CANARY "$cas"
	assert_output 0
	run --separate-stderr env FORGE_CASSETTE_MODE=strict forge-llm --provider replay --cassette "$cas" hello
	assert_success
	assert_output "recorded answer"
	run --separate-stderr env FORGE_CASSETTE_MODE=strict forge-llm --provider replay --cassette "$cas" goodbye
	assert_failure 5
	[[ $stderr == *"request.messages[0].content"* ]]
}

@test "usage: no prompt is exit 2; an unknown model price warns once and cost is null" {
	run --separate-stderr forge-llm --provider anthropic --base-url "$MOCK_URL" </dev/null
	assert_failure 2
	mock '[{"text":"x"}]'
	run --separate-stderr forge-llm --provider anthropic --base-url "$MOCK_URL" --model mystery-1 --json hi
	assert_success
	run jq -c .cost_usd <<<"$output"
	assert_output null
}

@test "a slow answer times out, is retried, then fails with exit 5" {
	mock '[{"text":"late","delay_ms":1500,"times":2}]'
	run --separate-stderr env FORGE_LLM_TIMEOUT_MS=300 FORGE_LLM_MAX_RETRIES=1 \
		forge-llm --provider anthropic --base-url "$MOCK_URL" hi
	assert_failure 5
	[[ $stderr == *"timed out"*"gave up after 1 retry"* ]]
	run bash -c "curl -sS '$MOCK_URL/_mock/requests' | jq length"
	assert_output 2
}
