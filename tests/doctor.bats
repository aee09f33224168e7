#!/usr/bin/env bats
# forge-doctor: what this machine gives Forge - libraries, programs, the
# database, the provider (never the key), sandbox features, tools on PATH
# and the project; text by default, one JSON object with --json.

load test_helper/common

# One `forge-doctor --json` and one `forge-doctor` in a repository with no
# configuration and no key, shared by the tests that only read what they
# print (each run probes every tool); $SHARED is that run's directory.
setup_file() {
	SHARED="$BATS_FILE_TMPDIR/shared"
	export SHARED
	(
		BATS_TEST_TMPDIR=$SHARED
		mkdir -p "$SHARED"
		forge_setup
		make_repo "$SHARED/repo"
		cd "$SHARED/repo" || exit 1
		forge-doctor --json >"$SHARED/json.out" 2>"$SHARED/json.err"
		echo $? >"$SHARED/json.rc"
		forge-doctor >"$SHARED/text.out" 2>"$SHARED/text.err"
		echo $? >"$SHARED/text.rc"
	)
}

# shared json|text: what the shared run printed on stdout and stderr, with
# its exit status (for `run -N --separate-stderr shared json`).
shared() {
	cat "$SHARED/$1.out"
	cat "$SHARED/$1.err" >&2
	return "$(cat "$SHARED/$1.rc")"
}

setup() {
	forge_setup
	REPO="$BATS_TEST_TMPDIR/repo"
	make_repo "$REPO"
}

@test "--help exits 0 and names --json" {
	run -0 --separate-stderr forge-doctor --help
	assert_output --partial "usage: forge-doctor"
	assert_output --partial "--json"
	[ -z "$stderr" ]
}

@test "--json prints one object with every section" {
	run -0 --separate-stderr shared json
	[ "$(jq -s length <<<"$output")" = 1 ]
	# one jq for the list (each jq costs ~50 ms of CPU to start)
	missing=$(jq -r '[$ARGS.positional[] as $k | select(has($k) | not) | $k] | join(" ")' \
		--args forge libraries config database provider sandbox tools project problems <<<"$output")
	[ -z "$missing" ] || { echo "missing $missing"; false; }
	[ "$(jq -r .forge.version <<<"$output")" = "$(forge-doctor --version | awk '{print $NF}')" ]
	missing=$(jq -r '[$ARGS.positional[] as $l | select((.libraries[$l] | type) != "string") | $l] | join(" ")' \
		--args sqlite3 curl libgit2 jq pcre2 libyaml <<<"$output")
	[ -z "$missing" ] || { echo "no $missing"; false; }
	[[ "$(jq -r .libraries.sqlite3 <<<"$output")" =~ ^3\.[0-9]+ ]]
	[ "$(jq -r '.forge.programs | index("forge-doctor") != null' <<<"$output")" = true ]
	[ "$(jq -r .project.root <<<"$output")" = "$SHARED/repo" ]
}

@test "text output has the sections" {
	run -0 --separate-stderr shared text
	for s in Libraries Configuration Database "Model provider" Sandbox "Tools on PATH" Project Summary; do
		assert_output --partial "$s"
	done
	assert_output --partial "sqlite3"
	assert_output --partial "libyaml"
}

@test "a canary ANTHROPIC_API_KEY is reported as set and never printed" {
	cd "$REPO"
	export ANTHROPIC_API_KEY=sk-ant-canary-123456789
	run -0 --separate-stderr forge-doctor --only provider
	assert_output --partial "ANTHROPIC_API_KEY: set"
	refute_output --partial "canary"
	refute_output --partial "123456789"
	[[ "$stderr" != *canary* ]]
	run -0 --separate-stderr forge-doctor --json --only provider
	[ "$(jq -r '.provider.keys.ANTHROPIC_API_KEY' <<<"$output")" = set ]
	[ "$(jq -r '.provider.provider' <<<"$output")" = anthropic ]
	[ "$(jq -r '.provider.usable' <<<"$output")" = true ]
	refute_output --partial "canary"
	[[ "$stderr" != *canary* ]]
}

@test "a key in FORGE_ANTHROPIC_KEY_FILE is set, from the file, and not printed" {
	cd "$REPO"
	printf 'sk-ant-canary-filekey-987654321\n' >"$BATS_TEST_TMPDIR/key"
	chmod 600 "$BATS_TEST_TMPDIR/key"
	export FORGE_ANTHROPIC_KEY_FILE="$BATS_TEST_TMPDIR/key"
	run -0 --separate-stderr forge-doctor --json --only provider
	[[ "$(jq -r '.provider.keys.ANTHROPIC_API_KEY' <<<"$output")" == set* ]]
	refute_output --partial "canary"
	refute_output --partial "987654321"
}

@test "without a key the provider is reported as not set and not usable" {
	run -0 --separate-stderr shared text
	assert_output --partial "ANTHROPIC_API_KEY: not set"
	assert_output --partial "OPENAI_API_KEY: not set"
	run -0 --separate-stderr shared json
	[ "$(jq -r '.provider.usable' <<<"$output")" = false ]
	[ "$(jq -r '.provider.error | test("ANTHROPIC_API_KEY")' <<<"$output")" = true ]
}

@test "the model options and a cassette are shown" {
	cd "$REPO"
	echo '{"interactions":[]}' >"$BATS_TEST_TMPDIR/c.json"
	run -0 --separate-stderr forge-doctor --json --only provider --model my-model --cassette "$BATS_TEST_TMPDIR/c.json" \
		--base-url http://127.0.0.1:9/v1
	[ "$(jq -r '.provider.model' <<<"$output")" = my-model ]
	[ "$(jq -r '.provider.cassette' <<<"$output")" = "$BATS_TEST_TMPDIR/c.json" ]
	[ "$(jq -r '.provider.base_url' <<<"$output")" = "http://127.0.0.1:9/v1" ]
}

@test "the sandbox section lists landlock and the configured modes" {
	run -0 --separate-stderr shared json
	[ "$(jq -r '.sandbox.landlock.available | type' <<<"$output")" = boolean ]
	[ "$(jq -r '.sandbox.landlock.mode' <<<"$output")" = auto ]
	[ "$(jq -r '.sandbox.network_namespace.mode' <<<"$output")" = auto ]
	[ "$(jq -r '.sandbox.openat2 | type' <<<"$output")" = boolean ]
	run -0 --separate-stderr shared text
	assert_output --regexp "landlock +(available|unavailable)"
}

@test "the sandbox section says which kernel walls are there and which are missing" {
	cd "$REPO"
	mkdir -p .forge
	echo '{"sandbox":{"namespaces":"require"}}' >.forge/config.json
	run -0 --separate-stderr forge-doctor --json --only sandbox
	[ "$(jq -r '.sandbox.namespaces.mode' <<<"$output")" = require ]
	[ "$(jq -r '.sandbox.namespaces.pid | type' <<<"$output")" = boolean ]
	[ "$(jq -r '.sandbox.landlock.reads | type' <<<"$output")" = boolean ]
	[ "$(jq -r '.sandbox.landlock.scope | type' <<<"$output")" = boolean ]
	[ "$(jq -r '.sandbox.cgroup_pids.available | type' <<<"$output")" = boolean ]
	[ "$(jq -r '.sandbox.seccomp.used' <<<"$output")" = true ]
	[ "$(jq -c '.sandbox.seccomp.refuses' <<<"$output")" = '["keyctl","add_key","request_key","io_uring_setup","io_uring_enter","io_uring_register","userfaultfd","bpf","perf_event_open","kexec_load","kexec_file_load","init_module","finit_module","delete_module"]' ]
	if [ "$(jq -r '.sandbox.namespaces.available' <<<"$output")" = false ]; then
		[ "$(jq -r '[.problems[] | select(test("namespaces"))] | length' <<<"$output")" = 1 ]
	else
		[ "$(jq -r '[.problems[] | select(test("namespaces"))] | length' <<<"$output")" = 0 ]
	fi
	run -0 --separate-stderr forge-doctor --only sandbox
	assert_output --regexp "namespaces +(available|unavailable)"
	assert_output --regexp "pids cgroup +(available|unavailable)"
	assert_output --regexp "landlock walls +reads (yes|no), writes (yes|no), scope"
}

@test "a required confinement that is missing is said plainly" {
	cd "$REPO"
	mkdir -p .forge
	echo '{"sandbox":{"landlock":"require","network":"deny"}}' >.forge/config.json
	run -0 --separate-stderr forge-doctor --json --only sandbox
	[ "$(jq -r '.sandbox.landlock.mode' <<<"$output")" = require ]
	[ "$(jq -r '.sandbox.network_namespace.mode' <<<"$output")" = deny ]
	if [ "$(jq -r '.sandbox.landlock.available' <<<"$output")" = false ]; then
		[ "$(jq -r '[.problems[] | select(test("Landlock"))] | length' <<<"$output")" -ge 1 ]
	else
		[ "$(jq -r '[.problems[] | select(test("Landlock"))] | length' <<<"$output")" = 0 ]
	fi
}

@test "the tool list includes shellcheck with a version" {
	command -v shellcheck >/dev/null || skip "shellcheck is not installed"
	run -0 --separate-stderr shared json
	[ "$(jq -r '.tools[] | select(.name=="shellcheck") | .found' <<<"$output")" = true ]
	[[ "$(jq -r '.tools[] | select(.name=="shellcheck") | .version' <<<"$output")" =~ [0-9]+\.[0-9]+ ]]
	missing=$(jq -r '[$ARGS.positional[] as $t | select(([.tools[] | select(.name == $t)] | length) != 1) | $t] | join(" ")' \
		--args cppcheck clang-tidy flawfinder bandit eslint ruff flake8 bats pytest node npm go cargo cmake ctest make <<<"$output")
	[ -z "$missing" ] || { echo "no $missing"; false; }
	run -0 --separate-stderr shared text
	assert_output --regexp "shellcheck +[^ ]*[0-9]+\.[0-9]+"
}

@test "a tool missing from PATH is not found" {
	cd "$REPO"
	mkdir -p "$BATS_TEST_TMPDIR/empty"
	run -0 --separate-stderr /usr/bin/env PATH="$BATS_TEST_TMPDIR/empty" "$FORGE_BINDIR/forge-doctor" --json --only tools
	[ "$(jq -r '.tools[] | select(.name=="shellcheck") | .found' <<<"$output")" = false ]
	[ "$(jq -r '.tools[] | select(.name=="shellcheck") | .version' <<<"$output")" = null ]
	run -0 --separate-stderr /usr/bin/env PATH="$BATS_TEST_TMPDIR/empty" "$FORGE_BINDIR/forge-doctor" --only tools
	assert_output --regexp "shellcheck +not found"
}

@test "the tool probes run at the same time: two tools that each wait for the other both answer" {
	cd "$REPO"
	fake="$BATS_TEST_TMPDIR/fake"
	mkdir -p "$fake"
	# each says its version only once the other one has started (bounded:
	# one after the other, the first would wait out its 5 s probe limit)
	for pair in "cppcheck shellcheck" "shellcheck cppcheck"; do
		set -- $pair
		printf '#!/bin/sh\n/bin/touch "%s/%s.started"\ni=0\nwhile [ $i -lt 400 ]; do\n\t[ -e "%s/%s.started" ] && { echo "%s 9.9"; exit 0; }\n\t/bin/sleep 0.05; i=$((i + 1))\ndone\nexit 1\n' \
			"$fake" "$1" "$fake" "$2" "$1" >"$fake/$1"
		chmod +x "$fake/$1"
	done
	run -0 --separate-stderr /usr/bin/env PATH="$fake" "$FORGE_BINDIR/forge-doctor" --json --only tools
	[ "$(jq -c '[.tools[] | select(.name == "cppcheck" or .name == "shellcheck") | .version]' <<<"$output")" = '["cppcheck 9.9","shellcheck 9.9"]' ]
}

@test "the database: path, schema version against the known one, size" {
	cd "$REPO"
	run -0 --separate-stderr forge-doctor --json --only database
	[ "$(jq -r .database.path <<<"$output")" = "$FORGE_DB" ]
	[ "$(jq -r .database.exists <<<"$output")" = false ]
	[ ! -e "$FORGE_DB" ]   # doctor does not create it
	forge-events list >/dev/null
	[ ! -e "$FORGE_DB" ]   # nor does a command that only reads
	forge-db migrate >/dev/null
	run -0 --separate-stderr forge-doctor --json --only database
	[ "$(jq -r .database.exists <<<"$output")" = true ]
	[ "$(jq -r '.database.schema_version == .database.schema_known' <<<"$output")" = true ]
	[ "$(jq -r '.database.size_bytes > 0' <<<"$output")" = true ]
	[ "$(jq -r .database.status <<<"$output")" = current ]
}

@test "a database that is not one is reported, not fatal" {
	cd "$REPO"
	echo "not a database at all, just text padding out a page of bytes" >"$FORGE_DB"
	run -0 --separate-stderr forge-doctor --json --only database
	[ "$(jq -r .database.status <<<"$output")" = unreadable ]
	[ "$(jq -r '.problems | length' <<<"$output")" -ge 1 ]
}

@test "the project: languages and detected commands" {
	cd "$REPO"
	printf 'check:\n\ttrue\n' >Makefile
	echo 'int main(void){return 0;}' >main.c
	run -0 --separate-stderr forge-doctor --json --only project
	[ "$(jq -r .project.languages.c <<<"$output")" = 1 ]
	[ "$(jq -r .project.commands.test <<<"$output")" = "make check" ]
	run -0 --separate-stderr forge-doctor --only project
	assert_output --partial "make check (detected)"
}

@test "outside a repository the project is reported, not fatal" {
	cd "$BATS_TEST_TMPDIR"
	mkdir -p norepo && cd norepo
	run -0 --separate-stderr forge-doctor --json --only project
	[ "$(jq -r .project.root <<<"$output")" = null ]
	[ "$(jq -r '.project.note | type' <<<"$output")" = string ]
}

@test "outside a repository the summary agrees with the sections: no error lines, no problems" {
	cd "$BATS_TEST_TMPDIR"
	mkdir -p norepo && cd norepo
	unset FORGE_DB
	run -0 --separate-stderr forge-doctor --only config,database,project
	[[ $output == *"no problems found"* ]]
	! grep -q '^  error' <<<"$output"
	grep -q '^  note .*not in a repository' <<<"$output"
}

@test "a configuration that does not load is reported, exit 0" {
	cd "$REPO"
	mkdir -p .forge
	echo '{"safety":{"automation_level":77}}' >.forge/config.json
	run -0 --separate-stderr forge-doctor --json --only config
	[ "$(jq -r .config.loaded <<<"$output")" = false ]
	[ "$(jq -r '.config.error | test("automation_level")' <<<"$output")" = true ]
}

@test "--only: just the sections named (the configuration's problems too); an unknown one exits 2" {
	cd "$REPO"
	mkdir -p .forge
	echo '{"safety":{"automation_level":77}}' >.forge/config.json
	run -0 --separate-stderr forge-doctor --json --only provider,sandbox --only project
	[ "$(jq -c 'keys' <<<"$output")" = '["problems","project","provider","sandbox"]' ]
	[ "$(jq -r '[.problems[] | select(test("configuration does not load"))] | length' <<<"$output")" = 1 ]
	run -0 --separate-stderr forge-doctor --only database
	assert_output --partial "Database"
	refute_output --partial "Tools on PATH"
	refute_output --partial "Model provider"
	assert_output --partial "Summary"
	run -2 --separate-stderr forge-doctor --only provider,bogus
	[ -z "$output" ]
	[[ "$stderr" == *"unknown section 'bogus'"*"sandbox, tools, project"* ]]
	run -2 --separate-stderr forge-doctor --only ""
	[[ "$stderr" == *"unknown section ''"* ]]
}

@test "unknown option and extra operands exit 2" {
	run -2 --separate-stderr forge-doctor --bogus
	[[ "$stderr" == *bogus* ]]
	[ -z "$output" ]
	run -2 --separate-stderr forge-doctor extra
}

@test "forge doctor via the dispatcher" {
	[ -x "$FORGE_BINDIR/forge" ] || skip "forge is not built in $FORGE_BINDIR"
	cd "$REPO"
	run -0 --separate-stderr forge doctor --json
	[ "$(jq -r .forge.version <<<"$output")" != null ]
	[ "$(jq -r 'has("tools")' <<<"$output")" = true ]
}
