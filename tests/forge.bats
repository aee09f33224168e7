#!/usr/bin/env bats
# The forge dispatcher and the options every program shares.

load test_helper/common

setup() {
	forge_setup
}

@test "forge --help lists the commands it finds" {
	run -0 --separate-stderr forge --help
	[[ "$output" == *"usage: forge"* ]]
	[[ "$output" == *"Commands found:"* ]]
	[[ "$output" == *"  events "* ]]
}

@test "forge --version" {
	run -0 forge --version
	[[ "$output" =~ ^forge\ [0-9]+\.[0-9]+\.[0-9]+$ ]]
}

@test "forge with no command prints usage on stderr and exits 2" {
	run -2 --separate-stderr forge
	[ -z "$output" ]
	[[ "$stderr" == *"usage: forge"* ]]
}

@test "forge CMD runs forge-CMD with the arguments" {
	run -0 --separate-stderr forge events --version
	[[ "$output" == "forge-events (forge) "* ]]
}

@test "forge help CMD shows that command's help" {
	run -0 --separate-stderr forge help events
	[[ "$output" == *"usage: forge-events"* ]]
}

@test "an unknown command exits 2 with a clear message" {
	run -2 --separate-stderr forge frobnicate
	[[ "$stderr" == *"'frobnicate' is not a forge command"* ]]
	run -2 --separate-stderr forge ../../bin/sh
}

@test "an unknown option exits 2" {
	run -2 --separate-stderr forge --frobnicate
	[[ "$stderr" == *"unknown option '--frobnicate'"* ]]
}

@test "every program: --help on stdout exit 0, --version, unknown option exit 2" {
	for p in "$FORGE_BINDIR"/forge*; do
		[[ -x "$p" && "$p" != *.c ]] || continue
		name=$(basename "$p")
		run -0 --separate-stderr "$p" --help
		[[ "$output" == *"usage: $name"* ]] || { echo "$name --help: $output"; false; }
		[ -z "$stderr" ]
		run -0 --separate-stderr "$p" --version
		[[ "$output" == "$name"* || "$output" == "forge "* ]] || { echo "$name --version: $output"; false; }
		run -2 --separate-stderr "$p" --no-such-option
		[[ "$stderr" == *"unknown option"* ]] || { echo "$name: $stderr"; false; }
		[ -z "$output" ]
	done
}

@test "a missing option argument is a usage error" {
	run -2 --separate-stderr forge-events --db
	[[ "$stderr" == *"'--db' needs an argument"* ]]
}
