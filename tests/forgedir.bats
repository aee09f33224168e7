#!/usr/bin/env bats
# forgedir.bats - the repository's .forge/ after forge has run in it: the
# database and the worktrees never show in `git status`, while the project's
# own files there (config.json, skills, prompts) can be committed; the "*"
# .gitignore of an older forge is upgraded, a user's own is left alone; under
# sudo in a user's repository, forge's own files there are the user's.

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
	# the run's worktree is out of the checkout, in $FORGE_WORKTREES/KEY:
	# nothing of it for the project's jest or vitest to collect, not even
	# among the files git ignores (before: .forge/worktrees/TRACE)
	T=$(forge history --json -n 1 | jq -r .trace_id)
	[ "$(run_worktree "$T")" = "$(runs_dir)/$T" ]
	[ -f "$(runs_dir)/$T/calc.c" ]
	[ "$(cat "$(runs_dir)/root")" = "$(pwd -P)" ]
	[ ! -e .forge/worktrees ] || [ -z "$(ls -A .forge/worktrees)" ]
	run -0 git status --porcelain --ignored --untracked-files=all
	refute_output --partial worktrees
	refute_output --partial calc.c
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

# as_nobody CMD...: CMD as the user sudo is pretended to be run by (nobody),
# with a HOME of its own.
as_nobody() {
	setpriv --reuid=65534 --regid=65534 --clear-groups \
		env -u XDG_CACHE_HOME -u XDG_CONFIG_HOME HOME="$UHOME" "$@"
}

@test "sudo forge run in a user's own repository: forge's own files are the user's, and what stays root's is named with the chown that gives it back" {
	[ "$(id -u)" = 0 ] || skip "needs root, as sudo gives it"
	command -v setpriv >/dev/null || skip "setpriv is not installed"
	setpriv --reuid=65534 --regid=65534 --clear-groups true || skip "cannot switch to nobody here"
	local nobody d
	nobody=$(id -nu 65534)
	# (bats makes its directories 700: nobody may pass through them)
	d="$BATS_TEST_TMPDIR"
	while [ "$d" != / ] && [ -n "$d" ]; do chmod a+x "$d"; d=${d%/*}; done
	UHOME="$BATS_TEST_TMPDIR/uhome"
	mkdir -p "$UHOME"
	chown -R 65534:65534 "$REPO" "$UHOME"
	# as `sudo forge run` (HOME kept) in the user's repository; forge lets
	# root in as git does (SUDO_UID)
	export FORGE_PROVIDER=replay FORGE_CASSETTE="$FORGE_ROOT/tests/fixtures/cassettes/run-clean.jsonl"
	run -0 --separate-stderr env -u XDG_CACHE_HOME SUDO_UID=65534 SUDO_GID=65534 SUDO_USER="$nobody" \
		HOME="$UHOME" forge run "add a mul operation" </dev/null
	[ -f .forge/forge.db ] && [ -f .forge/forge.db.vectors ] && [ -n "$(ls "$FORGE_WORKTREES")" ]
	# .forge, its .gitignore, the database with its -wal and -shm, the
	# vectors and their lock, worktrees/; Forge's lock in .git; the cache
	# below the user's HOME (before: all root's, .forge 0700)
	run -0 find .forge -maxdepth 1 ! -user 65534
	[ -z "$output" ]
	[ "$(stat -c %u .git/forge-worktrees.lock)" = 65534 ]
	[ -d "$UHOME/.cache/forge" ]
	run -0 find "$UHOME" ! -user 65534
	[ -z "$output" ]
	# so the user reads their repository's runs as before
	run -0 --separate-stderr as_nobody forge history
	[[ $output == *"add a mul operation"* ]]
	# what git made stays root's, as with `sudo git`: the message names the
	# directory in the way and how to give it back
	[ "$(stat -c %u .git/refs/heads/forge)" = 0 ]
	run -5 --separate-stderr as_nobody forge run "add a mul operation" </dev/null
	[[ $stderr == *"'$REPO/.git/refs/heads/forge' belongs to root (mode 0755), and user $nobody may not write in it"*"give it back with: sudo chown -R $nobody '$REPO/.git/refs/heads/forge'"* ]]

	# a .forge an older forge left root's: named, not the config.json that
	# is not there (before: "cannot open '.forge/config.json': Permission
	# denied", exit 2)
	rm -rf .forge
	mkdir -m 700 .forge
	run -2 --separate-stderr as_nobody forge history
	[[ $stderr == *"'$REPO/.forge' belongs to root (mode 0700), and user $nobody may not enter it"*"give it back with: sudo chown -R $nobody '$REPO/.forge'"* ]]
	run -5 --separate-stderr as_nobody forge-db migrate --db "$REPO/.forge/forge.db"
	[[ $stderr == *"cannot create database '$REPO/.forge/forge.db'"*"sudo chown -R $nobody '$REPO/.forge'"* ]]

	# root's own repository under sudo, or no sudo: root's, as ever
	rm -rf .forge
	chown -R 0:0 "$REPO"
	run -0 --separate-stderr env SUDO_UID=65534 SUDO_GID=65534 forge-db migrate
	[ "$(stat -c %u .forge .forge/forge.db | sort -u)" = 0 ]
}

# Nothing of a run is left in the repository: no worktree (git's entry or
# directory), no forge/ branch, no refs/forge/ ref.
no_run_left() {
	[ "$(git worktree list | wc -l)" -eq 1 ]
	[ -z "$(git for-each-ref refs/heads/forge refs/forge)" ]
	no_run_worktrees
	[ -z "$(ls -A "$(git rev-parse --git-common-dir)/worktrees" 2>/dev/null)" ]
}

@test "a tracked file named .forge: forge run and the phases refuse it at once (exit 2), saying where and what to do" {
	export FORGE_PROVIDER=replay FORGE_CASSETTE="$FORGE_ROOT/tests/fixtures/cassettes/run-clean.jsonl"
	FORGE_DB="$BATS_TEST_TMPDIR/forge.db" forge-plan -q --task "add a mul operation" </dev/null >"$BATS_TEST_TMPDIR/plan"
	echo 'not forge' >.forge
	git add .forge && git commit -qm "a file named .forge"
	said="the repository's .forge is a file, not a directory: Forge keeps its configuration, database and runs' worktrees in the directory .forge/ of a repository; rename or remove it (a tracked file: git mv .forge NEW-NAME, then commit) and run again ('$(pwd -P)/.forge')"
	# (before: exit 5 when the database or the worktree was made in it)
	for db in "" "$BATS_TEST_TMPDIR/forge.db"; do
		FORGE_DB=$db run -2 --separate-stderr forge run "add a mul operation" </dev/null
		assert_equal "$stderr" "forge run: $said"
		assert_output ""
		FORGE_DB=$db run -2 --separate-stderr forge-implement <"$BATS_TEST_TMPDIR/plan"
		assert_equal "$stderr" "forge-implement: $said"
		assert_output ""	# no model call, no state
	done
	run -2 --separate-stderr forge-plan --task "add a mul operation" </dev/null
	assert_equal "$stderr" "forge-plan: $said"
	no_run_left
	[ "$(cat .forge)" = "not forge" ]
	run -0 git status --porcelain --untracked-files=all
	assert_output ""
}

@test "a repository whose path is too long for a run's worktree: exit 2 naming the file and what to do; nothing made" {
	deep_repo
	export FORGE_PROVIDER=replay FORGE_CASSETTE="$FORGE_ROOT/tests/fixtures/cassettes/run-clean.jsonl"
	export FORGE_DB="$BATS_TEST_TMPDIR/forge.db"
	run -2 --separate-stderr forge run "add a mul operation" </dev/null
	# (before: exit 5, the worktree half made and left registered with its branch)
	[[ $stderr == "forge run: a path in the repository is too long for a run's worktree: '$DEEP' would be "*" bytes from '/' in the run's worktree $(basename "$(runs_dir)")/"*", over the system's limit of 4095 (PATH_MAX); set FORGE_WORKTREES to a directory at least "*" bytes shorter than '/"* ]]
	assert_output ""
	run -0 forge history --json
	assert_output ""		# nothing was started
	no_run_left
	run -0 git status --porcelain --untracked-files=all
	assert_output ""
}

@test "a run's worktree whose checkout fails leaves nothing: its directory, git's entry of it and its branch are removed" {
	export FORGE_PROVIDER=replay FORGE_CASSETTE="$FORGE_ROOT/tests/fixtures/cassettes/run-clean.jsonl"
	export FORGE_DB="$BATS_TEST_TMPDIR/forge.db"
	# a commit holding a file whose name is longer than a file system
	# allows (255 bytes): git stores it, no checkout can write it
	blob=$(echo x | git hash-object -w --stdin)
	name=$(printf 'n%.0s' {1..300})
	tree=$({ git ls-tree HEAD; printf '100644 blob %s\t%s\n' "$blob" "$name"; } | git mktree)
	git update-ref HEAD "$(git commit-tree "$tree" -p HEAD -m "a long name")"
	run -5 --separate-stderr forge run "add a mul operation" </dev/null
	[[ $stderr == *"forge run: cannot make the run's worktree: cannot create worktree '$(runs_dir)/"* ]]
	[[ $stderr != *"what was made for it is left"* ]]
	# (before: the half-made worktree stayed registered, on its branch)
	no_run_left
}

@test "in a repository nothing ran in, a command on a run, gate or finding makes no database: exit 2 saying where to go instead" {
	# (before: forge gate approve, resume, cancel, merge, findings dismiss
	# and gc made .forge/forge.db here, then said the run or gate is unknown)
	local msg="no Forge database in '$REPO' (no $REPO/.forge/forge.db): no run has been recorded in this repository; cd to the repository the run was made in (or use --repo DIR), or name its database with --db PATH or FORGE_DB"
	for cmd in "gate approve 01JDB3AAAA" "gate reject 01JDB3AAAA" "resume 01JDB3AAAA" "cancel 01JDB3AAAA" \
		   "merge 01JDB3AAAA" "findings dismiss 01JDB3AAAA"; do
		# shellcheck disable=SC2086
		run -2 --separate-stderr forge $cmd </dev/null
		[[ "$stderr" == "forge"*": $msg" ]] || { echo "$cmd: $stderr"; false; }
		[ ! -e .forge ] || { echo "$cmd made .forge"; false; }
	done
	# the commands that read one say it is missing beside "no run matches"
	for cmd in "show 01JDB3AAAA" "status 01JDB3AAAA" "report 01JDB3AAAA" "diff 01JDB3AAAA" "gate list 01JDB3AAAA"; do
		# shellcheck disable=SC2086
		run -2 --separate-stderr forge $cmd </dev/null
		[[ "$stderr" == *"no run matches '01JDB3AAAA': the database it was looked for in does not exist (nothing has been recorded there); cd to the repository the run was made in"* ]] ||
			{ echo "$cmd: $stderr"; false; }
		[ ! -e .forge ] || { echo "$cmd made .forge"; false; }
	done
	own_tmpdir
	run -0 --separate-stderr forge gc
	assert_output "nothing to remove"
	[ ! -e .forge ]
	# a database named that is not there: said so, not made
	FORGE_DB="$BATS_TEST_TMPDIR/elsewhere.db" run -2 --separate-stderr forge gate approve 01JDB3AAAA
	[ "$stderr" = "forge-gate: no database at '$BATS_TEST_TMPDIR/elsewhere.db': no run has been recorded there (check --db or FORGE_DB: name the database the run was recorded in)" ]
	[ ! -e "$BATS_TEST_TMPDIR/elsewhere.db" ]
	# once something is recorded here, the same command finds the database
	export FORGE_PROVIDER=replay FORGE_CASSETTE="$FORGE_ROOT/tests/fixtures/cassettes/run-clean.jsonl"
	run -0 --separate-stderr forge run "add a mul operation" </dev/null
	run -2 --separate-stderr forge gate approve 01JDB3AAAA
	[[ "$stderr" == "forge-gate: no gate '01JDB3AAAA'"* ]]
}
