#!/usr/bin/env bash
# Stream and event store: events persisted per second by `forge-events store`
# (1M events), and stream pass-through throughput (MB/s).
set -euo pipefail
source "$(dirname "$0")/benchlib.sh"
N=${BENCH_EVENTS:-1000000}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
gen_events "$N" 01JDB2BENCHAAAAAAAAAAAAAAA >"$tmp/events"
# A filter's input ends with what it works on: here a bare task.
{ cat "$tmp/events"; echo '{"task":"bench"}'; } >"$tmp/stream"
bytes=$(stat -c %s "$tmp/events")

store_rates=()
for ((r = 1; r <= BENCH_RUNS; r++)); do
	rm -f "$tmp"/db*
	s=$(seconds "$FORGE_BINDIR/forge-events" --db "$tmp/db" store <"$tmp/events")
	store_rates+=("$(awk -v n="$N" -v s="$s" 'BEGIN { printf "%.0f", n / s }')")
done
echo "forge-events store: $(median "${store_rates[@]}") events/s (median of $BENCH_RUNS, $N events, $((bytes / 1048576)) MiB)"

pass_rates=()
for ((r = 1; r <= BENCH_RUNS; r++)); do
	s=$(seconds "$FORGE_TESTBIN/stream-filter" --phase plan <"$tmp/stream")
	pass_rates+=("$(awk -v b="$bytes" -v s="$s" 'BEGIN { printf "%.1f", b / 1048576 / s }')")
done
echo "stream pass-through (parse + schema-check + forward): $(median "${pass_rates[@]}") MB/s (median of $BENCH_RUNS)"
