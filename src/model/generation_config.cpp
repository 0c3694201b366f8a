#include "model/generation_config.h"

#include <cmath>
#include <filesystem>
#include <limits>

#include "tokenizer/tokenizer_hf.h"

namespace tally {

namespace {

using nlohmann::json;

constexpr const char* kTemp = "general.sampling.temp";
constexpr const char* kTopK = "general.sampling.top_k";
constexpr const char* kTopP = "general.sampling.top_p";
constexpr const char* kMinP = "general.sampling.min_p";
constexpr const char* kPenaltyRepeat = "general.sampling.penalty_repeat";
constexpr const char* kPenaltyLastN = "general.sampling.penalty_last_n";
constexpr const char* kEosIds = "tokenizer.ggml.eos_token_ids";

// What a value that is not the expected kind is called in a message: numbers as written, other
// values by their JSON type (dumping one could recurse as deep as the file nests).
std::string describe_value(const json& v) { return v.is_number() ? v.dump() : std::string(v.type_name()); }

Status read_float(const json& g, const char* field, std::optional<float>& out) {
  auto it = g.find(field);
  if (it == g.end() || it->is_null()) return Status::ok_status();
  // Past float's range the conversion below would be undefined, and the value means nothing.
  if (!it->is_number() || !(std::fabs(it->get<double>()) <= std::numeric_limits<float>::max()))
    return make_error(ErrorCode::kFormat, "generation_config.json: {} is not a number within float's range ({})", field,
                      describe_value(*it));
  out = static_cast<float>(it->get<double>());
  return Status::ok_status();
}

// An integer in [lo, hi]; nlohmann keeps integers past INT64_MAX as unsigned, which get<int64_t>
// would wrap to negatives.
std::optional<int32_t> int32_in(const json& v, int64_t lo, int64_t hi) {
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(hi)) return std::nullopt;
    return static_cast<int32_t>(u);
  }
  if (!v.is_number_integer() || v.get<int64_t>() < lo || v.get<int64_t>() > hi) return std::nullopt;
  return static_cast<int32_t>(v.get<int64_t>());
}

Status read_int(const json& g, const char* field, std::optional<int32_t>& out) {
  auto it = g.find(field);
  if (it == g.end() || it->is_null()) return Status::ok_status();
  out = int32_in(*it, INT32_MIN, INT32_MAX);
  if (!out)
    return make_error(ErrorCode::kFormat, "generation_config.json: {} is not a 32-bit integer ({})", field,
                      describe_value(*it));
  return Status::ok_status();
}

// eos_token_id: one id or a list of ids (read in place: a copy of a nested value would recurse).
Status read_eos(const json& g, std::vector<int32_t>& out) {
  auto it = g.find("eos_token_id");
  if (it == g.end() || it->is_null()) return Status::ok_status();
  auto add = [&out](const json& id) -> Status {
    const std::optional<int32_t> v = int32_in(id, 0, INT32_MAX);
    if (!v)
      return make_error(ErrorCode::kFormat, "generation_config.json: eos_token_id {} is not a token id",
                        describe_value(id));
    out.push_back(*v);
    return Status::ok_status();
  };
  if (!it->is_array()) return add(*it);
  for (const json& id : *it) TALLY_RETURN_IF_ERROR(add(id));
  return Status::ok_status();
}

Status with_range_check(const SamplingDefaults& s, std::string_view where) {
  if (Status st = s.validate(); !st.ok()) return make_error(ErrorCode::kFormat, "{}: {}", where, st.message());
  return Status::ok_status();
}

}  // namespace

Result<GenerationConfig> parse_generation_config(const json& g) {
  if (!g.is_object()) return make_error(ErrorCode::kFormat, "generation_config.json: not a JSON object");
  GenerationConfig c;
  TALLY_RETURN_IF_ERROR(read_float(g, "temperature", c.sampling.temperature));
  TALLY_RETURN_IF_ERROR(read_int(g, "top_k", c.sampling.top_k));
  TALLY_RETURN_IF_ERROR(read_float(g, "top_p", c.sampling.top_p));
  TALLY_RETURN_IF_ERROR(read_float(g, "min_p", c.sampling.min_p));
  TALLY_RETURN_IF_ERROR(read_float(g, "repetition_penalty", c.sampling.repetition_penalty));
  TALLY_RETURN_IF_ERROR(with_range_check(c.sampling, "generation_config.json"));
  TALLY_RETURN_IF_ERROR(read_eos(g, c.eos_ids));
  return c;
}

Result<GenerationConfig> read_generation_config_dir(const std::string& dir) {
  auto text = read_hf_file(dir + "/generation_config.json");
  if (!text.ok()) {
    if (text.status().code() == ErrorCode::kNotFound) return GenerationConfig{};
    return text.status();
  }
  return parse_generation_config_text(*text);
}

Result<GenerationConfig> parse_generation_config_text(std::string_view text) {
  // Not valid JSON -> a discarded value, which parse_generation_config refuses as no object.
  return parse_generation_config(json::parse(text, nullptr, /*allow_exceptions=*/false));
}

void write_generation_config(const GenerationConfig& c, std::optional<int32_t> eos_id, io::GgufWriter& w) {
  const SamplingDefaults& s = c.sampling;
  if (s.temperature) w.set_f32(kTemp, *s.temperature);
  if (s.top_k) w.set_i32(kTopK, *s.top_k);
  if (s.top_p) w.set_f32(kTopP, *s.top_p);
  if (s.min_p) w.set_f32(kMinP, *s.min_p);
  if (s.repetition_penalty) w.set_f32(kPenaltyRepeat, *s.repetition_penalty);
  if (s.penalty_last_n) w.set_i32(kPenaltyLastN, *s.penalty_last_n);
  if (c.eos_ids.size() > 1 || (c.eos_ids.size() == 1 && c.eos_ids.front() != eos_id)) w.set_i32_array(kEosIds, c.eos_ids);
}

Result<SamplingDefaults> read_gguf_sampling_defaults(const io::GgufFile& f) {
  SamplingDefaults s;
  auto get_float = [&f](const char* key, std::optional<float>& out) -> Status {
    if (!f.find(key)) return Status::ok_status();
    TALLY_ASSIGN_OR_RETURN(double v, f.get_float(key));
    out = static_cast<float>(v);
    return Status::ok_status();
  };
  auto get_int = [&f](const char* key, std::optional<int32_t>& out) -> Status {
    if (!f.find(key)) return Status::ok_status();
    TALLY_ASSIGN_OR_RETURN(int64_t v, f.get_int(key));
    if (v < INT32_MIN || v > INT32_MAX) return make_error(ErrorCode::kFormat, "{}: {} is out of range", key, v);
    out = static_cast<int32_t>(v);
    return Status::ok_status();
  };
  TALLY_RETURN_IF_ERROR(get_float(kTemp, s.temperature));
  TALLY_RETURN_IF_ERROR(get_int(kTopK, s.top_k));
  TALLY_RETURN_IF_ERROR(get_float(kTopP, s.top_p));
  TALLY_RETURN_IF_ERROR(get_float(kMinP, s.min_p));
  TALLY_RETURN_IF_ERROR(get_float(kPenaltyRepeat, s.repetition_penalty));
  TALLY_RETURN_IF_ERROR(get_int(kPenaltyLastN, s.penalty_last_n));
  TALLY_RETURN_IF_ERROR(with_range_check(s, "general.sampling"));
  return s;
}

Result<SamplingDefaults> resolve_generation_config(std::string_view setting, const io::GgufFile* model) {
  if (setting == "auto") return model ? read_gguf_sampling_defaults(*model) : SamplingDefaults{};
  if (setting == "none") return SamplingDefaults{};
  const std::string dir(setting);
  std::error_code ec;
  if (!std::filesystem::exists(dir + "/generation_config.json", ec))
    return make_error(ErrorCode::kInvalidArgument,
                      "--generation-config {}: not 'auto', 'none' or a directory with a generation_config.json", dir);
  TALLY_ASSIGN_OR_RETURN(GenerationConfig c, read_generation_config_dir(dir));
  return c.sampling;
}

}  // namespace tally
