#include "perf/model_bench_report.h"

#include <fmt/format.h>

namespace tally::perf {

namespace {

constexpr double kMiB = 1024.0 * 1024.0;

const char* kind_name(BenchKind k) { return k == BenchKind::kPrefill ? "prefill" : "decode"; }

double batch1_tok_s(const ModelBenchResult& r) {
  for (const BenchRow& row : r.rows)
    if (row.kind == BenchKind::kDecode && row.n == 1) return row.tok_s.median;
  return 0;
}

std::string weights_line(const ModelCost& c) {
  std::string s =
      fmt::format("{}weights read per step {:.1f} MiB (", c.n_expert > 0 ? "dense " : "",
                  static_cast<double>(c.weight_bytes) / kMiB);
  for (size_t i = 0; i < c.weight_bytes_by_type.size(); ++i) {
    const auto& [type, bytes] = c.weight_bytes_by_type[i];
    s += fmt::format("{}{} {:.1f}", i ? ", " : "", dtype_name(type),
                     static_cast<double>(bytes) / kMiB);
  }
  return s + fmt::format("), KV {:.1f} KiB per position",
                         static_cast<double>(c.kv_bytes_per_token) / 1024.0);
}

std::string range(const Stats& s, int precision) {
  return fmt::format("{:.{}f}-{:.{}f}", s.p10, precision, s.p90, precision);
}

std::string gflop(double flops) {
  return flops >= 1e8 ? fmt::format("{:.2f} GFLOP", flops / 1e9)
                      : fmt::format("{:.2f} MFLOP", flops / 1e6);
}

// Which ceiling binds, and its arithmetic; decode also names the other one.
std::string row_basis(const BenchRow& row) {
  const std::string compute =
      fmt::format("compute: {}/token at the kernel peaks", gflop(row.flops_per_token));
  if (row.kind == BenchKind::kPrefill) return compute;
  const std::string memory = fmt::format("memory: {:.1f} MB/step at {:.1f} GB/s",
                                         row.bytes_per_step / 1e6, row.bandwidth_gbs);
  if (row.memory_bound() || row.compute_ceiling_tok_s <= 0)
    return row.compute_ceiling_tok_s > 0
               ? fmt::format("{} (compute {:.1f})", memory, row.compute_ceiling_tok_s)
               : memory;
  return fmt::format("{} (memory {:.1f})", compute, row.memory_ceiling_tok_s);
}

// " = 29.1% of int8 dot (vpdpbusd zmm)", or nothing when that peak was not measured.
std::string share_of_instruction(const ModelBenchResult& r, const KernelPeak& k) {
  const InstructionPeak* p = instruction_peak_for(r.instruction_peaks, k.type);
  if (p == nullptr || p->peak() <= 0) return "";
  return fmt::format(" = {:.1f}% of {}", 100 * k.gflops.median / p->peak(),
                     peak_instruction_name(p->kind));
}

nlohmann::json stats_json(const Stats& s) {
  return {{"n", s.n},     {"median", s.median}, {"p10", s.p10},  {"p90", s.p90},
          {"min", s.min}, {"max", s.max},       {"mean", s.mean}};
}

}  // namespace

std::string model_bench_table(const ModelBenchResult& r, const ModelBenchLabel& label) {
  const ModelBenchOptions& o = r.options;
  std::string out = fmt::format("tally bench: {} ({}, {} layers, n_embd {})\n", label.model,
                                label.arch, label.n_layers, label.n_embd);
  out += fmt::format("  {}\n", weights_line(r.cost));
  if (r.cost.n_expert > 0)
    out += fmt::format("  mixture of experts: {} experts of {:.1f} MiB (all layers), {} per token; decode reads "
                       "the dense weights and only the experts its tokens choose\n",
                       r.cost.n_expert, static_cast<double>(r.cost.expert_bytes) / (1 << 20), r.cost.n_expert_used);
  out += fmt::format(
      "  {} threads, matmul path {}, KV {}, decode at {} positions, prefill chunks of {}\n",
      r.n_threads, r.matmul_path, kv_types_name(o.kv_type), o.kv_len, o.ubatch);
  out += fmt::format(
      "  load average {:.2f} at start, {:.2f} at end; each figure: median of {} after {} warm-up\n",
      r.load_before[0], r.load_after[0], o.repetitions, o.warmup);
  out += "ceilings measured in this run (median, p10-p90):\n";
  out += fmt::format(
      "  memory bandwidth  read {:.1f} GB/s ({})  triad {:.1f} GB/s ({})  -> decode uses {}\n",
      r.bandwidth.read_gbs.median, range(r.bandwidth.read_gbs, 1), r.bandwidth.triad_gbs.median,
      range(r.bandwidth.triad_gbs, 1), o.ceiling == CeilingBandwidth::kRead ? "read" : "triad");
  for (const InstructionPeak& p : r.instruction_peaks)
    out += fmt::format(
        "  {} peak  {:.1f} Gop/s (fastest of {}; p10-p90 {})  [{}, registers only]\n",
        peak_instruction_name(p.kind), p.peak(), p.gops.n, range(p.gops, 1), p.instruction);
  for (const KernelPeak& p : r.peaks)
    out += fmt::format("  kernel peak {:<6} {:.1f} GFLOP/s ({})  [{} x {} panel, {} tokens]{}\n",
                       dtype_name(p.type), p.gflops.median, range(p.gflops, 1), p.n_out, p.n_in,
                       p.n_tokens, share_of_instruction(r, p));
  out += fmt::format("\n{:<13} {:>9} {:>17} {:>9} {:>8} {:>7} {:>7}  {}\n", "test", "tok/s",
                     "p10-p90", "ceiling", "of ceil", "of hw", "x b=1", "ceiling from");
  const double b1 = batch1_tok_s(r);
  for (const BenchRow& row : r.rows) {
    const std::string name = fmt::format("{} {}", kind_name(row.kind), row.n);
    const std::string pct =
        row.ceiling_tok_s > 0 ? fmt::format("{:.1f}%", 100 * row.fraction) : "-";
    const std::string vs1 = row.kind == BenchKind::kDecode && b1 > 0
                                ? fmt::format("{:.2f}", row.tok_s.median / b1)
                                : "";
    const std::string hw =
        row.hardware_ceiling_tok_s > 0
            ? fmt::format("{:.1f}%", 100 * row.tok_s.median / row.hardware_ceiling_tok_s)
            : "-";
    out += fmt::format("{:<13} {:>9.2f} {:>17} {:>9.2f} {:>8} {:>7} {:>7}  {}\n", name,
                       row.tok_s.median, range(row.tok_s, 2), row.ceiling_tok_s, pct, hw, vs1,
                       row_basis(row));
  }
  return out;
}

nlohmann::json model_bench_json(const ModelBenchResult& r, const ModelBenchLabel& label) {
  const ModelBenchOptions& o = r.options;
  nlohmann::json j;
  j["model"] = {{"file", label.model},
                {"arch", label.arch},
                {"n_layers", label.n_layers},
                {"n_embd", label.n_embd}};
  j["settings"] = {{"threads", r.n_threads},
                   {"matmul_path", r.matmul_path},
                   {"kv_type", kv_types_name(o.kv_type)},
                   {"kv_len", o.kv_len},
                   {"ubatch", o.ubatch},
                   {"repetitions", o.repetitions},
                   {"warmup", o.warmup},
                   {"ceiling_bandwidth", o.ceiling == CeilingBandwidth::kRead ? "read" : "triad"}};
  j["load_average"] = {{"before", r.load_before}, {"after", r.load_after}};
  nlohmann::json by_type = nlohmann::json::object();
  for (const auto& [type, bytes] : r.cost.weight_bytes_by_type)
    by_type[std::string(dtype_name(type))] = bytes;
  j["cost"] = {{"weight_bytes", r.cost.weight_bytes},
               {"weight_bytes_by_type", by_type},
               {"kv_bytes_per_token", r.cost.kv_bytes_per_token},
               {"layer_flops_per_token", r.cost.layer_flops},
               {"output_flops_per_row", r.cost.output_flops},
               {"expert_bytes", r.cost.expert_bytes},
               {"n_expert", r.cost.n_expert},
               {"n_expert_used", r.cost.n_expert_used}};
  j["bandwidth_gbs"] = {{"read", stats_json(r.bandwidth.read_gbs)},
                        {"triad", stats_json(r.bandwidth.triad_gbs)},
                        {"read_bytes", r.bandwidth.read_bytes},
                        {"triad_bytes", r.bandwidth.triad_bytes}};
  j["instruction_peak_gops"] = nlohmann::json::array();
  for (const InstructionPeak& p : r.instruction_peaks)
    j["instruction_peak_gops"].push_back({{"kind", peak_instruction_name(p.kind)},
                                          {"instruction", p.instruction},
                                          {"peak_gops", p.peak()},
                                          {"gops", stats_json(p.gops)}});
  j["kernel_peak_gflops"] = nlohmann::json::array();
  for (const KernelPeak& p : r.peaks) {
    nlohmann::json k = {{"type", dtype_name(p.type)},
                        {"gflops", stats_json(p.gflops)},
                        {"n_in", p.n_in},
                        {"n_out", p.n_out},
                        {"n_tokens", p.n_tokens}};
    const InstructionPeak* ip = instruction_peak_for(r.instruction_peaks, p.type);
    if (ip != nullptr && ip->peak() > 0) {
      k["instruction"] = peak_instruction_name(ip->kind);
      k["fraction_of_instruction_peak"] = p.gflops.median / ip->peak();
    }
    j["kernel_peak_gflops"].push_back(k);
  }
  j["tests"] = nlohmann::json::array();
  const double b1 = batch1_tok_s(r);
  for (const BenchRow& row : r.rows) {
    nlohmann::json t = {{"kind", kind_name(row.kind)},
                        {row.kind == BenchKind::kPrefill ? "prompt_tokens" : "batch", row.n},
                        {"tok_s", stats_json(row.tok_s)},
                        {"ceiling_tok_s", row.ceiling_tok_s},
                        {"compute_ceiling_tok_s", row.compute_ceiling_tok_s},
                        {"flops_per_token", row.flops_per_token},
                        {"fraction_of_ceiling", row.fraction},
                        {"hardware_ceiling_tok_s", row.hardware_ceiling_tok_s}};
    if (row.kind == BenchKind::kDecode) {
      t["memory_ceiling_tok_s"] = row.memory_ceiling_tok_s;
      t["bytes_per_step"] = row.bytes_per_step;
      t["bandwidth_gbs"] = row.bandwidth_gbs;
      t["bound"] = row.memory_bound() ? "memory" : "compute";
      if (b1 > 0) t["vs_batch1"] = row.tok_s.median / b1;
    }
    j["tests"].push_back(t);
  }
  return j;
}

}  // namespace tally::perf
