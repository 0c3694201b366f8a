#include "tokenizer/nfc.h"

#include <climits>

#include <unicode/bytestream.h>
#include <unicode/normalizer2.h>
#include <unicode/stringpiece.h>

#include "tokenizer/utf8.h"

namespace tally::tok {

bool nfc_normalize(std::string_view text, std::string& out) {
  // ASCII is always NFC: the common case costs one scan.
  bool ascii = true;
  for (char c : text) ascii = ascii && static_cast<unsigned char>(c) < 0x80;
  if (ascii || text.size() > INT32_MAX || !utf8_is_valid(text)) return false;
  UErrorCode status = U_ZERO_ERROR;
  const icu::Normalizer2* nfc = icu::Normalizer2::getNFCInstance(status);
  if (U_FAILURE(status)) return false;
  const icu::StringPiece piece(text.data(), static_cast<int32_t>(text.size()));
  if (nfc->isNormalizedUTF8(piece, status) && U_SUCCESS(status)) return false;
  status = U_ZERO_ERROR;
  std::string normalized;
  icu::StringByteSink<std::string> sink(&normalized, static_cast<int32_t>(text.size()));
  nfc->normalizeUTF8(0, piece, sink, nullptr, status);
  if (U_FAILURE(status)) return false;
  out = std::move(normalized);
  return true;
}

}  // namespace tally::tok
