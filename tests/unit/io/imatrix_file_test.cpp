// Importance-matrix files (io/imatrix_file.h): llama.cpp's GGUF format and its legacy .dat
// round-trip with every field, a legacy file built by hand byte by byte reads as llama.cpp
// writes it, and malformed files are refused with the reason.
#include "io/imatrix_file.h"

#include <cstring>

#include <gtest/gtest.h>

#include "io/gguf.h"
#include "io/gguf_writer.h"
#include "support/test_data.h"

namespace tally::io {
namespace {

Imatrix sample() {
  Imatrix m;
  m.datasets = {"calibration.txt"};
  m.chunk_count = 3;
  m.chunk_size = 64;
  ImatrixEntry dense;
  dense.n_cols = 4;
  dense.sums = {1.0f, 2.0f, 3.0f, 4.0f};
  dense.counts = {8.0f};
  m.entries["blk.0.attn_q.weight"] = dense;
  ImatrixEntry experts;
  experts.n_cols = 2;
  experts.n_mat = 3;
  experts.sums = {1.0f, 1.0f, 0.0f, 0.0f, 6.0f, 3.0f};
  experts.counts = {2.0f, 0.0f, 3.0f};
  m.entries["blk.0.ffn_down_exps.weight"] = experts;
  return m;
}

TEST(ImatrixFile, GgufRoundTripKeepsEveryField) {
  const std::string path = tally_test::temp_dir() + "/m.gguf";
  ASSERT_TRUE(imatrix_write(sample(), path).ok());
  auto g = GgufFile::open(path);
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(*g->get_string("general.type"), "imatrix");
  const GgufTensorInfo* sums = g->find_tensor("blk.0.ffn_down_exps.weight.in_sum2");
  ASSERT_NE(sums, nullptr);
  EXPECT_EQ(sums->dims, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(g->find_tensor("blk.0.ffn_down_exps.weight.counts")->dims, (std::vector<int64_t>{1, 3}));
  auto m = imatrix_read(path);
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_EQ(m->datasets, sample().datasets);
  EXPECT_EQ(m->chunk_count, 3u);
  EXPECT_EQ(m->chunk_size, 64u);
  ASSERT_EQ(m->entries.size(), 2u);
  const ImatrixEntry& e = m->entries.at("blk.0.ffn_down_exps.weight");
  EXPECT_EQ(e.n_mat, 3);
  EXPECT_EQ(e.sums, sample().entries.at("blk.0.ffn_down_exps.weight").sums);
  EXPECT_EQ(e.importance(2), (std::vector<float>{2.0f, 1.0f}));
  EXPECT_EQ(e.importance(1), (std::vector<float>{0.0f, 0.0f}));  // never routed to
}

void put_i32(std::vector<uint8_t>& b, int32_t v) {
  const auto* p = reinterpret_cast<const uint8_t*>(&v);
  b.insert(b.end(), p, p + 4);
}
void put_f32(std::vector<uint8_t>& b, float v) {
  const auto* p = reinterpret_cast<const uint8_t*>(&v);
  b.insert(b.end(), p, p + 4);
}

TEST(ImatrixFile, LegacyLayoutByHand) {
  // One entry "w" of 2 values seen in 4 calls: values are mean squares times the calls.
  std::vector<uint8_t> b;
  put_i32(b, 1);
  put_i32(b, 1);
  b.push_back('w');
  put_i32(b, 4);
  put_i32(b, 2);
  put_f32(b, 8.0f);
  put_f32(b, 2.0f);
  put_i32(b, 4);  // chunks
  put_i32(b, 3);
  b.insert(b.end(), {'a', 'b', 'c'});
  auto m = imatrix_parse(b);
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_EQ(m->chunk_count, 4u);
  EXPECT_EQ(m->datasets, std::vector<std::string>{"abc"});
  EXPECT_EQ(m->entries.at("w").importance(0), (std::vector<float>{2.0f, 0.5f}));
  // Written back, the bytes are the same.
  EXPECT_EQ(imatrix_to_legacy_bytes(*m), b);
}

TEST(ImatrixFile, LegacyRoundTripKeepsTheMeans) {
  const std::string path = tally_test::temp_dir() + "/m.dat";
  ASSERT_TRUE(imatrix_write(sample(), path).ok());
  auto m = imatrix_read(path);
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_EQ(m->entries.at("blk.0.attn_q.weight").importance(0), (std::vector<float>{0.125f, 0.25f, 0.375f, 0.5f}));
  // Experts are stored one after another, one count for all.
  const ImatrixEntry& e = m->entries.at("blk.0.ffn_down_exps.weight");
  EXPECT_EQ(e.n_cols, 6);
  EXPECT_EQ(e.importance(0), (std::vector<float>{0.5f, 0.5f, 0.0f, 0.0f, 2.0f, 1.0f}));
}

TEST(ImatrixFile, MalformedFilesAreRefusedWithTheReason) {
  const auto error = [](const std::vector<uint8_t>& b) {
    auto m = imatrix_parse(b);
    EXPECT_FALSE(m.ok());
    return m.ok() ? std::string() : m.status().to_string();
  };
  EXPECT_NE(error({}).find("truncated"), std::string::npos);
  std::vector<uint8_t> b;
  put_i32(b, 1);
  put_i32(b, 1);
  b.push_back('w');
  put_i32(b, 1);
  put_i32(b, 1000);  // more values than bytes
  EXPECT_NE(error(b).find("values"), std::string::npos);
  b.resize(b.size() - 4);
  put_i32(b, 2);
  put_f32(b, -1.0f);  // a negative sum
  put_f32(b, 1.0f);
  EXPECT_NE(error(b).find("negative"), std::string::npos);

  GgufWriter w;  // sums without counts
  const float v[2] = {1.0f, 2.0f};
  ASSERT_TRUE(w.add_tensor("x.in_sum2", DType::kF32, {2, 1}, {reinterpret_cast<const uint8_t*>(v), 8}).ok());
  EXPECT_NE(error(w.to_bytes()).find("no .counts"), std::string::npos);
  GgufWriter w2;  // counts that do not match the matrices
  ASSERT_TRUE(w2.add_tensor("x.in_sum2", DType::kF32, {1, 2}, {reinterpret_cast<const uint8_t*>(v), 8}).ok());
  ASSERT_TRUE(w2.add_tensor("x.counts", DType::kF32, {1, 1}, {reinterpret_cast<const uint8_t*>(v), 4}).ok());
  EXPECT_NE(error(w2.to_bytes()).find("1 counts for 2 matrices"), std::string::npos);
}

}  // namespace
}  // namespace tally::io
