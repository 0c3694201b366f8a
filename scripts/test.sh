#!/usr/bin/env bash
# Builds and runs every test: the release build, the same tests under ASan+UBSan, and each
# libFuzzer target for a bounded time. This is what CI runs (.ci/run).
#   FUZZ_SECONDS=30 (per target, six targets; 0 skips fuzzing)   JOBS=<ninja -j>
set -euo pipefail
cd "$(dirname "$0")/.."

JOBS=${JOBS:-$(nproc)}
FUZZ_SECONDS=${FUZZ_SECONDS:-30}  # x 6 targets: 3 minutes of CI's hour

echo "== release build + tests"
cmake --preset release >/dev/null
cmake --build --preset release -j "$JOBS"
ctest --preset release -j "$JOBS"
# docs/cli.md's flag tables are generated from --help: a flag added without regenerating fails.
bash scripts/gen_cli_docs.sh --check build/release/tally

echo "== the first ten minutes: setup.sh as root / user, the README's quick start as written"
bash scripts/check_setup.sh
bash scripts/check_readme.sh

echo "== ASan + UBSan build + tests"
cmake --preset asan >/dev/null
cmake --build --preset asan -j "$JOBS"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --preset asan -j "$JOBS"

if [[ "$FUZZ_SECONDS" != 0 && -x scripts/fuzz.sh ]]; then
  echo "== fuzzing (${FUZZ_SECONDS}s per target)"
  bash scripts/fuzz.sh "$FUZZ_SECONDS"
fi
echo "== all tests passed"
