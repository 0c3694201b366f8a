#include "loadgen/json_output.h"

#include <fmt/format.h>

#include <cmath>
#include <ctime>
#include <fstream>

namespace tally::loadgen {

using Json = nlohmann::json;

namespace {

void put_metric(Json& j, const std::string& key, const MetricSummary& m) {
  j["mean_" + key + "_ms"] = m.mean;
  j["median_" + key + "_ms"] = m.median;
  j["std_" + key + "_ms"] = m.stddev;
  for (const auto& [q, v] : m.percentiles) {
    const std::string name =
        q == std::floor(q) ? std::to_string(static_cast<int>(q)) : fmt::format("{}", q);
    j["p" + name + "_" + key + "_ms"] = v;
  }
}

Json record_json(const RequestRecord& r) {
  Json j = {{"index", r.index},
            {"conversation", r.conversation},
            {"turn", r.turn},
            {"success", r.success},
            {"error", r.error},
            {"http_status", r.http_status},
            {"send_s", r.send_s},
            {"ttft_s", r.ttft_s},
            {"tpot_s", r.tpot_s()},
            {"e2el_s", r.e2e_s},
            {"itl_s", r.itl_s()},
            {"expected_input_len", r.expected_input_len},
            {"input_tokens", r.input_tokens},
            {"requested_output_len", r.requested_output_len},
            {"output_tokens", r.output_tokens},
            {"usage_reported", r.usage_reported},
            {"short_output", r.short_output},
            {"generated_text", r.generated_text}};
  return j;
}

std::string now_utc() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%d-%H%M%S", &tm);
  return buf;
}

}  // namespace

Json run_json(const RunInfo& info, const BenchSummary& s,
              const std::vector<RequestRecord>& records) {
  Json j = {{"date", now_utc()},
            {"backend", "openai"},
            {"base_url", info.base_url},
            {"endpoint", info.endpoint},
            {"model_id", info.model},
            {"dataset_name", info.dataset},
            {"tokenizer", info.tokenizer},
            {"notes", info.notes},
            {"num_prompts", info.num_prompts},
            {"request_rate", info.request_rate > 0 && !std::isinf(info.request_rate)
                                 ? Json(info.request_rate)
                                 : Json("inf")},
            {"burstiness", info.burstiness},
            {"max_concurrency", info.max_concurrency > 0 ? Json(info.max_concurrency) : Json()},
            {"max_in_flight", info.max_in_flight},
            {"duration", s.duration_s},
            {"completed", s.completed},
            {"failed", s.failed},
            {"short_outputs", s.short_outputs},
            {"total_input_tokens", s.total_input},
            {"total_output_tokens", s.total_output},
            {"request_throughput", s.request_throughput},
            {"request_goodput", s.goodput ? Json(*s.goodput) : Json()},
            {"output_throughput", s.output_throughput},
            {"total_token_throughput", s.total_token_throughput},
            {"failure_reasons", s.failure_reasons}};
  put_metric(j, "ttft", s.ttft);
  put_metric(j, "tpot", s.tpot);
  put_metric(j, "itl", s.itl);
  put_metric(j, "e2el", s.e2el);
  Json input_lens = Json::array(), output_lens = Json::array(), ttfts = Json::array(),
       itls = Json::array(), errors = Json::array(), requests = Json::array();
  for (const auto& r : records) {
    input_lens.push_back(r.input_tokens);
    output_lens.push_back(r.output_tokens);
    ttfts.push_back(r.ttft_s);
    itls.push_back(r.itl_s());
    errors.push_back(r.error);
    requests.push_back(record_json(r));
  }
  j["input_lens"] = std::move(input_lens);
  j["output_lens"] = std::move(output_lens);
  j["ttfts"] = std::move(ttfts);
  j["itls"] = std::move(itls);
  j["errors"] = std::move(errors);
  j["requests"] = std::move(requests);
  j["script_line"] = script_line(s);
  return j;
}

Status write_json_file(const std::string& path, const Json& j) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return make_error(ErrorCode::kIo, "--json '{}': cannot open for writing", path);
  out << j.dump(2, ' ', false, Json::error_handler_t::replace) << '\n';
  if (!out) return make_error(ErrorCode::kIo, "--json '{}': write failed", path);
  return Status::ok_status();
}

}  // namespace tally::loadgen
