// The engine end to end on stories260K: a greedy request streams what a plain greedy loop over
// Model::forward produces (one sequence, no scheduler), events come in order, usage is right.
// (The golden tests compare `tally generate`, the engine core, with llama2.c's run.c.)
#include <gtest/gtest.h>

#include <algorithm>

#include "engine/engine.h"
#include "engine/engine_core.h"
#include "engine_test_util.h"
#include "model/batch.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

namespace tally_test {
namespace {

using tally::EngineEventKind;
using tally::FinishReason;

// Greedy tokens after `prompt`, at most n, ending before a stop token: the prompt in one
// forward, then one forward per token, the KV in blocks 0, 1, 2... of one sequence.
std::vector<int32_t> greedy_reference(const std::vector<int32_t>& prompt, int32_t n,
                                      const std::vector<int32_t>& stops) {
  auto model = tally::Model::load(repo_path("models/stories260K.gguf"));
  EXPECT_TRUE(model.ok());
  const tally::ModelConfig& config = (*model)->config();
  constexpr int32_t kPositions = 256, kBlock = 16;
  auto kv = tally::KvStorage::create(
      tally::KvStorageShape::for_model(config, kPositions / kBlock, kBlock, tally::DType::kF32));
  EXPECT_TRUE(kv.ok());
  tally::ForwardScratch scratch(config, kPositions);
  tally::ThreadPool pool(1);
  std::vector<int32_t> table(kPositions / kBlock);
  for (size_t b = 0; b < table.size(); ++b) table[b] = static_cast<int32_t>(b);
  const tally::BatchSequence seq{table};
  std::vector<float> logits(static_cast<size_t>(config.n_vocab));
  std::vector<int32_t> history = prompt, positions, seq_index;
  std::vector<int32_t> out;
  size_t done = 0;  // tokens of history already in the KV
  while (static_cast<int32_t>(out.size()) < n) {
    const auto count = static_cast<int32_t>(history.size() - done);
    positions.resize(static_cast<size_t>(count));
    seq_index.assign(static_cast<size_t>(count), 0);
    for (int32_t i = 0; i < count; ++i) positions[static_cast<size_t>(i)] = static_cast<int32_t>(done) + i;
    const int32_t last = count - 1;
    tally::Batch batch;
    batch.tokens = std::span<const int32_t>(history.data() + done, static_cast<size_t>(count));
    batch.positions = positions;
    batch.seq_index = seq_index;
    batch.seqs = std::span<const tally::BatchSequence>(&seq, 1);
    batch.logit_rows = std::span<const int32_t>(&last, 1);
    EXPECT_TRUE((*model)->forward(batch, *kv, scratch, pool, logits.data()).ok());
    done = history.size();
    const auto best = static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    if (std::count(stops.begin(), stops.end(), best)) break;
    out.push_back(best);
    history.push_back(best);
  }
  return out;
}

TEST(EngineBasic, GreedyMatchesAPlainForwardLoopAndEventsAreOrdered) {
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
  const auto expected = greedy_reference(prompt, 40, stops);
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

// The synchronous core, stepped on this thread (as `tally generate` and the bench drive it):
// the same tokens, and the sample's text continues a BOS-only prompt without a leading space.
TEST(EngineBasic, CoreSteppedByHandMatchesTheReference) {
  auto core = tally::EngineCore::create(stories_config());
  ASSERT_TRUE(core.ok()) << core.status().to_string();
  const tally::Tokenizer& tok = (*core)->tokenizer();
  std::vector<int32_t> stops;
  for (int32_t id = 0; id < tok.n_vocab(); ++id) {
    if (tok.is_eog(id) || id == tok.bos()) stops.push_back(id);
  }
  const std::vector<int32_t> prompt{tok.bos()};
  tally::EngineRequest r = greedy_request(prompt, 30);
  ASSERT_TRUE((*core)->check_request(r).ok());
  Collector c;
  (*core)->add_request(7, r, 0, c.callback(0), tally::EngineClock::now());
  int steps = 0;
  while ((*core)->has_unfinished()) {
    (*core)->step();
    ++steps;
  }
  const RequestLog log = c.log(0);
  ASSERT_TRUE(log.done);
  ASSERT_FALSE(log.error) << log.status.to_string();
  const auto expected = greedy_reference(prompt, 30, stops);
  ASSERT_FALSE(expected.empty());
  EXPECT_EQ(log.tokens.at(0), expected);
  EXPECT_EQ(steps, static_cast<int>(log.events.back().completion_tokens));  // one token a step
  std::string text = tok.decode(expected);
  if (!text.empty() && text[0] == ' ') text.erase(0, 1);  // run.c's first piece after BOS
  EXPECT_EQ(log.text.at(0), text);
  EXPECT_NE(log.text.at(0).substr(0, 1), " ");
}

}  // namespace
}  // namespace tally_test
