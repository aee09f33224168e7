#!/usr/bin/env bats
# advice.bats - the "next" line a run's summary and forge show end with,
# pasted into a shell as it is, after each kind of stop: it is a command
# only (what it needs said is on the "why" line), and doing it lets the run
# go on -- not the same stop again, paid for again (hunt59 #2, #4, #5).
# Replayed model answers (cassette run-clean.jsonl) on the calc fixture.

bats_require_minimum_version 1.5.0

load test_helper/common

setup() {
	forge_setup
	calc_setup
	export FORGE_PROVIDER=replay FORGE_CASSETTE="$CASSETTES/run-clean.jsonl"
}

last_trace() { forge history --json -n 1 | jq -r .trace_id; }
# next_of: the "next" command of the summary in $output.
next_of() { sed -n 's/^  next      //p' <<<"$output"; }

@test "a phase's cost limit (safety.cost.per_phase.implement) stopped the run: the next line raises it, and pasting it completes the run" {
	mkdir -p .forge
	echo '{"safety":{"cost":{"per_phase":{"implement":0.02}}}}' >.forge/config.json
	run -3 forge run "add a mul operation" </dev/null
	T=$(last_trace)
	# (before: "forge resume T": implement paid from its start again and
	# tripped the same limit, for ever)
	assert_line "  next      forge config set safety.cost.per_phase.implement 0.062 && forge resume $T"
	assert_line --regexp "^  why       the limit safety\\.cost\\.per_phase\\.implement \\(0\\.02\\) stopped the run: "
	next=$(next_of)
	run -0 forge show "$T"
	assert_line "next      $next"
	run -0 bash -c "$next" </dev/null
	[ "$(forge status --json "$T" | jq -r .run.status)" = completed ]
	[ "$(jq -r .safety.cost.per_phase.implement .forge/config.json)" = 0.062 ]
}

@test "the run's cost limit (safety.cost.per_run) in .forge/config.json stopped it: pasting each next line goes on until it completes" {
	mkdir -p .forge
	echo '{"safety":{"cost":{"per_run":0.015}}}' >.forge/config.json
	run -3 forge run "add a mul operation" </dev/null
	T=$(last_trace)
	assert_line --regexp "^  next      forge config set safety\\.cost\\.per_run [0-9.]+ && forge resume $T\$"
	# each paste raises the limit past what was spent and goes on: never
	# the same advice twice (before: exit 3 at once, "forge resume T" again)
	seen=""
	for i in 1 2 3 4 5; do
		next=$(next_of)
		[[ $seen != *"|$next|"* ]] || { echo "the same advice again: $next"; false; }
		seen="$seen|$next|"
		run bash -c "$next" </dev/null
		[ "$status" -eq 0 ] && break
		[ "$status" -eq 3 ]
	done
	[ "$status" -eq 0 ]
	[ "$(forge status --json "$T" | jq -r .run.status)" = completed ]
}

@test "the day's limit (safety.cost.per_day) stopped the run: the next line raises it past what every run's calls cost today, and pasting each goes on until it completes (hunt68 #3b)" {
	# (before: past this run's spend alone, \$0 here: per_day 0.02, which
	# tripped at once again on today's \$0.60, then 0.04, 0.08, ...)
	# a zone where it is now about noon: local midnight is hours away
	local h off
	h=$(date -u +%-H)
	off=$(((12 - h + 24) % 24))
	[ "$off" -le 14 ] || off=$((off - 24))
	export TZ="XYZ$((-off))"
	# another run's model calls today: $0.60
	printf '{"kind":"event","id":"01JDB3DAYAAAAAAAAAAAAAAAA2","trace_id":"01JDB2OTHERRUNAAAAAAAAAAAA","ts":"%s","source":"test","phase":"plan","type":"llm.called","payload":{},"cost":{"usd":0.6,"tokens":1}}\n' \
		"$(date -u +%Y-%m-%dT%H:%M:%S.000Z)" | forge-events store >/dev/null
	mkdir -p .forge
	echo '{"safety":{"cost":{"per_day":0.01}}}' >.forge/config.json
	run -3 forge run "add a mul operation" </dev/null
	T=$(last_trace)
	assert_line "  next      forge config set safety.cost.per_day 0.62 && forge resume $T"
	assert_line "  why       the limit safety.cost.per_day (0.01) stopped the run (the model calls of every run have cost \$0.6000 today): a resume as it is stops there again; raise it (to 0.62 here, or what you choose) first"
	# each paste goes on from where the last stopped, a phase's trip on
	# the day's limit raising that limit (not per_run), until it completes
	seen=""
	for i in 1 2 3 4 5; do
		next=$(next_of)
		[[ $next == "forge config set safety.cost.per_day "* ]] || { echo "not the day's limit: $next"; false; }
		[[ $seen != *"|$next|"* ]] || { echo "the same advice again: $next"; false; }
		seen="$seen|$next|"
		run bash -c "$next" </dev/null
		[ "$status" -eq 0 ] && break
		[ "$status" -eq 3 ]
		[[ $output != *"today's model calls have cost"* ]] || { echo "tripped at once again: $output"; false; }
	done
	[ "$status" -eq 0 ]
	[ "$(forge status --json "$T" | jq -r .run.status)" = completed ]
}

@test "a limit set in the user's own file: the next line raises it there (--global), where a repository's may not" {
	mkdir -p "$XDG_CONFIG_HOME/forge"
	echo '{"safety":{"cost":{"per_phase":{"implement":0.02}}}}' >"$XDG_CONFIG_HOME/forge/config.json"
	run -3 forge run "add a mul operation" </dev/null
	T=$(last_trace)
	assert_line "  next      forge config set --global safety.cost.per_phase.implement 0.062 && forge resume $T"
	run -0 bash -c "$(next_of)" </dev/null
	[ "$(forge status --json "$T" | jq -r .run.status)" = completed ]
}

@test "a limit the run's own --config set: the next line raises it with a resume's --config, over the recorded one" {
	# (forge resume keeps the run's --config, so a raise in either file
	# would not hold: it sits below the recorded layer)
	echo '{"safety":{"cost":{"per_phase":{"implement":0.02}}}}' >"$BATS_TEST_TMPDIR/tight.json"
	run -3 forge run --config "$BATS_TEST_TMPDIR/tight.json" "add a mul operation" </dev/null
	T=$(last_trace)
	assert_line "  next      echo '{\"safety\":{\"cost\":{\"per_phase\":{\"implement\":0.062}}}}' >\"\${TMPDIR:-/tmp}/forge-raise.json\" && forge resume --config \"\${TMPDIR:-/tmp}/forge-raise.json\" $T"
	assert_line --regexp "^  why       the limit safety\\.cost\\.per_phase\\.implement \\(0\\.02, from the run's --config\\) stopped the run: "
	run -0 bash -c "$(next_of)" </dev/null
	[ "$(forge status --json "$T" | jq -r .run.status)" = completed ]
}

@test "a limit raised by a resume's --config holds at a later plain resume (after a gate), as recorded in run.resumed" {
	echo '{"safety":{"cost":{"per_run":0.015}},"deploy":{"environment":"production"}}' >"$BATS_TEST_TMPDIR/tight.json"
	run -3 forge run --config "$BATS_TEST_TMPDIR/tight.json" "add a mul operation" </dev/null
	T=$(last_trace)
	# the advised raises go on to the production gate
	for i in 1 2 3 4 5; do
		run bash -c "$(next_of)" </dev/null
		[ "$status" -eq 3 ] || break
	done
	[ "$status" -eq 4 ]
	run -0 forge gate approve "$(forge gate list --json | jq -r .id)"
	# (before: the plain resume went back to the run's 0.015 and tripped again)
	run -0 --separate-stderr forge resume "$T" </dev/null
	[ "$(forge status --json "$T" | jq -r .run.status)" = completed ]
	run -0 forge events replay "$T"
	jq -e -s '[.[] | select(.type == "run.resumed") | .payload.config_layer.safety.cost.per_run]
	  | length >= 2 and .[0] > 0.015 and .[-1] == .[-2]' <<<"$output"
}

@test "a deploy rolled back by its health check: the next line runs the task again, not a resume that refuses (hunt59 #5)" {
	mkdir -p "$BATS_TEST_TMPDIR/log"
	jq -n --arg l "$BATS_TEST_TMPDIR/log" '{sandbox:{writable:[$l]},
	  deploy:{strategy:"command", health:{samples:1, interval_s:0, timeout_s:1}},
	  tools:{deploy_command:("echo deploy >>" + $l + "/d.log"), rollback_command:("echo rollback >>" + $l + "/d.log"),
	         health_url:"http://127.0.0.1:9/health"}}' >"$BATS_TEST_TMPDIR/d.json"
	run -1 forge run --config "$BATS_TEST_TMPDIR/d.json" "add a mul operation" </dev/null
	T=$(last_trace)
	assert_line "  deploy    rolled_back (command)"
	# (before: "forge resume T", which said a resume does not deploy again
	# and then advised itself once more)
	assert_line "  next      forge run 'add a mul operation'"
	assert_line "  why       its deploy was rolled_back and a resume does not deploy again: fix the cause (forge show $T), then run the task again"
	run -0 forge show "$T"
	assert_line "next      forge run 'add a mul operation'"
	run -0 bash -c "$(forge show "$T" | sed -n 's/^next  *//p')" </dev/null
	T2=$(last_trace)
	[ "$T2" != "$T" ]
	[ "$(forge status --json "$T2" | jq -r .run.status)" = completed ]
}
