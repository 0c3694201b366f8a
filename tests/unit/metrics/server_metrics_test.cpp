#include "metrics/server_metrics.h"

#include <gtest/gtest.h>

#include <atomic>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "exposition_reader.h"
#include "metrics/vllm_buckets.h"

namespace tally::metrics {
namespace {

using tally_test::Exposition;
using tally_test::read_exposition;
using tally_test::Sample;

ServerMetricsOptions options(std::string prefix = "tally:") {
  ServerMetricsOptions o;
  o.prefix = std::move(prefix);
  o.model_name = "stories260K";
  o.max_model_len = 512;
  o.version = "0.1.0";
  o.model_info = {{"architecture", "llama"}};
  return o;
}

EngineEvent finished(FinishReason reason, int32_t completion_tokens) {
  EngineEvent e;
  e.kind = EngineEventKind::kFinished;
  e.finish = reason;
  e.request_done = true;
  e.prompt_tokens = 7;
  e.completion_tokens = completion_tokens;
  e.timing = {.queue_seconds = 0.05,
              .prefill_seconds = 0.25,
              .ttft_seconds = 0.3,
              .decode_seconds = 1.2,
              .e2e_seconds = 1.5};
  return e;
}

double value_of(const Exposition& e, const std::string& name, const std::string& key = "",
                const std::string& want = "") {
  for (const Sample& s : e.named(name)) {
    if (key.empty() || s.label(key) == want) return std::stod(s.value);
  }
  ADD_FAILURE() << "no sample " << name << " " << key << "=" << want;
  return -1;
}

// The `le` values of a histogram, in order, as written.
std::vector<std::string> bucket_bounds(const Exposition& e, const std::string& name) {
  std::vector<std::string> out;
  for (const Sample& s : e.named(name + "_bucket")) out.push_back(s.label("le"));
  return out;
}

// vLLM's names and types (vllm/v1/metrics/loggers.py, vLLM 0.12): a dashboard built for vLLM
// finds every one of these.
TEST(ServerMetrics, ExposesVllmNamesTypesAndLabels) {
  ServerMetrics m(options());
  const Exposition e = read_exposition(m.render());
  ASSERT_EQ(e.error, "");
  const std::vector<std::pair<std::string, std::string>> expected = {
      {"num_requests_running", "gauge"},
      {"num_requests_waiting", "gauge"},
      {"kv_cache_usage_perc", "gauge"},
      {"prefix_cache_queries_total", "counter"},
      {"prefix_cache_hits_total", "counter"},
      {"num_preemptions_total", "counter"},
      {"prompt_tokens_total", "counter"},
      {"generation_tokens_total", "counter"},
      {"spec_decode_num_drafts_total", "counter"},
      {"spec_decode_num_draft_tokens_total", "counter"},
      {"spec_decode_num_accepted_tokens_total", "counter"},
      {"spec_decode_num_accepted_tokens_per_pos_total", "counter"},
      {"request_success_total", "counter"},
      {"request_prompt_tokens", "histogram"},
      {"request_generation_tokens", "histogram"},
      {"time_to_first_token_seconds", "histogram"},
      {"inter_token_latency_seconds", "histogram"},
      {"request_time_per_output_token_seconds", "histogram"},
      {"e2e_request_latency_seconds", "histogram"},
      {"request_queue_time_seconds", "histogram"},
      {"request_inference_time_seconds", "histogram"},
      {"request_prefill_time_seconds", "histogram"},
      {"request_decode_time_seconds", "histogram"},
      {"build_info", "gauge"},
      {"model_info", "gauge"},
  };
  for (const auto& [name, type] : expected) {
    auto it = e.types.find("tally:" + name);
    ASSERT_NE(it, e.types.end()) << name;
    EXPECT_EQ(it->second, type) << name;
    EXPECT_FALSE(e.help.at("tally:" + name).empty()) << name;
  }
  // Beside them, tally's memory families (memory_metrics.h): 5 prefixed (kv_cache_token_bytes
  // among them), 2 process_* ones; and the 7 KV offload families (below).
  EXPECT_EQ(e.types.size(), expected.size() + 7 + 7);
  // Every vLLM series carries model_name and engine, as vLLM's do.
  for (const Sample& s : e.samples) {
    if (s.name == "tally:build_info") continue;
    if (s.name.starts_with("process_") || s.name.starts_with("tally:process_") ||
        s.name.starts_with("tally:memory_"))
      continue;  // the process's memory, not a vLLM series
    EXPECT_EQ(s.label("model_name"), "stories260K") << s.name;
    EXPECT_EQ(s.label("engine"), "0") << s.name;
  }
  EXPECT_EQ(value_of(e, "tally:build_info", "version", "0.1.0"), 1.0);
  EXPECT_EQ(value_of(e, "tally:model_info", "architecture", "llama"), 1.0);
  // All four finish reasons exist at zero before any request.
  for (const char* reason : {"stop", "length", "abort", "error"}) {
    EXPECT_EQ(value_of(e, "tally:request_success_total", "finished_reason", reason), 0.0);
  }
}

TEST(ServerMetrics, BucketsAreVllms) {
  ServerMetrics m(options());
  const Exposition e = read_exposition(m.render());
  const std::vector<std::string> ttft = {"0.001", "0.005", "0.01",  "0.02",   "0.04", "0.06",
                                         "0.08",  "0.1",   "0.25",  "0.5",    "0.75", "1.0",
                                         "2.5",   "5.0",   "7.5",   "10.0",   "20.0", "40.0",
                                         "80.0",  "160.0", "640.0", "2560.0", "+Inf"};
  EXPECT_EQ(bucket_bounds(e, "tally:time_to_first_token_seconds"), ttft);
  const std::vector<std::string> itl = {"0.01", "0.025", "0.05", "0.075", "0.1",  "0.15", "0.2",
                                        "0.3",  "0.4",   "0.5",  "0.75",  "1.0",  "2.5",  "5.0",
                                        "7.5",  "10.0",  "20.0", "40.0",  "80.0", "+Inf"};
  EXPECT_EQ(bucket_bounds(e, "tally:inter_token_latency_seconds"), itl);
  EXPECT_EQ(bucket_bounds(e, "tally:request_time_per_output_token_seconds"), itl);
  const std::vector<std::string> latency = {"0.3",   "0.5",    "0.8",    "1.0",   "1.5",   "2.0",
                                            "2.5",   "5.0",    "10.0",   "15.0",  "20.0",  "30.0",
                                            "40.0",  "50.0",   "60.0",   "120.0", "240.0", "480.0",
                                            "960.0", "1920.0", "7680.0", "+Inf"};
  for (const char* name : {"e2e_request_latency_seconds", "request_queue_time_seconds",
                           "request_inference_time_seconds", "request_prefill_time_seconds",
                           "request_decode_time_seconds"}) {
    EXPECT_EQ(bucket_bounds(e, std::string("tally:") + name), latency) << name;
  }
  const std::vector<std::string> tokens = {"1.0",  "2.0",   "5.0",   "10.0",  "20.0",
                                           "50.0", "100.0", "200.0", "500.0", "+Inf"};
  EXPECT_EQ(bucket_bounds(e, "tally:request_prompt_tokens"), tokens);  // max_model_len 512
}

TEST(ServerMetrics, Build125Buckets) {
  EXPECT_EQ(build_1_2_5_buckets(100), (std::vector<double>{1, 2, 5, 10, 20, 50, 100}));
  EXPECT_EQ(build_1_2_5_buckets(4), (std::vector<double>{1, 2}));
  EXPECT_TRUE(build_1_2_5_buckets(0).empty());
}

TEST(ServerMetrics, FinishedEventsFeedTheRequestHistograms) {
  ServerMetrics m(options());
  m.on_finished(finished(FinishReason::kStop, 5));
  m.on_finished(finished(FinishReason::kAbort, 0));  // aborted before its first token
  EngineEvent token;                                 // not a finish: ignored
  token.kind = EngineEventKind::kToken;
  m.on_finished(token);
  m.on_finished(finished(FinishReason::kNone, 3));  // no reason: ignored
  m.on_error();
  m.observe_inter_token_latency(0.02);
  m.observe_inter_token_latency(0.3);

  const Exposition e = read_exposition(m.render());
  const std::string p = "tally:";
  EXPECT_EQ(value_of(e, p + "request_success_total", "finished_reason", "stop"), 1);
  EXPECT_EQ(value_of(e, p + "request_success_total", "finished_reason", "abort"), 1);
  EXPECT_EQ(value_of(e, p + "request_success_total", "finished_reason", "length"), 0);
  EXPECT_EQ(value_of(e, p + "request_success_total", "finished_reason", "error"), 1);
  EXPECT_EQ(value_of(e, p + "e2e_request_latency_seconds_count"), 2);
  EXPECT_DOUBLE_EQ(value_of(e, p + "e2e_request_latency_seconds_sum"), 3.0);
  EXPECT_EQ(value_of(e, p + "e2e_request_latency_seconds_bucket", "le", "1.0"), 0);
  EXPECT_EQ(value_of(e, p + "e2e_request_latency_seconds_bucket", "le", "1.5"), 2);
  EXPECT_DOUBLE_EQ(value_of(e, p + "request_queue_time_seconds_sum"), 0.1);
  EXPECT_DOUBLE_EQ(value_of(e, p + "request_prefill_time_seconds_sum"), 0.5);
  EXPECT_DOUBLE_EQ(value_of(e, p + "request_decode_time_seconds_sum"), 2.4);
  EXPECT_DOUBLE_EQ(value_of(e, p + "request_inference_time_seconds_sum"), 2.9);
  // TTFT only for the sample that produced a token.
  EXPECT_EQ(value_of(e, p + "time_to_first_token_seconds_count"), 1);
  EXPECT_DOUBLE_EQ(value_of(e, p + "time_to_first_token_seconds_sum"), 0.3);
  EXPECT_EQ(value_of(e, p + "time_to_first_token_seconds_bucket", "le", "0.25"), 0);
  EXPECT_EQ(value_of(e, p + "time_to_first_token_seconds_bucket", "le", "0.5"), 1);
  // Per request TPOT: 1.2 s over the 4 tokens after the first; 0 for the aborted one.
  EXPECT_DOUBLE_EQ(value_of(e, p + "request_time_per_output_token_seconds_sum"), 0.3);
  EXPECT_EQ(value_of(e, p + "request_time_per_output_token_seconds_count"), 2);
  EXPECT_EQ(value_of(e, p + "request_prompt_tokens_bucket", "le", "10.0"), 2);
  EXPECT_EQ(value_of(e, p + "request_generation_tokens_bucket", "le", "5.0"), 2);
  EXPECT_EQ(value_of(e, p + "request_generation_tokens_sum"), 5);
  EXPECT_EQ(value_of(e, p + "inter_token_latency_seconds_count"), 2);
  EXPECT_EQ(value_of(e, p + "inter_token_latency_seconds_bucket", "le", "0.025"), 1);
  EXPECT_EQ(value_of(e, p + "inter_token_latency_seconds_bucket", "le", "0.3"), 2);
}

// tally's own: the KV offload tiers, one series per tier.
TEST(ServerMetrics, OffloadTiersPerTier) {
  ServerMetrics m(options());
  EngineMetrics snap;
  KvOffloadStats& s = snap.kv_offload;
  s.host_hits = 5;
  s.host_hit_bytes = 500;
  s.host_stores = 7;
  s.host_blocks = 6;
  s.host_bytes = 600;
  s.disk_hits = 2;
  s.disk_hit_bytes = 200;
  s.disk_stores = 3;
  s.disk_blocks = 1;
  s.disk_bytes = 110;
  s.disk_errors = 4;
  s.skipped_loads = 9;
  m.set_snapshot_source([&] { return snap; });
  const Exposition e = read_exposition(m.render());
  ASSERT_EQ(e.error, "");
  for (const auto& [name, type] : std::vector<std::pair<std::string, std::string>>{
           {"kv_offload_hits_total", "counter"}, {"kv_offload_hit_bytes_total", "counter"},
           {"kv_offload_stores_total", "counter"}, {"kv_offload_blocks", "gauge"},
           {"kv_offload_bytes", "gauge"}, {"kv_offload_disk_errors_total", "counter"},
           {"kv_offload_recomputed_blocks_total", "counter"}}) {
    EXPECT_EQ(e.types.at("tally:" + name), type) << name;
  }
  EXPECT_EQ(value_of(e, "tally:kv_offload_hits_total", "tier", "host"), 5);
  EXPECT_EQ(value_of(e, "tally:kv_offload_hits_total", "tier", "disk"), 2);
  EXPECT_EQ(value_of(e, "tally:kv_offload_hit_bytes_total", "tier", "host"), 500);
  EXPECT_EQ(value_of(e, "tally:kv_offload_hit_bytes_total", "tier", "disk"), 200);
  EXPECT_EQ(value_of(e, "tally:kv_offload_stores_total", "tier", "host"), 7);
  EXPECT_EQ(value_of(e, "tally:kv_offload_stores_total", "tier", "disk"), 3);
  EXPECT_EQ(value_of(e, "tally:kv_offload_blocks", "tier", "host"), 6);
  EXPECT_EQ(value_of(e, "tally:kv_offload_bytes", "tier", "disk"), 110);
  EXPECT_EQ(value_of(e, "tally:kv_offload_disk_errors_total"), 4);
  EXPECT_EQ(value_of(e, "tally:kv_offload_recomputed_blocks_total"), 9);
}

TEST(ServerMetrics, SnapshotSourceFeedsGaugesAndEngineCounters) {
  ServerMetrics m(options());
  EngineMetrics snap;
  snap.num_requests_running = 3;
  snap.num_requests_waiting = 2;
  snap.kv_cache_usage = 0.25;
  snap.num_preemptions_total = 4;
  snap.prompt_tokens_total = 100;
  snap.generation_tokens_total = 50;
  snap.prefix_cache_queries_total = 80;
  snap.prefix_cache_hits_total = 64;
  int calls = 0;
  m.set_snapshot_source([&] {
    ++calls;
    return snap;
  });
  Exposition e = read_exposition(m.render());
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(value_of(e, "tally:num_requests_running"), 3);
  EXPECT_EQ(value_of(e, "tally:num_requests_waiting"), 2);
  EXPECT_EQ(value_of(e, "tally:kv_cache_usage_perc"), 0.25);
  EXPECT_EQ(value_of(e, "tally:num_preemptions_total"), 4);
  EXPECT_EQ(value_of(e, "tally:prompt_tokens_total"), 100);
  EXPECT_EQ(value_of(e, "tally:generation_tokens_total"), 50);
  EXPECT_EQ(value_of(e, "tally:prefix_cache_queries_total"), 80);
  EXPECT_EQ(value_of(e, "tally:prefix_cache_hits_total"), 64);

  snap.num_requests_running = 0;
  snap.prompt_tokens_total = 10;  // a lower total (engine restarted): counters never go down
  e = read_exposition(m.render());
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(value_of(e, "tally:num_requests_running"), 0);
  EXPECT_EQ(value_of(e, "tally:prompt_tokens_total"), 100);
}

TEST(ServerMetrics, SpecDecodeCountersComeFromTheSnapshot) {
  ServerMetrics m(options());
  EngineMetrics snap;
  int calls = 0;
  m.set_snapshot_source([&] {
    ++calls;
    return snap;
  });
  Exposition e = read_exposition(m.render());
  EXPECT_EQ(value_of(e, "tally:spec_decode_num_drafts_total"), 0);
  EXPECT_TRUE(e.named("tally:spec_decode_num_accepted_tokens_per_pos_total").empty());
  snap.spec_positions = 3;
  snap.spec_decode.drafts = 10;
  snap.spec_decode.draft_tokens = 30;
  snap.spec_decode.accepted_tokens = 12;
  snap.spec_decode.accepted_per_pos[0] = 7;
  snap.spec_decode.accepted_per_pos[1] = 4;
  snap.spec_decode.accepted_per_pos[2] = 1;
  e = read_exposition(m.render());
  EXPECT_EQ(value_of(e, "tally:spec_decode_num_drafts_total"), 10);
  EXPECT_EQ(value_of(e, "tally:spec_decode_num_draft_tokens_total"), 30);
  EXPECT_EQ(value_of(e, "tally:spec_decode_num_accepted_tokens_total"), 12);
  const std::string per_pos = "tally:spec_decode_num_accepted_tokens_per_pos_total";
  EXPECT_EQ(e.named(per_pos).size(), 3u);
  EXPECT_EQ(value_of(e, per_pos, "position", "0"), 7);
  EXPECT_EQ(value_of(e, per_pos, "position", "1"), 4);
  EXPECT_EQ(value_of(e, per_pos, "position", "2"), 1);
  EXPECT_EQ(calls, 2);
}

TEST(ServerMetrics, VllmPrefixRenamesEverything) {
  ServerMetrics m(options("vllm:"));
  m.on_finished(finished(FinishReason::kLength, 2));
  const std::string text = m.render();
  EXPECT_EQ(text.find("tally:"), std::string::npos);
  const Exposition e = read_exposition(text);
  EXPECT_EQ(e.types.at("vllm:time_to_first_token_seconds"), "histogram");
  EXPECT_EQ(e.types.at("vllm:request_success_total"), "counter");
  EXPECT_EQ(value_of(e, "vllm:request_success_total", "finished_reason", "length"), 1);
  // All but process_resident_memory_bytes and process_virtual_memory_bytes, which keep the
  // unprefixed names of the Prometheus clients' process collector.
  for (const Sample& s : e.samples)
    EXPECT_TRUE(s.name.starts_with("vllm:") || s.name.starts_with("process_")) << s.name;
}

TEST(ServerMetrics, FinishedReasonLabelsAreVllms) {
  EXPECT_EQ(finished_reason_label(FinishReason::kStop), "stop");
  EXPECT_EQ(finished_reason_label(FinishReason::kLength), "length");
  EXPECT_EQ(finished_reason_label(FinishReason::kAbort), "abort");
  EXPECT_EQ(finished_reason_label(FinishReason::kNone), "");
}

TEST(ServerMetrics, PrefixFlag) {
  EXPECT_EQ(metrics_prefix_from_flag("tally").value(), "tally:");
  EXPECT_EQ(metrics_prefix_from_flag("vllm").value(), "vllm:");
  const auto bad = metrics_prefix_from_flag("sglang");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("sglang"), std::string::npos);
}

TEST(ServerMetrics, ModelNameIsEscaped) {
  ServerMetricsOptions o = options();
  o.model_name = "a \"quoted\" \\ name\n";
  ServerMetrics m(o);
  const std::string text = m.render();
  EXPECT_NE(text.find("model_name=\"a \\\"quoted\\\" \\\\ name\\n\""), std::string::npos);
  const Exposition e = read_exposition(text);
  ASSERT_EQ(e.error, "");
  EXPECT_EQ(e.named("tally:num_requests_running").at(0).label("model_name"), o.model_name);
}

// Every histogram series: le ascending and ending in +Inf, counts cumulative, +Inf == _count.
void expect_histograms_consistent(const Exposition& e) {
  int checked = 0;
  for (const auto& [family, type] : e.types) {
    if (type != "histogram") continue;
    const std::vector<Sample> buckets = e.named(family + "_bucket");
    const std::vector<Sample> counts = e.named(family + "_count");
    ASSERT_FALSE(buckets.empty()) << family;
    double previous_le = -1, previous_count = 0;
    for (const Sample& b : buckets) {
      const double le = b.label("le") == "+Inf" ? INFINITY : std::stod(b.label("le"));
      EXPECT_GT(le, previous_le) << family;
      EXPECT_GE(std::stod(b.value), previous_count) << family;
      previous_le = le;
      previous_count = std::stod(b.value);
      if (b.label("le") == "+Inf") {
        bool found = false;
        for (const Sample& c : counts) {
          if (c.labels_without_le() == b.labels_without_le()) {
            EXPECT_EQ(c.value, b.value) << family;
            found = true;
          }
        }
        EXPECT_TRUE(found) << family;
        previous_le = -1;
        previous_count = 0;
        ++checked;
      }
    }
  }
  EXPECT_EQ(checked, 10);
}

// Four threads report finishes and token gaps while a fifth scrapes: nothing is lost, and
// every scrape is self-consistent.
TEST(ServerMetrics, ConcurrentUpdatesAndScrapes) {
  ServerMetrics m(options());
  constexpr int kThreads = 4;
  constexpr int kPerThread = 2000;
  std::atomic<bool> done{false};
  std::thread scraper([&] {
    while (!done.load()) expect_histograms_consistent(read_exposition(m.render()));
  });
  std::vector<std::thread> workers;
  for (int t = 0; t < kThreads; ++t) {
    workers.emplace_back([&] {
      for (int i = 0; i < kPerThread; ++i) {
        m.on_finished(finished(FinishReason::kStop, 5));
        m.observe_inter_token_latency(0.125);
      }
    });
  }
  for (auto& w : workers) w.join();
  done = true;
  scraper.join();
  const Exposition e = read_exposition(m.render());
  expect_histograms_consistent(e);
  const double n = kThreads * kPerThread;
  EXPECT_EQ(value_of(e, "tally:request_success_total", "finished_reason", "stop"), n);
  EXPECT_EQ(value_of(e, "tally:e2e_request_latency_seconds_count"), n);
  EXPECT_EQ(value_of(e, "tally:inter_token_latency_seconds_count"), n);
  EXPECT_DOUBLE_EQ(value_of(e, "tally:inter_token_latency_seconds_sum"), n * 0.125);
}

}  // namespace
}  // namespace tally::metrics
