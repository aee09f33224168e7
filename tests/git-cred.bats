#!/usr/bin/env bats
# git-cred.bats - credentials for git.push_remote / FORGE_PUSH_REMOTE and the
# fetch of a run adopted by another clone, over real HTTP on loopback: git's
# smart HTTP protocol (`git http-backend` behind Basic auth,
# tests/helpers/git_http_server.py).  Forge asks git's own credential
# helpers (`git credential fill`, then approve, or reject when refused), takes
# a password in the URL, and never lets a password reach stderr, an event or
# the database.  Over ssh (an sshd of the test's own on loopback, when
# openssh-server is installed): the SSH agent, then ~/.ssh's keys, the host
# key checked against known_hosts.  A push that fails is a warning and a
# run.push_failed event: the run goes on (README "Runs on several machines").

bats_require_minimum_version 1.5.0

setup() {
	load test_helper/common
	forge_setup
	test_python3
	export BATS_TEST_TIMEOUT=180
	CASSETTES="$FORGE_ROOT/tests/fixtures/cassettes"
	CONFIGS="$FORGE_ROOT/tests/fixtures/supervisor"
	export FORGE_PROVIDER=replay FORGE_CASSETTE="$CASSETTES/run-clean.jsonl"
	PASSWORD=pw-Xq7f3k9Lr2mZ
	echo "$PASSWORD" >"$BATS_TEST_TMPDIR/password"
	mkdir -p "$BATS_TEST_TMPDIR/srv"
	git init -q --bare -b main "$BATS_TEST_TMPDIR/srv/calc.git"
	calc_repo "$BATS_TEST_TMPDIR/seed"
	git -C "$BATS_TEST_TMPDIR/seed" push -q "$BATS_TEST_TMPDIR/srv/calc.git" main
	BASE=$(git -C "$BATS_TEST_TMPDIR/seed" rev-parse HEAD)
	read -r PORT SERVER_PID < <("$TEST_PYTHON3" "$FORGE_ROOT/tests/helpers/git_http_server.py" \
		--root "$BATS_TEST_TMPDIR/srv" --user forge --password-file "$BATS_TEST_TMPDIR/password" \
		--log "$BATS_TEST_TMPDIR/http.log" 3>&-)
	[ -n "$SERVER_PID" ]
	URL="http://127.0.0.1:$PORT/calc.git"
	REPO="$BATS_TEST_TMPDIR/a"
	git clone -q "$BATS_TEST_TMPDIR/srv/calc.git" "$REPO"
	cd "$REPO"
}

teardown() {
	[ -z "${SERVER_PID:-}" ] || kill "$SERVER_PID" 2>/dev/null || true
	ssh_teardown
}

# A helper that answers from $BATS_TEST_TMPDIR/password and logs what git
# asked of it (never the password) in helper.log.
logging_helper() {
	cat >"$BATS_TEST_TMPDIR/helper.sh" <<-EOF
		#!/bin/sh
		{ echo "action=\$1"; grep -v '^password='; echo; } >>"$BATS_TEST_TMPDIR/helper.log"
		if [ "\$1" = get ]; then echo username=forge; echo "password=\$(cat "$BATS_TEST_TMPDIR/password")"; fi
	EOF
	git -C "$1" config credential.helper "!sh $BATS_TEST_TMPDIR/helper.sh"
}

# to_files STATUS COMMAND...: COMMAND (stdin /dev/null) with its stdout in
# $BATS_TEST_TMPDIR/out and stderr in err, which must exit with STATUS.
to_files() {
	local want=$1 rc=0
	shift
	"$@" </dev/null >"$BATS_TEST_TMPDIR/out" 2>"$BATS_TEST_TMPDIR/err" || rc=$?
	cat "$BATS_TEST_TMPDIR/err"
	[ "$rc" -eq "$want" ] || { echo "exit $rc, not $want: $*"; return 1; }
}

# the password is nowhere: not in what forge printed, its events, the database
no_password_anywhere() {
	! grep -r -a -F "$PASSWORD" "$BATS_TEST_TMPDIR/out" "$BATS_TEST_TMPDIR/err" "$FORGE_DB"* "$REPO/.forge" 2>/dev/null || false
	! forge events replay "$T" | grep -F "$PASSWORD" || false
}

last_trace() {
	forge history --json -n 1 | jq -r .trace_id
}

@test "git.push_remote over HTTP with Basic auth: git's credential helper gives the password; each push approved to it; the branch on the server" {
	logging_helper "$REPO"
	git -C "$REPO" config credential.useHttpPath true
	to_files 0 env FORGE_PUSH_REMOTE=$URL forge run "add a mul operation"
	T=$(last_trace)
	[ "$(git -C "$BATS_TEST_TMPDIR/srv/calc.git" log --format=%s "$BASE..forge/$T")" = "forge: add a mul operation (attempt 1)" ]
	[ "$(git -C "$BATS_TEST_TMPDIR/srv/calc.git" rev-parse "forge/$T")" = "$(git -C "$REPO" rev-parse "forge/$T")" ]
	run -0 forge events replay "$T"
	jq -e -s --arg url "$URL" '[.[] | select(.type == "run.pushed")] | length >= 5 and all(.payload.remote == $url)' <<<"$output"
	jq -e -s '[.[] | select(.type == "run.push_failed")] == []' <<<"$output"
	# what git's helper was asked: the remote as git describes it (useHttpPath: the path too); each fill approved
	grep -q "^protocol=http$" "$BATS_TEST_TMPDIR/helper.log"
	grep -q "^host=127.0.0.1:$PORT$" "$BATS_TEST_TMPDIR/helper.log"
	grep -q "^path=calc.git$" "$BATS_TEST_TMPDIR/helper.log"
	gets=$(grep -c '^action=get$' "$BATS_TEST_TMPDIR/helper.log")
	[ "$gets" -ge 5 ]
	[ "$(grep -c '^action=store$' "$BATS_TEST_TMPDIR/helper.log")" -eq "$gets" ]
	[ "$(grep -c '^action=erase$' "$BATS_TEST_TMPDIR/helper.log")" -eq 0 ]
	# the server saw the user, and only authenticated requests got through
	grep -q "POST /calc.git/git-receive-pack 200 user=forge" "$BATS_TEST_TMPDIR/http.log"
	no_password_anywhere
}

@test "git's credential helper gets neither the GitHub token nor the model keys (README: never passed to a child)" {
	cat >"$BATS_TEST_TMPDIR/helper.sh" <<-EOF
		#!/bin/sh
		env | grep -c -e '^GITHUB_TOKEN=' -e '^GH_TOKEN=' -e '^ANTHROPIC_API_KEY=' -e '^OPENAI_API_KEY=' >>"$BATS_TEST_TMPDIR/leaks"
		env | grep -c '^HOME=' >>"$BATS_TEST_TMPDIR/homes"
		if [ "\$1" = get ]; then echo username=forge; echo "password=\$(cat "$BATS_TEST_TMPDIR/password")"; fi
	EOF
	git -C "$REPO" config credential.helper "!sh $BATS_TEST_TMPDIR/helper.sh"
	to_files 0 env FORGE_PUSH_REMOTE=$URL GITHUB_TOKEN=ghp_leaktest0123456789 GH_TOKEN=ghp_leaktest0123456789 \
		ANTHROPIC_API_KEY=sk-ant-leaktest-0123456789 OPENAI_API_KEY=sk-leaktest-0123456789 forge run "add a mul operation"
	# the helper ran (fill and approve), each time with the rest of the environment and none of the keys
	[ "$(wc -l <"$BATS_TEST_TMPDIR/homes")" -ge 2 ]
	! grep -qv '^1$' "$BATS_TEST_TMPDIR/homes"
	[ "$(sort -u "$BATS_TEST_TMPDIR/leaks")" = 0 ]
}

@test "credential.helper store then cache: the cache daemon forge's approve starts outlives the run and holds the credential" {
	SOCK="$BATS_TEST_TMPDIR/cache/s"
	echo "http://forge:$PASSWORD@127.0.0.1:$PORT" >"$BATS_TEST_TMPDIR/creds"
	git -C "$REPO" config credential.helper "store --file=$BATS_TEST_TMPDIR/creds"
	git -C "$REPO" config --add credential.helper "cache --timeout=600 --socket=$SOCK"
	to_files 0 env FORGE_PUSH_REMOTE=$URL forge run "add a mul operation"
	T=$(last_trace)
	[ "$(git -C "$BATS_TEST_TMPDIR/srv/calc.git" rev-parse "forge/$T")" = "$(git -C "$REPO" rev-parse "forge/$T")" ]
	run -0 git credential-cache --socket "$SOCK" get <<<"$(printf 'protocol=http\nhost=127.0.0.1:%s\n' "$PORT")"
	git credential-cache --socket "$SOCK" exit
	assert_line "username=forge"
	assert_line "password=$PASSWORD"
	no_password_anywhere
}

@test "credential.helper store with a wrong password: each push fails naming the remote, the helper forgets it, the run completes" {
	echo "http://forge:not-the-password-00@127.0.0.1:$PORT" >"$BATS_TEST_TMPDIR/creds"
	git -C "$REPO" config credential.helper "store --file=$BATS_TEST_TMPDIR/creds"
	to_files 0 env FORGE_PUSH_REMOTE=$URL forge run "add a mul operation"
	T=$(last_trace)
	grep -q "^forge run: warning: cannot push the run's branch to '$URL': cannot push 'forge/$T' to '$URL': authentication failed: .*; the run goes on$" \
		"$BATS_TEST_TMPDIR/err"
	run -0 forge status --json "$T"
	jq -e '.run.status == "completed"' <<<"$output"
	run -0 forge events replay "$T"
	# the first push: refused; the helper then has nothing, as with git
	jq -e -s '[.[] | select(.type == "run.push_failed") | .payload.error] | length >= 5
		and (.[0] | test("authentication failed: the server refused the username and password of git.s credential helper"))
		and (.[1:] | all(test("no credentials: git credential fill: fatal: could not read Username")))' <<<"$output"
	jq -e -s '[.[] | select(.type == "run.pushed")] == []' <<<"$output"
	# git credential reject: the store helper dropped the refused entry
	[ ! -s "$BATS_TEST_TMPDIR/creds" ]
	run -1 git -C "$BATS_TEST_TMPDIR/srv/calc.git" rev-parse --verify -q "forge/$T"
	grep -q "user=wrong" "$BATS_TEST_TMPDIR/http.log"
	! grep -q "not-the-password-00" "$BATS_TEST_TMPDIR/err" || false
	# the right one in the store: the next push (a resume of the completed run's branch) goes through
	echo "http://forge:$PASSWORD@127.0.0.1:$PORT" >"$BATS_TEST_TMPDIR/creds"
	export FORGE_CASSETTE="$CASSETTES/run-highrisk.jsonl"
	to_files 4 env FORGE_PUSH_REMOTE=$URL forge run --config "$CONFIGS/high-risk.json" "add a mul operation"
	T=$(last_trace)
	[ "$(git -C "$BATS_TEST_TMPDIR/srv/calc.git" rev-parse "forge/$T")" = "$BASE" ]
	no_password_anywhere
}

@test "no credential helper: a clear error naming the remote, no prompt; a password in the URL works and is shown as ***" {
	to_files 0 env FORGE_PUSH_REMOTE=$URL forge run "add a mul operation"
	T=$(last_trace)
	grep -q "^forge run: warning: cannot push the run's branch to '$URL': cannot push 'forge/$T' to '$URL': no credentials: git credential fill: " \
		"$BATS_TEST_TMPDIR/err"
	# the password in the URL: used, and hidden wherever the remote is named
	SECRET_URL="http://forge:$PASSWORD@127.0.0.1:$PORT/calc.git"
	SHOWN="http://forge:***@127.0.0.1:$PORT/calc.git"
	to_files 0 env FORGE_PUSH_REMOTE=$SECRET_URL forge run "add a mul operation"
	T=$(last_trace)
	[ "$(git -C "$BATS_TEST_TMPDIR/srv/calc.git" rev-parse "forge/$T")" = "$(git -C "$REPO" rev-parse "forge/$T")" ]
	run -0 forge events replay "$T"
	jq -e -s --arg shown "$SHOWN" '[.[] | select(.type == "run.pushed")] | length >= 5 and all(.payload.remote == $shown)' <<<"$output"
	no_password_anywhere
	# a wrong password in the URL: the warning names the remote without it
	to_files 0 env FORGE_PUSH_REMOTE="http://forge:wrong-password-77@127.0.0.1:$PORT/calc.git" forge run "add a mul operation"
	grep -q "cannot push the run's branch to 'http://forge:\*\*\*@127.0.0.1:$PORT/calc.git'" "$BATS_TEST_TMPDIR/err"
	! grep -q wrong-password-77 "$BATS_TEST_TMPDIR/err" || false
	run -0 forge events replay "$(last_trace)"
	[[ "$output" != *wrong-password-77* ]]
}

@test "forge resume in another clone fetches the run's branch over HTTP with the helper's credentials" {
	export FORGE_CASSETTE="$CASSETTES/run-highrisk.jsonl"
	logging_helper "$REPO"
	to_files 4 env FORGE_PUSH_REMOTE=$URL forge run --config "$CONFIGS/high-risk.json" "add a mul operation"
	T=$(last_trace)
	run -0 forge gate approve "$(forge gate list --json | jq -r .id)"
	B="$BATS_TEST_TMPDIR/b"
	git clone -q "$BATS_TEST_TMPDIR/srv/calc.git" "$B"
	logging_helper "$B"
	rm -f "$BATS_TEST_TMPDIR/helper.log"
	cd "$B"
	to_files 0 env FORGE_PUSH_REMOTE=$URL forge resume --config "$CONFIGS/high-risk.json" "$T"
	run -0 forge events replay "$T"
	jq -e -s --arg b "$B" '[.[] | select(.type == "run.adopted") | .payload] | length == 1 and .[0].fetched == true
		and .[0].repo == $b' <<<"$output"
	grep -q "GET /calc.git/info/refs?service=git-upload-pack 200 user=forge" "$BATS_TEST_TMPDIR/http.log"
	[ "$(git -C "$BATS_TEST_TMPDIR/srv/calc.git" rev-parse "forge/$T")" = "$(git -C "$B" rev-parse "forge/$T")" ]
	[ "$(grep -c '^action=get$' "$BATS_TEST_TMPDIR/helper.log")" -ge 2 ]
	no_password_anywhere
}

# sshd_start: an sshd of this test's own on 127.0.0.1 ($SSH_PORT: random
# ports tried until one binds), accepting the key $BATS_TEST_TMPDIR/userkey
# for this user, serving the bare repository as $SSH_URL.  sshd runs in the
# foreground (-D) as a background job ($SSHD_PID): a daemonizing sshd
# returns before it listens, and its child may then fail to bind.  Waits
# for the listening socket or the daemon's exit, whichever comes first.
# Skips, saying why, without sshd.
sshd_start() {
	[ -x /usr/sbin/sshd ] || skip "no sshd (openssh-server; scripts/install-deps installs it)"
	# Under the sanitizers, allocation stacks come from the slow unwinder:
	# libgit2.a is built without frame pointers, so the fast one may stop
	# in it and tests/lsan.supp's libgit2 ssh entry then matches nothing
	# (seen in a clean CI run: a stack of stdalloc__realloc alone).  Only
	# for the ssh tests: it costs a forge run ~40% more CPU under ASan.
	[ -z "${ASAN_OPTIONS:-}" ] || export ASAN_OPTIONS="$ASAN_OPTIONS:fast_unwind_on_malloc=0"
	if [ ! -d /run/sshd ]; then
		[ "$(id -u)" -eq 0 ] || skip "sshd needs its privilege separation directory /run/sshd"
		mkdir -p /run/sshd
	fi
	local d="$BATS_TEST_TMPDIR/sshd" i
	mkdir -p "$d"
	ssh-keygen -q -t ed25519 -N '' -f "$d/hostkey"
	ssh-keygen -q -t ed25519 -N '' -f "$BATS_TEST_TMPDIR/userkey"
	cp "$BATS_TEST_TMPDIR/userkey.pub" "$d/authorized_keys"
	SSHD_PID=
	for i in $(seq 20); do
		SSH_PORT=$((20000 + RANDOM % 40000))
		cat >"$d/config" <<-CONF
			Port $SSH_PORT
			ListenAddress 127.0.0.1
			HostKey $d/hostkey
			PidFile none
			AuthorizedKeysFile $d/authorized_keys
			StrictModes no
			UsePAM no
			PasswordAuthentication no
			KbdInteractiveAuthentication no
			PermitRootLogin prohibit-password
		CONF
		/usr/sbin/sshd -D -f "$d/config" -E "$d/log" </dev/null >/dev/null 2>&1 3>&- &
		SSHD_PID=$!
		if sshd_listening; then break; fi
		SSHD_PID=
	done
	[ -n "$SSHD_PID" ]
	SSH_URL="ssh://$(id -un)@127.0.0.1:$SSH_PORT$BATS_TEST_TMPDIR/srv/calc.git"
	mkdir -p "$HOME/.ssh"
	chmod 700 "$HOME/.ssh"
}

# sshd_listening: true once $SSHD_PID listens on $SSH_PORT, false once it
# has exited (the port was taken); the wait is a bound for a stuck daemon,
# never reached in a passing run.
sshd_listening() {
	local n
	for n in $(seq 600); do
		kill -0 "$SSHD_PID" 2>/dev/null || { wait "$SSHD_PID" 2>/dev/null; return 1; }
		ss -ltnpH "sport = :$SSH_PORT" | grep -q "pid=$SSHD_PID," && return 0
		sleep 0.05
	done
	return 1
}

# known: the server's host key in ~/.ssh/known_hosts, hashed as ssh's HashKnownHosts writes it
known() {
	{ printf '[127.0.0.1]:%s ' "$SSH_PORT"; cut -d' ' -f1,2 "$BATS_TEST_TMPDIR/sshd/hostkey.pub"; } >"$HOME/.ssh/known_hosts"
	ssh-keygen -q -H -f "$HOME/.ssh/known_hosts" >/dev/null 2>&1
	rm -f "$HOME/.ssh/known_hosts.old"
	! grep -q 127.0.0.1 "$HOME/.ssh/known_hosts" || false
}

ssh_teardown() {
	[ -z "${SSHD_PID:-}" ] || kill "$SSHD_PID" 2>/dev/null || true
	[ -z "${AGENT_PID:-}" ] || kill "$AGENT_PID" 2>/dev/null || true
}

@test "ssh: the key in ~/.ssh/id_ed25519 pushes, the host checked against a hashed known_hosts; an unknown host is refused, the run goes on" {
	sshd_start
	unset SSH_AUTH_SOCK
	cp "$BATS_TEST_TMPDIR/userkey" "$HOME/.ssh/id_ed25519"
	cp "$BATS_TEST_TMPDIR/userkey.pub" "$HOME/.ssh/id_ed25519.pub"
	# no known_hosts: refused, and the run goes on
	to_files 0 env FORGE_PUSH_REMOTE=$SSH_URL forge run "add a mul operation"
	T=$(last_trace)
	grep -q "host key verification failed: \[127.0.0.1\]:$SSH_PORT is not in ~/.ssh/known_hosts (connect once with ssh, or: ssh-keyscan -p $SSH_PORT 127.0.0.1 >> ~/.ssh/known_hosts); the run goes on" \
		"$BATS_TEST_TMPDIR/err"
	run -1 git -C "$BATS_TEST_TMPDIR/srv/calc.git" rev-parse --verify -q "forge/$T"
	# another key under that name: refused too
	ssh-keygen -q -t ed25519 -N '' -f "$BATS_TEST_TMPDIR/otherhost"
	{ printf '[127.0.0.1]:%s ' "$SSH_PORT"; cut -d' ' -f1,2 "$BATS_TEST_TMPDIR/otherhost.pub"; } >"$HOME/.ssh/known_hosts"
	to_files 0 env FORGE_PUSH_REMOTE=$SSH_URL forge run "add a mul operation"
	grep -q "host key verification failed: the key of \[127.0.0.1\]:$SSH_PORT is not the one in known_hosts" "$BATS_TEST_TMPDIR/err"
	# known: pushed with the key file
	known
	to_files 0 env FORGE_PUSH_REMOTE=$SSH_URL forge run "add a mul operation"
	T=$(last_trace)
	! grep -q warning "$BATS_TEST_TMPDIR/err" || false
	[ "$(git -C "$BATS_TEST_TMPDIR/srv/calc.git" rev-parse "forge/$T")" = "$(git -C "$REPO" rev-parse "forge/$T")" ]
	grep -q "Accepted publickey" "$BATS_TEST_TMPDIR/sshd/log"
	ssh_teardown
}

@test "ssh: the SSH agent's key when ~/.ssh has none; a resume in another clone fetches over ssh" {
	sshd_start
	known
	eval "$(ssh-agent -s -a "$BATS_TEST_TMPDIR/agent.sock")" >/dev/null
	AGENT_PID=$SSH_AGENT_PID
	ssh-add -q "$BATS_TEST_TMPDIR/userkey" 2>/dev/null
	export FORGE_CASSETTE="$CASSETTES/run-highrisk.jsonl"
	to_files 4 env FORGE_PUSH_REMOTE=$SSH_URL forge run --config "$CONFIGS/high-risk.json" "add a mul operation"
	T=$(last_trace)
	[ "$(git -C "$BATS_TEST_TMPDIR/srv/calc.git" rev-parse "forge/$T")" = "$BASE" ]
	run -0 forge gate approve "$(forge gate list --json | jq -r .id)"
	B="$BATS_TEST_TMPDIR/b"
	git clone -q "$BATS_TEST_TMPDIR/srv/calc.git" "$B"
	cd "$B"
	to_files 0 env FORGE_PUSH_REMOTE=$SSH_URL forge resume --config "$CONFIGS/high-risk.json" "$T"
	run -0 forge events replay "$T"
	jq -e -s '[.[] | select(.type == "run.adopted") | .payload] | length == 1 and .[0].fetched == true' <<<"$output"
	[ "$(git -C "$BATS_TEST_TMPDIR/srv/calc.git" rev-parse "forge/$T")" = "$(git -C "$B" rev-parse "forge/$T")" ]
	# without the agent (nor a key file): a clear error
	unset SSH_AUTH_SOCK
	export FORGE_CASSETTE="$CASSETTES/run-clean.jsonl"
	to_files 0 env FORGE_PUSH_REMOTE=$SSH_URL forge run "add a mul operation"
	grep -q "authentication failed: no key of the SSH agent or of ~/.ssh (id_ed25519, id_ecdsa, id_rsa) was accepted" "$BATS_TEST_TMPDIR/err"
	ssh_teardown
}
