// llama.cpp as the reference implementation: node-llama-cpp's prebuilt CPU libraries
// (tests/llamacpp/install.sh, pinned by its package-lock.json) driven by
// the scripts in tests/llamacpp.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace tally_test {

// Installs node-llama-cpp once per process. Empty on success, else why not (no node/npm, no
// npm registry).
const std::string& llamacpp_install_error();

// Runs tests/llamacpp/`script` (arch_reference.mjs, tokenize_reference.mjs) on `job` (its JOB
// format) and returns its OUT, or sets `error`.
nlohmann::json run_llamacpp(const std::string& script, const nlohmann::json& job, std::string& error);

}  // namespace tally_test

// Skips the current test when llama.cpp cannot be installed; under CI=true that fails it.
#define TALLY_REQUIRE_LLAMACPP()                                                                \
  do {                                                                                          \
    const std::string& why = ::tally_test::llamacpp_install_error();                            \
    if (!why.empty()) {                                                                         \
      if (::tally_test::in_ci()) FAIL() << "CI needs llama.cpp from the npm registry: " << why; \
      GTEST_SKIP() << "llama.cpp (node-llama-cpp from the npm registry) unavailable, skipped "  \
                      "outside CI: "                                                            \
                   << why;                                                                      \
    }                                                                                           \
  } while (0)
