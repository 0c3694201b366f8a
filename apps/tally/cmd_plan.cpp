// tally plan: the memory ledger for a model and settings, without allocating anything.
#include <optional>

#include <fmt/format.h>

#include "cli_common.h"
#include "commands.h"
#include "engine/engine_flags.h"
#include "plan/memory_size.h"
#include "plan/model_spec.h"
#include "plan/plan.h"
#include "plan/plan_presets.h"
#include "plan/plan_report.h"
#include "plan/weight_format.h"
#include "sched/ngram_draft.h"

namespace tally::cli {

namespace {

struct PlanArgs {
  std::string model;
  std::string weights;  // empty = the model's own
  KvTypeFlags kv_type;
  std::string memory;   // empty = no budget
  std::string draft_model;  // empty = none
  std::string kv_offload_memory = "0";  // the host offload tier, as serve's flag
  plan::PlanOptions options;
  bool json = false;
  bool list = false;
};

int run_plan(PlanArgs args) {
  if (args.list) {
    for (const auto& name : plan::plan_preset_names()) fmt::print("{}\n", name);
    return kExitOk;
  }
  auto model = plan::plan_model_from_spec(args.model);
  if (!model.ok()) return report_error(model.status());
  if (!args.weights.empty()) {
    auto w = plan::weight_format_from_name(args.weights);
    if (!w.ok()) return report_error(w.status().with_context("--weights"));
    args.options.weights = *w;
  }
  auto kv = kv_type_flags_parse(args.kv_type);
  if (!kv.ok()) return report_error(kv.status());
  args.options.kv_type = *kv;
  if (!args.memory.empty()) {
    auto m = plan::parse_memory_size(args.memory);
    if (!m.ok()) return report_error(m.status().with_context("--memory"));
    args.options.budget = *m;
  }
  auto offload = plan::parse_memory_size(args.kv_offload_memory);
  if (!offload.ok()) return report_error(offload.status().with_context("--kv-offload-memory"));
  args.options.kv_offload_host_bytes = *offload;
  std::optional<plan::PlanModel> draft;
  if (!args.draft_model.empty()) {
    auto d = plan::plan_model_from_spec(args.draft_model);
    if (!d.ok()) return report_error(d.status().with_context("--draft-model"));
    if (Status st = plan::check_draft_model(*model, *d, args.options.context); !st.ok())
      return report_error(st.with_context("--draft-model"));
    draft = std::move(*d);
  }
  auto p = plan::compute_plan(*model, args.options, draft ? &*draft : nullptr);
  if (!p.ok()) return report_error(p.status());
  if (args.json) {
    fmt::print("{}\n", plan::plan_json(*p).dump(2));
  } else {
    fmt::print("{}", plan::plan_table(*p));
  }
  return kExitOk;
}

}  // namespace

Runner add_plan_command(CLI::App& app) {
  auto args = std::make_shared<PlanArgs>();
  args->model = default_model_path();
  auto& o = args->options;
  app.add_option("-m,--model", args->model,
                 "A preset name (see --list), a GGUF file or an HF config.json")->capture_default_str();
  app.add_option("--weights", args->weights,
                 "Weight type: f32, f16, bf16, q8_0, q4_0, q4_k_m, ... (default: the model's)");
  kv_type_flags_add(app, args->kv_type);
  app.add_option("--context", o.context, "Tokens per sequence; 0 = the model's context")->capture_default_str()->check(CLI::NonNegativeNumber);
  app.add_option("--concurrency", o.concurrency, "Sequences resident at once")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--tp", o.tp, "Tensor-parallel ranks (figures are per rank)")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--block-size", o.block_size, "Tokens per KV block")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--max-batched-tokens", o.batch_tokens, "Most tokens in one forward step (activations)")->capture_default_str()->check(CLI::PositiveNumber);
  // serve's default --speculative auto verifies up to this many: the plan counts its rows.
  o.draft_tokens = SpecConfig{}.num_speculative_tokens;
  app.add_option("--num-speculative-tokens", o.draft_tokens,
                 "Draft tokens per sequence and step that serve's --speculative ngram|auto will "
                 "verify (its extra logits rows); 0 = speculation off")
      ->capture_default_str()
      ->check(CLI::Range(0, static_cast<int>(kMaxSpeculativeTokens)));
  app.add_option("--draft-model", args->draft_model,
                 "Speculative decoding's draft model (a preset, GGUF or HF config.json, as -m): "
                 "its weights, buffers and KV, which every KV block holds beside the target's");
  app.add_option("--memory", args->memory, "Memory budget per rank, e.g. 80GiB, 24GB, 512MiB");
  app.add_option("--kv-offload-memory", args->kv_offload_memory,
                 "Host RAM for the KV offload tier below the pool, as serve's flag (counted "
                 "whole blocks); 0 = none")
      ->capture_default_str();
  app.add_flag("--json", args->json, "Print JSON instead of a table");
  app.add_flag("--list", args->list, "List the model presets");
  return [args] { return run_plan(*args); };
}

}  // namespace tally::cli
