#!/usr/bin/env bats
# mcp.bats - MCP servers (mcp.servers): forge mcp list / call; a phase whose
# model calls an MCP tool (through the mock model, on the real wire format)
# and gets its result; a server that crashes, hangs or does not start (the
# phase goes on, with an event); tools.permissions deny / ask for MCP and
# built-in tools; no API key in a server's environment; ${VAR} only from the
# user's own configuration.  Against tests/helpers/mcp_server.py (scripted
# faults) and the official reference server @modelcontextprotocol/server-everything
# (scripts/mcp-ref installs it with npm; its tests are skipped without npm).

bats_require_minimum_version 1.5.0

load test_helper/mock
mock_per_file 120

setup() {
	load test_helper/common
	forge_setup
	calc_setup
	SERVER="$FORGE_ROOT/tests/helpers/mcp_server.py"
	SLOG="$BATS_TEST_TMPDIR/server.log"
	SENV="$BATS_TEST_TMPDIR/server.env"
	mkdir -p .forge "$XDG_CONFIG_HOME/forge"
	# the tests' servers are in the repository's config: the user trusts it
	echo '{"mcp":{"trust_project":true}}' >"$XDG_CONFIG_HOME/forge/config.json"
}

# servers JSON [MORE-JSON]: .forge/config.json with mcp.servers = JSON, MORE merged over it;
# no reflections (a tool error would ask the mock model for one).
servers() {
	jq -n --argjson s "$1" --argjson more "${2:-{\}}" '{mcp: {servers: $s}, memory: {reflect: false}} * $more' \
		>.forge/config.json
}

# scripted [ARGS-JSON] [EXTRA-KEYS-JSON]: the scripted server as "s", for plan.
scripted() {
	jq -n --arg cmd "$SERVER" --arg log "$SLOG" --arg envout "$SENV" --argjson args "${1:-[]}" \
		--argjson extra "${2:-{\}}" \
		'{s: ({command: $cmd, args: (["--log", $log, "--env-out", $envout] + $args), phases: ["plan"]} + $extra)}'
}

mock() {
	mock_script "$1"
	export FORGE_PROVIDER=anthropic FORGE_BASE_URL="$MOCK_URL" ANTHROPIC_API_KEY=sk-ant-mcp-test-key-0123456789
}

good_plan() {
	sed -n 3p "$CASSETTES/plan-calc.jsonl" | jq -c '.response.tool_calls[0].input'
}

# call_then_finish TOOL INPUT: the model calls TOOL, then finishes with a good plan.
call_then_finish() {
	mock "[{\"tool_calls\":[{\"name\":\"$1\",\"input\":$2}]},{\"tool_calls\":[{\"name\":\"finish\",\"input\":$(good_plan)}]}]"
}

# The tool names offered in the model's first request.
offered() {
	curl -sS -f "$MOCK_URL/_mock/requests" | jq -c '[.[0].body.tools[].name]'
}

# What the model got back for its tool call: [is_error, text].
tool_answer() {
	curl -sS -f "$MOCK_URL/_mock/requests" |
		jq -c '.[1].body.messages | last | .content[0] | [(.is_error // false), (.content | if type == "array" then map(.text) | join("") else . end)]'
}

# plan STATUS: forge-plan on the task, its stdout kept in $EVENTS for `event`.
plan() {
	run "-$1" --separate-stderr forge-plan --task "add a mul operation"
	EVENTS=$output
}

# event TYPE: the payloads of the events of that type of the last plan (or of $output).
event() {
	jq -c "select(.kind == \"event\" and .type == \"$1\") | .payload" <<<"${EVENTS:-$output}"
}

received() {
	jq -r '.method // "(answer)"' "$SLOG" | paste -sd' '
}

reference_server() {
	command -v npm >/dev/null || skip "npm is not installed: the reference MCP server cannot be installed"
	# one copy for every test and run (forge_setup gave the tests a HOME of their own)
	FORGE_TEST_CACHE=${FORGE_TEST_CACHE:-$(getent passwd "$(id -u)" | cut -d: -f6)/.cache/forge-test}
	export FORGE_TEST_CACHE
	REF=$("$FORGE_ROOT/scripts/mcp-ref")
}

# ---- forge mcp ---------------------------------------------------------------

@test "forge mcp list: each server's state and its tools as the model sees them" {
	servers "$(jq -n --arg cmd "$SERVER" '{s: {command: $cmd}, broken: {command: $cmd, args: ["--on-init", "crash"]},
		off: {command: "nowhere", enabled: false}}')"
	run -0 --separate-stderr forge mcp list --json
	echo "$output" | jq -e '.[0].name == "s" and .[0].state == "running" and .[0].protocol == "2025-06-18"
		and (.[0].tools | length) == 11 and .[0].tools[0] == {"name":"s__echo","tool":"echo","description":"Echo the text back."}'
	echo "$output" | jq -e '.[1].state == "failed" and (.[1].error | test("exited with status 1; its stderr: mcp_server.py: cannot start: no configuration"))'
	echo "$output" | jq -e '.[2].state == "disabled" and .[2].tools == []'
	[[ "$stderr" == *"warning: MCP server 'broken' exited with status 1"*"going on without its tools"* ]]
	run -0 --separate-stderr forge mcp list
	assert_line --index 0 "s  running (protocol 2025-06-18)"
	assert_output --partial "  s__add                           Add two numbers."
	assert_output --partial "off  disabled"
	rm .forge/config.json
	run -0 forge mcp list
	assert_output "no MCP servers configured (mcp.servers)"
}

@test "forge mcp: --config is read and checked as by every program; --db is taken, opens nothing, and --help says so" {
	# (before: --help listed --db as "the database" and nothing said it was not used)
	run -0 --separate-stderr forge-mcp --help
	assert_output --partial "--db
is taken and not opened: a server tried here is not a run, nothing is
recorded in the database."
	run -2 --separate-stderr forge-mcp list --config "$BATS_TEST_TMPDIR/nosuch.json"
	[ "$stderr" = "forge-mcp: cannot open '$BATS_TEST_TMPDIR/nosuch.json': No such file or directory" ]
	servers "$(jq -n --arg cmd "$SERVER" '{s: {command: $cmd}}')"
	run -0 --separate-stderr forge --db "$BATS_TEST_TMPDIR/no/such/dir/x.db" mcp call s echo '{"text":"hi"}'
	assert_output "hi"
	[ ! -e "$BATS_TEST_TMPDIR/no" ]
}

@test "forge mcp list: a description over 16 KiB is cut (on a character), a tool whose schema is over 64 KiB is left out, with warnings" {
	jq -n '[{name: "long", description: ("d" + "é" * 10000), inputSchema: {type: "object"}},
		{name: "wide", description: "A huge schema.", inputSchema: {type: "object", properties: {x: {type: "string", description: ("s" * 70000)}}}},
		{name: "fits", description: ("é" * 8192), inputSchema: {type: "object", properties: {x: {type: "string", description: ("s" * 60000)}}}}]' \
		>"$BATS_TEST_TMPDIR/extra.json"
	servers "$(scripted "$(jq -nc --arg f "$BATS_TEST_TMPDIR/extra.json" '["--extra-tools", $f]')")"
	run -0 --separate-stderr forge mcp list --json
	echo "$output" | jq -e '.[0].tools | map(.tool) | index("wide") == null and index("long") != null and index("fits") != null'
	echo "$output" | jq -e '.[0].tools[] | select(.tool == "long") | .description == "d" + ("é" * 8191) + "…"'
	echo "$output" | jq -e '.[0].tools[] | select(.tool == "fits") | .description == "é" * 8192'
	[[ "$stderr" == *"warning: MCP server 's': the description of tool 'long' is 20001 bytes; only its first 16384 are offered"* ]]
	[[ "$stderr" == *"warning: MCP server 's': tool 'wide' is left out: its input schema is 700"*" bytes of JSON, over the 65536 Forge offers a model"* ]]
	[[ "$stderr" != *"'fits'"* ]]
}

@test "a tools/list pager that goes round: its tools once, one warning that the list is cut" {
	servers "$(scripted '["--pager", "loop"]')"
	run -0 --separate-stderr forge mcp list --json
	echo "$output" | jq -e '.[0].tools | length == 11'
	# (before: 1000 pages read, and a warning for each repeated tool)
	[ "$stderr" = "forge-mcp: warning: MCP server 's': tools/list gave the nextCursor '2' a second time (after 6 pages); its tool list is cut there" ]
	[ "$(grep -c '"method": "tools/list"' "$SLOG")" -eq 6 ]
}

@test "a tool whose input schema is no JSON Schema is left out (warning, forge mcp list); one with a keyword Forge does not implement is offered" {
	jq -n '[{name: "bad", description: "Broken.", inputSchema: {type: "object", properties: "nope", required: "x"}},
		{name: "typo", inputSchema: {type: "object", properties: {a: {type: "strng"}}}},
		{name: "iffy", description: "Uses if/then.", inputSchema: {type: "object", if: {required: ["a"]}, then: {required: ["b"]}}}]' \
		>"$BATS_TEST_TMPDIR/extra.json"
	servers "$(scripted "$(jq -nc --arg f "$BATS_TEST_TMPDIR/extra.json" '["--extra-tools", $f]')")"
	run -0 --separate-stderr forge mcp list --json
	echo "$output" | jq -e '.[0].tools | map(.tool) | index("bad") == null and index("typo") == null and index("iffy") != null'
	echo "$output" | jq -e '.[0].refused == [
		{"tool": "bad", "reason": "its input schema is not a valid JSON Schema: #: '"'properties'"' must be an object of schemas"},
		{"tool": "typo", "reason": "its input schema is not a valid JSON Schema: #/properties/a: unknown type '"'strng'"'"}]'
	[[ "$stderr" == *"warning: MCP server 's': tool 'bad' is left out: its input schema is not a valid JSON Schema: #: 'properties' must be an object of schemas"* ]]
	[[ "$stderr" == *"warning: MCP server 's': tool 'typo' is left out: its input schema is not a valid JSON Schema: #/properties/a: unknown type 'strng'"* ]]
	run -0 --separate-stderr forge mcp list
	assert_line "  (left out) bad: its input schema is not a valid JSON Schema: #: 'properties' must be an object of schemas"
	# the model is offered neither: a provider refuses every request such a schema is in (before: exit 5)
	mock "[{\"tool_calls\":[{\"name\":\"finish\",\"input\":$(good_plan)}]}]"
	plan 0
	run -0 offered
	assert_output '["read_file","list_files","grep","delegate","s__echo","s__add","s__fail","s__env","s__hang","s__crash","s__rpc_error","s__garbage","s__change","s__big","s__ping_me","s__iffy","finish","ask_human"]'
	event mcp.tool.refused | jq -s -e 'map(.tool) == ["bad", "typo"] and .[0].server == "s"
		and (.[0].reason | startswith("its input schema is not a valid JSON Schema"))'
}

@test "a model call offers at most 128 tools: the phase's own all, the MCP tools past the cap left out with a warning" {
	jq -n '[range(200) | {name: "t\(.)", inputSchema: {type: "object"}}]' >"$BATS_TEST_TMPDIR/extra.json"
	servers "$(scripted "$(jq -nc --arg f "$BATS_TEST_TMPDIR/extra.json" '["--extra-tools", $f, "--page-size", "100"]')")"
	mock "[{\"tool_calls\":[{\"name\":\"finish\",\"input\":$(good_plan)}]}]"
	plan 0
	run -0 offered
	# 4 of the phase's, 122 MCP tools (the 11 and t0..t110), finish and ask_human
	echo "$output" | jq -e 'length == 128 and .[:5] == ["read_file","list_files","grep","delegate","s__echo"]
		and .[-3:] == ["s__t110","finish","ask_human"]'
	[[ "$stderr" == *"forge-plan: warning: MCP server 's': 89 of its tools are left out: a model call offers at most 128 tools (OpenAI's limit), Forge's own 6 first and the tools listed before these"* ]]
	[ "$(grep -c "left out" <<<"$stderr")" -eq 1 ]
	event mcp.tool.refused | jq -s -e 'length == 89 and .[0].tool == "t111" and .[88].tool == "t199"
		and .[0].reason == "a model call offers at most 128 tools (OpenAI'"'"'s limit)"'
}

@test "a provider's refusal that names a tool by its index names the tool too" {
	servers "$(scripted)"
	mock '[{"fault":"bad_request","message":"tools.4.custom.input_schema: JSON schema is invalid. It must match JSON Schema draft 2020-12."}]'
	plan 5
	[[ "$stderr" == *"tools.4.custom.input_schema: JSON schema is invalid. It must match JSON Schema draft 2020-12. (tools.4 is the tool 's__echo')"* ]]
	mock_script '[{"fault":"bad_request","message":"Invalid '"'tools[5].function.parameters'"': array schema missing items."}]'
	export FORGE_PROVIDER=openai FORGE_BASE_URL="$MOCK_URL/v1" OPENAI_API_KEY=sk-mcp-test-openai-0123456789
	plan 5
	[[ "$stderr" == *"Invalid 'tools[5].function.parameters': array schema missing items. (tools[5] is the tool 's__add')"* ]]
}

@test "a tool name with a newline is shown on one line in warnings (no forged output lines)" {
	jq -n '[{name: ("o\nforge-plan: failed: FAKE LINE " + ("x" * 60)), inputSchema: {type: "object"}},
		{name: "d\nforge-plan: failed: FAKE TOO", description: ("d" * 17000), inputSchema: {type: "object"}}]' \
		>"$BATS_TEST_TMPDIR/extra.json"
	servers "$(scripted "$(jq -nc --arg f "$BATS_TEST_TMPDIR/extra.json" '["--extra-tools", $f]')")"
	run -0 --separate-stderr forge mcp list
	[[ "$stderr" == *"warning: MCP server 's': tool 'o forge-plan: failed: FAKE LINE xxx"*"' is left out: the name s__o_forge-plan"* ]]
	[[ "$stderr" == *"warning: MCP server 's': the description of tool 'd forge-plan: failed: FAKE TOO' is 17000 bytes"* ]]
	run -1 grep -c "^forge-plan" <<<"$stderr"
	run -2 --separate-stderr forge mcp call s nope
	[[ "$stderr" == *"; its tools: echo, "*", o forge-plan: failed: FAKE LINE xxx"* ]]
	[ "$(wc -l <<<"$stderr")" -eq 1 ]
}

@test "an API key a server echoes on stderr is redacted in warnings, forge mcp list and call, as in the events" {
	export OPENAI_API_KEY=sk-proj-mcp-test-OPENAISECRET-987654321
	# the usual setup of a server that calls OpenAI itself: the key in its env, from the user's config
	jq -n '{mcp: {servers: {s: {command: "/bin/sh", args: ["-c", "echo auth failed for key $OPENAI_API_KEY >&2; exit 1"],
		env: {OPENAI_API_KEY: "${OPENAI_API_KEY}"}}}}, memory: {reflect: false}}' >"$XDG_CONFIG_HOME/forge/config.json"
	rm -f .forge/config.json
	run -0 --separate-stderr forge mcp list
	assert_line "s  failed: MCP server 's' exited with status 1; its stderr: auth failed for key [REDACTED]"
	[[ "$stderr" == *"warning: MCP server 's' exited with status 1; its stderr: auth failed for key [REDACTED]; going on"* ]]
	run -0 --separate-stderr forge mcp list --json
	echo "$output" | jq -e '.[0].error == "MCP server '"'s'"' exited with status 1; its stderr: auth failed for key [REDACTED]"'
	[[ "$output$stderr" != *OPENAISECRET* ]]
	run -5 --separate-stderr forge mcp call s echo '{"text":"x"}'
	[[ "$stderr" == *"auth failed for key [REDACTED]"* && "$stderr" != *OPENAISECRET* ]]
	mock "[{\"tool_calls\":[{\"name\":\"finish\",\"input\":$(good_plan)}]}]"
	plan 0
	[[ "$stderr" == *"forge-plan: warning: MCP server 's' exited with status 1; its stderr: auth failed for key [REDACTED]"* ]]
	[[ "$stderr$output" != *OPENAISECRET* ]]
	# a tool's answer that holds it: redacted too
	jq -n --arg cmd "$SERVER" '{mcp: {servers: {s: {command: $cmd, env: {OPENAI_API_KEY: "${OPENAI_API_KEY}"}}}}}' \
		>"$XDG_CONFIG_HOME/forge/config.json"
	run -0 --separate-stderr forge mcp call s env '{"name":"OPENAI_API_KEY"}'
	assert_output "[REDACTED]"
	run -0 --separate-stderr forge mcp call s env '{"name":"OPENAI_API_KEY"}' --json
	echo "$output" | jq -e '.content[0].text == "[REDACTED]"'
}

@test "a tool listed too deep for Forge to read is left out alone; an answer too deep fails that call alone" {
	python3 -c 'import json; s = {}
for i in range(200): s = {"not": s}
print(json.dumps([{"name": "deep", "inputSchema": s}, {"name": "after", "inputSchema": {"type": "object"}}]))' \
		>"$BATS_TEST_TMPDIR/extra.json"
	servers "$(scripted "$(jq -nc --arg f "$BATS_TEST_TMPDIR/extra.json" '["--extra-tools", $f, "--page-size", "20"]')")"
	run -0 --separate-stderr forge mcp list --json
	echo "$output" | jq -e '.[0].state == "running" and (.[0].tools | map(.tool) | index("after") != null and index("deep") == null)'
	echo "$output" | jq -e '.[0].refused[0] == {"tool": "deep", "reason": "its definition nests deeper than the 256 levels Forge reads (an array counts 1, an object 2) at inputSchema"}'
	run -5 --separate-stderr forge mcp call s deep '{"levels":300}'
	[ "$stderr" = "forge-mcp: MCP server 's': tools/call: its answer nests deeper than the 256 levels Forge reads (an array counts 1, an object 2) (at result.structuredContent.a[0]); the server stays usable" ]
	# in a phase: the call fails, the server stays, the next call works
	mock "[{\"tool_calls\":[{\"name\":\"s__after\",\"input\":{}}]},{\"tool_calls\":[{\"name\":\"s__echo\",\"input\":{\"text\":\"still here\"}}]},{\"tool_calls\":[{\"name\":\"finish\",\"input\":$(good_plan)}]}]"
	plan 0
	[ -z "$(event mcp.server.failed)" ]
	event tool.executed | jq -e 'select(.tool == "s__echo") | .kind == "ok"'
}

@test "what a server writes reaches the terminal without control characters: descriptions, its stderr in warnings and errors" {
	esc=$'\e]0;PWNED\a\e[2J\e[31mred\e[0m'
	jq -n --arg d "$esc" '[{name: "t", description: $d, inputSchema: {type: "object"}}]' >"$BATS_TEST_TMPDIR/extra.json"
	servers "$(jq -n --arg cmd "$SERVER" --arg f "$BATS_TEST_TMPDIR/extra.json" --arg e "$esc" '{
		s: {command: $cmd, args: ["--extra-tools", $f, "--stderr", $e]},
		b: {command: $cmd, args: ["--on-init", "crash", "--stderr", $e]}}')"
	run -0 --separate-stderr forge mcp list
	assert_line --regexp '^  s__t + \]0;PWNED  \[2J \[31mred \[0m$'
	assert_output --partial "b  failed: MCP server 'b' exited with status 1; its stderr:  ]0;PWNED  [2J [31mred [0m"
	[[ "$stderr" == *"warning: MCP server 'b' exited with status 1; its stderr:  ]0;PWNED  [2J [31mred [0m"* ]]
	[[ "$output$stderr" != *$'\e'* && "$output$stderr" != *$'\a'* ]]
	# --json keeps them, escaped as JSON does
	run -0 --separate-stderr forge mcp list --json
	echo "$output" | jq -e --arg e "$esc" '.[] | select(.name == "s") | .tools[] | select(.tool == "t") | .description == $e'
	run -5 --separate-stderr forge mcp call s crash
	[[ "$stderr" == "forge-mcp: MCP server 's' exited with status 3; its stderr:  ]0;PWNED  [2J [31mred [0m"* ]]
	[[ "$stderr" != *$'\e'* ]]
	mock "[{\"tool_calls\":[{\"name\":\"finish\",\"input\":$(good_plan)}]}]"
	plan 0
	[[ "$stderr" == *"forge-plan: warning: MCP server 'b' exited with status 1; its stderr:  ]0;PWNED"* ]]
	[[ "$stderr" != *$'\e'* ]]
}

@test "forge mcp call: text (a NUL in it, a batch) and structured results; exit 1 for a tool error, 2 for bad input, 5 for a failed server" {
	servers "$(jq -n --arg cmd "$SERVER" '{s: {command: $cmd}, h: {command: $cmd, timeout_s: 0.5}}')"
	run -0 --separate-stderr forge mcp call s echo '{"text":"hello"}'
	assert_output "hello"
	# a 2025-03-26 server may answer in a JSON-RPC batch: read message by message
	servers "$(jq -n --arg cmd "$SERVER" '{s: {command: $cmd, args: ["--protocol", "2025-03-26", "--batch", "yes"]}}')"
	run -0 --separate-stderr forge mcp call s echo '{"text":"in a batch"}'
	assert_output "in a batch"
	servers "$(jq -n --arg cmd "$SERVER" '{s: {command: $cmd}, h: {command: $cmd, timeout_s: 0.5}}')"
	# a NUL in the text is shown, not the end of it
	run -0 --separate-stderr forge mcp call s echo '{"text":"line 1\u0000line 2"}'
	assert_output 'line 1\u0000line 2'
	run -0 --separate-stderr forge mcp call s s__add '{"a":2,"b":40}' --json
	echo "$output" | jq -e '.structuredContent == {"sum":42} and .isError == false'
	run -1 --separate-stderr forge mcp call s fail
	assert_output "the tool failed on purpose"
	[ "$stderr" = "forge-mcp: s__fail reported an error" ]
	run -2 --separate-stderr forge mcp call s echo '[1,2]'
	[ "$stderr" = "forge-mcp: the arguments must be a JSON object: not an object" ]
	run -2 --separate-stderr forge mcp call s nope
	[[ "$stderr" == "forge-mcp: MCP server 's' has no tool 'nope'; its tools: echo, add, fail,"* ]]
	run -2 --separate-stderr forge mcp call t echo
	[ "$stderr" = "forge-mcp: no MCP server called 't' in mcp.servers (forge mcp list shows them)" ]
	run -2 --separate-stderr forge mcp call s
	run -5 --separate-stderr forge mcp call s crash
	[[ "$stderr" == "forge-mcp: MCP server 's' exited with status 3; its stderr: mcp_server.py: crashing as asked" ]]
	run -5 --separate-stderr forge mcp call h hang
	[ "$stderr" = "forge-mcp: MCP server 'h': tools/call: no answer within 0.5 s; cancelled" ]
	run -5 --separate-stderr forge mcp call s rpc_error
	[[ "$stderr" == *"tools/call failed: the server refuses (JSON-RPC error -32000)"* ]]
	# a reply whose result is null said nothing (before: an empty answer, exit 0)
	run -5 --separate-stderr forge mcp call s rpc_error '{"null_result":true}'
	[ "$stderr" = "forge-mcp: MCP server 's': tools/call answered without a result object" ]
}

@test "forge mcp call: a server that dies while a process it left holds its stderr open: exit 5 at once, not a hang" {
	# a launcher that leaves a helper behind (shells, npx): the helper holds
	# the server's stderr (before: forge read stderr to its end, for ever)
	printf '#!/bin/sh\nsleep 300 </dev/null >/dev/null &\necho $! >"%s/helper.pid"\nexec "%s"\n' \
		"$BATS_TEST_TMPDIR" "$SERVER" >"$BATS_TEST_TMPDIR/wrap.sh"
	chmod +x "$BATS_TEST_TMPDIR/wrap.sh"
	servers "$(jq -n --arg cmd "$BATS_TEST_TMPDIR/wrap.sh" '{w: {command: $cmd, timeout_s: 60}}')"
	run -5 --separate-stderr timeout 30 forge mcp call w crash
	[[ "$stderr" == "forge-mcp: MCP server 'w' exited with status 3; its stderr: mcp_server.py: crashing as asked" ]]
	kill "$(cat "$BATS_TEST_TMPDIR/helper.pid")" 2>/dev/null || true
}

# ---- a phase calling MCP tools -------------------------------------------------

@test "forge-plan: the model calls an MCP tool and gets its result; events say which server, how long, how big" {
	servers "$(scripted)"
	call_then_finish s__echo '{"text":"from the server"}'
	plan 0
	run -0 offered
	assert_output '["read_file","list_files","grep","delegate","s__echo","s__add","s__fail","s__env","s__hang","s__crash","s__rpc_error","s__garbage","s__change","s__big","s__ping_me","finish","ask_human"]'
	run -0 tool_answer
	assert_output '[false,"from the server"]'
	event mcp.server.started | jq -e '.server == "s" and .protocol == "2025-06-18" and .tools == 11 and .server_info.name == "scripted"'
	event tool.executed | jq -e '.tool == "s__echo" and .kind == "ok" and .output_bytes == 15
		and .data.server == "s" and .data.tool == "echo" and .data.truncated == false and (.duration_ms | type) == "number"'
	event mcp.server.stopped | jq -e '.server == "s" and .status == 0'
	# the server ran in the repository (plan has no worktree) and was told we are initialized
	grep -qx "PWD_IS=$REPO" "$SENV"
	[[ "$(received)" == "initialize notifications/initialized tools/list"*"tools/call" ]]
}

@test "forge-plan: structured content reaches the model; an MCP tool error is a tool error; long output is capped like run_command's" {
	servers "$(scripted)" '{"sandbox":{"output_cap_bytes":2000}}'
	call_then_finish s__add '{"a":1,"b":2}'
	plan 0
	run -0 tool_answer
	assert_output '[false,"{\"sum\": 3}"]'
	call_then_finish s__fail '{}'
	plan 0
	event tool.failed | jq -e '.tool == "s__fail" and .kind == "failed" and .error == "the tool failed on purpose"'
	call_then_finish s__big '{"bytes":5000}'
	plan 0
	event tool.executed | jq -e '.tool == "s__big" and .data.output_bytes == 5000 and .data.truncated == true'
	run -0 tool_answer
	[[ "$output" == *"[… 3000 bytes omitted …]"* ]]
	# input checked against the server's schema before the call
	rm "$SLOG"
	call_then_finish s__add '{"a":"one"}'
	plan 0
	event tool.failed | jq -e '.kind == "input" and (.error | startswith("s__add: invalid input: "))'
	! grep -q '"tools/call"' "$SLOG" || false
}

@test "forge-plan: a server that crashes mid-call is reported and the phase goes on without it" {
	servers "$(scripted)"
	mock "[{\"tool_calls\":[{\"name\":\"s__crash\",\"input\":{}}]},{\"tool_calls\":[{\"name\":\"s__echo\",\"input\":{\"text\":\"again\"}}]},{\"tool_calls\":[{\"name\":\"finish\",\"input\":$(good_plan)}]}]"
	plan 0
	event mcp.server.failed | jq -e '.server == "s" and .during == "crash" and .error == "MCP server '"'s'"' exited with status 3; its stderr: mcp_server.py: crashing as asked"
		and .stderr == "mcp_server.py: crashing as asked\n"'
	event tool.failed | jq -s -e '.[0].tool == "s__crash" and .[0].data.error == "dead"
		and .[1].tool == "s__echo" and (.[1].error | test("the MCP server .s. is not running: MCP server .s. exited with status 3"))'
	[[ "$stderr" == *"forge-plan: warning: during a call: MCP server 's' exited with status 3"*"going on without its tools"* ]]
	[ "$(tail -n 1 <<<"$output" | jq -r .status)" = ok ]
	[ -z "$(event mcp.server.stopped)" ]
}

@test "forge-plan: a server that does not start, or speaks an unknown protocol version, leaves the phase without its tools" {
	servers "$(scripted '["--on-init","garbage"]')"
	mock "[{\"tool_calls\":[{\"name\":\"finish\",\"input\":$(good_plan)}]}]"
	plan 0
	event mcp.server.failed | jq -e '.error | test("wrote something that is not a JSON-RPC message on stdout: .Starting server... done!.")'
	run -0 offered
	assert_output '["read_file","list_files","grep","delegate","finish","ask_human"]'
	servers "$(scripted '["--protocol","1999-01-01"]')"
	mock "[{\"tool_calls\":[{\"name\":\"finish\",\"input\":$(good_plan)}]}]"
	plan 0
	event mcp.server.failed | jq -e '.error | test("speaks protocol version .1999-01-01., which Forge does not support")'
}

@test "forge-plan: a hanging call times out (timeout_s), is cancelled, and the server stays usable" {
	# long enough for any answer of a loaded machine, short enough for a test
	servers "$(scripted '[]' '{"timeout_s":2}')"
	mock "[{\"tool_calls\":[{\"name\":\"s__hang\",\"input\":{}}]},{\"tool_calls\":[{\"name\":\"s__echo\",\"input\":{\"text\":\"still here\"}}]},{\"tool_calls\":[{\"name\":\"finish\",\"input\":$(good_plan)}]}]"
	plan 0
	event tool.failed | jq -e '.tool == "s__hang" and .data.error == "timeout" and (.error | test("no answer within 2 s; cancelled"))'
	event tool.executed | jq -e '.tool == "s__echo"'
	[[ "$(received)" == *"tools/call notifications/cancelled tools/call"* ]]
	jq -s -e 'map(select(.method == "notifications/cancelled")) | length == 1
		and .[0].params.requestId == 8 and .[0].params.reason == "no answer within 2 s"' "$SLOG"
}

@test "servers that stay past their stdin's end and SIGTERM are stopped all at once, not one after another" {
	servers "$(jq -n --arg cmd "$SERVER" --arg log "$SLOG" '[("a", "b", "c") | {key: ., value: {command: $cmd,
		args: ["--log", $log, "--stubborn", "yes", "--tag", .]}}] | from_entries')"
	run -0 --separate-stderr forge mcp list --json
	echo "$output" | jq -e 'map(.state) == ["running", "running", "running"]'
	# every stdin closed before any SIGTERM (before: a's EOF, a's SIGTERM, then b's
	# EOF once a was killed, ...: 4 s a server); what they saw, not how long it took
	run -0 jq -r 'select(.event) | .event' "$SLOG"
	[ "$(paste -sd' ' <<<"$output")" = "eof eof eof sigterm sigterm sigterm" ]
}

# wait_gone PID: polls (up to 10 s) until the process is gone, or a zombie its new parent has yet to reap.
wait_gone() {
	for _ in $(seq 100); do
		kill -0 "$1" 2>/dev/null || return 0
		[ "$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -c1)" = Z ] && return 0
		sleep 0.1
	done
	echo "process $1 is still running: $(ps -o pid=,ppid=,args= -p "$1")" >&2
	return 1
}

# plan_signalled_mid_call SIG STATUS: forge-plan in the background gets
# SIG once its server has the tools/call (polled, bounded), and ends with
# STATUS.
plan_signalled_mid_call() {
	local fp rc=0
	forge-plan --task "add a mul operation" >"$BATS_TEST_TMPDIR/out" 2>"$BATS_TEST_TMPDIR/err" &
	fp=$!
	for _ in $(seq 300); do grep -q '"tools/call"' "$SLOG" 2>/dev/null && break; sleep 0.1; done
	grep -q '"tools/call"' "$SLOG"
	kill "-$1" "$fp"
	wait "$fp" || rc=$?
	[ "$rc" -eq "$2" ]
}

@test "a phase's servers and what they started never outlive it: at its end, and when interrupted (a server that ignores SIGTERM)" {
	PIDS="$BATS_TEST_TMPDIR/pids"
	servers "$(scripted "$(jq -nc --arg p "$PIDS" '["--pid-out", $p]')")"
	mock "[{\"tool_calls\":[{\"name\":\"finish\",\"input\":$(good_plan)}]}]"
	plan 0
	# at its end: the server leaves on EOF; the job it started goes with it
	wait_gone "$(sed -n 1p "$PIDS")"
	wait_gone "$(sed -n 2p "$PIDS")"
	# interrupted during a call, with a server that ignores SIGTERM and EOF
	rm "$PIDS" "$SLOG"
	servers "$(scripted "$(jq -nc --arg p "$PIDS" '["--pid-out", $p, "--stubborn", "yes"]')")"
	call_then_finish s__hang '{}'
	plan_signalled_mid_call INT 130
	wait_gone "$(sed -n 1p "$PIDS")"
	wait_gone "$(sed -n 2p "$PIDS")"
}

@test "a server that ignores SIGTERM and EOF: gone after the phase's normal end, and when the phase is killed by SIGKILL" {
	PIDS="$BATS_TEST_TMPDIR/pids"
	servers "$(scripted "$(jq -nc --arg p "$PIDS" '["--pid-out", $p, "--stubborn", "yes"]')")"
	# normal end: stdin closed, SIGTERM, then SIGKILL after the grace; reaped before forge-plan exits
	mock "[{\"tool_calls\":[{\"name\":\"finish\",\"input\":$(good_plan)}]}]"
	plan 0
	wait_gone "$(sed -n 1p "$PIDS")"
	wait_gone "$(sed -n 2p "$PIDS")"
	# forge-plan killed by SIGKILL during a call: nothing of it runs to stop the server
	# (PR_SET_PDEATHSIG must be SIGKILL, which a server cannot ignore)
	rm "$PIDS" "$SLOG"
	call_then_finish s__hang '{}'
	plan_signalled_mid_call KILL 137
	# and what the server started, which PR_SET_PDEATHSIG does not reach:
	# its init, gone too, takes it along (os/spawn.h, CONTAIN)
	wait_gone "$(sed -n 1p "$PIDS")" || { kill -KILL "$(sed -n 1p "$PIDS")"; false; }
	wait_gone "$(sed -n 2p "$PIDS")" || { kill -KILL "$(sed -n 2p "$PIDS")"; false; }
}

# launched_tree_killed [RUNNER...]: `forge mcp call s hang` (through RUNNER:
# setpriv, unshare) on a server run as `sh -c 'python3 ...; :'`, a launcher
# as `npx` or `uvx` is: the launcher stays, the server is its child.  The
# server starts a job (sleep), the launcher a detached one (setsid); the
# server ignores SIGTERM and its stdin's end.  Forge is killed by SIGKILL
# once the server has the call: nothing of the tree may be left (polled,
# bounded).  $NS: "own" when the launcher was in a PID namespace of its
# own, "shared" when in Forge's.
launched_tree_killed() {
	local fp pids=() p rc=0
	PIDS="$BATS_TEST_TMPDIR/pids" DPID="$BATS_TEST_TMPDIR/detached.pid" NSF="$BATS_TEST_TMPDIR/ns"
	# shellcheck disable=SC2016 # (the launcher's script, expanded by its sh)
	servers "$(jq -n --arg server "$SERVER" --arg log "$SLOG" --arg pids "$PIDS" --arg dpid "$DPID" --arg ns "$NSF" \
		'{s: {command: "sh", args: ["-c", "readlink /proc/self/ns/pid >\"$5\"
setsid sh -c '"'"'read p _ </proc/self/stat; echo $p >\"$0.tmp\"; mv \"$0.tmp\" \"$0\"; exec sleep 300'"'"' \"$4\" &
python3 \"$1\" --log \"$2\" --pid-out \"$3\" --stubborn yes; :", "sh", $server, $log, $pids, $dpid, $ns]}}')"
	"$@" forge mcp call s hang >"$BATS_TEST_TMPDIR/out" 2>"$BATS_TEST_TMPDIR/err" &
	fp=$!
	for _ in $(seq 300); do
		grep -q '"tools/call"' "$SLOG" 2>/dev/null && [ -s "$DPID" ] && break
		sleep 0.1
	done
	grep -q '"tools/call"' "$SLOG"
	[ "$(readlink "/proc/$fp/ns/pid")" = "$(cat "$NSF")" ] && NS=shared || NS=own
	pids=("$(sed -n 1p "$PIDS")" "$(sed -n 2p "$PIDS")" "$(cat "$DPID")")
	kill -KILL "$fp"
	wait "$fp" || rc=$?
	[ "$rc" -eq 137 ]
	for p in "${pids[@]}"; do
		wait_gone "$p" || { kill -KILL "${pids[@]}" 2>/dev/null; false; }
	done
}

@test "forge killed by SIGKILL: a server run by a launcher (sh -c), its job and what it detached are gone (root: PID namespace)" {
	[ "$(id -u)" = 0 ] || skip "not running as root"
	launched_tree_killed
	[ "$NS" = own ]
}

@test "forge killed by SIGKILL, as a user: the server's whole tree is gone (its own PID namespace in a user namespace)" {
	[ "$(id -u)" = 0 ] || skip "needs root to switch to nobody"
	command -v setpriv >/dev/null || skip "setpriv is not installed"
	setpriv --reuid=65534 --regid=65534 --clear-groups true || skip "cannot switch to nobody here"
	setpriv --reuid=65534 --regid=65534 --clear-groups unshare -Upf true 2>/dev/null ||
		skip "no user namespaces for nobody here"
	# nobody passes through the test's directories (bats makes them 700) and writes its files
	local d="$BATS_TEST_TMPDIR"
	while [ "$d" != / ] && [ -n "$d" ]; do chmod a+x "$d"; d=${d%/*}; done
	chown -R 65534:65534 "$BATS_TEST_TMPDIR"
	# (and a TMPDIR nobody may write in: the suite's may be root's, 0711)
	launched_tree_killed setpriv --reuid=65534 --regid=65534 --clear-groups env TMPDIR="$BATS_TEST_TMPDIR"
	[ "$NS" = own ]
}

@test "forge killed by SIGKILL where no namespace can be made: the server's init (a subreaper) ends the whole tree" {
	command -v unshare >/dev/null || skip "unshare is not installed"
	# (a user namespace whose limits allow no further PID or user namespace)
	local nons=(unshare -Ur sh -c 'echo 0 >/proc/sys/user/max_pid_namespaces && echo 0 >/proc/sys/user/max_user_namespaces && exec "$@"' sh)
	"${nons[@]}" true 2>/dev/null || skip "cannot limit the namespaces here: $("${nons[@]}" true 2>&1)"
	launched_tree_killed "${nons[@]}"
	[ "$NS" = shared ]
}

# ---- permissions ------------------------------------------------------------------

@test "tools.permissions: a denied MCP tool is not offered and a call to it is refused; glob deny of a built-in tool" {
	servers "$(scripted)" '{"tools":{"permissions":{"plan":{"deny":["s__env","s__h*","grep"]}}}}'
	call_then_finish s__env '{}'
	plan 0
	run -0 offered
	assert_output '["read_file","list_files","delegate","s__echo","s__add","s__fail","s__crash","s__rpc_error","s__garbage","s__change","s__big","s__ping_me","finish","ask_human"]'
	run -0 tool_answer
	assert_output '[true,"s__env: refused: the tool is not allowed in plan (tools.permissions.plan.deny)"]'
	event tool.failed | jq -e '.tool == "s__env" and .kind == "denied"'
	! grep -q '"tools/call"' "$SLOG" || false
}

@test "tools.permissions: an allow list allows only what it names; default applies to every phase; deny wins over ask over allow" {
	servers "$(scripted)" '{"tools":{"permissions":{"default":{"deny":["s__fail"]},"plan":{"allow":["read_file","s__*"],"ask":["s__add"]}}}}'
	mock "[{\"tool_calls\":[{\"name\":\"finish\",\"input\":$(good_plan)}]}]"
	plan 0
	run -0 offered
	assert_output '["read_file","s__echo","s__add","s__env","s__hang","s__crash","s__rpc_error","s__garbage","s__change","s__big","s__ping_me","finish","ask_human"]'
}

@test "tools.permissions: an ask tool's call waits for a human: the phase escalates (exit 4) without running it" {
	servers "$(scripted)" '{"tools":{"permissions":{"plan":{"ask":["s__echo"]}}}}'
	call_then_finish s__echo '{"text":"x"}'
	plan 4
	event agent.escalated | jq -e '.tool == "s__echo" and .gate == "s__echo matches tools.permissions.plan.ask"'
	! grep -q '"tools/call"' "$SLOG" || false
}

@test "config: mcp.servers and tools.permissions are checked against the schema" {
	servers '{"bad name": {"command": "x"}}'
	run -2 --separate-stderr forge mcp list
	[[ "$stderr" == *".mcp.servers: unexpected property 'bad name'"* ]]
	servers '{"s": {"args": []}}'
	run -2 --separate-stderr forge mcp list
	[[ "$stderr" == *"command"* ]]
	echo '{"tools":{"permissions":{"plan":{"deny":"grep"}}}}' >.forge/config.json
	run -2 --separate-stderr forge mcp list
	[[ "$stderr" == *"permissions.plan.deny"* ]]
}

# ---- the server's environment --------------------------------------------------

@test "no API key reaches a server's environment; its env is added; \${VAR} only from the user's own configuration" {
	export GITHUB_TOKEN=ghp-secret-from-forge-env
	servers "$(scripted '[]' '{"env":{"MCP_GREETING":"hello"}}')"
	call_then_finish s__echo '{"text":"x"}'
	plan 0
	grep -qx "MCP_GREETING=hello" "$SENV"
	run -1 grep -E "ANTHROPIC_API_KEY|sk-ant-mcp|GITHUB_TOKEN|ghp-secret" "$SENV"
	grep -q "^HOME=/" "$SENV"
	# ${VAR} in the repository's config: refused, the server does not start
	servers "$(scripted '[]' '{"env":{"GH":"${GITHUB_TOKEN}"}}')"
	rm -f "$SENV"
	run -0 --separate-stderr forge mcp list --json
	echo "$output" | jq -e '.[0].state == "failed" and (.[0].error | test("env.GH names \\$\\{GITHUB_TOKEN\\}: only your own configuration"))'
	[ ! -e "$SENV" ]
	# in a --config file of the user's: expanded
	scripted '[]' '{"env":{"GH":"token ${GITHUB_TOKEN}"}}' | jq '{mcp: {servers: .}}' >"$BATS_TEST_TMPDIR/mine.json"
	rm .forge/config.json
	run -0 --separate-stderr forge mcp list --config "$BATS_TEST_TMPDIR/mine.json" --json
	echo "$output" | jq -e '.[0].state == "running"'
	grep -qx "GH=token ghp-secret-from-forge-env" "$SENV"
}

# ---- the official reference server --------------------------------------------

@test "reference server (server-everything): forge mcp list and call" {
	reference_server
	servers "$(jq -n --arg e "$REF" '{everything: {command: "node", args: [$e, "stdio"]}}')"
	run -0 --separate-stderr forge mcp list --json
	echo "$output" | jq -e '.[0].state == "running" and (.[0].tools | map(.name) | index("everything__echo") and index("everything__get-sum"))'
	run -0 --separate-stderr forge mcp call everything get-sum '{"a":2,"b":5}'
	assert_output "The sum of 2 and 5 is 7."
	run -0 --separate-stderr forge mcp call everything everything__echo '{"message":"hi"}'
	assert_output "Echo: hi"
	# structured content
	run -0 --separate-stderr forge mcp call everything get-structured-content '{"location":"New York"}' --json
	echo "$output" | jq -e '.structuredContent | type == "object"'
	# no API key in its environment (its own get-env tool)
	ANTHROPIC_API_KEY=sk-ant-ref-test-0123456789 OPENAI_API_KEY=sk-openai-ref run -0 --separate-stderr forge mcp call everything get-env
	echo "$output" | jq -e 'has("PATH") and (has("ANTHROPIC_API_KEY") | not) and (has("OPENAI_API_KEY") | not)'
	refute_output --partial "sk-ant-ref"
}

@test "reference server: forge-plan's model calls everything__echo and gets its answer" {
	reference_server
	servers "$(jq -n --arg e "$REF" '{everything: {command: "node", args: [$e, "stdio"], phases: ["plan", "implement"]}}')"
	call_then_finish everything__echo '{"message":"through the phase"}'
	plan 0
	run -0 tool_answer
	assert_output '[false,"Echo: through the phase"]'
	event tool.executed | jq -e '.tool == "everything__echo" and .data.server == "everything" and .data.output_bytes == 23'
	event mcp.server.started | jq -e '.server_info.name | test("everything")'
	# denied: not offered, a forced call refused
	servers "$(jq -n --arg e "$REF" '{everything: {command: "node", args: [$e, "stdio"]}}')" \
		'{"tools":{"permissions":{"default":{"deny":["everything__get-env"]}}}}'
	call_then_finish everything__get-env '{}'
	plan 0
	run -0 offered
	refute_output --partial '"everything__get-env"'
	assert_output --partial '"everything__echo"'
	run -0 tool_answer
	assert_output '[true,"everything__get-env: refused: the tool is not allowed in plan (tools.permissions.default.deny)"]'
}

# plan_state: a plan phase's state of trace T1 on $REPO (the calc plan of
# plan-calc.jsonl), for forge-implement's stdin.
plan_state() {
	sed -n 3p "$CASSETTES/plan-calc.jsonl" | jq -c --arg r "$REPO" \
		'{kind:"state", v:1, trace_id:"T1", phase:"plan", status:"ok",
		  task:{description:"add a mul operation", repo:$r, base_ref:"main"},
		  plan:.response.tool_calls[0].input, bounces:[], cost:{tokens:0, usd:0}}'
}

@test "forge-implement: its servers run in the run's worktree and its model calls their tools beside the edit tools" {
	servers "$(scripted '[]' '{"phases":["implement"]}')"
	plan_state >"$BATS_TEST_TMPDIR/plan.json"
	mock '[{"tool_calls":[{"name":"s__echo","input":{"text":"in the worktree"}}]},{"tool_calls":[{"name":"finish","input":{"summary":"nothing to do"}}]}]'
	run -0 --separate-stderr forge-implement <"$BATS_TEST_TMPDIR/plan.json"
	EVENTS=$output
	event tool.executed | jq -e '.tool == "s__echo" and .data.server == "s"'
	grep -qx "PWD_IS=$(run_worktree T1)" "$SENV"
	run -0 offered
	assert_output '["read_file","list_files","grep","write_file","edit_file","apply_patch","run_command","git_diff","git_status","delegate","s__echo","s__add","s__fail","s__env","s__hang","s__crash","s__rpc_error","s__garbage","s__change","s__big","s__ping_me","finish","ask_human"]'
	# a plan phase does not start an implement-only server
	mock "[{\"tool_calls\":[{\"name\":\"finish\",\"input\":$(good_plan)}]}]"
	rm -f "$SENV"
	plan 0
	[ ! -e "$SENV" ]
	[ -z "$(event mcp.server.started)" ]
}

@test "forge-implement: the user's own server starts in a directory of its own, not the run's worktree, whose modules the model writes" {
	# the user's server, "installed" as module mcp_time (python3 -m, as the reference servers say)
	mkdir "$BATS_TEST_TMPDIR/site"
	cp "$SERVER" "$BATS_TEST_TMPDIR/site/mcp_time.py"
	jq -n --arg site "$BATS_TEST_TMPDIR/site" --arg log "$SLOG" --arg envout "$SENV" \
		'{mcp: {servers: {t: {command: "python3", args: ["-m", "mcp_time", "--log", $log, "--env-out", $envout],
		  env: {PYTHONPATH: $site}, phases: ["implement"]}}}, memory: {reflect: false}}' \
		>"$XDG_CONFIG_HOME/forge/config.json"
	# a module of that name in the run's worktree, as a model's earlier attempt commits it
	printf 'open("%s", "w").write("ran")\n' "$BATS_TEST_TMPDIR/planted-ran" >mcp_time.py
	git add mcp_time.py && git commit -qm "a module"
	plan_state >"$BATS_TEST_TMPDIR/plan.json"
	mock '[{"tool_calls":[{"name":"t__echo","input":{"text":"the real one"}}]},{"tool_calls":[{"name":"finish","input":{"summary":"nothing to do"}}]}]'
	run -0 --separate-stderr forge-implement <"$BATS_TEST_TMPDIR/plan.json"
	EVENTS=$output
	[ -f "$(run_worktree T1)/mcp_time.py" ]
	# (before: started in the worktree, python3 -m ran the model's module instead)
	[ ! -e "$BATS_TEST_TMPDIR/planted-ran" ]
	event tool.executed | jq -e '.tool == "t__echo" and .kind == "ok"'
	# its cwd: its own directory, also its HOME
	home=$(sed -n 's/^HOME=//p' "$SENV")
	grep -qx "PWD_IS=$home" "$SENV"
	[[ "$home" != "$REPO"* ]]
}

@test "a helper (delegate) starts no MCP server and is offered, and runs, none of their tools" {
	servers "$(scripted '[]' '{"phases":["*"]}')"
	mock "$(jq -nc --argjson plan "$(good_plan)" '[
		{tool_calls:[{name:"delegate", input:{task:"Look around.", tools:["read_file"]}}]},
		{tool_calls:[{name:"s__echo", input:{text:"from the helper"}}]},
		{tool_calls:[{name:"finish", input:{summary:"looked"}}]},
		{tool_calls:[{name:"finish", input:$plan}]}]')"
	plan 0
	# the helper's requests: the tool it was given, nothing of the server's
	curl -sS -f "$MOCK_URL/_mock/requests" | jq -e '.[1].body.tools | map(.name) == ["read_file","finish","ask_human"]'
	event tool.failed | jq -e '.tool == "s__echo" and .error == "this tool was not given to this sub-agent; use the tools it has"'
	# one server, the phase's: started and stopped once, never called
	[ "$(event mcp.server.started | wc -l)" -eq 1 ]
	[ "$(event mcp.server.stopped | wc -l)" -eq 1 ]
	[ "$(grep -c '"initialize"' "$SLOG")" -eq 1 ]
	! grep -q '"tools/call"' "$SLOG" || false
}

@test "a server the repository's config defines or changes starts only when the user's own config trusts it" {
	rm "$XDG_CONFIG_HOME/forge/config.json"
	servers "$(scripted)"
	run -0 --separate-stderr forge mcp list --json
	echo "$output" | jq -e '.[0].state == "failed" and (.[0].error | test("mcp.trust_project"))'
	[ ! -e "$SLOG" ]
	# the repository cannot trust itself
	servers "$(scripted)" '{"mcp":{"trust_project":true}}'
	run -0 --separate-stderr forge mcp list --json
	echo "$output" | jq -e '.[0].state == "failed"'
	[ ! -e "$SLOG" ]
	# a server of the user's whose arguments the repository changes is refused too
	scripted | jq '{mcp: {servers: .}}' >"$XDG_CONFIG_HOME/forge/config.json"
	jq -n --arg cmd "$SERVER" '{mcp: {servers: {s: {command: $cmd, args: ["--evil"]}}}}' >.forge/config.json
	run -0 --separate-stderr forge mcp list --json
	echo "$output" | jq -e '.[0].state == "failed" and (.[0].error | test("trust_project"))'
	# the user's own server, untouched by the repository: runs
	rm .forge/config.json
	run -0 --separate-stderr forge mcp list --json
	echo "$output" | jq -e '.[0].state == "running"'
	# trusted by the user: the repository's server runs
	echo '{"mcp":{"trust_project":true}}' >"$XDG_CONFIG_HOME/forge/config.json"
	servers "$(scripted)"
	run -0 --separate-stderr forge mcp list --json
	echo "$output" | jq -e '.[0].state == "running"'
}
