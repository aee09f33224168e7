#!/usr/bin/env bats
# sandbox-walls.bats - the kernel walls of run_command, attacked from the
# inside, as root and as an unprivileged user (nobody, through setpriv on a
# copy of tool-run in a world-readable directory): no Forge process or key
# is visible, secrets outside the read allow-list cannot be read, host unix
# sockets cannot be reached, nothing outlives the call, a fork bomb stops at
# the process limit, writes land only in the worktree and the temp dir
# (.forge read-only; without namespaces put back after the command), a
# .git made in a submodule's directory is removed
# after the command, and a normal build still works in a linked worktree.
# The last tests make the same attacks through the agent with the mock, and
# check that a link a command leaves in the worktree is not written through
# when Forge resets the worktree, unconfined.

bats_require_minimum_version 1.5.0

load test_helper/mock
mock_per_file

setup() {
	load test_helper/common
	forge_setup
	# Everything lives in a world-readable directory so that nobody can use it.
	UD=$(mktemp -d /tmp/forge-walls.XXXXXX)
	chmod 755 "$UD"
	# tool-run and forge-sandbox-init laid out as installed (bin/,
	# libexec/forge/): the commands' PID 1 is the program, as for Forge's
	mkdir -p "$UD/bin" "$UD/libexec/forge"
	cp "$FORGE_TESTBIN/tool-run" "$UD/bin/tool-run"
	cp "$FORGE_TESTBIN/../libexec/forge/forge-sandbox-init" "$UD/libexec/forge/"
	make_repo "$UD/main"
	git -C "$UD/main" worktree add -q -b walls "$UD/wt"
	mkdir -p "$UD/wt/.forge" "$UD/tmp" "$UD/home/.ssh" "$UD/outside"
	echo '{"original":true}' >"$UD/wt/.forge/config.json"
	echo "SECRET-KEY-MATERIAL" >"$UD/home/.ssh/id_rsa"
	chmod 600 "$UD/home/.ssh/id_rsa"
	echo "SECRET-OUTSIDE" >"$UD/outside/secret"
	chmod 600 "$UD/outside/secret"
	export ANTHROPIC_API_KEY=sk-ant-walls-canary-4242
}

teardown() {
	[ -f "$UD/server.pid" ] && kill "$(cat "$UD/server.pid")" 2>/dev/null
	[ -n "${ROOT_SECRET:-}" ] && rm -f "$ROOT_SECRET"
	rm -rf "$UD"
}

# as MODE: prepare the files for MODE (root | user); skips when impossible.
as() {
	MODE=$1
	if [ "$MODE" = user ]; then
		[ "$(id -u)" = 0 ] || skip "needs root to switch to nobody"
		command -v setpriv >/dev/null || skip "setpriv is not installed"
		chown -R 65534:65534 "$UD/main" "$UD/wt" "$UD/tmp" "$UD/home" "$UD/outside"
		setpriv --reuid=65534 --regid=65534 --clear-groups true ||
			skip "cannot switch to nobody here"
	elif [ "$(id -u)" != 0 ]; then
		skip "not running as root"
	fi
}

# tool [TOOL-RUN OPTIONS] COMMAND: run_command in the worktree as MODE; the
# tool's text (output or error) in $text, its JSON in $output (tool-run's
# stderr, e.g. --repeat's mean time, in $stderr).  With
# TOOL_LIMIT set, a tool-run still there after that many seconds is killed
# (a bound on a hang, not a wait).
tool() {
	local cmd=${*: -1} opts=("${@:1:$#-1}")
	local input
	json_quote "$cmd"
	input="{\"command\":$REPLY}"
	if [ "$MODE" = user ]; then
		run --separate-stderr ${TOOL_LIMIT:+timeout -s KILL "$TOOL_LIMIT"} setpriv --reuid=65534 --regid=65534 --clear-groups \
			env HOME=/nonexistent "$UD/bin/tool-run" -C "$UD/wt" --tmp "$UD/tmp" "${opts[@]}" \
			run_command "$input"
	else
		run --separate-stderr ${TOOL_LIMIT:+timeout -s KILL "$TOOL_LIMIT"} "$UD/bin/tool-run" -C "$UD/wt" --tmp "$UD/tmp" "${opts[@]}" \
			run_command "$input"
	fi
	text=$(jq -r '.output // .error' <<<"$output")
}

namespaces_or_skip() {
	# the machine's answer, asked once a file
	local ns="$BATS_FILE_TMPDIR/namespaces" new="$BATS_FILE_TMPDIR/namespaces.$BASHPID"
	if [ ! -s "$ns" ]; then
		run -0 "$FORGE_TESTBIN/tool-run" --features
		jq -r 'if .namespaces.available == true then "yes" else "no: \(.namespaces.reason)" end' \
			<<<"$output" >"$new" && mv -f "$new" "$ns"
	fi
	[ "$(<"$ns")" = yes ] || skip "no user namespaces here: $(sed 's/^no: //' "$ns")"
}

# ---------------------------------------------------------------- key

key_not_visible() {
	as "$1"
	namespaces_or_skip
	tool 'cat /proc/$PPID/environ; cat /proc/1/environ; for f in /proc/*/environ; do tr "\0" "\n" <"$f"; done; echo; ls -d /proc/[0-9]* | wc -l'
	[[ "$text" != *walls-canary* ]]
	[[ "$text" != *ANTHROPIC_API_KEY* ]]
	# only PID 1 (init), the shell and its children are there
	count=$(grep -E '^[0-9]+$' <<<"$text" | tail -1)
	[ "$count" -le 5 ]
}

@test "root: no Forge process and no key is visible in /proc" {
	key_not_visible root
}

@test "unprivileged: no Forge process and no key is visible in /proc" {
	key_not_visible user
}

# ---------------------------------------------------------------- PID 1

# PID 1 of the command's namespaces is forge-sandbox-init (the fast path):
# not dumpable (its environment and memory unreadable), no capabilities
# left to it or the command, and the command runs as ever.
pid1_confined() {
	as "$1"
	namespaces_or_skip
	run -0 "$FORGE_TESTBIN/tool-run" --features
	[ "$(jq -r '.pid1.program | type' <<<"$output")" = string ] ||
		skip "a command's PID 1 is a copy of the program in this build: $(jq -r .pid1.reason <<<"$output")"
	tool 'cat /proc/1/comm; cat /proc/1/environ && echo ENVIRON-READ; head -c 16 /proc/1/mem && echo MEM-READ; grep -E "^Cap(Prm|Eff|Bnd)" /proc/1/status /proc/self/status; echo done'
	[ "$(jq -r .data.exit_code <<<"$output")" = 0 ]
	[[ "$text" == forge-sandbox-i* ]]
	[[ "$text" != *ENVIRON-READ* ]]
	[[ "$text" != *MEM-READ* ]]
	[ "$(grep -c ':Cap\(Prm\|Eff\|Bnd\):.0000000000000000$' <<<"$text")" = 6 ]
	[[ "$text" == *done* ]]
}

@test "root: PID 1 is forge-sandbox-init, unreadable, without capabilities" {
	pid1_confined root
}

@test "unprivileged: PID 1 is forge-sandbox-init, unreadable, without capabilities" {
	pid1_confined user
}

# The namespaces of a command are built without asking the kernel again
# what it has said (each system call ~1.5 us on a paravirtualised
# machine): each directory of the view is made or found once, not every
# bind's parents from / again; the bounding set is read whole, not probed
# capability by capability past the kernel's last one; only the signals
# the caller ignores or catches go back to SIG_DFL, not all 62.  (Before:
# mkdir("/newroot") ~25 times, 23 PR_CAPBSET_READ failing with EINVAL in
# each of two processes, 62 rt_sigaction.)  The walls themselves are the
# other tests'.
setup_calls() {
	as "$1"
	namespaces_or_skip
	command -v strace >/dev/null || skip "strace is not installed (scripts/install-deps installs it)"
	local log="$BATS_TEST_TMPDIR/trace" pid
	local run=("$UD/bin/tool-run" -C "$UD/wt" --tmp "$UD/tmp" run_command '{"command":"mkdir -p made/here && echo traced"}')
	[ "$MODE" = user ] && run=(setpriv --reuid=65534 --regid=65534 --clear-groups env HOME=/nonexistent "${run[@]}")
	# (LeakSanitizer cannot work under ptrace)
	ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
		run -0 strace -f -qq -o "$log" -e trace=mkdir,mkdirat,prctl,rt_sigaction "${run[@]}"
	[ "$(jq -r .data.exit_code <<<"$output")" = 0 ]
	[[ "$(jq -r .output <<<"$output")" == *traced* ]]
	[ -d "$UD/wt/made/here" ]
	# the view was built (its mkdirs are in the trace)
	grep -qE '^[0-9]+ +mkdir(at)?\(.*"/newroot/' "$log"
	# no process makes or looks for one directory twice
	run -0 bash -c "grep -E '^[0-9]+ +mkdir(at)?\\(' '$log' | sed -E 's/^([0-9]+) +mkdir(at)?\\((AT_FDCWD, )?(\"[^\"]*\").*/\\1 \\4/' | sort | uniq -d"
	[ -z "$output" ]
	# the children (the first process is tool-run, setpriv before it)
	for pid in $(awk -v first="$(awk '{ print $1; exit }' "$log")" '$1 != first { print $1 }' "$log" | sort -u); do
		# at most the one probe that finds the last capability
		[ "$(grep -cE "^$pid +prctl\(PR_CAPBSET_READ, .*EINVAL" "$log")" -le 1 ]
		[ "$(grep -cE "^$pid +rt_sigaction\(.*SIG_DFL" "$log")" -le 16 ]
	done
}

@test "root: a command's namespaces are built with no system call that changes nothing" {
	setup_calls root
}

@test "unprivileged: a command's namespaces are built with no system call that changes nothing" {
	setup_calls user
}

@test "without forge-sandbox-init beside the program, a command runs as before (PID 1 a copy of it)" {
	as root
	namespaces_or_skip
	rm "$UD/libexec/forge/forge-sandbox-init"
	tool 'cat /proc/1/comm; cat /proc/1/environ && echo ENVIRON-READ; echo done'
	[ "$(jq -r .data.exit_code <<<"$output")" = 0 ]
	[[ "$text" == tool-run* ]]
	[[ "$text" != *ENVIRON-READ* ]]
	[[ "$text" == *done* ]]
}

@test "a forge-sandbox-init that cannot be run: the command runs once, as without it" {
	as root
	namespaces_or_skip
	printf 'not a program\n' >"$UD/libexec/forge/forge-sandbox-init"
	tool 'echo ran >>ran.txt; cat /proc/1/comm'
	[ "$(jq -r .data.exit_code <<<"$output")" = 0 ]
	[[ "$text" == tool-run* ]]
	[ "$(cat "$UD/wt/ran.txt")" = ran ]
}

# ---------------------------------------------------------------- reads

reads_confined() {
	as "$1"
	local extra=""
	if [ "$MODE" = root ]; then
		ROOT_SECRET=$(mktemp /root/forge-walls-secret.XXXXXX)
		echo "SECRET-ROOT" >"$ROOT_SECRET"
		extra="; cat $ROOT_SECRET; echo rc=\$?"
	fi
	# globs defeat the command regexes: only the kernel stops these
	tool "cat $UD/home/.s?h/id_rsa; echo rc=\$?; cat $UD/outside/sec?et; echo rc=\$?; head -1 /etc/sh?dow; echo rc=\$?$extra"
	[[ "$text" != *SECRET-* ]]
	[[ "$text" != *root:* ]]
	[ "$(grep -c '^rc=1$' <<<"$text")" -ge 3 ]
	# the next command of one process too (what the view covers of /etc
	# is worked out again only when /etc changes)
	tool --repeat 2 "cat $UD/home/.s?h/id_rsa; echo rc=\$?; cat $UD/outside/sec?et; echo rc=\$?; head -1 /etc/sh?dow; echo rc=\$?; ls /etc/ssh | grep -c _key\$; echo keys=\$?$extra"
	[[ "$text" != *SECRET-* ]]
	[[ "$text" != *root:* ]]
	[ "$(grep -c '^rc=1$' <<<"$text")" -ge 3 ]
	# Landlock alone (no namespaces) refuses them too
	run -0 "$FORGE_TESTBIN/tool-run" --features
	if [ "$(jq -r .landlock.available <<<"$output")" = true ]; then
		tool --sandbox '{"namespaces":"off"}' "cat $UD/home/.ssh/id_rsa; echo rc=\$?; head -1 /etc/sh?dow; echo rc=\$?"
		[[ "$text" != *SECRET-* ]]
		[[ "$text" != *root:* ]]
		[[ "$text" == *"id_rsa: Permission denied"* ]]
		[ "$(grep -c '^rc=1$' <<<"$text")" -eq 2 ]
	fi
	# read_anywhere lifts the allow-list (not the hiding of /tmp, /run and
	# the /etc secrets)
	if [ "$MODE" = root ]; then
		tool --sandbox '{"read_anywhere":true}' "cat $ROOT_SECRET; head -1 /etc/sh?dow; ls $UD"
		[[ "$text" == *SECRET-ROOT* ]]
		[[ "$text" != *root:* ]]
		[[ "$text" != *outside* ]]
	fi
	# read_paths extends it
	tool --sandbox "{\"read_paths\":[\"$UD/outside\"]}" "cat $UD/outside/sec?et"
	[[ "$text" == *SECRET-OUTSIDE* ]]
}

# ancestors_env: what the command reads of each ancestor's environment,
# up the PPid chain (the key is in the process that started Forge: a CI
# step's env, docker run -e; Forge scrubs only its own)
ancestors_env='grep CapEff /proc/self/status; p=$PPID; while [ "$p" -gt 1 ]; do tr "\0" "\n" <"/proc/$p/environ" 2>/dev/null | grep -c walls-canary; p=$(awk "/^PPid/ { print \$2 }" "/proc/$p/status"); done; echo end'

@test "root, without namespaces: a command has no capabilities, and reads no environment up the chain that started Forge" {
	as root
	tool --sandbox '{"namespaces":"off"}' "$ancestors_env"
	# (before: all of root's capabilities; CAP_SYS_PTRACE let Landlock
	# pass the read of every process's environ, the key among them)
	[[ "$text" == *"CapEff:	0000000000000000"* ]]
	[[ "$text" == *end* ]]
	run grep -x '[1-9][0-9]*' <<<"$text"
	[ "$status" -eq 1 ]
}

@test "root: the host's devices in the command's view cannot have their mode changed (read-only binds)" {
	as root
	namespaces_or_skip
	local before
	before=$(stat -c %a:%Z /dev/null /dev/urandom)
	# (their current mode: nothing would change, but the call must fail)
	tool "chmod $(stat -c %a /dev/null) /dev/null; echo null=\$?; chmod $(stat -c %a /dev/urandom) /dev/urandom; echo urandom=\$?; echo x >/dev/null && echo written"
	[[ "$text" == *"Read-only file system"* ]]
	[[ "$text" == *null=1* && "$text" == *urandom=1* && "$text" == *written* ]]
	[ "$(stat -c %a:%Z /dev/null /dev/urandom)" = "$before" ]
}

@test "root: secrets outside the read allow-list cannot be read" {
	reads_confined root
}

@test "unprivileged: secrets outside the read allow-list cannot be read" {
	reads_confined user
}

# serve WHERE REPLY READY: a server in the background that answers REPLY to
# each connection, on the unix socket WHERE or, for WHERE "tcp", on a free
# port of the host's 127.0.0.1; READY is made once it listens (holding the
# port for tcp).
serve() {
	/usr/bin/python3 - "$@" <<'EOF' 3>&- &
import os, socket, sys
where, reply, ready = sys.argv[1:4]
if where == "tcp":
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    what = str(s.getsockname()[1])
else:
    s = socket.socket(socket.AF_UNIX)
    s.bind(where)
    os.chmod(where, 0o777)
    what = ""
s.listen(8)
with open(ready + ".tmp", "w") as f:
    f.write(what)
os.rename(ready + ".tmp", ready)
while True:
    c, _ = s.accept()
    c.sendall(reply.encode() + b"\n")
    c.close()
EOF
	echo $! >"$UD/server.pid"
	for _ in $(seq 200); do [ -e "$3" ] && break; sleep 0.05; done
	[ -e "$3" ]
}

# ---------------------------------------------------------------- sockets

sockets_cut() {
	as "$1"
	namespaces_or_skip
	local sock="$UD/sock"
	serve "$sock" pong "$UD/ready"
	client="/usr/bin/python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); print(s.recv(9).decode().strip())' $sock"
	# the socket answers outside the sandbox ...
	if [ "$MODE" = user ]; then
		run -0 setpriv --reuid=65534 --regid=65534 --clear-groups sh -c "$client"
	else
		run -0 sh -c "$client"
	fi
	[ "$output" = pong ]
	# ... but not from a command
	tool "$client; echo rc=\$?"
	[[ "$text" != *pong* ]]
	[[ "$text" == *rc=1* ]]
}

@test "root: a unix socket under /tmp cannot be reached" {
	sockets_cut root
}

@test "unprivileged: a unix socket under /tmp cannot be reached" {
	sockets_cut user
}

# Without the mount view nothing hides the host's pathname sockets, and
# neither Landlock nor the network namespace covers connect() to one (the
# D-Bus session bus: systemd-run --user escapes every wall; ssh-agent;
# docker.sock): with the network cut a command makes no unix socket.
host_sockets_without_view() {
	as "$1"
	local sock="$UD/sock"
	serve "$sock" pong "$UD/ready"
	client="/usr/bin/python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); print(s.recv(9).decode().strip())' $sock"
	pair="/usr/bin/python3 -c 'import socket; a,b=socket.socketpair(); a.send(b\"pair-ok\"); print(b.recv(9).decode())'"
	export SSH_AUTH_SOCK=$sock
	for net in auto deny; do
		tool --sandbox "{\"namespaces\":\"off\",\"network\":\"$net\",\"env\":[\"SSH_AUTH_SOCK\"]}" \
			"$client; echo rc=\$?; $pair; echo \"agent=[\$SSH_AUTH_SOCK]\""
		# (before: pong, through the socket outside the worktree)
		[[ "$text" != *pong* ]]
		[[ "$text" == *rc=1* ]]
		[[ "$text" == *"Operation not permitted"* ]]
		[[ "$text" == *pair-ok* ]]
		[[ "$text" == *"agent=[]"* ]]
	done
	# the network allowed, the socket and the variable are the command's
	tool --sandbox '{"namespaces":"off","network":"allow","env":["SSH_AUTH_SOCK"]}' \
		"$client; echo \"agent=[\$SSH_AUTH_SOCK]\""
	[[ "$text" == *pong* ]]
	[[ "$text" == *"agent=[$sock]"* ]]
}

@test "root, without namespaces: a host unix socket cannot be reached with the network cut" {
	host_sockets_without_view root
}

@test "unprivileged, without namespaces: a host unix socket cannot be reached with the network cut" {
	host_sockets_without_view user
}

# A PATH holding the home directory (PATH=$PATH:~), /tmp or a parent of
# either: the command read ~/.ssh, a ~/.env with the API key and the host's
# /tmp through it, in the view and under Landlock alone.  Such entries are
# left out (unconfined says so); ~/.local/bin still runs.
path_entries_left_out() {
	mkdir -p "$UD/home/.local/bin"
	printf '#!/bin/sh\necho tool-ran\n' >"$UD/home/.local/bin/forge-walls-tool"
	chmod 755 "$UD/home/.local/bin/forge-walls-tool"
	echo "ANTHROPIC_API_KEY=sk-ant-in-dotenv-77" >"$UD/home/.env"
	chmod 600 "$UD/home/.env"
	echo "HOST-TMP-MARKER" >"$UD/marker"
	chmod 644 "$UD/marker"
	as "$1"
	shift
	local -x PATH="$PATH:$UD/home:/tmp:$UD/home/.local/bin" HOME="$UD/home"
	tool "$@" "cat $UD/home/.s?h/id_rsa; echo rc=\$?; cat $UD/home/.e?v; echo rc=\$?; cat $UD/mark?r; echo rc=\$?; forge-walls-tool"
	[[ "$text" != *SECRET-KEY* ]]
	[[ "$text" != *sk-ant-in-dotenv* ]]
	[[ "$text" != *HOST-TMP-MARKER* ]]
	[ "$(grep -c '^rc=1$' <<<"$text")" -eq 3 ]
	[[ "$text" == *tool-ran* ]]
	notes=$(jq -r '.data.unconfined // [] | join("\n")' <<<"$output")
	[[ "$notes" == *"PATH: $UD/home is left out of what commands may read"* ]]
	[[ "$notes" == *"PATH: /tmp is left out of what commands may read (a temporary directory or a parent of one)"* ]]
	[[ "$notes" != *".local/bin is left out"* ]]
}

@test "root: a PATH entry holding the home directory or /tmp is not readable by commands" {
	namespaces_or_skip
	path_entries_left_out root
}

@test "unprivileged: a PATH entry holding the home directory or /tmp is not readable by commands" {
	namespaces_or_skip
	path_entries_left_out user
}

@test "root, without namespaces: a PATH entry holding the home directory or /tmp is not readable by commands" {
	run -0 "$FORGE_TESTBIN/tool-run" --features
	[ "$(jq -r .landlock.available <<<"$output")" = true ] || skip "no Landlock here"
	path_entries_left_out root --sandbox '{"namespaces":"off"}'
}

# ---------------------------------------------------------------- network

# loopback_only MODE [TOOL-RUN OPTIONS]: inside the command, a server on
# 127.0.0.1 answers the command's own client (a test suite's servers work);
# a server listening on the host's 127.0.0.1 does not answer (the network
# namespace has its own loopback device, up, and nothing else).
loopback_only() {
	as "$1"
	shift
	run -0 "$FORGE_TESTBIN/tool-run" --features
	[ "$(jq -r .network_namespace.available <<<"$output")" = true ] || skip "no network namespaces"
	serve tcp host-answered "$UD/host.port"
	cat >"$UD/wt/probe.py" <<'EOF'
import socket, sys
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(1)
c = socket.create_connection(s.getsockname(), timeout=5)
a, _ = s.accept()
a.sendall(b"inside-answered")
print(c.recv(20).decode())
try:
    h = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5)
    print(h.recv(20).decode().strip())
except OSError as e:
    print("host: %s" % e.strerror)
EOF
	[ "$MODE" = user ] && chown 65534:65534 "$UD/wt/probe.py"
	tool "$@" "/usr/bin/python3 probe.py $(cat "$UD/host.port")"
	[[ "$text" == *inside-answered* ]]
	[[ "$text" != *host-answered* ]]
	[[ "$text" == *"host: Connection refused"* ]]
	[[ "$(jq -r '.data.unconfined // [] | join(" ")' <<<"$output")" != *loopback* ]]
}

@test "root: loopback answers inside the command; the host's does not" {
	loopback_only root
}

@test "unprivileged: loopback answers inside the command; the host's does not" {
	loopback_only user
}

@test "without namespaces (the network cut alone): loopback answers inside; the host's does not" {
	loopback_only root --sandbox '{"namespaces":"off"}'
}

@test "root: loopback answers in the next command too (its network namespace kept); the host's does not" {
	loopback_only root --repeat 2
}

@test "unprivileged: loopback answers in the next command too (its network namespace kept); the host's does not" {
	loopback_only user --repeat 2
}

# kept_namespaces MODE: the commands of one process share a user and a
# network namespace (the fast path keeps the first command's), and nothing
# of one reaches the next: a server the first leaves running (setsid, in
# the background) ends with it, so the second finds its port closed.
kept_namespaces() {
	as "$1"
	namespaces_or_skip
	run -0 "$FORGE_TESTBIN/tool-run" --features
	local shared
	shared=$(jq -r '.pid1.program | type == "string"' <<<"$output")
	cat >"$UD/wt/leave.py" <<'EOF'
import os, socket, time
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(1)
with open("port.tmp", "w") as f:
    f.write(str(s.getsockname()[1]))
os.rename("port.tmp", "port.txt")
time.sleep(60)
EOF
	cat >"$UD/wt/reach.py" <<'EOF'
import socket
try:
    socket.create_connection(("127.0.0.1", int(open("port.txt").read())), timeout=5)
    print("reached the first command's server")
except OSError as e:
    print("second: %s" % e.strerror)
EOF
	[ "$MODE" = user ] && chown 65534:65534 "$UD/wt/leave.py" "$UD/wt/reach.py"
	TOOL_LIMIT=60 tool --repeat 2 'readlink /proc/self/ns/net /proc/self/ns/user >>ns.txt
if [ -f port.txt ]; then /usr/bin/python3 reach.py; else (setsid /usr/bin/python3 leave.py &); while [ ! -f port.txt ]; do sleep 0.05; done; fi'
	[[ "$text" == *"second: Connection refused"* ]]
	[ "$(wc -l <"$UD/wt/ns.txt")" = 4 ]
	if [ "$shared" = true ]; then
		[ "$(sed -n 1p "$UD/wt/ns.txt")" = "$(sed -n 3p "$UD/wt/ns.txt")" ]
		[ "$(sed -n 2p "$UD/wt/ns.txt")" = "$(sed -n 4p "$UD/wt/ns.txt")" ]
	fi
}

@test "root: commands of one process share their network namespace, and nothing of one reaches the next" {
	kept_namespaces root
}

@test "unprivileged: commands of one process share their network namespace, and nothing of one reaches the next" {
	kept_namespaces user
}

# (as a user, Forge's own probe of network namespaces failed -- a
# non-dumpable process may not write its id maps -- so the network was not
# cut, and network "deny" refused every command)
@test "unprivileged, without namespaces: the network is cut all the same; network deny runs the command" {
	loopback_only user --sandbox '{"namespaces":"off"}'
	tool --sandbox '{"namespaces":"off","network":"deny"}' 'echo ran'
	[[ "$text" == *ran* ]]
}

# socket_families MODE: a network namespace covers the inet families only;
# with the network cut (namespaces or not) a command makes no socket of
# another family -- vsock (a VM's host and its agents, one address space
# for the machine), AF_PACKET -- and gets EAFNOSUPPORT, while inet, inet6,
# netlink and socketpair still work in its own namespace.
socket_families() {
	as "$1"
	local probe='python3 -c "import socket
for name, fam, typ in ((\"vsock\", 40, socket.SOCK_STREAM), (\"packet\", 17, socket.SOCK_DGRAM), (\"inet\", 2, socket.SOCK_STREAM), (\"inet6\", 10, socket.SOCK_DGRAM), (\"netlink\", 16, socket.SOCK_RAW)):
    try:
        socket.socket(fam, typ).close()
        print(name + \": made\")
    except OSError as e:
        print(name + \": errno\", e.errno)
a, b = socket.socketpair()
print(\"socketpair: made\")"'
	for sb in '{}' '{"namespaces":"off"}' '{"network":"deny"}'; do
		tool --sandbox "$sb" "$probe"
		# (before: vsock made, its bind "Address already in use" when the host held the port)
		[[ "$text" == *"vsock: errno 97"* ]]
		[[ "$text" == *"packet: errno 97"* ]]
		[[ "$text" == *"inet: made"* ]]
		[[ "$text" == *"inet6: made"* ]]
		[[ "$text" == *"netlink: made"* ]]
		[[ "$text" == *"socketpair: made"* ]]
	done
	# the network allowed, the filter leaves the families alone
	tool --sandbox '{"network":"allow"}' "$probe"
	if python3 -c 'import socket; socket.socket(40, socket.SOCK_STREAM)' 2>/dev/null; then
		[[ "$text" == *"vsock: made"* ]]
	fi
	[[ "$text" == *"inet: made"* ]]
}

@test "root: with the network cut a command makes no vsock or packet socket; inet works in its namespace" {
	socket_families root
}

@test "unprivileged: with the network cut a command makes no vsock or packet socket; inet works in its namespace" {
	socket_families user
}

# ---------------------------------------------------------------- processes

nothing_outlives() {
	as "$1"
	namespaces_or_skip
	# a duration no other test (run in parallel) uses: pgrep sees every process
	local d=77713.$$
	# wait (inside) until both really run, so the check below means something
	tool '(setsid sleep '"$d"' &); (sleep '"$d"' & ) ; until [ "$(pgrep -c -f "^sleep '"$d"'")" -ge 2 ]; do sleep 0.01; done; echo both-running'
	[[ "$text" == *both-running* ]]
	# the call returned: PID 1 of its namespace is gone, and so is the rest
	run -1 pgrep -f "^sleep $d"
}

@test "a command does not outlive Forge killed with SIGKILL" {
	as root
	namespaces_or_skip
	local d=77716.$$
	"$UD/bin/tool-run" -C "$UD/wt" --tmp "$UD/tmp" run_command \
		'{"command":"(setsid sleep '"$d"' &); touch \"$TMPDIR/ready\"; exec sleep '"$d"'"}' \
		>/dev/null 3>&- &
	local forge=$!
	run -0 timeout 20 sh -c "until [ -e '$UD/tmp/ready' ]; do sleep 0.05; done"
	kill -9 "$forge"
	wait "$forge" || true
	# the kernel takes the namespace down once it notices; wait for that, bounded
	run -0 timeout 20 sh -c "while pgrep -f '^sleep $d' >/dev/null; do sleep 0.05; done"
}

@test "root: nothing a command started outlives the call (setsid)" {
	nothing_outlives root
}

@test "unprivileged: nothing a command started outlives the call (setsid)" {
	nothing_outlives user
}

fork_bomb_stopped() {
	as "$1"
	if [ "$MODE" = root ]; then
		run -0 "$FORGE_TESTBIN/tool-run" --features
		[ "$(jq -r .cgroup_pids.available <<<"$output")" = true ] ||
			skip "root and no writable pids cgroup: $(jq -r .cgroup_pids.reason <<<"$output")"
	fi
	local d=77714.$$
	tool --sandbox '{"limits":{"processes":200}}' \
		'n=0; while [ $n -lt 5000 ]; do sleep '"$d"' & n=$((n+1)); done; echo started=$n'
	[[ "$text" == *"Cannot fork"* || "$text" == *"Resource temporarily unavailable"* ]]
	[[ "$text" != *started=5000* ]]
	run -1 pgrep -f "^sleep $d"
	# and the host is fine: the next command runs
	tool 'echo still-fine'
	[[ "$text" == *still-fine* ]]
}

@test "root, without namespaces: a command's detached processes that outlived Forge and its reaper (both SIGKILLed) are ended by the next Forge process" {
	as root
	run -0 "$FORGE_TESTBIN/tool-run" --features
	[ "$(jq -r .cgroup_pids.available <<<"$output")" = true ] ||
		skip "root and no writable pids cgroup: $(jq -r .cgroup_pids.reason <<<"$output")"
	local d=91.$$$RANDOM input
	json_quote "python3 -c 'import os
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execvp(\"sleep\", [\"sleep\", \"$d\"])'; sleep 600"
	input="{\"command\":$REPLY}"
	"$UD/bin/tool-run" -C "$UD/wt" --tmp "$UD/tmp" --sandbox '{"namespaces":"off"}' run_command "$input" \
		>/dev/null 2>&1 3>&- &
	local forge=$! i
	for i in $(seq 600); do pgrep -f "^sleep $d" >/dev/null && break; sleep 0.05; done
	pgrep -f "^sleep $d" >/dev/null
	# Forge and its reaper (a fork of it) killed at once: the OOM killer, `pkill -9`
	kill -KILL "$forge" $(pgrep -P "$forge" -x tool-run) 2>/dev/null
	wait "$forge" 2>/dev/null || true
	# (it outlived both: no PID namespace ends it; not asserted here, since
	# another test's Forge process may sweep the group first)
	# the next Forge process to use the pids cgroup ends what the dead one's group holds
	tool 'echo next'
	[[ "$text" == *next* ]]
	for i in $(seq 600); do pgrep -f "^sleep $d" >/dev/null || break; sleep 0.05; done
	run -1 pgrep -f "^sleep $d"
}

# oom_first MODE: a command (and what it starts) is what the kernel's OOM
# killer takes first, before Forge and its reaper: oom_score_adj 500.
oom_first() {
	as "$1"
	for sb in '{}' '{"namespaces":"off"}'; do
		tool --sandbox "$sb" 'cat /proc/self/oom_score_adj; sh -c "cat /proc/self/oom_score_adj"'
		[ "$(head -2 <<<"$text" | tr '\n' ' ')" = "500 500 " ]
	done
}

@test "root: a command is the OOM killer's first choice, not Forge" {
	oom_first root
}

@test "unprivileged: a command is the OOM killer's first choice, not Forge" {
	oom_first user
}

# limits_bind_the_command MODE: the command's resource limits are the
# command's; its parent (PID 1 of the namespace, or the reaper without one)
# is Forge's code and keeps room to run.  (Before, both had them: a Forge
# built with a sanitizer, whose mappings exceed any address-space limit,
# had that parent die of SIGSEGV at a deeper call -- a linter "exiting
# 139" under load.)
limits_bind_the_command() {
	as "$1"
	for sb in '{"limits":{"memory_mb":64}}' '{"namespaces":"off","limits":{"memory_mb":64}}'; do
		tool --sandbox "$sb" 'grep -h "^Max address space" /proc/self/limits /proc/$PPID/limits'
		[ "$(awk '{ print $4 }' <<<"$text" | head -2 | tr '\n' ' ')" = "67108864 unlimited " ]
	done
}

@test "root: the command's limits bind the command, not Forge's process that waits for it" {
	limits_bind_the_command root
}

@test "unprivileged: the command's limits bind the command, not Forge's process that waits for it" {
	limits_bind_the_command user
}

@test "root: a fork bomb stops at the process limit" {
	fork_bomb_stopped root
}

@test "unprivileged: a fork bomb stops at the process limit" {
	fork_bomb_stopped user
}

# With cgroup v1 the command's first process moves itself into the pids
# cgroup (its tasks file, "0"): a pid written into cgroup.procs by Forge
# waits for an RCU grace period (7-20 ms a command).  The preloaded library
# kills tool-run if it writes into a cgroup.procs of Forge's.
@test "root, cgroup v1: a command moves itself into the pids cgroup; Forge writes no pid into cgroup.procs" {
	[ "${FORGE_SUITE:-default}" = default ] || skip "a preloaded library cannot come before the sanitizers' runtime"
	as root
	run -0 "$FORGE_TESTBIN/tool-run" --features
	[ "$(jq -r .cgroup_pids.available <<<"$output")" = true ] ||
		skip "root and no writable pids cgroup: $(jq -r .cgroup_pids.reason <<<"$output")"
	grep -Eq '^[0-9]+:([^:]*,)?pids(,[^:]*)?:' /proc/self/cgroup || skip "cgroup v2: Forge moves the command"
	cc -shared -fPIC -o "$UD/kill.so" "$FORGE_ROOT/tests/fixtures/preload/kill-at-cgroup-write.c" -ldl
	local sb
	for sb in '{}' '{"namespaces":"off"}'; do
		LD_PRELOAD="$UD/kill.so" tool --sandbox "$sb" 'grep -E "^[0-9]+:([^:]*,)?pids(,[^:]*)?:" /proc/self/cgroup'
		[ "$status" -eq 0 ]
		[[ "$text" == *"/forge-"* ]]
	done
}

# ---------------------------------------------------------------- writes

writes_confined() {
	as "$1"
	tool 'echo x >/dev/shm/forge-walls-x; echo shm=$?; echo pwned >.forge/config.json; echo forge=$?; echo t >"$TMPDIR/t"; echo tmp=$?; echo w >new-file; echo wt=$?'
	[[ "$text" == *shm=[12]* ]]
	[[ "$text" == *forge=[12]* ]]
	[[ "$text" == *tmp=0* ]]
	[[ "$text" == *wt=0* ]]
	[ ! -e /dev/shm/forge-walls-x ]
	[ "$(cat "$UD/wt/.forge/config.json")" = '{"original":true}' ]
	[ "$(cat "$UD/tmp/t")" = t ]
	[ "$(cat "$UD/wt/new-file")" = w ]
	# nor can .forge be replaced as a whole
	tool 'mv .forge .forge-old; mkdir -p .forge-new && mv .forge-new .forge; rm -rf .forge/config.json; ls .forge'
	[ "$(cat "$UD/wt/.forge/config.json")" = '{"original":true}' ]
	# without a .forge, none can be made
	rm -rf "$UD/wt/.forge" "$UD/wt/.forge-new"
	tool 'mkdir -p .forge; echo "{}" >.forge/config.json; echo forge=$?'
	[[ "$text" == *forge=[12]* ]]
	[ ! -e "$UD/wt/.forge/config.json" ]
}

@test "root: writes only in the worktree and TMPDIR; not /dev/shm, not .forge" {
	writes_confined root
}

@test "unprivileged: writes only in the worktree and TMPDIR; not /dev/shm, not .forge" {
	writes_confined user
}

# ---------------------------------------------------------------- builds

build_works() {
	as "$1"
	cat >"$UD/wt/hello.c" <<'EOF'
#include <stdio.h>
int main(void) { puts("hello from the sandbox"); return 0; }
EOF
	printf 'hello: hello.c\n\tcc -o hello hello.c\n' >"$UD/wt/Makefile"
	[ "$MODE" = user ] && chown -R 65534:65534 "$UD/wt"
	tool 'make hello && ./hello && sh -c "echo sh-ok" && git status --short && git diff --stat HEAD -- README && git log --oneline -1'
	[[ "$text" == *"hello from the sandbox"* ]]
	[[ "$text" == *sh-ok* ]]
	[[ "$text" == *"?? Makefile"* ]]
	[[ "$text" == *"[exit status 0]"* ]]
}

@test "root: a normal build and git work inside (linked worktree)" {
	build_works root
}

@test "unprivileged: a normal build and git work inside (linked worktree)" {
	build_works user
}

# git_link_kept MODE: a command cannot point the worktree's .git elsewhere
# for the next one (the whole host readable through "gitdir: /", or a git
# directory of its own): with the view it is read-only; without, the next
# command's walls do not believe it and it is put back after the command.
git_link_kept() {
	as "$1"
	local before
	before=$(cat "$UD/wt/.git")
	run -0 "$FORGE_TESTBIN/tool-run" --features
	if [ "$(jq -r .namespaces.available <<<"$output")" = true ]; then
		tool 'printf "gitdir: /\n" >.git; echo rc=$?'
		[[ "$text" == *"Read-only file system"* ]]
		[ "$(cat "$UD/wt/.git")" = "$before" ]
	fi
	[ "$(jq -r .landlock.available <<<"$output")" = true ] || return 0
	tool --sandbox '{"namespaces":"off"}' 'printf "gitdir: /\n" >.git; echo rc=$?'
	[[ "$text" == *rc=0* ]]
	[[ "$(jq -r '.data.unconfined | join(" ")' <<<"$output")" == *"the command changed $UD/wt/.git, which only Forge may write"*"it is put back"* ]]
	[ "$(cat "$UD/wt/.git")" = "$before" ]
	# what the file says is not believed unless git's records agree: a
	# .git found saying "gitdir: /" (written before Forge ran, say) does
	# not open the host to the command
	printf 'gitdir: /\n' >"$UD/wt/.git"
	tool --sandbox '{"namespaces":"off"}' "cat $UD/outside/sec?et; echo rc=\$?"
	printf '%s\n' "$before" >"$UD/wt/.git"
	[[ "$text" != *SECRET-OUTSIDE* ]]
	[[ "$text" == *rc=1* ]]
	# and git still works where the file is right
	tool --sandbox '{"namespaces":"off"}' 'git log --oneline | wc -l'
	[ "$(jq -r .ok <<<"$output")" = true ]
}

# gitlink_git_removed MODE: a git directory a command makes in a
# submodule's directory (not checked out in a run's worktree) is removed
# after it: git looks into a gitlink's directory that has a .git whenever
# it looks at the worktree, with that repository's configuration (here
# core.fsmonitor), outside any sandbox -- a person's `git status` in the
# worktree ran what the model wrote.  A .git that was there before (a
# checked-out submodule) is left.
gitlink_git_removed() {
	local head
	head=$(git -C "$UD/wt" rev-parse HEAD)
	git -C "$UD/wt" update-index --add --cacheinfo "160000,$head,lib/dep" --cacheinfo "160000,$head,kept"
	mkdir -p "$UD/wt/lib/dep" "$UD/wt/kept"
	echo "gitdir: ../nowhere" >"$UD/wt/kept/.git"
	as "$1"
	local plant='cd lib/dep && git init -q && git -c user.name=m -c user.email=m@x commit -q --allow-empty -m x &&
git config core.fsmonitor "echo RAN >'"$UD"'/outside/fsmonitor-ran; false"'
	# (and with the modes on the way taken away: chmod 000, 500)
	local keep='chmod 500 .git .git/objects && chmod 500 . && chmod 000 ../../lib'
	for step in "{}|$plant && $keep" '{"namespaces":"off"}'"|$plant && $keep" "{}|$plant" \
		    '{"namespaces":"off"}'"|$plant"; do
		tool --sandbox "${step%%|*}" "${step#*|} && echo planted"
		[[ "$text" == *planted* ]]
		[[ "$(jq -r '.data.unconfined | join(" ")' <<<"$output")" == *"the command made $UD/wt/lib/dep/.git, a git directory in a submodule's directory"*"it is removed"* ]]
		[ ! -e "$UD/wt/lib/dep/.git" ] && [ ! -L "$UD/wt/lib/dep/.git" ]
		[ -d "$UD/wt/lib/dep" ]
		[ "$(cat "$UD/wt/kept/.git")" = "gitdir: ../nowhere" ]
		chmod 755 "$UD/wt/lib" "$UD/wt/lib/dep"   # (for the next; root's Forge needs none)
	done
	# in two commands: one removes the directory, the next makes it again
	# with the repository (before: a directory not there before the
	# command was "unknown", and its .git was left)
	tool 'rm -rf lib/dep && echo gone'
	[[ "$text" == *gone* ]]
	tool "mkdir lib/dep && $plant && echo planted"
	[[ "$text" == *planted* ]]
	[[ "$(jq -r '.data.unconfined | join(" ")' <<<"$output")" == *"the command made $UD/wt/lib/dep/.git, a git directory in a submodule's directory"*"it is removed"* ]]
	[ ! -e "$UD/wt/lib/dep/.git" ]
	# git in the worktree, unconfined, runs nothing of the model's
	if [ "$MODE" = user ]; then
		run -0 --separate-stderr setpriv --reuid=65534 --regid=65534 --clear-groups env HOME=/nonexistent \
			git -C "$UD/wt" status --short lib
	else
		run -0 --separate-stderr git -C "$UD/wt" status --short lib
	fi
	[ ! -e "$UD/outside/fsmonitor-ran" ]
	[ "$output" = "A  lib/dep" ]   # (added, nothing in it)
}

@test "root: a git directory a command makes in a submodule's directory is removed after it" {
	gitlink_git_removed root
}

@test "unprivileged: a git directory a command makes in a submodule's directory is removed after it" {
	gitlink_git_removed user
}

# nested_git_removed MODE: a git directory a command makes anywhere below
# the worktree's own (src/.git, src/a/b/.git), with core.fsmonitor in its
# config, is removed after it: git finds a .git walking up from where it
# runs, so a person's `git status` in the worktree's src/ ran what the
# model wrote, outside any sandbox.  A .git that was there before the
# command (a person's nested clone) is left.
nested_git_removed() {
	as "$1"
	mkdir -p "$UD/wt/vendor/own/.git"
	echo mine >"$UD/wt/vendor/own/.git/config"
	[ "$MODE" = user ] && chown -R 65534:65534 "$UD/wt/vendor"
	local plant='git init -q && git config core.fsmonitor "echo RAN >'"$UD"'/outside/fsmonitor-ran; false"'
	for sb in '{}' '{"namespaces":"off"}'; do
		tool --sandbox "$sb" "mkdir -p src/a/b && (cd src && $plant) && (cd src/a/b && $plant) &&
printf 'gitdir: /\n' >src/a/.git && chmod 000 src/a/b && echo planted"
		[[ "$text" == *planted* ]]
		notes=$(jq -r ".data.unconfined | join(\" \")" <<<"$output")
		for g in src src/a src/a/b; do [[ "$notes" == *"the command made "*"$UD/wt/$g/.git"*", a git directory below the worktree's own"*"removed"* ]]; done
		[ ! -e "$UD/wt/src/.git" ] && [ ! -e "$UD/wt/src/a/.git" ] && [ ! -e "$UD/wt/src/a/b/.git" ]
		[ -d "$UD/wt/src/a/b" ]
		[ "$(cat "$UD/wt/vendor/own/.git/config")" = mine ]
		# git in the worktree's src/, unconfined, runs nothing of the model's
		if [ "$MODE" = user ]; then
			run --separate-stderr setpriv --reuid=65534 --regid=65534 --clear-groups env HOME=/nonexistent \
				git -C "$UD/wt/src/a/b" status --short
		else
			run --separate-stderr git -C "$UD/wt/src/a/b" status --short
		fi
		[ ! -e "$UD/outside/fsmonitor-ran" ]
		rm -rf "$UD/wt/src"
	done
	# a command that makes none: no note
	tool 'echo quiet'
	[[ "$(jq -r '.data.unconfined // [] | join(" ")' <<<"$output")" != *"git directory below"* ]]
}

@test "root: a git directory a command makes below the worktree's own is removed after it" {
	nested_git_removed root
}

@test "unprivileged: a git directory a command makes below the worktree's own is removed after it" {
	nested_git_removed user
}

# nested_git_run_worktree MODE: in a run's worktree (made by Forge from a
# commit, in $FORGE_WORKTREES/KEY/) nothing is looked for before a
# command, so a .git below the worktree's own that is there before one
# (an earlier command's that could not be removed) is no person's clone:
# it is removed after the next command, and named.  Elsewhere it is left
# (nested_git_removed).
nested_git_run_worktree() {
	export FORGE_WORKTREES="$UD/runs"
	local key="main-0123456789abcdef"
	mkdir -p "$UD/runs/$key"
	echo "$UD/main" >"$UD/runs/$key/root"
	git -C "$UD/main" worktree add -q -b forge/run1 "$UD/runs/$key/run1"
	mkdir -p "$UD/runs/$key/run1/src/.git"
	echo 'fsmonitor = "echo RAN"' >"$UD/runs/$key/run1/src/.git/config"
	[ "$(id -u)" = 0 ] && chown -R 65534:65534 "$UD/runs"
	as "$1"
	for sb in '{}' '{"namespaces":"off"}'; do
		tool -C "$UD/runs/$key/run1" --sandbox "$sb" 'echo quiet'
		[[ "$text" == *quiet* ]]
		[[ "$(jq -r '.data.unconfined | join(" ")' <<<"$output")" == *"the command made $UD/runs/$key/run1/src/.git, a git directory below the worktree's own"*"removed"* ]]
		[ ! -e "$UD/runs/$key/run1/src/.git" ]
		[ -d "$UD/runs/$key/run1/src" ]
		mkdir "$UD/runs/$key/run1/src/.git"
		[ "$(id -u)" = 0 ] && chown -R 65534:65534 "$UD/runs"
	done
	# a worktree elsewhere keeps the one that was there before
	mkdir -p "$UD/wt/src/.git"
	[ "$MODE" = user ] && chown -R 65534:65534 "$UD/wt/src"
	tool 'echo quiet'
	[ -d "$UD/wt/src/.git" ]
	[[ "$(jq -r '.data.unconfined // [] | join(" ")' <<<"$output")" != *"git directory below"* ]]
}

@test "root: in a run's worktree a .git below the worktree's own that was there before the command is removed after it" {
	nested_git_run_worktree root
}

@test "unprivileged: in a run's worktree a .git below the worktree's own that was there before the command is removed after it" {
	nested_git_run_worktree user
}

# forge_dir_put_back MODE: a command may change nothing in the worktree's
# .forge (Forge's configuration, skills, prompts: a person who merges the
# branch, or a later phase reading the worktree, would take them as
# Forge's).  With the mount view it is read-only; without, Landlock cannot
# keep a command from writing there, so what it changed is put back after
# it (contents, modes, owners), what it removed made again and what it
# made removed, each named in the note.
forge_dir_put_back() {
	mkdir -p "$UD/wt/.forge/skills/review"
	echo skill >"$UD/wt/.forge/skills/review/SKILL.md"
	as "$1"
	chmod 555 "$UD/wt/.forge/skills"
	local owner
	owner=$(stat -c %u:%g "$UD/wt/.forge/config.json")
	local attack='echo "{\"sandbox\":{\"namespaces\":\"off\"}}" >.forge/config.json; chmod u+w .forge/skills;
rm -rf .forge/skills/review; mkdir -p .forge/prompts && echo evil >.forge/prompts/implement.md;
ln -s /etc .forge/etc; echo db >.forge/forge.db; chmod 000 .forge/skills; echo attacked'
	for sb in '{}' '{"namespaces":"off"}'; do
		tool --sandbox "$sb" "$attack"
		[[ "$text" == *attacked* ]]
		[ "$(cat "$UD/wt/.forge/config.json")" = '{"original":true}' ]
		[ "$(cat "$UD/wt/.forge/skills/review/SKILL.md")" = skill ]
		[ ! -e "$UD/wt/.forge/prompts" ] && [ ! -L "$UD/wt/.forge/etc" ] && [ ! -e "$UD/wt/.forge/forge.db" ]
		[ "$(stat -c %a "$UD/wt/.forge/skills")" = 555 ]
		[ "$(stat -c %u:%g "$UD/wt/.forge/config.json")" = "$owner" ]
		[ "$(stat -c %u:%g "$UD/wt/.forge/skills/review/SKILL.md")" = "$owner" ]
	done
	# (the last, without namespaces, wrote there: the note says what was put back)
	notes=$(jq -r '.data.unconfined | join(" ")' <<<"$output")
	[[ "$notes" == *"the command changed "*"$UD/wt/.forge/config.json"*"Forge's configuration, which no command may write: put back as it was before the command"* ]]
	[[ "$notes" == *"the command changed "*"$UD/wt/.forge/skills/review/SKILL.md"* ]]
	[[ "$notes" == *"the command made "*"$UD/wt/.forge/prompts"*"in .forge, Forge's configuration, which no command may write: removed"* ]]
	[[ "$notes" == *"the command made "*"$UD/wt/.forge/etc"*removed* ]]
	# nor can .forge be replaced as a whole
	tool --sandbox '{"namespaces":"off"}' 'chmod -R u+w .forge && rm -rf .forge && echo x >.forge && echo replaced'
	[[ "$text" == *replaced* ]]
	[ "$(cat "$UD/wt/.forge/config.json")" = '{"original":true}' ]
	# a command that changes nothing there: no note
	tool --sandbox '{"namespaces":"off"}' 'cat .forge/config.json; echo quiet'
	[[ "$text" == *quiet* ]]
	[[ "$(jq -r '.data.unconfined // [] | join(" ")' <<<"$output")" != *"Forge's configuration"* ]]
	# in the main working tree, what Forge writes there as a command runs
	# (its database, logs) is left to it; its configuration is not
	mkdir -p "$UD/main/.forge"
	echo '{"main":true}' >"$UD/main/.forge/config.json"
	[ "$MODE" = user ] && chown -R 65534:65534 "$UD/main/.forge"
	tool -C "$UD/main" --sandbox '{"namespaces":"off"}' 'echo db >.forge/forge.db; echo "{}" >.forge/config.json; echo written'
	[[ "$text" == *written* ]]
	[ "$(cat "$UD/main/.forge/forge.db")" = db ]
	[ "$(cat "$UD/main/.forge/config.json")" = '{"main":true}' ]
	# without a .forge, none is left made
	chmod 755 "$UD/wt/.forge/skills"
	rm -rf "$UD/wt/.forge"
	tool --sandbox '{"namespaces":"off"}' 'mkdir -p .forge/skills && echo "{}" >.forge/config.json && echo made'
	[[ "$text" == *made* ]]
	[ ! -e "$UD/wt/.forge" ]
	[[ "$(jq -r '.data.unconfined | join(" ")' <<<"$output")" == *"the command made $UD/wt/.forge in .forge"*removed* ]]
}

@test "root: what a command changes in the worktree's .forge is put back after it" {
	forge_dir_put_back root
}

@test "unprivileged: what a command changes in the worktree's .forge is put back after it" {
	forge_dir_put_back user
}

# git_config_covered MODE: the repository's credentials (a CI checkout's
# token in http.*.extraheader, a token in a remote's URL) are not in the
# config a command reads; git works on the rest.
git_config_covered() {
	git -C "$UD/main" config http.https://github.com/.extraheader "AUTHORIZATION: basic SECRET-HEADER-B64"
	git -C "$UD/main" remote add origin "https://x-access-token:SECRET-URL-TOKEN@github.com/o/r.git"
	as "$1"
	namespaces_or_skip
	tool 'cat "$(git rev-parse --git-common-dir)/config"; git remote -v; git log --oneline | wc -l'
	[[ "$text" != *SECRET-* ]]
	[[ "$text" == *"https://github.com/o/r.git (fetch)"* ]]
	[ "$(jq -r .ok <<<"$output")" = true ]
	# the repository's own file is as it was
	grep -q SECRET-URL-TOKEN "$UD/main/.git/config"
}

@test "root: the repository's credentials are not in the git config a command reads" {
	git_config_covered root
}

@test "unprivileged: the repository's credentials are not in the git config a command reads" {
	git_config_covered user
}

# git_config_stays_covered MODE PLANT: what one command does in its own
# temp dir (its HOME, where the credential-free copy of the config used to
# be written) does not uncover the config for the next command, nor hang
# Forge: PLANT is run first (a directory or a FIFO where the copy was, a
# HOME its owner may not write), then the config is read.
git_config_stays_covered() {
	git -C "$UD/main" config http.https://github.com/.extraheader "AUTHORIZATION: basic SECRET-HEADER-B64"
	git -C "$UD/main" remote add origin "https://x-access-token:SECRET-URL-TOKEN@github.com/o/r.git"
	as "$1"
	namespaces_or_skip
	TOOL_LIMIT=120
	tool "cd \"\$HOME\" && rm -rf .forge-git-config-0 .forge-git-config-1 && $2 && echo planted"
	[[ "$text" == *planted* ]]
	tool 'git config --get-regexp "extraheader|url"; cat "$(git rev-parse --git-common-dir)/config"; git remote -v'
	chmod 755 "$UD/tmp"
	[ "$(jq -r .ok <<<"$output")" = true ]
	[[ "$text" == *"https://github.com/o/r.git (fetch)"* ]]
	[[ "$text" != *SECRET-* ]]
	grep -q SECRET-URL-TOKEN "$UD/main/.git/config"
}

@test "root: a command cannot uncover the git config for the next one (a directory where the copy was)" {
	git_config_stays_covered root 'mkdir .forge-git-config-0 .forge-git-config-1'
}

@test "unprivileged: a command cannot uncover the git config for the next one (a directory where the copy was)" {
	git_config_stays_covered user 'mkdir .forge-git-config-0 .forge-git-config-1'
}

@test "unprivileged: a command cannot uncover the git config for the next one (its HOME read-only)" {
	git_config_stays_covered user 'chmod 500 .'
}

@test "root: a FIFO where the git config's copy was does not hang Forge, and the config stays covered" {
	git_config_stays_covered root 'mkfifo .forge-git-config-0 .forge-git-config-1'
}

@test "unprivileged: a FIFO where the git config's copy was does not hang Forge, and the config stays covered" {
	git_config_stays_covered user 'mkfifo .forge-git-config-0 .forge-git-config-1'
}

# no_terminal MODE: run from a terminal (pty_run.py), a command has no
# controlling terminal: it cannot open /dev/tty to type into the person's
# shell (TIOCSTI) or write to their screen -- with namespaces or without;
# nor open the terminal by its name in /dev/pts (without namespaces, where
# the host's /dev is there: it wrote to the screen and could read what the
# person typed).
no_terminal() {
	as "$1"
	local probe='python3 -c "import os
try:
    os.open(\"/dev/tty\", os.O_RDWR); print(\"TTY-OPENED\")
except OSError as e:
    print(\"no tty:\", e.strerror)
try:
    pts = [p for p in os.listdir(\"/dev/pts\") if p.isdigit()]
except OSError:
    pts = []
for p in pts:
    try:
        os.open(\"/dev/pts/\" + p, os.O_RDWR); print(\"PTS-OPENED\")
    except OSError as e:
        print(\"no pts:\", e.strerror)"'
	local input
	json_quote "$probe"
	input="{\"command\":$REPLY}"
	for sb in '{}' '{"namespaces":"off"}'; do
		if [ "$MODE" = user ]; then
			run -0 python3 "$FORGE_ROOT/tests/helpers/pty_run.py" --transcript "$UD/shown" -- setpriv \
				--reuid=65534 --regid=65534 --clear-groups env HOME=/nonexistent "$UD/bin/tool-run" \
				-C "$UD/wt" --tmp "$UD/tmp" --sandbox "$sb" run_command "$input"
		else
			run -0 python3 "$FORGE_ROOT/tests/helpers/pty_run.py" --transcript "$UD/shown" -- "$UD/bin/tool-run" \
				-C "$UD/wt" --tmp "$UD/tmp" --sandbox "$sb" run_command "$input"
		fi
		run -0 jq -r .output < <(tr -d '\r' <"$UD/shown")
		[[ "$output" != *TTY-OPENED* ]]
		[[ "$output" != *PTS-OPENED* ]]
		[[ "$output" == *"no tty:"* ]]
	done
}

@test "root: a command run from a terminal cannot reach it (no controlling terminal)" {
	no_terminal root
}

@test "unprivileged: a command run from a terminal cannot reach it (no controlling terminal)" {
	no_terminal user
}

# no_keyring MODE: the keyring system calls are refused (seccomp), with
# namespaces and without: the session keyring of the person running Forge
# (their user keyring, kerberos tickets) is not the command's.
no_keyring() {
	as "$1"
	local probe='python3 -c "import ctypes, platform
libc = ctypes.CDLL(None, use_errno=True)
nr = {\"x86_64\": 250, \"aarch64\": 219}[platform.machine()]
r = libc.syscall(nr, 0, -3, 0)
print(\"keyctl:\", r, ctypes.get_errno())"'
	for sb in '{}' '{"namespaces":"off"}'; do
		tool --sandbox "$sb" "$probe"
		[[ "$text" == *"keyctl: -1 1"* ]]
	done
}

# no_attack_surface MODE: io_uring, userfaultfd, bpf and perf_event_open
# are refused (EPERM from seccomp, not ENOSYS or another refusal), with
# namespaces and without.
no_attack_surface() {
	as "$1"
	local probe='python3 -c "import ctypes, platform
libc = ctypes.CDLL(None, use_errno=True)
nrs = {\"x86_64\": (425, 323, 321, 298), \"aarch64\": (425, 282, 280, 241)}[platform.machine()]
buf = ctypes.create_string_buffer(256)
for name, nr in zip((\"io_uring_setup\", \"userfaultfd\", \"bpf\", \"perf_event_open\"), nrs):
    args = (8, buf) if name == \"io_uring_setup\" else (0, buf, 0) if name != \"perf_event_open\" else (buf, 0, -1, -1, 0)
    ctypes.set_errno(0)
    r = libc.syscall(nr, *args)
    print(name + \":\", r, ctypes.get_errno())"'
	for sb in '{}' '{"namespaces":"off"}'; do
		tool --sandbox "$sb" "$probe"
		[[ "$text" == *"io_uring_setup: -1 1"* ]]
		[[ "$text" == *"userfaultfd: -1 1"* ]]
		[[ "$text" == *"bpf: -1 1"* ]]
		[[ "$text" == *"perf_event_open: -1 1"* ]]
	done
}

@test "root: a command cannot reach io_uring, userfaultfd, bpf or perf_event_open" {
	no_attack_surface root
}

@test "unprivileged: a command cannot reach io_uring, userfaultfd, bpf or perf_event_open" {
	no_attack_surface user
}

@test "root: a command cannot use the keyrings" {
	no_keyring root
}

@test "unprivileged: a command cannot use the keyrings" {
	no_keyring user
}

@test "root, without namespaces: SysV IPC is the command's own (not the host's segments)" {
	as root
	ipcmk -M 4096 >/dev/null || skip "ipcmk cannot make a segment here"
	id=$(ipcs -m | awk 'NR > 3 && $1 ~ /^0x/ { last = $2 } END { print last }')
	tool --sandbox '{"namespaces":"off"}' 'ipcs -m | awk "NR > 3 && \$1 ~ /^0x/" | wc -l'
	ipcrm -m "$id"
	[ "$(head -1 <<<"$text")" = 0 ]
}

@test "root: a command cannot point the worktree's .git elsewhere" {
	git_link_kept root
}

@test "unprivileged: a command cannot point the worktree's .git elsewhere" {
	git_link_kept user
}

@test "a view that cannot be built: the command runs under Landlock alone, secrets still unreadable" {
	as root
	namespaces_or_skip
	run -0 "$FORGE_TESTBIN/tool-run" --features
	[ "$(jq -r .landlock.available <<<"$output")" = true ] || skip "no Landlock on this kernel"
	# a readable path too long to be bound under the new root makes the view fail
	long="$UD"
	while [ "${#long}" -lt 3880 ]; do long="$long/$(printf 'd%.0s' $(seq 200))"; done
	long="$long/$(printf 'e%.0s' $(seq $((4090 - ${#long} - 1))))"
	[ "${#long}" -eq 4090 ]
	mkdir -p "$long"
	tool --sandbox "{\"read_paths\":[\"$long\"]}" 'head -1 /etc/sh?dow; echo rc=$?; echo ran'
	[ "$(jq -r .ok <<<"$output")" = true ]
	[[ "$text" == *ran* ]]
	[[ "$text" != *root:* ]]
	[[ "$text" == *rc=1* ]]
	[[ "$(jq -r '.data.unconfined | join(" ")' <<<"$output")" == *"namespaces: none (bind mount: File name too long)"* ]]
}

@test "namespaces: require refuses when unavailable; off runs the old way" {
	as root
	tool --sandbox '{"namespaces":"off"}' 'ls /proc | grep -c "^[0-9]"'
	[ "$(head -1 <<<"$text")" -gt 5 ]
	run -0 "$FORGE_TESTBIN/tool-run" --features
	if [ "$(jq -r .namespaces.available <<<"$output")" = true ]; then
		tool --sandbox '{"namespaces":"require"}' 'echo confined'
		[[ "$text" == *confined* ]]
	else
		tool --sandbox '{"namespaces":"require"}' 'echo confined'
		[ "$(jq -r .kind <<<"$output")" = denied ]
	fi
}

@test "through the agent (mock): the attacks fail" {
	as root
	namespaces_or_skip
	load test_helper/mock
	calc_repo "$UD/calc"
	mkdir "$UD/calc/.forge"
	echo '{}' >"$UD/calc/.forge/config.json"
	git -C "$UD/calc" add -A
	git -C "$UD/calc" commit -q -m "forge config"
	cd "$UD/calc"
	attack='cat /proc/$PPID/environ; for f in /proc/*/environ; do tr "\0" "\n" <"$f"; done
cat '"$UD"'/home/.s?h/id_rsa; echo read=$?
(setsid sleep '"77715.$$"' &)
echo x >/dev/shm/forge-walls-agent; echo shm=$?
echo "{\"sandbox\":{\"namespaces\":\"off\"}}" >.forge/config.json; echo forge=$?'
	step=$(jq -cn --arg c "$attack" '{tool_calls:[{name:"run_command",input:{command:$c}}]}')
	mock_script "[$step,{\"tool_calls\":[{\"name\":\"finish\",\"input\":{\"summary\":\"done\"}}]}]"
	export FORGE_PROVIDER=anthropic FORGE_BASE_URL="$MOCK_URL" ANTHROPIC_API_KEY=sk-ant-agent-canary-77
	sed -n 3p "$FORGE_ROOT/tests/fixtures/cassettes/plan-calc.jsonl" | jq -c --arg r "$UD/calc" \
		'{kind:"state", v:1, trace_id:"W1", phase:"plan", status:"ok",
		  task:{description:"add a mul operation", repo:$r, base_ref:"main"},
		  plan:.response.tool_calls[0].input, bounces:[], cost:{tokens:0, usd:0}}' >"$UD/plan.json"
	run -0 --separate-stderr forge-implement <"$UD/plan.json"
	result=$(curl -sS -f "$MOCK_URL/_mock/requests" |
		jq -r '.[1].body.messages[-1].content[0].content')
	[[ "$result" != *agent-canary* ]]
	[[ "$result" != *SECRET-* ]]
	[[ "$result" == *read=1* ]]
	[[ "$result" == *shm=[12]* ]]
	[[ "$result" == *forge=[12]* ]]
	[ ! -e /dev/shm/forge-walls-agent ]
	run -1 pgrep -f "^sleep 77715.$$"
	run -0 git -C "$UD/calc" show forge/W1:.forge/config.json
	assert_output '{}'
}

@test "a command that makes a tracked directory a link to one outside: forge resume writes nothing through it" {
	# (hunt66 #1: the recovery's hard reset, run by Forge outside the
	# sandbox, wrote tests/check.sh into the link's target)
	namespaces_or_skip
	calc_repo "$UD/calc"
	mkdir -p "$UD/calc/.forge" "$UD/victim"
	echo '{"safety":{"iterations":{"implement":2}}}' >"$UD/calc/.forge/config.json"
	git -C "$UD/calc" add -A
	git -C "$UD/calc" commit -q -m "forge config"
	cd "$UD/calc"
	export FORGE_PROVIDER=anthropic FORGE_BASE_URL="$MOCK_URL" ANTHROPIC_API_KEY=sk-ant-test-000000000000
	refl='{"forced_tool":"record_learnings","times":"always","tool_calls":[{"name":"record_learnings","input":{"learnings":[]}}]}'
	plan=$(sed -n 3p "$FORGE_ROOT/tests/fixtures/cassettes/plan-calc.jsonl" |
		jq -c '{tool_calls:[{name:"finish",input:.response.tool_calls[0].input}]}')
	evil=$(jq -cn --arg c "rm -rf tests && ln -s '$UD/victim' tests && echo linked" \
		'{tool_calls:[{name:"run_command",input:{command:$c}}]}')
	busy='{"tool_calls":[{"name":"run_command","input":{"command":"echo busy"}}]}'
	mock_script "[$refl,$plan,$evil,$busy,$busy,$busy]"
	run -3 --separate-stderr forge run "add mul" --phases plan,implement --auto-approve </dev/null
	[[ $output =~ next\ +forge\ resume ]]
	T=$(forge history --json -n 1 | jq -r .trace_id)
	W=$(run_worktree "$T" "$UD/calc")
	[ -L "$W/tests" ]
	mock_script "[$refl,{\"tool_calls\":[{\"name\":\"finish\",\"input\":{\"summary\":\"done\"}}]}]"
	run -0 --separate-stderr forge resume "$T" </dev/null
	[[ $stderr == *"kept on refs/forge/"*"/saved/1"* ]]
	# nothing was written outside; the directory is back; the link is kept on the saved ref
	run -0 ls -A "$UD/victim"
	assert_output ""
	[ ! -L "$W/tests" ] && [ -d "$W/tests" ] && [ -f "$W/tests/check.sh" ]
	ref=$(git -C "$UD/calc" for-each-ref --format='%(refname)' 'refs/forge/*/saved/1')
	run -0 git -C "$UD/calc" ls-tree "$ref" tests
	[[ $output == "120000 "* ]]
}

# other_runs_unseen [TOOL-RUN OPTIONS]: two runs' worktrees of a repository
# in the default place, ~/.local/state/forge/worktrees/KEY/TRACE, and one of
# another repository's; ~/.local/bin in PATH lends ~/.local (its state
# left out).  A command in run A reads what ~/.local lends and writes in its
# own worktree; it cannot list or read run B's, nor the other repository's.
other_runs_unseen() {
	export HOME="$UD/home"
	unset FORGE_WORKTREES XDG_STATE_HOME
	mkdir -p "$HOME/.local/bin" "$HOME/.local/share"
	echo LENT >"$HOME/.local/share/lent.txt"
	local base="$HOME/.local/state/forge/worktrees" runs
	runs="$base/calc-0123456789abcdef"
	[ -d "$UD/calc" ] || calc_repo "$UD/calc"
	[ -d "$runs/A" ] || git -C "$UD/calc" worktree add -q -b forge/A "$runs/A"
	[ -d "$runs/B" ] || git -C "$UD/calc" worktree add -q -b forge/B "$runs/B"
	echo "RUN-B-WORK" >"$runs/B/uncommitted.txt"
	mkdir -p "$base/other-fedcba9876543210/X" && echo "OTHER-REPO" >"$base/other-fedcba9876543210/X/f"
	json_quote "cat $HOME/.local/share/lent.txt; ls $runs; cat $runs/B/uncommitted.txt $runs/B/calc.c; cat $base/other-fedcba9876543210/X/f; echo mine >own.txt && cat own.txt; head -1 calc.c"
	run -0 --separate-stderr env PATH="$HOME/.local/bin:$PATH" "$UD/bin/tool-run" -C "$runs/A" --tmp "$UD/tmp" \
		"$@" run_command "{\"command\":$REPLY}"
	text=$(jq -r '.output // .error' <<<"$output")
	[[ $text == *LENT* ]]                   # ~/.local is lent (before: left out, the worktree in it)
	[[ $text == *mine* ]]                   # its own worktree: readable, writable
	[ "$(cat "$runs/A/own.txt")" = mine ]
	[[ $text != *RUN-B-WORK* ]] && [[ $text != *OTHER-REPO* ]]
	[ "$(grep -c '^/\* calc' <<<"$text")" -eq 1 ]   # only A's calc.c
	! grep -qx B <<<"$text"                 # B is not listed
}

@test "root: a command in a run's worktree cannot list or read the other runs' worktrees, its own stays writable, ~/.local is still lent" {
	namespaces_or_skip
	[ "$(id -u)" = 0 ] || skip "not running as root"
	other_runs_unseen
}

@test "root, without namespaces: a command in a run's worktree cannot list or read the other runs' worktrees, its own stays writable" {
	[ "$(id -u)" = 0 ] || skip "not running as root"
	run -0 "$FORGE_TESTBIN/tool-run" --features
	[ "$(jq -r .landlock.available <<<"$output")" = true ] || skip "no Landlock here"
	other_runs_unseen --sandbox '{"namespaces":"off"}'
}
