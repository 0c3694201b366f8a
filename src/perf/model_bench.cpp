#include "perf/model_bench.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <map>
#include <memory>
#include <numeric>
#include <random>

#include "backend/cpu/matmul.h"
#include "base/check.h"

namespace tally::perf {

namespace {

using Clock = std::chrono::steady_clock;

std::array<double, 3> load_average() {
  std::array<double, 3> l = {};
  if (getloadavg(l.data(), 3) != 3) l = {};
  return l;
}

// The matrices every forward step multiplies with, in order (output last).
std::vector<const cpu::WeightMatrix*> layer_matrices(const ModelWeights& w) {
  std::vector<const cpu::WeightMatrix*> m;
  for (const LayerWeights& l : w.layers)
    for (const cpu::WeightMatrix* x : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down})
      m.push_back(x);
  return m;
}

int64_t matrix_bytes(const cpu::WeightMatrix& m) {
  return m.n_out * dtype_row_bytes(m.type, m.n_in);
}
double matrix_flops(const cpu::WeightMatrix& m) {
  return 2.0 * static_cast<double>(m.n_in * m.n_out);
}

// KV blocks of `n_seqs` sequences holding `positions` each; sequence s owns blocks
// [s * per_seq, (s + 1) * per_seq).
struct BenchKv {
  KvStorage kv;
  int64_t per_seq = 0;
  std::vector<int32_t> table_ids;
  std::vector<BatchSequence> seqs;
};

Result<BenchKv> make_kv(const Model& model, const ModelBenchOptions& o, int64_t n_seqs,
                        int64_t positions) {
  const int64_t per_seq = (positions + o.block_size - 1) / o.block_size;
  const KvStorageShape shape =
      KvStorageShape::for_model(model.config(), n_seqs * per_seq, o.block_size, o.kv_type);
  TALLY_ASSIGN_OR_RETURN(KvStorage kv, KvStorage::create(shape));
  BenchKv b{std::move(kv), per_seq, {}, {}};
  b.table_ids.resize(static_cast<size_t>(n_seqs * per_seq));
  std::iota(b.table_ids.begin(), b.table_ids.end(), 0);
  for (int64_t s = 0; s < n_seqs; ++s)
    b.seqs.push_back(
        {std::span<const int32_t>(b.table_ids)
             .subspan(static_cast<size_t>(s * per_seq), static_cast<size_t>(per_seq))});
  return b;
}

std::vector<int32_t> random_tokens(int64_t n, int64_t n_vocab, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> pick(0, static_cast<int32_t>(n_vocab - 1));
  std::vector<int32_t> t(static_cast<size_t>(n));
  for (int32_t& id : t) id = pick(rng);
  return t;
}

// Buffers shared by the tests of one run, sized for the largest.
struct BenchBuffers {
  ForwardScratch scratch;
  std::vector<float> logits;  // [max batch][n_vocab]
};

// Times warmup + repetitions calls of step(), each after an untimed before(timed); returns
// tokens/s of each timed one.
template <typename Step, typename Before>
Result<std::vector<double>> time_steps(const ModelBenchOptions& o, int64_t tokens_per_step,
                                       Step&& step, Before&& before) {
  std::vector<double> tok_s;
  for (int i = 0; i < o.warmup + o.repetitions; ++i) {
    before(i >= o.warmup);
    const auto t0 = Clock::now();
    TALLY_RETURN_IF_ERROR(step());
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    if (i >= o.warmup) tok_s.push_back(static_cast<double>(tokens_per_step) / std::max(s, 1e-9));
  }
  return tok_s;
}

Result<Stats> time_prefill(const Model& model, ThreadPool& pool, const ModelBenchOptions& o,
                           int64_t n_prompt, BenchBuffers& buf) {
  TALLY_ASSIGN_OR_RETURN(BenchKv kv, make_kv(model, o, 1, n_prompt));
  const std::vector<int32_t> tokens = random_tokens(n_prompt, model.config().n_vocab, o.seed);
  std::vector<int32_t> positions(static_cast<size_t>(n_prompt));
  std::iota(positions.begin(), positions.end(), 0);
  const std::vector<int32_t> seq_index(static_cast<size_t>(std::min(n_prompt, o.ubatch)), 0);
  TALLY_ASSIGN_OR_RETURN(std::vector<double> tok_s, time_steps(o, n_prompt, [&]() -> Status {
    for (int64_t start = 0; start < n_prompt; start += o.ubatch) {
      const size_t n = static_cast<size_t>(std::min(o.ubatch, n_prompt - start));
      const bool last = start + o.ubatch >= n_prompt;
      const int32_t last_row = static_cast<int32_t>(n - 1);
      Batch b;
      b.tokens = std::span<const int32_t>(tokens).subspan(static_cast<size_t>(start), n);
      b.positions = std::span<const int32_t>(positions).subspan(static_cast<size_t>(start), n);
      b.seq_index = std::span<const int32_t>(seq_index).first(n);
      b.seqs = kv.seqs;
      if (last) b.logit_rows = std::span<const int32_t>(&last_row, 1);
      TALLY_RETURN_IF_ERROR(model.forward(b, kv.kv, buf.scratch, pool, buf.logits.data()));
    }
    return Status::ok_status();
  }, [](bool) {}));
  return stats_of(tok_s);
}

// Tokens/s of each timed step and, with a probe, the read bandwidth sampled just before it.
struct DecodeSamples {
  std::vector<double> tok_s;
  std::vector<double> bandwidth_gbs;
};

Result<DecodeSamples> time_decode(const Model& model, ThreadPool& pool, const ModelBenchOptions& o,
                                  int64_t n_seqs, BenchBuffers& buf, ReadBandwidthProbe* probe) {
  TALLY_ASSIGN_OR_RETURN(BenchKv kv, make_kv(model, o, n_seqs, o.kv_len + 1));
  const std::vector<int32_t> tokens = random_tokens(n_seqs, model.config().n_vocab, o.seed + 1);
  const std::vector<int32_t> positions(static_cast<size_t>(n_seqs), static_cast<int32_t>(o.kv_len));
  std::vector<int32_t> rows(
      static_cast<size_t>(n_seqs));  // sequence index = logit row = token index
  std::iota(rows.begin(), rows.end(), 0);
  Batch b;
  b.tokens = tokens;
  b.positions = positions;
  b.seq_index = rows;
  b.seqs = kv.seqs;
  b.logit_rows = rows;
  DecodeSamples d;
  TALLY_ASSIGN_OR_RETURN(
      d.tok_s,
      time_steps(
          o, n_seqs, [&] { return model.forward(b, kv.kv, buf.scratch, pool, buf.logits.data()); },
          [&](bool timed) {  // warm-up steps have no figure to pair with
            if (probe != nullptr && timed) d.bandwidth_gbs.push_back(probe->sample_gbs());
          }));
  return d;
}

std::vector<DType> matrix_types(const ModelCost& cost) {
  std::vector<DType> types;
  for (const auto& [type, bytes] : cost.weight_bytes_by_type) types.push_back(type);
  return types;
}

std::string stats_line(const Stats& s, const char* unit) {
  return fmt::format("{:.1f} {} (p10 {:.1f}, p90 {:.1f})", s.median, unit, s.p10, s.p90);
}

}  // namespace

Status validate_model_bench_options(const ModelBenchOptions& o, const ModelConfig& c) {
  constexpr ErrorCode kBad = ErrorCode::kInvalidArgument;
  if (o.prompt_lengths.empty() && o.batch_sizes.empty())
    return make_error(kBad, "bench: no prompt lengths and no batch sizes");
  for (int64_t p : o.prompt_lengths) {
    if (p < 1) return make_error(kBad, "bench: prompt length {} is not positive", p);
    if (p > c.context_length)
      return make_error(kBad, "bench: prompt length {} exceeds the model's context of {}", p,
                        c.context_length);
  }
  for (int64_t b : o.batch_sizes)
    if (b < 1) return make_error(kBad, "bench: batch size {} is not positive", b);
  if (o.ubatch < 1) return make_error(kBad, "bench: ubatch {} is not positive", o.ubatch);
  if (o.kv_len < 0 || o.kv_len + 1 > c.context_length)
    return make_error(kBad, "bench: kv length {} (+1 decoded) outside the model's context of {}",
                      o.kv_len, c.context_length);
  if (o.repetitions < 1 || o.warmup < 0)
    return make_error(kBad, "bench: {} repetitions, {} warm-up", o.repetitions, o.warmup);
  if (o.block_size < 1)
    return make_error(kBad, "bench: KV block size {} is not positive", o.block_size);
  for (DType t : {o.kv_type.k, o.kv_type.v})
    if (!kv_type_is_valid(t))
      return make_error(kBad, "bench: KV type {} is not f32, f16, bf16, q8_0 or q4_0", dtype_name(t));
  if (o.bandwidth_bytes < (size_t{1} << 20))
    return make_error(kBad, "bench: bandwidth buffer of {} bytes is too small", o.bandwidth_bytes);
  return Status::ok_status();
}

ModelCost model_cost(const Model& model, KvTypes kv_type) {
  const ModelWeights& w = model.weights();
  const ModelConfig& config = model.config();
  ModelCost c;
  std::map<DType, int64_t> bytes;
  std::map<DType, double> flops;
  for (const cpu::WeightMatrix* m : layer_matrices(w)) {
    if (m->data == nullptr) continue;  // an MoE layer without a shared expert has no dense ffn
    bytes[m->type] += matrix_bytes(*m);
    flops[m->type] += matrix_flops(*m);
  }
  // MoE: the routers always; a token computes n_expert_used experts, and a step reads each
  // expert its tokens chose once (expert_bytes: one expert of every layer).
  c.n_expert = config.n_expert;
  c.n_expert_used = config.n_expert_used;
  for (const LayerWeights& l : w.layers) {
    if (l.exp_gate.empty()) continue;
    bytes[l.router.type] += matrix_bytes(l.router);
    flops[l.router.type] += matrix_flops(l.router);
    if (l.shexp_gate_inp.data) flops[l.shexp_gate_inp.type] += matrix_flops(l.shexp_gate_inp);
    for (const cpu::WeightMatrix* m : {&l.exp_gate[0], &l.exp_up[0], &l.exp_down[0]}) {
      c.expert_bytes += matrix_bytes(*m);
      flops[m->type] += static_cast<double>(config.n_expert_used) * matrix_flops(*m);
    }
  }
  bytes[w.output.type] += matrix_bytes(w.output);
  for (const auto& [type, b] : bytes) {
    c.weight_bytes_by_type.emplace_back(type, b);
    c.weight_bytes += b;
  }
  for (const auto& [type, f] : flops) {
    c.layer_flops_by_type.emplace_back(type, f);
    c.layer_flops += f;
  }
  c.output_type = w.output.type;
  c.output_flops = matrix_flops(w.output);
  c.embd_row_bytes = dtype_row_bytes(w.token_embd.type, w.token_embd.n_in);
  c.kv_bytes_per_token = KvStorageShape::for_model(model.config(), 1, 1, kv_type).bytes_per_token();
  return c;
}

double moe_expected_active_experts(const ModelCost& c, int64_t batch) {
  if (c.n_expert == 0) return 0;
  if (batch == 1) return static_cast<double>(c.n_expert_used);
  const double e = static_cast<double>(c.n_expert);
  return e * (1.0 - std::pow(1.0 - static_cast<double>(c.n_expert_used) / e, static_cast<double>(batch)));
}

double decode_bytes_per_step(const ModelCost& c, int64_t batch, int64_t kv_len) {
  const double b = static_cast<double>(batch);
  return static_cast<double>(c.weight_bytes) +
         moe_expected_active_experts(c, batch) * static_cast<double>(c.expert_bytes) +
         b * static_cast<double>(kv_len + 1) * static_cast<double>(c.kv_bytes_per_token) +
         b * static_cast<double>(c.embd_row_bytes);
}

namespace {

// Seconds of matmul at the kernel peaks for `tokens` tokens of the layers and `output_rows`
// rows of the output matrix; 0 when a type has no peak.
double matmul_seconds(const ModelCost& c, double tokens, double output_rows,
                      const std::vector<KernelPeak>& peaks) {
  auto peak_of = [&](DType type) {
    for (const KernelPeak& p : peaks)
      if (p.type == type) return p.gflops.median * 1e9;
    return 0.0;
  };
  double seconds = 0;
  for (const auto& [type, flops] : c.layer_flops_by_type) {
    const double peak = peak_of(type);
    if (peak <= 0) return 0;
    seconds += flops * tokens / peak;
  }
  const double out_peak = peak_of(c.output_type);
  if (out_peak <= 0) return 0;
  return seconds + c.output_flops * output_rows / out_peak;
}

}  // namespace

double prefill_ceiling_tok_s(const ModelCost& c, int64_t prompt_tokens,
                             const std::vector<KernelPeak>& peaks) {
  const double s = matmul_seconds(c, static_cast<double>(prompt_tokens), 1.0, peaks);
  return s > 0 ? static_cast<double>(prompt_tokens) / s : 0;
}

double decode_compute_ceiling_tok_s(const ModelCost& c, const std::vector<KernelPeak>& peaks) {
  const double s = matmul_seconds(c, 1.0, 1.0, peaks);
  return s > 0 ? 1.0 / s : 0;
}

std::vector<KernelPeak> peaks_at_instruction_rate(const std::vector<KernelPeak>& kernel_peaks,
                                                  const std::vector<InstructionPeak>& peaks) {
  std::vector<KernelPeak> out;
  for (const KernelPeak& k : kernel_peaks) {
    const InstructionPeak* p = instruction_peak_for(peaks, k.type);
    if (p == nullptr) continue;
    KernelPeak at = k;
    at.gflops = Stats{};
    at.gflops.n = 1;
    at.gflops.min = at.gflops.p10 = at.gflops.median = at.gflops.mean = at.gflops.p90 =
        at.gflops.max = p->peak();
    out.push_back(at);
  }
  return out;
}

Result<ModelBenchResult> run_model_bench(const Model& model, ThreadPool& pool,
                                         const ModelBenchOptions& o,
                                         const std::function<void(const std::string&)>& progress) {
  const ModelConfig& config = model.config();
  TALLY_RETURN_IF_ERROR(validate_model_bench_options(o, config));
  auto say = [&](const std::string& line) {
    if (progress) progress(line);
  };
  ModelBenchResult r;
  r.options = o;
  r.n_threads = pool.n_threads();
  r.matmul_path = cpu::matmul_path_name();
  r.load_before = load_average();
  r.cost = model_cost(model, o.kv_type);

  // Ceilings first, while the model's pages are not yet competing for the caches.
  BandwidthOptions bw;
  bw.bytes = o.bandwidth_bytes;
  r.bandwidth = measure_memory_bandwidth(pool, bw);
  say(fmt::format("bandwidth: read {}, triad {}", stats_line(r.bandwidth.read_gbs, "GB/s"),
                  stats_line(r.bandwidth.triad_gbs, "GB/s")));
  r.instruction_peaks = measure_instruction_peaks(pool, o.instruction_peak);
  for (const InstructionPeak& p : r.instruction_peaks)
    say(fmt::format("{} peak ({}): {:.1f} Gop/s, samples {}", peak_instruction_name(p.kind),
                    p.instruction, p.peak(), stats_line(p.gops, "Gop/s")));
  KernelPeakOptions kp = o.peak;
  kp.n_in = config.n_embd;
  for (DType type : matrix_types(r.cost)) {
    if (config.n_embd % dtype_info(type).block_size != 0) continue;
    r.peaks.push_back(measure_kernel_peak(type, pool, kp));
    say(fmt::format("kernel peak {}: {}", dtype_name(type),
                    stats_line(r.peaks.back().gflops, "GFLOP/s")));
  }

  const std::vector<KernelPeak> hw_peaks = peaks_at_instruction_rate(r.peaks, r.instruction_peaks);

  int64_t max_tokens = 1, max_batch = 1;
  for (int64_t p : o.prompt_lengths) max_tokens = std::max(max_tokens, std::min(p, o.ubatch));
  for (int64_t b : o.batch_sizes) max_batch = std::max(max_batch, b);
  max_tokens = std::max(max_tokens, max_batch);
  BenchBuffers buf{ForwardScratch(config, max_tokens),
                   std::vector<float>(static_cast<size_t>(max_batch * config.n_vocab))};

  for (int64_t p : o.prompt_lengths) {
    BenchRow row;
    row.kind = BenchKind::kPrefill;
    row.n = p;
    TALLY_ASSIGN_OR_RETURN(row.tok_s, time_prefill(model, pool, o, p, buf));
    row.flops_per_token = r.cost.layer_flops + r.cost.output_flops / static_cast<double>(p);
    row.compute_ceiling_tok_s = prefill_ceiling_tok_s(r.cost, p, r.peaks);
    row.hardware_ceiling_tok_s = prefill_ceiling_tok_s(r.cost, p, hw_peaks);
    row.ceiling_tok_s = row.compute_ceiling_tok_s;
    row.fraction = row.ceiling_tok_s > 0 ? row.tok_s.median / row.ceiling_tok_s : 0;
    say(fmt::format("prefill {}: {}", p, stats_line(row.tok_s, "tok/s")));
    r.rows.push_back(row);
  }
  std::unique_ptr<ReadBandwidthProbe> probe;
  if (o.ceiling == CeilingBandwidth::kRead && !o.batch_sizes.empty())
    probe = std::make_unique<ReadBandwidthProbe>(pool, o.bandwidth_bytes);
  for (int64_t b : o.batch_sizes) {
    BenchRow row;
    row.kind = BenchKind::kDecode;
    row.n = b;
    row.bytes_per_step = decode_bytes_per_step(r.cost, b, o.kv_len);
    TALLY_ASSIGN_OR_RETURN(DecodeSamples d, time_decode(model, pool, o, b, buf, probe.get()));
    row.tok_s = stats_of(d.tok_s);
    // Each step against the bandwidth of its own moment; --ceiling triad has no per-step
    // kernel, so it takes a triad figure measured just before the row.
    std::vector<double> memory_fraction;
    for (size_t i = 0; i < d.bandwidth_gbs.size(); ++i)
      memory_fraction.push_back(d.tok_s[i] * row.bytes_per_step /
                                (static_cast<double>(b) * d.bandwidth_gbs[i] * 1e9));
    row.bandwidth_gbs = probe ? stats_of(d.bandwidth_gbs).median
                              : measure_triad_bandwidth(pool, o.bandwidth_bytes);
    row.flops_per_token = r.cost.layer_flops + r.cost.output_flops;
    row.memory_ceiling_tok_s =
        static_cast<double>(b) * row.bandwidth_gbs * 1e9 / row.bytes_per_step;
    row.compute_ceiling_tok_s = decode_compute_ceiling_tok_s(r.cost, r.peaks);
    row.hardware_ceiling_tok_s = decode_compute_ceiling_tok_s(r.cost, hw_peaks);
    row.ceiling_tok_s = row.compute_ceiling_tok_s > 0
                            ? std::min(row.memory_ceiling_tok_s, row.compute_ceiling_tok_s)
                            : row.memory_ceiling_tok_s;
    row.fraction = row.memory_bound() && !memory_fraction.empty()
                       ? stats_of(memory_fraction).median
                       : row.tok_s.median / row.ceiling_tok_s;
    say(fmt::format("decode {}: {} at {:.1f} GB/s", b, stats_line(row.tok_s, "tok/s"),
                    row.bandwidth_gbs));
    r.rows.push_back(row);
  }
  r.load_after = load_average();
  return r;
}

}  // namespace tally::perf
