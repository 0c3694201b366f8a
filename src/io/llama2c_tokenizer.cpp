// llama2.c tokenizer .bin -> GGUF tokenizer arrays (SentencePiece conventions).
#include <cstring>

#include <fmt/format.h>

#include "io/llama2c.h"

namespace tally::io {

namespace {

constexpr std::string_view kWordMarker = "\xE2\x96\x81";  // U+2581, SentencePiece's space
constexpr int32_t kTypeNormal = 1;
constexpr int32_t kTypeUnknown = 2;
constexpr int32_t kTypeControl = 3;
constexpr int32_t kTypeByte = 6;

bool is_byte_piece(std::string_view p) {  // "<0xAB>"
  auto hex = [](char c) { return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'F'); };
  return p.size() == 6 && p.substr(0, 3) == "<0x" && hex(p[3]) && hex(p[4]) && p[5] == '>';
}

std::string to_piece(std::string_view raw, int32_t id) {
  // llama2.c's exporter writes BOS/EOS as "\n<s>\n" / "\n</s>\n".
  if ((id == 1 || id == 2) && raw.size() >= 2 && raw.front() == '\n' && raw.back() == '\n') {
    raw = raw.substr(1, raw.size() - 2);
  }
  std::string out;
  out.reserve(raw.size());
  for (char c : raw) {
    if (c == ' ') {
      out += kWordMarker;
    } else {
      out += c;
    }
  }
  return out;
}

int32_t piece_type(std::string_view piece, int32_t id) {
  if (id == 0 && piece == "<unk>") return kTypeUnknown;
  if (id == 1 || id == 2) return kTypeControl;
  if (is_byte_piece(piece)) return kTypeByte;
  return kTypeNormal;
}

}  // namespace

Result<Llama2cVocab> llama2c_read_tokenizer(std::span<const uint8_t> bytes, int32_t vocab_size,
                                            std::string_view name) {
  auto fail = [&](size_t offset, std::string what) {
    return make_error(ErrorCode::kFormat, "llama2c tokenizer: {}: {} at offset {}", name, what, offset);
  };
  size_t pos = 0;
  auto read_i32 = [&](int32_t* v) {
    if (bytes.size() - pos < 4) return false;
    std::memcpy(v, bytes.data() + pos, 4);
    pos += 4;
    return true;
  };
  int32_t max_len = 0;
  if (!read_i32(&max_len)) return fail(0, "file too short for max_token_length");
  if (max_len <= 0) return fail(0, fmt::format("max_token_length {} is not positive", max_len));
  if (vocab_size <= 0) return fail(0, fmt::format("vocabulary size {} is not positive", vocab_size));
  // Each token needs at least 8 bytes (score + length): bounds vocab_size before reserving.
  if (static_cast<uint64_t>(vocab_size) > (bytes.size() - pos) / 8) {
    return fail(pos, fmt::format("{} tokens need at least {} bytes but the file has {} left", vocab_size,
                                 uint64_t{8} * static_cast<uint64_t>(vocab_size), bytes.size() - pos));
  }
  Llama2cVocab vocab;
  vocab.pieces.reserve(vocab_size);
  vocab.scores.reserve(vocab_size);
  vocab.types.reserve(vocab_size);
  for (int32_t id = 0; id < vocab_size; ++id) {
    const size_t at = pos;
    float score = 0;
    int32_t len = 0;
    if (bytes.size() - pos < 8) return fail(at, fmt::format("token {}: file ends before its score and length", id));
    std::memcpy(&score, bytes.data() + pos, 4);
    std::memcpy(&len, bytes.data() + pos + 4, 4);
    pos += 8;
    if (len < 0 || len > max_len) {
      return fail(at + 4, fmt::format("token {}: length {} is outside 0..max_token_length ({})", id, len, max_len));
    }
    if (static_cast<size_t>(len) > bytes.size() - pos) {
      return fail(at + 4, fmt::format("token {}: length {} runs past the end of the file", id, len));
    }
    std::string piece = to_piece({reinterpret_cast<const char*>(bytes.data() + pos), static_cast<size_t>(len)}, id);
    pos += len;
    vocab.types.push_back(piece_type(piece, id));
    vocab.pieces.push_back(std::move(piece));
    vocab.scores.push_back(score);
  }
  if (pos != bytes.size()) {
    return fail(pos, fmt::format("{} bytes left after the {} tokens the model's vocabulary has", bytes.size() - pos,
                                 vocab_size));
  }
  return vocab;
}

}  // namespace tally::io
