// Reading typed fields out of a JSON request object with errors that name the field
// (internal to the openai_request*.cpp files). null counts as absent.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/api_error.h"

namespace tally::server::json_fields {

using Json = nlohmann::json;
using Error = std::optional<ApiError>;

// The body as a JSON object: 400 for bad JSON (with the parser's position), nesting deeper
// than 64, or a top-level value that is not an object.
Error parse_object(std::string_view body, Json& out);

// The field's value, or nullptr when absent or null.
const Json* find(const Json& object, const char* name);

// "a string", "an integer", ...: how a JSON value's type reads in an error message.
const char* type_phrase(const Json& value);
ApiError wrong_type(const std::string& field, const char* expected, const Json& got);

Error read_string(const Json& object, const char* name, std::string& out);
Error read_bool(const Json& object, const char* name, bool& out);
// Integers, or floats with an integral value (16.0), within [lo, hi].
Error read_int(const Json& object, const char* name, int64_t lo, int64_t hi,
               std::optional<int64_t>& out);
Error to_int(const Json& value, const std::string& field, int64_t lo, int64_t hi, int64_t& out);
// Finite numbers within [lo, hi].
Error read_float(const Json& object, const char* name, double lo, double hi, float& out);

// Adds the object's keys that are not in `known` to `ignored`.
void collect_unknown(const Json& object, const std::vector<std::string_view>& known,
                     std::vector<std::string>& ignored);

}  // namespace tally::server::json_fields

// Returns the error of a reader, if any.
#define TALLY_API_TRY(expr)                                      \
  do {                                                           \
    if (auto tally_api_error_ = (expr)) return tally_api_error_; \
  } while (0)
