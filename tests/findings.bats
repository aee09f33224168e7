#!/usr/bin/env bats
# forge-findings: list, dismiss (the human feedback loop).

load test_helper/common

setup() {
	forge_setup
}

finding() {
	printf '{"trace_id":"01JDB2AAAAAAAAAAAAAAAAAAAA","layer":"static","severity":"warning","category":"style","rule":"%s","message":"%s","file":"src/main.c","line":12}\n' "$1" "$2" |
		forge-findings add
}

@test "list shows stored findings, newest first" {
	a=$(finding no-tabs "tabs used for indentation")
	b=$(finding long-line "line longer than 100 characters")
	run -0 forge-findings list --json
	[ "${#lines[@]}" -eq 2 ]
	[ "$(jq -r .id <<<"${lines[0]}")" = "$b" ]
	run -0 forge-findings list --json --trace 01JDB2AAAAAAAAAAAAAAAAAAAA
	[ "${#lines[@]}" -eq 2 ]
	run -0 forge-findings list --json --trace 01JDB2BBBBBBBBBBBBBBBBBBBB
	[ -z "$output" ]
	run -0 forge-findings list
	assert_output --partial "tabs used for indentation"
}

@test "dismiss marks the finding, lowers related memories, remembers the dismissal" {
	mem=$(forge-memory add --context "reviewing style issues in src/main.c" --tags style \
		"review finding: style no-tabs tabs used for indentation in src/main.c is a real problem")
	other=$(forge-memory add "Database uses PostgreSQL")
	f=$(finding no-tabs "tabs used for indentation")
	run -0 forge-findings dismiss --json --reason "this project uses tabs" "$f"
	jq -e '.finding.dismissed == true and .finding.dismissed_reason == "this project uses tabs"' <<<"$output"
	jq -e --arg m "$mem" '.lowered | map(.id) | index($m) != null' <<<"$output"
	dm=$(jq -r .memory_id <<<"$output")
	run -0 forge-memory show --json "$mem"
	[ "$(jq -r .confidence <<<"$output")" = 0.3 ]
	run -0 forge-memory show --json "$other"
	[ "$(jq -r .confidence <<<"$output")" = 0.5 ]
	run -0 forge-memory show --json "$dm"
	jq -e '.type == "semantic" and .confidence == 0.7 and .source == "human" and (.tags | index("dismissal"))' <<<"$output"
	[[ $(jq -r .content <<<"$output") == *"this project uses tabs"* ]]
	run -0 forge-findings list --json
	[ -z "$output" ]
	run -0 forge-findings list --json --all
	[ "${#lines[@]}" -eq 1 ]
	run -0 forge-events replay 01JDB2AAAAAAAAAAAAAAAAAAAA
	[[ $output == *feedback.human_dismissed* ]]
	# twice: no second penalty
	run -0 forge-findings dismiss "$f"
	assert_output --partial "already dismissed"
	run -0 forge-memory show --json "$mem"
	[ "$(jq -r .confidence <<<"$output")" = 0.3 ]
}

@test "dismiss: unknown id is status 1, usage errors are status 2" {
	# no database at all: nothing to dismiss, and none is made (exit 2)
	run -2 --separate-stderr forge-findings dismiss 01JDB3AAAAAAAAAAAAAAAAAAAA
	[ "$stderr" = "forge-findings: no database at '$FORGE_DB': no run has been recorded there (check --db or FORGE_DB: name the database the run was recorded in)" ]
	[ ! -e "$FORGE_DB" ]
	finding no-tabs "tabs used for indentation" >/dev/null
	run -1 --separate-stderr forge-findings dismiss 01JDB3AAAAAAAAAAAAAAAAAAAA
	[[ $stderr == *"no finding"* ]]
	run -2 forge-findings dismiss
	run -2 forge-findings frobnicate
	run -2 forge-findings list extra
}

@test "add rejects a finding without its required fields" {
	run -2 --separate-stderr forge-findings add <<<'{"severity":"warning"}'
	[[ $stderr == *"line 1"* ]]
	run -2 forge-findings add <<<'not json'
}

@test "add with no finding given (empty stdin, blank lines, a terminal) is bad input: exit 2, nothing made (fix135 #4)" {
	# (before: exit 0, nothing said, and an empty database made)
	run -2 --separate-stderr forge-findings add </dev/null
	[ "$stderr" = "forge-findings: add: no finding given: it reads one JSON object a line from standard input (forge findings add < findings.jsonl), which was empty" ]
	[ -z "$output" ]
	[ ! -e "$FORGE_DB" ]
	run -2 --separate-stderr forge findings add <<<$'\n  \n'
	[[ "$stderr" == *"no finding given"* ]]
	[ ! -e "$FORGE_DB" ]
	SHOWN="$BATS_TEST_TMPDIR/terminal"
	run -2 on_tty -- forge-findings add
	grep -q "no finding given: .*, not from a terminal" "$SHOWN"
	[ ! -e "$FORGE_DB" ]
	# blank lines before a finding still count in the line numbers said
	run -2 --separate-stderr forge-findings add <<<$'\n\n{"severity":"warning"}'
	[[ "$stderr" == "forge-findings: line 3: "* ]]
}

@test "a finding found again in the same trace is stored once (same id); another trace gets its own row" {
	a=$(finding no-tabs "tabs used for indentation")
	b=$(finding no-tabs "tabs used for indentation")
	[ "$a" = "$b" ]
	run -0 forge-findings list --json
	[ "${#lines[@]}" -eq 1 ]
	printf '{"trace_id":"01JDB2BBBBBBBBBBBBBBBBBBBB","layer":"static","severity":"warning","category":"style","rule":"no-tabs","message":"tabs used for indentation","file":"src/main.c","line":12}\n' |
		forge-findings add
	run -0 forge-findings list --json
	[ "${#lines[@]}" -eq 2 ]
}

@test "two reviews of the same change in one trace: forge findings list shows each finding once" {
	repo=$BATS_TEST_TMPDIR/repo
	make_repo "$repo"
	cp -r "$FORGE_ROOT/tests/fixtures/review/planted/." "$repo/"
	git -C "$repo" add -A
	git -C "$repo" commit -q -m planted
	cd "$repo"
	run -4 --separate-stderr forge-review --no-input --commit HEAD
	first=$(tail -n 1 <<<"$output")
	n=$(jq '.review.findings | length' <<<"$first")
	[ "$n" -ge 4 ]
	# the same change reviewed again in the same trace (as after a bounce)
	run -4 --separate-stderr forge-review --commit HEAD <<<"$first"
	second=$(tail -n 1 <<<"$output")
	[ "$(jq -r .trace_id <<<"$second")" = "$(jq -r .trace_id <<<"$first")" ]
	run -0 forge findings list --json
	[ "${#lines[@]}" -eq "$n" ]
	# the second review's findings carry the stored rows' ids
	[ "$(jq -c '[.review.findings[].id] | sort' <<<"$second")" = "$(jq -c '[.review.findings[].id] | sort' <<<"$first")" ]
}

@test "list: a finding's escape sequences never reach the terminal (term_safe, as forge show)" {
	printf '{"trace_id":"01JDB2AAAAAAAAAAAAAAAAAAAA","layer":"static","severity":"info","category":"style","rule":"x","message":"fine \\u001b]0;PWNED\\u0007\\u001b[41mEVIL \\u009b2J","file":"a\\u001bb.c","line":3}\n' |
		forge-findings add
	run -0 --separate-stderr forge-findings list
	[[ $output == *"fine  ]0;PWNED  [41mEVIL   2J"* ]]
	[[ $output == *'"a\033b.c":3'* ]]	# the file's name quoted as git shows it
	[[ $output != *$'\e'* && $output != *$'\a'* && $output != *$'\xc2\x9b'* ]]
	run -0 forge-findings list --json
	[[ $(jq -r .message <<<"$output") == *$'\e]0;PWNED'* ]]
}
