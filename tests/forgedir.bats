#!/usr/bin/env bats
# forgedir.bats - the repository's .forge/ after forge has run in it: the
# database and the worktrees never show in `git status`, while the project's
# own files there (config.json, skills, prompts) can be committed; the "*"
# .gitignore of an older forge is upgraded, a user's own is left alone.

bats_require_minimum_version 1.5.0

setup() {
	load test_helper/common
	forge_setup
	unset FORGE_DB	# the default: <repo>/.forge/forge.db
	export BATS_TEST_TIMEOUT=120
	REPO="$BATS_TEST_TMPDIR/calc"
	calc_repo "$REPO"
	cd "$REPO"
}

@test "after a run nothing of the database or the worktrees shows; config and skills can be added" {
	export FORGE_PROVIDER=replay FORGE_CASSETTE="$FORGE_ROOT/tests/fixtures/cassettes/run-clean.jsonl"
	run -0 --separate-stderr forge run "add a mul operation" </dev/null
	[ -f .forge/forge.db ]
	[ -n "$(ls .forge/worktrees)" ]
	run -0 git status --porcelain --untracked-files=all
	[ -z "$output" ]
	mkdir -p .forge/skills/x
	echo '{"llm":{"model":"m"}}' >.forge/config.json
	printf -- '---\nname: x\ndescription: x\n---\nx\n' >.forge/skills/x/SKILL.md
	run -0 --separate-stderr git add .forge/config.json .forge/skills/x/SKILL.md
	run -0 git status --porcelain --untracked-files=all
	[ "$output" = "$(printf 'A  .forge/config.json\nA  .forge/skills/x/SKILL.md')" ]
}

@test "the '*' .gitignore an older forge wrote is upgraded; a user's own is left alone" {
	mkdir .forge
	printf '*\n' >.forge/.gitignore
	run -0 --separate-stderr forge-db migrate
	grep -qx '[*].db' .forge/.gitignore
	[ "$(grep -cx '[*]' .forge/.gitignore)" -eq 0 ]
	echo '{}' >.forge/config.json
	run -0 git status --porcelain --untracked-files=all
	[ "$output" = "?? .forge/config.json" ]

	printf '*\n!config.json\n' >.forge/.gitignore
	rm -f .forge/forge.db*
	run -0 --separate-stderr forge-db migrate
	[ "$(cat .forge/.gitignore)" = "$(printf '*\n!config.json')" ]
}
