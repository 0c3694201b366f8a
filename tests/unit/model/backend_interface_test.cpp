// The forward pass reaches the device only through the Backend table (backend/backend.h): a
// backend that counts its calls and hands them to the CPU backend sees every op, once per op
// and layer (never per row), and the logits are the CPU backend's bits.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <string>

#include "backend/backend.h"
#include "io/gguf.h"
#include "model/model.h"
#include "model_runner.h"
#include "tiny_model.h"

namespace tally_test {
namespace {

using tally::Backend;

class CountingBackend final : public Backend {
 public:
  explicit CountingBackend(const Backend& inner) : inner_(inner) {}
  mutable std::map<std::string, int> calls;

  std::string_view name() const override { return "counting"; }
  bool can_prepare(tally::DType type) const override { return inner_.can_prepare(type); }
  std::unique_ptr<tally::PreparedWeights> prepare_weights(const tally::WeightMatrix& w) const override {
    ++calls["prepare_weights"];
    return inner_.prepare_weights(w);
  }
  bool kv_type_supported(tally::DType type) const override { return inner_.kv_type_supported(type); }
  void get_rows(const tally::WeightMatrix& table, const int32_t* ids, int64_t n, float* out,
                tally::ThreadPool& pool) const override {
    ++calls["get_rows"];
    inner_.get_rows(table, ids, n, out, pool);
  }
  void matmul(const tally::WeightMatrix& w, const float* x, int64_t n_tokens, float* y,
              tally::ThreadPool& pool) const override {
    ++calls["matmul"];
    inner_.matmul(w, x, n_tokens, y, pool);
  }
  void matmul_shared_input(std::span<const tally::MatmulOutput> outputs, const float* x, int64_t n_tokens,
                           tally::ThreadPool& pool) const override {
    ++calls["matmul_shared_input"];
    inner_.matmul_shared_input(outputs, x, n_tokens, pool);
  }
  void rmsnorm(const float* x, const float* w, float* out, int64_t n_rows, int64_t n, float eps,
               tally::ThreadPool& pool) const override {
    ++calls["rmsnorm"];
    inner_.rmsnorm(x, w, out, n_rows, n, eps, pool);
  }
  void rope_table(const int32_t* positions, int64_t n_tokens, const float* freqs, int64_t rot_dim,
                  tally::RopeLayout layout, float* cos, float* sin) const override {
    ++calls["rope_table"];
    inner_.rope_table(positions, n_tokens, freqs, rot_dim, layout, cos, sin);
  }
  void rope(const tally::RopeShape& shape, const float* cos, const float* sin, int64_t n_tokens, float* x,
            tally::ThreadPool& pool) const override {
    ++calls["rope"];
    inner_.rope(shape, cos, sin, n_tokens, x, pool);
  }
  void kv_write(const tally::KvWriteArgs& args) const override {
    ++calls["kv_write"];
    inner_.kv_write(args);
  }
  void attention(const tally::AttentionArgs& args, tally::ThreadPool& pool) const override {
    ++calls["attention"];
    inner_.attention(args, pool);
  }
  void silu_mul(float* gate, const float* up, int64_t n_rows, int64_t n, tally::ThreadPool& pool) const override {
    ++calls["silu_mul"];
    inner_.silu_mul(gate, up, n_rows, n, pool);
  }
  void gelu_mul(float* gate, const float* up, int64_t n_rows, int64_t n, tally::ThreadPool& pool) const override {
    ++calls["gelu_mul"];
    inner_.gelu_mul(gate, up, n_rows, n, pool);
  }
  void softcap(float* x, float cap, int64_t n, tally::ThreadPool& pool) const override {
    ++calls["softcap"];
    inner_.softcap(x, cap, n, pool);
  }
  void scale(float* x, float s, int64_t n, tally::ThreadPool& pool) const override {
    ++calls["scale"];
    inner_.scale(x, s, n, pool);
  }
  void add(float* x, const float* y, int64_t n, tally::ThreadPool& pool) const override {
    ++calls["add"];
    inner_.add(x, y, n, pool);
  }
  void add_bias(float* x, const float* bias, int64_t n_rows, int64_t n, tally::ThreadPool& pool) const override {
    ++calls["add_bias"];
    inner_.add_bias(x, bias, n_rows, n, pool);
  }
  void add_rows_scaled(float* acc, const float* y, const int32_t* rows, const float* weights, int64_t n_rows,
                       int64_t n, tally::ThreadPool& pool) const override {
    ++calls["add_rows_scaled"];
    inner_.add_rows_scaled(acc, y, rows, weights, n_rows, n, pool);
  }

 private:
  const Backend& inner_;
};

std::unique_ptr<tally::Model> load(const std::vector<uint8_t>& bytes, const Backend& backend) {
  auto gguf = tally::io::GgufFile::parse(bytes);
  EXPECT_TRUE(gguf.ok()) << gguf.status().to_string();
  auto model = tally::Model::from_gguf(std::move(gguf).value(), backend);
  EXPECT_TRUE(model.ok()) << model.status().to_string();
  return std::move(model).value();
}

TEST(BackendInterface, ForwardCallsEachOpOncePerLayerAndKeepsTheBits) {
  TinySpec spec;
  spec.arch = "qwen2";  // every op, add_bias included
  spec.biases = true;
  spec.n_layers = 3;
  const auto bytes = make_tiny_gguf(spec);
  CountingBackend counting(tally::default_backend());
  const auto counted_model = load(bytes, counting);
  const auto cpu_model = load(bytes, tally::default_backend());
  ASSERT_TRUE(counted_model && cpu_model);
  EXPECT_EQ(&counted_model->backend(), &counting);

  counting.calls.clear();
  const std::vector<Chunk> step = {{0, 0, {3, 17, 39, 0, 22}}, {1, 0, {8, 31}}};
  ModelRunner counted_runner(*counted_model, 4, 2, 2, 32, 7);
  ModelRunner cpu_runner(*cpu_model, 4, 2, 2, 32, 7);
  const std::vector<float> got = counted_runner.step(step);
  const std::vector<float> want = cpu_runner.step(step);
  ASSERT_EQ(got.size(), want.size());
  EXPECT_EQ(0, std::memcmp(got.data(), want.data(), got.size() * sizeof(float)));

  const int L = 3;
  const std::map<std::string, int> expected = {
      {"get_rows", 2},              // embedding, then the logit rows
      {"rope_table", 1},            // once per step
      {"rmsnorm", 2 * L + 1},       // attention and FFN norms, the final norm
      {"matmul_shared_input", 2 * L},  // q/k/v, gate/up
      {"add_bias", 3 * L},          // q, k, v
      {"rope", 2 * L},              // q, k
      {"kv_write", L},
      {"attention", L},
      {"matmul", 2 * L + 1},        // wo, w_down, output
      {"silu_mul", L},
      {"add", 2 * L},               // two residual adds
  };
  EXPECT_EQ(counting.calls, expected);
}

// MoE: each expert runs once per step over all the tokens that chose it, and experts no token
// chose are not touched: one decode token runs exactly k experts per layer; 24 tokens (48
// choices per layer) run at most the 8 experts per layer, not one expert call per choice.
TEST(BackendInterface, MoeRunsEachActiveExpertOncePerStep) {
  TinySpec spec;
  spec.arch = "qwen3moe";
  spec.qk_norm = true;
  spec.n_expert = 8;
  spec.n_expert_used = 2;
  spec.n_ff_exp = 16;
  const int L = 2;
  const auto bytes = make_tiny_gguf(spec);
  CountingBackend counting(tally::default_backend());
  const auto model = load(bytes, counting);
  ASSERT_TRUE(model);
  ModelRunner runner(*model, 4, 2, 2, 32, 5);
  counting.calls.clear();
  runner.step({{0, 0, {7}}});
  // Per layer: q/k/v once, then each expert's gate/up; its down matmul beside wo, the router.
  EXPECT_EQ(counting.calls["matmul_shared_input"], L * (1 + 2));
  EXPECT_EQ(counting.calls["add_rows_scaled"], L * 2);
  EXPECT_EQ(counting.calls["matmul"], L * (1 + 1 + 2) + 1);  // wo, router, 2 downs; output

  counting.calls.clear();
  std::vector<int32_t> tokens;
  for (int32_t i = 0; i < 24; ++i) tokens.push_back((i * 7) % 40);
  runner.step({{1, 0, tokens}});
  const int expert_runs = counting.calls["add_rows_scaled"];
  EXPECT_GE(expert_runs, L * 2);
  EXPECT_LE(expert_runs, L * 8);
  EXPECT_EQ(counting.calls["matmul_shared_input"], L + expert_runs);
  EXPECT_EQ(counting.calls["get_rows"], 2 + expert_runs);  // embedding, logit rows, gathers
}

}  // namespace
}  // namespace tally_test
