// `tally quantize IN.gguf OUT.gguf TYPE`: writes a GGUF model with its matrices in one of
// llama.cpp's file types, as llama-quantize does (with or without an importance matrix):
//   which tensors    those whose name ends in "weight" with more than one row, except norms
//                    (llama.cpp's rule); others are copied as they are
//   their types      quant_scheme.h / plan/llama_quant_rules.h (the mixes, --pure, the
//                    output and token-embedding overrides, the block fallbacks, which are
//                    reported through on_note)
//   input            f32, f16 or bf16 tensors; q8_0 is requantized (with a note: each weight
//                    is rounded twice); a tensor already in its target type is copied
//   metadata         every key copied in order, except general.quantization_version and
//                    general.file_type, which are set (2 and the file type's number) after
//   bytes            q8_0 / q4_0 / q4_1 / q5_0 / q5_1 as llama.cpp's (tensor/quantize.h)
//                    without an importance matrix; the K-/i-quants by a weighted scale
//                    search (quantize_row_weighted), with the imatrix's weights if given
// It streams: the input is memory-mapped, each tensor is converted row by row into a chunk of
// 4 MiB while the output is written, and the input's pages of each chunk are dropped once it
// is written, so a 1.1B model is never held whole (docs/quantization.md: the peak RSS). Rows are split over threads, each row whole: the
// bytes are the same for any thread count. The output is written beside the target and
// renamed at the end (a failed write leaves no partial file); an existing output is refused
// unless `overwrite`.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "base/status.h"
#include "quant/quant_scheme.h"
#include "tensor/dtype.h"

namespace tally::quant {

struct QuantizeOptions {
  std::string input_path;
  std::string output_path;
  std::string type;                      // a file type name (quant_scheme_from_name)
  bool pure = false;
  std::optional<DType> output_type;      // output.weight (or the tied token_embd.weight)
  std::optional<DType> token_embd_type;  // token_embd.weight
  int n_threads = 0;                     // 0 = one per hardware thread
  bool overwrite = false;
  // An importance matrix (llama.cpp's GGUF or legacy .dat; quant/imatrix_match.h): the
  // K-/i-quants and q4_0..q5_1 then minimise the error weighted by each column's mean squared
  // activation. Without one the K-/i-quants still search their scales (quantize_row_weighted).
  std::string imatrix_path;
  // Tensors done of the total (a progress bar).
  std::function<void(int64_t done, int64_t total)> on_progress;
  // One line per fallback or requantized input, for stderr.
  std::function<void(std::string_view line)> on_note;
};

struct QuantizeSummary {
  QuantScheme scheme;
  int64_t n_tensors = 0;
  int64_t n_quantized = 0;    // tensors converted to another type
  int64_t n_fallback = 0;     // of those, stored in llama.cpp's fallback type
  int64_t n_imatrix = 0;      // of those, quantized with an importance matrix entry
  uint64_t input_bytes = 0;   // tensor data
  uint64_t output_bytes = 0;  // tensor data
  int n_threads = 0;
};

// The tensor types a CLI flag may name (--output-tensor-type): any type quantize_row handles.
Result<DType> quantize_tensor_type_from_name(std::string_view name);

Result<QuantizeSummary> quantize_model(const QuantizeOptions& options);

}  // namespace tally::quant
