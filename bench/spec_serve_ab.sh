#!/bin/bash
# `tally serve --speculative off` against `auto`, back to back, in alternating order per
# configuration (docs/speculative.md). Each run starts a fresh server, runs tally bench serve,
# saves its report and /metrics, and logs output tok/s, median TPOT, drafts and the load.
#   TALLY=build/release/tally MODEL=tinyllama-q4_0.gguf OUT=/tmp/spec_ab \
#   CFGS="repeat 1 8|random 4 8|repeat 16 16" REPS=2 bench/spec_serve_ab.sh
# A configuration is "DATASET CONCURRENCY PROMPTS"; DATASET sharegpt reads DATASET_PATH
# (e.g. bench/spec_loop_prompts.py's file) with 64 output tokens. A rep is one pair (off and
# auto back to back, the order alternating); at the end bench/spec_ab_summary.py prints, per
# configuration, auto / off per pair, their geometric mean with a 95% confidence interval, and
# whether that decides TARGET (default 0.97). One pair decides nothing: take REPS >= 6, and
# prompts enough for runs of several seconds (stories260K: 256 prompts at concurrency 1).
set -u
T=${TALLY:-build/release/tally}
M=${MODEL:?MODEL=the target GGUF}
O=${OUT:-/tmp/spec_ab}
mkdir -p "$O"
: > "$O/runs.tsv"  # this invocation's runs: name, configuration, rep, mode, load at start and end
log() { echo "[$(date -u +%H:%M:%S) load $(cut -d' ' -f1-3 /proc/loadavg)] $*" | tee -a "$O/progress.log"; }
wait_up() { for _ in $(seq 1 600); do curl -s -o /dev/null "http://127.0.0.1:$1/v1/models" && return 0; sleep 0.5; done; return 1; }
run_one() {  # name configuration rep port mode bench-args...
  local name=$1 cfg=$2 rep=$3 port=$4 mode=$5; shift 5
  "$T" serve -m "$M" -t 2 --port "$port" --max-model-len 512 --speculative "$mode" > "$O/$name.serve.log" 2>&1 &
  local pid=$!
  wait_up "$port" || { log "$name: the server did not start"; kill "$pid"; return; }
  local load0; load0=$(cut -d' ' -f1 /proc/loadavg)
  "$T" bench serve --base-url "http://127.0.0.1:$port" --no-progress --json "$O/$name.json" "$@" > "$O/$name.bench.log" 2>&1
  curl -s "http://127.0.0.1:$port/metrics" > "$O/$name.metrics.txt"
  kill -INT "$pid"; wait "$pid"
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$cfg" "$rep" "$mode" "$load0" \
    "$(cut -d' ' -f1 /proc/loadavg)" >> "$O/runs.tsv"
  local spec; spec=$(grep -h 'num_draft_tokens_total{\|accepted_tokens_total{' "$O/$name.metrics.txt" | awk '{printf "%s ", $2}')
  log "$name load $load0-$(cut -d' ' -f1 /proc/loadavg): $(grep -h 'Output token throughput\|Median TPOT' "$O/$name.bench.log" | awk -F: '{gsub(/ /, "", $2); printf "%s ", $2}')(tok/s, TPOT ms) draft/accepted tokens: $spec"
}
IFS='|' read -ra configs <<< "${CFGS:-repeat 1 8|random 1 8|repeat 4 8|random 4 8|repeat 16 16|random 16 16}"
i=0
for cfg in "${configs[@]}"; do
  read -r ds c n <<< "$cfg"
  args=(--dataset-name "$ds" --num-prompts "$n" --random-input-len 96 --random-output-len 64)
  [ "$ds" = sharegpt ] && args=(--dataset-name sharegpt --dataset-path "${DATASET_PATH:?}" --sharegpt-output-len 64 --num-prompts "$n")
  args+=(--max-concurrency "$c" --ignore-eos --temperature 0 --seed 1)
  order="off auto"; [ $((i % 2)) = 1 ] && order="auto off"
  for rep in $(seq 1 "${REPS:-1}"); do
    for mode in $order; do run_one "${ds}_c${c}_${mode}_$rep" "$ds c$c $n" "$rep" $((19100 + RANDOM % 800)) \
                             "$mode" "${args[@]}"; done
    order=$(echo "$order" | awk '{print $2, $1}')
  done
  i=$((i + 1))
done
python3 "$(dirname "$0")/spec_ab_summary.py" "$O" "${TARGET:-0.97}" | tee "$O/summary.txt"
