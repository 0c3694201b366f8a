// The start-up ledger's text: every figure of the ledger appears, in the units people read.
#include <gtest/gtest.h>

#include "engine/ledger_text.h"

namespace {

TEST(LedgerText, NamesEveryFigure) {
  tally::MemoryLedger l;
  l.weight_bytes_mapped = 1024;
  l.weight_bytes_owned = 3 << 20;
  l.activation_bytes = 512 << 10;
  l.kv_blocks = 745;
  l.block_size = 16;
  l.token_capacity = 745 * 16;
  l.kv_bytes_per_token = 45056;
  l.kv_bytes = l.token_capacity * l.kv_bytes_per_token;
  l.other_bytes = 100;
  const std::string text = tally::format_ledger(l, "> ");
  EXPECT_NE(text.find("> weights   3.00 MiB (1.00 KiB mapped + 3.00 MiB owned)\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("> buffers   512.00 KiB\n"), std::string::npos) << text;
  EXPECT_NE(text.find("> kv cache  512.19 MiB = 745 blocks x 16 tokens = 11920 tokens x 44.00 KiB\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("> other     100 B\n"), std::string::npos) << text;
  EXPECT_NE(text.find("> total     515.69 MiB\n"), std::string::npos) << text;
}

}  // namespace
