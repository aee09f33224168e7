#!/usr/bin/env bash
# bench-start.sh - what a Forge process costs before and around its work
# (issues 13 and 14): /bin/true as the baseline (what any process costs on
# this machine: fork, exec, the kernel's mapping, exit), `forge --version`,
# `forge-memory --help`, `forge memory --help` (the dispatcher, then the
# program) and `forge memory search --json --limit 10` (counting its
# accesses, as a user's search does: not --peek) on the recall set's
# memories with generated fillers up to BENCH_START_SIZES (default "600
# 100000").
#
# Each command runs BENCH_START_RUNS times (default 4 x BENCH_RUNS, at
# least 20), all of them interleaved round by round, under
# tests/helpers/rusage-run: CPU is user+sys of the process (and of the
# program the dispatcher execs), the median.  Forge's own cost is the
# command's median minus the baseline's, measured in the same rounds --
# the targets are own costs: --version/--help <= 2 ms, search <= 5 ms at
# 600 memories and <= 10 ms at 100K.  Instructions (user space, one run)
# come from valgrind's callgrind when it is installed ("-" otherwise); it
# does not count the kernel's exec, mapping and page faults, which the
# CPU time does.
set -euo pipefail
source "$(dirname "$0")/benchlib.sh"
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${FORGE_BINDIR:-$root/bin}
rr="${FORGE_TESTBIN:-$root/build/tests}/rusage-run"
[ -x "$rr" ] || { echo "bench-start: $rr is missing (make build/tests/rusage-run)" >&2; exit 1; }
command -v python3 >/dev/null || { echo "bench-start: python3 is needed"; exit 1; }
truebin=$(PATH=/usr/bin:/bin command -v true)
runs=$((4 * ${BENCH_RUNS:-5}))
[ "$runs" -ge 20 ] || runs=20
runs=${BENCH_START_RUNS:-$runs}
sizes=${BENCH_START_SIZES:-600 100000}
query="how do I add a database migration"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/forge-bench-start.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
export HOME="$tmp/home" XDG_CONFIG_HOME="$tmp/home/.config" XDG_CACHE_HOME="$tmp/home/.cache"
unset FORGE_PROVIDER FORGE_MODEL FORGE_BASE_URL FORGE_CASSETTE FORGE_DB
mkdir -p "$XDG_CONFIG_HOME" "$tmp/cwd"

# prepare SIZE: $tmp/mSIZE.db holding the labelled set and fillers up to SIZE
# (scripts/recall-score's, the same creation time), searched once (the
# vector file and the thesaurus tables are built by the first search).
prepare() {
	python3 - "$root/scripts/recall-score" "$root/tests/fixtures/recall" "$1" "$tmp/m$1.jsonl" <<'EOF'
import importlib.machinery, importlib.util, json, sys
loader = importlib.machinery.SourceFileLoader("recall_score", sys.argv[1])
spec = importlib.util.spec_from_loader("recall_score", loader)
rs = importlib.util.module_from_spec(spec)
loader.exec_module(rs)
mems, _ = rs.load_set(sys.argv[2])
size = int(sys.argv[3])
if size > len(mems):
    mems = mems + list(rs.filler(mems, size - len(mems)))
with open(sys.argv[4], "w", encoding="utf-8") as f:
    for m in mems[:max(size, 1)]:
        m = {k: v for k, v in m.items() if k != "key"}
        m["created_at"] = m["updated_at"] = m["last_accessed"] = rs.CREATED
        f.write(json.dumps(m, ensure_ascii=False) + "\n")
EOF
	(cd "$tmp/cwd" && FORGE_DB="$tmp/m$1.db" "$bin/forge" memory import "$tmp/m$1.jsonl" >/dev/null &&
	 FORGE_DB="$tmp/m$1.db" "$bin/forge" memory search --peek warm up >/dev/null)
}

names=() cmds=()
add() { names+=("$1"); shift; cmds+=("$*"); }
add "/bin/true (baseline: a process doing nothing)" "$truebin"
add "forge --version" "$bin/forge --version"
add "forge-memory --help" "$bin/forge-memory --help"
add "forge memory --help (dispatcher + program)" "$bin/forge memory --help"
for n in $sizes; do
	prepare "$n"
	# (as issue 14 measured it: a search that counts its accesses, not --peek)
	add "forge memory search, $n memories" "$bin/forge memory search --db $tmp/m$n.db --json --limit 10 $query"
done

# one run of command i: its CPU ms (rusage-run: user + sys, children included)
cpu_of() {
	local line
	# shellcheck disable=SC2086
	line=$(cd "$tmp/cwd" && "$rr" -o /dev/null ${cmds[$1]} 2>&1 >/dev/null | grep '^rusage ') || true
	line=${line#*cpu_ms=}
	echo "${line%% *}"
}

# instructions of one run: callgrind's totals over the process and the one it execs
instructions() {
	command -v valgrind >/dev/null || { echo -; return; }
	local d="$tmp/cg" total
	rm -rf "$d" && mkdir -p "$d"
	# shellcheck disable=SC2086
	(cd "$tmp/cwd" && valgrind --tool=callgrind --trace-children=yes --dump-before=execv \
		--callgrind-out-file="$d/cg.%p" ${cmds[$1]} >/dev/null 2>&1) || true
	total=$(cat "$d"/cg.* 2>/dev/null | awk '/^summary:/ { s += $2 } END { print s + 0 }')
	[ "$total" -gt 0 ] && echo "$total" || echo -
}

declare -A samples
for ((r = 0; r < runs; r++)); do
	for i in "${!cmds[@]}"; do
		samples[$i]+=" $(cpu_of "$i")"
	done
done
# shellcheck disable=SC2086
base=$(median ${samples[0]})
echo "process start and search, CPU ms per process (median of $runs, interleaved; own = CPU - baseline)"
printf '%-48s %8s %8s %14s\n' "" "CPU ms" "own ms" "instructions"
for i in "${!cmds[@]}"; do
	# shellcheck disable=SC2086
	m=$(median ${samples[$i]})
	if [ "$i" -eq 0 ]; then own=-; else own=$(awk -v a="$m" -v b="$base" 'BEGIN { printf "%.2f", a - b }'); fi
	printf '%-48s %8.2f %8s %14s\n' "${names[$i]}" "$m" "$own" "$(instructions "$i")"
done
echo "targets (own): --version/--help <= 2 ms; search <= 5 ms at 600 memories, <= 10 ms at 100K"
