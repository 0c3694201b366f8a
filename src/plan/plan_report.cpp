#include "plan/plan_report.h"

#include <fmt/format.h>

#include "plan/memory_size.h"
#include "tensor/kv_types.h"

namespace tally::plan {

namespace {

// 8030261248 -> "8,030,261,248"
std::string grouped(int64_t v) {
  std::string digits = std::to_string(v < 0 ? -v : v);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return v < 0 ? "-" + out : out;
}

std::string billions(int64_t n) {
  if (n >= 1'000'000'000) return fmt::format("{:.2f} B", static_cast<double>(n) / 1e9);
  if (n >= 1'000'000) return fmt::format("{:.2f} M", static_cast<double>(n) / 1e6);
  return fmt::format("{:.2f} K", static_cast<double>(n) / 1e3);
}

constexpr int kLabel = 34;
constexpr int kValue = 14;

void row(std::string& out, const std::string& label, const std::string& value,
         const std::string& note = "") {
  out += fmt::format("  {:<{}}{:>{}}", label, kLabel, value, kValue);
  if (!note.empty()) out += "  " + note;
  out += '\n';
}

std::string weights_label(const Plan& p) {
  std::string s = "weights (" + p.options.weights->name;
  if (p.options.tp > 1) s += fmt::format(", 1/{} each", p.options.tp);
  return s + ")";
}

void model_section(std::string& out, const Plan& p) {
  const PlanModel& m = p.model;
  out += fmt::format("model       {} ({}, {})\n", m.name, m.source, m.architecture);
  out += fmt::format(
      "shape       {} layers, n_embd {}, {} heads / {} KV heads x {}, ffn {}, vocab {}, "
      "context {}{}{}\n",
      m.n_layers, m.n_embd, m.n_heads, m.n_kv_heads, m.head_dim, m.n_ff, m.n_vocab,
      m.context_length, m.tied_embeddings ? ", tied embeddings" : "",
      m.qkv_bias ? ", qkv bias" : "");
  if (m.n_expert > 0)
    out += fmt::format("experts     {} per layer of ffn {}, {} per token{}\n", m.n_expert, m.n_ff_exp, m.n_expert_used,
                       m.n_ff_shexp > 0 ? fmt::format(", shared expert of {}", m.n_ff_shexp) : "");
  out += fmt::format("parameters  {} ({})\n", billions(p.n_params), grouped(p.n_params));
  std::string types;
  for (const auto& w : p.weight_types)
    types += fmt::format("{}{} {} in {} tensors", types.empty() ? "" : ", ", w.type,
                         format_bytes(w.bytes), w.n_tensors);
  out += fmt::format("weights     {}: {}\n", p.options.weights->name, types);
  const PlanOptions& o = p.options;
  out += fmt::format(
      "plan        {} x {} tokens, kv {}, block {}, batch {} tokens, tensor parallel {}\n\n",
      o.concurrency, o.context, kv_types_name(o.kv_type), o.block_size, o.batch_tokens, o.tp);
}

void memory_section(std::string& out, const Plan& p) {
  const PlanOptions& o = p.options;
  out += "memory per rank\n";
  row(out, weights_label(p), format_bytes(p.weight_bytes));
  row(out, fmt::format("activations ({} tokens)", p.step_tokens), format_bytes(p.activation_bytes));
  row(out, "overhead", format_bytes(p.overhead_bytes));
  if (p.draft) {
    row(out, "draft model weights", format_bytes(p.draft->weight_bytes),
        fmt::format("{}, {}", p.draft->name, billions(p.draft->n_params)));
    row(out, "draft model buffers", format_bytes(p.draft->activation_bytes),
        fmt::format("logits and q of {} drafts per row", o.draft_tokens));
  }
  row(out, fmt::format("KV cache ({} x {} tokens)", o.concurrency, o.context),
      format_bytes(p.kv_bytes_requested), p.draft ? "target + draft model" : "");
  if (p.kv_offload_bytes > 0) {
    row(out, fmt::format("KV offload, host ({} blocks)",
                         p.kv_offload_bytes / (p.kv_block_bytes + o.block_size * 4)),
        format_bytes(p.kv_offload_bytes));
  }
  row(out, "total needed", format_bytes(p.required_bytes));
  if (p.has_budget) {
    row(out, "budget", format_bytes(p.budget_bytes));
    row(out, "left for the KV cache", format_bytes(p.kv_budget_bytes));
  }
  out += '\n';
}

// Bytes a value of a KV type takes in heads of head_dim values: 2 for f16, 34/32 for q8_0
// blocks of 32, 10/8 for q8_0 heads of 8 (one short block a head: kv_types.h).
double plan_kv_value_bytes(DType t, int64_t head_dim) {
  return static_cast<double>(kv_row_bytes(t, 1, head_dim)) / static_cast<double>(head_dim);
}

std::string kv_per_token_formula(const Plan& p) {
  const KvTypes t = p.options.kv_type;
  const std::string dims = fmt::format("{} layers x {} KV heads x {} dims", p.model.n_layers,
                                       p.kv_heads_per_rank, p.model.head_dim);
  if (t.k == t.v)
    return fmt::format("= 2 x {} x {:g} B ({})", dims, plan_kv_value_bytes(t.k, p.model.head_dim), kv_types_name(t));
  return fmt::format("= {} x ({:g} + {:g}) B (K {}, V {})", dims, plan_kv_value_bytes(t.k, p.model.head_dim),
                     plan_kv_value_bytes(t.v, p.model.head_dim), dtype_name(t.k), dtype_name(t.v));
}

void kv_section(std::string& out, const Plan& p) {
  const PlanOptions& o = p.options;
  out += "KV cache\n";
  row(out, "per token", format_bytes(p.kv_bytes_per_token),
      kv_per_token_formula(p));
  if (p.draft) {
    row(out, "draft model per token", format_bytes(p.draft->kv_bytes_per_token),
        "in the target's blocks");
    row(out, "per block", format_bytes(p.pool_block_bytes),
        fmt::format("{} tokens, target {} + draft {}", o.block_size, format_bytes(p.kv_block_bytes),
                    format_bytes(p.pool_block_bytes - p.kv_block_bytes)));
  } else {
    row(out, "per block", format_bytes(p.kv_block_bytes), fmt::format("{} tokens", o.block_size));
  }
  row(out, "blocks per sequence", grouped(p.blocks_per_sequence),
      p.model.kv_window > 0 && p.blocks_per_sequence * o.block_size < o.context
          ? fmt::format("{} tokens, a window of {} on every layer", o.context, p.model.kv_window)
          : fmt::format("{} tokens", o.context));
  if (p.has_budget && p.model_fits) {
    row(out, "blocks", grouped(p.n_blocks));
    row(out, "token capacity", grouped(p.token_capacity), "tokens");
    row(out, fmt::format("max concurrency at {} tokens", o.context), grouped(p.max_concurrency),
        "sequences");
    const bool capped = p.n_blocks / o.concurrency * o.block_size > p.max_context;
    row(out, fmt::format("max context at {} sequences", o.concurrency), grouped(p.max_context),
        capped ? "tokens (the model's trained context)" : "tokens");
  }
  out += '\n';
}

std::string verdict(const Plan& p) {
  if (!p.has_budget) return "no budget given (--memory): the figures above are what it needs";
  if (!p.model_fits)
    return fmt::format("does not fit: weights, activations and overhead need {} more than the "
                       "budget of {}, before any KV cache",
                       format_bytes(p.shortfall_bytes), format_bytes(p.budget_bytes));
  if (!p.fits)
    return fmt::format("does not fit: {} sequences of {} tokens need {} more KV cache than the "
                       "budget leaves",
                       p.options.concurrency, p.options.context, format_bytes(p.shortfall_bytes));
  return fmt::format("fits: {} sequences of {} tokens, {} to spare", p.options.concurrency,
                     p.options.context, format_bytes(p.kv_budget_bytes - p.kv_bytes_requested));
}

}  // namespace

std::string plan_table(const Plan& p) {
  std::string out;
  model_section(out, p);
  memory_section(out, p);
  kv_section(out, p);
  out += "verdict     " + verdict(p) + "\n";
  for (const auto& note : p.notes) out += "note        " + note + "\n";
  return out;
}

nlohmann::json plan_json(const Plan& p) {
  using nlohmann::json;
  const PlanModel& m = p.model;
  const PlanOptions& o = p.options;
  json j;
  j["model"] = {{"name", m.name},         {"source", m.source},
                {"architecture", m.architecture}, {"n_layers", m.n_layers},
                {"n_embd", m.n_embd},     {"n_heads", m.n_heads},
                {"n_kv_heads", m.n_kv_heads}, {"head_dim", m.head_dim},
                {"n_ff", m.n_ff},         {"n_vocab", m.n_vocab},
                {"context_length", m.context_length}, {"tied_embeddings", m.tied_embeddings},
                {"qkv_bias", m.qkv_bias}, {"n_params", p.n_params},
                {"n_expert", m.n_expert}, {"n_expert_used", m.n_expert_used},
                {"n_ff_exp", m.n_ff_exp}, {"n_ff_shexp", m.n_ff_shexp}};
  j["options"] = {{"weights", o.weights->name},   {"kv_type", kv_types_name(o.kv_type)},
                  {"kv_type_k", dtype_name(o.kv_type.k)}, {"kv_type_v", dtype_name(o.kv_type.v)},
                  {"context", o.context},         {"concurrency", o.concurrency},
                  {"tp", o.tp},                   {"block_size", o.block_size},
                  {"batch_tokens", o.batch_tokens}, {"draft_tokens", o.draft_tokens},
                  {"overhead_bytes", o.overhead_bytes},
                  {"kv_offload_host_bytes", o.kv_offload_host_bytes}};
  j["options"]["budget_bytes"] = o.budget ? json(*o.budget) : json(nullptr);
  json types = json::array();
  for (const auto& w : p.weight_types)
    types.push_back({{"type", w.type}, {"n_tensors", w.n_tensors}, {"n_params", w.n_params},
                     {"bytes", w.bytes}});
  j["weights"] = {{"bytes_per_rank", p.weight_bytes}, {"bytes_model", p.weight_bytes_model},
                  {"types", types}};
  j["tensor_parallel"] = {{"tp", o.tp}, {"heads_per_rank", p.heads_per_rank},
                          {"kv_heads_per_rank", p.kv_heads_per_rank},
                          {"ff_per_rank", p.ff_per_rank}, {"kv_replicated", p.kv_replicated}};
  json terms = json::array();
  for (const auto& t : p.activation_terms)
    terms.push_back(
        {{"name", t.name}, {"shape", t.shape}, {"bytes", t.bytes}, {"at_start", t.at_start}});
  j["activations"] = {{"bytes", p.activation_bytes}, {"step_tokens", p.step_tokens},
                      {"terms", terms}};
  j["overhead_bytes"] = p.overhead_bytes;
  j["kv"] = {{"bytes_per_token", p.kv_bytes_per_token},
             {"bytes_per_token_all_ranks", p.kv_bytes_per_token_all_ranks},
             {"block_size", o.block_size}, {"block_bytes", p.kv_block_bytes},
             {"blocks_per_sequence", p.blocks_per_sequence},
             {"bytes_requested", p.kv_bytes_requested}};
  j["kv"]["pool_block_bytes"] = p.pool_block_bytes;
  j["draft"] = nullptr;
  if (p.draft) {
    json dterms = json::array();
    for (const auto& t : p.draft->activation_terms)
      dterms.push_back({{"name", t.name}, {"shape", t.shape}, {"bytes", t.bytes}});
    j["draft"] = {{"name", p.draft->name},
                  {"n_params", p.draft->n_params},
                  {"weight_bytes", p.draft->weight_bytes},
                  {"activation_bytes", p.draft->activation_bytes},
                  {"activation_terms", dterms},
                  {"kv_bytes_per_token", p.draft->kv_bytes_per_token}};
  }
  j["kv_offload_bytes"] = p.kv_offload_bytes;
  j["required_bytes"] = p.required_bytes;
  j["budget"] = nullptr;
  if (p.has_budget)
    j["budget"] = {{"bytes", p.budget_bytes},       {"model_fits", p.model_fits},
                   {"fits", p.fits},                {"shortfall_bytes", p.shortfall_bytes},
                   {"kv_bytes", p.kv_budget_bytes}, {"n_blocks", p.n_blocks},
                   {"token_capacity", p.token_capacity},
                   {"max_concurrency", p.max_concurrency}, {"max_context", p.max_context}};
  j["notes"] = p.notes;
  return j;
}

}  // namespace tally::plan
