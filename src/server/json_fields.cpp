#include "server/json_fields.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace tally::server::json_fields {

namespace {

constexpr int kMaxDepth = 64;

struct TooDeep {};

// nlohmann's messages start with "[json.exception.parse_error.101] ": keep what follows.
std::string clean_parse_message(const char* what) {
  std::string_view s(what);
  if (s.starts_with("[json.exception.")) {
    const size_t end = s.find("] ");
    if (end != std::string_view::npos) s.remove_prefix(end + 2);
  }
  return std::string(s);
}

}  // namespace

Error parse_object(std::string_view body, Json& out) {
  try {
    out = Json::parse(body, [](int depth, Json::parse_event_t, Json&) {
      if (depth > kMaxDepth) throw TooDeep{};
      return true;
    });
  } catch (const TooDeep&) {
    return ApiError::bad_request(
        fmt::format("request body nests deeper than {} levels", kMaxDepth));
  } catch (const Json::exception& e) {
    return ApiError::bad_request("request body is not valid JSON: " +
                                 clean_parse_message(e.what()));
  }
  if (!out.is_object()) {
    return ApiError::bad_request(
        fmt::format("request body must be a JSON object, got {}", type_phrase(out)));
  }
  return std::nullopt;
}

const Json* find(const Json& object, const char* name) {
  auto it = object.find(name);
  if (it == object.end() || it->is_null()) return nullptr;
  return &*it;
}

const char* type_phrase(const Json& value) {
  switch (value.type()) {
    case Json::value_t::null:
      return "null";
    case Json::value_t::object:
      return "an object";
    case Json::value_t::array:
      return "an array";
    case Json::value_t::string:
      return "a string";
    case Json::value_t::boolean:
      return "a boolean";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
      return "an integer";
    case Json::value_t::number_float:
      return "a number";
    default:
      return "an unsupported value";
  }
}

ApiError wrong_type(const std::string& field, const char* expected, const Json& got) {
  return ApiError::bad_request(
      fmt::format("'{}' must be {}, got {}", field, expected, type_phrase(got)), field);
}

Error read_string(const Json& object, const char* name, std::string& out) {
  const Json* v = find(object, name);
  if (!v) return std::nullopt;
  if (!v->is_string()) return wrong_type(name, "a string", *v);
  out = v->get<std::string>();
  return std::nullopt;
}

Error read_bool(const Json& object, const char* name, bool& out) {
  const Json* v = find(object, name);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) return wrong_type(name, "a boolean", *v);
  out = v->get<bool>();
  return std::nullopt;
}

Error to_int(const Json& value, const std::string& field, int64_t lo, int64_t hi, int64_t& out) {
  auto out_of_range = [&](const std::string& shown) {
    return ApiError::bad_request(
        fmt::format("'{}' must be an integer in [{}, {}], got {}", field, lo, hi, shown), field);
  };
  if (value.is_number_unsigned()) {
    const uint64_t u = value.get<uint64_t>();
    if (u > static_cast<uint64_t>(hi)) return out_of_range(std::to_string(u));
    out = static_cast<int64_t>(u);
  } else if (value.is_number_integer()) {
    out = value.get<int64_t>();
  } else if (value.is_number_float()) {
    const double d = value.get<double>();
    if (!std::isfinite(d) || d != std::floor(d)) return wrong_type(field, "an integer", value);
    // 2^63 itself compares equal to (double)INT64_MAX but does not fit: converting it (or
    // anything beyond) would be undefined behaviour.
    constexpr double kTwoTo63 = 9223372036854775808.0;
    if (d < static_cast<double>(lo) || d > static_cast<double>(hi) || d >= kTwoTo63) {
      return out_of_range(fmt::format("{}", d));
    }
    out = static_cast<int64_t>(d);
  } else {
    return wrong_type(field, "an integer", value);
  }
  if (out < lo || out > hi) return out_of_range(std::to_string(out));
  return std::nullopt;
}

Error read_int(const Json& object, const char* name, int64_t lo, int64_t hi,
               std::optional<int64_t>& out) {
  const Json* v = find(object, name);
  if (!v) return std::nullopt;
  int64_t value = 0;
  TALLY_API_TRY(to_int(*v, name, lo, hi, value));
  out = value;
  return std::nullopt;
}

Error read_float(const Json& object, const char* name, double lo, double hi, float& out) {
  const Json* v = find(object, name);
  if (!v) return std::nullopt;
  if (!v->is_number()) return wrong_type(name, "a number", *v);
  const double d = v->get<double>();
  if (!std::isfinite(d) || d < lo || d > hi) {
    return ApiError::bad_request(
        fmt::format("'{}' must be a number in [{}, {}], got {}", name, lo, hi, d), name);
  }
  out = static_cast<float>(d);
  return std::nullopt;
}

void collect_unknown(const Json& object, const std::vector<std::string_view>& known,
                     std::vector<std::string>& ignored) {
  for (auto it = object.begin(); it != object.end(); ++it) {
    if (std::find(known.begin(), known.end(), it.key()) == known.end()) {
      ignored.push_back(it.key());
    }
  }
}

}  // namespace tally::server::json_fields
