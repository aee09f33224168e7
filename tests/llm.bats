#!/usr/bin/env bats
# llm.bats - lib/llm through `forge-llm` against the mock provider
# (tests/helpers/mock_llm.py): answers, streaming, every retry path asserted
# on the mock's request log, final errors, exit codes, cassettes, and that no
# API key leaks anywhere (canary key).

bats_require_minimum_version 1.5.0

CANARY=sk-ant-CANARY-7f3a9c1e5b2d4680aaaa

load test_helper/mock
mock_per_file 60

setup() {
	load test_helper/common
	forge_setup
	mock_reset
	export ANTHROPIC_API_KEY=$CANARY
}

# requests: the mock's request log as a JSON array.
requests() {
	curl -sS -f "$MOCK_URL/_mock/requests"
}
anth() { forge-llm --provider anthropic --base-url "$MOCK_URL" --model claude-haiku-4-5 "$@"; }
oai() { OPENAI_API_KEY=$CANARY forge-llm --provider openai --base-url "$MOCK_URL/v1" --model gpt-4o-mini "$@"; }

@test "anthropic: a prompt from arguments and stdin gets its answer on stdout" {
	mock_steps '[{"provider":"anthropic","text":"Hello there!"}]'
	run --separate-stderr bash -c "echo 'from stdin' | forge-llm --provider anthropic --base-url '$MOCK_URL' --system 'be brief' say hi"
	assert_success
	assert_output "Hello there!"
	run bash -c "curl -sS '$MOCK_URL/_mock/requests' | jq -c '.[0] | [.headers[\"anthropic-version\"], .auth, .body.system, .body.messages[0].content]'"
	assert_output '["2023-06-01","present","be brief","say hi\n\nfrom stdin\n"]'
}

@test "anthropic: --json gives the normalised response with usage and cost" {
	mock_steps '[{"text":"ok","usage":{"input_tokens":1000,"output_tokens":100}}]'
	run --separate-stderr anth --json hi
	assert_success
	run jq -c '[.text, .stop_reason, .usage.input_tokens, .usage.output_tokens, .cost_usd, (.request_id|type)]' <<<"$output"
	assert_output '["ok","end_turn",1000,100,0.0015,"string"]'
}

@test "anthropic streaming: a tool call assembled from input_json_delta" {
	mock_steps '[{"tool_calls":[{"name":"read_file","input":{"path":"README","n":2}}],"chunk":3,"dribble":5}]'
	run --separate-stderr anth --json --stream hi
	assert_success
	run jq -c '[.stop_reason, .tool_calls[0].name, .tool_calls[0].input]' <<<"$output"
	assert_output '["tool_use","read_file",{"path":"README","n":2}]'
	# --json --stream streams (before, it sent stream:false: chunk and dribble did nothing)
	run -0 bash -c "curl -sS '$MOCK_URL/_mock/requests' | jq -c '[.[] | [.stream, .body.stream, .headers.accept]]'"
	assert_output '[[true,true,"text/event-stream"]]'
}

@test "--json --stream: a recorded SSE stream gives the normalised response, printed once at its end" {
	# (before: "the Anthropic response is not a JSON object", exit 5)
	mock_steps "$(jq -n --rawfile b "$BATS_TEST_DIRNAME/fixtures/llm/anth_tool_use.sse" \
		'[{"fault":"raw","status":200,"headers":{"content-type":"text/event-stream"},"body":$b}]')"
	run -0 --separate-stderr anth --json --stream hi
	[ "${#lines[@]}" -eq 1 ]
	run -0 jq -c '[.stop_reason, (.tool_calls | length), (.tool_calls[0].name | type)]' <<<"$output"
	assert_output '["tool_use",1,"string"]'
	mock_steps '[{"text":"one two three","dribble":3}]'
	run -0 --separate-stderr oai --json --stream hi
	run -0 jq -c '[.text, .stop_reason]' <<<"$output"
	assert_output '["one two three","end_turn"]'
	run -0 bash -c "curl -sS '$MOCK_URL/_mock/requests' | jq -c '.[-1] | [.stream, .body.stream_options.include_usage]'"
	assert_output '[true,true]'
}

@test "openai streaming: text shows as it arrives; index-keyed tool deltas" {
	mock_steps '[{"text":"one two three","dribble":3},{"tool_calls":[{"name":"a","input":{"x":1}},{"name":"b","input":{"y":"é"}}]}]'
	run --separate-stderr oai --stream hi
	assert_success
	assert_output "one two three"
	run --separate-stderr oai --json --stream hi
	assert_success
	run jq -c '[.stop_reason, [.tool_calls[].name], .tool_calls[1].input.y]' <<<"$output"
	assert_output '["tool_use",["a","b"],"é"]'
	run bash -c "curl -sS '$MOCK_URL/_mock/requests' | jq -c '.[0].body | [.stream, .stream_options.include_usage, .max_tokens]'"
	assert_output '[true,true,8192]'
	# the --json --stream call streamed its tool deltas too
	run -0 bash -c "curl -sS '$MOCK_URL/_mock/requests' | jq -c '[.[].stream]'"
	assert_output '[true,true]'
}

@test "retries: 429 with retry-after-ms, then 529, then an answer (3 requests)" {
	mock_steps '[{"fault":"rate_limit","retry_after_ms":50},{"fault":"overloaded"},{"text":"finally"}]'
	run --separate-stderr anth hi
	assert_success
	assert_output "finally"
	run bash -c "curl -sS '$MOCK_URL/_mock/requests' | jq -c '[.[].status]'"
	assert_output '[429,529,200]'
}

@test "retries run out: 500 three times gives exit 5 and a plain message" {
	mock_steps '[{"fault":"server_error","times":"always"}]'
	run --separate-stderr anth hi
	assert_failure 5
	[[ $stderr == *"HTTP 500"*"gave up after 2 retries"* ]]
	run bash -c "curl -sS '$MOCK_URL/_mock/requests' | jq length"
	assert_output 3
}

@test "a 429 without retry-after that outlasts the retries says when the rate limit resets, from the provider's headers (both providers)" {
	echo '{"llm":{"max_retries":0}}' >"$BATS_TEST_TMPDIR/c0.json"
	# Anthropic: anthropic-ratelimit-requests-reset (RFC 3339, a second ahead), its remaining 0
	mock_steps '[{"fault":"rate_limit"}]'
	run -5 --separate-stderr anth --config "$BATS_TEST_TMPDIR/c0.json" hi
	[[ $stderr =~ "HTTP 429".*"; the rate limit resets in "[01]" s (at "[0-9]{2}:[0-9]{2}:[0-9]{2}")" ]]
	# OpenAI: x-ratelimit-reset-requests "1s" (its remaining 0), not the tokens' "6m0s"
	mock_steps '[{"fault":"rate_limit"}]'
	run -5 --separate-stderr oai --config "$BATS_TEST_TMPDIR/c0.json" hi
	[[ $stderr =~ "HTTP 429".*"; the rate limit resets in 1 s (at "[0-9]{2}:[0-9]{2}:[0-9]{2}")" ]]
	# with retry-after, that is what counts: no reset said
	mock_steps '[{"fault":"rate_limit","retry_after":"1"}]'
	run -5 --separate-stderr oai --config "$BATS_TEST_TMPDIR/c0.json" hi
	[[ $stderr == *"HTTP 429"* && $stderr != *"resets in"* ]]
}

@test "a 429 whose rate limit resets now or in the past says it resets now, not 'in 0 s' (both providers)" {
	echo '{"llm":{"max_retries":0}}' >"$BATS_TEST_TMPDIR/c0.json"
	# Anthropic: a reset time already past (RFC 3339)
	mock_steps '[{"fault":"rate_limit","headers":{"anthropic-ratelimit-requests-reset":"2020-01-01T00:00:00Z"}}]'
	run -5 --separate-stderr anth --config "$BATS_TEST_TMPDIR/c0.json" hi
	[[ $stderr == *"HTTP 429"*"; the rate limit resets now"* && $stderr != *"resets in"* ]]
	# OpenAI: a reset in "0s"
	mock_steps '[{"fault":"rate_limit","headers":{"x-ratelimit-reset-requests":"0s"}}]'
	run -5 --separate-stderr oai --config "$BATS_TEST_TMPDIR/c0.json" hi
	[[ $stderr == *"HTTP 429"*"; the rate limit resets now"* && $stderr != *"resets in"* ]]
}

@test "retry-after longer than llm.retry_max_delay_s: no early retry, exit 5 saying so" {
	mock_steps '[{"fault":"rate_limit","retry_after":"120"},{"text":"too early"}]'
	run --separate-stderr anth hi
	assert_failure 5
	[[ $stderr == *"HTTP 429"*"the provider asked to retry after 120 s, more than llm.retry_max_delay_s=60; try later or raise it"* ]]
	run bash -c "curl -sS '$MOCK_URL/_mock/requests' | jq length"
	assert_output 1
	# raised: the wait is honoured (retry-after-ms, so that it is short) and the retry answers
	mock_reset
	mock_steps '[{"fault":"rate_limit","retry_after_ms":1500},{"text":"after the wait"}]'
	echo '{"llm":{"retry_max_delay_s":1}}' >"$BATS_TEST_TMPDIR/c1.json"
	run --separate-stderr anth --config "$BATS_TEST_TMPDIR/c1.json" hi
	assert_failure 5
	[[ $stderr == *"asked to retry after 2 s, more than llm.retry_max_delay_s=1;"* ]]
	mock_reset
	mock_steps '[{"fault":"rate_limit","retry_after_ms":50},{"text":"after the wait"}]'
	run --separate-stderr anth --config "$BATS_TEST_TMPDIR/c1.json" hi
	assert_success
	assert_output "after the wait"
}

@test "x-should-retry: false is obeyed" {
	mock_steps '[{"fault":"server_error","should_retry":false},{"text":"never"}]'
	run --separate-stderr anth hi
	assert_failure 5
	run bash -c "curl -sS '$MOCK_URL/_mock/requests' | jq length"
	assert_output 1
}

@test "a rejected key names the variable, never the key (canary)" {
	export FORGE_DB="$BATS_TEST_TMPDIR/forge.db"
	mock_steps '[{"fault":"auth"}]'
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

@test "no key: exit 2 (a setting to make, as --help says, not a provider that failed) saying ANTHROPIC_API_KEY is not set" {
	unset ANTHROPIC_API_KEY
	run --separate-stderr forge-llm --provider anthropic --base-url "$MOCK_URL" hi
	assert_failure 2
	[[ $stderr == *"ANTHROPIC_API_KEY is not set"* ]]
	# a phase run alone says the same (before: exit 5, "failed")
	run -2 --separate-stderr forge-plan --provider anthropic --base-url "$MOCK_URL" --task "add a mul operation"
	[[ $stderr == *"plan model: ANTHROPIC_API_KEY is not set"* ]]
}

@test "context overflow and unknown model are reported plainly, without retrying" {
	mock_steps '[{"fault":"context_length"},{"provider":"openai","fault":"error","status":404,"type":"invalid_request_error","code":"model_not_found","message":"The model does not exist"}]'
	run --separate-stderr anth hi
	assert_failure 5
	[[ $stderr == *"does not fit the context window"* ]]
	run --separate-stderr oai hi
	assert_failure 5
	[[ $stderr == *"unknown model 'gpt-4o-mini'"* ]]
	run bash -c "curl -sS '$MOCK_URL/_mock/requests' | jq length"
	assert_output 2
}

@test "a 403 says the key may not use the model, not that it was rejected; a 413 says the request is too large, not that the window is full (hunt64 #3)" {
	mock_steps '[{"fault":"error","status":403,"type":"permission_error","message":"Your API key does not have permission to use the specified resource."},
		{"fault":"error","status":413,"type":"request_too_large","message":"Request exceeds the maximum allowed number of bytes."},
		{"fault":"raw","status":413,"headers":{"Content-Type":"text/html"},"body":"<html><head><title>413 Request Entity Too Large</title></head></html>"},
		{"provider":"openai","fault":"error","status":403,"type":"invalid_request_error","code":"unsupported_country_region_territory","message":"Country, region, or territory not supported"}]'
	# (before: "the API key was rejected (ANTHROPIC_API_KEY) ...; check the key")
	run -5 --separate-stderr anth hi
	[[ $stderr == *"anthropic: the key (ANTHROPIC_API_KEY) is not allowed to use model 'claude-haiku-4-5' or what the request asks for: Your API key does not have permission to use the specified resource.; check what the key's account, workspace or project may use, or set llm.model (--model, FORGE_MODEL) to another model"* ]]
	[[ $stderr != *"rejected"* && $stderr != *"check the key"* ]]
	# (before: "the prompt does not fit the context window of 'claude-haiku-4-5'")
	run -5 --separate-stderr anth hi
	[[ $stderr =~ "anthropic: the request is larger than the provider accepts ("[0-9]+" bytes): Request exceeds the maximum allowed number of bytes.; shorten the prompt" ]]
	[[ $stderr != *"context window"* ]]
	# Cloudflare's HTML page, no error type
	run -5 --separate-stderr anth hi
	[[ $stderr =~ "anthropic: the request is larger than the provider accepts ("[0-9]+" bytes); shorten the prompt" ]]
	run -5 --separate-stderr oai hi
	[[ $stderr == *"openai: the key (OPENAI_API_KEY) is not allowed to use model 'gpt-4o-mini' or what the request asks for: Country, region, or territory not supported; check what"* ]]
	# none of them is asked again
	run -0 bash -c "curl -sS '$MOCK_URL/_mock/requests' | jq -c '[.[].status]'"
	assert_output '[403,413,413,403]'
	# a 401 still says the key was rejected
	mock_reset
	mock_steps '[{"fault":"auth"}]'
	run -5 --separate-stderr anth hi
	[[ $stderr == *"the API key was rejected (ANTHROPIC_API_KEY)"*"check the key"* ]]
}

@test "an answer cut at max_tokens is printed, exit 0, and said on stderr (hunt64 #5)" {
	mock_steps '[{"text":"The first half of a long ans","stop_reason":"max_tokens"},{"text":"The first half","stop_reason":"max_tokens"},{"text":"whole"}]'
	# (before: exit 0 and nothing on stderr: a pipeline's reader could not tell)
	run -0 --separate-stderr anth --max-tokens 7 hi
	assert_output "The first half of a long ans"
	assert_equal "$stderr" "forge-llm: the answer was cut at llm.max_tokens (7) before it was whole; raise it (--max-tokens)"
	run -0 --separate-stderr anth --json hi
	jq -e '.stop_reason == "max_tokens"' <<<"$output"
	[[ $stderr == *"cut at llm.max_tokens (8192)"* ]]
	run -0 --separate-stderr anth hi
	assert_output "whole"
	assert_equal "$stderr" ""
}

@test "forge llm's one-off call asks no prompt cache (cache_control is for an agent's turns)" {
	mock_steps '[{"text":"ok"}]'
	run -0 --separate-stderr anth --system 'be brief' hi
	run -0 bash -c "curl -sS '$MOCK_URL/_mock/requests' | jq -c '.[0].body | [(tostring | contains(\"cache_control\")), .system]'"
	assert_output '[false,"be brief"]'
}

@test "an account out of quota or credit is said so, not retried as a rate limit, exit 5 (Anthropic 429 and 400 spend cap, 400 credit balance; OpenAI insufficient_quota)" {
	mock_steps '[{"fault":"quota","times":"always"}]'
	# (before: Anthropic's spend-cap 429 was retried as a rate limit and
	# given up on, "gave up after 2 retries"; a phase said "the model could
	# not be reached")
	run -5 --separate-stderr anth hi
	[[ $stderr == *"HTTP 429 rate_limit_error: You have reached your specified API usage limits."* ]]
	[[ $stderr == *"the account's quota or credit is exhausted: add credit or raise its spending limit"* ]]
	[[ $stderr != *"gave up after"* ]]
	run -5 --separate-stderr anth --stream hi
	[[ $stderr == *"the account's quota or credit is exhausted"* ]]
	run -0 bash -c "curl -sS '$MOCK_URL/_mock/requests' | jq -c '[.[].status]'"
	assert_output '[429,429]'
	mock_reset
	mock_steps '[{"fault":"quota","status":400,"type":"invalid_request_error"},{"fault":"credit"},{"fault":"credit"},{"text":"never"}]'
	run -5 --separate-stderr anth hi
	[[ $stderr == *"HTTP 400 invalid_request_error: You have reached your specified API usage limits."*"the account's quota or credit is exhausted"* ]]
	run -5 --separate-stderr anth hi
	[[ $stderr == *"HTTP 400 invalid_request_error: Your credit balance is too low"*"the account's quota or credit is exhausted"* ]]
	run -5 --separate-stderr oai hi
	[[ $stderr == *"HTTP 429 insufficient_quota: You exceeded your current quota"*"the account's quota or credit is exhausted"* ]]
	run -0 bash -c "curl -sS '$MOCK_URL/_mock/requests' | jq -c '[.[].status]'"
	assert_output '[400,400,429]'
	# a phase says the same, not "could not be reached" (exit 5, a provider that failed)
	mock_reset
	mock_steps '[{"fault":"quota","times":"always"}]'
	run -5 --separate-stderr forge-plan --provider anthropic --base-url "$MOCK_URL" --task "add a mul operation"
	[[ $stderr == *"failed: the provider's account cannot pay for the request: anthropic: HTTP 429"*"the account's quota or credit is exhausted"* ]]
	[[ $stderr != *"could not be reached"* ]]
	run -0 bash -c "curl -sS '$MOCK_URL/_mock/requests' | jq length"
	assert_output 1
}

@test "openai: the output limit reaches a compatible server as max_tokens (Ollama ignores max_completion_tokens; hunt43 #1)" {
	mock_steps '[{"text":"short"},{"fault":"error","status":400,"type":"invalid_request_error","code":"unsupported_parameter","param":"max_tokens","message":"Unsupported parameter: '"'"'max_tokens'"'"' is not supported with this model. Use '"'"'max_completion_tokens'"'"' instead."},{"text":"ok","times":2}]'
	run -0 --separate-stderr oai --max-tokens 5 hi
	assert_output short
	run -0 --separate-stderr requests
	[ "$(jq -c '.[0].body | [.max_tokens, has("max_completion_tokens")]' <<<"$output")" = '[5,false]' ]
	# a server that refuses max_tokens (a reasoning model behind a proxy)
	# gets max_completion_tokens on a second try
	run -0 --separate-stderr oai --max-tokens 7 hi
	assert_output ok
	run -0 --separate-stderr requests
	[ "$(jq -c '[.[1:][].body | [.max_tokens, .max_completion_tokens]]' <<<"$output")" = '[[7,null],[null,7]]' ]
}

@test "openai: a 400 about the output limit's value is reported, not retried with the other field (hunt43 #3)" {
	mock_steps '[{"fault":"error","status":400,"type":"BadRequest","message":"The parameter `max_tokens` specified in the request are not valid: integer above maximum value, expected a value <= 12288, but got 32000. max_completion_tokens may not exceed it either"},{"text":"ok"}]'
	run -5 --separate-stderr oai --max-tokens 32000 hi
	[[ $stderr == *"HTTP 400"*"expected a value <= 12288"*"; lower llm.max_tokens (--max-tokens)" ]]
	run -0 --separate-stderr requests
	[ "$(jq length <<<"$output")" = 1 ]
}

@test "a 404 that does not name the model is a wrong base URL, not an unknown model (hunt43 #2)" {
	# the base URL without /v1: the server knows no such path
	run -5 --separate-stderr env OPENAI_API_KEY=$CANARY forge-llm --provider openai --base-url "$MOCK_URL" --model qwen2.5-coder hi
	[[ $stderr == *"openai: HTTP 404 invalid_request_error from $MOCK_URL/chat/completions: Not Found"*"; check the base URL (--base-url, FORGE_BASE_URL"*"ends in /v1)" ]]
	[[ $stderr != *"unknown model"* ]]
	# Ollama's (gin's) plain-text 404, as a proxy in front of it may pass on
	mock_steps '[{"fault":"raw","status":404,"headers":{"Content-Type":"text/plain"},"body":"404 page not found"},{"provider":"anthropic","fault":"error","status":404,"type":"not_found_error","message":"model: claude-nope"}]'
	run -5 --separate-stderr oai hi
	[[ $stderr == *"openai: HTTP 404 from $MOCK_URL/v1/chat/completions; check the base URL"* ]]
	[[ $stderr != *"unknown model"* ]]
	# Anthropic's 404 for a path it does not serve ("Not Found")
	run -5 --separate-stderr forge-llm --provider anthropic --base-url "$MOCK_URL/proxy" --model claude-haiku-4-5 hi
	[[ $stderr == *"anthropic: HTTP 404 not_found_error from $MOCK_URL/proxy/v1/messages: Not Found"*"check the base URL"* ]]
	[[ $stderr != *"unknown model"* ]]
	# a 404 that names the model still is one
	run -5 --separate-stderr anth --model claude-nope hi
	[[ $stderr == *"unknown model 'claude-nope', chosen by llm.model (flags: command line)"*"; set llm.model (--model, FORGE_MODEL) to a model the provider serves" ]]
}

@test "a mid-stream error and a cut stream fail with exit 5 once part of the answer was printed (it is not asked again)" {
	mock_steps '[{"fault":"stream_error","text":"partial"},{"fault":"cut","text":"a b c d e f g","cut_after":5},{"text":"never"}]'
	run --separate-stderr anth --stream hi
	assert_failure 5
	# (before: "HTTP 200 overloaded_error", and "cannot reach" a server that answered)
	[[ $stderr == *"anthropic: the stream ended with an error: overloaded_error: Overloaded"* ]]
	run --separate-stderr anth --stream hi
	assert_failure 5
	[[ $output == "a "* ]]
	[[ $stderr == *"anthropic: the answer from $MOCK_URL broke off: "* ]]
	run -0 bash -c "curl -sS '$MOCK_URL/_mock/script' | jq .remaining"
	assert_output 1
}

@test "an answer not streamed whose body is cut is asked again, and the cut attempt is billed by estimate (hunt56 #4)" {
	# (before: http.c sent it again itself, and only the retry was counted)
	export FORGE_DB="$BATS_TEST_TMPDIR/forge.db"
	mock_steps '[{"fault":"cut","text":"half of it","usage":{"input_tokens":100000,"output_tokens":1000}},
		     {"text":"whole","usage":{"input_tokens":100000,"output_tokens":1000}}]'
	run -0 --separate-stderr anth hi
	assert_output "whole"
	run -0 bash -c "curl -sS '$MOCK_URL/_mock/requests' | jq -c 'map(.stream)'"
	assert_output "[false,false]"
	# the retry's 100000 in and the cut attempt's request, estimated from its size
	run -0 sqlite3 "$FORGE_DB" "SELECT retries, input_tokens > 100000, output_tokens, error IS NULL FROM llm_calls"
	assert_output "1|1|1000|1"
}

@test "--record writes a cassette that replays strictly; a changed prompt names the field" {
	mock_steps '[{"text":"recorded answer"}]'
	cas="$BATS_TEST_TMPDIR/c.jsonl"
	run --separate-stderr anth --record "$cas" hello
	assert_success
	assert_output "recorded answer"
	run grep -c CANARY "$cas"
	assert_output 0
	# The answer is printed exactly once, whatever the output mode.
	for mode in "" --stream; do
		run --separate-stderr env FORGE_CASSETTE_MODE=strict forge-llm --provider replay --cassette "$cas" $mode hello
		assert_success
		assert_output "recorded answer"
		[ "${#lines[@]}" -eq 1 ]
	done
	run --separate-stderr forge-llm --provider replay --cassette "$cas" --json hello
	assert_success
	[ "${#lines[@]}" -eq 1 ]
	run jq -r .text <<<"$output"
	assert_output "recorded answer"
	# Replaying never appends to the cassette; recording into it is refused.
	run wc -l <"$cas"
	assert_output 1
	run --separate-stderr forge-llm --provider replay --cassette "$cas" --record "$cas" hello
	assert_failure 2
	[[ $stderr == *"cannot record into the cassette being replayed"* ]]
	run wc -l <"$cas"
	assert_output 1
	run --separate-stderr env FORGE_CASSETTE_MODE=strict forge-llm --provider replay --cassette "$cas" goodbye
	assert_failure 5
	[[ $stderr == *"request.messages[0].content"* ]]
}

@test "--cassette on the command line replays although FORGE_PROVIDER names a real provider; in one layer the provider named wins" {
	printf '%s\n' '{"response":{"text":"replayed"}}' >"$BATS_TEST_TMPDIR/c.jsonl"
	mock_steps '[{"text":"from the provider","times":"always"}]'
	# (before: the provider in the environment was asked, the cassette
	# unused without a word - a real model's cost where a replay was meant)
	run --separate-stderr env FORGE_PROVIDER=anthropic FORGE_BASE_URL="$MOCK_URL" \
		forge-llm --cassette "$BATS_TEST_TMPDIR/c.jsonl" hello
	assert_success
	assert_output "replayed"
	[ "$(requests | jq length)" = 0 ]
	run -0 env FORGE_PROVIDER=anthropic forge-config --cassette "$BATS_TEST_TMPDIR/c.jsonl" --explain --json
	[ "$(jq -c '.[] | select(.path == "llm.provider") | [.value, .layer, .source]' <<<"$output")" = \
		'["replay","resolved","a cassette is set (llm.cassette (flags: command line)) above llm.provider"]' ]
	# both in the environment: the provider named is asked
	run --separate-stderr env FORGE_PROVIDER=anthropic FORGE_BASE_URL="$MOCK_URL" \
		FORGE_CASSETTE="$BATS_TEST_TMPDIR/c.jsonl" forge-llm hello
	assert_success
	assert_output "from the provider"
}

@test "usage: no prompt is exit 2; an unknown model price warns once and cost is null" {
	run --separate-stderr forge-llm --provider anthropic --base-url "$MOCK_URL" </dev/null
	assert_failure 2
	mock_steps '[{"text":"x"}]'
	run --separate-stderr forge-llm --provider anthropic --base-url "$MOCK_URL" --model mystery-1 --json hi
	assert_success
	run jq -c .cost_usd <<<"$output"
	assert_output null
}

@test "a slow answer times out, is retried, then fails with exit 5" {
	mock_steps '[{"text":"late","delay_ms":1500,"times":2}]'
	echo '{"llm":{"timeout_s":0.3,"max_retries":1}}' >"$BATS_TEST_TMPDIR/cfg.json"
	run --separate-stderr forge-llm --config "$BATS_TEST_TMPDIR/cfg.json" \
		--provider anthropic --base-url "$MOCK_URL" hi
	assert_failure 5
	[[ $stderr == *"timed out"*"gave up after 1 retry"* ]]
	run bash -c "curl -sS '$MOCK_URL/_mock/requests' | jq length"
	assert_output 2
}

@test "stall: headers then silence is given up after llm.stall_timeout_s and retried" {
	# Headers announce a chunked body that never comes.
	mock_steps '[{"fault":"raw","status":200,"headers":{"Content-Type":"application/json","Transfer-Encoding":"chunked"},"body":"","times":2},{"text":"never"}]'
	echo '{"llm":{"stall_timeout_s":1,"max_retries":1}}' >"$BATS_TEST_TMPDIR/cfg.json"
	run --separate-stderr anth --config "$BATS_TEST_TMPDIR/cfg.json" hi
	assert_failure 5
	[[ $stderr == *"stalled: no data for 1000 ms"*"gave up after 1 retry"* ]]
	run bash -c "curl -sS '$MOCK_URL/_mock/requests' | jq -c '[length, (map(.step) | unique | length)]'"
	assert_output '[2,1]'
}

@test "a slow answer that is not streamed is waited for: the stall watch starts with the response (one request)" {
	# a server sends nothing, not its headers either, until the whole answer
	# is ready (before: "stalled" after llm.stall_timeout_s, retried twice --
	# three billed generations -- then exit 5)
	mock_steps '[{"text":"worth the wait","delay_ms":1500,"times":3}]'
	echo '{"llm":{"stall_timeout_s":0.5,"max_retries":2}}' >"$BATS_TEST_TMPDIR/cfg.json"
	run -0 --separate-stderr anth --config "$BATS_TEST_TMPDIR/cfg.json" hi
	assert_output "worth the wait"
	run bash -c "curl -sS '$MOCK_URL/_mock/requests' | jq length"
	assert_output 1
}

@test "openai: a stream that ends after its finish_reason without [DONE] is complete (older llama.cpp, TGI)" {
	mock_steps '[{"text":"Hello world.","no_done":true}]'
	run -0 --separate-stderr oai --stream hi
	assert_output "Hello world."
	run bash -c "curl -sS '$MOCK_URL/_mock/requests' | jq -c '[.[].stream]'"
	assert_output '[true]'
	# one cut before its finish_reason still fails
	mock_steps '[{"text":"Hello world.","no_done":true,"cut_after":2}]'
	echo '{"llm":{"max_retries":0}}' >"$BATS_TEST_TMPDIR/cfg.json"
	run -5 --separate-stderr oai --config "$BATS_TEST_TMPDIR/cfg.json" --stream hi
}

@test "a stream is complete at [DONE] / message_stop: a server that keeps the connection open after it does not fail it" {
	# (before: the client read on and gave up after llm.stall_timeout_s: exit 5,
	# the whole answer lost)
	echo '{"llm":{"stall_timeout_s":1,"max_retries":0}}' >"$BATS_TEST_TMPDIR/cfg.json"
	mock_steps '[{"text":"Complete answer.","hold_open":true}]'
	run -0 --separate-stderr oai --config "$BATS_TEST_TMPDIR/cfg.json" --stream hi
	assert_output "Complete answer."
	mock_steps '[{"text":"Complete answer.","hold_open":true}]'
	run -0 --separate-stderr anth --config "$BATS_TEST_TMPDIR/cfg.json" --stream hi
	assert_output "Complete answer."
}

@test "stall: a stream that stops after its first event is asked again whole; the lost attempt's usage is billed (hunt52)" {
	# (before: not retried, exit 5 "stalled")
	export FORGE_DB="$BATS_TEST_TMPDIR/forge.db"
	mock_steps "$(cat "$BATS_TEST_DIRNAME/fixtures/llm/mock_stall_stream.json")"
	echo '{"llm":{"stall_timeout_s":1,"max_retries":2}}' >"$BATS_TEST_TMPDIR/cfg.json"
	run -0 --separate-stderr anth --config "$BATS_TEST_TMPDIR/cfg.json" --stream hi
	assert_output "never"
	run bash -c "curl -sS '$MOCK_URL/_mock/requests' | jq length"
	assert_output 2
	# one row: the lost attempt's message_start said 5 in, 1 out
	run -0 sqlite3 "$FORGE_DB" "SELECT count(*), sum(retries), sum(input_tokens) > 5, max(error IS NULL) FROM llm_calls"
	assert_output "1|1|1|1"
}

@test "a transient fault mid-stream is asked again whole within llm.max_retries; one that says the request is wrong is not (hunt52)" {
	# (before: each failed at once, one request)
	export FORGE_DB="$BATS_TEST_TMPDIR/forge.db"
	# Anthropic: overloaded_error and api_error events, a connection cut
	# after message_start; nothing of the answer was shown yet
	mock_steps '[{"fault":"stream_error","error_after":1,"usage":{"input_tokens":100,"output_tokens":7}},
		     {"fault":"stream_error","type":"api_error","message":"Internal server error","error_after":1,"usage":{"input_tokens":100,"output_tokens":7}},
		     {"text":"third time lucky","usage":{"input_tokens":100,"output_tokens":7}},
		     {"fault":"cut","cut_after":1,"text":"x","usage":{"input_tokens":100,"output_tokens":7}},
		     {"text":"after the cut","usage":{"input_tokens":100,"output_tokens":7}}]'
	run -0 --separate-stderr anth --stream hi
	assert_output "third time lucky"
	run -0 --separate-stderr anth --stream hi
	assert_output "after the cut"
	run bash -c "curl -sS '$MOCK_URL/_mock/requests' | jq length"
	assert_output 5
	# both lost attempts' input is in the first call's row (message_start: 100 in, 1 out)
	run -0 sqlite3 "$FORGE_DB" "SELECT retries, input_tokens, output_tokens, error IS NULL FROM llm_calls ORDER BY id"
	assert_output $'2|300|9|1
1|200|8|1'
	# retries run out: the message counts them, the row bills each attempt
	mock_steps '[{"fault":"stream_error","error_after":1,"usage":{"input_tokens":100},"times":3}]'
	run -5 --separate-stderr anth --stream hi
	[[ $stderr == *"the stream ended with an error: overloaded_error: Overloaded (gave up after 2 retries)"* ]]
	run -0 sqlite3 "$FORGE_DB" "SELECT retries, input_tokens, error IS NOT NULL FROM llm_calls ORDER BY id DESC LIMIT 1"
	assert_output "2|300|1"
	# HTTP retries and asking again share llm.max_retries
	mock_steps '[{"fault":"overloaded"},{"fault":"stream_error","error_after":1},{"fault":"stream_error","error_after":1},{"text":"never"}]'
	run -5 --separate-stderr anth --stream hi
	[[ $stderr == *"(gave up after 2 retries)"* ]]
	run -0 bash -c "curl -sS '$MOCK_URL/_mock/script' | jq .remaining"
	assert_output 1
	# invalid_request_error mid-stream: not asked again
	mock_steps '[{"fault":"stream_error","type":"invalid_request_error","message":"messages: bad","error_after":1},{"text":"never"}]'
	run -5 --separate-stderr anth --stream hi
	[[ $stderr == *"the stream ended with an error: invalid_request_error: messages: bad"* && $stderr != *retr* ]]
	# OpenAI: a data: {"error":...} server_error chunk is asked again; one
	# with type invalid_request_error is not
	mock_steps '[{"fault":"stream_error","error_after":1},{"text":"openai again","usage":{"input_tokens":100,"output_tokens":7}},
		     {"fault":"stream_error","error_after":1,"type":"invalid_request_error","code":"invalid_value","message":"bad value"},{"text":"never"}]'
	run -0 --separate-stderr oai --stream hi
	assert_output "openai again"
	# the lost attempt sent no usage (OpenAI's comes last): its tokens are
	# estimated from the sizes and billed with the call (before: nothing)
	run -0 sqlite3 "$FORGE_DB" "SELECT retries, input_tokens > 100, output_tokens >= 7 FROM llm_calls ORDER BY id DESC LIMIT 1"
	assert_output "1|1|1"
	run -5 --separate-stderr oai --stream hi
	[[ $stderr == *"invalid_value: bad value"* && $stderr != *retr* ]]
	run bash -c "curl -sS '$MOCK_URL/_mock/requests' | jq '[.[] | select(.provider == \"openai\")] | length'"
	assert_output 3
}

@test "streams: any text/event-stream content type is accepted; another one is named" {
	mock_steps '[{"text":"cased","headers":{"Content-Type":"Text/Event-Stream;Charset=UTF-8"}},{"fault":"raw","status":200,"headers":{"Content-Type":"application/json"},"body":"{\"type\":\"message\"}"}]'
	run --separate-stderr anth --stream hi
	assert_success
	assert_output cased
	run --separate-stderr anth --stream hi
	assert_failure 5
	[[ $stderr == *"answered with 'application/json', not text/event-stream"* ]]
}

@test "usage figures an answer does not carry, or cannot have, are estimated from the sizes, never taken as \$0 or a negative cost" {
	no_usage='{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant","content":"an answer of some words"},"finish_reason":"stop"}]}'
	negative='{"id":"msg_1","type":"message","role":"assistant","model":"claude-haiku-4-5","content":[{"type":"text","text":"hello"}],"stop_reason":"end_turn","usage":{"input_tokens":-100000000,"output_tokens":1e20}}'
	mock_steps "[{\"fault\":\"raw\",\"status\":200,\"headers\":{\"Content-Type\":\"application/json\"},\"body\":$(jq -Rs . <<<"$no_usage")},
		{\"fault\":\"raw\",\"status\":200,\"headers\":{\"Content-Type\":\"application/json\"},\"body\":$(jq -Rs . <<<"$negative")}]"
	run --separate-stderr oai --json "a prompt of several words to count"
	assert_success
	jq -e '.usage.estimated == true and .usage.input_tokens > 5 and .usage.output_tokens > 2 and .cost_usd > 0' <<<"$output"
	[[ $stderr == *"warning: the answers of model 'gpt-4o-mini' carry no usage figures: their tokens, and so their cost, are estimated"* ]]
	run --separate-stderr anth --json hi
	assert_success
	jq -e '.usage.estimated == true and .usage.input_tokens > 0 and .usage.output_tokens < 100 and .cost_usd > 0' <<<"$output"
	[[ $stderr == *"carry impossible (negative or huge) usage figures"* ]]
}

@test "rate-limit headers are normalised into --json (anthropic and openai)" {
	mock_steps '[{"text":"a"},{"text":"b"}]'
	run --separate-stderr anth --json hi
	assert_success
	run jq -c '.rate_limit | [.requests_limit, .requests_remaining, .tokens_limit, .tokens_remaining, (.reset >= 0 and .reset <= 5), (.requests_reset <= .reset)]' <<<"$output"
	assert_output '[50,49,38000,36000,true,true]'
	run --separate-stderr oai --json hi
	assert_success
	run jq -c '.rate_limit | [.requests_limit, .requests_remaining, .tokens_limit, .tokens_remaining, .requests_reset, .tokens_reset, .reset]' <<<"$output"
	assert_output '[60,59,150000,149984,1,360,360]'
}

@test "config: FORGE_PROVIDER, FORGE_MODEL, FORGE_BASE_URL are a config layer; flags win" {
	mock_steps '[{"text":"one"},{"text":"two"},{"text":"three"}]'
	run --separate-stderr env OPENAI_API_KEY=$CANARY FORGE_PROVIDER=openai FORGE_MODEL=gpt-env \
		FORGE_BASE_URL="$MOCK_URL/v1" forge-llm hi
	assert_success
	assert_output one
	run --separate-stderr env OPENAI_API_KEY=$CANARY FORGE_PROVIDER=openai FORGE_MODEL=gpt-env \
		FORGE_BASE_URL="$MOCK_URL/v1" forge-llm --model gpt-flag hi
	assert_success
	# Defaults left alone: the key present picks the provider and its default model
	# (and the provider's own variable its base URL: FORGE_BASE_URL goes only to a
	# named provider, below).
	run --separate-stderr env -u ANTHROPIC_API_KEY OPENAI_API_KEY=$CANARY OPENAI_BASE_URL="$MOCK_URL/v1" forge-llm hi
	assert_success
	run bash -c "curl -sS '$MOCK_URL/_mock/requests' | jq -c '[.[] | [.path, .body.model]]'"
	assert_output '[["/v1/chat/completions","gpt-env"],["/v1/chat/completions","gpt-flag"],["/v1/chat/completions","gpt-4o-mini"]]'
}

@test "a base URL in the user's file never gets the key of a provider only inferred from the environment; one given for the call does (hunt67 #1)" {
	mock_steps '[{"text":"local"},{"text":"env"},{"text":"flag"}]'
	local user_cfg="$XDG_CONFIG_HOME/forge/config.json"
	mkdir -p "${user_cfg%/*}"
	# README: the server's address in the user file; ANTHROPIC_API_KEY in the profile
	echo "{\"llm\":{\"base_url\":\"$MOCK_URL/v1\"}}" >"$user_cfg"
	# anthropic (inferred from its key) goes to its own endpoint -- here its own variable
	run -5 --separate-stderr env FORGE_LLM_MAX_RETRIES=0 ANTHROPIC_BASE_URL=http://127.0.0.1:9 forge-llm hi
	[ "$(grep -c warning <<<"$stderr")" -eq 1 ]
	[[ $stderr == *"forge-llm: warning: llm.base_url (user: $user_cfg) is not used: a base URL gets a key only from a provider named with it (llm.provider), and none is; anthropic is used at its own endpoint because ANTHROPIC_API_KEY is set; to use the URL, name its provider: forge config set --global llm.provider openai"* ]]
	[[ $stderr == *"cannot reach http://127.0.0.1:9"* ]]
	# forge config and forge doctor say which base URL applies
	run -0 --separate-stderr forge-config get llm.base_url
	assert_output null
	run -0 --separate-stderr forge-config --explain
	assert_line --partial "llm.base_url = null  (resolved: llm.base_url (user: $user_cfg) is not used"
	run -0 --separate-stderr forge-doctor --json --only provider
	jq -e '.provider.provider == "anthropic" and .provider.base_url == "(the provider'"'"'s default)"
		and (.provider.base_url_why | test("is not used"))
		and any(.problems[]; test("llm.base_url .* is not used"))' <<<"$output"
	run -0 requests
	[ "$(jq length <<<"$output")" = 0 ]
	# bound as the warning says: the server gets the request, with the openai key
	run -0 --separate-stderr forge-config set --global llm.provider openai
	run -0 --separate-stderr env OPENAI_API_KEY=$CANARY forge-llm --model qwen2.5-coder hi
	assert_output local
	[[ $stderr != *"not used"* ]]
	run -0 bash -c "curl -sS '$MOCK_URL/_mock/requests' | jq -c '[.[] | [.path, .auth, .headers[\"x-api-key\"]]]'"
	assert_output '[["/v1/chat/completions","present",null]]'
	run -0 --separate-stderr forge-doctor --json --only provider
	jq -e --arg u "$MOCK_URL/v1" '.provider.base_url == $u and (.provider.base_url_why | test("^llm.base_url \\(user: "))' <<<"$output"
	# a URL given for this call (FORGE_BASE_URL, --base-url) is the user's word
	# beside the key: used with the inferred provider, no warning
	rm -f "$user_cfg"
	run -0 --separate-stderr env FORGE_BASE_URL="$MOCK_URL" ANTHROPIC_API_KEY=$CANARY forge-llm hi
	assert_output env
	[[ $stderr != *warning* ]]
	run -0 --separate-stderr env ANTHROPIC_API_KEY=$CANARY forge-llm --base-url "$MOCK_URL" hi
	assert_output flag
	[[ $stderr != *warning* ]]
	run -0 bash -c "curl -sS '$MOCK_URL/_mock/requests' | jq -c '[.[] | .path]'"
	assert_output '["/v1/chat/completions","/v1/messages","/v1/messages"]'
}

@test "config: a config file sets model, max_tokens, temperature and prices" {
	cat >"$BATS_TEST_TMPDIR/cfg.json" <<-EOF
	{"llm":{"provider":"anthropic","base_url":"$MOCK_URL","model":"mystery-1","max_tokens":321,"temperature":0.5,
	        "pricing":{"mystery-1":{"input":2,"output":10}}}}
	EOF
	mock_steps '[{"text":"x","usage":{"input_tokens":1000000,"output_tokens":100000}},{"text":"y"}]'
	run --separate-stderr forge-llm --config "$BATS_TEST_TMPDIR/cfg.json" --json hi
	assert_success
	[ -z "$stderr" ]
	run jq -c .cost_usd <<<"$output"
	assert_output 3
	run --separate-stderr forge-llm --config "$BATS_TEST_TMPDIR/cfg.json" --max-tokens 50 --temperature 1 hi
	assert_success
	run bash -c "curl -sS '$MOCK_URL/_mock/requests' | jq -c '[.[].body | [.model, .max_tokens, .temperature]]'"
	assert_output '[["mystery-1",321,0.5],["mystery-1",50,1]]'
}

@test "usage: an unknown provider is exit 2 listing the providers; --help lists options and env" {
	run --separate-stderr forge-llm --provider bogus hi
	assert_failure 2
	[[ $stderr == *"unknown provider 'bogus' (anthropic, openai, replay)"* ]]
	run --separate-stderr env FORGE_PROVIDER=bogus forge-llm hi
	assert_failure 2
	[[ $stderr == *FORGE_PROVIDER* && $stderr == *"anthropic, openai, replay"* ]]
	run -0 forge-llm --help
	for w in --provider --model --base-url --cassette --record FORGE_PROVIDER FORGE_MODEL \
		FORGE_BASE_URL FORGE_CASSETTE ANTHROPIC_API_KEY OPENAI_API_KEY llm.stall_timeout_s "1 the model refused"; do
		[[ $output == *"$w"* ]] || { echo "missing: $w"; false; }
	done
}

@test "embeddings: openai /v1/embeddings and ollama /api/embed (vectors, sizes, request shape)" {
	mock_steps '[{"path":"/v1/embeddings","embeddings":[[0.5,-0.25,1],[0,0.125,2]]}]'
	run --separate-stderr env OPENAI_API_KEY=$CANARY "$FORGE_TESTBIN/llm-embed" openai "$MOCK_URL/v1" text-embedding-3-small hello world
	assert_success
	assert_output '{"dim":3,"vectors":[[0.5,-0.25,1],[0,0.125,2]]}'
	# No step for ollama: the mock's deterministic 64-dimension vectors.
	run --separate-stderr "$FORGE_TESTBIN/llm-embed" ollama "$MOCK_URL" nomic-embed-text a b c
	assert_success
	run jq -c '[.dim, (.vectors | length), ([.vectors[] | length] | unique)]' <<<"$output"
	assert_output '[64,3,[64]]'
	run bash -c "curl -sS '$MOCK_URL/_mock/requests' | jq -c '.[] | [.path, .body, .auth]'"
	assert_output - <<-'EOF'
	["/v1/embeddings",{"model":"text-embedding-3-small","input":["hello","world"]},"present"]
	["/api/embed",{"model":"nomic-embed-text","input":["a","b","c"]},"absent"]
	EOF
	mock_steps '[{"path":"/v1/embeddings","embeddings":[[1,2]]}]'
	run --separate-stderr env OPENAI_API_KEY=$CANARY "$FORGE_TESTBIN/llm-embed" openai "$MOCK_URL/v1" m one two
	assert_failure 5
	[[ $stderr == *"does not hold 2 vectors"* ]]
}

@test "https: the server's certificate is checked against the system's CAs (self-signed: exit 5, no retry)" {
	local d=$BATS_TEST_TMPDIR
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=127.0.0.1 \
		-addext subjectAltName=IP:127.0.0.1 -keyout "$d/key.pem" -out "$d/cert.pem" 2>/dev/null
	cat "$d/cert.pem" "$d/key.pem" >"$d/server.pem"
	"$TEST_PYTHON3" "$MOCK" --port-file "$d/port" --tls-cert "$d/server.pem" 2>"$d/mock.err" 3>&- &
	local pid=$!
	for _ in $(seq 1200); do
		[ -s "$d/port" ] || ! kill -0 $pid 2>/dev/null && break
		sleep 0.05
	done
	local url="https://127.0.0.1:$(cat "$d/port")"
	# the server speaks TLS: a client that trusts its certificate gets an answer
	run -0 curl -sS -f --cacert "$d/cert.pem" "$url/_mock/requests"
	# Forge trusts the system's CAs only: the handshake fails on the
	# self-signed certificate (not retried), and nothing reaches the server
	run --separate-stderr forge-llm --provider anthropic --base-url "$url" --model claude-haiku-4-5 hi
	local requests
	requests=$(curl -sS -f --cacert "$d/cert.pem" "$url/_mock/requests" | jq length)
	kill $pid
	assert_failure 5
	[[ $stderr == *"SSL certificate problem: self-signed certificate"* ]]
	[[ $stderr != *retries* ]]
	[ "$requests" = 0 ]
}

@test "https: a server whose CA is in the system's hashed certificate directory is trusted (the bundle is not read)" {
	[ "$(id -u)" = 0 ] && [ -d /etc/ssl/certs ] && unshare -m true 2>/dev/null ||
		skip "needs root and unshare -m (a private view of /etc/ssl/certs)"
	local d=$BATS_TEST_TMPDIR
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj "/CN=Forge Test CA" \
		-keyout "$d/ca.key" -out "$d/ca.pem" 2>/dev/null
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=127.0.0.1 \
		-keyout "$d/srv.key" -out "$d/srv.csr" 2>/dev/null
	printf 'subjectAltName=IP:127.0.0.1\n' >"$d/ext"
	openssl x509 -req -in "$d/srv.csr" -CA "$d/ca.pem" -CAkey "$d/ca.key" -CAcreateserial -days 2 \
		-extfile "$d/ext" -out "$d/srv.pem" 2>/dev/null
	cat "$d/srv.pem" "$d/srv.key" >"$d/server.pem"
	# the system's directory plus the test CA under its hash, and an empty
	# bundle: read, it would fail every request
	mkdir "$d/certs"
	cp -a /etc/ssl/certs/. "$d/certs/"
	rm -f "$d/certs/ca-certificates.crt"
	: >"$d/certs/ca-certificates.crt"
	cp "$d/ca.pem" "$d/certs/forge-test-ca.pem"
	ln -s forge-test-ca.pem "$d/certs/$(openssl x509 -hash -noout -in "$d/ca.pem").0"
	echo '[{"text":"hello over TLS"}]' >"$d/script.json"
	"$TEST_PYTHON3" "$MOCK" --port-file "$d/port" --tls-cert "$d/server.pem" --script "$d/script.json" \
		2>"$d/mock.err" 3>&- &
	local pid=$!
	for _ in $(seq 1200); do
		[ -s "$d/port" ] || ! kill -0 $pid 2>/dev/null && break
		sleep 0.05
	done
	run --separate-stderr unshare -m sh -c 'mount --bind "$1/certs" /etc/ssl/certs && shift && exec "$@"' _ "$d" \
		forge-llm --provider anthropic --base-url "https://127.0.0.1:$(cat "$d/port")" --model claude-haiku-4-5 hi
	kill $pid
	assert_success
	assert_output "hello over TLS"
}


@test "temperature: llm.temperature is sent, none for null or a model that refuses one, and a 400 naming it is retried without (hunt29 #1)" {
	mock_steps '[{"text":"a","times":5},{"fault":"error","status":400,"type":"invalid_request_error","message":"Unsupported value: '"'"'temperature'"'"' does not support 0 with this model.","param":"temperature"},{"text":"b","times":2}]'
	run --separate-stderr oai hi
	assert_success
	run --separate-stderr oai --temperature none hi
	assert_success
	run --separate-stderr oai --model gpt-5-mini hi
	assert_success
	run --separate-stderr anth --model claude-opus-4-7 hi
	assert_success
	run --separate-stderr anth --temperature 0.5 hi
	assert_success
	run --separate-stderr oai --model my-reasoner hi
	assert_success
	assert_output b
	run bash -c "curl -sS '$MOCK_URL/_mock/requests' | jq -c '[.[].body.temperature]'"
	assert_output '[0,null,null,null,0.5,0,null]'
	run bash -c "curl -sS '$MOCK_URL/_mock/requests' | jq -c '[.[].body | has(\"temperature\")]'"
	assert_output '[true,false,false,false,true,true,false]'
}

@test "temperature: a 400 about its value is reported, not retried without it; a dropped one is said (hunt43 #3)" {
	mock_steps '[{"provider":"anthropic","fault":"error","status":400,"type":"invalid_request_error","message":"temperature: range: 0..1"},{"text":"a"}]'
	run -5 --separate-stderr anth --temperature 1.5 hi
	[[ $stderr == *"HTTP 400 invalid_request_error: temperature: range: 0..1; check llm.temperature (--temperature)" ]]
	run -0 --separate-stderr requests
	[ "$(jq length <<<"$output")" = 1 ]
	mock_steps '[{"fault":"error","status":400,"type":"invalid_request_error","code":"unsupported_value","param":"temperature","message":"Unsupported value: '"'"'temperature'"'"' does not support 0.5 with this model. Only the default (1) value is supported."},{"text":"b"}]'
	run -0 --separate-stderr oai --model my-reasoner --temperature 0.5 hi
	assert_output b
	[[ $stderr == *"model 'my-reasoner' does not support a temperature: llm.temperature (0.5) is not sent to it"* ]]
	# a model that takes none at all, worded without "unsupported": sent again without it
	mock_steps '[{"provider":"anthropic","fault":"error","status":400,"type":"invalid_request_error","message":"`temperature` is deprecated for this model."},{"text":"c"}]'
	run -0 --separate-stderr anth --model claude-future-1 --temperature 0.5 hi
	assert_output c
}

@test "openai streaming: parallel tool calls that share index 0 but not their ids stay two calls (Ollama; hunt29 #2)" {
	c1='{"id":"c1","object":"chat.completion.chunk","created":1,"model":"qwen3","choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"id":"call_a","index":0,"type":"function","function":{"name":"read_file","arguments":"{\"path\":\"calc.c\"}"}}]},"finish_reason":null}]}'
	c2='{"id":"c1","object":"chat.completion.chunk","created":1,"model":"qwen3","choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"id":"call_b","index":0,"type":"function","function":{"name":"list_files","arguments":"{\"path\":\"tests\"}"}}]},"finish_reason":null}]}'
	c3='{"id":"c1","object":"chat.completion.chunk","created":1,"model":"qwen3","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}'
	body=$(printf 'data: %s\n\ndata: %s\n\ndata: %s\n\ndata: [DONE]\n\n' "$c1" "$c2" "$c3")
	mock_steps "[{\"fault\":\"raw\",\"status\":200,\"headers\":{\"Content-Type\":\"text/event-stream\"},\"body\":$(jq -Rs . <<<"$body")}]"
	run --separate-stderr oai --stream hi
	assert_success
	[[ $output == *'read_file({"path":"calc.c"})'* ]]
	[[ $output == *'list_files({"path":"tests"})'* ]]
}

@test "a password in the base URL is never shown: errors say *** (hunt29 #4)" {
	run --separate-stderr env OPENAI_API_KEY=$CANARY forge-llm --provider openai \
		--base-url "http://forge:S3cretProxyPass@127.0.0.1:9/v1" --model gpt-4o-mini --config <(echo '{"llm":{"max_retries":0}}') hi
	assert_failure 5
	[[ $stderr == *"http://forge:***@127.0.0.1:9/v1"* ]]
	[[ $stderr != *S3cretProxyPass* ]]
}

@test "forge llm --stream is bounded by llm.timeout_s as a whole: keep-alive pings do not hold it open (hunt64 #4)" {
	# part of an answer, then a ping every 200 ms and never the rest: the stall
	# watch never fires (before: it hung until killed; a phase's streamed call
	# is bounded by safety.time_s instead, and not by llm.timeout_s: plan.bats)
	mock_steps "$(jq -nc --arg f "$BATS_TEST_TMPDIR/never" \
		'[{text: "one two three four", pause_after: 3, pause_file: $f, ping_ms: 200, times: "always"}]')"
	run -5 --separate-stderr timeout 20 forge-llm --provider anthropic --base-url "$MOCK_URL" --model claude-haiku-4-5 \
		--config <(echo '{"llm":{"timeout_s":1,"stall_timeout_s":30,"max_retries":2}}') --stream hi
	[[ $stderr == *"forge-llm: anthropic: the answer from $MOCK_URL was cut off by the time limit left to the call"* ]]
	[[ $stderr == *"forge-llm: a streamed call may take llm.timeout_s (1 s) in all; raise it for a longer answer"* ]]
	# not asked again: the time was up
	run -0 bash -c "curl -sS '$MOCK_URL/_mock/requests' | jq -c '[.[].stream]'"
	assert_output '[true]'
	# --json --stream too
	run -5 --separate-stderr timeout 20 forge-llm --provider anthropic --base-url "$MOCK_URL" --model claude-haiku-4-5 \
		--config <(echo '{"llm":{"timeout_s":1,"stall_timeout_s":30,"max_retries":0}}') --json --stream hi
	[[ $stderr == *"cut off by the time limit left to the call"* ]]
	assert_output ""
}

@test "FORGE_LLM_MAX_RETRIES is llm.max_retries from the environment (hunt29)" {
	mock_steps '[{"fault":"error","status":500,"type":"server_error","message":"boom"},{"text":"retried"}]'
	run --separate-stderr env FORGE_LLM_MAX_RETRIES=0 OPENAI_API_KEY=$CANARY forge-llm --provider openai --base-url "$MOCK_URL/v1" --model gpt-4o-mini hi
	assert_failure 5
	run bash -c "curl -sS '$MOCK_URL/_mock/requests' | jq length"
	assert_output 1
}

@test "an Anthropic usage without input_tokens is estimated, never priced as 0 input tokens (hunt29)" {
	half='{"id":"msg_1","type":"message","role":"assistant","model":"claude-haiku-4-5","content":[{"type":"text","text":"hello"}],"stop_reason":"end_turn","usage":{"output_tokens":3}}'
	mock_steps "[{\"fault\":\"raw\",\"status\":200,\"headers\":{\"Content-Type\":\"application/json\"},\"body\":$(jq -Rs . <<<"$half")}]"
	run --separate-stderr anth --json "a prompt of several words to count"
	assert_success
	jq -e '.usage.estimated == true and .usage.input_tokens > 5 and .cost_usd > 0' <<<"$output"
}

@test "SIGTERM and SIGINT end forge-llm with exit 130 (not a death by the signal)" {
	# (before: no handler, killed by the signal: the shell's 143)
	interrupt_ends_130 forge-llm forge-llm --provider anthropic --base-url "$MOCK_URL"
}

# raw_sse BODY: a mock step that serves BODY as a 200 text/event-stream.
raw_sse() {
	printf '{"fault":"raw","status":200,"headers":{"Content-Type":"text/event-stream"},"body":%s}' "$(jq -Rs . <<<"$1")"
}
ANTH_START='event: message_start
data: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"claude-haiku-4-5","stop_reason":null,"usage":{"input_tokens":12,"output_tokens":1}}}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Whole answer."}}

'
ANTH_DELTA='event: content_block_stop
data: {"type":"content_block_stop","index":0}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":3}}

'

@test "anthropic: a stream that ends cleanly after message_delta's stop_reason, without message_stop, is complete; one cut before it is not (hunt29)" {
	mock_steps "[$(raw_sse "$ANTH_START$ANTH_DELTA"),$(raw_sse "$ANTH_START")]"
	run -0 --separate-stderr anth --stream hi
	assert_output "Whole answer."
	run -5 --separate-stderr anth --stream hi
	[[ $stderr == *"the stream ended before the answer was complete"* ]]
}

@test "a stream whose body ends cleanly before the answer did (a proxy ended it) is asked again whole; once text was printed it is not" {
	# (before: a protocol error at once, not retried)
	export FORGE_DB="$BATS_TEST_TMPDIR/forge.db"
	start_only=$(sed -n 1,3p <<<"$ANTH_START")
	mock_steps "[$(raw_sse "$start_only"),{\"text\":\"asked again\"}]"
	run -0 --separate-stderr anth --stream hi
	assert_output "asked again"
	run bash -c "curl -sS '$MOCK_URL/_mock/requests' | jq length"
	assert_output 2
	# the lost attempt's message_start (12 in) is billed with the call
	run -0 sqlite3 "$FORGE_DB" "SELECT retries, input_tokens > 12, error IS NULL FROM llm_calls"
	assert_output "1|1|1"
	# retries run out: the message says so
	echo '{"llm":{"max_retries":1}}' >"$BATS_TEST_TMPDIR/cfg.json"
	mock_steps "[$(raw_sse "$start_only"),$(raw_sse "$start_only"),{\"text\":\"never\"}]"
	run -5 --separate-stderr anth --config "$BATS_TEST_TMPDIR/cfg.json" --stream hi
	[[ $stderr == *"the stream ended before the answer was complete"*"gave up after 1 retr"* ]]
	# part of the answer was printed: not asked again
	mock_steps "[$(raw_sse "$ANTH_START"),{\"text\":\"never\"}]"
	run -5 --separate-stderr anth --stream hi
	assert_output "Whole answer."
	[[ $stderr == *"the stream ended before the answer was complete" ]]
	run -0 bash -c "curl -sS '$MOCK_URL/_mock/script' | jq .remaining"
	assert_output 1
}

@test "streams: ping and unknown events are skipped unparsed, a keep-alive data line too; a malformed known event fails naming it (hunt29)" {
	odd='event: ping
data:

event: content_block_delta_v2
data: not json at all

event: ping
data: {"type": "ping"}

'
	stop='event: message_stop
data: {"type":"message_stop"}

'
	bad='event: message_start
data: {"type":"message_start","message":{

'
	chunk='data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{"content":"kept alive"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}

'
	mock_steps "[$(raw_sse "$odd$ANTH_START$odd$ANTH_DELTA$stop"),$(raw_sse "$bad"),$(raw_sse "data: 

$chunk
data: 

data: [DONE]

")]"
	run -0 --separate-stderr anth --stream hi
	assert_output "Whole answer."
	run -5 --separate-stderr anth --config <(echo '{"llm":{"max_retries":0}}') --stream hi
	[[ $stderr == *"unparseable Anthropic stream event 'message_start'"* ]]
	run -0 --separate-stderr oai --stream hi
	assert_output "kept alive"
}

@test "a response body past 64 MiB is said to be too large, not that the server cannot be reached (hunt29)" {
	mock_steps '[{"fault":"raw","status":200,"headers":{"Content-Type":"application/json"},"parts":[["{\"pad\":\"",1],["0123456789abcdef",4194400],["\"}",1]]}]'
	run -5 --separate-stderr anth --config <(echo '{"llm":{"max_retries":0}}') hi
	[[ $stderr == *"anthropic: the response body from $MOCK_URL is larger than 67108864 bytes"* ]]
	[[ $stderr != *"cannot reach"* ]]
}

# One session's model calls ride one connection, for both providers: a
# stream complete at message_stop / [DONE] is read to the response's end,
# so that libcurl keeps the connection (before: the transfer was cut there,
# and every turn paid a new TCP -- and on a real API, TLS -- handshake).
connection_kept() {
	calc_repo "$BATS_TEST_TMPDIR/calc"
	cd "$BATS_TEST_TMPDIR/calc"
	mock_steps '[{"tool_calls":[{"name":"read_file","input":{"path":"calc.c"}}]},
		{"tool_calls":[{"name":"list_files","input":{"path":"."}}]},
		{"tool_calls":[{"name":"finish","input":{"summary":"nothing to change"}}]}]'
	sed -n 3p "$FORGE_ROOT/tests/fixtures/cassettes/plan-calc.jsonl" | jq -c --arg r "$PWD" \
		'{kind:"state", v:1, trace_id:"K1", phase:"plan", status:"ok",
		  task:{description:"add a mul operation", repo:$r, base_ref:"main"},
		  plan:.response.tool_calls[0].input, bounces:[], cost:{tokens:0, usd:0}}' >"$BATS_TEST_TMPDIR/plan.json"
	run --separate-stderr forge-implement --config "$BATS_TEST_TMPDIR/cfg.json" <"$BATS_TEST_TMPDIR/plan.json"
	run -0 bash -c "curl -sS -f '$MOCK_URL/_mock/stats' | jq -c '[.api_requests, .connections]'"
	assert_output '[3,1]'
}

@test "anthropic: the model calls of one session use one connection" {
	echo '{"llm":{"provider":"anthropic","max_retries":0},"implement":{"validate":false}}' >"$BATS_TEST_TMPDIR/cfg.json"
	FORGE_BASE_URL=$MOCK_URL connection_kept
}

@test "openai: the model calls of one session use one connection" {
	echo '{"llm":{"provider":"openai","model":"gpt-4o-mini","max_retries":0},"implement":{"validate":false}}' >"$BATS_TEST_TMPDIR/cfg.json"
	OPENAI_API_KEY=$CANARY FORGE_BASE_URL=$MOCK_URL/v1 connection_kept
}
