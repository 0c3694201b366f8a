// The engine's flags, declared once for `tally serve` and `tally bench throughput`: parsed by
// CLI11 from engine_flags_add(), converted by engine_flags_to_config() with errors that name
// the flag.
#include "engine/engine_flags.h"

#include <CLI/CLI.hpp>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace {

using tally::EngineConfig;
using tally::EngineFlags;

// Parses `args` into `flags`; a CLI11 refusal becomes InvalidArgument with its text.
tally::Status parse(const std::vector<std::string>& args, EngineFlags& flags) {
  CLI::App app;
  tally::engine_flags_add(app, flags);
  std::vector<const char*> argv = {"cmd"};
  for (const auto& a : args) argv.push_back(a.c_str());
  try {
    app.parse(static_cast<int>(argv.size()), argv.data());
  } catch (const CLI::ParseError& e) {
    return tally::Status(tally::ErrorCode::kInvalidArgument, e.what());
  }
  return {};
}

tally::Result<EngineConfig> config_of(const std::vector<std::string>& args) {
  EngineFlags flags;
  TALLY_RETURN_IF_ERROR(parse(args, flags));
  return tally::engine_flags_to_config(flags);
}

void expect_refused(const std::vector<std::string>& args, const std::string& message) {
  SCOPED_TRACE(args.front() + " " + args.back());
  auto config = config_of(args);
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.status().code(), tally::ErrorCode::kInvalidArgument);
  EXPECT_NE(config.status().message().find(message), std::string::npos)
      << config.status().message();
}

TEST(EngineFlags, DefaultsAreTheEngineConfigDefaults) {
  auto config = config_of({});
  ASSERT_TRUE(config.ok()) << config.status().message();
  const EngineConfig d;
  EXPECT_EQ(config->threads, d.threads);
  EXPECT_EQ(config->max_batched_tokens, d.max_batched_tokens);
  EXPECT_EQ(config->max_seqs, d.max_seqs);
  EXPECT_EQ(config->max_model_len, d.max_model_len);
  EXPECT_EQ(config->block_size, d.block_size);
  EXPECT_EQ(config->kv_type, d.kv_type);
  EXPECT_EQ(config->kv_cache_memory, 0);
  EXPECT_EQ(config->memory_budget, 0);
  EXPECT_FALSE(config->static_batching);
}

TEST(EngineFlags, EveryFlagLandsInTheConfig) {
  auto config = config_of({"-t", "2", "--max-batched-tokens", "128", "--max-seqs", "8",
                           "--max-model-len", "256", "--block-size", "32", "--kv-type", "bf16",
                           "--kv-cache-memory", "16MiB", "--memory-budget", "1GB", "--scheduler",
                           "static"});
  ASSERT_TRUE(config.ok()) << config.status().message();
  EXPECT_EQ(config->threads, 2);
  EXPECT_EQ(config->max_batched_tokens, 128);
  EXPECT_EQ(config->max_seqs, 8);
  EXPECT_EQ(config->max_model_len, 256);
  EXPECT_EQ(config->block_size, 32);
  EXPECT_EQ(config->kv_type, tally::DType::kBF16);
  EXPECT_EQ(config->kv_cache_memory, int64_t{16} << 20);
  EXPECT_EQ(config->memory_budget, int64_t{1000000000});
  EXPECT_TRUE(config->static_batching);
}

TEST(EngineFlags, OffloadFlagsLandInTheConfig) {
  auto off = config_of({});
  ASSERT_TRUE(off.ok());
  EXPECT_EQ(off->kv_offload_memory, 0);
  EXPECT_TRUE(off->kv_offload_dir.empty());
  EXPECT_FALSE(off->swap_preemption);
  auto config = config_of({"--kv-offload-memory", "2GiB", "--kv-offload-dir", "/tmp/kv",
                           "--kv-offload-disk", "10GiB", "--preemption-mode", "swap"});
  ASSERT_TRUE(config.ok()) << config.status().message();
  EXPECT_EQ(config->kv_offload_memory, int64_t{2} << 30);
  EXPECT_EQ(config->kv_offload_dir, "/tmp/kv");
  EXPECT_EQ(config->kv_offload_disk, int64_t{10} << 30);
  EXPECT_TRUE(config->swap_preemption);
  expect_refused({"--preemption-mode", "drop"},
                 "--preemption-mode must be recompute or swap, got 'drop'");
  expect_refused({"--kv-offload-memory", "lots"}, "--kv-offload-memory: memory size 'lots'");
  expect_refused({"--kv-offload-disk", "1X"}, "--kv-offload-disk: memory size '1X'");
}

TEST(EngineFlags, CommandsOwnFieldsPassThrough) {
  EngineFlags flags;
  flags.config.model_path = "m.gguf";  // -m is each command's own flag
  flags.config.max_waiting = 7;        // serve's --max-queue
  ASSERT_TRUE(parse({"--threads", "3"}, flags).ok());
  auto config = tally::engine_flags_to_config(flags);
  ASSERT_TRUE(config.ok()) << config.status().message();
  EXPECT_EQ(config->model_path, "m.gguf");
  EXPECT_EQ(config->max_waiting, 7);
  EXPECT_EQ(config->threads, 3);
}

TEST(EngineFlags, BadValuesNameTheFlag) {
  expect_refused({"--kv-type", "f8"}, "--kv-type: unknown kv type 'f8'");
  expect_refused({"--kv-cache-memory", "lots"}, "--kv-cache-memory: memory size 'lots'");
  expect_refused({"--kv-cache-memory", ""}, "--kv-cache-memory: memory size ''");
  expect_refused({"--memory-budget", "8G"}, "--memory-budget: memory size '8G': unit 'g' is");
  expect_refused({"--scheduler", "fifo"}, "--scheduler must be continuous or static, got 'fifo'");
  expect_refused({"--threads", "-1"}, "--threads");
  expect_refused({"--max-batched-tokens", "0"}, "--max-batched-tokens");
  expect_refused({"--max-seqs", "0"}, "--max-seqs");
  expect_refused({"--max-model-len", "-5"}, "--max-model-len");
  expect_refused({"--block-size", "0"}, "--block-size");
}

TEST(EngineFlags, SpeculativeFlagsLandInTheConfig) {
  auto plain = config_of({});  // the default: auto, adaptive draft lengths
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->spec.mode, tally::SpecMode::kAuto);
  EXPECT_EQ(plain->spec.draft_length, tally::DraftLengthRule::kAdaptive);
  auto config = config_of({"--speculative", "ngram", "--ngram-min", "2", "--ngram-max", "5",
                           "--num-speculative-tokens", "7", "--draft-length", "fixed"});
  ASSERT_TRUE(config.ok()) << config.status().message();
  EXPECT_EQ(config->spec.mode, tally::SpecMode::kNgram);
  EXPECT_EQ(config->spec.ngram_min, 2);
  EXPECT_EQ(config->spec.ngram_max, 5);
  EXPECT_EQ(config->spec.num_speculative_tokens, 7);
  EXPECT_EQ(config->spec.draft_length, tally::DraftLengthRule::kFixed);
  expect_refused({"--draft-length", "random"}, "--draft-length must be adaptive or fixed");
  expect_refused({"--speculative", "eagle"}, "--speculative must be off, ngram, draft or auto");
  expect_refused({"--speculative", "draft"}, "--speculative draft needs --draft-model");
  expect_refused({"--speculative", "ngram", "--draft-model", "small.gguf"},
                 "--draft-model needs --speculative draft");
  auto draft = config_of({"--speculative", "draft", "--draft-model", "small.gguf"});
  ASSERT_TRUE(draft.ok()) << draft.status().message();
  EXPECT_EQ(draft->spec.mode, tally::SpecMode::kDraft);
  EXPECT_EQ(draft->spec.draft_model_path, "small.gguf");
  EXPECT_EQ(draft->spec.sampled_verify, tally::SpecSampledVerify::kToken);  // the default
  auto with_q = config_of({"--speculative", "draft", "--draft-model", "small.gguf",
                           "--spec-sampled-verify", "q"});
  ASSERT_TRUE(with_q.ok()) << with_q.status().message();
  EXPECT_EQ(with_q->spec.sampled_verify, tally::SpecSampledVerify::kQ);
  expect_refused({"--spec-sampled-verify", "exact"}, "--spec-sampled-verify must be token or q");
  auto auto_draft = config_of({"--draft-model", "small.gguf"});  // auto is the default
  ASSERT_TRUE(auto_draft.ok()) << auto_draft.status().message();
  // auto with a draft model: per sequence, n-gram where it matches, else the draft model.
  EXPECT_EQ(auto_draft->spec.mode, tally::SpecMode::kAuto);
  EXPECT_TRUE(auto_draft->spec.has_draft_model());
  expect_refused({"--ngram-min", "3", "--ngram-max", "2"}, "ngram_min <= ngram_max");
  expect_refused({"--num-speculative-tokens", "33"}, "--num-speculative-tokens");
}

TEST(EngineFlags, UnknownKvTypeListsTheValidOnes) {
  for (auto [flag, value] : {std::pair{"--kv-type", "int8"}, {"--kv-type-k", "q4_k"}, {"--kv-type-v", "f8"}}) {
    auto config = config_of({flag, value});
    ASSERT_FALSE(config.ok());
    EXPECT_EQ(config.status().code(), tally::ErrorCode::kInvalidArgument);
    const std::string& m = config.status().message();
    EXPECT_EQ(m.rfind(std::string(flag) + ": ", 0), 0u) << m;
    EXPECT_NE(m.find("f32, f16, bf16, q8_0, q4_0"), std::string::npos) << m;
  }
}

// --kv-type sets K and V; --kv-type-k / --kv-type-v override one each.
TEST(EngineFlags, KvTypeOverridesForKAndV) {
  auto both = config_of({"--kv-type", "q8_0"});
  ASSERT_TRUE(both.ok()) << both.status().to_string();
  EXPECT_EQ(both->kv_type, tally::KvTypes(tally::DType::kQ8_0));
  auto split = config_of({"--kv-type", "q4_0", "--kv-type-k", "Q8_0"});
  ASSERT_TRUE(split.ok()) << split.status().to_string();
  EXPECT_EQ(split->kv_type, tally::KvTypes(tally::DType::kQ8_0, tally::DType::kQ4_0));
  auto v_only = config_of({"--kv-type-v", "bf16"});
  ASSERT_TRUE(v_only.ok()) << v_only.status().to_string();
  EXPECT_EQ(v_only->kv_type, tally::KvTypes(tally::DType::kF16, tally::DType::kBF16));
}

TEST(EngineFlags, HelpShowsEachFlagWithItsDefault) {
  CLI::App app;
  EngineFlags flags;
  tally::engine_flags_add(app, flags);
  const std::string help = app.help();
  for (const char* name : {"--threads", "--max-batched-tokens", "--max-seqs", "--max-model-len",
                           "--block-size", "--kv-type", "--kv-type-k", "--kv-type-v",
                           "--kv-cache-memory", "--memory-budget", "--scheduler"}) {
    EXPECT_NE(help.find(name), std::string::npos) << name;
  }
  EXPECT_NE(help.find("TEXT=continuous"), std::string::npos) << help;
  EXPECT_NE(help.find("TEXT=f16"), std::string::npos) << help;
  EXPECT_NE(help.find("INT:POSITIVE=512"), std::string::npos) << help;
}

}  // namespace
