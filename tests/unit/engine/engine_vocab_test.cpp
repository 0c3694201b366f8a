// A model whose tokenizer names more tokens than it has embedding/output rows is refused at
// load: those ids would index past the logits (a stop token's ban writes there every step).
#include <gtest/gtest.h>

#include "engine/engine_core.h"
#include "engine_test_util.h"
#include "io/gguf.h"
#include "io/gguf_writer.h"

namespace tally_test {
namespace {

// stories260K with `extra` tokens appended to tokenizer.ggml.tokens (and its scores and
// types); the last one is made an end-of-generation token, the kind the engine bans by id.
std::string write_stories_with_extra_tokens(int32_t extra) {
  auto src = tally::io::GgufFile::open(repo_path("models/stories260K.gguf"));
  EXPECT_TRUE(src.ok()) << src.status().to_string();
  tally::io::GgufWriter w;
  auto tokens = src->get_string_array("tokenizer.ggml.tokens");
  auto scores = src->get_f32_array("tokenizer.ggml.scores");
  auto types = src->get_int_array("tokenizer.ggml.token_type");
  EXPECT_TRUE(tokens.ok() && scores.ok() && types.ok());
  const auto n = static_cast<int32_t>(tokens->size());
  for (const auto& [key, value] : src->metadata()) {
    if (key == "tokenizer.ggml.tokens" || key == "tokenizer.ggml.scores" ||
        key == "tokenizer.ggml.token_type" || key == "tokenizer.ggml.eos_token_id") {
      continue;
    }
    w.set_value(std::string(key), value);
  }
  std::vector<std::string> new_tokens(tokens->begin(), tokens->end());
  std::vector<int32_t> new_types(types->begin(), types->end());
  for (int32_t i = 0; i < extra; ++i) {
    new_tokens.push_back("<extra_" + std::to_string(i) + ">");
    scores->push_back(0.0f);
    new_types.push_back(3);  // control
  }
  w.set_string_array("tokenizer.ggml.tokens", std::move(new_tokens));
  w.set_f32_array("tokenizer.ggml.scores", std::move(*scores));
  w.set_i32_array("tokenizer.ggml.token_type", std::move(new_types));
  w.set_u32("tokenizer.ggml.eos_token_id", static_cast<uint32_t>(n + extra - 1));
  for (const tally::io::GgufTensorInfo& t : src->tensors()) {
    EXPECT_TRUE(w.add_tensor(std::string(t.name), t.type, t.dims, t.bytes()).ok());
  }
  const std::string path = temp_dir() + "/stories_extra_" + std::to_string(extra) + ".gguf";
  EXPECT_TRUE(w.write(path).ok());
  return path;
}

TEST(EngineVocab, TokenizerLargerThanTheEmbeddingIsRefusedAtLoad) {
  tally::EngineConfig c = stories_config();
  c.model_path = write_stories_with_extra_tokens(8);
  auto core = tally::EngineCore::create(c);
  ASSERT_FALSE(core.ok());
  EXPECT_EQ(core.status().code(), tally::ErrorCode::kFormat);
  const std::string& msg = core.status().message();
  EXPECT_NE(msg.find("tokenizer has 520 tokens"), std::string::npos) << msg;
  EXPECT_NE(msg.find("512 embedding/output rows"), std::string::npos) << msg;
}

TEST(EngineVocab, TheSameFileWithoutExtraTokensLoads) {
  // The copy itself is sound: only the extra tokens make the difference above.
  tally::EngineConfig c = stories_config();
  c.model_path = write_stories_with_extra_tokens(0);
  auto core = tally::EngineCore::create(c);
  ASSERT_TRUE(core.ok()) << core.status().to_string();
}

}  // namespace
}  // namespace tally_test
