// A model whose every layer has a sliding window (stories260K given
// `llama.attention.sliding_window`, as Mistral 7B v0.1 declares one) drops the KV blocks
// behind the window: the output is the same, bit for bit, as keeping every block, with
// chunked prefill, the prefix cache and n-gram speculation (rollback), while the pool's peak
// use is lower.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "engine/engine_core.h"
#include "engine_test_util.h"
#include "io/gguf.h"
#include "io/gguf_writer.h"

namespace tally_test {
namespace {

std::string write_stories_with_window(int32_t window) {
  auto src = tally::io::GgufFile::open(repo_path("models/stories260K.gguf"));
  EXPECT_TRUE(src.ok()) << src.status().to_string();
  tally::io::GgufWriter w;
  for (const auto& [key, value] : src->metadata()) w.set_value(std::string(key), value);
  w.set_u32("llama.attention.sliding_window", static_cast<uint32_t>(window));
  for (const tally::io::GgufTensorInfo& t : src->tensors())
    EXPECT_TRUE(w.add_tensor(std::string(t.name), t.type, t.dims, t.bytes()).ok());
  const std::string path = temp_dir() + "/stories_window_" + std::to_string(window) + ".gguf";
  EXPECT_TRUE(w.write(path).ok());
  return path;
}

struct WindowRun {
  std::map<tally::RequestId, std::vector<int32_t>> tokens;
  int32_t peak_used_blocks = 0;
  int32_t window = 0;  // the KV manager's
};

// Greedy requests of several prompt lengths (two share a prompt: prefix-cache hits), stepped
// on an EngineCore until done, recording the pool's peak use.
WindowRun run(const tally::EngineConfig& c) {
  WindowRun out;
  auto core = tally::EngineCore::create(c);
  EXPECT_TRUE(core.ok()) << core.status().to_string();
  if (!core.ok()) return out;
  tally::EngineCore& e = **core;
  out.window = e.kv().sliding_window();
  const std::vector<std::pair<int32_t, uint64_t>> prompts = {{5, 1}, {40, 2}, {40, 2}, {77, 3}, {23, 4}};
  tally::RequestId id = 1;
  for (const auto& [len, seed] : prompts) {
    tally::EngineRequest r = greedy_request(make_prompt(len, seed), 90);
    r.ignore_eos = true;
    EXPECT_TRUE(e.check_request(r).ok());
    e.add_request(id, r, 1, [&out, id](const tally::EngineEvent& ev) {
      if (ev.kind == tally::EngineEventKind::kToken) out.tokens[id].push_back(ev.token);
    }, tally::EngineClock::now());
    ++id;
  }
  while (e.has_unfinished()) {
    e.step();
    const tally::EngineMetrics m = e.metrics();
    out.peak_used_blocks = std::max(out.peak_used_blocks, m.kv_blocks_total - m.kv_blocks_free);
    const tally::Status inv = e.kv().check_invariants();
    EXPECT_TRUE(inv.ok()) << inv.to_string();
  }
  return out;
}

tally::EngineConfig window_config(const std::string& path, bool spec) {
  tally::EngineConfig c = stories_config();
  c.model_path = path;
  c.block_size = 4;
  c.max_batched_tokens = 24;  // chunked prefill of the longer prompts
  if (spec) {
    c.spec.mode = tally::SpecMode::kNgram;
    c.spec.ngram_min = 1;
    c.spec.ngram_max = 3;
    c.spec.num_speculative_tokens = 4;
    c.spec.draft_length = tally::DraftLengthRule::kFixed;
  }
  return c;
}

TEST(EngineWindow, DroppingBlocksBehindTheWindowKeepsOutputBitForBit) {
  const std::string path = write_stories_with_window(20);
  for (const bool spec : {false, true}) {
    SCOPED_TRACE(spec ? "ngram speculation" : "plain decode");
    tally::EngineConfig c = window_config(path, spec);
    const WindowRun dropping = run(c);
    c.keep_out_of_window_kv = true;
    const WindowRun keeping = run(c);
    EXPECT_EQ(dropping.window, 20);
    EXPECT_EQ(keeping.window, 0);
    ASSERT_EQ(dropping.tokens.size(), 5u);
    for (const auto& [id, tokens] : keeping.tokens) {
      EXPECT_EQ(tokens.size(), 90u) << id;
      EXPECT_EQ(dropping.tokens.at(id), tokens) << "request " << id;
    }
    // Five sequences of up to 167 tokens keep every block when nothing is dropped; dropping
    // holds about (20 + 24) / 4 + 1 per sequence.
    EXPECT_LT(dropping.peak_used_blocks, keeping.peak_used_blocks);
    EXPECT_LE(dropping.peak_used_blocks, 5 * 13);
  }
}

// The window is applied (the output differs from full attention), so the run above exercises
// a windowed model.
TEST(EngineWindow, TheWindowChangesTheOutput) {
  tally::EngineConfig c = window_config(write_stories_with_window(20), false);
  const WindowRun windowed = run(c);
  c.model_path = repo_path("models/stories260K.gguf");
  const WindowRun full = run(c);
  EXPECT_EQ(full.window, 0);
  int differ = 0;
  for (const auto& [id, tokens] : full.tokens) differ += windowed.tokens.at(id) != tokens ? 1 : 0;
  EXPECT_GT(differ, 0);
}

}  // namespace
}  // namespace tally_test
