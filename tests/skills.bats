#!/usr/bin/env bats
# forge-skills: SKILL.md discovery (project and user), overrides, warnings
# for bad files, matching by phase and task, --show, --json, usage errors.

load test_helper/common

setup() {
	forge_setup
	REPO="$BATS_TEST_TMPDIR/repo"
	make_repo "$REPO"
	mkdir -p "$REPO/.forge" "$XDG_CONFIG_HOME/forge"
	cp -R "$FORGE_ROOT/tests/fixtures/skills/project" "$REPO/.forge/skills"
	cp -R "$FORGE_ROOT/tests/fixtures/skills/user" "$XDG_CONFIG_HOME/forge/skills"
	cd "$REPO"
}

@test "--help shows the synopsis and exits 0" {
	run -0 --separate-stderr forge-skills --help
	assert_output --partial "usage: forge-skills"
	assert_output --partial "--show NAME"
	[ -z "$stderr" ]
}

@test "lists project and user skills with category, phases and path" {
	run -0 --separate-stderr forge-skills
	assert_line --regexp '^tdd +code +implement,test +.*/repo/\.forge/skills/tdd/SKILL\.md$'
	assert_line --regexp '^docs +documentation +any +.*/home/\.config/forge/skills/docs/SKILL\.md$'
	assert_line --regexp '^security-review +security +review '
	[ "${#lines[@]}" -eq 6 ]
	refute_output --partial "hidden"
}

@test "a project skill overrides the user skill of the same name" {
	run -0 --separate-stderr forge-skills --json
	[ "$(jq -r '.[] | select(.name == "shared") | .source' <<<"$output")" = project ]
	[ "$(jq -r '.[] | select(.name == "shared") | .description' <<<"$output")" = "The project's version" ]
	[ "$(jq '[.[] | select(.name == "shared")] | length' <<<"$output")" = 1 ]
	run -0 --separate-stderr forge-skills --show shared
	assert_output "project text"
}

@test "bad skill files are skipped with a warning naming the file and line" {
	run -0 --separate-stderr forge-skills
	[[ $stderr == *"forge-skills: warning: $REPO/.forge/skills/broken/SKILL.md:3: front matter is not valid YAML"* ]]
	[[ $stderr == *"/badphase/SKILL.md:4: unknown phase 'shipping'"* ]]
	[[ $stderr == *"/nofm/SKILL.md:1: no front matter"* ]]
	[[ $stderr == *"/nodesc/SKILL.md:2: 'description' is required"* ]]
	[[ $stderr == *"/docs2/SKILL.md:0: duplicate skill 'docs'"* ]]
	[ "$(grep -c warning <<<"$stderr")" -eq 5 ]
	refute_output --partial broken
	# -q keeps the warnings quiet
	run -0 --separate-stderr forge-skills -q
	[ -z "$stderr" ]
}

@test "a SKILL.md that is a directory is skipped with a warning" {
	mkdir -p .forge/skills/odd/SKILL.md
	run -0 --separate-stderr forge-skills
	[[ $stderr == *"forge-skills: warning: $REPO/.forge/skills/odd/SKILL.md"*"a directory, not a skill's file; not read"* ]]
}

@test "a file over 64 KiB and a file that is not UTF-8 are skipped, not fatal" {
	mkdir -p .forge/skills/big .forge/skills/latin1
	{ printf -- '---\ndescription: big\n---\n'; head -c 70000 /dev/zero | tr '\0' x; } >.forge/skills/big/SKILL.md
	printf -- '---\ndescription: caf\xe9\n---\n' >.forge/skills/latin1/SKILL.md
	run -0 --separate-stderr forge-skills
	[[ $stderr == *"big/SKILL.md:0: larger than 65536 bytes; skipped"* ]]
	[[ $stderr == *"latin1/SKILL.md:0: not valid UTF-8"* ]]
	[ "${#lines[@]}" -eq 6 ]
}

@test "PHASE lists the skills of that phase with scores" {
	run -0 --separate-stderr forge-skills review
	assert_line --index 0 --regexp '^ +3  security-review|^ +2  security-review'
	assert_output --partial "shared"
	refute_output --partial "tdd"
	run -0 --separate-stderr forge-skills implement --json
	[ "$(jq -r '.[0].name' <<<"$output")" = tdd ]
	[ "$(jq -r '.[0].score' <<<"$output")" = 3 ]
	[ "$(jq -r '.[0].text' <<<"$output" | head -1)" = "# TDD" ]
}

@test "--task matches keywords; phase and task combine; --limit" {
	run -0 --separate-stderr forge-skills --task "Update the README and fix the failing test in auth"
	[ "${#lines[@]}" -eq 3 ]
	assert_line --index 0 --regexp 'tdd'
	run -0 --separate-stderr forge-skills --json --task "store the password hash" --limit 1
	[ "$(jq -r 'map(.name) | join(",")' <<<"$output")" = security-review ]
	run -0 --separate-stderr forge-skills deploy --task "tdd"
	[ -z "$output" ]
	run -0 --separate-stderr forge-skills --json --task "nothing relevant"
	[ "$output" = "[]" ]
}

@test "--show prints a skill's text; an unknown name exits 1" {
	run -0 --separate-stderr forge-skills --show tdd
	assert_line --index 0 "# TDD"
	assert_line --index 1 "1. Write a failing test first."
	run -0 --separate-stderr forge-skills --show docs --json
	[ "$(jq -r .source <<<"$output")" = user ]
	[ "$(jq -r .text <<<"$output")" = "Update the README when behaviour changes." ]
	run -1 --separate-stderr forge-skills --show nope
	[[ $stderr == *"no skill named 'nope'"* ]]
}

@test "usage errors exit 2" {
	run -2 --separate-stderr forge-skills shipping
	[[ $stderr == *"unknown phase 'shipping'"* ]]
	run -2 --separate-stderr forge-skills plan test
	run -2 --separate-stderr forge-skills --show tdd plan
	run -2 --separate-stderr forge-skills --limit 0
	run -2 --separate-stderr forge-skills --bogus
}

@test "outside a repository only user skills are listed; XDG_CONFIG_HOME is honoured" {
	cd "$BATS_TEST_TMPDIR"
	run -0 --separate-stderr forge-skills
	[ "${#lines[@]}" -eq 2 ]
	assert_output --partial "docs"
	export XDG_CONFIG_HOME="$BATS_TEST_TMPDIR/elsewhere"
	run -0 --separate-stderr forge-skills
	[ -z "$output" ]
	run -2 --separate-stderr forge-skills --repo "$BATS_TEST_TMPDIR/not-a-repo"
}

@test "forge skills dispatches to forge-skills" {
	run -0 --separate-stderr forge skills --show commit-style
	assert_output --partial "type(scope): subject"
}

@test "--config is read and checked as by every program; --db is taken and opens nothing (fix135 #2)" {
	# (before: neither was looked at: a --config that does not exist passed)
	run -2 --separate-stderr forge-skills --config "$BATS_TEST_TMPDIR/nosuch.json"
	[ "$stderr" = "forge-skills: cannot open '$BATS_TEST_TMPDIR/nosuch.json': No such file or directory" ]
	[ -z "$output" ]
	printf '{"x": ' >"$BATS_TEST_TMPDIR/bad.json"
	run -2 --separate-stderr forge-skills --config "$BATS_TEST_TMPDIR/bad.json" review
	[[ "$stderr" == "forge-skills: $BATS_TEST_TMPDIR/bad.json: "* ]]
	echo '{"nosuchkey": 1}' >"$BATS_TEST_TMPDIR/unknown.json"
	run -2 --separate-stderr forge skills --config "$BATS_TEST_TMPDIR/unknown.json"
	[[ "$stderr" == *"unexpected property 'nosuchkey'"* ]]
	# a good one changes nothing, and --db makes no database
	echo '{}' >"$BATS_TEST_TMPDIR/good.json"
	run -0 --separate-stderr forge --config "$BATS_TEST_TMPDIR/good.json" --db "$BATS_TEST_TMPDIR/x.db" skills -q
	[ "${#lines[@]}" -eq 6 ]
	[ ! -e "$BATS_TEST_TMPDIR/x.db" ]
}
