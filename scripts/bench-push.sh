#!/usr/bin/env bash
# git.push_remote: what pushing the run's branch after each checkpoint costs
# a whole run (README "Runs on several machines").  The pipeline of
# bench-supervisor.sh (the calc fixture, a cassette, build and test = true)
# run BENCH_RUNS times without a push remote and BENCH_RUNS times (interleaved) with a
# local bare repository as the remote (a path: libgit2's local transport, so
# the figure is forge's work, not a network's); wall and CPU (user+sys of
# every process of the run) as medians, and the pushes a run made.
set -euo pipefail
# shellcheck source=scripts/benchlib.sh
source "$(dirname "$0")/benchlib.sh"
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export PATH="$FORGE_BINDIR:$PATH" HOME="$tmp/home" XDG_CONFIG_HOME="$tmp/home/.config"
export GIT_AUTHOR_NAME=bench GIT_AUTHOR_EMAIL=bench@example.com
export GIT_COMMITTER_NAME=bench GIT_COMMITTER_EMAIL=bench@example.com
unset ANTHROPIC_API_KEY OPENAI_API_KEY OPENAI_BASE_URL FORGE_MODEL FORGE_BASE_URL FORGE_PUSH_REMOTE
mkdir -p "$XDG_CONFIG_HOME"
jq -c 'if .response.tool_calls[0].name == "run_command" then .response.tool_calls[0].input.command = "true" else . end' \
	"$root/tests/fixtures/cassettes/run-clean.jsonl" >"$tmp/cassette.jsonl"
export FORGE_PROVIDER=replay FORGE_CASSETTE="$tmp/cassette.jsonl"
cfg="$root/tests/fixtures/supervisor/bench.json"
export FORGE_DB="$tmp/bench.db"

# new_repo N: a fresh calc repository in $tmp/repo-N and its bare remote
# $tmp/remote-N.git; prints the repository's path.
new_repo() {
	local d="$tmp/repo-$1"
	cp -r "$root/tests/fixtures/repos/calc" "$d"
	git -C "$d" init -q -b main
	git -C "$d" add -A
	git -C "$d" commit -q -m calc
	git init -q --bare -b main "$tmp/remote-$1.git"
	echo "$d"
}

# timed_run DIR [REMOTE]: one run; appends "wall cpu" and a newline to $tmp/times.
timed_run() {
	TIMEFORMAT='%3R %3U %3S'
	if ! { time FORGE_PUSH_REMOTE="${2:-}" forge run -q --repo "$1" --config "$cfg" "add a mul operation" \
		</dev/null >/dev/null 2>"$tmp/err"; } 2>"$tmp/time"; then
		cat "$tmp/err" >&2
		exit 1
	fi
	awk '{ printf "%s %.3f\n", $1, $2 + $3 }' "$tmp/time" >>"$tmp/times"
}

# The two kinds of run interleaved, round by round (the machine's load
# drifts); "mode wall cpu" lines in $tmp/times.
timed_run "$(new_repo warm)"
: >"$tmp/times"
for ((r = 1; r <= BENCH_RUNS; r++)); do
	for mode in none push; do
		d=$(new_repo "$mode$r")
		printf '%s ' "$mode" >>"$tmp/times"
		timed_run "$d" "$([ "$mode" = push ] && echo "$tmp/remote-$mode$r.git")"
	done
done
# med MODE FIELD: the median of FIELD (2 wall, 3 cpu) of MODE's runs.
med() {
	local v
	mapfile -t v < <(awk -v m="$1" -v f="$2" '$1 == m { print $f }' "$tmp/times")
	median "${v[@]}"
}
wall_none=$(med none 2) cpu_none=$(med none 3)
wall_push=$(med push 2) cpu_push=$(med push 3)
trace=$(forge history --json -n 1 | jq -r .trace_id)
pushes=$(forge events replay "$trace" | jq -s '[.[] | select(.type == "run.pushed")] | length')
echo "forge run without git.push_remote: wall $wall_none s, CPU $cpu_none s (median of $BENCH_RUNS)"
echo "forge run with git.push_remote (a local bare repository): wall $wall_push s, CPU $cpu_push s; $pushes pushes a run"
awk -v a="$cpu_none" -v b="$cpu_push" -v n="$pushes" 'BEGIN {
	printf "  pushing costs %.0f ms of CPU a run, %.1f ms a push\n", (b - a) * 1000, n ? (b - a) * 1000 / n : 0 }'
