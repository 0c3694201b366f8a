// llama.cpp's tensor names, the one table the loader, planner and writers share.
#include "io/gguf_tensor_names.h"

#include <gtest/gtest.h>

namespace tally::io {
namespace {

TEST(GgufTensorNames, NamesOfModelWideAndPerBlockTensors) {
  EXPECT_EQ(gguf_tensor_name(GgufTensor::kTokenEmbd), "token_embd.weight");
  EXPECT_EQ(gguf_tensor_name(GgufTensor::kOutput), "output.weight");
  EXPECT_EQ(gguf_tensor_name(GgufTensor::kRopeFreqs), "rope_freqs.weight");
  EXPECT_EQ(gguf_tensor_name(GgufTensor::kAttnQ, 3), "blk.3.attn_q.weight");
  EXPECT_EQ(gguf_tensor_name(GgufTensor::kAttnVBias, 0), "blk.0.attn_v.bias");
  EXPECT_EQ(gguf_tensor_name(GgufTensor::kAttnOut, 12), "blk.12.attn_output.weight");
  EXPECT_EQ(gguf_tensor_name(GgufTensor::kFfnDown, 31), "blk.31.ffn_down.weight");
}

TEST(GgufTensorNames, ParseInvertsName) {
  for (int t = 0; t <= static_cast<int>(GgufTensor::kAttnQkv); ++t) {
    const auto tensor = static_cast<GgufTensor>(t);
    const int layer = gguf_tensor_per_block(tensor) ? 7 : -1;
    const auto id = gguf_tensor_parse(gguf_tensor_name(tensor, layer));
    ASSERT_TRUE(id.has_value()) << t;
    EXPECT_EQ(id->tensor, tensor);
    EXPECT_EQ(id->layer, layer);
  }
}

TEST(GgufTensorNames, OtherNamesAreNotInTheTable) {
  for (const char* name : {"blk.3.attn_q", "blk.x.attn_q.weight", "blk.3", "blk.-1.attn_q.weight",
                           "attn_q.weight", "blk.3.token_embd.weight", "token_embd", "v.blk.0.attn_q.weight"})
    EXPECT_FALSE(gguf_tensor_parse(name).has_value()) << name;
}

}  // namespace
}  // namespace tally::io
