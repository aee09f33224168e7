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

# The rate by wall time, and by CPU time (user+sys): on a shared machine the
# wall time also counts waiting for a CPU.  Target: 150000 events/s.
store_rates=() cpu_rates=()
for ((r = 1; r <= BENCH_RUNS; r++)); do
	rm -f "$tmp"/db*
	s=$(seconds /usr/bin/time -f "%U %S" -o "$tmp/time" "$FORGE_BINDIR/forge-events" --db "$tmp/db" store <"$tmp/events")
	read -r user sys <"$tmp/time"
	store_rates+=("$(awk -v n="$N" -v s="$s" 'BEGIN { printf "%.0f", n / s }')")
	cpu_rates+=("$(awk -v n="$N" -v u="$user" -v s="$sys" 'BEGIN { printf "%.0f", n / (u + s) }')")
done
rate=$(median "${store_rates[@]}")
echo "forge-events store: $rate events/s (target >= 150000: $(awk -v r="$rate" 'BEGIN { print (r >= 150000) ? "ok" : "under" }')), $(median "${cpu_rates[@]}") per CPU-second (median of $BENCH_RUNS, $N events, $((bytes / 1048576)) MiB)"

pass_rates=()
for ((r = 1; r <= BENCH_RUNS; r++)); do
	s=$(seconds "$FORGE_TESTBIN/stream-filter" --phase plan <"$tmp/stream")
	pass_rates+=("$(awk -v b="$bytes" -v s="$s" 'BEGIN { printf "%.1f", b / 1048576 / s }')")
done
echo "stream pass-through (parse + schema-check + forward): $(median "${pass_rates[@]}") MB/s (median of $BENCH_RUNS)"
