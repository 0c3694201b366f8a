// Unicode NFC (canonical composition), the "NFC" normalizer of Hugging Face tokenizers (Qwen):
// "e" + U+0301 becomes "é" before the model sees the text. ICU does the work.
#pragma once

#include <string>
#include <string_view>

namespace tally::tok {

// Writes NFC(text) to `out` and returns true when it differs from `text` (false: `text` is
// already NFC, `out` untouched). Invalid UTF-8 is left as it is (the encoders handle it).
bool nfc_normalize(std::string_view text, std::string& out);

}  // namespace tally::tok
