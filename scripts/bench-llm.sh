#!/usr/bin/env bash
# LLM client overhead per call against the mock provider on loopback (a
# zero-delay script): requests/s, and the CPU time per call of the client
# process itself (user+sys by getrusage in tests/helpers/bench-llm.c), for
# non-streaming and streaming calls.  The mock (Python) bounds requests/s;
# CPU per call is the client's own cost.
set -euo pipefail
source "$(dirname "$0")/benchlib.sh"
N=${BENCH_LLM_CALLS:-500}
tmp=$(mktemp -d)
python3 "$(dirname "$0")/../tests/helpers/mock_llm.py" --port-file "$tmp/port" 3>&- 2>"$tmp/mock.err" &
mock_pid=$!
trap 'kill "$mock_pid" 2>/dev/null || true; rm -rf "$tmp"' EXIT
for _ in $(seq 200); do [ -s "$tmp/port" ] && break; sleep 0.05; done
url="http://127.0.0.1:$(cat "$tmp/port")"
curl -sS -f -X POST -H 'content-type: application/json' --data-binary \
	'[{"text":"A short answer of a few words.","usage":{"input_tokens":12,"output_tokens":8},"times":"always"}]' \
	"$url/_mock/script?replace=1" >/dev/null

for mode in "" --stream; do
	rates=() cpus=()
	for ((r = 1; r <= BENCH_RUNS; r++)); do
		line=$(ANTHROPIC_API_KEY=sk-ant-bench-0000000000 "$FORGE_TESTBIN/bench-llm" $mode anthropic "$url" "$N")
		rates+=("$(awk -v l="$line" 'BEGIN { split(l, f, /[ =]/); printf "%.0f", f[2] / f[4] }')")
		cpus+=("$(awk -v l="$line" 'BEGIN { split(l, f, /[ =]/); printf "%.1f", (f[6] + f[8]) / f[2] * 1e6 }')")
	done
	echo "llm client${mode:+ (streaming)}: $(median "${rates[@]}") requests/s, $(median "${cpus[@]}") us CPU per call (user+sys of the client; median of $BENCH_RUNS, $N calls, mock on loopback)"
done
