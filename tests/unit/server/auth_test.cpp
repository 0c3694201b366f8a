// API keys: Bearer parsing, matching, key files, and that ids never reveal the key.
#include "server/auth.h"

#include <gtest/gtest.h>

#include <fstream>

#include "support/test_data.h"

namespace {

using tally::server::ApiKeys;
using tally::server::constant_time_equal;

TEST(ConstantTimeEqual, ComparesWholeStrings) {
  EXPECT_TRUE(constant_time_equal("secret", "secret"));
  EXPECT_FALSE(constant_time_equal("secret", "secreT"));
  EXPECT_FALSE(constant_time_equal("secret", "secret2"));
  EXPECT_FALSE(constant_time_equal("secret", ""));
  EXPECT_FALSE(constant_time_equal("", "x"));
  EXPECT_TRUE(constant_time_equal("", ""));
}

TEST(ApiKeys, DisabledWithoutKeys) { EXPECT_FALSE(ApiKeys().enabled()); }

TEST(ApiKeys, AcceptsBearerTokensOfAnyKey) {
  ApiKeys keys({"alpha-key", "beta-key"});
  ASSERT_TRUE(keys.enabled());
  EXPECT_EQ(keys.check("Bearer alpha-key"), ApiKeys::key_id("alpha-key"));
  EXPECT_EQ(keys.check("Bearer beta-key"), ApiKeys::key_id("beta-key"));
  EXPECT_EQ(keys.check("bearer beta-key"), ApiKeys::key_id("beta-key"));  // scheme: any case
  EXPECT_EQ(keys.check("  Bearer   alpha-key  "), ApiKeys::key_id("alpha-key"));
}

TEST(ApiKeys, RefusesEverythingElse) {
  ApiKeys keys({"alpha-key"});
  EXPECT_FALSE(keys.check(std::nullopt));
  EXPECT_FALSE(keys.check(""));
  EXPECT_FALSE(keys.check("alpha-key"));        // no scheme
  EXPECT_FALSE(keys.check("Basic alpha-key"));  // another scheme
  EXPECT_FALSE(keys.check("Bearer "));
  EXPECT_FALSE(keys.check("Bearer alpha-ke"));    // a prefix
  EXPECT_FALSE(keys.check("Bearer alpha-key2"));  // longer
  EXPECT_FALSE(keys.check("Bearer ALPHA-KEY"));   // keys are case-sensitive
}

TEST(ApiKeys, IdsAreStableDistinctAndDoNotContainTheKey) {
  const std::string a = ApiKeys::key_id("sk-abcdefgh12345678");
  EXPECT_EQ(a, ApiKeys::key_id("sk-abcdefgh12345678"));
  EXPECT_NE(a, ApiKeys::key_id("sk-abcdefgh12345679"));
  EXPECT_EQ(a.rfind("key-", 0), 0u);
  EXPECT_EQ(a.size(), 12u);
  EXPECT_EQ(a.find("abcdefgh"), std::string::npos);
}

TEST(ApiKeys, ReadsKeyFiles) {
  const std::string path = tally_test::temp_dir() + "/keys.txt";
  std::ofstream(path) << "# team keys\n\n  first-key  \nsecond-key\r\n# old: third\n";
  auto keys = ApiKeys::read_file(path);
  ASSERT_TRUE(keys.ok()) << keys.status().message();
  EXPECT_EQ(*keys, (std::vector<std::string>{"first-key", "second-key"}));
}

TEST(ApiKeys, KeyFileErrorsNameTheFileAndLine) {
  auto missing = ApiKeys::read_file("/nonexistent/keys.txt");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("/nonexistent/keys.txt"), std::string::npos);

  const std::string dir = tally_test::temp_dir();
  std::ofstream(dir + "/bad.txt") << "good\nhas space\n";
  auto bad = ApiKeys::read_file(dir + "/bad.txt");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("bad.txt:2"), std::string::npos) << bad.status().message();

  std::ofstream(dir + "/empty.txt") << "# nothing\n";
  EXPECT_FALSE(ApiKeys::read_file(dir + "/empty.txt").ok());
}

}  // namespace
