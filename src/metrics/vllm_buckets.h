// vLLM's histogram bucket bounds, so quantiles from tally and vLLM read the same (a dashboard's
// histogram_quantile only interpolates inside the buckets it is given). Source:
// vllm/v1/metrics/loggers.py (PrometheusStatLogger) in vLLM 0.12; see docs/metrics.md.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace tally::metrics {

// vllm:time_to_first_token_seconds
std::span<const double> vllm_ttft_buckets();
// vllm:inter_token_latency_seconds and vllm:request_time_per_output_token_seconds
std::span<const double> vllm_inter_token_buckets();
// e2e_request_latency, request_queue_time, request_inference_time, request_prefill_time,
// request_decode_time (vLLM's request_latency_buckets)
std::span<const double> vllm_request_latency_buckets();

// 1, 2, 5, 10, 20, 50, ... up to and including max_value (vLLM's build_1_2_5_buckets), for
// the per-request token-count histograms; empty when max_value < 1.
std::vector<double> build_1_2_5_buckets(int64_t max_value);

}  // namespace tally::metrics
