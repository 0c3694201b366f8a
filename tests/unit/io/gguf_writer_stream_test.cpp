// GgufWriter::add_tensor_streamed: tensors produced at write time give the same file as
// copied ones, and a producer that fails or miscounts fails the write without leaving a file.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

#include <gtest/gtest.h>

#include "io/gguf.h"
#include "io/gguf_writer.h"

namespace tally::io {
namespace {

std::vector<uint8_t> pattern(size_t n, uint8_t salt) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(i * 7 + salt);
  return v;
}

// Emits `bytes` in chunks of `chunk` (the last one shorter).
GgufWriter::TensorProducer chunked(std::vector<uint8_t> bytes, size_t chunk) {
  return [bytes = std::move(bytes), chunk](GgufWriter::TensorEmit emit) -> Status {
    for (size_t at = 0; at < bytes.size(); at += chunk) {
      const size_t n = std::min(chunk, bytes.size() - at);
      TALLY_RETURN_IF_ERROR(emit(std::span<const uint8_t>(bytes.data() + at, n)));
    }
    return Status::ok_status();
  };
}

std::string temp_path(const char* name) {
  return (std::filesystem::temp_directory_path() / fmt::format("tally_{}_{}.gguf", name, getpid())).string();
}

std::vector<uint8_t> read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

TEST(GgufWriterStream, StreamedTensorsGiveTheSameBytesAsCopiedOnes) {
  const auto a = pattern(4 * 10 * 3, 1);  // f32 [10, 3]
  const auto b = pattern(34 * 2, 2);      // q8_0 [64, 1]
  GgufWriter copied;
  GgufWriter streamed;
  for (GgufWriter* w : {&copied, &streamed}) w->set_string("general.architecture", "llama");
  ASSERT_TRUE(copied.add_tensor("a", DType::kF32, {10, 3}, a).ok());
  ASSERT_TRUE(copied.add_tensor("b", DType::kQ8_0, {64, 1}, b).ok());
  ASSERT_TRUE(streamed.add_tensor_streamed("a", DType::kF32, {10, 3}, chunked(a, 7)).ok());
  ASSERT_TRUE(streamed.add_tensor_streamed("b", DType::kQ8_0, {64, 1}, chunked(b, 1000)).ok());
  EXPECT_EQ(copied.to_bytes(), streamed.to_bytes());

  const std::string path = temp_path("stream");
  ASSERT_TRUE(streamed.write(path).ok());
  EXPECT_EQ(read_all(path), copied.to_bytes());
  auto file = GgufFile::open(path);
  ASSERT_TRUE(file.ok()) << file.status().to_string();
  ASSERT_NE(file->find_tensor("b"), nullptr);
  EXPECT_EQ(std::vector<uint8_t>(file->find_tensor("b")->bytes().begin(), file->find_tensor("b")->bytes().end()), b);
  std::remove(path.c_str());
}

TEST(GgufWriterStream, WrongByteCountOrProducerErrorFailsTheWrite) {
  const std::string path = temp_path("stream_bad");
  GgufWriter short_writer;
  ASSERT_TRUE(short_writer.add_tensor_streamed("t", DType::kF32, {4}, chunked(pattern(12, 0), 5)).ok());
  Status st = short_writer.write(path);
  EXPECT_EQ(st.code(), ErrorCode::kInternal);
  EXPECT_NE(st.message().find("gave 12 bytes, needs 16"), std::string::npos) << st.message();
  EXPECT_FALSE(std::filesystem::exists(path));

  GgufWriter long_writer;
  ASSERT_TRUE(long_writer.add_tensor_streamed("t", DType::kF32, {4}, chunked(pattern(20, 0), 8)).ok());
  EXPECT_EQ(long_writer.write(path).code(), ErrorCode::kInternal);
  EXPECT_FALSE(std::filesystem::exists(path));

  GgufWriter failing;
  ASSERT_TRUE(failing
                  .add_tensor_streamed("t", DType::kF32, {4},
                                       [](GgufWriter::TensorEmit) -> Status {
                                         return make_error(ErrorCode::kOutOfMemory, "no memory");
                                       })
                  .ok());
  st = failing.write(path);
  EXPECT_EQ(st.code(), ErrorCode::kOutOfMemory);
  EXPECT_NE(st.message().find("tensor 't'"), std::string::npos) << st.message();
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST(GgufWriterStream, ChecksShapesLikeAddTensor) {
  GgufWriter w;
  EXPECT_FALSE(w.add_tensor_streamed("t", DType::kQ4_0, {31}, chunked({}, 1)).ok());  // not whole blocks
  EXPECT_FALSE(w.add_tensor_streamed("t", DType::kF32, {4}, nullptr).ok());
  ASSERT_TRUE(w.add_tensor_streamed("t", DType::kF32, {4}, chunked(pattern(16, 0), 16)).ok());
  EXPECT_FALSE(w.add_tensor("t", DType::kF32, {4}, pattern(16, 0)).ok());  // same name
}

}  // namespace
}  // namespace tally::io
