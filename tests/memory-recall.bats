#!/usr/bin/env bats
# scripts/recall-score and the labelled recall set (tests/fixtures/recall/):
# the figures are printed, sane and deterministic; the scorer's arithmetic on
# a set small enough to check by hand; bad sets; the set's sources in sync.

load test_helper/common

setup() {
	forge_setup
	SCORE="$FORGE_ROOT/scripts/recall-score"
	SET="$FORGE_ROOT/tests/fixtures/recall"
}

# in_unit_range JSON: every figure of every method's summary is null (a kind
# with no query) or a number from 0 to 1.
in_unit_range() {
	jq -e '[.methods[].summary[] | .["recall@5", "recall@10", "mrr", "ndcg@10"]]
	       | all(. == null or (type == "number" and . >= 0 and . <= 1))' <<<"$1" >/dev/null
}

@test "recall-score: forge and the FTS5 baseline on the set, every figure within [0,1]" {
	# (this run is shared with recall-targets.bats and the next test)
	run -0 --separate-stderr run_shared recall-score.json "$SCORE" --json
	first=$output
	[ "$(jq -r '.set.memories' <<<"$first")" -ge 450 ]
	[ "$(jq -r '.set.queries' <<<"$first")" -ge 70 ]
	[ "$(jq -c '[.methods[].method]' <<<"$first")" = '["forge","fts5-porter"]' ]
	for kind in lexical paraphrase distractor; do
		[ "$(jq -r ".methods[0].summary.$kind.queries" <<<"$first")" -ge 20 ]
	done
	[ "$(jq -r '.methods[0].summary.overall.queries' <<<"$first")" = "$(jq -r .set.queries <<<"$first")" ]
	in_unit_range "$first"
	# figures, not nulls, for every kind of both methods
	[ "$(jq '[.methods[].summary[] | .["recall@5", "recall@10", "mrr", "ndcg@10"] | select(. == null)] | length' <<<"$first")" = 0 ]
	# a search process takes some time, p95 >= median
	jq -e '.methods[0].time_ms | .median > 0 and .p95 >= .median and .per == "process"' <<<"$first" >/dev/null
	# the baseline finds what shares its words: well above chance on lexical queries
	jq -e '.methods[1].summary.lexical["recall@5"] > 0.5' <<<"$first" >/dev/null
}

@test "recall-score: deterministic, a second run scores the same (a fresh database each time, one creation time)" {
	skip_repeat_under_sanitizers
	run -0 --separate-stderr run_shared recall-score.json "$SCORE" --json
	first=$output
	run -0 --separate-stderr "$SCORE" --json
	[ "$(jq -c '[.methods[].summary]' <<<"$output")" = "$(jq -c '[.methods[].summary]' <<<"$first")" ]
}

@test "recall-score --per-query: each query, where each method ranked its relevant memories" {
	run -0 --separate-stderr "$SCORE" --per-query --no-forge
	assert_line --regexp '^L01 lexical +deadlock when locking'
	assert_line --regexp '^    fts5-porter +ledger-lock-order\(3\)@[0-9-]+ ledger-txn-deadlock\(3\)@[0-9-]+$'
	refute_line --regexp '^    forge '
}

@test "recall-score: recall, MRR and nDCG computed by hand on a three-memory set" {
	mkdir "$BATS_TEST_TMPDIR/set"
	cat >"$BATS_TEST_TMPDIR/set/memories.jsonl" <<-'EOF'
	{"id":"01JRREC0000000000000000001","key":"a","type":"semantic","content":"postgres deadlock between transfers","tags":[]}
	{"id":"01JRREC0000000000000000002","key":"b","type":"semantic","content":"redis cache stampede","tags":[]}
	{"id":"01JRREC0000000000000000003","key":"c","type":"semantic","content":"deadlock in the rust mutex","tags":[]}
	EOF
	# q1: a (both words) then c (one word): all relevant found, first at 1.
	# q2: c (rust, mutex) then b (cache): b found at 2, MRR 1/2,
	#     nDCG (2^1-1)/log2(3) / (2^1-1) = 0.6309.
	cat >"$BATS_TEST_TMPDIR/set/queries.jsonl" <<-'EOF'
	{"id":"q1","kind":"lexical","query":"deadlock transfers","relevant":{"a":3,"c":1}}
	{"id":"q2","kind":"distractor","query":"rust mutex cache","relevant":{"b":1}}
	EOF
	run -0 --separate-stderr "$SCORE" --set "$BATS_TEST_TMPDIR/set" --json --per-query
	in_unit_range "$output"
	[ "$(jq -c '.methods[1].ranked' <<<"$output")" = '{"q1":["a","c"],"q2":["c","b"]}' ]
	[ "$(jq -c '.methods[1].summary.overall' <<<"$output")" = \
	  '{"recall@5":1,"recall@10":1,"mrr":0.75,"ndcg@10":0.8155,"queries":2}' ]
	[ "$(jq -c '.methods[1].summary.distractor' <<<"$output")" = \
	  '{"recall@5":1,"recall@10":1,"mrr":0.5,"ndcg@10":0.6309,"queries":1}' ]
	# no paraphrase query: no figure rather than a made-up one
	[ "$(jq -c '.methods[1].summary.paraphrase' <<<"$output")" = \
	  '{"recall@5":null,"recall@10":null,"mrr":null,"ndcg@10":null,"queries":0}' ]
	# forge's results map back to the keys too
	[ "$(jq -r '.methods[0].ranked.q1[0]' <<<"$output")" = a ]
}

@test "recall-score: a bad set or a missing forge is status 2 naming the problem" {
	mkdir "$BATS_TEST_TMPDIR/set"
	echo '{"id":"01JRREC0000000000000000001","key":"a","type":"semantic","content":"x"}' \
		>"$BATS_TEST_TMPDIR/set/memories.jsonl"
	echo '{"id":"q1","kind":"lexical","query":"x","relevant":{"nosuch":3}}' >"$BATS_TEST_TMPDIR/set/queries.jsonl"
	run -2 --separate-stderr "$SCORE" --set "$BATS_TEST_TMPDIR/set" --no-forge
	[ "$stderr" = "recall-score: queries.jsonl: line 1: no memory 'nosuch'" ]
	echo '{"id":"q1","kind":"lexical","query":"x","relevant":{"a":7}}' >"$BATS_TEST_TMPDIR/set/queries.jsonl"
	run -2 --separate-stderr "$SCORE" --set "$BATS_TEST_TMPDIR/set" --no-forge
	[ "$stderr" = "recall-score: queries.jsonl: line 1: grade of 'a' must be 1, 2 or 3" ]
	echo 'not json' >"$BATS_TEST_TMPDIR/set/queries.jsonl"
	run -2 --separate-stderr "$SCORE" --set "$BATS_TEST_TMPDIR/set" --no-forge
	[[ $stderr == "recall-score: $BATS_TEST_TMPDIR/set/queries.jsonl: line 1: not JSON: "* ]]
	run -2 --separate-stderr "$SCORE" --forge "$BATS_TEST_TMPDIR/nosuch"
	[ "$stderr" = "recall-score: no forge program at '$BATS_TEST_TMPDIR/nosuch' (--forge or FORGE_BINDIR)" ]
	run -2 --separate-stderr "$SCORE" --bogus
	[ -z "$output" ]
}

@test "recall set: the .jsonl files are what make-set.py builds from the sources, and the checks pass" {
	cp -r "$SET" "$BATS_TEST_TMPDIR/set"
	run -0 python3 "$BATS_TEST_TMPDIR/set/make-set.py"
	assert_output --regexp '^[0-9]+ memories in [0-9]+ projects, [0-9]+ queries '
	cmp "$SET/memories.jsonl" "$BATS_TEST_TMPDIR/set/memories.jsonl"
	cmp "$SET/queries.jsonl" "$BATS_TEST_TMPDIR/set/queries.jsonl"
	cmp "$SET/heldout.jsonl" "$BATS_TEST_TMPDIR/set/heldout.jsonl"
	cmp "$SET/heldout2.jsonl" "$BATS_TEST_TMPDIR/set/heldout2.jsonl"
	# the held-out queries follow the same rules, and share no id with the others
	cp "$BATS_TEST_TMPDIR/set/heldout.src" "$BATS_TEST_TMPDIR/heldout.src"
	sed -i 's/^HP01|paraphrase|container keeps restarting in a loop on the cluster:/HP01|paraphrase|container keeps restarting in a loop on the cluster, read kubectl logs:/' "$BATS_TEST_TMPDIR/set/heldout.src"
	run -1 --separate-stderr python3 "$BATS_TEST_TMPDIR/set/make-set.py"
	[[ "$stderr" == "HP01 (paraphrase) shares ['kubectl', 'log', 'read'] with k8s-crashloop (at most one word)"* ]]
	sed -i 's/^HP01|/P01|/' "$BATS_TEST_TMPDIR/set/heldout.src"
	run -1 --separate-stderr python3 "$BATS_TEST_TMPDIR/set/make-set.py"
	[[ "$stderr" == *"query id P01 twice (queries.src and heldout.src share no id)"* ]]
	cp "$BATS_TEST_TMPDIR/heldout.src" "$BATS_TEST_TMPDIR/set/heldout.src"
	# a paraphrase may share one word with its answer (postgres), not a key term of it
	cp "$BATS_TEST_TMPDIR/set/queries.src" "$BATS_TEST_TMPDIR/queries.src"
	sed -i 's/^P02|paraphrase|speed up lookups on a huge postgres ledger/P02|paraphrase|speed up lookups on a huge ledger with an index/' "$BATS_TEST_TMPDIR/set/queries.src"
	run -1 --separate-stderr python3 "$BATS_TEST_TMPDIR/set/make-set.py"
	[ "$stderr" = "P02 (paraphrase) uses key terms ['index'] of pg-concurrent-index" ]
	# nor two words
	cp "$BATS_TEST_TMPDIR/queries.src" "$BATS_TEST_TMPDIR/set/queries.src"
	sed -i 's/^P02|paraphrase|speed up lookups on a huge postgres ledger/P02|paraphrase|speed up lookups on a huge postgres payments ledger/' "$BATS_TEST_TMPDIR/set/queries.src"
	run -1 --separate-stderr python3 "$BATS_TEST_TMPDIR/set/make-set.py"
	[ "$stderr" = "P02 (paraphrase) shares ['payment', 'postgr'] with pg-concurrent-index (at most one word)" ]
}

@test "bench-recall.sh (make bench): one table, forge and the baseline, the kinds and the search time" {
	# (it scores the set and the held-out queries as recall-targets.bats does)
	skip_repeat_under_sanitizers
	BENCH_RECALL_BIG=0 run -0 --separate-stderr bash "$FORGE_ROOT/scripts/bench-recall.sh"
	assert_line --regexp '^recall set: [0-9]+ memories, [0-9]+ queries \([0-9]+ lexical, [0-9]+ paraphrase, [0-9]+ distractor\)$'
	assert_line --regexp '^method +overall +lexical +paraphrase +distractor +recall@10 +nDCG@10 +search ms p50/p95$'
	assert_line --regexp '^forge +[01]\.[0-9]{3}( +[01]\.[0-9]{3}){9} +[0-9.]+/[0-9.]+$'
	assert_line --regexp '^fts5-porter +[01]\.[0-9]{3}( +[01]\.[0-9]{3}){9} +[0-9.]+/[0-9.]+ \(in-proc\)$'
	# the held-out queries, scored apart
	assert_line '-- held out (queries never used to tune recall)'
	assert_line --regexp '^recall set: [0-9]+ memories, [0-9]+ held-out queries \([0-9]+ lexical, [0-9]+ paraphrase, [0-9]+ distractor\)$'
	# R@10 and nDCG@10 per kind, and the CPU time of a search process next
	# to that of a process that does nothing
	assert_line --regexp '^forge +[01]\.[0-9]{3}( +[01]\.[0-9]{3}){7} +[0-9.]+/[0-9.]+ \([0-9.]+\)$'
	# and the second held-out set (issue 14)
	assert_line '-- second held-out set (issue 14)'
	[ "$(grep -c '^fts5-porter ' <<<"$output")" -eq 6 ]
	refute_line --partial '100000 memories'
}
