#!/usr/bin/env bash
# bench-store - events persisted per second by lib/store (tests/helpers/
# store-writer): BENCH_EVENTS events (default 1M) in transactions of
# BENCH_BATCH (default 1000) into a fresh database (each line read as
# `forge-events store` reads it: scanned, no jv), then the same events again
# (all duplicates: the idempotent path).  Medians of BENCH_RUNS runs.
#   FORGE_TESTBIN  where store-writer is (default build/tests)
#
# Timestamps increase from line to line as they do in a real stream; repeated
# or shuffled timestamps scatter inserts over the (trace_id, ts, id) index and
# are about 3x slower once the index outgrows the page cache.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/benchlib.sh
N=${BENCH_EVENTS:-1000000}
BATCH=${BENCH_BATCH:-1000}
RUNS=${BENCH_RUNS:-5}
writer="${FORGE_TESTBIN:-$PWD/build/tests}/store-writer"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

gen_events "$N" 01JDB2BENCHAAAAAAAAAAAAAAA >"$tmp/events"

# field N LINE...: the number before the N-th "events/s" of store-writer's line.
field() { sed -n 's/.*: \([0-9]*\) events\/s.*: \([0-9]*\) events\/s$/\'"$1"'/p'; }
# The whole run's rate by CPU time (user+sys) too: on a shared machine the
# wall time also counts waiting for a CPU.
total=() store=() dup=() cpu=()
for ((r = 1; r <= RUNS; r++)); do
	rm -f "$tmp"/db*
	line=$(/usr/bin/time -f "%U %S" -o "$tmp/time" "$writer" --db "$tmp/db" --batch "$BATCH" <"$tmp/events")
	read -r user sys <"$tmp/time"
	cpu+=("$(awk -v n="$N" -v u="$user" -v s="$sys" 'BEGIN { printf "%.0f", n / (u + s) }')")
	total+=("$(field 1 <<<"$line")")
	store+=("$(field 2 <<<"$line")")
	dup+=("$("$writer" --db "$tmp/db" --batch "$BATCH" <"$tmp/events" | field 2)")
done
rate=$(median "${store[@]}")
echo "store_event_put: $rate events/s inside lib/store (target >= 250000: $(awk -v r="$rate" 'BEGIN { print (r >= 250000) ? "ok" : "under" }'))," \
     "$(median "${total[@]}") events/s with reading and parsing ($(median "${cpu[@]}") per CPU-second)," \
     "$(median "${dup[@]}") events/s for duplicates" \
     "(median of $RUNS; $N events, batch $BATCH, db $(($(stat -c %s "$tmp/db") / 1048576)) MiB)"
