// The safetensors reader: valid files read back, and every malformed header of safetensors.h is
// one kFormat error that names the problem.
#include <cstring>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "io/safetensors.h"
#include "io/safetensors_writer.h"

namespace tally::io {
namespace {

std::vector<uint8_t> with_header(const std::string& json, size_t data_bytes, uint64_t claimed = 0) {
  const uint64_t n = claimed ? claimed : json.size();
  std::vector<uint8_t> out(8 + json.size() + data_bytes, 0x5a);
  for (int i = 0; i < 8; ++i) out[static_cast<size_t>(i)] = static_cast<uint8_t>(n >> (8 * i));
  std::memcpy(out.data() + 8, json.data(), json.size());
  return out;
}

std::string error_of(const std::vector<uint8_t>& bytes) {
  auto f = SafetensorsFile::parse(bytes, "t.safetensors");
  EXPECT_FALSE(f.ok());
  if (f.ok()) return "";
  EXPECT_EQ(f.status().code(), ErrorCode::kFormat) << f.status().to_string();
  return f.status().message();
}

TEST(Safetensors, WrittenFileReadsBack) {
  SafetensorsWriter w;
  const float a[6] = {1, 2, 3, 4, 5, 6};
  const uint16_t b[2] = {0x3f80, 0x4000};
  w.add("a.weight", "F32", {2, 3}, {reinterpret_cast<const uint8_t*>(a), sizeof a});
  w.add("b", "BF16", {2}, {reinterpret_cast<const uint8_t*>(b), sizeof b});
  w.add("ids", "I64", {0}, {});
  w.set_metadata("format", "pt");
  const std::vector<uint8_t> bytes = w.to_bytes();
  auto f = SafetensorsFile::parse(bytes);
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  ASSERT_EQ(f->tensors().size(), 3u);
  const SafetensorsTensor* t = f->find("a.weight");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->type, DType::kF32);
  EXPECT_EQ(t->shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(std::memcmp(t->bytes.data(), a, sizeof a), 0);
  EXPECT_EQ(f->find("b")->type, DType::kBF16);
  EXPECT_FALSE(f->find("ids")->type.has_value());
  EXPECT_EQ(f->find("ids")->dtype, "I64");
  EXPECT_EQ(f->metadata().at("format"), "pt");
}

TEST(Safetensors, MalformedHeadersAreErrors) {
  const std::string ok = R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  ASSERT_TRUE(SafetensorsFile::parse(with_header(ok, 8)).ok());
  EXPECT_NE(error_of({1, 2, 3}).find("too short"), std::string::npos);
  EXPECT_NE(error_of(with_header(ok, 8, 4096)).find("larger than the file"), std::string::npos);
  EXPECT_NE(error_of(with_header(ok, 8, uint64_t{1} << 40)).find("at most"), std::string::npos);
  EXPECT_NE(error_of(with_header(R"({"x":{"dtype":"F32",)", 8)).find("not valid JSON"), std::string::npos);
  EXPECT_NE(error_of(with_header("[1,2]", 0)).find("not a JSON object"), std::string::npos);
  EXPECT_NE(error_of(with_header(R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                                 R"("x":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", 8))
                .find("appears twice"), std::string::npos);
  EXPECT_NE(error_of(with_header(R"({"x":{"dtype":"F33","shape":[2],"data_offsets":[0,8]}})", 8))
                .find("unknown dtype"), std::string::npos);
  EXPECT_NE(error_of(with_header(R"({"x":{"shape":[2],"data_offsets":[0,8]}})", 8)).find("dtype"),
            std::string::npos);
  EXPECT_NE(error_of(with_header(R"({"x":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", 8))
                .find("shape"), std::string::npos);
  EXPECT_NE(error_of(with_header(R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0]}})", 8))
                .find("data_offsets"), std::string::npos);
  // dtype/shape/size mismatch
  EXPECT_NE(error_of(with_header(R"({"x":{"dtype":"F16","shape":[2],"data_offsets":[0,8]}})", 8))
                .find("8 bytes for a F16 tensor of shape [2]"), std::string::npos);
  EXPECT_NE(error_of(with_header(R"({"x":{"dtype":"F32","shape":[4294967296,4294967296],)"
                                 R"("data_offsets":[0,8]}})", 8)).find("bytes for a"), std::string::npos);
  // out of the file
  EXPECT_NE(error_of(with_header(R"({"x":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", 8))
                .find("run past the data"), std::string::npos);
  EXPECT_NE(error_of(with_header(R"({"x":{"dtype":"F32","shape":[0],"data_offsets":[8,0]}})", 8))
                .find("end before they begin"), std::string::npos);
  // overlap, hole, trailing bytes
  EXPECT_NE(error_of(with_header(R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                                 R"("y":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", 8))
                .find("overlaps"), std::string::npos);
  EXPECT_NE(error_of(with_header(R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", 8))
                .find("belong to no tensor"), std::string::npos);
  EXPECT_NE(error_of(with_header(ok, 12)).find("belong to no tensor"), std::string::npos);
  EXPECT_NE(error_of(with_header(R"({"__metadata__":{"a":1}})", 0)).find("__metadata__"), std::string::npos);
  EXPECT_NE(error_of(with_header(R"({"x":3})", 0)).find("not an object"), std::string::npos);
}

class SafetensorsDir : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("tally_st_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  void write_text(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name) << text;
  }
  void write_shard(const std::string& name, const std::vector<std::string>& tensors) {
    SafetensorsWriter w;
    const float v[2] = {1, 2};
    for (const auto& t : tensors) w.add(t, "F32", {2}, {reinterpret_cast<const uint8_t*>(v), sizeof v});
    ASSERT_TRUE(w.write((dir_ / name).string()).ok());
  }
  std::filesystem::path dir_;
};

TEST_F(SafetensorsDir, ShardedThroughTheIndex) {
  write_shard("model-00001-of-00002.safetensors", {"a", "b"});
  write_shard("model-00002-of-00002.safetensors", {"c"});
  write_text("model.safetensors.index.json",
             R"({"metadata":{},"weight_map":{"a":"model-00001-of-00002.safetensors",)"
             R"("b":"model-00001-of-00002.safetensors","c":"model-00002-of-00002.safetensors"}})");
  auto c = SafetensorsCheckpoint::open_dir(dir_.string());
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(c->n_files(), 2u);
  EXPECT_EQ(c->names(), (std::vector<std::string_view>{"a", "b", "c"}));
  ASSERT_NE(c->find("c"), nullptr);
  EXPECT_EQ(c->find("zz"), nullptr);
}

TEST_F(SafetensorsDir, BadIndexesAreErrors) {
  auto expect_error = [&](std::string_view what) {
    auto c = SafetensorsCheckpoint::open_dir(dir_.string());
    ASSERT_FALSE(c.ok());
    EXPECT_NE(c.status().message().find(what), std::string::npos) << c.status().to_string();
  };
  expect_error("no model.safetensors");
  write_shard("s1.safetensors", {"a"});
  write_shard("s2.safetensors", {"a"});
  write_text("model.safetensors.index.json", R"({"weight_map":{"a":"s1.safetensors","b":"s2.safetensors"}})");
  expect_error("in two shards");
  write_shard("s2.safetensors", {"c"});
  expect_error("which does not hold it");
  write_text("model.safetensors.index.json", R"({"weight_map":{"a":"../s1.safetensors"}})");
  expect_error("not a file name");
  write_text("model.safetensors.index.json", R"({"weight_map":{"a":"missing.safetensors"}})");
  expect_error("missing.safetensors");
  write_text("model.safetensors.index.json", R"({"weight_map":)");
  expect_error("not valid JSON");
}

}  // namespace
}  // namespace tally::io
