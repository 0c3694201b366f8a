// Client strings reach error messages escaped: no raw newline or control byte, and a long one
// is cut.
#include "server/client_text.h"

#include <gtest/gtest.h>

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

}  // namespace
