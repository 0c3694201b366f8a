#include "engine/ledger_text.h"

#include <fmt/format.h>

#include "plan/memory_size.h"

namespace tally {

std::string format_ledger(const MemoryLedger& l, const std::string& indent) {
  using plan::format_bytes;
  std::string s;
  s += fmt::format("{}weights   {} ({} mapped + {} owned)\n", indent,
                   format_bytes(l.weight_bytes_mapped + l.weight_bytes_owned),
                   format_bytes(l.weight_bytes_mapped), format_bytes(l.weight_bytes_owned));
  s += fmt::format("{}buffers   {}\n", indent, format_bytes(l.activation_bytes));
  s += fmt::format("{}kv cache  {} = {} blocks x {} tokens = {} tokens x {}\n", indent,
                   format_bytes(l.kv_bytes), l.kv_blocks, l.block_size, l.token_capacity,
                   format_bytes(l.kv_bytes_per_token));
  if (l.kv_offload_bytes > 0) {
    s += fmt::format("{}kv host   {} (offload tier, filled as the pool evicts)\n", indent,
                     format_bytes(l.kv_offload_bytes));
  }
  s += fmt::format("{}other     {}\n", indent, format_bytes(l.other_bytes));
  if (l.draft_bytes() > 0) {
    s += fmt::format("{}draft     {} ({} weights + {} kv cache + {} buffers)\n", indent,
                     format_bytes(l.draft_bytes()),
                     format_bytes(l.draft_weight_bytes), format_bytes(l.draft_kv_bytes),
                     format_bytes(l.draft_buffer_bytes));
  }
  s += fmt::format("{}total     {}\n", indent, format_bytes(l.total()));
  return s;
}

}  // namespace tally
