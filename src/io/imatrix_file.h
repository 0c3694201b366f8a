// Importance matrices (`tally imatrix`, `tally quantize --imatrix`) in llama.cpp's two file
// formats, so either tool reads the other's:
//   GGUF (llama-imatrix's current format): general.type = "imatrix", imatrix.datasets
//     (string array), imatrix.chunk_count and imatrix.chunk_size (u32); per weight matrix W
//     two f32 tensors, "W.in_sum2" [n_cols, n_mat] (the sum over tokens of each input
//     column's squared activation, per expert for a 3-D expert tensor) and "W.counts"
//     [1, n_mat] (the tokens summed per expert).
//   legacy .dat (older llama-imatrix): int32 n_entries, then per entry int32 name length,
//     the name, int32 ncall, int32 nval, f32 values[nval] (each column's mean square times
//     ncall, so values / ncall is the mean), then optionally int32 chunk count, int32 length
//     and the dataset's name. Little-endian throughout.
// The mean squared activation of a column, in_sum2 / count, is the importance the quantizer
// weights that column's error by.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"

namespace tally::io {

struct ImatrixEntry {
  int64_t n_cols = 0;         // the matrix's input width (its row length)
  int64_t n_mat = 1;          // 1, or the experts of a 3-D expert tensor
  std::vector<float> sums;    // [n_mat][n_cols] sum of squared activations
  std::vector<float> counts;  // [n_mat] tokens summed (legacy files: one count for all)

  // Mean squared activation of each column of matrix `mat` ([n_cols]); zeros where the
  // matrix saw no token.
  std::vector<float> importance(int64_t mat) const;
};

struct Imatrix {
  std::map<std::string, ImatrixEntry, std::less<>> entries;  // by weight tensor name
  std::vector<std::string> datasets;
  uint32_t chunk_count = 0;
  uint32_t chunk_size = 0;  // tokens per chunk (0 in legacy files)
};

// Reads either format (GGUF by its magic, else legacy); a precise error for a malformed file.
Result<Imatrix> imatrix_read(const std::string& path);
Result<Imatrix> imatrix_parse(std::span<const uint8_t> bytes, const std::string& name = "<memory>");
Result<Imatrix> imatrix_parse_legacy(std::span<const uint8_t> bytes, const std::string& name = "<memory>");

// Writes the GGUF format, or the legacy one when the path ends in ".dat".
Status imatrix_write(const Imatrix& m, const std::string& path);
std::vector<uint8_t> imatrix_to_legacy_bytes(const Imatrix& m);

}  // namespace tally::io
