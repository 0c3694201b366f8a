// llama.cpp's own quantizer as a reference for tally's: its prebuilt CPU libraries
// (libggml-base, libllama from the npm package @node-llama-cpp/linux-x64, installed by
// tests/llamacpp/install.sh) opened with dlopen() at run time. Nothing links against them and
// no llama.cpp header is used: the few functions called are declared in llamacpp_lib.cpp from
// their documented C signatures (ggml.h, llama.h).
//   ggml_quantize_chunk   the row quantizer llama-quantize calls for every tensor (with the
//                         importance matrix's column means when given, else the _ref rounding)
//   llama_model_quantize  llama-quantize itself: a GGUF in, a GGUF of a file type out, its
//                         per-tensor mix rules and block fallbacks included
// Type numbers are GGUF's (tally's DType values are the same numbers).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "tensor/dtype.h"

namespace tally_test {

// One importance-matrix entry for llama_model_quantize: the weight tensor's name and the mean
// squared activation of each input column ([n_mat][n_cols], llama-quantize's in_sum2 / counts).
struct LlamaCppImatrixEntry {
  std::string name;
  std::vector<float> means;
};

struct LlamaCppQuantizeRequest {
  std::string input_path;
  std::string output_path;
  uint32_t ftype = 7;  // llama.h's llama_ftype (general.file_type): Q4_K_M = 15, ...
  int n_threads = 1;
  bool pure = false;
  std::optional<tally::DType> output_type;      // --output-tensor-type
  std::optional<tally::DType> token_embd_type;  // --token-embedding-type
  // --imatrix: when non-empty the quantizer gets it (and its imatrix-dependent mix rules).
  std::vector<LlamaCppImatrixEntry> imatrix;
};

class LlamaCppLib {
 public:
  // The loaded libraries (once per process), or why not: the package is missing and could not
  // be installed, a library or symbol is absent, or llama_model_quantize_params' defaults do
  // not look like the layout declared here (a newer llama.h).
  static tally::Result<LlamaCppLib*> get();

  // ggml_quantize_chunk over n_rows rows of n_per_row values; imatrix: [n_per_row] or null.
  std::vector<uint8_t> quantize_rows(tally::DType type, const float* src, int64_t n_rows, int64_t n_per_row,
                                     const float* imatrix) const;
  // ggml's dequantization (dequantize_row_<type> / ggml_fp16_to_fp32_row), for the error figures.
  void dequantize_row(tally::DType type, const void* src, float* dst, int64_t n) const;

  // llama_model_quantize; the error carries the end of llama.cpp's log.
  tally::Status model_quantize(const LlamaCppQuantizeRequest& request) const;

  std::string library_dir() const { return dir_; }
  std::string release() const { return release_; }  // _nlcBuildMetadata.json's llama.cpp release

 private:
  LlamaCppLib() = default;
  tally::Status load(const std::string& dir);

  std::string dir_, release_;
  void* ggml_ = nullptr;
  void* llama_ = nullptr;
  struct Symbols;
  Symbols* sym_ = nullptr;
};

// Installs the npm package once per process (tests/llamacpp/install.sh) and loads it; in a test,
// a failure is GTEST_SKIP outside CI and a failure under CI=true (the macro below).
tally::Result<LlamaCppLib*> llamacpp_lib_or_install();

// The directory holding the libraries: $TALLY_LLAMACPP_LIB_DIR, else the npm package's bins.
std::string llamacpp_lib_dir();

}  // namespace tally_test

// Binds `lib` (LlamaCppLib*) or skips the test (fails it under CI=true) with the reason.
#define TALLY_REQUIRE_LLAMACPP(lib)                                                             \
  ::tally_test::LlamaCppLib* lib = nullptr;                                                     \
  do {                                                                                          \
    auto lib##_r = ::tally_test::llamacpp_lib_or_install();                                     \
    if (!lib##_r.ok()) {                                                                        \
      if (::tally_test::in_ci()) FAIL() << "CI needs llama.cpp's libraries: "                   \
                                       << lib##_r.status().to_string();                         \
      GTEST_SKIP() << "llama.cpp's libraries unavailable (" << lib##_r.status().to_string()     \
                   << "): skipped outside CI";                                                  \
    }                                                                                           \
    lib = *lib##_r;                                                                             \
  } while (0)
