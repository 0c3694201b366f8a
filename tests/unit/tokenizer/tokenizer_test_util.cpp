#include "tokenizer_test_util.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <sstream>

#include "io/gguf.h"
#include "support/test_data.h"

namespace tally_test {

std::vector<std::string> read_vocab_inputs(const std::string& path) {
  static constexpr std::string_view kSeparator = "\n__ggml_vocab_test__\n";
  const std::string all = read_file(path);
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos < all.size()) {
    const size_t hit = all.find(kSeparator, pos);
    if (hit == std::string::npos) {
      out.push_back(all.substr(pos));
      break;
    }
    out.push_back(all.substr(pos, hit - pos));
    pos = hit + kSeparator.size();
  }
  return out;
}

std::vector<std::vector<int32_t>> read_vocab_outputs(const std::string& path) {
  std::istringstream in(read_file(path));
  std::vector<std::vector<int32_t>> out;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::vector<int32_t> ids;
    int32_t id = 0;
    while (words >> id) ids.push_back(id);
    out.push_back(std::move(ids));
  }
  return out;
}

std::unique_ptr<tally::Tokenizer> load_gguf_tokenizer(const std::string& path) {
  auto file = tally::io::GgufFile::open(path);
  EXPECT_TRUE(file.ok()) << file.status().to_string();
  if (!file.ok()) return nullptr;
  auto tok = tally::Tokenizer::from_gguf(*file);
  EXPECT_TRUE(tok.ok()) << tok.status().to_string();
  if (!tok.ok()) return nullptr;
  return std::move(tok).value();
}

std::string escaped(std::string_view s) {
  std::string out;
  for (char c : s) {
    const auto b = static_cast<uint8_t>(c);
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\\') {
      out += "\\\\";
    } else if (b < 0x20 || b >= 0x7F) {
      out += fmt::format("\\x{:02X}", b);
    } else {
      out.push_back(c);
    }
  }
  return out;
}

std::string ids_to_string(const std::vector<int32_t>& ids) {
  return fmt::format("[{}]", fmt::join(ids, " "));
}

}  // namespace tally_test
