#!/usr/bin/env bats
# Recall on the labelled set (tests/fixtures/recall/, scored by
# scripts/recall-score with the local method, no configuration): at least the
# FTS5+porter baseline on every kind of query, and the issue's targets.
# Deterministic: one creation time, fresh database, no timing asserted.

load test_helper/common

setup_file() {
	FORGE_ROOT="$(cd "$BATS_TEST_DIRNAME/.." && pwd)"
	: "${FORGE_BINDIR:=$FORGE_ROOT/bin}"
	export FORGE_ROOT FORGE_BINDIR
	export HOME="$BATS_FILE_TMPDIR/home" XDG_CONFIG_HOME="$BATS_FILE_TMPDIR/home/.config"
	mkdir -p "$XDG_CONFIG_HOME"
	# (the set's score is shared with memory-recall.bats: run_shared)
	run_shared recall-score.json "$FORGE_ROOT/scripts/recall-score" --json \
		>"$BATS_FILE_TMPDIR/score.json" 2>"$BATS_FILE_TMPDIR/score.err"
	"$FORGE_ROOT/scripts/recall-score" --json --queries heldout.jsonl \
		>"$BATS_FILE_TMPDIR/heldout.json" 2>"$BATS_FILE_TMPDIR/heldout.err"
}

setup() {
	forge_setup
	SCORE="$BATS_FILE_TMPDIR/score.json"
}

# fig METHOD KIND METRIC [FILE]: one figure of the scorer's JSON.
fig() {
	jq -r --arg m "$1" --arg k "$2" --arg f "$3" \
		'.methods[] | select(.method == $m) | .summary[$k][$f]' "${4:-$SCORE}"
}

# at_least A B: A >= B (decimal numbers).
at_least() {
	awk -v a="$1" -v b="$2" 'BEGIN { exit !(a + 0 >= b + 0) }'
}

@test "recall on the labelled set: at least the FTS5+porter baseline on every kind" {
	[ -s "$SCORE" ] || { cat "$BATS_FILE_TMPDIR/score.err" >&2; false; }
	for kind in overall lexical paraphrase distractor; do
		for f in recall@5 mrr; do
			at_least "$(fig forge $kind $f)" "$(fig fts5-porter $kind $f)" ||
				{ echo "forge $kind $f $(fig forge $kind $f) < baseline $(fig fts5-porter $kind $f)"; false; }
		done
	done
	# what shares the answer's words is found, a distracting key word is not enough
	at_least "$(fig forge lexical recall@5)" 0.95
	at_least "$(fig forge distractor recall@5)" 0.90
	at_least "$(fig forge overall mrr)" 0.65
}

@test "recall on the labelled set: the issue's targets (recall@5 >= 0.70 overall, >= 0.45 on paraphrases)" {
	[ -s "$SCORE" ] || { cat "$BATS_FILE_TMPDIR/score.err" >&2; false; }
	para=$(fig forge paraphrase recall@5) all=$(fig forge overall recall@5)
	at_least "$para" 0.45 || { echo "paraphrase recall@5 $para < 0.45"; false; }
	at_least "$all" 0.70 || { echo "overall recall@5 $all < 0.70"; false; }
	# the concept thesaurus is what reaches them: at least twice the baseline
	at_least "$para" "$(awk -v b="$(fig fts5-porter paraphrase recall@5)" 'BEGIN { print 2 * b }')"
}

@test "recall on the held-out queries (never used to tune): at least the baseline, paraphrases above it" {
	H="$BATS_FILE_TMPDIR/heldout.json"
	[ -s "$H" ] || { cat "$BATS_FILE_TMPDIR/heldout.err" >&2; false; }
	for kind in overall lexical paraphrase distractor; do
		at_least "$(fig forge $kind recall@5 "$H")" "$(fig fts5-porter $kind recall@5 "$H")" ||
			{ echo "held out: forge $kind recall@5 below the baseline"; false; }
	done
	para=$(fig forge paraphrase recall@5 "$H") base=$(fig fts5-porter paraphrase recall@5 "$H")
	awk -v a="$para" -v b="$base" 'BEGIN { exit !(a > b) }' ||
		{ echo "held-out paraphrase recall@5 $para not above the baseline's $base"; false; }
}
