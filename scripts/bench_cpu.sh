#!/usr/bin/env bash
# The measurements behind docs/performance.md and docs/engine.md: synthetic tinyllama-1.1b
# models (real shapes, seeded random weights: speed does not depend on the values) in q4_0,
# q8_0 and f16, then `tally bench` on each (prefill 512, decode at batch 1/4/16, ceilings
# measured in the same run) and `tally bench throughput --compare` on q4_0.
#   MODELS=<dir for the ~3.9 GB of models> (default build/models)   TALLY=<binary>
#   STEPS="bench throughput" (which parts to run)   TYPES="q4_0 q8_0 f16"
set -euo pipefail
cd "$(dirname "$0")/.."
TALLY=${TALLY:-build/release/tally}
MODELS=${MODELS:-build/models}
STEPS=${STEPS:-bench throughput}
TYPES=${TYPES:-q4_0 q8_0 f16}
mkdir -p "$MODELS"

model() {  # the synthetic tinyllama of type $1, written once
  local path="$MODELS/tinyllama-1.1b-$1.gguf"
  [[ -f $path ]] || "$TALLY" convert --synthetic tinyllama-1.1b --type "$1" -o "$path" >&2
  echo "$path"
}

echo "# $(date -u +%FT%TZ) $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores"
for step in $STEPS; do
  case $step in
    bench)
      for t in $TYPES; do
        echo "\$ tally bench -m tinyllama-1.1b-$t.gguf --prompt 512 --batch 1,4,16 --reps 5"
        "$TALLY" bench -m "$(model "$t")" --prompt 512 --batch 1,4,16 --reps 5
        echo
      done ;;
    throughput)
      args=(--compare --requests 32 --input-len 16..128 --output-len 16..256 --max-seqs 16
            --max-model-len 2048 --kv-cache-memory 512MiB)
      echo "\$ tally bench throughput -m tinyllama-1.1b-q4_0.gguf ${args[*]}"
      "$TALLY" bench throughput -m "$(model q4_0)" "${args[@]}" ;;
    *) echo "bench_cpu.sh: unknown step '$step' (bench, throughput)" >&2; exit 2 ;;
  esac
done
