#include "metrics/vllm_buckets.h"

#include <array>

namespace tally::metrics {
namespace {

constexpr std::array<double, 22> kTtft = {0.001, 0.005, 0.01, 0.02,  0.04,  0.06,  0.08, 0.1,
                                          0.25,  0.5,   0.75, 1.0,   2.5,   5.0,   7.5,  10.0,
                                          20.0,  40.0,  80.0, 160.0, 640.0, 2560.0};

constexpr std::array<double, 19> kInterToken = {0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2,
                                                0.3,  0.4,   0.5,  0.75,  1.0, 2.5,  5.0,
                                                7.5,  10.0,  20.0, 40.0,  80.0};

constexpr std::array<double, 21> kRequestLatency = {
    0.3,  0.5,  0.8,  1.0,  1.5,   2.0,   2.5,   5.0,   10.0,   15.0,  20.0,
    30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0};

constexpr int64_t kMaxBound = 1'000'000'000'000;

}  // namespace

std::span<const double> vllm_ttft_buckets() { return kTtft; }
std::span<const double> vllm_inter_token_buckets() { return kInterToken; }
std::span<const double> vllm_request_latency_buckets() { return kRequestLatency; }

std::vector<double> build_1_2_5_buckets(int64_t max_value) {
  std::vector<double> buckets;
  if (max_value > kMaxBound) max_value = kMaxBound;  // keeps mantissa * scale in range
  for (int64_t scale = 1; max_value >= scale; scale *= 10) {
    for (int64_t mantissa : {1, 2, 5}) {
      if (mantissa * scale > max_value) return buckets;
      buckets.push_back(static_cast<double>(mantissa * scale));
    }
  }
  return buckets;
}

}  // namespace tally::metrics
