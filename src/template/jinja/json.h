// JSON in and out of the interpreter: nlohmann JSON (plain or ordered) to Values, and tojson
// as transformers defines it (Python's json.dumps with ensure_ascii=False, keys in insertion
// order, ", " and ": " separators, or "," and newlines when indented).
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "template/jinja/error.h"
#include "template/jinja/value.h"

namespace tally::jinja {

struct JsonDumpOptions {
  std::optional<std::string> indent;  // per-level indent text; nullopt = one line
  std::string item_separator = ", ";  // "," when indented (Python's default)
  std::string key_separator = ": ";
  bool sort_keys = false;
  bool ensure_ascii = false;
  size_t max_bytes = SIZE_MAX;  // a kLimit error once the text passes this
};

// Appends the JSON text of `v`. Undefined values and functions are a render error (Python's
// "not JSON serializable").
void json_dump(std::string& out, const Value& v, const JsonDumpOptions& options);

// A Value holding the same data as `j`; objects keep the JSON object's iteration order (use
// nlohmann::ordered_json to keep the order of the text). Nesting past kMaxValueDepth throws.
template <typename Json>
Value value_from_json(const Json& j, uint32_t depth = 0) {
  if (depth > kMaxValueDepth) {
    throw JinjaError(JinjaError::Kind::kLimit, "JSON input nested too deeply");
  }
  switch (j.type()) {
    case Json::value_t::null:
      return Value::none();
    case Json::value_t::boolean:
      return Value(j.template get<bool>());
    case Json::value_t::number_integer:
      return Value(j.template get<int64_t>());
    case Json::value_t::number_unsigned: {
      const auto u = j.template get<uint64_t>();
      if (u <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        return Value(static_cast<int64_t>(u));
      }
      return Value(static_cast<double>(u));
    }
    case Json::value_t::number_float:
      return Value(j.template get<double>());
    case Json::value_t::string:
      return Value(j.template get_ref<const std::string&>());
    case Json::value_t::array: {
      std::vector<Value> items;
      items.reserve(j.size());
      for (const auto& item : j) items.push_back(value_from_json(item, depth + 1));
      return Value::array(std::move(items));
    }
    case Json::value_t::object: {
      auto obj = std::make_shared<Object>();
      for (auto it = j.begin(); it != j.end(); ++it) {
        obj->set(it.key(), value_from_json(it.value(), depth + 1));
      }
      return Value::object(std::move(obj));
    }
    default:
      return Value::none();  // binary, discarded
  }
}

}  // namespace tally::jinja
