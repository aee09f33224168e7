# benchlib.sh - helpers sourced by the bench scripts.

# median N...: the median of the numbers given.
median() {
	printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# seconds CMD...: run CMD (its stdout discarded), print its wall time in seconds.
seconds() {
	local t0 t1
	t0=$(date +%s%N)
	"$@" >/dev/null
	t1=$(date +%s%N)
	awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.4f\n", (b - a) / 1e9 }'
}

# gen_events N TRACE: N valid event lines, one millisecond apart (as a real
# stream's timestamps increase).
gen_events() {
	awk -v n="$1" -v t="$2" 'BEGIN {
		for (i = 1; i <= n; i++) {
			s = int(i / 1000)
			printf "{\"kind\":\"event\",\"id\":\"01JDB3%020d\",\"trace_id\":\"%s\",\"ts\":\"2026-11-21T%02d:%02d:%02d.%03dZ\",\"source\":\"bench\",\"phase\":\"implement\",\"type\":\"tool.executed\",\"payload\":{\"tool\":\"read_file\",\"input\":{\"path\":\"src/main.c\"},\"ok\":true},\"duration_ms\":3}\n", i, t, 10 + int(s / 3600), int(s / 60) % 60, s % 60, i % 1000
		}
	}'
}
