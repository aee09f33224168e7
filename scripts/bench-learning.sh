#!/usr/bin/env bash
# Learning: does memory make the second run of the same class of task better?
# `forge run` (plan, implement, review, test) twice on the calc fixture, one
# memory store, the mock model scripted by tests/fixtures/learning/run{1,2}.json:
# its implementer writes printf(msg) unless its prompt says "format string is
# not a constant" (a conditional step: the choice depends on the prompt only).
#   run 1 "add calc_trace" - no memory: review's security scan finds
#     insecure/c-format, back to implement (the finding is now in its prompt),
#     fixed; the run's memories keep the lesson.
#   run 2 "add calc_log" (another function, another file) - the lesson is
#     recalled into implement's prompt: right the first time.
#   reverse - run 2 on a store of unrelated memories only (Python, JavaScript,
#     operations): none reaches a prompt, the model takes its other path.
# Prints per run: bounces, agent turns, model calls, tokens, cost (the run's
# state, from its model calls; the mock counts a request's system prompt, tools
# and messages at 4 characters a token) and wall time (medians over LEARN_RUNS, default 3;
# everything but the wall time is the same every time).
set -euo pipefail
source "$(dirname "$0")/benchlib.sh"
root=$(cd "$(dirname "$0")/.." && pwd)
fix="$root/tests/fixtures/learning"
runs=${LEARN_RUNS:-3}
lesson="format string is not a constant"
tmp=$(mktemp -d)
python3 "$root/tests/helpers/mock_llm.py" --port-file "$tmp/port" 3>&- 2>"$tmp/mock.err" &
mock_pid=$!
trap 'kill "$mock_pid" 2>/dev/null || true; rm -rf "$tmp"' EXIT
for _ in $(seq 600); do [ -s "$tmp/port" ] || ! kill -0 "$mock_pid" 2>/dev/null && break; sleep 0.05; done
[ -s "$tmp/port" ] || { cat "$tmp/mock.err" >&2; exit 1; }
url="http://127.0.0.1:$(cat "$tmp/port")"
export PATH="$FORGE_BINDIR:$PATH" HOME="$tmp/home" XDG_CONFIG_HOME="$tmp/home/.config"
export GIT_AUTHOR_NAME=bench GIT_AUTHOR_EMAIL=bench@example.com
export GIT_COMMITTER_NAME=bench GIT_COMMITTER_EMAIL=bench@example.com
unset ANTHROPIC_API_KEY OPENAI_API_KEY OPENAI_BASE_URL FORGE_MODEL FORGE_CASSETTE
export FORGE_PROVIDER=anthropic FORGE_BASE_URL="$url" ANTHROPIC_API_KEY=bench-key
mkdir -p "$XDG_CONFIG_HOME"

# learn_run NAME SCRIPT TASK: one run in the current repository; its JSON lines
# in $tmp/NAME.out, the mock's request log in $tmp/NAME.log, wall seconds in $tmp/NAME.wall.
learn_run() {
	curl -sS -f -X POST "$url/_mock/reset" >/dev/null
	curl -sS -f -X POST -H 'content-type: application/json' --data-binary "@$fix/$2.json" \
		"$url/_mock/script?replace=1" >/dev/null
	local t0 t1
	t0=$(date +%s%N)
	forge run --phases plan,implement,review,test --json "$3" </dev/null >"$tmp/$1.out" 2>"$tmp/$1.err" ||
		{ echo "bench-learning: $1 failed:" >&2; tail -n 5 "$tmp/$1.err" >&2; exit 1; }
	t1=$(date +%s%N)
	awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f\n", (b - a) / 1e9 }' >"$tmp/$1.wall"
	curl -sS -f "$url/_mock/requests" >"$tmp/$1.log"
}

# figures NAME: "bounces turns calls tokens usd" - turns: the agents' iterations;
# calls: the model requests the mock served (the review's fast model too)
figures() {
	jq -s -r --argjson calls "$(jq length "$tmp/$1.log")" '(map(select(.kind == "state")) | last) as $s |
		[($s.bounces | length), (map(select(.type == "agent.iteration")) | length),
		 $calls, $s.cost.tokens, $s.cost.usd] | @tsv' "$tmp/$1.out"
}

# implementer_branches NAME: the conditional branches implement's requests took
implementer_branches() {
	jq -r '[.[] | select(.body.system | tostring | test("You are the implementer")) | .branch] | join(",")' "$tmp/$1.log"
}

new_repo() {
	rm -rf "$tmp/repo" "$tmp/forge.db" "$tmp/forge.db".*
	cp -r "$root/tests/fixtures/repos/calc" "$tmp/repo"
	git -C "$tmp/repo" init -q -b main
	git -C "$tmp/repo" add -A
	git -C "$tmp/repo" commit -q -m calc
	cd "$tmp/repo"
}

export FORGE_DB="$tmp/forge.db"
w1=() w2=() w3=()
for ((r = 1; r <= runs; r++)); do
	new_repo
	learn_run run1 run1 "add calc_trace, a helper that prints a message"
	learn_run run2 run2 "add calc_log, a helper in log.c that prints a message"
	new_repo
	forge memory import "$fix/unrelated.jsonl" >/dev/null
	learn_run reverse run2 "add calc_log, a helper in log.c that prints a message"
	w1+=("$(cat "$tmp/run1.wall")") w2+=("$(cat "$tmp/run2.wall")") w3+=("$(cat "$tmp/reverse.wall")")
done

echo "same class of task twice, one memory store (calc fixture, scripted model; wall: median of $runs)"
printf '  %-34s %7s %6s %6s %7s %9s %7s\n' "" bounces turns calls tokens "cost \$" "wall s"
row() {
	local bounces turns calls tokens usd
	read -r bounces turns calls tokens usd < <(figures "$2")
	printf '  %-34s %7s %6s %6s %7s %9.4f %7s\n' "$1" "$bounces" "$turns" "$calls" "$tokens" "$usd" "$3"
}
row "run 1 add calc_trace (no memory)" run1 "$(median "${w1[@]}")"
row "run 2 add calc_log (run 1's memory)" run2 "$(median "${w2[@]}")"
row "reverse: run 2, unrelated memories" reverse "$(median "${w3[@]}")"
in_prompt() {
	jq -r '[.[] | select(.body.system | tostring | test("You are the implementer"))][0].body.messages[0].content |
		if type == "string" then . else map(.text // "") | join("\n") end' "$tmp/$1.log" | grep -qF "$2"
}
in_prompt run2 "$lesson" && recalled=yes || recalled=no
echo "  run 2: run 1's lesson in implement's first prompt: $recalled; the model's choices: $(implementer_branches run2)" \
	"(run 1: $(implementer_branches run1))"
leaked=0
while IFS= read -r content; do
	grep -qF "${content:0:40}" "$tmp/reverse.log" && leaked=$((leaked + 1))
done < <(jq -r .content "$fix/unrelated.jsonl")
withheld=$(jq -s -c 'map(select(.type == "memory.withheld" and .phase == "implement") | .payload) | first // {}' "$tmp/reverse.out")
echo "  reverse: unrelated memories in a prompt: $leaked of $(wc -l <"$fix/unrelated.jsonl") (withheld at implement: $withheld);" \
	"the model's choices: $(implementer_branches reverse)"
