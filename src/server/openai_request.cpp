#include "server/openai_request.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "sampling/stop_set.h"
#include "server/client_text.h"
#include "server/generation_fields.h"
#include "server/json_fields.h"

namespace tally::server {

using namespace json_fields;

namespace {

constexpr int64_t kMaxInt32 = std::numeric_limits<int32_t>::max();
constexpr int64_t kMaxN = 128;
constexpr int64_t kMaxLogprobs = 20;
constexpr size_t kMaxStops = 16;
constexpr size_t kMaxLogitBias = 300;  // OpenAI's limit

// Fields both endpoints read (sampling, limits, streaming).
const std::vector<std::string_view> kCommonFields = {"model",
                                                     "max_tokens",
                                                     "temperature",
                                                     "top_p",
                                                     "top_k",
                                                     "min_p",
                                                     "n",
                                                     "stop",
                                                     "seed",
                                                     "presence_penalty",
                                                     "frequency_penalty",
                                                     "repetition_penalty",
                                                     "logit_bias",
                                                     "stream",
                                                     "stream_options",
                                                     "user",
                                                     "cache_salt",
                                                     "ignore_eos",
                                                     "min_tokens",
                                                     "logprobs"};

Error read_stop(const Json& object, std::vector<std::string>& out) {
  const Json* v = find(object, "stop");
  if (!v) return std::nullopt;
  if (v->is_string()) {
    out.push_back(v->get<std::string>());
  } else if (v->is_array()) {
    if (v->size() > kMaxStops) {
      return ApiError::bad_request(
          fmt::format("'stop' has {} entries, at most {} are allowed", v->size(), kMaxStops),
          "stop");
    }
    for (size_t i = 0; i < v->size(); ++i) {
      const Json& s = (*v)[i];
      if (!s.is_string()) return wrong_type(fmt::format("stop[{}]", i), "a string", s);
      out.push_back(s.get<std::string>());
    }
  } else {
    return wrong_type("stop", "a string or an array of strings", *v);
  }
  // The engine's rule (empty entries, the byte cap), answered here with the field named.
  if (Status st = StopSet::validate(out); !st.ok()) return ApiError::bad_request(st.message(), "stop");
  return std::nullopt;
}

// A token id as a JSON key, in its one spelling: "5", never "05", "+5", " 5" or "5.0", so two
// keys can never name the same token (their biases would otherwise both apply).
std::optional<int32_t> canonical_token_id(const std::string& key) {
  if (key.empty() || key.size() > 10 || (key[0] == '0' && key.size() > 1)) return std::nullopt;
  int64_t id = 0;
  for (const char c : key) {
    if (c < '0' || c > '9') return std::nullopt;
    id = id * 10 + (c - '0');
  }
  if (id > kMaxInt32) return std::nullopt;
  return static_cast<int32_t>(id);
}

Error read_logit_bias(const Json& object, SamplingParams& p) {
  const Json* v = find(object, "logit_bias");
  if (!v) return std::nullopt;
  if (!v->is_object()) return wrong_type("logit_bias", "an object of token id -> bias", *v);
  if (v->size() > kMaxLogitBias) {
    return ApiError::bad_request(fmt::format("'logit_bias' has {} entries, at most {} are allowed",
                                             v->size(), kMaxLogitBias),
                                 "logit_bias");
  }
  for (auto it = v->begin(); it != v->end(); ++it) {
    const std::string& key = it.key();
    const std::optional<int32_t> token = canonical_token_id(key);
    if (!token) {
      return ApiError::bad_request(
          fmt::format("'logit_bias' key {} is not a token id (digits without sign, spaces or "
                      "leading zeros)",
                      quote_client_text(key)),
          "logit_bias");
    }
    const Json& bias = it.value();
    if (!bias.is_number() || !std::isfinite(bias.get<double>()) ||
        std::fabs(bias.get<double>()) > 100) {
      return ApiError::bad_request(
          fmt::format("'logit_bias[{}]' must be a number in [-100, 100]", *token), "logit_bias");
    }
    p.logit_bias.emplace_back(*token, bias.get<float>());
  }
  return std::nullopt;
}

Error read_stream_options(const Json& object, GenerationParams& p) {
  const Json* v = find(object, "stream_options");
  if (!v) return std::nullopt;
  if (!v->is_object()) return wrong_type("stream_options", "an object", *v);
  if (!p.stream) {
    return ApiError::bad_request("'stream_options' is only allowed when 'stream' is true",
                                 "stream_options");
  }
  if (const Json* u = find(*v, "include_usage")) {
    if (!u->is_boolean()) return wrong_type("stream_options.include_usage", "a boolean", *u);
    p.include_usage = u->get<bool>();
  }
  return std::nullopt;
}

Error read_sampling(const Json& o, SamplingParams& s) {
  TALLY_API_TRY(read_float(o, "temperature", 0, 100, s.temperature));
  TALLY_API_TRY(read_float(o, "top_p", 0, 1, s.top_p));
  std::optional<int64_t> top_k;
  TALLY_API_TRY(read_int(o, "top_k", -1, kMaxInt32, top_k));
  if (top_k) s.top_k = static_cast<int32_t>(*top_k);
  TALLY_API_TRY(read_float(o, "min_p", 0, 1, s.min_p));
  TALLY_API_TRY(read_float(o, "presence_penalty", -2, 2, s.presence_penalty));
  TALLY_API_TRY(read_float(o, "frequency_penalty", -2, 2, s.frequency_penalty));
  TALLY_API_TRY(read_float(o, "repetition_penalty", 1e-3, 100, s.repetition_penalty));
  std::optional<int64_t> seed;
  TALLY_API_TRY(read_int(o, "seed", std::numeric_limits<int64_t>::min(),
                         std::numeric_limits<int64_t>::max(), seed));
  if (seed) s.seed = static_cast<uint64_t>(*seed);
  return read_logit_bias(o, s);
}

}  // namespace

// Not the CLI's defaults: OpenAI's.
SamplingParams openai_sampling_defaults() {
  SamplingParams s;
  s.temperature = 1.0f;
  s.top_k = 0;
  s.top_p = 1.0f;
  s.min_p = 0.0f;
  s.penalty_last_n = -1;
  s.seed = kRandomSeed;
  return s;
}

Error read_generation_common(const Json& o, GenerationParams& p, const SamplingParams& defaults) {
  p.request.sampling = defaults;
  TALLY_API_TRY(read_string(o, "model", p.model));
  TALLY_API_TRY(read_int(o, "max_tokens", 1, kMaxInt32, p.max_tokens));
  TALLY_API_TRY(read_sampling(o, p.request.sampling));
  std::optional<int64_t> n;
  TALLY_API_TRY(read_int(o, "n", 1, kMaxN, n));
  if (n) p.request.n = static_cast<int32_t>(*n);
  TALLY_API_TRY(read_stop(o, p.request.stop));
  TALLY_API_TRY(read_bool(o, "stream", p.stream));
  TALLY_API_TRY(read_stream_options(o, p));
  TALLY_API_TRY(read_string(o, "user", p.user));
  TALLY_API_TRY(read_string(o, "cache_salt", p.request.cache_salt));
  TALLY_API_TRY(read_bool(o, "ignore_eos", p.request.ignore_eos));
  std::optional<int64_t> min_tokens;
  TALLY_API_TRY(read_int(o, "min_tokens", 0, kMaxInt32, min_tokens));
  if (min_tokens) p.request.min_tokens = static_cast<int32_t>(*min_tokens);
  return std::nullopt;
}

const std::vector<std::string_view>& generation_common_fields() { return kCommonFields; }

namespace {

Error read_token_list(const Json& array, const std::string& field, std::vector<int64_t>& out) {
  out.reserve(array.size());
  for (size_t i = 0; i < array.size(); ++i) {
    int64_t id = 0;
    TALLY_API_TRY(to_int(array[i], fmt::format("{}[{}]", field, i), 0, kMaxInt32, id));
    out.push_back(id);
  }
  return std::nullopt;
}

// "text" | ["text", ...] | [id, ...] | [[id, ...], ...]
Error read_prompts(const Json& o, std::vector<PromptInput>& out) {
  const Json* v = find(o, "prompt");
  if (!v) return ApiError::bad_request("'prompt' is required", "prompt");
  if (v->is_string()) {
    out.emplace_back(v->get<std::string>());
    return std::nullopt;
  }
  if (!v->is_array()) return wrong_type("prompt", "a string or an array", *v);
  if (v->empty()) return ApiError::bad_request("'prompt' must not be an empty array", "prompt");
  const Json& first = (*v)[0];
  if (first.is_number()) {
    std::vector<int64_t> ids;
    TALLY_API_TRY(read_token_list(*v, "prompt", ids));
    out.emplace_back(std::move(ids));
    return std::nullopt;
  }
  for (size_t i = 0; i < v->size(); ++i) {
    const Json& item = (*v)[i];
    const std::string field = fmt::format("prompt[{}]", i);
    if (first.is_string() && item.is_string()) {
      out.emplace_back(item.get<std::string>());
    } else if (first.is_array() && item.is_array()) {
      if (item.empty()) return ApiError::bad_request(fmt::format("'{}' is empty", field), "prompt");
      std::vector<int64_t> ids;
      TALLY_API_TRY(read_token_list(item, field, ids));
      out.emplace_back(std::move(ids));
    } else {
      return wrong_type(field, first.is_array() ? "an array of token ids" : "a string", item);
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<ApiError> parse_completion_request(std::string_view body, CompletionRequest& out,
                                                 IgnoredFields& ignored, const SamplingParams& defaults) {
  Json o;
  TALLY_API_TRY(parse_object(body, o));
  TALLY_API_TRY(read_generation_common(o, out.params, defaults));
  TALLY_API_TRY(read_prompts(o, out.prompts));
  TALLY_API_TRY(read_bool(o, "echo", out.echo));
  std::optional<int64_t> logprobs;
  TALLY_API_TRY(read_int(o, "logprobs", 0, kMaxLogprobs, logprobs));
  if (logprobs) {
    out.params.logprobs = static_cast<int32_t>(*logprobs);
    out.params.request.sampling.logprobs = true;
    out.params.request.sampling.top_logprobs = out.params.logprobs;
  }
  if (const Json* suffix = find(o, "suffix")) {
    if (!suffix->is_string() || !suffix->get<std::string>().empty()) {
      return ApiError::bad_request("'suffix' is not supported", "suffix");
    }
  }
  std::optional<int64_t> best_of;
  TALLY_API_TRY(read_int(o, "best_of", 1, kMaxN, best_of));
  if (best_of && *best_of != out.params.request.n) {
    return ApiError::bad_request("'best_of' other than 'n' is not supported", "best_of");
  }
  std::vector<std::string_view> known = kCommonFields;
  known.insert(known.end(), {"prompt", "echo", "suffix", "best_of"});
  collect_unknown(o, known, ignored);
  return std::nullopt;
}

}  // namespace tally::server
