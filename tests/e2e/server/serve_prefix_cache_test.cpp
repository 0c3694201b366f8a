// The prefix cache through `tally serve`: usage.prompt_tokens_details.cached_tokens (plain and
// streamed), cache_salt, the /metrics counters, the same text with and without the cache, and
// --no-prefix-cache.
#include <signal.h>

#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "prefix_requests.h"
#include "serve_process.h"

namespace {

using nlohmann::json;
using tally_test::cached_of;
using tally_test::complete;
using tally_test::long_prompt;
using tally_test::metric;
using tally_test::ServeProcess;

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
