// The request fields /v1/completions and /v1/chat/completions read alike (internal to
// openai_request.cpp and chat_request.cpp).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>
#include <vector>

#include "server/openai_request.h"

namespace tally::server {

// Sampling (`defaults` for what is absent), limits, stop, streaming, extensions.
std::optional<ApiError> read_generation_common(const nlohmann::json& o, GenerationParams& p,
                                               const SamplingParams& defaults);
// The names read_generation_common() knows.
const std::vector<std::string_view>& generation_common_fields();

}  // namespace tally::server
