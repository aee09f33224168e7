#!/usr/bin/env bash
# bench-memory.sh - memory recall p50/p95 at 10K, 100K and 1M memories,
# consolidation of 100K, local embedding throughput (tests/helpers/bench-memory.c).
#   BENCH_MEMORY_SIZES  sizes to measure (default "10000 100000 1000000")
#   BENCH_MEMORY_QUERIES  recalls per size (default 300)
set -euo pipefail
cd "$(dirname "$0")/.."
bm="${FORGE_TESTBIN:-build/tests}/bench-memory"
[ -x "$bm" ] || { echo "bench-memory: $bm is not built (make bench builds it)"; exit 1; }
dir=$(mktemp -d "${TMPDIR:-/tmp}/forge-bench-memory.XXXXXX")
trap 'rm -rf "$dir"' EXIT
"$bm" embed 200000
for n in ${BENCH_MEMORY_SIZES:-10000 100000 1000000}; do
	echo "-- $n memories"
	"$bm" load "$dir/m$n.db" "$n"
	"$bm" recall "$dir/m$n.db" "${BENCH_MEMORY_QUERIES:-300}"
	if [ "$n" -eq 100000 ]; then
		"$bm" consolidate "$dir/m$n.db"
	fi
	rm -f "$dir/m$n.db"*
done
