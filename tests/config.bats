#!/usr/bin/env bats
# forge-config: layering (defaults < user < project < --config < env < flags),
# --explain, get, path, and bad configuration as bad input (exit 2).

load test_helper/common

setup() {
	forge_setup
	# Every variable of the env layer, not only the model ones.
	unset FORGE_FAST_MODEL FORGE_AUTOMATION_LEVEL FORGE_BUDGET_USD FORGE_MAX_LINE_BYTES \
		FORGE_DEPLOY_STRATEGY FORGE_TEST_COMMAND FORGE_LINT_COMMAND
	REPO="$BATS_TEST_TMPDIR/repo"
	make_repo "$REPO"
	mkdir -p "$REPO/.forge" "$XDG_CONFIG_HOME/forge"
	USER_CFG="$XDG_CONFIG_HOME/forge/config.json"
	PROJECT_CFG="$REPO/.forge/config.json"
}

teardown() {
	local p
	for p in "$BATS_TEST_TMPDIR"/*/mock.pid; do
		[ -f "$p" ] && kill "$(cat "$p")" 2>/dev/null
	done
	return 0
}

# own_mock NAME: a mock provider of this test's own, answering nothing (500)
# and logging each request (with its key's SHA-256) to $BATS_TEST_TMPDIR/NAME/log;
# its URL in NAME_URL.
own_mock() {
	local d="$BATS_TEST_TMPDIR/$1" pid
	mkdir -p "$d"
	test_python3
	"$TEST_PYTHON3" "$FORGE_ROOT/tests/helpers/mock_llm.py" --port-file "$d/port" --log "$d/log" \
		2>"$d/err" 3>&- &
	pid=$!
	echo $pid >"$d/mock.pid"
	for _ in $(seq 1200); do
		[ -s "$d/port" ] || ! kill -0 $pid 2>/dev/null && break
		sleep 0.05
	done
	[ -s "$d/port" ] || { cat "$d/err" >&2; return 1; }
	printf -v "$1_URL" 'http://127.0.0.1:%s' "$(cat "$d/port")"
	touch "$d/log"
}

# keys_seen NAME: the SHA-256 of each API key mock NAME was sent, one a line.
keys_seen() {
	jq -r 'select(.auth == "present") | .auth_sha256' "$BATS_TEST_TMPDIR/$1/log"
}

@test "--help exits 0 and lists the environment variables" {
	run -0 --separate-stderr forge-config --help
	assert_output --partial "usage: forge-config"
	assert_output --partial "FORGE_AUTOMATION_LEVEL"
	assert_output --partial "safety.automation_level"
	[ -z "$stderr" ]
}

@test "with no files the built-in defaults are printed as JSON" {
	cd "$BATS_TEST_TMPDIR"
	run -0 --separate-stderr forge-config
	[ "$(jq -r .llm.model <<<"$output")" = "claude-sonnet-4-5" ]
	[ "$(jq -r .bounces.review_max <<<"$output")" = 3 ]
	[ "$(jq -r '.gates | length' <<<"$output")" = 4 ]
	# Notes of the defaults file are not configuration.
	[ "$(jq '[.. | objects | select(has("$comment"))] | length' <<<"$output")" = 0 ]
}

@test "each layer overrides the one below it" {
	echo '{"llm":{"model":"user","fast_model":"user","cassette":"user","base_url":"http://user/v1","max_tokens":111}}' >"$USER_CFG"
	echo '{"llm":{"model":"project","fast_model":"project","cassette":"project","base_url":"http://project/v1","max_retries":1}}' >"$PROJECT_CFG"
	echo '{"llm":{"model":"file","fast_model":"file","cassette":"file"}}' >"$BATS_TEST_TMPDIR/extra.json"
	export FORGE_MODEL=env FORGE_CASSETTE=env
	cd "$REPO"
	run -0 --separate-stderr forge-config --config "$BATS_TEST_TMPDIR/extra.json" --model flag
	[ "$(jq -r .llm.max_tokens <<<"$output")" = 111 ]
	[ "$(jq -r .llm.max_retries <<<"$output")" = 1 ]
	# (but not where the key goes, nor more retries than yours: the
	# repository's base URL is ignored, test_config test_project_guard_limits)
	[ "$(jq -r .llm.base_url <<<"$output")" = "http://user/v1" ]
	[ "$(jq -r .llm.fast_model <<<"$output")" = file ]
	[ "$(jq -r .llm.cassette <<<"$output")" = env ]
	[ "$(jq -r .llm.model <<<"$output")" = flag ]
	# Untouched siblings of overridden keys stay.
	[ "$(jq -r .llm.stall_timeout_s <<<"$output")" = 120 ]
	# and the cassette chooses the provider that replays it
	[ "$(jq -r .llm.provider <<<"$output")" = replay ]
}

@test "arrays are replaced whole, objects are merged" {
	echo '{"deploy":{"canary":{"medium":[5,25,50,100]}}}' >"$PROJECT_CFG"
	run -0 --separate-stderr forge-config --repo "$REPO" get deploy.canary
	[ "$(jq -c .medium <<<"$output")" = "[5,25,50,100]" ]
	[ "$(jq -c .high <<<"$output")" = "[5,10,25,50,100]" ]
}

@test "--repo selects the project layer; outside a repository it is skipped" {
	echo '{"budget":{"usd":9}}' >"$PROJECT_CFG"
	cd "$BATS_TEST_TMPDIR"
	run -0 --separate-stderr forge-config get budget.usd
	assert_output 50
	run -0 --separate-stderr forge-config --repo "$REPO" get budget.usd
	assert_output 9
	cd "$REPO"
	run -0 --separate-stderr forge-config get budget.usd
	assert_output 9
}

@test "--repo that is not a repository is an error" {
	mkdir "$BATS_TEST_TMPDIR/plain"
	run -2 --separate-stderr forge-config --repo "$BATS_TEST_TMPDIR/plain"
	[[ "$stderr" == "forge-config: "*plain* ]]
	[ -z "$output" ]
}

@test "--explain names the layer and source of every value" {
	echo '{"budget":{"usd":20}}' >"$USER_CFG"
	echo '{"llm":{"model":"p"}}' >"$PROJECT_CFG"
	export FORGE_TEST_COMMAND="make check"
	cd "$REPO"
	run -0 --separate-stderr forge-config --explain --set deploy.strategy=merge
	assert_line 'budget.usd = 20  (user: '"$USER_CFG"')'
	assert_line 'llm.model = "p"  (project: '"$PROJECT_CFG"')'
	assert_line 'tools.test_command = "make check"  (env: FORGE_TEST_COMMAND)'
	assert_line 'deploy.strategy = "merge"  (flags: command line)'
	# no fast model configured: it is the model, not claude-haiku
	assert_line 'llm.fast_model = "p"  (resolved: the same as the model (no fast model configured for it))'
	assert_line 'llm.base_url = null  (default: built-in)'
	echo '{}' >"$PROJECT_CFG"
	run -0 --separate-stderr forge-config --explain
	assert_line 'llm.fast_model = "claude-haiku-4-5"  (default: built-in)'
	assert_line 'llm.provider = "anthropic"  (default: built-in)'
}

@test "--explain, get and forge doctor show the same provider and models: a key chooses the provider" {
	export OPENAI_API_KEY=test-key
	cd "$REPO"
	run -0 --separate-stderr forge-config --explain
	assert_line 'llm.provider = "openai"  (resolved: OPENAI_API_KEY is set)'
	assert_line 'llm.model = "gpt-4o-mini"  (resolved: the default model of openai)'
	assert_line 'llm.fast_model = "gpt-4o-mini"  (resolved: the same as the model (no fast model configured for it))'
	run -0 --separate-stderr forge-config get llm.provider
	assert_output openai
	run -0 --separate-stderr forge-config
	jq -e '.llm.provider == "openai" and .llm.model == "gpt-4o-mini" and .llm.fast_model == "gpt-4o-mini"' <<<"$output"
	run -0 --separate-stderr forge-doctor --json
	jq -e '.provider.provider == "openai" and .provider.model == "gpt-4o-mini" and .provider.fast_model == "gpt-4o-mini"' <<<"$output"
	# a model of an OpenAI-compatible server is its own fast model
	run -0 --separate-stderr forge-config --explain --provider openai --base-url http://127.0.0.1:9/v1 --model qwen2.5-coder
	assert_line 'llm.fast_model = "qwen2.5-coder"  (resolved: the same as the model (no fast model configured for it))'
	run -0 --separate-stderr forge-doctor --json --provider openai --base-url http://127.0.0.1:9/v1 --model qwen2.5-coder
	jq -e '.provider.model == "qwen2.5-coder" and .provider.fast_model == "qwen2.5-coder"' <<<"$output"
	# a fast model that is configured is used
	echo '{"llm":{"fast_model":"small"}}' >"$PROJECT_CFG"
	run -0 --separate-stderr forge-config get llm.fast_model
	assert_output small
	run -0 --separate-stderr forge-doctor --json
	jq -e '.provider.fast_model == "small"' <<<"$output"
}

@test "--explain --json gives the entries as a JSON array" {
	echo '{"llm":{"model":"p"}}' >"$PROJECT_CFG"
	run -0 --separate-stderr forge-config --repo "$REPO" --explain --json
	[ "$(jq -r '.[] | select(.path == "llm.model") | .layer' <<<"$output")" = project ]
	[ "$(jq -r '.[] | select(.path == "llm.model") | .source' <<<"$output")" = "$PROJECT_CFG" ]
	[ "$(jq -r '.[] | select(.path == "llm.model") | .value' <<<"$output")" = p ]
	# Sorted by path.
	[ "$(jq -c '[.[].path] == ([.[].path] | sort)' <<<"$output")" = true ]
}

@test "get prints strings raw and other values as JSON; exit 2 for a key the schema lacks" {
	cd "$BATS_TEST_TMPDIR"
	run -0 --separate-stderr forge-config get llm.provider
	assert_output anthropic
	run -0 --separate-stderr forge-config get safety.automation_level
	assert_output 4
	run -0 --separate-stderr forge-config get llm.base_url
	assert_output null
	run -0 --separate-stderr forge-config get gates.1.id
	assert_output production_deploy
	run -0 --separate-stderr forge-config --json get llm.provider
	assert_output '"anthropic"'
	run -2 --separate-stderr forge-config get llm.no_such_key
	[ -z "$output" ]
	run -2 --separate-stderr forge-config get
	[[ "$stderr" == *"forge-config: "* ]]
}

@test "--set takes JSON values and bare strings" {
	cd "$BATS_TEST_TMPDIR"
	run -0 --separate-stderr forge-config --set safety.automation_level=2 --set llm.model=claude-x get safety.automation_level
	assert_output 2
	run -0 --separate-stderr forge-config --set llm.model=claude-x get llm.model
	assert_output claude-x
	run -2 --separate-stderr forge-config --set nonsense
	[[ "$stderr" == *"forge-config: "*"nonsense"* ]]
}

@test "the environment layer: numbers, empty variables, bad numbers" {
	cd "$BATS_TEST_TMPDIR"
	FORGE_BUDGET_USD=12.5 run -0 --separate-stderr forge-config get budget.usd
	assert_output 12.5
	FORGE_BUDGET_USD= run -0 --separate-stderr forge-config get budget.usd
	assert_output 50
	FORGE_BUDGET_USD=lots run -2 --separate-stderr forge-config get budget.usd
	[[ "$stderr" == "forge-config: FORGE_BUDGET_USD: "* ]]
	[ -z "$output" ]
	FORGE_AUTOMATION_LEVEL=9 run -2 --separate-stderr forge-config
	[[ "$stderr" == "forge-config: FORGE_AUTOMATION_LEVEL: .safety.automation_level: "* ]]
}

@test "path lists the files read and whether each exists" {
	echo '{}' >"$PROJECT_CFG"
	run -0 --separate-stderr forge-config --repo "$REPO" --config "$BATS_TEST_TMPDIR/nope.json" path
	assert_line "user     $USER_CFG  (missing)"
	assert_line "project  $PROJECT_CFG  (exists)"
	assert_line "file     $BATS_TEST_TMPDIR/nope.json  (missing)"
	run -0 --separate-stderr forge-config --repo "$REPO" --json path
	[ "$(jq -r '.[1].exists' <<<"$output")" = true ]
}

@test "malformed JSON in the project config: exit 2 naming the file" {
	echo '{"llm": {"model": }' >"$PROJECT_CFG"
	run -2 --separate-stderr forge-config --repo "$REPO"
	[[ "$stderr" == "forge-config: $PROJECT_CFG: "* ]]
	[ -z "$output" ]
}

@test "two JSON values in a config file: exit 2 naming the line and column of the second (fix135 #3)" {
	# (before: "Unexpected extra JSON values" and no place)
	printf '{"llm": {"model": "m"}}\n{"safety": {}}\n' >"$PROJECT_CFG"
	run -2 --separate-stderr forge-config --repo "$REPO"
	[ "$stderr" = "forge-config: $PROJECT_CFG: Unexpected extra JSON values: a second value begins at line 2, column 1 (one JSON value is expected)" ]
	[ -z "$output" ]
	printf '{\n  "llm": {}\n}  {}' >"$BATS_TEST_TMPDIR/two.json"
	rm "$PROJECT_CFG"
	run -2 --separate-stderr forge-plan --repo "$REPO" --config "$BATS_TEST_TMPDIR/two.json" --task x
	[[ "$stderr" == *"$BATS_TEST_TMPDIR/two.json: Unexpected extra JSON values: a second value begins at line 3, column 4 "* ]]
}

@test "a schema error names the file and the JSON path" {
	echo '{"safety":{"automation_level":7}}' >"$PROJECT_CFG"
	run -2 --separate-stderr forge-config --repo "$REPO"
	[[ "$stderr" == "forge-config: $PROJECT_CFG: .safety.automation_level: "*7* ]]
	[ -z "$output" ]
}

@test "every schema error of a file is named in one message, not only the first" {
	echo '{"safety":{"automation_level":7},"saftey":1,"llm":{"max_tokens":"lots"}}' >"$PROJECT_CFG"
	run -2 --separate-stderr forge-config --repo "$REPO"
	[[ "$stderr" == "forge-config: $PROJECT_CFG: "*".safety.automation_level: "*7*"; "*saftey*"; "* ]]
	[[ "$stderr" == *".llm.max_tokens: expected integer, got string"* ]]
	[ "${#stderr_lines[@]}" -eq 1 ]
	[ -z "$output" ]
}

@test "a NUL character in a value (a command, a path) is an error naming it" {
	echo '{"tools":{"test_command":"make check\u0000; rm -rf /"}}' >"$PROJECT_CFG"
	run -2 --separate-stderr forge-config --repo "$REPO"
	[ "$stderr" = "forge-config: $PROJECT_CFG: 'tools.test_command' holds a NUL character (\u0000)" ]
	[ -z "$output" ]
}

@test "a misspelt section is an error, not ignored" {
	echo '{"saftey":{"automation_level":2}}' >"$USER_CFG"
	cd "$BATS_TEST_TMPDIR"
	run -2 --separate-stderr forge-config
	[[ "$stderr" == "forge-config: $USER_CFG: "*saftey* ]]
}

@test "an empty config file is no settings (--config /dev/null), not a JSON error; a file of NUL bytes is one" {
	cd "$BATS_TEST_TMPDIR"
	printf ' \n\t\n' >"$PROJECT_CFG"
	run -0 --separate-stderr forge-config --repo "$REPO" --config /dev/null
	[ "$(jq -r .safety.automation_level <<<"$output")" = "$(forge-config | jq -r .safety.automation_level)" ]
	run -0 --separate-stderr forge history --config /dev/null
	printf '\0\0' >"$BATS_TEST_TMPDIR/nul.json"
	run -2 --separate-stderr forge-config --config "$BATS_TEST_TMPDIR/nul.json"
	[[ "$stderr" == "forge-config: $BATS_TEST_TMPDIR/nul.json: "* ]]
}

@test "a missing --config file is an error" {
	cd "$BATS_TEST_TMPDIR"
	run -2 --separate-stderr forge-config --config "$BATS_TEST_TMPDIR/nope.json"
	[[ "$stderr" == "forge-config: "*nope.json* ]]
}

@test "an unknown option or command: exit 2 with usage on stderr" {
	run -2 --separate-stderr forge-config --bogus
	[[ "$stderr" == *"--bogus"* ]]
	[[ "$stderr" == *"forge-config --help"* ]]
	[ -z "$output" ]
	run -2 --separate-stderr forge-config frobnicate
	[[ "$stderr" == *"frobnicate"* ]]
}

@test "a configuration that passed is not validated again; a damaged or unwritable cache changes nothing" {
	export XDG_CACHE_HOME="$BATS_TEST_TMPDIR/cache"
	echo '{"llm":{"model":"cached"}}' >"$PROJECT_CFG"
	run -0 --separate-stderr forge-config --repo "$REPO" get llm.model
	[ "$output" = cached ]
	[ -z "$stderr" ]
	# one key a line: the project layer and the whole
	[ "$(grep -cE '^[0-9a-f]{32}$' "$XDG_CACHE_HOME/forge/config-valid")" = 2 ]
	run -0 --separate-stderr forge-config --repo "$REPO" get llm.model
	[ "$output" = cached ]
	[ -z "$stderr" ]
	[ "$(wc -l <"$XDG_CACHE_HOME/forge/config-valid")" = 2 ]
	printf 'garbage\n\0\377\n' >"$XDG_CACHE_HOME/forge/config-valid"
	run -0 --separate-stderr forge-config --repo "$REPO" get llm.model
	[ "$output" = cached ]
	[ -z "$stderr" ]
	[ "$(grep -cE '^[0-9a-f]{32}$' "$XDG_CACHE_HOME/forge/config-valid")" = 2 ]
	export XDG_CACHE_HOME="$BATS_TEST_TMPDIR/a-file"
	: >"$XDG_CACHE_HOME"
	run -0 --separate-stderr forge-config --repo "$REPO" get llm.model
	[ "$output" = cached ]
	[ -z "$stderr" ]
}

@test "a configuration that failed fails the same way every time (never cached)" {
	export XDG_CACHE_HOME="$BATS_TEST_TMPDIR/cache"
	echo '{"safety":{"automation_level":7}}' >"$PROJECT_CFG"
	run -2 --separate-stderr forge-config --repo "$REPO"
	first=$stderr
	[[ "$first" == "forge-config: $PROJECT_CFG: .safety.automation_level: "*7* ]]
	run -2 --separate-stderr forge-config --repo "$REPO"
	[ "$stderr" = "$first" ]
	[ ! -e "$XDG_CACHE_HOME/forge/config-valid" ]
}

@test "a gate or bounce condition that is not jq is refused when the configuration is read, before any phase runs" {
	echo '{"gates":[{"id":"g1","phase":"test","condition":".tests.summary.failed >"}]}' >"$PROJECT_CFG"
	run -2 --separate-stderr forge-config --repo "$REPO"
	[[ "$stderr" == "forge-config: $PROJECT_CFG: .gates[0].condition: jq expression '.tests.summary.failed >' does not compile: "* ]]
	cd "$REPO"
	# (before: found at the gate, after plan, implement and review had run and paid; exit 1)
	run -2 --separate-stderr forge run "add a mul operation" </dev/null
	[[ "$stderr" == *".gates[0].condition: jq expression"* ]]
	[ "$(forge history --json | wc -l)" -eq 0 ]
	echo '{"bounces":{"review_condition":".review.decision =="}}' >"$PROJECT_CFG"
	run -2 --separate-stderr forge-config --repo "$REPO"
	[[ "$stderr" == *"$PROJECT_CFG: .bounces.review_condition: jq expression"* ]]
	echo '{"gates":[{"id":"g1","phase":"test","condition":".tests.summary.failed > 0"}]}' >"$PROJECT_CFG"
	run -0 --separate-stderr forge-config --repo "$REPO" get gates
}

@test "a sandbox rule that is not a regular expression is refused when the configuration is read, by every program" {
	echo '{"sandbox":{"deny_extra":["rm\\s+(-rf"]}}' >"$PROJECT_CFG"
	run -2 --separate-stderr forge-config --repo "$REPO" get sandbox.deny_extra
	[ -z "$output" ]
	[[ "$stderr" == *"$PROJECT_CFG: .sandbox.deny_extra[0]: 'rm\\s+(-rf' is not a regular expression: missing closing parenthesis at offset 9"* ]]
	cd "$REPO"
	run -2 --separate-stderr forge-review </dev/null
	[[ "$stderr" == *".sandbox.deny_extra[0]: 'rm\\s+(-rf' is not a regular expression"* ]]
	# the same pattern made valid: read, and kept as written
	echo '{"sandbox":{"deny_extra":["rm\\s+(-rf)"]}}' >"$PROJECT_CFG"
	run -0 --separate-stderr forge-config --repo "$REPO" get sandbox.deny_extra
	[ "$(jq -r '.[0]' <<<"$output")" = 'rm\s+(-rf)' ]
}

@test "a relative HOME is no HOME: nothing is read or written below the current directory (the user's checkout)" {
	cd "$REPO"
	mkdir -p .config/forge
	echo '{"llm":{"model":"from-the-checkout"}}' >.config/forge/config.json
	# (before: ./.config/forge/config.json was the user layer, and the
	# cache ./.cache/forge/config-valid was written into the checkout)
	run -0 --separate-stderr env -u XDG_CONFIG_HOME -u XDG_CACHE_HOME HOME=. forge-config get llm.model
	[ "$output" = claude-sonnet-4-5 ]
	[ ! -e .cache ]
	run -2 --separate-stderr env -u XDG_CONFIG_HOME -u XDG_CACHE_HOME HOME=. forge-config set --global llm.model x
	[[ $stderr == *"neither XDG_CONFIG_HOME nor HOME is set to an absolute path"* ]]
	mkdir home
	run -0 --separate-stderr env -u XDG_CONFIG_HOME -u XDG_CACHE_HOME HOME=home forge-config get llm.model
	[ "$output" = claude-sonnet-4-5 ]
	[ ! -e .cache ] && [ ! -e home/.cache ]
}

@test "a repository's config cannot send the API key elsewhere: its base URLs are ignored with one warning, unless the user trusts it" {
	own_mock MINE
	own_mock EVIL
	cd "$REPO"
	export FORGE_LLM_MAX_RETRIES=0
	for prov in anthropic openai; do
		v1=; [ $prov = openai ] && v1=/v1
		key="sk-$prov-user-secret-0123456789"
		sha=$(printf '%s' "$key" | sha256sum | cut -d' ' -f1)
		: >"$BATS_TEST_TMPDIR/MINE/log"
		: >"$BATS_TEST_TMPDIR/EVIL/log"
		echo "{\"llm\":{\"base_url\":\"$MINE_URL$v1\"}}" >"$USER_CFG"
		echo "{\"llm\":{\"base_url\":\"$EVIL_URL$v1\",\"phases\":{\"plan\":{\"base_url\":\"$EVIL_URL$v1\"}}}}" >"$PROJECT_CFG"
		if [ $prov = openai ]; then export OPENAI_API_KEY=$key; unset ANTHROPIC_API_KEY
		else export ANTHROPIC_API_KEY=$key; unset OPENAI_API_KEY; fi
		run --separate-stderr env FORGE_PROVIDER=$prov forge run --dry-run "fix the typo" </dev/null
		# the request went to the user's URL, none to the repository's
		[ "$(keys_seen MINE | sort -u)" = "$sha" ]
		[ ! -s "$BATS_TEST_TMPDIR/EVIL/log" ]
		# said once (not again by the phases), naming the keys, the file and the setting
		[ "$(grep -c 'warning: ignoring' <<<"$stderr")" -eq 1 ]
		assert_equal "$(grep 'warning: ignoring' <<<"$stderr")" \
			"forge run: warning: ignoring llm.base_url, llm.phases.plan.base_url of $PROJECT_CFG: a repository's configuration may not choose where your API key is sent, nor loosen your sandbox, tool permissions, gates, automation level, prices or limits; to let it, set \"trust_project\": true in your own configuration (forge config set --global trust_project true, or a --config file)"
		# and the run's events say it
		trace=$(forge history --json -n 1 | jq -r .trace_id)
		run -0 --separate-stderr forge events replay "$trace"
		jq -se --arg f "$PROJECT_CFG" 'map(select(.type == "run.config_ignored"))[0].payload
			| .setting == "trust_project" and ([.ignored[] | [.path, .source == $f]]
			== [["llm.base_url", true], ["llm.phases.plan.base_url", true]])' <<<"$output"
		# trusted by the user: the repository's URL is used, without a warning
		echo "{\"llm\":{\"base_url\":\"$MINE_URL$v1\"},\"trust_project\":true}" >"$USER_CFG"
		run --separate-stderr env FORGE_PROVIDER=$prov forge run --dry-run "fix the typo" </dev/null
		[ "$(keys_seen EVIL | sort -u)" = "$sha" ]
		[[ "$stderr" != *"warning: ignoring"* ]]
	done
}

@test "the repository's config may not trust itself nor widen the sandbox; it may tighten it; forge config shows what applies" {
	echo '{"trust_project":true,"mcp":{"trust_project":true},"sandbox":{"network":"allow","read_anywhere":true,"read_paths":["/home"],"command_timeout_s":9999,"limits":{"processes":0}}}' >"$PROJECT_CFG"
	cd "$REPO"
	run -0 --separate-stderr forge-config get sandbox
	jq -e '.network == "auto" and .read_anywhere == false and .read_paths == [] and .command_timeout_s == 120 and .limits.processes == 1024' <<<"$output"
	assert_equal "$stderr" "forge-config: warning: ignoring mcp.trust_project, sandbox.command_timeout_s, sandbox.limits.processes, sandbox.network, sandbox.read_anywhere, sandbox.read_paths, trust_project of $PROJECT_CFG: a repository's configuration may not choose where your API key is sent, nor loosen your sandbox, tool permissions, gates, automation level, prices or limits; to let it, set \"trust_project\": true in your own configuration (forge config set --global trust_project true, or a --config file)"
	run -0 --separate-stderr forge-config get trust_project
	assert_output false
	# tightening applies, without a word
	echo '{"sandbox":{"network":"deny","landlock":"require","command_timeout_s":5,"limits":{"processes":50}}}' >"$PROJECT_CFG"
	run -0 --separate-stderr forge-config get sandbox
	jq -e '.network == "deny" and .landlock == "require" and .command_timeout_s == 5 and .limits.processes == 50' <<<"$output"
	[ -z "$stderr" ]
	# the user's own trust, set as the warning says: the repository's values apply
	echo '{"sandbox":{"network":"allow"}}' >"$PROJECT_CFG"
	run -0 --separate-stderr forge-config set --global trust_project true
	run -0 --separate-stderr forge-config get sandbox.network
	assert_output allow
	[ -z "$stderr" ]
}

@test "config set refuses a number no configuration can hold (nan, inf, 1e-400), file untouched" {
	cd "$REPO"
	echo '{"budget":{"usd":3}}' >"$PROJECT_CFG"
	for v in nan NaN Infinity inf 1e999 1e-400; do
		run -2 --separate-stderr forge-config set budget.usd "$v"
		[[ $stderr == *"budget.usd: $v is not a finite number"* || $stderr == *"budget.usd: $v is out of range"* ]]
		[ "$(jq -c .budget "$PROJECT_CFG")" = '{"usd":3}' ]
	done
	run -0 forge-config get budget.usd
}

@test "config set says the value the file gets (' 5' is 5, 1e0 is 1)" {
	cd "$REPO"
	run -0 --separate-stderr forge-config set budget.usd ' 2'
	[[ $stderr == "forge-config: budget.usd = 2 in $PROJECT_CFG" ]]
	run -0 --separate-stderr forge-config set budget.usd 1e0
	[[ $stderr == "forge-config: budget.usd = 1 in $PROJECT_CFG" ]]
	[ "$(jq -c .budget.usd "$PROJECT_CFG")" = 1 ]
}

@test "config set of a key the repository's file may not set warns that it is ignored (exit 0)" {
	cd "$REPO"
	run -0 --separate-stderr forge-config set llm.base_url http://localhost:11434/v1
	[[ $stderr == *"warning: llm.base_url is ignored in $PROJECT_CFG"*"forge config set --global llm.base_url"*"trust_project"* ]]
	[ "$(jq -r .llm.base_url "$PROJECT_CFG")" = http://localhost:11434/v1 ]
	# a key it may set, and the same one where it holds: no warning
	run -0 --separate-stderr forge-config set llm.model qwen2.5-coder
	[[ $stderr != *warning* ]]
	run -0 --separate-stderr forge-config set --global llm.base_url http://localhost:11434/v1
	[[ $stderr != *warning* ]]
	run -0 --separate-stderr forge-config get llm.base_url
	[ "$output" = http://localhost:11434/v1 ]
}

@test "config get of a key the schema does not have says so (exit 2); a known unset one is exit 1" {
	cd "$REPO"
	run -2 --separate-stderr forge-config get llm.modle
	[ -z "$output" ]
	[[ $stderr == *"no key 'llm.modle'"*"unexpected property 'modle'"* ]]
	run -1 --separate-stderr forge-config get llm.phases.plan.model
	[[ $stderr == *"llm.phases.plan.model is not set"* ]]
	run -0 --separate-stderr forge-config get budget.usd
	[ -n "$output" ]
}
