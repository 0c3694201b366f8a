// Turns generated token ids into printable UTF-8, one token at a time. A token may carry part
// of a character (byte tokens <0xE2><0x96><0x81>, or a byte-level BPE token cut inside a
// character): such bytes are held back until the character is complete; bytes that can never
// become valid UTF-8 come out as U+FFFD (one per maximal ill-formed subpart, as Unicode
// recommends). Control tokens produce nothing. For SPM tokenizers with add_space_prefix, the
// leading space of the piece right after BOS is dropped (as llama2.c's run.c prints).
//
// One instance per stream; not thread-safe. The Tokenizer must outlive it.
#pragma once

#include <cstdint>
#include <string>

#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8_stream.h"

namespace tally {

class StreamingDetokenizer {
 public:
  explicit StreamingDetokenizer(const Tokenizer& tokenizer);

  // The text that `id` completes (may be empty while a character is incomplete).
  std::string push(int32_t id);
  // The held-back bytes of an unfinished character, as U+FFFD; the stream stays usable.
  std::string flush();
  // Forgets held bytes and the previous token (a new stream).
  void reset();

 private:
  const Tokenizer& tokenizer_;
  tok::Utf8Stream utf8_;  // holds the bytes of an incomplete character
  std::string bytes_;     // scratch: this token's bytes
  bool after_bos_ = false;
  bool strip_after_bos_ = false;
};

}  // namespace tally
