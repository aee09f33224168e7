#!/usr/bin/env bats
# forge.mk: the Makefile/CI targets.

load test_helper/common

setup() {
	forge_setup
	unset FORGE_DB
	repo=$BATS_TEST_TMPDIR/calc
	cp -r "$FORGE_ROOT/tests/fixtures/repos/calc" "$repo"
	git -C "$repo" init -q -b main
	git -C "$repo" add -A
	git -C "$repo" commit -q -m init
	cat >"$BATS_TEST_TMPDIR/ci.mk" <<MK
include $FORGE_ROOT/forge.mk
FORGE = $FORGE_BINDIR/forge
FORGE_BASE = main
FORGE_OUT = $BATS_TEST_TMPDIR
MK
}

@test "forge-test runs the project's tests and writes JUnit XML" {
	run -0 make -s -C "$repo" -f "$BATS_TEST_TMPDIR/ci.mk" forge-test
	[ -s "$BATS_TEST_TMPDIR/forge-junit.xml" ]
	grep -q '<testsuite' "$BATS_TEST_TMPDIR/forge-junit.xml"
	[ "$(tail -n 1 "$BATS_TEST_TMPDIR/forge-test.jsonl" | jq -r .status)" = ok ]
}

@test "forge-check runs review and tests both and fails when the review requests changes" {
	sed -i 's|printf("%ld\\n", calc_add(a, b));|{ char b2[32]; snprintf(b2, sizeof b2, "%ld\\n", calc_add(a, b)); printf(b2); }|' "$repo/calc.c"
	git -C "$repo" commit -qam "print through a buffer"
	printf 'FORGE_BASE = main~1\n' >>"$BATS_TEST_TMPDIR/ci.mk"
	run -2 --separate-stderr make -s -C "$repo" -f "$BATS_TEST_TMPDIR/ci.mk" forge-check
	[ -s "$BATS_TEST_TMPDIR/forge-review.sarif" ]
	[ "$(jq -r '.runs[0].results | length' "$BATS_TEST_TMPDIR/forge-review.sarif")" -ge 1 ]
	[ "$(tail -n 1 "$BATS_TEST_TMPDIR/forge-review.jsonl" | jq -r .review.decision)" = request_changes ]
	# The tests ran too (and passed), although the review said no.
	[ "$(tail -n 1 "$BATS_TEST_TMPDIR/forge-test.jsonl" | jq -r .status)" = ok ]
	grep -q '<testsuite' "$BATS_TEST_TMPDIR/forge-junit.xml"
	# Make exits 2; forge's statuses are in the status file and the message.
	grep -qx 'review=1' "$BATS_TEST_TMPDIR/forge-status"
	grep -qx 'test=0' "$BATS_TEST_TMPDIR/forge-status"
	[ "$(wc -l <"$BATS_TEST_TMPDIR/forge-status")" -eq 2 ]
	[[ "$stderr" == *"forge-review: exit 1 (changes requested)"* ]]
	[[ "$stderr" == *"forge-check: failed: review=1 test=0"* ]]
}

@test "forge-check fails when the tests fail although the review approves" {
	# A change the review has nothing against, that breaks a test.
	sed -i 's|return a - b;|return a - b + 1;|' "$repo/calc.c"
	grep -q 'return a - b + 1;' "$repo/calc.c"
	git -C "$repo" commit -qam "off by one"
	printf 'FORGE_BASE = main~1\n' >>"$BATS_TEST_TMPDIR/ci.mk"
	run -2 --separate-stderr make -s -C "$repo" -f "$BATS_TEST_TMPDIR/ci.mk" forge-check
	grep -qx 'review=0' "$BATS_TEST_TMPDIR/forge-status"
	grep -qx 'test=1' "$BATS_TEST_TMPDIR/forge-status"
	[[ "$stderr" == *"forge-test: exit 1 (tests failed)"* ]]
	[[ "$stderr" == *"forge-check: failed: review=0 test=1"* ]]
}

@test "forge-review records its status; a later target replaces only its own line" {
	run -0 make -s -C "$repo" -f "$BATS_TEST_TMPDIR/ci.mk" forge-review
	[ "$(cat "$BATS_TEST_TMPDIR/forge-status")" = review=0 ]
	run -0 make -s -C "$repo" -f "$BATS_TEST_TMPDIR/ci.mk" forge-test
	[ "$(cat "$BATS_TEST_TMPDIR/forge-status")" = "$(printf 'review=0\ntest=0')" ]
	run -0 make -s -C "$repo" -f "$BATS_TEST_TMPDIR/ci.mk" forge-review
	[ "$(sort "$BATS_TEST_TMPDIR/forge-status")" = "$(printf 'review=0\ntest=0')" ]
}

@test "make -j2 forge-review forge-test: both lines are kept when the two finish together" {
	# (before: each target rewrote the whole file, grep -v into a copy and
	# mv; the last mv dropped the other's line.)  An mv on PATH holds each
	# target's copy until both targets have made theirs -- unless the
	# status directory is locked, when the rewrites take turns and there
	# is no other copy to wait for.
	out=$BATS_TEST_TMPDIR/out barrier=$BATS_TEST_TMPDIR/barrier shims=$BATS_TEST_TMPDIR/shims
	mkdir -p "$out" "$barrier" "$shims"
	cat >"$shims/mv" <<SH
#!/bin/sh
touch "$barrier/\$\$"
if flock -n "$out" true; then
	i=0
	while [ "\$(ls "$barrier" | wc -l)" -lt 2 ] && [ \$i -lt 400 ]; do sleep 0.05; i=\$((i + 1)); done
fi
exec $(command -v mv) "\$@"
SH
	printf '#!/bin/sh\necho "{}"\n[ "$1" = review ] && exit 1\nexit 0\n' >"$BATS_TEST_TMPDIR/fakeforge"
	chmod +x "$shims/mv" "$BATS_TEST_TMPDIR/fakeforge"
	PATH=$shims:$PATH run -2 --separate-stderr make -s -j2 -k -C "$repo" -f "$BATS_TEST_TMPDIR/ci.mk" \
		FORGE="$BATS_TEST_TMPDIR/fakeforge" FORGE_OUT="$out" forge-review forge-test
	[ "$(sort "$out/forge-status")" = "$(printf 'review=1\ntest=0')" ]
	[ "$(ls "$barrier" | wc -l)" -eq 2 ]
	# nothing left beside the outputs
	[ "$(ls -A "$out" | sort | tr '\n' ' ')" = "forge-review.jsonl forge-status forge-test.jsonl " ]
}

@test "forge-run wants a TASK" {
	run -2 make -s -C "$repo" -f "$BATS_TEST_TMPDIR/ci.mk" forge-run
	[[ "$output" == *'set TASK='* ]]
}

# fake_forge: a FORGE that records its arguments, one a line, in args.txt
fake_forge() {
	printf '#!/bin/sh\nprintf "%%s\\n" "$@" >"%s/args.txt"\necho "{}"\n' "$BATS_TEST_TMPDIR" \
		>"$BATS_TEST_TMPDIR/fakeforge"
	chmod +x "$BATS_TEST_TMPDIR/fakeforge"
	echo "FORGE = $BATS_TEST_TMPDIR/fakeforge" >>"$BATS_TEST_TMPDIR/ci.mk"
}

@test "forge-run passes TASK to forge verbatim: backquotes, \$(...), quotes and \$ are text and nothing runs" {
	fake_forge
	title='fix `touch '$BATS_TEST_TMPDIR'/PWNED1` in the "parse" step, $(touch '$BATS_TEST_TMPDIR'/PWNED2) $$HOME it'"'"'s $HOME'
	run -0 make -s -C "$repo" -f "$BATS_TEST_TMPDIR/ci.mk" forge-run TASK="$title"
	[ "$(tail -n 1 "$BATS_TEST_TMPDIR/args.txt")" = "$title" ]
	# the same from the environment (TASK="$ISSUE_TITLE" make forge-run)
	rm "$BATS_TEST_TMPDIR/args.txt"
	TASK=$title run -0 make -s -C "$repo" -f "$BATS_TEST_TMPDIR/ci.mk" forge-run
	[ "$(tail -n 1 "$BATS_TEST_TMPDIR/args.txt")" = "$title" ]
	[ ! -e "$BATS_TEST_TMPDIR/PWNED1" ]
	[ ! -e "$BATS_TEST_TMPDIR/PWNED2" ]
	[ "$(cat "$BATS_TEST_TMPDIR/forge-status")" = run=0 ]
}

@test "a FORGE_OUT that does not exist yet is made: forge runs and its statuses are recorded there" {
	fake_forge
	echo "FORGE_OUT = $BATS_TEST_TMPDIR/reports/ci" >>"$BATS_TEST_TMPDIR/ci.mk"
	run -0 --separate-stderr make -s -C "$repo" -f "$BATS_TEST_TMPDIR/ci.mk" forge-check
	[ "$(cat "$BATS_TEST_TMPDIR/reports/ci/forge-status")" = "$(printf 'review=0\ntest=0')" ]
	[ -s "$BATS_TEST_TMPDIR/reports/ci/forge-review.jsonl" ]
	[ -s "$BATS_TEST_TMPDIR/reports/ci/forge-test.jsonl" ]
	# a FORGE_OUT that cannot be made: forge.mk says so (exit 2)
	touch "$BATS_TEST_TMPDIR/afile"
	run -2 --separate-stderr make -s -C "$repo" -f "$BATS_TEST_TMPDIR/ci.mk" FORGE_OUT="$BATS_TEST_TMPDIR/afile/x" forge-review
	[[ $stderr == *"forge.mk: cannot make FORGE_OUT '$BATS_TEST_TMPDIR/afile/x'"* ]]
}

@test "a FORGE_OUT with a space and an apostrophe: each path one argument, every output there and nowhere else" {
	fake_forge
	out="$BATS_TEST_TMPDIR/my ws/it's out"
	echo "FORGE_OUT = $out" >>"$BATS_TEST_TMPDIR/ci.mk"
	# (before: "unexpected operand 'ws/out/forge-review.sarif'", exit 2, and an
	# empty file "my" made beside the workspace by the redirection)
	run -0 --separate-stderr make -s -C "$repo" -f "$BATS_TEST_TMPDIR/ci.mk" forge-review
	[ "$(sed -n '/^--sarif$/{n;p;}' "$BATS_TEST_TMPDIR/args.txt")" = "$out/forge-review.sarif" ]
	[ "$(sed -n '/^--base$/{n;p;}' "$BATS_TEST_TMPDIR/args.txt")" = main ]
	run -0 --separate-stderr make -s -C "$repo" -f "$BATS_TEST_TMPDIR/ci.mk" forge-test
	[ "$(sed -n '/^--junit$/{n;p;}' "$BATS_TEST_TMPDIR/args.txt")" = "$out/forge-junit.xml" ]
	run -0 --separate-stderr make -s -C "$repo" -f "$BATS_TEST_TMPDIR/ci.mk" forge-run TASK=x
	[ "$(cat "$out/forge-status")" = "$(printf 'review=0\ntest=0\nrun=0')" ]
	[ -s "$out/forge-review.jsonl" ] && [ -s "$out/forge-test.jsonl" ] && [ -s "$out/forge-run.jsonl" ]
	[ "$(ls -A "$BATS_TEST_TMPDIR/my ws")" = "it's out" ]
	[ ! -e "$BATS_TEST_TMPDIR/my" ]
}

@test "forge-review on a branch behind FORGE_BASE reviews the branch's own change: what the base got after is not blamed on it" {
	printf 'notes\ntoken ghp_4kQ9zX2mV7bN1cR8tY5uW3eL6pA0sD9fG2hJ\n' >"$repo/notes.txt"
	git -C "$repo" add notes.txt && git -C "$repo" commit -qm notes
	git -C "$repo" checkout -qb feature
	echo "a line" >>"$repo/README.md" && git -C "$repo" add README.md && git -C "$repo" commit -qm "feature"
	git -C "$repo" checkout -q main
	printf 'notes\n' >"$repo/notes.txt" && git -C "$repo" commit -qam "drop the token"
	git -C "$repo" checkout -q feature
	# (before: --base diffed from main's tip, the dropped token "added" by
	# the branch: review=4, a critical finding on a file it never touched)
	run -0 --separate-stderr make -s -C "$repo" -f "$BATS_TEST_TMPDIR/ci.mk" forge-review
	[ "$(cat "$BATS_TEST_TMPDIR/forge-status")" = review=0 ]
	tail -n 1 "$BATS_TEST_TMPDIR/forge-review.jsonl" | jq -e '.review.files == 1 and .review.findings == []'
}
