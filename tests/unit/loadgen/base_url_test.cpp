// --base-url: host, port, prefix; https and other schemes refused with a message.
#include "loadgen/base_url.h"

#include <gtest/gtest.h>

namespace tally::loadgen {
namespace {

TEST(BaseUrl, HostPortAndPrefix) {
  auto u = parse_base_url("http://127.0.0.1:8000");
  ASSERT_TRUE(u.ok()) << u.status().message();
  EXPECT_EQ(u->host, "127.0.0.1");
  EXPECT_EQ(u->port, 8000);
  EXPECT_EQ(u->path_prefix, "");
  auto p = parse_base_url("http://localhost/api/");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->port, 80);
  EXPECT_EQ(p->path_prefix, "/api");
  EXPECT_EQ(p->text(), "http://localhost:80/api");
  auto v6 = parse_base_url("http://[::1]:9000");
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(v6->host, "::1");
  EXPECT_EQ(v6->host_header, "[::1]:9000");
}

TEST(BaseUrl, RefusesWhatItCannotServe) {
  auto https = parse_base_url("https://api.example.com");
  ASSERT_FALSE(https.ok());
  EXPECT_NE(https.status().message().find("https is not supported"), std::string::npos);
  for (const char* bad : {"127.0.0.1:8000", "http://:80", "http://h:0", "http://h:99999",
                          "http://h:12x", "http://[::1"}) {
    EXPECT_FALSE(parse_base_url(bad).ok()) << bad;
  }
}

}  // namespace
}  // namespace tally::loadgen
