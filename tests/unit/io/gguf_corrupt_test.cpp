// Broken GGUF files: every one must come back as a Status whose message names the field and
// its byte offset, never as a crash, a hang, an out-of-bounds read or a huge allocation
// (this binary also runs under ASan + UBSan).
#include <cstring>

#include <gtest/gtest.h>

#include "base/check.h"
#include "gguf_bytes.h"
#include "io/gguf.h"
#include "io/gguf_parser.h"
#include "io/gguf_writer.h"

namespace tally::io {
namespace {

using tally_test::GgufBytes;

// A small valid file touching every metadata type and three tensors.
std::vector<uint8_t> valid_file() {
  GgufWriter w;
  w.set_string("general.architecture", "toy");
  w.set_u32("general.alignment", 16);
  w.set_u8("a.u8", 1);
  w.set_i16("a.i16", -2);
  w.set_f64("a.f64", 3.5);
  w.set_bool("a.bool", true);
  w.set_string_array("a.strs", {"x", "yz"});
  w.set_f32_array("a.f32s", {1.0f, 2.0f});
  w.set_i32_array("a.i32s", {7});
  std::vector<uint8_t> data(64 * 4, 0x3c);
  TALLY_CHECK(w.add_tensor("t.f32", DType::kF32, {4, 2}, {data.data(), 32}).ok(), "");
  TALLY_CHECK(w.add_tensor("t.q8", DType::kQ8_0, {32}, {data.data(), 34}).ok(), "");
  TALLY_CHECK(w.add_tensor("t.f16", DType::kF16, {3}, {data.data(), 6}).ok(), "");
  return w.to_bytes();
}

// Parses and expects a failure whose message contains `needle` (and the offset when given).
void expect_error(std::span<const uint8_t> bytes, std::string_view needle, int64_t offset = -1,
                  ErrorCode code = ErrorCode::kFormat) {
  auto f = GgufFile::parse(bytes, "bad.gguf");
  ASSERT_FALSE(f.ok()) << "parsed a broken file; expected: " << needle;
  const std::string& msg = f.status().message();
  EXPECT_EQ(f.status().code(), code) << msg;
  EXPECT_EQ(msg.rfind("gguf: bad.gguf: ", 0), 0u) << msg;
  EXPECT_NE(msg.find(needle), std::string::npos) << "message: " << msg << "\nexpected: " << needle;
  if (offset >= 0) {
    const std::string at = "at offset " + std::to_string(offset);
    EXPECT_EQ(msg.compare(msg.size() - at.size(), at.size(), at), 0) << msg;
  }
}

TEST(GgufCorrupt, TheBaseFileIsValid) {
  const auto bytes = valid_file();
  auto f = GgufFile::parse(bytes);
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  EXPECT_EQ(f->alignment(), 16u);
  EXPECT_EQ(f->tensors().size(), 3u);
}

TEST(GgufCorrupt, EveryTruncationFails) {
  const auto bytes = valid_file();
  auto full = GgufFile::parse(bytes);
  ASSERT_TRUE(full.ok());
  const GgufTensorInfo& last = full->tensors().back();
  const size_t needed = full->data_offset() + last.offset + last.n_bytes;  // the rest is padding
  for (size_t n = 0; n < bytes.size(); ++n) {
    auto f = GgufFile::parse(std::span(bytes).first(n), "cut.gguf");
    if (n >= needed) {
      EXPECT_TRUE(f.ok()) << n << ": " << f.status().to_string();
      continue;
    }
    ASSERT_FALSE(f.ok()) << "truncated to " << n << " bytes parsed";
    EXPECT_EQ(f.status().code(), ErrorCode::kFormat);
    EXPECT_NE(f.status().message().find(" at offset "), std::string::npos) << f.status().message();
  }
}

// Every byte of the header and metadata set to a few nasty values: any outcome but a crash.
TEST(GgufCorrupt, EveryByteMutationReturns) {
  const auto base = valid_file();
  auto full = GgufFile::parse(base);
  ASSERT_TRUE(full.ok());
  int failures = 0;
  for (size_t i = 0; i < full->data_offset(); ++i) {
    for (uint8_t v : {0x00, 0x01, 0x7f, 0x80, 0xff}) {
      auto bytes = base;
      if (bytes[i] == v) continue;
      bytes[i] = v;
      auto f = GgufFile::parse(bytes, "m.gguf");
      if (!f.ok()) {
        ++failures;
        EXPECT_EQ(f.status().message().rfind("gguf: m.gguf: ", 0), 0u) << f.status().message();
        continue;
      }
      for (const auto& [key, value] : f->metadata()) (void)value.to_display_string();
      for (const auto& t : f->tensors()) ASSERT_LE(t.data + t.n_bytes, bytes.data() + bytes.size());
    }
  }
  EXPECT_GT(failures, 100);  // most mutations of lengths and types are caught
}

TEST(GgufCorrupt, HeaderFields) {
  expect_error({}, "magic (4 bytes) runs past the end", 0);
  GgufBytes magic;
  magic.raw("GGML", 4).u32(3).u64(0).u64(0);
  expect_error(magic.span(), "not \"GGUF\"", 0);
  GgufBytes v1;
  v1.header(0, 0, 1);
  expect_error(v1.span(), "version 1 is not supported", 4, ErrorCode::kUnsupported);
  GgufBytes v4;
  v4.header(0, 0, 4);
  expect_error(v4.span(), "version 4 is not supported", 4, ErrorCode::kUnsupported);
  GgufBytes be;
  be.header(0, 0, 0x03000000);
  expect_error(be.span(), "big-endian", 4, ErrorCode::kUnsupported);
  GgufBytes kv_count;
  kv_count.header(0, uint64_t{1} << 60).zeros(64);
  expect_error(kv_count.span(), "metadata count 1152921504606846976", 16);
  GgufBytes tensor_count;
  tensor_count.header(uint64_t{1} << 60, 0).zeros(64);
  expect_error(tensor_count.span(), "tensor count 1152921504606846976", 8);
}

TEST(GgufCorrupt, KeysAndValueTypes) {
  GgufBytes key_len;
  key_len.header(0, 1).u64(uint64_t{1} << 60).zeros(32);
  expect_error(key_len.span(), "metadata #0: key length 1152921504606846976 exceeds the 32 bytes left", 24);
  GgufBytes empty_key;
  empty_key.header(0, 1).str("").type(GgufType::kU8).u8(0).zeros(4);
  expect_error(empty_key.span(), "key length 0 is outside", 24);
  GgufBytes bad_type;
  bad_type.header(0, 1).str("k").u32(13).zeros(8);
  expect_error(bad_type.span(), "metadata #0 'k': value type 13 is not a GGUF value type", 33);
  GgufBytes dup;
  dup.header(0, 2).kv_u32("k", 1).kv_u32("k", 2);
  expect_error(dup.span(), "metadata #1 'k': duplicate key (first defined by metadata #0)", 41);
  GgufBytes str_len;
  str_len.header(0, 1).str("k").type(GgufType::kString).u64(~uint64_t{0});
  expect_error(str_len.span(), "string length 18446744073709551615 exceeds the 0 bytes left", 37);
  GgufBytes boolean;
  boolean.header(0, 1).str("k").type(GgufType::kBool).u8(2);
  expect_error(boolean.span(), "bool value 2 is neither 0 nor 1", 37);
  GgufBytes scalar_cut;
  scalar_cut.header(0, 1).str("k").type(GgufType::kF64).zeros(7);
  expect_error(scalar_cut.span(), "f64 value (8 bytes) runs past the end", 37);
}

TEST(GgufCorrupt, ArrayLengthsAreBoundedByTheBytesLeft) {
  GgufBytes huge;
  huge.header(0, 1).str("k").type(GgufType::kArray).type(GgufType::kU8).u64(uint64_t{1} << 60).zeros(16);
  expect_error(huge.span(), "array length 1152921504606846976 of u8 needs at least 1 bytes per element", 41);
  // 16 bytes left could hold 16 u8 but not 16 strings (8 bytes each, for the length).
  GgufBytes strings;
  strings.header(0, 1).str("k").type(GgufType::kArray).type(GgufType::kString).u64(16).zeros(16);
  expect_error(strings.span(), "array length 16 of string needs at least 8 bytes", 41);
  GgufBytes elem_type;
  elem_type.header(0, 1).str("k").type(GgufType::kArray).u32(99).u64(0);
  expect_error(elem_type.span(), "'k': array element type 99 is not a GGUF value type", 37);
  GgufBytes elem;
  elem.header(0, 1).str("k").type(GgufType::kArray).type(GgufType::kString).u64(2).str("ok").u64(99);
  expect_error(elem.span(), "metadata #0 'k'[1]: string length 99 exceeds the 0 bytes left", 59);
}

TEST(GgufCorrupt, TheElementBudgetCapsTotalArrayElements) {
  // Two arrays that each fit the file but together pass tally's per-file element limit; the
  // second is refused before anything is allocated for it.
  const uint64_t rest = kGgufMaxArrayElements - 9;
  GgufBytes b;
  b.header(0, 2);
  b.str("a").type(GgufType::kArray).type(GgufType::kU8).u64(10).zeros(10);
  b.str("b").type(GgufType::kArray).type(GgufType::kU8).u64(rest).zeros(rest);
  expect_error(b.span(), "metadata #1 'b': array length 8388599 exceeds tally's limit of 8388608", 76);
}

// Builds `depth` nested arrays of one element each, ending in a u8.
GgufBytes nested(int depth) {
  GgufBytes b;
  b.header(0, 1).str("deep").type(GgufType::kArray);
  for (int i = 1; i < depth; ++i) b.type(GgufType::kArray).u64(1);
  b.type(GgufType::kU8).u64(1).u8(5);
  return b;
}

TEST(GgufCorrupt, NestedArrayDepthIsCapped) {
  const GgufBytes deepest = nested(kGgufMaxArrayDepth);  // must outlive the parsed file
  auto ok = GgufFile::parse(deepest.span());
  ASSERT_TRUE(ok.ok()) << ok.status().to_string();
  EXPECT_EQ(ok->find("deep")->to_display_string(), "[[[[[[[[5]]]]]]]]");
  expect_error(nested(kGgufMaxArrayDepth + 1).span(), "'deep'[0][0][0][0][0][0][0][0]: arrays nested deeper than 8");
  expect_error(nested(100000).span(), "arrays nested deeper than 8 levels");
}

TEST(GgufCorrupt, Alignment) {
  GgufBytes zero;
  zero.header(0, 1).kv_u32("general.alignment", 0);
  expect_error(zero.span(), "general.alignment 0 is not a nonzero power of two", 53);
  GgufBytes odd;
  odd.header(0, 1).kv_u32("general.alignment", 48);
  expect_error(odd.span(), "general.alignment 48 is not a nonzero power of two", 53);
  GgufBytes type;
  type.header(0, 1).str("general.alignment").type(GgufType::kU64).u64(32);
  expect_error(type.span(), "general.alignment has type u64, expected u32", 53);
}

// One tensor info after a header with no metadata (infos start at offset 24).
GgufBytes one_tensor(std::vector<uint64_t> dims, uint32_t type, uint64_t offset, size_t data_bytes) {
  GgufBytes b;
  b.header(1, 0).tensor("w", std::move(dims), type, offset).pad(32).zeros(data_bytes);
  return b;
}

TEST(GgufCorrupt, TensorInfoFields) {
  GgufBytes name;
  name.header(1, 0).tensor(std::string(64, 'n'), {1}, 0, 0).pad(32).zeros(4);
  expect_error(name.span(), "tensor info #0: name length 64 is outside 1..63", 24);
  GgufBytes dup;
  dup.header(2, 0).tensor("w", {1}, 0, 0).tensor("w", {1}, 0, 32).pad(32).zeros(64);
  expect_error(dup.span(), "tensor info #1 'w': duplicate tensor name", 57);
  expect_error(one_tensor({}, 0, 0, 0).span(), "'w': dimension count 0 is outside 1..4", 33);
  expect_error(one_tensor({1, 1, 1, 1, 1}, 0, 0, 4).span(), "dimension count 5 is outside 1..4", 33);
  expect_error(one_tensor({uint64_t{1} << 63}, 0, 0, 0).span(), "dimension 0 is 9223372036854775808", 37);
  expect_error(one_tensor({uint64_t{1} << 32, uint64_t{1} << 32}, 0, 0, 0).span(),
               "element count overflows int64 at dimension 1", 45);
  expect_error(one_tensor({uint64_t{1} << 40, uint64_t{1} << 22}, 0, 0, 0).span(), "byte size overflows int64", 53);
  expect_error(one_tensor({4}, 4, 0, 16).span(), "type 4 is not a ggml tensor type", 45);
  expect_error(one_tensor({4}, 0xffffffff, 0, 16).span(), "type 4294967295 is not a ggml tensor type", 45);
  expect_error(one_tensor({33}, 2, 0, 64).span(), "row length 33 is not a multiple of q4_0's block of 32", 45);
  GgufBytes cut;
  cut.header(1, 0).str("w").u32(4).u64(4).u64(1).u64(1);  // the 4th dimension is missing
  expect_error(cut.span(), "'w': dimension (8 bytes) runs past the end", 61);
}

TEST(GgufCorrupt, TensorDataPlacement) {
  expect_error(one_tensor({4}, 0, 4, 64).span(), "data offset 4 is not a multiple of the alignment 32", 24);
  expect_error(one_tensor({4}, 0, 0, 15).span(), "data [0, 0+16) runs past the end of the data section (15 bytes", 24);
  expect_error(one_tensor({4}, 0, uint64_t{1} << 63, 64).span(), "runs past the end of the data section", 24);
  expect_error(one_tensor({uint64_t{1} << 40}, 0, 0, 64).span(), "runs past the end of the data section", 24);
  GgufBytes no_data;
  no_data.header(1, 0).tensor("w", {4}, 0, 0);
  expect_error(no_data.span(), "data section: data section would start at 64, past the end of the file (57 bytes)", 57);
  GgufBytes overlap;
  overlap.header(3, 0)
      .tensor("a", {16}, 0, 0)      // [0, 64)
      .tensor("b", {4}, 0, 96)      // [96, 112)
      .tensor("c", {4}, 0, 32)      // [32, 48): inside a
      .pad(32)
      .zeros(128);
  expect_error(overlap.span(), "tensor info #2 'c': data [32, 48) overlaps tensor 'a' [0, 64)", 90);
  // Two empty tensors at one offset share nothing: that is fine.
  GgufBytes empty;
  empty.header(2, 0).tensor("a", {0}, 0, 0).tensor("b", {0, 3}, 0, 0).pad(32);
  auto f = GgufFile::parse(empty.span());
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  EXPECT_EQ(f->tensors()[1].n_bytes, 0u);
}

}  // namespace
}  // namespace tally::io
