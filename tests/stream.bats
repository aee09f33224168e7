#!/usr/bin/env bats
# The stream contract (DESIGN.md §2): forwarding, state input, bad input.

load test_helper/common

setup() {
	forge_setup
	filter="$FORGE_TESTBIN/stream-filter"
	T=01JDB2AAAAAAAAAAAAAAAAAAAA
	ev1='{"kind":"event","id":"01JDB3AAAAAAAAAAAAAAAAAAA1","trace_id":"'$T'","ts":"2026-11-21T21:30:00.123Z","source":"x","type":"a.b","payload":{}}'
	ev2='{"kind":"event","id":"01JDB3AAAAAAAAAAAAAAAAAAA2","trace_id":"'$T'","ts":"2026-11-21T21:30:00.124Z","source":"x","type":"a.c","payload":{"n":1.50}}'
	state='{"kind":"state","v":1,"trace_id":"'$T'","phase":"plan","status":"ok","task":{"description":"do it"},"plan":{"summary":"s","tasks":[],"risk":{"level":"low"}}}'
}

@test "events are forwarded byte for byte and exactly one state ends the output" {
	run -0 --separate-stderr "$filter" --phase implement --need plan < <(printf '%s\n%s\n%s\n' "$ev1" "$state" "$ev2")
	[ "${lines[0]}" = "$ev1" ]
	[ "${lines[1]}" = "$ev2" ]
	[ "$(printf '%s\n' "${lines[@]}" | grep -c '"kind":"state"')" -eq 1 ]
	last=${lines[${#lines[@]}-1]}
	jq -e --arg t "$T" '.kind == "state" and .phase == "implement" and .trace_id == $t and .plan.summary == "s"' <<<"$last"
	[ -z "$stderr" ]
}

@test "unknown record kinds are forwarded unchanged" {
	run -0 --separate-stderr "$filter" < <(printf '%s\n%s\n' '{"kind":"note","text":"keep me"}' "$state")
	[ "${lines[0]}" = '{"kind":"note","text":"keep me"}' ]
}

@test "a bare {\"task\":…} object is a task" {
	run -0 --separate-stderr "$filter" <<<'{"task":"add a --version flag"}'
	last=${lines[${#lines[@]}-1]}
	jq -e '.task.description == "add a --version flag" and (.trace_id | utf8bytelength) == 26' <<<"$last"
}

@test "plain text is a task" {
	run -0 --separate-stderr "$filter" <<<'fix the crash in parse_date'
	[ "$(jq -r .task.description <<<"${lines[-1]}")" = "fix the crash in parse_date" ]
}

@test "bad input: a line of text before a stream's records, named with the first record's line" {
	run -2 --separate-stderr "$filter" < <(printf '%s\n\n%s\n%s\n' 'note: artifact of job 42' "$ev1" "$state")
	expect_rejected 1 "not a JSON record, but stream records follow (the first on line 3)"
	[ "${#lines[@]}" -eq 1 ]
	# text that only holds JSON that is no record stays a task
	run -0 --separate-stderr "$filter" < <(printf '%s\n%s\n' 'accept this config:' '{"a":1}')
	[ "$(jq -r .task.description <<<"${lines[-1]}")" = $'accept this config:\n{"a":1}' ]
}

@test "--task replaces stdin" {
	run -0 --separate-stderr "$filter" --task "from a flag" </dev/null
	[ "$(jq -r .task.description <<<"${lines[-1]}")" = "from a flag" ]
}

@test "a guard that does not hold gives status skipped and exit 1" {
	run -1 --separate-stderr "$filter" --phase implement --need plan <<<'{"task":"x"}'
	printf '%s\n' "${lines[0]}" "${lines[-1]}" | jq -se 'length == 2 and .[0].type == "phase.skipped" and .[1].status == "skipped"'
}

# bad_input NAME: each case gives exit 2, one stderr line naming the line
# number, an input.rejected event, and the events before it forwarded.
expect_rejected() {
	local line=$1 reason=$2
	[ "${#stderr_lines[@]}" -eq 1 ]
	[[ "$stderr" == "stream-filter: line $line: "*"$reason"* ]]
	local last=${lines[-1]}
	jq -e --arg line "$line" --arg reason "$reason" '.type == "input.rejected"
	  and (.payload.line | tostring) == $line and (.payload.reason | contains($reason))' <<<"$last"
}

@test "bad input: malformed JSON" {
	run -2 --separate-stderr "$filter" < <(printf '%s\n%s\n%s\n' "$ev1" '{"kind":"event",' "$ev2")
	expect_rejected 2 "malformed JSON"
	[ "${lines[0]}" = "$ev1" ]
	[ "${#lines[@]}" -eq 2 ]
	[ "$(jq -r .trace_id <<<"${lines[1]}")" = "$T" ]
}

@test "bad input: a truncated last line" {
	run -2 --separate-stderr "$filter" < <(printf '%s\n%s' "$ev1" '{"kind":"event","id":"01J')
	expect_rejected 2 "truncated last line"
	[ "${lines[0]}" = "$ev1" ]
}

@test "bad input: a whole record without its final newline is refused for its own reason, not as a truncated line" {
	# printf '%s', an editor's file without a final newline: the record is
	# complete (before: "truncated last line (no newline at the end of the
	# input): state does not match its schema: ...")
	run -2 --separate-stderr "$filter" < <(printf '%s\n%s' "$ev1" '{"kind":"state","v":1,"trace_id":"t","phase":"plan","status":"fine","task":{"description":"x"}}')
	expect_rejected 2 "state does not match its schema: .status"
	[[ "$stderr" != *truncated* ]]
	[ "${lines[0]}" = "$ev1" ]
	run -2 --separate-stderr "$filter" < <(printf '%s' '[1,2]')
	expect_rejected 1 "expected a JSON object, got array"
	[[ "$stderr" != *truncated* ]]
	run -2 --separate-stderr "$filter" < <(printf '%s' '{"task":""}')
	[ "$stderr" = "stream-filter: line 1: 'task' must be a non-empty string or an object with a 'description'" ]
}

@test "bad input: an oversized line" {
	big=$(head -c 5000 /dev/zero | tr '\0' a)
	run -2 --separate-stderr "$filter" --max-line 1024 < <(printf '%s\n{"task":"%s"}\n' "$ev1" "$big")
	expect_rejected 2 "longer than the limit of 1024 bytes"
	[ "${lines[0]}" = "$ev1" ]
}

@test "bad input: a line that never ends is refused once it passes the limit" {
	# (it used to be read to its end, and /dev/zero has none: the timeout
	# only bounds a regression, the refusal comes at 1 KiB)
	run -2 --separate-stderr bash -c 'yes "{\"kind\":\"note\"" | tr -d "\n" | timeout 60 "$0" --max-line 1024' "$filter"
	expect_rejected 1 "longer than the limit of 1024 bytes"
}

@test "bad input: a pretty-printed record (jq without -c) is told to be one line" {
	run -2 --separate-stderr "$filter" < <(printf '%s\n' "$ev1"; jq . <<<"$state")
	expect_rejected 2 "malformed JSON"
	[[ "$stderr" == *"(each record must be on one line: pretty-printed JSON? use jq -c)" ]]
	# not said of a record cut short
	run -2 --separate-stderr "$filter" < <(printf '%s\n%s\n' '{"kind":"event","id":"01J' "$ev1")
	[[ "$stderr" != *"one line"* ]]
}

@test "bad input: invalid UTF-8" {
	run -2 --separate-stderr "$filter" < <(printf '%s\n{"task":"caf\xe9"}\n' "$ev1")
	expect_rejected 2 "invalid UTF-8"
}

@test "bad input: a record that fails its schema names the JSON path" {
	run -2 --separate-stderr "$filter" < <(printf '%s\n' '{"kind":"state","v":1,"trace_id":"t","phase":"plan","status":"fine","task":{"description":"x"}}')
	expect_rejected 1 ".status"
}

@test "bad input: a NUL byte inside a JSON-lines record" {
	run -2 --separate-stderr "$filter" < <(printf '%s\n{"task":"add a\0 flag"}\n' "$ev1")
	expect_rejected 2 "NUL byte at column 15"
	[ "${lines[0]}" = "$ev1" ]
	[ "${#lines[@]}" -eq 2 ]
}

@test "bad input: a NUL character (\\u0000) in the task" {
	run -2 --separate-stderr "$filter" <<<'{"task":"add a\u0000 flag"}'
	expect_rejected 1 "'task' holds a NUL character"
	run -2 --separate-stderr "$filter" <<<'{"kind":"state","v":1,"trace_id":"'$T'","phase":"plan","status":"ok","task":{"description":"x","repo":"/tmp\u0000/x"}}'
	expect_rejected 1 "state's 'task.repo' holds a NUL character"
}

@test "bad input: a NUL byte in a plain-text task names its line" {
	run -2 --separate-stderr "$filter" < <(printf 'fix it\nplease\0 now\n')
	expect_rejected 2 "NUL byte in the text input"
	[ "${#lines[@]}" -eq 1 ]
}

@test "bad input: a state from a newer protocol version" {
	run -2 --separate-stderr "$filter" < <(printf '%s\n' '{"kind":"state","v":2,"trace_id":"t","phase":"plan","status":"ok","task":{"description":"x"}}')
	expect_rejected 1 "protocol version 2"
}

@test "bad input: a \"v\" that is no whole number is a schema error, not a newer version to upgrade for" {
	# (before: "state of protocol version 1.5; this forge speaks version 1: upgrade forge")
	for v in 1.5 2.5 1e400; do
		run -2 --separate-stderr "$filter" < <(printf '{"kind":"state","v":%s,"trace_id":"t","phase":"plan","status":"ok","task":{"description":"x"}}\n' "$v")
		[[ "$stderr" == *"state does not match its schema: .v: expected integer"* ]]
		[[ "$stderr" != *upgrade* ]]
	done
}

@test "bad input: empty input" {
	run -2 --separate-stderr "$filter" </dev/null
	[[ "$stderr" == "stream-filter: empty input"* ]]
	[ "$(jq -r .type <<<"${lines[-1]}")" = input.rejected ]
}

@test "bad input: a JSON value that is not an object" {
	run -2 --separate-stderr "$filter" <<<'[1,2,3]'
	expect_rejected 1 "expected a JSON object, got array"
}

@test "a closed stdout ends the program quietly with status 141" {
	run -0 bash -c 'set -o pipefail; yes "$1" | head -n 20000 | "$2" | head -n 1 >/dev/null; echo "${PIPESTATUS[2]}" >"$3"' _ "$ev1" "$filter" "$BATS_TEST_TMPDIR/status"
	[ "$(cat "$BATS_TEST_TMPDIR/status")" -eq 141 ]
}

@test "bad input: events only, with no state and no task to work on" {
	run -2 --separate-stderr "$filter" < <(printf '%s\n%s\n' "$ev1" "$ev2")
	[[ "$stderr" == *"no state and no task in the input"* ]]
	[ "${lines[0]}" = "$ev1" ]
	[ "$(jq -r .type <<<"${lines[-1]}")" = input.rejected ]
}

@test "a byte order mark before the first record is skipped: the records are read and forwarded as they are" {
	# (before, the stream was taken as one raw task: "no plan in the state", no event forwarded)
	run -0 --separate-stderr "$filter" --phase implement --need plan < <(printf '\xef\xbb\xbf%s\n%s\n%s\n' "$ev1" "$state" "$ev2")
	[ "${lines[0]}" = "$ev1" ]
	[ "${lines[1]}" = "$ev2" ]
	jq -e '.kind == "state" and .task.description == "do it"' <<<"${lines[-1]}"
	# a task given as text loses it too
	run -0 --separate-stderr "$filter" < <(printf '\xef\xbb\xbfadd a flag\n')
	jq -e '.task.description == "add a flag"' <<<"${lines[-1]}"
}

@test "bad input: invalid UTF-8 in a text input names the line it is on" {
	# (before: always "line 1")
	run -2 --separate-stderr "$filter" < <(printf 'add a flag\nto the tool\nnamed caf\xe9\n')
	expect_rejected 3 "invalid UTF-8"
}
