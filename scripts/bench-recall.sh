#!/usr/bin/env bash
# bench-recall.sh - recall quality of `forge memory search` on the labelled set
# (tests/fixtures/recall/) next to a plain FTS5+porter baseline, and the search
# time per process (scripts/recall-score).
#   BENCH_RECALL_BIG=1     also at BENCH_RECALL_SIZE memories (default 100000):
#                          generated fillers with the labelled ones inside
set -euo pipefail
cd "$(dirname "$0")/.."
command -v python3 >/dev/null || { echo "bench-recall: python3 is needed"; exit 1; }
scripts/recall-score
echo "-- held out (queries never used to tune recall)"
scripts/recall-score --queries heldout.jsonl
echo "-- second held-out set (issue 14)"
scripts/recall-score --queries heldout2.jsonl
if [ "${BENCH_RECALL_BIG:-0}" = 1 ]; then
	echo "-- ${BENCH_RECALL_SIZE:-100000} memories"
	scripts/recall-score --size "${BENCH_RECALL_SIZE:-100000}"
fi
