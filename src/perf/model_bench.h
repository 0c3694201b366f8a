// `tally bench`: a model's prefill and decode speed beside the ceilings measured in the same
// run on the same threads.
//
//   prefill P   one sequence's P-token prompt through Model::forward in chunks of `ubatch`
//               tokens (logits for the last token only); tok/s = P / time of the prompt.
//   decode B    B sequences, each already holding kv_len positions, decode one token each per
//               step (one forward over a ragged batch of B tokens, logits for all B);
//               tok/s = B / time of the step. Every repetition decodes position kv_len again,
//               so the KV length does not drift. KV contents are the cache's zeros: attention
//               reads them at the same speed as real values.
//
// Ceilings (each an upper bound: what is not counted only slows the real thing down):
//   decode      memory: bandwidth / bytes read per step (every weight matrix once: for MoE the
//               dense parts and only the experts the step's tokens use, the KV of
//               B x (kv_len + 1) positions, B embedding rows): B x bandwidth / bytes, with
//               a read-bandwidth pass just before each timed step (paired with it);
//               compute: the matmul kernel's peak rate per weight type (perf/kernel_peak.h)
//               over the matmul FLOPs of a token (layers and output matrix). The ceiling is
//               the lower of the two: memory at small B, compute at large B.
//   prefill     compute only: the kernel peaks over the matmul FLOPs of the prompt (layers
//               for every token, the output matrix for the last). Attention and the
//               element-wise ops are counted in neither.
// Each figure is the median of `repetitions` timed runs after `warmup` untimed ones.
//
// Thread rules: drives `pool` from the calling thread; allocates the KV cache and buffers of
// each test for its duration.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "base/thread_pool.h"
#include "model/model.h"
#include "perf/instruction_peak.h"
#include "perf/kernel_peak.h"
#include "perf/memory_bandwidth.h"
#include "perf/stats.h"
#include "tensor/dtype.h"
#include "tensor/kv_types.h"

namespace tally::perf {

// Which STREAM kernel's bandwidth the decode ceiling divides: decode only reads, so `read`
// is the tighter (higher) ceiling; `triad` is the classic STREAM figure.
enum class CeilingBandwidth { kRead, kTriad };

struct ModelBenchOptions {
  std::vector<int64_t> prompt_lengths = {128, 512};
  std::vector<int64_t> batch_sizes = {1, 4, 16, 64};
  int64_t ubatch = 512;  // tokens per prefill forward
  int64_t kv_len = 128;  // positions each decoding sequence already holds
  int repetitions = 5;
  int warmup = 1;
  KvTypes kv_type = DType::kF32;  // storage types of K and V
  int64_t block_size = 16;  // KV block
  size_t bandwidth_bytes = kDefaultBandwidthBytes;
  CeilingBandwidth ceiling = CeilingBandwidth::kRead;
  KernelPeakOptions peak;  // n_in is set to the model's n_embd
  InstructionPeakOptions instruction_peak;
  uint32_t seed = 1;       // of the random token ids
};

// Checks ranges (positive lengths and sizes, positions within the model's context, KV type).
Status validate_model_bench_options(const ModelBenchOptions& options, const ModelConfig& config);

// What the model's shapes cost, without timing anything.
struct ModelCost {
  int64_t weight_bytes = 0;                                     // layer matrices + output matrix
                                                                // (MoE: the dense parts + routers)
  std::vector<std::pair<DType, int64_t>> weight_bytes_by_type;  // of weight_bytes
  int64_t embd_row_bytes = 0;                                   // one token_embd row
  int64_t kv_bytes_per_token = 0;                               // all layers, K and V
  std::vector<std::pair<DType, double>> layer_flops_by_type;    // per token, layers only
  double layer_flops = 0;                                       // per token, sum of the above
  DType output_type = DType::kF32;
  double output_flops = 0;  // per logit row
  // Mixture of experts (0 for a dense model): bytes of one expert in every layer (gate, up,
  // down), and the expert counts; layer_flops counts n_expert_used experts per token.
  int64_t expert_bytes = 0;
  int64_t n_expert = 0;
  int64_t n_expert_used = 0;
};
ModelCost model_cost(const Model& model, KvTypes kv_type);

// Distinct experts per layer that a decode step of B tokens reads: k at B = 1, and
// E (1 - (1 - k/E)^B) beyond, the expectation when tokens pick experts uniformly (real
// routers are skewed, reading fewer); 0 for a dense model.
double moe_expected_active_experts(const ModelCost& cost, int64_t batch);
// Bytes decode reads per step: B sequences at kv_len positions (MoE: the dense parts and the
// expected active experts of moe_expected_active_experts).
double decode_bytes_per_step(const ModelCost& cost, int64_t batch, int64_t kv_len);
// Upper bounds on tokens/s from each type's peak GFLOP/s: prefill of a P-token prompt
// (logits for its last token), and decode (logits for every token). Types without a peak
// entry make the bound 0 (unknown).
double prefill_ceiling_tok_s(const ModelCost& cost, int64_t prompt_tokens,
                             const std::vector<KernelPeak>& peaks);
double decode_compute_ceiling_tok_s(const ModelCost& cost, const std::vector<KernelPeak>& peaks);

// Each kernel peak's type at its instruction's peak rate (instruction_peak.h): the peaks the
// ceilings above take for a kernel that used its instruction fully. Types whose instruction
// was not measured are left out.
std::vector<KernelPeak> peaks_at_instruction_rate(const std::vector<KernelPeak>& kernel_peaks,
                                                  const std::vector<InstructionPeak>& peaks);

enum class BenchKind { kPrefill, kDecode };

struct BenchRow {
  BenchKind kind = BenchKind::kDecode;
  int64_t n = 0;                    // prompt tokens (prefill) or sequences (decode)
  Stats tok_s;                      // of each timed repetition
  double ceiling_tok_s = 0;         // the lower of the two below (prefill: compute)
  double memory_ceiling_tok_s = 0;  // decode only
  double compute_ceiling_tok_s = 0;
  // The compute ceiling with every kernel at its instruction's peak (what the hardware
  // allows); the row's tok/s over it is the share of the hardware's peak it reaches.
  double hardware_ceiling_tok_s = 0;
  double bytes_per_step = 0;   // decode: what the memory ceiling divides
  // Decode: the ceiling bandwidth (GB/s) of this row: with --ceiling read, the median of a
  // read pass taken just before each timed step (on a shared machine the bandwidth drifts by
  // a third within minutes); with triad, a triad measurement just before the row.
  double bandwidth_gbs = 0;
  // tok/s as a fraction of the ceiling: for a memory-bound decode row with read samples, the
  // median over steps of each step's tok/s against its own sample's ceiling; otherwise the
  // median tok/s over the ceiling.
  double fraction = 0;
  double flops_per_token = 0;  // matmul FLOPs per token
  bool memory_bound() const {
    return memory_ceiling_tok_s > 0 && memory_ceiling_tok_s <= compute_ceiling_tok_s;
  }
};

struct ModelBenchResult {
  ModelBenchOptions options;
  int n_threads = 0;
  std::string matmul_path;                 // cpu::matmul_path_name()
  std::array<double, 3> load_before = {};  // 1/5/15-minute load averages at the start
  std::array<double, 3> load_after = {};
  ModelCost cost;
  BandwidthResult bandwidth;
  std::vector<InstructionPeak> instruction_peaks;  // of this CPU's ISA level
  std::vector<KernelPeak> peaks;         // one per matrix type of the model
  std::vector<BenchRow> rows;            // prefill rows (in prompt order), then decode rows
};

// Runs everything; `progress` (optional) hears one line per finished measurement.
Result<ModelBenchResult> run_model_bench(
    const Model& model, ThreadPool& pool, const ModelBenchOptions& options,
    const std::function<void(const std::string&)>& progress = {});

}  // namespace tally::perf
