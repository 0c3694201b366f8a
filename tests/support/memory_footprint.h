// What the resident-memory tests share: a synthetic model big enough that 5% of its footprint
// is megabytes (stories110M in q4_0, 62 MiB), the size of the `tally` binary, a child run whose
// peak resident memory is measured by the kernel (its VmHWM, read from /proc while it runs), and
// a skip under sanitizers, whose shadow memory and quarantine make RSS say nothing about tally.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace tally_test {

// TALLY_SANITIZED_BUILD: 1 under ASan, TSan or MSan (GCC or clang), for #if; else 0.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define TALLY_SANITIZED_BUILD 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
#define TALLY_SANITIZED_BUILD 1
#endif
#endif
#ifndef TALLY_SANITIZED_BUILD
#define TALLY_SANITIZED_BUILD 0
#endif
inline constexpr bool kSanitizedBuild = TALLY_SANITIZED_BUILD != 0;

// Writes (once per test process) stories110M q4_0 with the llama SPM vocabulary of ../shared
// into temp_dir() and returns its path; "" (after a test failure) when `tally convert` fails.
// Callers check ../shared first (TALLY_REQUIRE_SHARED(kFootprintVocab, ...)).
inline constexpr const char* kFootprintVocab = "models/ggml-vocab/ggml-vocab-llama-spm.gguf";
std::string footprint_model(const std::string& vocab_path);

// Bytes of the built `tally` executable: the most its text and data can add to RssFile.
int64_t tally_binary_bytes();

struct MeasuredRun {
  int exit_code = -1;
  std::string out;
  std::string err;
  int64_t peak_resident_bytes = 0;  // the child's VmHWM, the last reading before it exited
};
// Runs `tally ARGS...` (no shell) and waits for it.
MeasuredRun run_tally_measured(const std::vector<std::string>& args);

// |actual - expected| <= 5% of expected, with both figures in MiB in the message.
::testing::AssertionResult within_five_percent(int64_t actual, int64_t expected);

}  // namespace tally_test

// Memory figures under ASan/TSan count the sanitizer's shadow and quarantine, not tally's.
#define TALLY_SKIP_UNDER_SANITIZERS()                                                        \
  do {                                                                                       \
    if (::tally_test::kSanitizedBuild)                                                      \
      GTEST_SKIP() << "resident memory is not measurable under sanitizers (shadow memory)"; \
  } while (0)
