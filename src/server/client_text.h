// Client-supplied strings (field names, keys, paths) as they may appear in error messages and
// the server log: quoted, every byte outside printable ASCII escaped (\n, \t, \xNN...), and
// cut to a bounded length, so a client can neither forge log lines nor flood them.
#pragma once

#include <string>
#include <string_view>

namespace tally::server {

// At most max_bytes of the input are shown; a longer one ends in "..." after the quote.
std::string quote_client_text(std::string_view text, size_t max_bytes = 64);

}  // namespace tally::server
