#!/usr/bin/env bash
# Builds and runs every test: the release build, a 2-minute soak of a real `tally serve`, the
# same tests under ASan+UBSan, the engine and server tests under ThreadSanitizer, and each
# libFuzzer target for a bounded time. This is what CI runs (.ci/run).
#   FUZZ_SECONDS=20 (per target, eleven targets; 0 skips fuzzing)   JOBS=<ninja -j>
#   TSAN=1 (0 skips the ThreadSanitizer build of the engine and server tests)
#   SOAK_SECONDS=120 (scripts/soak.sh for that long after the release tests; 0 skips it)
set -euo pipefail
cd "$(dirname "$0")/.."

JOBS=${JOBS:-$(nproc)}
FUZZ_SECONDS=${FUZZ_SECONDS:-20}  # x 11 targets: under 4 minutes (the last CI run took 77 of its 90)

echo "== release build + tests"
cmake --preset release >/dev/null
cmake --build --preset release -j "$JOBS"
ctest --preset release -j "$JOBS"
# docs/cli.md's flag tables are generated from --help: a flag added without regenerating fails.
bash scripts/gen_cli_docs.sh --check build/release/tally
SOAK_SECONDS=${SOAK_SECONDS:-120}
if [[ "$SOAK_SECONDS" != 0 ]]; then
  echo "== soak test (${SOAK_SECONDS}s)"
  SOAK_SECONDS=$SOAK_SECONDS bash scripts/soak.sh
fi

echo "== the first ten minutes: setup.sh as root / user, the README's quick start as written"
bash scripts/check_setup.sh
bash scripts/check_readme.sh

echo "== ASan + UBSan build + tests"
cmake --preset asan >/dev/null
cmake --build --preset asan -j "$JOBS"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --preset asan -j "$JOBS"

if [[ "${TSAN:-1}" != 0 ]]; then
  # The engine thread, the I/O thread and the prompt workers share state: only the engine and
  # server tests, which drive those threads, run here (the rest is single-threaded or covered
  # by ASan), to keep CI within its hour.
  echo "== ThreadSanitizer: engine + server tests"
  cmake --preset tsan >/dev/null
  cmake --build --preset tsan -j "$JOBS" --target tally_unit_engine_tests tally_unit_server_tests
  export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1
  build/tsan/tests/tally_unit_engine_tests --gtest_brief=1
  build/tsan/tests/tally_unit_server_tests --gtest_brief=1
fi

if [[ "$FUZZ_SECONDS" != 0 && -x scripts/fuzz.sh ]]; then
  echo "== fuzzing (${FUZZ_SECONDS}s per target)"
  bash scripts/fuzz.sh "$FUZZ_SECONDS"
fi
echo "== all tests passed"
