// A JSON file of tens of megabytes (a Hugging Face tokenizer.json: 9-33 MB) parsed with
// simdjson's DOM, its text and the parser's buffers on transparent huge pages.
//
// Why: simdjson sizes its tape, string buffer and structural index for the worst case of the
// text's length (~17 bytes a byte) and fills a fraction of them, and the text itself is a fresh
// buffer too. Every first touch of a 4 KiB page is a page fault, and under a VM's nested paging
// a fault costs microseconds: for Gemma 3's 33 MB file the ~21,600 faults of reading and
// parsing took several times the parse itself. On 2 MiB pages they are a few dozen.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include <simdjson.h>

#include "base/huge_page_buffer.h"
#include "base/status.h"

namespace tally::tok {

class HfJsonDocument {
 public:
  // The file at `path`: kNotFound when it does not exist, kIo when it cannot be read, kFormat
  // when it is not JSON.
  static Result<std::unique_ptr<HfJsonDocument>> load(const std::string& path);
  // A copy of `text`, parsed; kFormat when it is not JSON.
  static Result<std::unique_ptr<HfJsonDocument>> parse(std::string_view text);

  // Valid while this document lives (it refers to the document's buffers).
  simdjson::dom::element root() const { return root_; }

  HfJsonDocument(const HfJsonDocument&) = delete;
  HfJsonDocument& operator=(const HfJsonDocument&) = delete;

 private:
  HfJsonDocument() = default;
  // Parses the first `size` bytes of text_ (followed by simdjson's padding).
  Status parse_text(size_t size);

  HugePageBuffer text_;  // [size + SIMDJSON_PADDING]
  simdjson::dom::parser parser_;
  simdjson::dom::document doc_;
  simdjson::dom::element root_;
};

}  // namespace tally::tok
