// The engine end to end on stories260K: a greedy request streams what `Generator` (the
// single-sequence path of `tally generate`) produces, events come in order, usage is right.
#include <gtest/gtest.h>

#include "engine/engine.h"
#include "engine_test_util.h"
#include "model/model.h"
#include "runner/generator.h"
#include "tokenizer/tokenizer.h"

namespace tally_test {
namespace {

using tally::EngineEventKind;
using tally::FinishReason;

std::vector<int32_t> generator_tokens(const std::vector<int32_t>& prompt, int32_t n,
                                      const std::vector<int32_t>& stops) {
  auto model = tally::Model::load(repo_path("models/stories260K.gguf"));
  EXPECT_TRUE(model.ok());
  tally::ThreadPool pool(1);
  tally::Generator gen(**model, pool, 256, 64);
  tally::GenerateRequest req;
  req.prompt = prompt;
  req.max_new_tokens = n;
  req.sampling.temperature = 0.0f;
  req.stop_tokens = stops;
  std::vector<int32_t> out;
  auto st = gen.generate(req, [&](int32_t t) {
    out.push_back(t);
    return true;
  });
  EXPECT_TRUE(st.ok());
  return out;
}

TEST(EngineBasic, GreedyMatchesGeneratorAndEventsAreOrdered) {
  auto engine = make_engine(stories_config());
  ASSERT_TRUE(engine);
  const auto prompt = engine->tokenizer().encode("Once upon a time", true, false);
  std::vector<int32_t> stops;
  for (int32_t id = 0; id < engine->tokenizer().n_vocab(); ++id) {
    if (engine->tokenizer().is_eog(id) || id == engine->tokenizer().bos()) stops.push_back(id);
  }
  const RequestLog log = run_alone(*engine, greedy_request(prompt, 40));
  ASSERT_TRUE(log.done);
  ASSERT_FALSE(log.error) << log.status.to_string();
  const auto expected = generator_tokens(prompt, 40, stops);
  ASSERT_FALSE(expected.empty());
  EXPECT_EQ(log.tokens.at(0), expected);

  // Tokens first, then exactly one kFinished, the last event, with usage and timing.
  ASSERT_GE(log.events.size(), 2u);
  for (size_t i = 0; i + 1 < log.events.size(); ++i) {
    EXPECT_EQ(log.events[i].kind, EngineEventKind::kToken) << i;
    EXPECT_FALSE(log.events[i].request_done);
  }
  const tally::EngineEvent& last = log.events.back();
  EXPECT_EQ(last.kind, EngineEventKind::kFinished);
  EXPECT_TRUE(last.request_done);
  EXPECT_EQ(last.prompt_tokens, static_cast<int32_t>(prompt.size()));
  const int32_t stop_extra = last.finish == FinishReason::kStop ? 1 : 0;
  EXPECT_EQ(last.completion_tokens, static_cast<int32_t>(expected.size()) + stop_extra);
  EXPECT_GT(last.timing.e2e_seconds, 0.0);
  EXPECT_GE(last.timing.e2e_seconds, last.timing.ttft_seconds);
  // The text is the detokenized tokens.
  EXPECT_EQ(log.text.at(0), engine->tokenizer().decode(expected));
  const auto m = engine->metrics();
  EXPECT_EQ(m.kv_blocks_free, m.kv_blocks_total);
  EXPECT_EQ(m.num_requests_running, 0);
}

}  // namespace
}  // namespace tally_test
