// The prefix cache through `tally serve`: usage.prompt_tokens_details.cached_tokens (plain and
// streamed), cache_salt, the /metrics counters, the same text with and without the cache, and
// --no-prefix-cache.
#include <signal.h>

#include <regex>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "serve_process.h"

namespace {

using nlohmann::json;
using tally_test::curl;
using tally_test::ServeProcess;

// A prompt of many tokens for stories260K (a few words per token).
std::string long_prompt() {
  return "Once upon a time there was a little girl named Lily. She loved to play in the park "
         "with her big red ball. One day her mom said they would go to the park after lunch. "
         "Lily was very happy and ran to get her shoes.";
}

json complete(const std::string& url, const std::string& prompt, const std::string& salt = "",
              bool stream = false) {
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

int64_t cached_of(const json& reply) {
  return reply["usage"]["prompt_tokens_details"]["cached_tokens"].get<int64_t>();
}

double metric(const std::string& url, const std::string& name) {
  const auto r = curl(url + "/metrics", "GET");
  std::smatch m;
  const std::regex re("\n" + name + "\\{[^}]*\\} ([0-9.e+]+)");
  if (!std::regex_search(r.body, m, re)) return -1;
  return std::stod(m[1]);
}

TEST(ServePrefixCache, CachedTokensMetricsAndSameText) {
  ServeProcess server;
  ASSERT_TRUE(server.started());
  const std::string url = server.url();
  const json first = complete(url, long_prompt());
  ASSERT_TRUE(first.contains("usage")) << first.dump();
  EXPECT_EQ(cached_of(first), 0);
  const int64_t prompt_tokens = first["usage"]["prompt_tokens"].get<int64_t>();
  ASSERT_GT(prompt_tokens, 32);

  const json again = complete(url, long_prompt());
  const int64_t cached = cached_of(again);
  EXPECT_GT(cached, 0);
  EXPECT_LT(cached, prompt_tokens);
  EXPECT_EQ(again["choices"][0]["text"], first["choices"][0]["text"]);

  const json streamed = complete(url, long_prompt(), "", true);
  EXPECT_EQ(cached_of(streamed), cached);
  EXPECT_EQ(streamed["text"], first["choices"][0]["text"]);

  EXPECT_EQ(cached_of(complete(url, long_prompt(), "tenant-b")), 0);

  const double queries = metric(url, "tally:prefix_cache_queries_total");
  const double hits = metric(url, "tally:prefix_cache_hits_total");
  EXPECT_EQ(queries, 4.0 * static_cast<double>(prompt_tokens));
  EXPECT_EQ(hits, 2.0 * static_cast<double>(cached));
  EXPECT_EQ(server.stop(SIGTERM), 0);
}

TEST(ServePrefixCache, NoPrefixCacheFlagTurnsItOff) {
  ServeProcess server({"--no-prefix-cache"});
  ASSERT_TRUE(server.started());
  const std::string url = server.url();
  const json first = complete(url, long_prompt());
  const json again = complete(url, long_prompt());
  EXPECT_EQ(cached_of(again), 0);
  EXPECT_EQ(again["choices"][0]["text"], first["choices"][0]["text"]);
  EXPECT_EQ(metric(url, "tally:prefix_cache_queries_total"), 0.0);
  EXPECT_EQ(server.stop(SIGTERM), 0);
}

}  // namespace
