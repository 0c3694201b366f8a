#!/usr/bin/env bash
# Builds the libFuzzer targets (the `fuzz` preset: clang, ASan + UBSan) and runs each one for
# N seconds over a working copy of its seed corpus (tests/fuzz/corpus/<name>/). Fails on the
# first crash, sanitizer report, timeout or out-of-memory; the input is saved under
# build/fuzz/artifacts/.
#
# Usage: scripts/fuzz.sh [seconds per target, default 60] [name ...]
#   names: gguf, safetensors, llama2c, imatrix, kv_disk_block, http, openai_request, tokenizer, hf_tokenizer,
#   chat_template, generation_config
#   (default: all)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
seconds=${1:-60}
shift || true
cd "$root"

if (($# == 0)); then
  set -- $(ls tests/fuzz/*_fuzz.cpp | xargs -n1 basename | sed 's/_fuzz\.cpp$//')
fi

cmake --preset fuzz >/dev/null
targets=()
for name in "$@"; do targets+=("tally_${name}_fuzz"); done
cmake --build --preset fuzz --target "${targets[@]}" -- -j"${FUZZ_JOBS:-2}"

mkdir -p build/fuzz/artifacts
for name in "$@"; do
  exe=build/fuzz/tests/fuzz/tally_${name}_fuzz
  work=build/fuzz/corpus/$name   # grows as libFuzzer finds new coverage; seeds stay small
  mkdir -p "$work"
  dict=()
  [[ -f tests/fuzz/$name.dict ]] && dict=(-dict="tests/fuzz/$name.dict")
  echo "fuzz.sh: $name for ${seconds}s"
  if ! "$exe" "${dict[@]}" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
      -print_final_stats=1 -artifact_prefix="build/fuzz/artifacts/$name-" \
      "$work" "tests/fuzz/corpus/$name"; then
    echo "fuzz.sh: $name FAILED; reproduce with: $exe build/fuzz/artifacts/$name-*" >&2
    exit 1
  fi
done
echo "fuzz.sh: all targets ran ${seconds}s without a failure"
