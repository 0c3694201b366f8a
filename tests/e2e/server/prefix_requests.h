// Requests for the prefix-cache and offload end-to-end tests: a long stories260K prompt, a
// greedy completion (plain or streamed, with an optional cache_salt), its cached_tokens, and
// one /metrics value.
#pragma once

#include <cstdint>
#include <regex>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "serve_process.h"

namespace tally_test {

using json = nlohmann::json;

// A prompt of many tokens for stories260K (a few words per token).
inline std::string long_prompt() {
  return "Once upon a time there was a little girl named Lily. She loved to play in the park "
         "with her big red ball. One day her mom said they would go to the park after lunch. "
         "Lily was very happy and ran to get her shoes.";
}

inline json complete(const std::string& url, const std::string& prompt,
                     const std::string& salt = "", bool stream = false) {
  json body = {{"prompt", prompt}, {"max_tokens", 8}, {"temperature", 0}};
  if (!salt.empty()) body["cache_salt"] = salt;
  if (stream) {
    body["stream"] = true;
    body["stream_options"] = {{"include_usage", true}};
  }
  const auto r = curl(url + "/v1/completions", "POST", body.dump(),
                      {"Content-Type: application/json"});
  EXPECT_EQ(r.status, 200) << r.body;
  if (!stream) return json::parse(r.body, nullptr, false);
  // The usage chunk is the last data line before [DONE]; text is gathered from all.
  json last;
  std::string text;
  size_t pos = 0;
  while ((pos = r.body.find("data: ", pos)) != std::string::npos) {
    const size_t end = r.body.find("\n\n", pos);
    const std::string data = r.body.substr(pos + 6, end - pos - 6);
    pos = end;
    if (data == "[DONE]") break;
    json chunk = json::parse(data);
    for (const auto& c : chunk["choices"]) text += c["text"].get<std::string>();
    if (chunk.contains("usage") && !chunk["usage"].is_null()) last = chunk;
  }
  last["text"] = text;
  return last;
}

inline int64_t cached_of(const json& reply) {
  return reply["usage"]["prompt_tokens_details"]["cached_tokens"].get<int64_t>();
}

// The first series of `name` whose labels contain `label` (e.g. `tier="disk"`); -1 if none.
inline double metric(const std::string& url, const std::string& name,
                     const std::string& label = "") {
  const auto r = curl(url + "/metrics", "GET");
  std::smatch m;
  const std::regex re("\n" + name + "\\{[^}]*" + label + "[^}]*\\} ([0-9.e+]+)");
  if (!std::regex_search(r.body, m, re)) return -1;
  return std::stod(m[1]);
}

}  // namespace tally_test
