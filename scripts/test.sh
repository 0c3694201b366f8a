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
FUZZ_SECONDS=${FUZZ_SECONDS:-20}  # x 11 targets, two at a time on CI's 2 cores: about 2 minutes

# Each stage's wall time, printed when the script ends (passed or not), so that CI's log says
# where its hour went.
stage_times=()
stage_name=
stage_start=$SECONDS
stage() {  # stage NAME: ends the current stage and starts NAME ("" just ends it)
  if [[ -n $stage_name ]]; then
    stage_times+=("$(printf '%6d s  %s' $((SECONDS - stage_start)) "$stage_name")")
  fi
  stage_name=$1
  stage_start=$SECONDS
  [[ -z $1 ]] || echo "== $1"
}
stage_summary() {
  stage ""
  echo "== wall time per stage"
  printf '%s\n' "${stage_times[@]}"
  printf '%6d s  total\n' "$SECONDS"
}
trap stage_summary EXIT

stage "release build"
# The tests' npm packages (llama.cpp's prebuilt libraries, 85 MB, and the openai SDK: about 50 s
# from the registry on a cold machine) download during the build rather than inside ctest,
# where the first test to need them held a slot, and the others that need them a second one,
# while it waited. The tests still run the same install scripts: a no-op once installed, the
# same failure as before when the network is down.
npm_log=$(mktemp)
(bash tests/llamacpp/install.sh && bash tests/e2e/node/install.sh) >"$npm_log" 2>&1 &
npm_pid=$!
cmake --preset release >/dev/null
cmake --build --preset release -j "$JOBS"
wait "$npm_pid" || { echo "test.sh: the npm install failed (the tests that need it will say why):"; cat "$npm_log"; }
rm -f "$npm_log"
stage "release tests"
ctest --preset release -j "$JOBS"
# docs/cli.md's flag tables are generated from --help: a flag added without regenerating fails.
bash scripts/gen_cli_docs.sh --check build/release/tally
SOAK_SECONDS=${SOAK_SECONDS:-120}
if [[ "$SOAK_SECONDS" != 0 ]]; then
  stage "soak test (${SOAK_SECONDS}s)"
  SOAK_SECONDS=$SOAK_SECONDS bash scripts/soak.sh
fi

stage "the first ten minutes: setup.sh as root / user, the README's quick start"
bash scripts/check_setup.sh
bash scripts/check_readme.sh

stage "ASan + UBSan build"
cmake --preset asan >/dev/null
cmake --build --preset asan -j "$JOBS"
stage "ASan + UBSan tests"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --preset asan -j "$JOBS"

if [[ "${TSAN:-1}" != 0 ]]; then
  # The engine thread, the I/O thread and the prompt workers share state: only the engine and
  # server tests, which drive those threads, run here (the rest is single-threaded or covered
  # by ASan), to keep CI within its hour.
  stage "ThreadSanitizer build: engine + server tests"
  cmake --preset tsan >/dev/null
  cmake --build --preset tsan -j "$JOBS" --target tally_unit_engine_tests tally_unit_server_tests
  stage "ThreadSanitizer tests"
  export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1
  build/tsan/tests/tally_unit_engine_tests --gtest_brief=1
  build/tsan/tests/tally_unit_server_tests --gtest_brief=1
fi

if [[ "$FUZZ_SECONDS" != 0 && -x scripts/fuzz.sh ]]; then
  stage "fuzzing: build + ${FUZZ_SECONDS}s per target"
  bash scripts/fuzz.sh "$FUZZ_SECONDS"
fi
echo "== all tests passed"
