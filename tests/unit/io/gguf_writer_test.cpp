// GgufWriter: what it writes parses back to the same keys, types, values and tensor bytes,
// and re-writing llama.cpp's own file reproduces it byte for byte.
#include <climits>
#include <cmath>
#include <cstring>

#include <gtest/gtest.h>

#include "io/gguf.h"
#include "io/gguf_writer.h"
#include "support/test_data.h"

namespace tally::io {
namespace {

std::vector<uint8_t> iota_bytes(size_t n, uint8_t start) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(start + i * 7);
  return v;
}

GgufValue scalar(GgufType t, uint64_t bits) {
  GgufValue v;
  v.type = t;
  v.num.u64 = bits;
  return v;
}

// Two values are the same: type, element type, numbers (bit-exact), strings, items.
void expect_same_value(const GgufValue& a, const GgufValue& b, const std::string& where) {
  ASSERT_EQ(a.type, b.type) << where;
  if (a.type == GgufType::kString) {
    EXPECT_EQ(a.str, b.str) << where;
  } else if (a.type == GgufType::kArray) {
    ASSERT_EQ(a.elem_type, b.elem_type) << where;
    ASSERT_EQ(a.array_size(), b.array_size()) << where;
    for (size_t i = 0; i < a.array_size(); ++i) expect_same_value(a.item(i), b.item(i), where + "[" + std::to_string(i) + "]");
  } else {
    EXPECT_EQ(a.num.u64, b.num.u64) << where;
  }
}

void expect_same_content(const GgufFile& a, const GgufFile& b) {
  ASSERT_EQ(a.metadata().size(), b.metadata().size());
  for (size_t i = 0; i < a.metadata().size(); ++i) {
    EXPECT_EQ(a.metadata()[i].first, b.metadata()[i].first);
    expect_same_value(a.metadata()[i].second, b.metadata()[i].second, std::string(a.metadata()[i].first));
  }
  ASSERT_EQ(a.tensors().size(), b.tensors().size());
  for (size_t i = 0; i < a.tensors().size(); ++i) {
    const GgufTensorInfo& x = a.tensors()[i];
    const GgufTensorInfo& y = b.tensors()[i];
    EXPECT_EQ(x.name, y.name);
    EXPECT_EQ(x.raw_type, y.raw_type);
    EXPECT_EQ(x.dims, y.dims);
    ASSERT_EQ(x.n_bytes, y.n_bytes) << x.name;
    EXPECT_EQ(std::memcmp(x.data, y.data, x.n_bytes), 0) << x.name;
  }
}

TEST(GgufWriter, RoundTripsEveryTypeAndTensor) {
  GgufWriter w;
  w.set_string("general.architecture", "toy");
  w.set_u8("t.u8", 200);
  w.set_i8("t.i8", -100);
  w.set_u16("t.u16", 60000);
  w.set_i16("t.i16", -30000);
  w.set_u32("t.u32", 4000000000u);
  w.set_i32("t.i32", -2000000000);
  w.set_u64("t.u64", ~uint64_t{0});
  w.set_i64("t.i64", INT64_MIN);
  w.set_f32("t.f32", 0.1f);
  w.set_f64("t.f64", 0.1);
  w.set_bool("t.bool", true);
  w.set_string_array("t.strs", {"a", "", std::string("\0b", 2)});
  w.set_f32_array("t.f32s", {1.5f, -0.0f});
  w.set_i32_array("t.i32s", {});
  GgufValue nested;  // [[1, 2], []] of u16
  nested.type = GgufType::kArray;
  nested.elem_type = GgufType::kArray;
  nested.items.resize(2);
  for (auto& inner : nested.items) {
    inner.type = GgufType::kArray;
    inner.elem_type = GgufType::kU16;
  }
  nested.items[0].items = {scalar(GgufType::kU16, 1), scalar(GgufType::kU16, 2)};
  w.set_value("t.nested", nested);

  const auto f32 = iota_bytes(3 * 2 * 4, 1);
  const auto f16 = iota_bytes(5 * 2, 2);
  const auto q8 = iota_bytes(34 * 2, 3);
  ASSERT_TRUE(w.add_tensor("a", DType::kF32, {3, 2}, f32).ok());
  ASSERT_TRUE(w.add_tensor("b", DType::kF16, {5}, f16).ok());
  ASSERT_TRUE(w.add_tensor("c", DType::kQ8_0, {32, 1, 2, 1}, q8).ok());

  const std::vector<uint8_t> bytes = w.to_bytes();
  auto f = GgufFile::parse(bytes);
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  EXPECT_EQ(f->version(), 3u);
  EXPECT_EQ(f->alignment(), 32u);
  ASSERT_EQ(f->metadata().size(), 16u);
  EXPECT_EQ(f->metadata()[0].first, "general.architecture");
  EXPECT_EQ(f->metadata()[15].first, "t.nested");
  EXPECT_EQ(f->get_int("t.u8").value(), 200);
  EXPECT_EQ(f->get_int("t.i8").value(), -100);
  EXPECT_EQ(f->get_int("t.u16").value(), 60000);
  EXPECT_EQ(f->get_int("t.i16").value(), -30000);
  EXPECT_EQ(f->get_int("t.u32").value(), 4000000000);
  EXPECT_EQ(f->get_int("t.i32").value(), -2000000000);
  EXPECT_EQ(f->find("t.u64")->num.u64, ~uint64_t{0});
  EXPECT_EQ(f->get_int("t.i64").value(), INT64_MIN);
  EXPECT_EQ(f->find("t.f32")->type, GgufType::kF32);
  EXPECT_EQ(static_cast<float>(f->get_float("t.f32").value()), 0.1f);
  EXPECT_EQ(f->get_float("t.f64").value(), 0.1);
  EXPECT_TRUE(f->get_bool("t.bool").value());
  EXPECT_EQ(f->get_string_array("t.strs").value(),
            (std::vector<std::string_view>{"a", "", std::string_view("\0b", 2)}));
  auto f32s = f->get_f32_array("t.f32s").value();
  ASSERT_EQ(f32s.size(), 2u);
  EXPECT_TRUE(std::signbit(f32s[1]));
  EXPECT_EQ(f->find("t.i32s")->elem_type, GgufType::kI32);
  EXPECT_EQ(f->find("t.i32s")->array_size(), 0u);
  expect_same_value(*f->find("t.nested"), nested, "t.nested");

  ASSERT_EQ(f->tensors().size(), 3u);
  const std::vector<std::vector<uint8_t>> data = {f32, f16, q8};
  for (size_t i = 0; i < 3; ++i) {
    const GgufTensorInfo& t = f->tensors()[i];
    EXPECT_EQ(t.offset % 32, 0u);
    ASSERT_EQ(t.n_bytes, data[i].size());
    EXPECT_EQ(std::memcmp(t.data, data[i].data(), t.n_bytes), 0);
  }
  EXPECT_EQ(f->tensors()[2].dims, (std::vector<int64_t>{32, 1, 2, 1}));
  EXPECT_EQ(f->tensors()[2].type, DType::kQ8_0);
  EXPECT_EQ(bytes.size() % 32, 0u);  // the last tensor is padded too
  EXPECT_EQ(bytes.back(), 0);
}

TEST(GgufWriter, SettingAKeyTwiceReplacesItInPlace) {
  GgufWriter w;
  w.set_u32("a", 1);
  w.set_u32("b", 2);
  w.set_string("a", "again");
  auto bytes = w.to_bytes();
  auto f = GgufFile::parse(bytes);
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  ASSERT_EQ(f->metadata().size(), 2u);
  EXPECT_EQ(f->metadata()[0].first, "a");
  EXPECT_EQ(f->get_string("a").value(), "again");
}

TEST(GgufWriter, GeneralAlignmentSetsThePadding) {
  GgufWriter w;
  w.set_u32("general.alignment", 256);
  const auto data = iota_bytes(8, 0);
  ASSERT_TRUE(w.add_tensor("x", DType::kF32, {2}, data).ok());
  ASSERT_TRUE(w.add_tensor("y", DType::kF32, {2}, data).ok());
  auto bytes = w.to_bytes();
  auto f = GgufFile::parse(bytes);
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  EXPECT_EQ(f->alignment(), 256u);
  EXPECT_EQ(f->data_offset() % 256, 0u);
  EXPECT_EQ(f->tensors()[1].offset, 256u);
  EXPECT_EQ(bytes.size(), f->data_offset() + 512);
}

TEST(GgufWriter, RejectsBadAlignmentAndBadTensors) {
  GgufWriter w;
  w.set_u32("general.alignment", 48);
  auto st = w.write(tally_test::temp_dir() + "/bad_align.gguf");
  EXPECT_EQ(st.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(st.message().find("power of two"), std::string::npos) << st.message();
  w.set_u64("general.alignment", 64);
  EXPECT_NE(w.write(tally_test::temp_dir() + "/bad_align.gguf").message().find("must be a u32"), std::string::npos);

  GgufWriter t;
  const auto data = iota_bytes(34, 0);
  EXPECT_EQ(t.add_tensor("w", DType::kF32, {4}, data).code(), ErrorCode::kInvalidArgument);    // 16 != 34 bytes
  EXPECT_EQ(t.add_tensor("w", DType::kQ8_0, {33}, data).code(), ErrorCode::kInvalidArgument);  // not a block multiple
  EXPECT_EQ(t.add_tensor("w", DType::kQ8_0, {}, data).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(t.add_tensor("w", DType::kQ8_0, {32, 1, 1, 1, 1}, data).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(t.add_tensor(std::string(64, 'n'), DType::kQ8_0, {32}, data).code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(t.add_tensor("w", static_cast<DType>(4), {32}, data).code(), ErrorCode::kInvalidArgument);
  ASSERT_TRUE(t.add_tensor("w", DType::kQ8_0, {32}, data).ok());
  EXPECT_EQ(t.add_tensor("w", DType::kQ8_0, {32}, data).code(), ErrorCode::kInvalidArgument);  // duplicate
}

TEST(GgufWriter, WriteProducesTheSameBytesAsToBytes) {
  GgufWriter w;
  w.set_string("general.name", "file");
  ASSERT_TRUE(w.add_tensor("x", DType::kF32, {3}, iota_bytes(12, 9)).ok());
  const std::string path = tally_test::temp_dir() + "/writer_file.gguf";
  ASSERT_TRUE(w.write(path).ok());
  const auto expected = w.to_bytes();
  const std::string got = tally_test::read_file(path);
  ASSERT_EQ(got.size(), expected.size());
  EXPECT_EQ(std::memcmp(got.data(), expected.data(), got.size()), 0);
  auto f = GgufFile::open(path);
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  EXPECT_EQ(f->get_string("general.name").value(), "file");
  EXPECT_EQ(w.write("/nonexistent-dir/x.gguf").code(), ErrorCode::kIo);
}

TEST(GgufWriter, RewritingStories260KReproducesLlamaCppsFile) {
  TALLY_REQUIRE_SHARED("models/stories260K/stories260K.gguf", path);
  auto src = GgufFile::open(path);
  ASSERT_TRUE(src.ok()) << src.status().to_string();
  GgufWriter w;
  for (const auto& [key, value] : src->metadata()) w.set_value(std::string(key), value);
  for (const GgufTensorInfo& t : src->tensors()) {
    ASSERT_TRUE(w.add_tensor(std::string(t.name), t.type, t.dims, t.bytes()).ok());
  }
  const std::vector<uint8_t> bytes = w.to_bytes();
  auto copy = GgufFile::parse(bytes);
  ASSERT_TRUE(copy.ok()) << copy.status().to_string();
  expect_same_content(*src, *copy);
  // Same layout rules as llama.cpp's writer: the very same file.
  const std::string original = tally_test::read_file(path);
  ASSERT_EQ(bytes.size(), original.size());
  EXPECT_EQ(std::memcmp(bytes.data(), original.data(), bytes.size()), 0);
}

}  // namespace
}  // namespace tally::io
