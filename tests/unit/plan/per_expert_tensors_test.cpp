// Old Mixtral conversions store each expert as its own matrix (blk.N.ffn_gate.E.weight):
// `tally plan` counts them as the expert weights they are (ffn roles, split over tensor-parallel
// ranks like the merged 3-D tensors), not as "other" tensors kept whole on every rank.
#include <gtest/gtest.h>

#include <vector>

#include "io/gguf.h"
#include "io/gguf_tensor_names.h"
#include "io/gguf_writer.h"
#include "plan/gguf_source.h"
#include "plan/plan.h"

namespace tally::plan {
namespace {

constexpr int64_t kEmbd = 8, kFf = 16, kExperts = 4, kVocab = 4;

// One llama block with 4 experts top 2, f32 zeros; experts merged (3-D) or one matrix each.
io::GgufFile moe_gguf(bool per_expert) {
  io::GgufWriter w;
  w.set_string("general.architecture", "llama");
  w.set_u32("llama.context_length", 64);
  w.set_u32("llama.embedding_length", kEmbd);
  w.set_u32("llama.feed_forward_length", kFf);
  w.set_u32("llama.block_count", 1);
  w.set_u32("llama.attention.head_count", 2);
  w.set_u32("llama.expert_count", kExperts);
  w.set_u32("llama.expert_used_count", 2);
  std::vector<std::vector<float>> data;  // kept alive until to_bytes()
  auto add = [&](const std::string& name, std::vector<int64_t> dims) {
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    data.emplace_back(static_cast<size_t>(n), 0.0f);
    const auto& d = data.back();
    ASSERT_TRUE(w.add_tensor(name, DType::kF32, dims, {reinterpret_cast<const uint8_t*>(d.data()), d.size() * 4}).ok());
  };
  data.reserve(32);
  add("token_embd.weight", {kEmbd, kVocab});
  add("output.weight", {kEmbd, kVocab});
  add("output_norm.weight", {kEmbd});
  for (const char* t : {"attn_q", "attn_k", "attn_v", "attn_output"}) add(std::string("blk.0.") + t + ".weight", {kEmbd, kEmbd});
  add("blk.0.ffn_gate_inp.weight", {kEmbd, kExperts});
  using io::GgufTensor;
  for (GgufTensor merged : {GgufTensor::kFfnGateExps, GgufTensor::kFfnUpExps, GgufTensor::kFfnDownExps}) {
    const bool down = merged == GgufTensor::kFfnDownExps;
    const int64_t n_in = down ? kFf : kEmbd, n_out = down ? kEmbd : kFf;
    if (!per_expert) {
      add(io::gguf_tensor_name(merged, 0), {n_in, n_out, kExperts});
      continue;
    }
    for (int64_t e = 0; e < kExperts; ++e) add(io::gguf_expert_tensor_name(merged, 0, e), {n_in, n_out});
  }
  auto f = io::GgufFile::parse_owned(w.to_bytes(), per_expert ? "per-expert" : "merged");
  EXPECT_TRUE(f.ok()) << f.status().to_string();
  return std::move(f).value();
}

TEST(PerExpertTensors, NamesParseBackToTheMergedTensor) {
  const auto id = io::gguf_expert_tensor_parse("blk.12.ffn_down.7.weight");
  ASSERT_TRUE(id.has_value());
  EXPECT_EQ(id->merged, io::GgufTensor::kFfnDownExps);
  EXPECT_EQ(id->layer, 12);
  EXPECT_EQ(id->expert, 7);
  for (const char* bad : {"blk.1.ffn_down.weight", "blk.1.ffn_down.x.weight", "blk.1.ffn_down.2.bias",
                          "blk.1.ffn_norm.2.weight", "blk..ffn_up.1.weight", "blk.1.ffn_up.-1.weight"})
    EXPECT_FALSE(io::gguf_expert_tensor_parse(bad).has_value()) << bad;
}

TEST(PerExpertTensors, CountedAsExpertsLikeTheMergedForm) {
  auto per_expert = plan_model_from_gguf(moe_gguf(true));
  auto merged = plan_model_from_gguf(moe_gguf(false));
  ASSERT_TRUE(per_expert.ok()) << per_expert.status().to_string();
  ASSERT_TRUE(merged.ok()) << merged.status().to_string();
  int n_expert_matrices = 0;
  for (const PlanTensor& t : per_expert->tensors) {
    if (t.name.find("ffn_") == std::string::npos || t.name.find("gate_inp") != std::string::npos) continue;
    ++n_expert_matrices;
    EXPECT_NE(t.role, TensorRole::kOther) << t.name;
    EXPECT_EQ(t.layer, 0) << t.name;
    EXPECT_EQ(t.n_experts, 1) << t.name;
  }
  EXPECT_EQ(n_expert_matrices, 3 * kExperts);
  EXPECT_EQ(per_expert->n_params(), merged->n_params());
  for (int64_t tp : {1, 2}) {
    PlanOptions o;
    o.tp = tp;
    o.context = 64;
    o.concurrency = 1;
    auto a = compute_plan(*per_expert, o);
    auto b = compute_plan(*merged, o);
    ASSERT_TRUE(a.ok()) << a.status().to_string();
    ASSERT_TRUE(b.ok()) << b.status().to_string();
    EXPECT_EQ(a->weight_bytes, b->weight_bytes) << "tp " << tp;  // experts split, not kept whole
  }
}

}  // namespace
}  // namespace tally::plan
