// The fuzzers' seed corpora are valid inputs (a broken seed would waste the fuzzer's time
// rediscovering the format).
#include <cstring>
#include <filesystem>

#include <gtest/gtest.h>

#include "io/gguf.h"
#include "io/imatrix_file.h"
#include "io/llama2c.h"
#include "io/safetensors.h"
#include "support/test_data.h"

namespace tally::io {
namespace {

TEST(FuzzSeeds, EveryGgufSeedParses) {
  const std::string dir = tally_test::repo_path("tests/fuzz/corpus/gguf");
  int n = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    auto f = GgufFile::open(entry.path().string());
    EXPECT_TRUE(f.ok()) << f.status().to_string();
    ++n;
  }
  EXPECT_GE(n, 4);
}

TEST(FuzzSeeds, EveryImatrixSeedParses) {
  const std::string dir = tally_test::repo_path("tests/fuzz/corpus/imatrix");
  int n = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    auto m = imatrix_read(entry.path().string());
    EXPECT_TRUE(m.ok()) << m.status().to_string();
    ++n;
  }
  EXPECT_GE(n, 3);
}

// Same framing as llama2c_fuzz.cpp: u32 checkpoint length, checkpoint, tokenizer.
TEST(FuzzSeeds, EveryLlama2cSeedConverts) {
  const std::string dir = tally_test::repo_path("tests/fuzz/corpus/llama2c");
  int n = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string bytes = tally_test::read_file(entry.path().string());
    ASSERT_GE(bytes.size(), 4u);
    uint32_t split = 0;
    std::memcpy(&split, bytes.data(), 4);
    ASSERT_LE(split, bytes.size() - 4);
    const auto* data = reinterpret_cast<const uint8_t*>(bytes.data()) + 4;
    GgufWriter w;
    const Status st = llama2c_to_gguf({data, split}, {data + split, bytes.size() - 4 - split}, {}, w);
    EXPECT_TRUE(st.ok()) << entry.path() << ": " << st.to_string();
    ++n;
  }
  EXPECT_GE(n, 2);
}

TEST(FuzzSeeds, EverySafetensorsSeedParses) {
  const std::string dir = tally_test::repo_path("tests/fuzz/corpus/safetensors");
  int n = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    auto f = SafetensorsFile::open(entry.path().string());
    EXPECT_TRUE(f.ok()) << f.status().to_string();
    ++n;
  }
  EXPECT_GE(n, 3);
}

}  // namespace
}  // namespace tally::io
