// Tokenizer::from_gguf: the tokenizer.ggml.* keys as llama.cpp writes and reads them.
#include <limits>

#include "io/gguf.h"
#include "tokenizer/tokenizer.h"

namespace tally {

namespace {

// An optional id key: absent -> nullopt; present but not an int32 id (GGUF writers store
// "none" as 4294967295) -> -1, which Tokenizer treats as "use the default".
Result<std::optional<int32_t>> optional_id(const io::GgufFile& f, std::string_view key) {
  if (f.find(key) == nullptr) return std::optional<int32_t>();
  TALLY_ASSIGN_OR_RETURN(int64_t v, f.get_int(key));
  if (v < 0 || v > std::numeric_limits<int32_t>::max()) return std::optional<int32_t>(-1);
  return std::optional<int32_t>(static_cast<int32_t>(v));
}

Result<std::optional<bool>> optional_bool(const io::GgufFile& f, std::string_view key) {
  if (f.find(key) == nullptr) return std::optional<bool>();
  TALLY_ASSIGN_OR_RETURN(bool v, f.get_bool(key));
  return std::optional<bool>(v);
}

TokenType token_type_from_int(int64_t v) {
  return v >= 0 && v <= static_cast<int64_t>(TokenType::kByte) ? static_cast<TokenType>(v)
                                                              : TokenType::kUndefined;
}

Status read_arrays(const io::GgufFile& f, TokenizerVocab& v) {
  TALLY_ASSIGN_OR_RETURN(auto tokens, f.get_string_array("tokenizer.ggml.tokens"));
  v.tokens.assign(tokens.begin(), tokens.end());
  if (f.find("tokenizer.ggml.scores") != nullptr) {
    TALLY_ASSIGN_OR_RETURN(v.scores, f.get_f32_array("tokenizer.ggml.scores"));
  }
  if (f.find("tokenizer.ggml.token_type") != nullptr) {
    TALLY_ASSIGN_OR_RETURN(auto types, f.get_int_array("tokenizer.ggml.token_type"));
    v.types.reserve(types.size());
    for (int64_t t : types) v.types.push_back(token_type_from_int(t));
  }
  if (v.kind == TokenizerKind::kBpe) {
    TALLY_ASSIGN_OR_RETURN(auto merges, f.get_string_array("tokenizer.ggml.merges"));
    v.merges.assign(merges.begin(), merges.end());
  }
  return Status::ok_status();
}

Status read_specials(const io::GgufFile& f, TokenizerVocab& v) {
  TALLY_ASSIGN_OR_RETURN(v.bos_id, optional_id(f, "tokenizer.ggml.bos_token_id"));
  TALLY_ASSIGN_OR_RETURN(v.eos_id, optional_id(f, "tokenizer.ggml.eos_token_id"));
  TALLY_ASSIGN_OR_RETURN(v.eot_id, optional_id(f, "tokenizer.ggml.eot_token_id"));
  TALLY_ASSIGN_OR_RETURN(v.eom_id, optional_id(f, "tokenizer.ggml.eom_token_id"));
  TALLY_ASSIGN_OR_RETURN(v.unk_id, optional_id(f, "tokenizer.ggml.unknown_token_id"));
  if (f.find("tokenizer.ggml.eos_token_ids") != nullptr) {
    TALLY_ASSIGN_OR_RETURN(auto ids, f.get_int_array("tokenizer.ggml.eos_token_ids"));
    for (int64_t id : ids) {
      if (id < 0 || id >= static_cast<int64_t>(v.tokens.size()))
        return make_error(ErrorCode::kFormat, "tokenizer.ggml.eos_token_ids: {} is not a token of the {}-token vocabulary",
                          id, v.tokens.size());
      v.extra_eos_ids.push_back(static_cast<int32_t>(id));
    }
  }
  TALLY_ASSIGN_OR_RETURN(v.add_bos, optional_bool(f, "tokenizer.ggml.add_bos_token"));
  TALLY_ASSIGN_OR_RETURN(v.add_eos, optional_bool(f, "tokenizer.ggml.add_eos_token"));
  TALLY_ASSIGN_OR_RETURN(v.add_space_prefix, optional_bool(f, "tokenizer.ggml.add_space_prefix"));
  return Status::ok_status();
}

Result<TokenizerVocab> read_vocab(const io::GgufFile& f) {
  TokenizerVocab v;
  TALLY_ASSIGN_OR_RETURN(std::string_view model, f.get_string("tokenizer.ggml.model"));
  if (model == "llama") {
    v.kind = TokenizerKind::kSpm;
  } else if (model == "gpt2") {
    v.kind = TokenizerKind::kBpe;
  } else {
    return make_error(ErrorCode::kUnsupported,
                      "tokenizer.ggml.model '{}' (tally reads 'llama' and 'gpt2')", model);
  }
  if (f.find("tokenizer.ggml.pre") != nullptr) {
    TALLY_ASSIGN_OR_RETURN(std::string_view pre, f.get_string("tokenizer.ggml.pre"));
    v.pre = std::string(pre);
  }
  TALLY_RETURN_IF_ERROR(read_arrays(f, v));
  TALLY_RETURN_IF_ERROR(read_specials(f, v));
  return v;
}

}  // namespace

Result<std::unique_ptr<Tokenizer>> Tokenizer::from_gguf(const io::GgufFile& f) {
  auto vocab = read_vocab(f);
  if (!vocab.ok()) return vocab.status().with_context(f.name());
  auto tokenizer = from_vocab(std::move(vocab).value());
  if (!tokenizer.ok()) return tokenizer.status().with_context(f.name());
  return tokenizer;
}

}  // namespace tally
