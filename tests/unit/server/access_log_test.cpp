// Access-log lines: one JSON object with the request id, status, timing and what is known.
#include "server/access_log.h"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "support/test_data.h"

namespace {

using tally::server::AccessLog;
using tally::server::ExchangeLog;
using tally::server::ExchangeSummary;
using tally::server::HttpRequest;

TEST(AccessLog, FormatsOneJsonLine) {
  HttpRequest req;
  req.method = "POST";
  req.target = "/v1/completions?x=1";
  req.path = "/v1/completions";
  req.remote = "127.0.0.1:4000";
  req.headers = {{"User-Agent", "curl/8"}};
  ExchangeLog log;
  log.request_id = "req-1";
  log.model = "m";
  log.prompt_tokens = 5;
  log.completion_tokens = 7;
  log.key_id = "key-0000abcd";
  log.error = "bad \xFF byte";
  ExchangeSummary s{req, log, 200, 1234, 0.04567, false};
  const std::string line = AccessLog::format(s, 1714564800.25);
  EXPECT_EQ(line.find('\n'), std::string::npos);
  const auto j = nlohmann::json::parse(line);
  EXPECT_EQ(j["ts"], "2024-05-01T12:00:00.250Z");
  EXPECT_EQ(j["request_id"], "req-1");
  EXPECT_EQ(j["path"], "/v1/completions");
  EXPECT_EQ(j["status"], 200);
  EXPECT_EQ(j["bytes"], 1234);
  EXPECT_DOUBLE_EQ(j["duration_ms"].get<double>(), 45.7);
  EXPECT_EQ(j["prompt_tokens"], 5);
  EXPECT_EQ(j["completion_tokens"], 7);
  EXPECT_EQ(j["key"], "key-0000abcd");
  EXPECT_EQ(j["user_agent"], "curl/8");
  EXPECT_EQ(j["error"], "bad \xEF\xBF\xBD byte");
  EXPECT_EQ(j["client_gone"], false);
}

TEST(AccessLog, OmitsWhatIsUnknown) {
  HttpRequest req;
  req.target = "/x";
  ExchangeLog log;
  ExchangeSummary s{req, log, 404, 10, 0, true};
  const auto j = nlohmann::json::parse(AccessLog::format(s, 0));
  EXPECT_FALSE(j.contains("model"));
  EXPECT_FALSE(j.contains("prompt_tokens"));
  EXPECT_FALSE(j.contains("key"));
  EXPECT_EQ(j["path"], "/x");
  EXPECT_EQ(j["client_gone"], true);
}

TEST(AccessLog, AppendsToAFileAndCanBeOff) {
  EXPECT_FALSE(AccessLog::open("off")->enabled());
  EXPECT_FALSE(AccessLog::open("/nonexistent/dir/log").ok());
  const std::string path = tally_test::temp_dir() + "/access.log";
  {
    auto log = AccessLog::open(path);
    ASSERT_TRUE(log.ok());
    HttpRequest req;
    ExchangeLog el;
    el.request_id = "r1";
    log->write(ExchangeSummary{req, el, 200, 1, 0, false});
    el.request_id = "r2";
    log->write(ExchangeSummary{req, el, 200, 1, 0, false});
  }
  std::ifstream in(path);
  std::string l1, l2;
  std::getline(in, l1);
  std::getline(in, l2);
  EXPECT_EQ(nlohmann::json::parse(l1)["request_id"], "r1");
  EXPECT_EQ(nlohmann::json::parse(l2)["request_id"], "r2");
}

}  // namespace
