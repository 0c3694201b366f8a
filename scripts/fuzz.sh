#!/usr/bin/env bash
# Builds the libFuzzer targets (the `fuzz` preset: clang, ASan + UBSan) and runs each one for
# N seconds over a working copy of its seed corpus (tests/fuzz/corpus/<name>/). A libFuzzer
# run uses one core, so FUZZ_JOBS targets (default: one per core) run at the same time, each
# still for its full N seconds. Fails when any target crashes, reports a sanitizer error, times
# out or runs out of memory; that input is saved under build/fuzz/artifacts/ and the target's
# output is printed (all of it stays in build/fuzz/logs/<name>.log).
#
# Usage: scripts/fuzz.sh [seconds per target, default 60] [name ...]
#   names: gguf, safetensors, llama2c, imatrix, kv_disk_block, http, openai_request, tokenizer, hf_tokenizer,
#   chat_template, generation_config
#   (default: all)
#   FUZZ_JOBS=<targets at once, and ninja -j for their build; default nproc>
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
seconds=${1:-60}
shift || true
cd "$root"
jobs=${FUZZ_JOBS:-$(nproc)}

if (($# == 0)); then
  set -- $(ls tests/fuzz/*_fuzz.cpp | xargs -n1 basename | sed 's/_fuzz\.cpp$//')
fi

cmake --preset fuzz >/dev/null
targets=()
for name in "$@"; do targets+=("tally_${name}_fuzz"); done
build_start=$SECONDS
cmake --build --preset fuzz --target "${targets[@]}" -- -j"$jobs"
echo "fuzz.sh: ${#targets[@]} targets built in $((SECONDS - build_start)) s"

mkdir -p build/fuzz/artifacts build/fuzz/logs
# fuzz_one NAME: one target for $seconds; its output goes to build/fuzz/logs/NAME.log and its
# exit status to NAME.status.
fuzz_one() {
  local name=$1 exe=build/fuzz/tests/fuzz/tally_$1_fuzz log=build/fuzz/logs/$1
  local work=build/fuzz/corpus/$name   # grows as libFuzzer finds new coverage; seeds stay small
  mkdir -p "$work"
  local dict=()
  [[ -f tests/fuzz/$name.dict ]] && dict=(-dict="tests/fuzz/$name.dict")
  local rc=0
  "$exe" "${dict[@]}" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="build/fuzz/artifacts/$name-" \
    "$work" "tests/fuzz/corpus/$name" >"$log.log" 2>&1 || rc=$?
  echo "$rc" >"$log.status"
}

run_start=$SECONDS
for name in "$@"; do
  while (($(jobs -rp | wc -l) >= jobs)); do wait -n || true; done
  echo "fuzz.sh: $name for ${seconds}s"
  rm -f "build/fuzz/logs/$name.status"
  fuzz_one "$name" &
done
wait

failed=()
for name in "$@"; do
  log=build/fuzz/logs/$name
  if [[ $(cat "$log.status" 2>/dev/null) != 0 ]]; then
    failed+=("$name")
    cat "$log.log" >&2
    echo "fuzz.sh: $name FAILED; reproduce with: build/fuzz/tests/fuzz/tally_${name}_fuzz build/fuzz/artifacts/$name-*" >&2
  else
    # From libFuzzer's last status line, "#<runs><TAB>DONE cov: N ft: N corp: N/size ...".
    echo "fuzz.sh: $name: $(awk '$2 == "DONE" { sub(/^#/, "", $1); print $1 " runs, cov " $4 ", corpus " $8, "rss " $NF }' "$log.log")"
  fi
done
if ((${#failed[@]})); then
  echo "fuzz.sh: ${failed[*]} FAILED" >&2
  exit 1
fi
echo "fuzz.sh: all $# targets ran ${seconds}s without a failure ($jobs at a time: $((SECONDS - run_start)) s)"
