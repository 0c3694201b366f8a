// tally's row quantizers against ggml's own (ggml_quantize_chunk from llama.cpp's prebuilt
// libggml-base, llamacpp_lib.h), on the same random rows:
//   ByteIdentity        q4_0 / q4_1 / q5_0 / q5_1 / q8_0 without an importance matrix: every
//                       byte equal (tally quantize's path and quantize_row), for normal,
//                       uniform, heavy-tailed, one-sided, outlier, all-zero, partly zero,
//                       tiny (f16-underflowing scales) and huge rows, of 32 to 4096 values
//   ErrorNoWorse        the k-quants, iq4_nl and iq4_xs (and q4_0..q5_1 with an imatrix):
//                       tally's RMSE, importance-weighted with an imatrix, no worse than
//                       ggml's for every distribution (up to ties of rounding), and on
//                       average below it (the geometric mean ratio <= 1); the figures are printed
//                       (docs/quantization.md's table)
#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "llamacpp_lib.h"
#include "support/test_data.h"
#include "tensor/dtype.h"
#include "tensor/quantize.h"

namespace tally_test {
namespace {

using tally::DType;

struct Rows {
  std::string name;
  int64_t n_rows = 0, n_cols = 0;
  std::vector<float> values;  // [n_rows][n_cols]
};

// Random rows of one distribution; `kind` names it.
Rows make_rows(const std::string& kind, int64_t n_rows, int64_t n_cols, uint32_t seed) {
  Rows r{kind, n_rows, n_cols, std::vector<float>(static_cast<size_t>(n_rows * n_cols))};
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::student_t_distribution<float> heavy(3.0f);
  std::uniform_int_distribution<int> pick(0, 99);
  for (size_t i = 0; i < r.values.size(); ++i) {
    float v = normal(rng);
    if (kind == "uniform") v = uniform(rng);
    else if (kind == "student_t3") v = heavy(rng);
    else if (kind == "relu") v = std::max(0.0f, v);  // one-sided: every value >= 0
    else if (kind == "negative") v = -std::fabs(v) - 0.5f;
    else if (kind == "outliers") v = pick(rng) == 0 ? v * 40.0f : v;  // 1% of values 40x
    else if (kind == "zeros") v = 0.0f;
    else if (kind == "half_zero") v = (i / 16) % 2 ? 0.0f : v;  // zero runs of 16
    else if (kind == "tiny") v *= 1e-7f;  // the scale underflows f16 (d = 0 in the block)
    else if (kind == "huge") v *= 3e3f;   // near f16's range after scaling
    else if (kind == "weights") v *= 0.02f;  // a trained matrix's spread
    r.values[i] = v;
  }
  return r;
}

std::vector<Rows> distributions(int64_t n_rows, int64_t n_cols) {
  std::vector<Rows> all;
  uint32_t seed = 1;
  for (const char* k : {"normal", "uniform", "student_t3", "relu", "negative", "outliers", "zeros", "half_zero",
                        "tiny", "huge", "weights"})
    all.push_back(make_rows(k, n_rows, n_cols, seed++));
  return all;
}

std::vector<uint8_t> tally_rows(DType type, const Rows& r, const float* imatrix, bool weighted) {
  const int64_t row_bytes = tally::dtype_row_bytes(type, r.n_cols);
  std::vector<uint8_t> out(static_cast<size_t>(row_bytes * r.n_rows));
  for (int64_t i = 0; i < r.n_rows; ++i) {
    const float* src = r.values.data() + i * r.n_cols;
    if (weighted) tally::quantize_row_weighted(type, src, out.data() + i * row_bytes, r.n_cols, imatrix);
    else tally::quantize_row(type, src, out.data() + i * row_bytes, r.n_cols);
  }
  return out;
}

// First differing byte as "row r, block b, byte k", or "".
std::string first_difference(DType type, const Rows& r, const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
  if (a.size() != b.size()) return fmt::format("sizes {} and {}", a.size(), b.size());
  const auto it = std::mismatch(a.begin(), a.end(), b.begin());
  if (it.first == a.end()) return "";
  const auto at = static_cast<int64_t>(it.first - a.begin());
  const int64_t row_bytes = tally::dtype_row_bytes(type, r.n_cols);
  const int64_t block_bytes = tally::dtype_info(type).block_bytes;
  return fmt::format("row {}, block {}, byte {}: tally {:#04x}, ggml {:#04x}", at / row_bytes,
                     (at % row_bytes) / block_bytes, (at % row_bytes) % block_bytes, *it.first, *it.second);
}

TEST(LlamaCppQuantizeRows, ByteIdentityOfTheLegacyTypes) {
  TALLY_REQUIRE_LLAMACPP(lib);
  for (const DType type : {DType::kQ4_0, DType::kQ4_1, DType::kQ5_0, DType::kQ5_1, DType::kQ8_0}) {
    for (const int64_t n_cols : {32, 96, 4096}) {
      for (const Rows& r : distributions(n_cols == 4096 ? 16 : 64, n_cols)) {
        const std::vector<uint8_t> ggml = lib->quantize_rows(type, r.values.data(), r.n_rows, r.n_cols, nullptr);
        EXPECT_EQ(first_difference(type, r, tally_rows(type, r, nullptr, true), ggml), "")
            << tally::dtype_name(type) << ", " << r.name << " rows of " << n_cols << " (tally quantize)";
        EXPECT_EQ(first_difference(type, r, tally_rows(type, r, nullptr, false), ggml), "")
            << tally::dtype_name(type) << ", " << r.name << " rows of " << n_cols << " (quantize_row)";
      }
    }
  }
}

// Rows whose values are already f16 (an f16 model's weights): the case of `tally quantize`
// on an f16 GGUF, where both sides widen f16 to f32 first.
TEST(LlamaCppQuantizeRows, ByteIdentityFromF16Values) {
  TALLY_REQUIRE_LLAMACPP(lib);
  Rows r = make_rows("weights", 64, 256, 99);
  for (float& v : r.values) {
    uint16_t h;
    tally::quantize_row(DType::kF16, &v, &h, 1);
    tally::dequantize_row(DType::kF16, &h, &v, 1);
  }
  for (const DType type : {DType::kQ4_0, DType::kQ4_1, DType::kQ5_0, DType::kQ5_1, DType::kQ8_0}) {
    const std::vector<uint8_t> ggml = lib->quantize_rows(type, r.values.data(), r.n_rows, r.n_cols, nullptr);
    EXPECT_EQ(first_difference(type, r, tally_rows(type, r, nullptr, true), ggml), "") << tally::dtype_name(type);
  }
}

// An importance matrix shaped like a real one: log-normal column means (a few columns carry
// most of the activation energy).
std::vector<float> make_imatrix(int64_t n_cols, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.5f);
  std::vector<float> m(static_cast<size_t>(n_cols));
  for (float& v : m) v = std::exp(normal(rng));
  return m;
}

// sqrt(sum_i w_i (x_i - y_i)^2 / sum_i w_i) over all rows; w = 1 without an imatrix.
double weighted_rmse(const Rows& r, const std::vector<float>& deq, const float* imatrix) {
  double err = 0.0, wsum = 0.0;
  for (int64_t i = 0; i < r.n_rows * r.n_cols; ++i) {
    const double w = imatrix ? imatrix[i % r.n_cols] : 1.0;
    const double d = static_cast<double>(r.values[static_cast<size_t>(i)]) - deq[static_cast<size_t>(i)];
    err += w * d * d;
    wsum += w;
  }
  return std::sqrt(err / wsum);
}

std::vector<float> dequantize(DType type, const std::vector<uint8_t>& q, const Rows& r) {
  std::vector<float> out(r.values.size());
  tally::dequantize_row(type, q.data(), out.data(), r.n_rows * r.n_cols);
  return out;
}

// The bound: over the ten distributions the geometric mean of tally's error over ggml's must
// be <= 1 (no worse on average), and no single distribution more than kErrorMargin above
// ggml's. The k-/i-quants' bytes are tally's own search's (llama.cpp's code is not copied),
// so they are not ggml's; the margin is only for ties of rounding (rows where both store the
// same blocks: the tiny rows, whose scales underflow f16, give 1.000). Until 2026-12-02 it was
// 8%: the affine search (q4_K without an imatrix, q4_1 / q5_1 with one) trailed ggml's by 4%,
// 7% and 1.4% on rows with 1% outliers at 40x, where the grid's offset, not its step, decides
// how the other values round (quantize_fit.cpp tries both now).
constexpr double kErrorMargin = 0.005;

struct ErrorRow {
  std::string distribution;
  double tally = 0, ggml = 0;
};

void compare_errors(LlamaCppLib* lib, DType type, bool with_imatrix) {
  const int64_t n_cols = 1024, n_rows = 64;
  const std::vector<float> imatrix = make_imatrix(n_cols, 5);
  const float* imp = with_imatrix ? imatrix.data() : nullptr;
  std::vector<ErrorRow> rows;
  double log_ratio_sum = 0.0;
  int n_ratio = 0;
  for (const Rows& r : distributions(n_rows, n_cols)) {
    if (r.name == "zeros") continue;  // both exact
    const std::vector<uint8_t> mine = tally_rows(type, r, imp, true);
    const std::vector<uint8_t> ggml = lib->quantize_rows(type, r.values.data(), r.n_rows, r.n_cols, imp);
    // ggml's blocks through ggml's own dequantizer, tally's through tally's.
    std::vector<float> ggml_deq(r.values.size());
    lib->dequantize_row(type, ggml.data(), ggml_deq.data(), r.n_rows * r.n_cols);
    ErrorRow e{r.name, weighted_rmse(r, dequantize(type, mine, r), imp), weighted_rmse(r, ggml_deq, imp)};
    rows.push_back(e);
    if (e.ggml > 0) {
      log_ratio_sum += std::log(e.tally / e.ggml);
      ++n_ratio;
      EXPECT_LE(e.tally, e.ggml * (1.0 + kErrorMargin))
          << tally::dtype_name(type) << (with_imatrix ? " with imatrix, " : ", ") << r.name;
    }
  }
  const double mean_ratio = std::exp(log_ratio_sum / n_ratio);
  std::string table;
  for (const ErrorRow& e : rows)
    table += fmt::format("  {:<11} tally {:.6g}  ggml {:.6g}  ratio {:.4f}\n", e.distribution, e.tally, e.ggml,
                         e.ggml > 0 ? e.tally / e.ggml : 1.0);
  std::printf("%s%s: geometric mean ratio tally/ggml %.4f\n%s", std::string(tally::dtype_name(type)).c_str(),
              with_imatrix ? " (imatrix-weighted RMSE)" : " (RMSE)", mean_ratio, table.c_str());
  EXPECT_LE(mean_ratio, 1.0) << tally::dtype_name(type) << (with_imatrix ? " with imatrix" : "") << ":\n" << table;
}

class LlamaCppErrorNoWorse : public ::testing::TestWithParam<DType> {};

TEST_P(LlamaCppErrorNoWorse, WithoutImatrix) {
  TALLY_REQUIRE_LLAMACPP(lib);
  compare_errors(lib, GetParam(), false);
}

TEST_P(LlamaCppErrorNoWorse, WithImatrix) {
  TALLY_REQUIRE_LLAMACPP(lib);
  compare_errors(lib, GetParam(), true);
}

INSTANTIATE_TEST_SUITE_P(KAndIQuants, LlamaCppErrorNoWorse,
                         ::testing::Values(DType::kQ2_K, DType::kQ3_K, DType::kQ4_K, DType::kQ5_K, DType::kQ6_K,
                                           DType::kIQ4_NL, DType::kIQ4_XS),
                         [](const auto& info) { return std::string(tally::dtype_name(info.param)); });

// q4_0 .. q5_1 search only with an imatrix (without one they are byte-identical above).
class LlamaCppLegacyImatrixNoWorse : public ::testing::TestWithParam<DType> {};
TEST_P(LlamaCppLegacyImatrixNoWorse, WithImatrix) {
  TALLY_REQUIRE_LLAMACPP(lib);
  compare_errors(lib, GetParam(), true);
}
INSTANTIATE_TEST_SUITE_P(LegacyTypes, LlamaCppLegacyImatrixNoWorse,
                         ::testing::Values(DType::kQ4_0, DType::kQ4_1, DType::kQ5_0, DType::kQ5_1),
                         [](const auto& info) { return std::string(tally::dtype_name(info.param)); });

}  // namespace
}  // namespace tally_test
