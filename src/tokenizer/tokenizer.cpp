#include "tokenizer/tokenizer.h"

#include <array>
#include <charconv>

#include "tokenizer/bpe_encoder.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/nfc.h"
#include "tokenizer/pre_tokenizer_specs.h"
#include "tokenizer/special_token_matcher.h"
#include "tokenizer/spm_encoder.h"
#include "tokenizer/vocab_tables.h"

namespace tally {

namespace {

constexpr std::string_view kSpmSpace = "\xE2\x96\x81";  // U+2581 LOWER ONE EIGHTH BLOCK

// Texts llama.cpp takes as EOT when tokenizer.ggml.eot_token_id is absent (in this order).
constexpr std::array<std::string_view, 10> kEotTexts = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|end_of_text|>",
    "<EOT>", "_<EOT>",
    "<\xEF\xBD\x9C" "end\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>",  // DeepSeek
    "<end_of_utterance>"};
// Texts that end generation whatever the metadata says (llama.cpp's list).
constexpr std::array<std::string_view, 12> kEogTexts = {
    "<|eot_id|>", "<|im_end|>", "<|end|>",        "<|return|>",      "<|call|>", "<end_of_turn>",
    "<|endoftext|>", "<|eom_id|>", "<EOT>", "_<EOT>", "<|end_of_text|>", "<end_of_utterance>"};

// Metadata ids out of range mean "none" (GGUF files store -1 as 4294967295).
int32_t checked_id(std::optional<int32_t> given, int32_t fallback, int32_t n_vocab) {
  if (given == kNoTokenId) return -1;
  const int32_t id = given.value_or(fallback);
  if (id >= 0 && id < n_vocab) return id;
  return given.has_value() && fallback >= 0 && fallback < n_vocab ? fallback : -1;
}

// "<0x41>" -> 0x41; -1 if the text is not a byte token's.
int parse_byte_token(std::string_view text) {
  if (text.size() != 6 || text.substr(0, 3) != "<0x" || text[5] != '>') return -1;
  int value = 0;
  const auto [ptr, ec] = std::from_chars(text.data() + 3, text.data() + 5, value, 16);
  return ec == std::errc() && ptr == text.data() + 5 ? value : -1;
}

}  // namespace

Tokenizer::Tokenizer() = default;
Tokenizer::~Tokenizer() = default;

Result<std::unique_ptr<Tokenizer>> Tokenizer::from_vocab(TokenizerVocab vocab) {
  std::unique_ptr<Tokenizer> tokenizer(new Tokenizer());
  TALLY_RETURN_IF_ERROR(tokenizer->init(vocab));
  return tokenizer;
}

Status Tokenizer::init(TokenizerVocab& vocab) {
  const size_t n = vocab.tokens.size();
  if (n == 0) return make_error(ErrorCode::kFormat, "tokenizer: empty vocabulary");
  if (n > static_cast<size_t>(INT32_MAX)) {
    return make_error(ErrorCode::kOutOfRange, "tokenizer: {} tokens is too many", n);
  }
  if (!vocab.scores.empty() && vocab.scores.size() != n) {
    return make_error(ErrorCode::kFormat, "tokenizer: {} scores for {} tokens",
                      vocab.scores.size(), n);
  }
  if (!vocab.types.empty() && vocab.types.size() != n) {
    return make_error(ErrorCode::kFormat, "tokenizer: {} token types for {} tokens",
                      vocab.types.size(), n);
  }
  kind_ = vocab.kind;
  normalize_nfc_ = vocab.normalize_nfc;
  vocab_ = std::make_unique<tok::VocabTables>();
  vocab_->text = std::move(vocab.tokens);
  vocab_->score = vocab.scores.empty() ? std::vector<float>(n, 0.0f) : std::move(vocab.scores);
  vocab_->type = vocab.types.empty() ? std::vector<TokenType>(n, TokenType::kNormal)
                                     : std::move(vocab.types);
  vocab_->build_index();

  std::optional<tok::PreTokenizerSpec> spec;
  if (kind_ == TokenizerKind::kBpe) {
    spec = tok::find_pre_tokenizer_spec(vocab.pre);
    if (!spec) {
      return make_error(ErrorCode::kUnsupported, "tokenizer: unknown pre-tokenizer '{}'",
                        vocab.pre);
    }
    pre_name_ = std::string(spec->name);
  }
  const bool spm = kind_ == TokenizerKind::kSpm;
  const auto n_vocab = static_cast<int32_t>(n);
  bos_id_ = checked_id(vocab.bos_id, spm ? 1 : 11, n_vocab);
  eos_id_ = checked_id(vocab.eos_id, spm ? 2 : 11, n_vocab);
  unk_id_ = checked_id(vocab.unk_id, spm ? 0 : -1, n_vocab);
  add_bos_ = vocab.add_bos.value_or(spm || spec->add_bos);
  add_eos_ = vocab.add_eos.value_or(false);
  add_space_prefix_ = vocab.add_space_prefix.value_or(spm);
  if (add_bos_ && bos_id_ < 0) add_bos_ = false;
  if (add_eos_ && eos_id_ < 0) add_eos_ = false;
  find_special_ids(vocab);

  // After find_special_ids: EOG tokens may have become control tokens.
  specials_ = std::make_unique<tok::SpecialTokenMatcher>(*vocab_);
  if (spm) {
    spm_ = std::make_unique<tok::SpmEncoder>(*vocab_, unk_id_);
  } else {
    TALLY_ASSIGN_OR_RETURN(bpe_, tok::BpeEncoder::create(*vocab_, vocab.merges, *spec, unk_id_));
    if (bpe_->n_merges() == 0 && !vocab.merges.empty()) {
      return make_error(ErrorCode::kFormat, "tokenizer: none of the {} merges maps to tokens",
                        vocab.merges.size());
    }
  }
  return Status::ok_status();
}

void Tokenizer::find_special_ids(const TokenizerVocab& vocab) {
  const int32_t n_vocab = vocab_->size();
  eot_id_ = checked_id(vocab.eot_id, -1, n_vocab);
  eom_id_ = checked_id(vocab.eom_id, -1, n_vocab);
  for (std::string_view text : kEotTexts) {
    if (eot_id_ >= 0) break;
    eot_id_ = vocab_->find(text);
  }
  if (eom_id_ < 0) eom_id_ = vocab_->find("<|eom_id|>");

  eog_.assign(n_vocab, 0);
  for (std::string_view text : kEogTexts) {
    const int32_t id = vocab_->find(text);
    if (id >= 0) eog_[id] = 1;
  }
  // gpt-oss (harmony): <|end|> ends a message, not the generation, when <|return|> and
  // <|call|> exist.
  const int32_t end_id = vocab_->find("<|end|>");
  if (end_id >= 0 && vocab_->find("<|return|>") >= 0 && vocab_->find("<|call|>") >= 0 &&
      end_id != eot_id_) {
    eog_[end_id] = 0;
  }
  for (int32_t id : {eos_id_, eot_id_, eom_id_}) {
    if (id >= 0) eog_[id] = 1;
  }
  for (int32_t id : vocab.extra_eos_ids) {
    if (id >= 0 && id < n_vocab) eog_[id] = 1;
  }
  // As llama.cpp: a token that ends generation is a control token whatever its stored type.
  for (int32_t id = 0; id < n_vocab; ++id) {
    if (eog_[id]) vocab_->type[id] = TokenType::kControl;
  }
}

int32_t Tokenizer::n_vocab() const { return vocab_->size(); }

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special,
                                       bool parse_special) const {
  std::vector<int32_t> out;
  out.reserve(text.size() / 3 + 4);
  if (add_special && add_bos_) out.push_back(bos_id_);
  std::vector<tok::TextFragment> fragments;
  specials_->split(text, parse_special, fragments);
  bool after_special = true;  // the text start counts as following a special token
  for (const tok::TextFragment& f : fragments) {
    if (f.token >= 0) {
      out.push_back(f.token);
      after_special = true;
      continue;
    }
    encode_text(text.substr(f.offset, f.length), after_special, out);
    after_special = false;
  }
  if (add_special && add_eos_) out.push_back(eos_id_);
  return out;
}

void Tokenizer::encode_text(std::string_view text, bool after_special,
                            std::vector<int32_t>& out) const {
  std::string normalized;
  if (normalize_nfc_ && tok::nfc_normalize(text, normalized)) text = normalized;
  if (bpe_) {
    bpe_->encode(text, out);
    return;
  }
  // SPM: spaces become U+2581; llama.cpp prefixes one to text that starts the input or
  // follows a special token.
  std::string escaped;
  escaped.reserve(text.size() + text.size() / 2 + kSpmSpace.size());
  if (add_space_prefix_ && after_special) escaped.append(kSpmSpace);
  for (char c : text) {
    if (c == ' ') {
      escaped.append(kSpmSpace);
    } else {
      escaped.push_back(c);
    }
  }
  spm_->encode(escaped, out);
}

std::string_view Tokenizer::piece(int32_t id) const {
  return vocab_->valid(id) ? std::string_view(vocab_->text[id]) : std::string_view();
}

std::string Tokenizer::token_bytes(int32_t id, bool render_special) const {
  std::string out;
  append_token_bytes(id, render_special, out);
  return out;
}

void Tokenizer::append_token_bytes(int32_t id, bool render_special, std::string& out) const {
  if (!vocab_->valid(id)) return;
  const std::string& text = vocab_->text[id];
  switch (vocab_->type[id]) {
    case TokenType::kControl:
    case TokenType::kUnknown:
      if (render_special) out.append(text);
      return;
    case TokenType::kUserDefined:
      if (bpe_) {
        out.append(text);
        return;
      }
      break;  // SPM: U+2581 -> space, as llama.cpp (Gemma's "▁▁" runs are added tokens)
    case TokenType::kUnused:
      return;
    case TokenType::kByte:
      if (const int b = parse_byte_token(text); b >= 0) {
        out.push_back(static_cast<char>(b));
        return;
      }
      break;
    case TokenType::kNormal:
    case TokenType::kUndefined:
      break;
  }
  if (bpe_) {
    tok::byte_level_decode(text, out);
    return;
  }
  // SPM: U+2581 -> space.
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t hit = text.find(kSpmSpace, pos);
    if (hit == std::string::npos) {
      out.append(text, pos, std::string::npos);
      break;
    }
    out.append(text, pos, hit - pos);
    out.push_back(' ');
    pos = hit + kSpmSpace.size();
  }
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool skip_special) const {
  std::string out;
  bool at_start = add_space_prefix_ && kind_ == TokenizerKind::kSpm;
  for (int32_t id : ids) {
    const size_t before = out.size();
    append_token_bytes(id, !skip_special, out);
    if (!at_start || !vocab_->valid(id)) continue;
    const TokenType type = vocab_->type[id];
    if (type == TokenType::kControl || type == TokenType::kUnknown) continue;
    at_start = false;
    if (out.size() > before && out[before] == ' ') out.erase(before, 1);
  }
  return out;
}

bool Tokenizer::is_eog(int32_t id) const { return vocab_->valid(id) && eog_[id] != 0; }

bool Tokenizer::is_control(int32_t id) const {
  return vocab_->valid(id) && vocab_->type[id] == TokenType::kControl;
}

TokenType Tokenizer::token_type(int32_t id) const {
  return vocab_->valid(id) ? vocab_->type[id] : TokenType::kUndefined;
}

float Tokenizer::score(int32_t id) const { return vocab_->valid(id) ? vocab_->score[id] : 0.0f; }

int32_t Tokenizer::token_id(std::string_view text) const { return vocab_->find(text); }

const tok::PreTokenizer* Tokenizer::pre_tokenizer() const {
  return bpe_ ? &bpe_->pre_tokenizer() : nullptr;
}

}  // namespace tally
