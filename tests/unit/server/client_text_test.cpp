// Client strings reach the log and error messages escaped: no raw newline or control byte can
// forge a log line, and a long one is cut.
#include "server/client_text.h"

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <gtest/gtest.h>

#include <sstream>

#include "test_server.h"

namespace {

using tally::server::quote_client_text;

TEST(ClientText, EscapesControlBytesAndCutsLongText) {
  EXPECT_EQ(quote_client_text("temperature"), "'temperature'");
  EXPECT_EQ(quote_client_text("a\nb\r\tc"), "'a\\nb\\r\\tc'");
  EXPECT_EQ(quote_client_text(std::string("x\0y\x1b[31m\x7f", 9)), "'x\\x00y\\x1b[31m\\x7f'");
  EXPECT_EQ(quote_client_text("it's \\"), "'it\\'s \\\\'");
  EXPECT_EQ(quote_client_text("\xc3\xa9"), "'\\xc3\\xa9'");
  EXPECT_EQ(quote_client_text(std::string(100, 'k'), 4), "'kkkk'...");
}

TEST(ClientText, IgnoredFieldNamesAreEscapedInTheLog) {
  std::ostringstream captured;
  auto previous = spdlog::default_logger();
  auto logger = std::make_shared<spdlog::logger>(
      "capture", std::make_shared<spdlog::sinks::ostream_sink_mt>(captured));
  logger->set_pattern("%v");
  spdlog::set_default_logger(logger);
  {
    tally_test::TestServer server;
    const auto reply = server.post(
        "/v1/completions",
        R"({"prompt": "hi", "max_tokens": 1, "evil\n[00:00:00] [error] forged\u001b[0m": 1})");
    EXPECT_EQ(reply.status, 200) << reply.body;
    server.stop();
  }
  spdlog::set_default_logger(previous);
  const std::string log = captured.str();
  const size_t at = log.find("ignored request fields");
  ASSERT_NE(at, std::string::npos) << log;
  const std::string line = log.substr(at, log.find('\n', at) - at);
  EXPECT_NE(line.find("'evil\\n[00:00:00] [error] forged\\x1b[0m'"), std::string::npos) << line;
  EXPECT_EQ(log.find("\n[00:00:00] [error] forged"), std::string::npos) << log;
}

}  // namespace
