#!/usr/bin/env bats
# mock-llm.bats - the protocol-true mock LLM server (tests/helpers/mock_llm.py):
# wire formats checked against the recorded SDK fixtures, every fault, the
# request log, the lifecycle, and the official SDKs run against it
# (tests/sdk/check.mjs). Needs python3, curl, jq; the SDK check needs node/npm.

bats_require_minimum_version 1.5.0

setup_file() {
	export BATS_TEST_TIMEOUT=120
	MOCK_FIX="$BATS_TEST_DIRNAME/fixtures/mock"
	MOCK_REAL_HOME=$HOME # npm keeps its cache and config there
	export MOCK_FIX MOCK_REAL_HOME
	load test_helper/mock
	# Only the mock (Python) and the SDKs run here, no program of the tree
	# under test: checked once, in the default suite (~37 CPU-s).
	[ "${FORGE_SUITE:-default}" = default ] || return 0
	mock_start
}

teardown_file() {
	mock_stop
}

setup() {
	[ "${FORGE_SUITE:-default}" = default ] ||
		skip "runs no program of the tree under test: the mock LLM is checked once, in the default suite"
	load test_helper/common
	forge_setup
	H="$BATS_TEST_TMPDIR/headers"
	B="$BATS_TEST_TMPDIR/body"
}

# mock_load: replace the mock's script with the JSON on stdin.
mock_load() {
	curl -sS -f -X POST -H 'content-type: application/json' --data-binary @- \
		"$MOCK_URL/_mock/script?replace=1" >/dev/null
}

# anth ARGS / oai ARGS: POST to the Anthropic / OpenAI endpoint; headers to
# $H, body to $B, prints the HTTP status; curl's exit code is the status of run.
anth() {
	curl -sS -D "$H" -o "$B" -w '%{http_code}' "$MOCK_URL/v1/messages" \
		-H 'x-api-key: test-key' -H 'anthropic-version: 2023-06-01' \
		-H 'content-type: application/json' "$@"
}
oai() {
	curl -sS -D "$H" -o "$B" -w '%{http_code}' "$MOCK_URL/v1/chat/completions" \
		-H 'Authorization: Bearer test-key' -H 'content-type: application/json' "$@"
}
ABODY='{"model":"claude-haiku-4-5","max_tokens":64,"messages":[{"role":"user","content":"hi"}]}'
ASTREAM='{"model":"claude-haiku-4-5","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"hi"}]}'
OBODY='{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}'
OSTREAM='{"model":"gpt-4o-mini","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}'

# hdr NAME: the value of response header NAME in $H (last response).
hdr() {
	tr -d '\r' <"$H" | awk -v n="$(echo "$1" | tr A-Z a-z)" \
		'{ i = index($0, ":"); if (i && tolower(substr($0, 1, i - 1)) == n) v = substr($0, i + 2) } END { print v }'
}

# shape PROVIDER FILE [--recorded]: the SSE shape (framing checked).
shape() {
	test_python3
	"$TEST_PYTHON3" "$MOCK_FIX/sse_shape.py" "$@"
}

@test "mock: health, port file, control endpoints" {
	run -0 curl -sS "$MOCK_URL/_mock/health"
	assert_output "ok"
	[[ "$(cat "$BATS_FILE_TMPDIR/port")" =~ ^[0-9]+$ ]]
	echo '[{"text":"a"},{"text":"b","times":2}]' | mock_load
	run -0 bash -c "curl -sS '$MOCK_URL/_mock/script' | jq -c '[.remaining, .steps[1].text]'"
	assert_output '[2,"b"]'
	run -0 bash -c "curl -sS -X POST -d '{\"steps\":[{\"text\":\"c\"}]}' '$MOCK_URL/_mock/script' | jq -c .remaining"
	assert_output '3'
	run -0 bash -c "curl -sS -X POST -d 'nonsense' '$MOCK_URL/_mock/script' -o /dev/null -w '%{http_code}'"
	assert_output '400'
}

@test "mock: /_mock/stats counts the API requests and the time they took, not the control ones" {
	curl -sS -f -X POST "$MOCK_URL/_mock/reset" >/dev/null
	run -0 bash -c "curl -sS '$MOCK_URL/_mock/stats' | jq -c ."
	assert_output '{"api_requests":0,"api_seconds":0,"connections":0}'
	echo '[{"text":"a"},{"text":"b"}]' | mock_load
	run -0 anth -d "$ABODY"
	assert_output 200
	run -0 oai -d "$OSTREAM"
	assert_output 200
	run -0 bash -c "curl -sS '$MOCK_URL/_mock/stats' | jq -c '[.api_requests, .api_seconds > 0, .api_seconds < 10, .connections]'"
	assert_output '[2,true,true,2]'
	curl -sS -f -X POST "$MOCK_URL/_mock/reset" >/dev/null
	run -0 bash -c "curl -sS '$MOCK_URL/_mock/stats' | jq -c .api_requests"
	assert_output '0'
}

@test "anthropic: JSON answer, headers as the real API sends them" {
	echo '[{"text":"Hello! How can I assist you today?","usage":{"input_tokens":12,"output_tokens":8}}]' | mock_load
	run -0 anth -d "$ABODY"
	assert_output 200
	[ "$(hdr content-type)" = "application/json" ]
	[[ "$(hdr request-id)" =~ ^req_011C[A-Za-z0-9]{20}$ ]]
	[ "$(hdr anthropic-ratelimit-requests-limit)" = 50 ]
	[[ "$(hdr anthropic-ratelimit-tokens-reset)" =~ ^20[0-9]{2}-[0-9]{2}-[0-9]{2}T[0-9:]{8}Z$ ]]
	[ "$(hdr content-length)" = "$(wc -c <"$B")" ]
	run -0 jq -c '[.type, .role, .model, .content, .stop_reason, .stop_sequence, .usage.input_tokens, .usage.output_tokens, (.id | test("^msg_01"))]' "$B"
	assert_output '["message","assistant","claude-haiku-4-5",[{"type":"text","text":"Hello! How can I assist you today?"}],"end_turn",null,12,8,true]'
}

@test "anthropic: tool_use answer (non-streaming)" {
	echo '[{"text":"Let me look.","tool_calls":[{"id":"toolu_01A","name":"get_weather","input":{"location":"SF"}}]}]' | mock_load
	run -0 anth -d "$ABODY"
	run -0 jq -c '[.stop_reason, .content]' "$B"
	assert_output '["tool_use",[{"type":"text","text":"Let me look."},{"type":"tool_use","id":"toolu_01A","name":"get_weather","input":{"location":"SF"}}]]'
}

@test "anthropic: SSE stream has the recorded fixture's framing (basic, tool_use, refusal)" {
	cat <<-'EOF' | mock_load
	[{"text":"Hello there!"},
	 {"text":"I'll check the current weather in Paris for you.","tool_calls":[{"name":"get_weather","input":{"location":"Paris"}}]},
	 {"text":"","stop_reason":"refusal"}]
	EOF
	for fx in basic tool_use refusal; do
		run -0 anth -d "$ASTREAM"
		assert_output 200
		[ "$(hdr content-type)" = "text/event-stream; charset=utf-8" ]
		[ "$(hdr transfer-encoding)" = "chunked" ]
		[ -n "$(hdr request-id)" ]
		diff -u <(shape anthropic "$MOCK_FIX/recorded/anth_$fx.sse" --recorded) <(shape anthropic "$B")
		! grep -q 'DONE' "$B" || false
	done
	# The ping is byte-identical to the recording (with its space).
	grep -qx 'data: {"type": "ping"}' "$B" || grep -qx 'data: {"type": "ping"}' "$MOCK_FIX/recorded/anth_basic.sse"
}

@test "anthropic: streamed text and input_json_delta pieces reassemble to the script" {
	cat <<-'EOF' | mock_load
	[{"text":"héllo wörld ✓ three four","tool_calls":[{"name":"t","input":{"q":"a \"quoted\" \\ value","n":[1,2]}}],"usage":{"input_tokens":5,"output_tokens":7}}]
	EOF
	run -0 anth -d "$ASTREAM"
	run -0 bash -c "grep '^data: ' '$B' | cut -c7- | jq -rj 'select(.delta.type == \"text_delta\") | .delta.text'"
	assert_output 'héllo wörld ✓ three four'
	run -0 bash -c "grep '^data: ' '$B' | cut -c7- | jq -rj 'select(.delta.type == \"input_json_delta\") | .delta.partial_json' | jq -c ."
	assert_output '{"q":"a \"quoted\" \\ value","n":[1,2]}'
	n=$(grep -c 'input_json_delta' "$B")
	[ "$n" -ge 4 ]
	grep -q '"partial_json":""' "$B"
	run -0 bash -c "grep '^data: ' '$B' | cut -c7- | jq -c 'select(.type == \"message_delta\") | [.delta.stop_reason, .usage.output_tokens]'"
	assert_output '["tool_use",7]'
}

@test "openai: JSON answer and tool calls, headers as the real API sends them" {
	cat <<-'EOF' | mock_load
	[{"text":"Hello!","usage":{"input_tokens":19,"output_tokens":10,"cache_read_input_tokens":3}},
	 {"tool_calls":[{"id":"call_abc123","name":"get_current_weather","input":{"location":"Boston, MA"}}]},
	 {"text":"cut short","stop_reason":"max_tokens"}]
	EOF
	run -0 oai -d "$OBODY"
	assert_output 200
	[[ "$(hdr x-request-id)" =~ ^req_[0-9a-f]{32}$ ]]
	[ "$(hdr openai-version)" = "2020-10-01" ]
	[ "$(hdr x-ratelimit-reset-tokens)" = "6m0s" ]
	[ "$(hdr content-type)" = "application/json" ]
	run -0 jq -c '[.object, .model, .choices[0].message.content, .choices[0].finish_reason, .usage.prompt_tokens, .usage.completion_tokens, .usage.total_tokens, .usage.prompt_tokens_details.cached_tokens]' "$B"
	assert_output '["chat.completion","gpt-4o-mini","Hello!","stop",22,10,32,3]'
	run -0 oai -d "$OBODY"
	run -0 jq -c '[.choices[0].message.content, .choices[0].message.tool_calls, .choices[0].finish_reason]' "$B"
	assert_output '[null,[{"id":"call_abc123","type":"function","function":{"name":"get_current_weather","arguments":"{\"location\":\"Boston, MA\"}"}}],"tool_calls"]'
	run -0 oai -d "$OBODY"
	run -0 jq -r '.choices[0].finish_reason' "$B"
	assert_output length
}

@test "openai: SSE stream has the recorded fixtures' framing (text, 2 parallel tool calls)" {
	cat <<-'EOF' | mock_load
	[{"text":"I'm unable to provide real-time weather."},
	 {"tool_calls":[{"name":"GetWeatherArgs","input":{"city":"Edinburgh","country":"UK","units":"c"}},
	                {"name":"get_stock_price","input":{"ticker":"AAPL","exchange":"NASDAQ"}}]}]
	EOF
	for fx in e2aad469b71d f82268f2fefd; do
		run -0 oai -d "$OSTREAM"
		assert_output 200
		[ "$(hdr content-type)" = "text/event-stream; charset=utf-8" ]
		[ "$(hdr transfer-encoding)" = "chunked" ]
		diff -u <(shape openai "$MOCK_FIX/recorded/oai_$fx.sse" --recorded) <(shape openai "$B")
		! grep -q '^event:' "$B" || false
	done
	# arguments split across chunks, keyed by index, reassemble per call
	run -0 bash -c "grep '^data: {' '$B' | cut -c7- | jq -rj '.choices[0].delta.tool_calls[]? | select(.index == 1) | .function.arguments'"
	assert_output '{"ticker":"AAPL","exchange":"NASDAQ"}'
}

@test "openai: stream without include_usage has no usage chunk, ends in [DONE]" {
	echo '[{"text":"a b c"}]' | mock_load
	run -0 oai -d '{"model":"m","stream":true,"messages":[{"role":"user","content":"x"}]}'
	! grep -q usage "$B" || false
	cmp <(tail -c 14 "$B") <(printf 'data: [DONE]\n\n')
}

@test "fault: 429 with retry-after / retry-after-ms, provider error shapes" {
	cat <<-'EOF' | mock_load
	[{"fault":"rate_limit","retry_after":"7"},
	 {"fault":"rate_limit","retry_after":"1","retry_after_ms":250},
	 {"fault":"quota"}]
	EOF
	run -0 anth -d "$ABODY"
	assert_output 429
	[ "$(hdr retry-after)" = 7 ]
	[ "$(hdr x-should-retry)" = true ]
	[ "$(hdr anthropic-ratelimit-requests-remaining)" = 0 ]
	run -0 jq -c '[.type, .error.type, (.request_id | test("^req_"))]' "$B"
	assert_output '["error","rate_limit_error",true]'
	[ "$(jq -r .request_id "$B")" = "$(hdr request-id)" ]
	run -0 oai -d "$OBODY"
	assert_output 429
	[ "$(hdr retry-after)" = 1 ]
	[ "$(hdr retry-after-ms)" = 250 ]
	run -0 jq -c '.error | [keys, .type, .code, .param]' "$B"
	assert_output '[["code","message","param","type"],"requests","rate_limit_exceeded",null]'
	run -0 oai -d "$OBODY"
	assert_output 429
	[ -z "$(hdr retry-after)" ]
	run -0 jq -r '.error.code' "$B"
	assert_output insufficient_quota
}

@test "fault: quota and credit, an account out of money (both providers' real bodies)" {
	cat <<-'EOF' | mock_load
	[{"fault":"quota"},{"fault":"quota","status":400,"type":"invalid_request_error"},
	 {"fault":"credit"},{"fault":"credit"}]
	EOF
	run -0 anth -d "$ABODY"
	assert_output 429
	[ -z "$(hdr retry-after)" ]
	run -0 jq -c '.error' "$B"
	assert_output '{"type":"rate_limit_error","message":"You have reached your specified API usage limits. You will regain access on 2099-01-01 at 00:00 UTC."}'
	run -0 anth -d "$ABODY"
	assert_output 400
	run -0 jq -r '.error.type' "$B"
	assert_output invalid_request_error
	run -0 anth -d "$ABODY"
	assert_output 400
	run -0 jq -c '.error' "$B"
	assert_output '{"type":"invalid_request_error","message":"Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits."}'
	[ "$(hdr x-should-retry)" = false ]
	run -0 oai -d "$OBODY"
	assert_output 429
	run -0 jq -c '.error | [.type, .code]' "$B"
	assert_output '["insufficient_quota","insufficient_quota"]'
}

@test "fault: 500, 529 overloaded, 401, 400 context length (both providers)" {
	cat <<-'EOF' | mock_load
	[{"provider":"anthropic","fault":"server_error"},{"provider":"openai","fault":"server_error"},
	 {"provider":"anthropic","fault":"overloaded"},{"provider":"openai","fault":"overloaded"},
	 {"provider":"anthropic","fault":"auth"},{"provider":"openai","fault":"auth"},
	 {"provider":"anthropic","fault":"context_length"},{"provider":"openai","fault":"context_length"}]
	EOF
	run -0 anth -d "$ABODY"
	assert_output 500
	[ "$(jq -r .error.type "$B")" = api_error ]
	run -0 oai -d "$OBODY"
	assert_output 500
	[ "$(jq -r .error.type "$B")" = server_error ]
	run -0 anth -d "$ABODY"
	assert_output 529
	run -0 jq -c '.error' "$B"
	assert_output '{"type":"overloaded_error","message":"Overloaded"}'
	[ "$(hdr x-should-retry)" = true ]
	run -0 oai -d "$OBODY"
	assert_output 503
	run -0 anth -d "$ABODY"
	assert_output 401
	run -0 jq -c '.error' "$B"
	assert_output '{"type":"authentication_error","message":"invalid x-api-key"}'
	[ "$(hdr x-should-retry)" = false ]
	run -0 oai -d "$OBODY"
	assert_output 401
	run -0 jq -c '.error | [.type, .code]' "$B"
	assert_output '["invalid_request_error","invalid_api_key"]'
	run -0 anth -d "$ABODY"
	assert_output 400
	run -0 jq -r '.error | .type + ": " + .message' "$B"
	assert_output --regexp '^invalid_request_error: prompt is too long: [0-9]+ tokens > [0-9]+ maximum$'
	run -0 oai -d "$OBODY"
	assert_output 400
	run -0 jq -c '.error | [.type, .code]' "$B"
	assert_output '["invalid_request_error","context_length_exceeded"]'
}

@test "fault: generic error status, x-should-retry override, extra headers, raw body" {
	cat <<-'EOF' | mock_load
	[{"fault":"error","status":503,"should_retry":false,"headers":{"x-extra":"1"}},
	 {"fault":"error","status":409,"message":"lock timeout"},
	 {"fault":"raw","status":502,"headers":{"content-type":"text/html"},"body":"<html>bad gateway</html>"}]
	EOF
	run -0 anth -d "$ABODY"
	assert_output 503
	[ "$(hdr x-should-retry)" = false ]
	[ "$(hdr x-extra)" = 1 ]
	run -0 anth -d "$ABODY"
	assert_output 409
	run -0 jq -c '.error' "$B"
	assert_output '{"type":"conflict_error","message":"lock timeout"}'
	run -0 oai -d "$OBODY"
	assert_output 502
	[ "$(cat "$B")" = "<html>bad gateway</html>" ]
}

@test "fault: slow answer runs past the client timeout" {
	echo '[{"text":"late","delay_ms":1500},{"text":"on time"}]' | mock_load
	run -28 anth --max-time 0.4 -d "$ABODY"
	# the next request gets the next step; the server is not blocked
	run -0 anth -d "$ABODY"
	[ "$(jq -r '.content[0].text' "$B")" = "on time" ]
}

@test "wait_file: the answer is held until the file exists; a wait_file that is not a path is refused" {
	echo "[{\"text\":\"held\",\"wait_file\":\"$BATS_TEST_TMPDIR/go\"}]" | mock_load
	before=$(wc -l <"$MOCK_LOG")
	anth -d "$ABODY" >"$BATS_TEST_TMPDIR/status" 3>&- &
	pid=$!
	# logged when it arrives; no answer while the file is missing
	for _ in $(seq 1200); do [ "$(wc -l <"$MOCK_LOG")" -gt "$before" ] && break; sleep 0.05; done
	[ "$(wc -l <"$MOCK_LOG")" -gt "$before" ]
	kill -0 "$pid"
	[ ! -s "$B" ]
	touch "$BATS_TEST_TMPDIR/go"
	wait "$pid"
	[ "$(cat "$BATS_TEST_TMPDIR/status")" = 200 ]
	[ "$(jq -r '.content[0].text' "$B")" = held ]
	run -0 bash -c "echo '[{\"text\":\"x\",\"wait_file\":1}]' |
		curl -sS -w ' %{http_code}' -X POST --data-binary @- '$MOCK_URL/_mock/script?replace=1'"
	assert_output --partial 'wait_file'
	assert_output --partial ' 400'
}

@test "fault: stream cut in the middle (no message_stop / [DONE]; curl sees a broken transfer)" {
	cat <<-'EOF' | mock_load
	[{"fault":"cut","text":"one two three four five six seven","cut_after":5},
	 {"fault":"cut","text":"one two three four five six seven"},
	 {"text":"a complete answer","cut_after":3}]
	EOF
	run -18 anth -d "$ASTREAM"
	[ "$(grep -c '^event: ' "$B")" = 5 ]
	! grep -q message_stop "$B" || false
	run -18 oai -d "$OSTREAM"
	grep -q '^data: {' "$B"
	! grep -q 'DONE' "$B" || false
	run -18 anth -d "$ABODY"
	[ "$(hdr content-length)" -gt "$(wc -c <"$B")" ]
}

@test "fault: malformed JSON body, malformed SSE data, mid-stream error event, disconnect" {
	cat <<-'EOF' | mock_load
	[{"fault":"malformed"},{"fault":"malformed"},{"fault":"stream_error","text":"a b c d e"},
	 {"fault":"stream_error","text":"a b c d e"},{"fault":"disconnect"}]
	EOF
	run -0 anth -d "$ABODY"
	assert_output 200
	[ "$(hdr content-type)" = application/json ]
	run -4 jq . "$B"
	run -0 oai -d "$OSTREAM"
	assert_output 200
	run -0 bash -c "grep '^data: {' '$B' | cut -c7- | jq -e . >/dev/null 2>&1 || echo broken"
	assert_output broken
	run -0 anth -d "$ASTREAM"
	tail -n 3 "$B" | grep -qx 'event: error'
	grep -q '"overloaded_error"' "$B"
	! grep -q message_stop "$B" || false
	run -0 oai -d "$OSTREAM"
	run -0 bash -c "grep '^data: ' '$B' | tail -n 1 | cut -c7- | jq -c '.error | [.type, has(\"code\")]'"
	assert_output '["server_error",true]'
	run -52 anth -d "$ABODY"
}

@test "fault: stream_error on an answer shorter than error_after still ends with the error, never after [DONE] / message_stop (hunt64 M)" {
	# (before: OpenAI sent data: [DONE] and then the error, which a client never reads)
	cat <<-'EOF' | mock_load
	[{"fault":"stream_error"},{"fault":"stream_error"},{"fault":"stream_error","error_after":99},
	 {"fault":"stream_error","no_done":true}]
	EOF
	run -0 oai -d "$OSTREAM"
	run -0 bash -c "grep '^data: ' '$B' | tail -n 1 | cut -c7- | jq -c '.error.type'"
	assert_output '"server_error"'
	! grep -q 'DONE' "$B" || false
	run -0 anth -d "$ASTREAM"
	tail -n 3 "$B" | grep -qx 'event: error'
	! grep -q message_stop "$B" || false
	run -0 oai -d "$(jq -c 'del(.stream_options)' <<<"$OSTREAM")"
	run -0 bash -c "grep '^data: ' '$B' | tail -n 1 | cut -c7- | jq -c '.error.type'"
	assert_output '"server_error"'
	! grep -q 'DONE' "$B" || false
	run -0 oai -d "$OSTREAM"
	run -0 bash -c "grep '^data: ' '$B' | tail -n 1 | cut -c7- | jq -c '.error.type'"
	assert_output '"server_error"'
	# what is sent before the error is the answer's start
	grep -q '"role":"assistant"' "$B"
}

@test "script exhausted: 500 in the provider's shape, says so, x-should-retry false" {
	echo '[]' | mock_load
	run -0 anth -d "$ABODY"
	assert_output 500
	[ "$(hdr x-should-retry)" = false ]
	run -0 jq -r '.error.message' "$B"
	assert_output --partial 'mock_llm: script exhausted'
	run -0 oai -d "$OBODY"
	assert_output 500
	run -0 jq -r '.error.code' "$B"
	assert_output mock_script_exhausted
}

@test "steps keyed by provider/path, times, and embeddings (OpenAI float/base64, Ollama)" {
	cat <<-'EOF' | mock_load
	[{"provider":"openai","text":"for openai"},
	 {"provider":"anthropic","text":"for anthropic","times":2},
	 {"path":"/api/embed","embeddings":[[1,0],[0,1]]}]
	EOF
	run -0 anth -d "$ABODY"
	[ "$(jq -r '.content[0].text' "$B")" = "for anthropic" ]
	run -0 oai -d "$OBODY"
	[ "$(jq -r '.choices[0].message.content' "$B")" = "for openai" ]
	run -0 anth -d "$ABODY"
	[ "$(jq -r '.content[0].text' "$B")" = "for anthropic" ]
	run -0 curl -sS "$MOCK_URL/api/embed" -d '{"model":"all-minilm","input":["a","b"]}'
	run -0 jq -c '[.model, .embeddings, (.prompt_eval_count > 0)]' <<<"$output"
	assert_output '["all-minilm",[[1,0],[0,1]],true]'
	# no embed step left: deterministic feature-hashed vectors, not "exhausted"
	run -0 curl -sS "$MOCK_URL/v1/embeddings" -H 'Authorization: Bearer k' \
		-d '{"model":"text-embedding-3-small","input":"the cat sat","dimensions":8}'
	v1=$(jq -c '.data[0].embedding' <<<"$output")
	run -0 jq -c '[.object, .data[0].object, .data[0].index, (.data[0].embedding | length), .usage.prompt_tokens > 0]' <<<"$output"
	assert_output '["list","embedding",0,8,true]'
	run -0 curl -sS "$MOCK_URL/v1/embeddings" -H 'Authorization: Bearer k' \
		-d '{"model":"text-embedding-3-small","input":"the cat sat","dimensions":8}'
	[ "$(jq -c '.data[0].embedding' <<<"$output")" = "$v1" ]
	run -0 curl -sS "$MOCK_URL/v1/embeddings" -H 'Authorization: Bearer k' \
		-d '{"model":"m","input":["x"],"encoding_format":"base64","dimensions":4}'
	run -0 bash -c "jq -r '.data[0].embedding' <<<'$output' | base64 -d | wc -c"
	assert_output 16
	# chat answer steps are all used up now
	run -0 anth -d "$ABODY"
	assert_output 500
}

@test "conditional steps: the answer depends on the prompt (system, messages, tool results), both providers" {
	cat <<-'EOF' | mock_load
	[{"when_prompt_contains":"LESSON: check the return value","then":{"text":"careful code"},
	  "else":{"text":"careless code"},"times":4},
	 {"when_prompt_matches":"attempt [0-9]+ failed","when_prompt_lacks":"skip me",
	  "then":{"tool_calls":[{"name":"finish","input":{"ok":true}}]}},
	 {"text":"fallback"}]
	EOF
	# the lesson in Anthropic's system prompt (blocks), in a plain user message, in an
	# OpenAI system message: "then"; a request without it: "else"
	run -0 anth -d '{"model":"m","max_tokens":9,"system":[{"type":"text","text":"## Relevant past learnings\nLESSON: check the return value"}],"messages":[{"role":"user","content":"add a helper"}]}'
	[ "$(jq -r '.content[0].text' "$B")" = "careful code" ]
	run -0 anth -d "$ABODY"
	[ "$(jq -r '.content[0].text' "$B")" = "careless code" ]
	run -0 oai -d '{"model":"m","messages":[{"role":"system","content":"LESSON: check the return value"},{"role":"user","content":"hi"}]}'
	[ "$(jq -r '.choices[0].message.content' "$B")" = "careful code" ]
	# a tool result carries it (Anthropic tool_result blocks), streamed: still "then"
	run -0 anth -d '{"model":"m","max_tokens":9,"stream":true,"messages":[{"role":"user","content":"go"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"read_file","input":{"path":"NOTES"}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"LESSON: check the return value"}]}]}]}'
	grep -q 'careful' "$B"
	# the first step is used up (times 4); a condition without "else" that fails does
	# not match: the next step answers
	run -0 anth -d '{"model":"m","max_tokens":9,"messages":[{"role":"user","content":"attempt 2 failed, skip me"}]}'
	[ "$(jq -r '.content[0].text' "$B")" = "fallback" ]
	run -0 anth -d '{"model":"m","max_tokens":9,"messages":[{"role":"user","content":"attempt 2 failed"}]}'
	[ "$(jq -c '[.stop_reason, .content[0].name, .content[0].input]' "$B")" = '["tool_use","finish",{"ok":true}]' ]
	# the request log says which branch answered
	run -0 bash -c "curl -sS '$MOCK_URL/_mock/requests' | jq -c '.[-6:] | .[0].step as \$s | [.[] | [.step - \$s, .branch]]'"
	assert_output '[[0,"then"],[0,"else"],[0,"then"],[0,"then"],[2,null],[1,"then"]]'
	# script mistakes are refused when loaded
	run -0 bash -c "echo '[{\"when_prompt_contains\":\"x\",\"else\":{\"text\":\"y\"}}]' |
		curl -sS -o /dev/null -w '%{http_code}' -X POST --data-binary @- '$MOCK_URL/_mock/script?replace=1'"
	assert_output 400
	run -0 bash -c "echo '[{\"when_prompt_matches\":\"(\",\"then\":{\"text\":\"y\"}}]' |
		curl -sS -X POST --data-binary @- '$MOCK_URL/_mock/script?replace=1'"
	assert_output --partial 'not a regex'
	run -0 bash -c "echo '[{\"text\":\"y\",\"then\":{\"text\":\"z\"}}]' |
		curl -sS -X POST --data-binary @- '$MOCK_URL/_mock/script?replace=1'"
	assert_output --partial 'need a when_prompt_* condition'
}

@test "validation: missing key / version / fields -> real errors, no step consumed" {
	echo '[{"text":"kept"}]' | mock_load
	run -0 curl -sS -o "$B" -w '%{http_code}' "$MOCK_URL/v1/messages" -H 'anthropic-version: 2023-06-01' -d "$ABODY"
	assert_output 401
	[ "$(jq -r .error.type "$B")" = authentication_error ]
	run -0 curl -sS -o "$B" -w '%{http_code}' "$MOCK_URL/v1/messages" -H 'x-api-key: k' -d "$ABODY"
	assert_output 400
	run -0 anth -d '{"model":"m","messages":[]}'
	assert_output 400
	[ "$(jq -r .error.message "$B")" = "max_tokens: Field required" ]
	run -0 anth -d '{"model":'
	assert_output 400
	run -0 curl -sS -o "$B" -w '%{http_code}' "$MOCK_URL/v1/chat/completions" -d "$OBODY"
	assert_output 401
	run -0 oai -d '{"messages":[]}'
	assert_output 400
	[ "$(jq -r .error.param "$B")" = model ]
	run -0 oai -d "$OBODY"
	assert_output 200
	[ "$(jq -r '.choices[0].message.content' "$B")" = kept ]
	run -0 curl -sS -o "$B" -w '%{http_code}' -X POST "$MOCK_URL/v1/nope" -H 'Authorization: Bearer k'
	assert_output 404
}

@test "validation: a tool call left unanswered, or a result that answers none, is the providers' 400; no step consumed" {
	echo '[{"text":"kept"}]' | mock_load
	local use='{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"f","input":{}},{"type":"tool_use","id":"toolu_2","name":"f","input":{}}]}'
	run -0 anth -d '{"model":"m","max_tokens":9,"messages":[{"role":"user","content":"hi"},'"$use"',
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"ok"},{"type":"text","text":"go on"}]}]}'
	assert_output 400
	[ "$(jq -r .error.message "$B")" = 'messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_2. Each `tool_use` block must have a corresponding `tool_result` block in the next message.' ]
	run -0 anth -d '{"model":"m","max_tokens":9,"messages":[{"role":"user","content":[{"type":"text","text":"hi"},{"type":"tool_result","tool_use_id":"toolu_9","content":"x"}]}]}'
	assert_output 400
	[ "$(jq -r .error.message "$B")" = 'messages.0.content.1: unexpected `tool_use_id` found in `tool_result` blocks: toolu_9. Each `tool_result` block must have a corresponding `tool_use` block in the previous message.' ]
	local calls='{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"f","arguments":"{}"}},{"id":"call_2","type":"function","function":{"name":"f","arguments":"{}"}}]}'
	run -0 oai -d '{"model":"m","messages":[{"role":"user","content":"hi"},'"$calls"',{"role":"tool","tool_call_id":"call_1","content":"ok"},{"role":"user","content":"go on"}]}'
	assert_output 400
	[ "$(jq -r .error.message "$B")" = "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: call_2" ]
	run -0 oai -d '{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"tool","tool_call_id":"call_1","content":"ok"}]}'
	assert_output 400
	# answered in full: served
	run -0 oai -d '{"model":"m","messages":[{"role":"user","content":"hi"},'"$calls"',{"role":"tool","tool_call_id":"call_2","content":"ok"},{"role":"tool","tool_call_id":"call_1","content":"ok"}]}'
	assert_output 200
	[ "$(jq -r '.choices[0].message.content' "$B")" = kept ]
}

@test "request log: every request, key redacted but hashed, flushed per request" {
	echo '[{"text":"one"},{"text":"two"}]' | mock_load
	before=$(wc -l <"$MOCK_LOG")
	run -0 anth -H 'x-stainless-retry-count: 0' -d "$ABODY"
	[ "$(wc -l <"$MOCK_LOG")" -eq $((before + 1)) ]
	run -0 oai -d "$OSTREAM"
	[ "$(wc -l <"$MOCK_LOG")" -eq $((before + 2)) ]
	! grep -q 'test-key' "$MOCK_LOG" || false
	sha=$(printf 'test-key' | sha256sum | cut -d' ' -f1)
	run -0 bash -c "tail -n 2 '$MOCK_LOG' | jq -c '[.method, .path, .provider, .auth, .auth_sha256 == \"$sha\", .headers[\"x-api-key\"] // .headers.authorization, .body.model, .stream, .status, (.ts_ms > 0)]'"
	assert_line --index 0 '["POST","/v1/messages","anthropic","present",true,"REDACTED","claude-haiku-4-5",false,200,true]'
	assert_line --index 1 '["POST","/v1/chat/completions","openai","present",true,"REDACTED","gpt-4o-mini",true,200,true]'
	# GET /_mock/requests is the same log
	run -0 bash -c "curl -sS '$MOCK_URL/_mock/requests' | jq -c '.[-1].seq'"
	assert_output "$(tail -n 1 "$MOCK_LOG" | jq -c .seq)"
	# a request without a key is logged as such
	run -0 curl -sS -o /dev/null "$MOCK_URL/v1/chat/completions" -d "$OBODY"
	run -0 bash -c "tail -n 1 '$MOCK_LOG' | jq -c '[.auth, .auth_sha256, .status]'"
	assert_output '["absent",null,401]'
}

@test "HTTP/1.1 keep-alive: curl reuses one connection for several requests" {
	echo '[{"text":"1"},{"text":"2","times":1},{"text":"3"}]' | mock_load
	run -0 --separate-stderr curl -sS -v -o /dev/null -o /dev/null -o /dev/null \
		-H 'x-api-key: k' -H 'anthropic-version: 2023-06-01' \
		-d "$ABODY" "$MOCK_URL/v1/messages" "$MOCK_URL/v1/messages" "$MOCK_URL/v1/messages"
	[[ "$stderr" == *"Re-using existing connection"* ]]
	[ "$(grep -c 'Connected to' <<<"$stderr")" = 1 ]
}

@test "lifecycle: --script file, atomic port file, SIGTERM exits 0; bad script exits 2" {
	d="$BATS_TEST_TMPDIR"
	python3 "$MOCK" --script "$MOCK_FIX/basic.json" --port-file "$d/port" --log "$d/log" 3>&- &
	pid=$!
	for _ in $(seq 100); do [ -s "$d/port" ] && break; sleep 0.05; done
	url="http://127.0.0.1:$(cat "$d/port")"
	run -0 curl -sS "$url/v1/messages" -H 'x-api-key: k' -H 'anthropic-version: 2023-06-01' -d "$ABODY"
	[ "$(jq -r '.content[0].text' <<<"$output")" = "Hello from basic.json" ]
	run -0 curl -sS "$url/v1/chat/completions" -H 'Authorization: Bearer k' -d "$OBODY"
	[ "$(jq -r '.choices[0].message.tool_calls[0].function.name' <<<"$output")" = read_file ]
	[ "$(wc -l <"$d/log")" = 2 ]
	ls "$d" | grep -v -q 'port.tmp' # no temp file left behind
	kill -TERM "$pid"
	rc=0
	wait "$pid" || rc=$?
	[ "$rc" -eq 0 ]
	echo '{"steps": 3}' >"$d/bad.json"
	run -2 --separate-stderr python3 "$MOCK" --script "$d/bad.json" --port-file "$d/port2"
	[[ "$stderr" == *"bad.json"* ]]
}

# sdk_install: install the pinned SDKs into tests/sdk/node_modules once
# (again only when package.json or package-lock.json change). Skips only when
# node/npm are missing or the npm registry cannot be reached.
sdk_install() {
	local dir="$FORGE_ROOT/tests/sdk" want stamp log net
	command -v node >/dev/null && command -v npm >/dev/null ||
		skip "node/npm not installed: official-SDK conformance check not run"
	want=$(cat "$dir/package.json" "$dir/package-lock.json" 2>/dev/null | sha256sum | cut -d' ' -f1)
	stamp="$dir/node_modules/.forge-stamp"
	[ "$(cat "$stamp" 2>/dev/null)" = "$want" ] && return 0
	log="$BATS_TEST_TMPDIR/npm.log"
	net='E(NOTFOUND|AI_AGAIN|CONNREFUSED|CONNRESET|TIMEDOUT|NETUNREACH|HOSTUNREACH)|ERR_SOCKET_TIMEOUT|npm error network'
	if ! HOME="$MOCK_REAL_HOME" timeout 300 npm install --prefix "$dir" --no-audit --no-fund \
		--no-update-notifier --prefer-offline --fetch-retries=1 --fetch-retry-mintimeout=1000 \
		--fetch-retry-maxtimeout=3000 --fetch-timeout=30000 >"$log" 2>&1; then
		if grep -qE "$net" "$log"; then
			skip "npm registry unreachable, SDKs not installed ($(grep -m1 -E "$net" "$log"))"
		fi
		cat "$log" >&2
		return 1
	fi
	echo "$want" >"$stamp"
}

@test "official SDKs (@anthropic-ai/sdk, openai) parse the mock and retry its 429s" {
	sdk_install
	run -0 --separate-stderr timeout 60 node "$FORGE_ROOT/tests/sdk/check.mjs" "$MOCK_URL"
	refute_output --partial 'not ok'
	assert_line --regexp '^1\.\.[0-9]+$'
}
