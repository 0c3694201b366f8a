#include "tokenizer/tokenizer_hf.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include <fmt/format.h>
#include <simdjson.h>

#include "tokenizer/flat_index.h"
#include "tokenizer/hf_json_document.h"
#include "tokenizer/tokenizer.h"

namespace tally {

namespace {

using nlohmann::json;
namespace sj = simdjson::dom;

constexpr std::string_view kHfSpmSpace = "\xE2\x96\x81";  // U+2581, SentencePiece's space

// The Split regexes of the tokenizer.json files llama.cpp's converter recognises, as the files
// spell them, with the tokenizer.ggml.pre name it writes for each.
struct HfSplitRegex {
  std::string_view regex;
  std::string_view pre;
};
constexpr std::array<HfSplitRegex, 2> kHfSplitRegexes = {{
    {R"re((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re",
     "llama3"},
    {R"re((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re",
     "qwen2"},
}};

std::string_view type_of(const json& j) {
  if (!j.is_object()) return {};
  auto it = j.find("type");
  return it != j.end() && it->is_string() ? std::string_view(it->get_ref<const std::string&>())
                                          : std::string_view();
}

// The component itself, or the members of a Sequence (whose list key differs per kind).
std::vector<const json*> hf_components(const json& j, std::string_view list_key) {
  std::vector<const json*> out;
  if (type_of(j) == "Sequence" && j.contains(list_key) && j[list_key].is_array()) {
    for (const json& part : j[list_key]) out.push_back(&part);
  } else if (j.is_object()) {
    out.push_back(&j);
  }
  return out;
}

bool has_component(const json& j, std::string_view list_key, std::string_view type) {
  for (const json* part : hf_components(j, list_key)) {
    if (type_of(*part) == type) return true;
  }
  return false;
}

std::string string_or(const json& j, std::string_view key, std::string_view fallback = {}) {
  if (!j.is_object()) return std::string(fallback);
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string(fallback);
}

// tokens[id] for every id of model.vocab and added_tokens; gaps become unused "[PAD{id}]"
// entries, as llama.cpp's converter writes them.
Status read_hf_tokens(sj::element model, const std::optional<sj::array>& added,
                      TokenizerVocab& v) {
  sj::object vocab;
  if (model["vocab"].get(vocab) != simdjson::SUCCESS) {
    return make_error(ErrorCode::kFormat, "model.vocab is not an object");
  }
  // (A default-constructed simdjson array or element has no document: never touch one.)
  const std::vector<sj::element> added_list =
      added ? std::vector<sj::element>(added->begin(), added->end()) : std::vector<sj::element>();
  int64_t max_id = -1;
  auto checked = [&](sj::element e, int64_t& id) -> Status {
    if (e.get(id) != simdjson::SUCCESS || id < 0 || id >= std::numeric_limits<int32_t>::max()) {
      return make_error(ErrorCode::kFormat, "token id {} is not a valid id", simdjson::to_string(e));
    }
    max_id = std::max(max_id, id);
    return Status::ok_status();
  };
  int64_t id = 0;
  for (sj::key_value_pair kv : vocab) TALLY_RETURN_IF_ERROR(checked(kv.value, id));
  size_t entries = vocab.size();
  for (sj::element a : added_list) {
    sj::element id_element;
    if (a["id"].get(id_element) != simdjson::SUCCESS) {
      return make_error(ErrorCode::kFormat, "added token {} has no id", simdjson::to_string(a));
    }
    TALLY_RETURN_IF_ERROR(checked(id_element, id));
    ++entries;
  }
  // Real files number their tokens densely; a few gaps become [PADn] entries, but a stray
  // huge id must not make billions of them.
  if (max_id >= static_cast<int64_t>(2 * entries + 1024)) {
    return make_error(ErrorCode::kFormat, "token id {} for {} tokens: the ids are too sparse",
                      max_id, entries);
  }
  const auto n = static_cast<size_t>(max_id + 1);
  v.tokens.assign(n, std::string());
  v.types.assign(n, TokenType::kUnused);
  std::vector<uint8_t> seen(n, 0);
  for (sj::key_value_pair kv : vocab) {
    const auto i = static_cast<size_t>(kv.value.get_int64().value_unsafe());
    v.tokens[i] = kv.key;
    v.types[i] = TokenType::kNormal;
    seen[i] = 1;
  }
  for (sj::element a : added_list) {
    const auto i = static_cast<size_t>(a["id"].get_int64().value_unsafe());
    std::string_view content;
    if (a["content"].get(content) != simdjson::SUCCESS) {
      return make_error(ErrorCode::kFormat, "added token {} has no content", i);
    }
    bool special = false;
    if (a["special"].get(special) != simdjson::SUCCESS) special = false;
    v.tokens[i] = content;
    v.types[i] = special ? TokenType::kControl : TokenType::kUserDefined;
    seen[i] = 1;
  }
  for (size_t i = 0; i < n; ++i) {
    if (!seen[i]) v.tokens[i] = "[PAD" + std::to_string(i) + "]";
  }
  return Status::ok_status();
}

// One merge in either form, "a b" or ["a", "b"]: its two parts; false if neither.
bool merge_parts(sj::element m, std::string_view& left, std::string_view& right) {
  std::string_view text;
  if (m.get(text) == simdjson::SUCCESS) {
    const size_t space = text.find(' ', 1);  // a part may itself start with a space
    if (space == std::string_view::npos) return false;
    left = text.substr(0, space);
    right = text.substr(space + 1);
    return true;
  }
  sj::array parts;
  return m.get(parts) == simdjson::SUCCESS && parts.size() == 2 &&
         parts.at(0).get(left) == simdjson::SUCCESS && parts.at(1).get(right) == simdjson::SUCCESS;
}

// Calls on_merge(rank, left, right) for each of model.merges, in order.
template <typename OnMerge>
Status for_each_hf_merge(sj::element model, OnMerge&& on_merge) {
  sj::element merges_element;
  if (model["merges"].get(merges_element) != simdjson::SUCCESS) return Status::ok_status();
  sj::array merges;
  if (merges_element.get(merges) != simdjson::SUCCESS) {
    return make_error(ErrorCode::kFormat, "model.merges is not a list");
  }
  size_t rank = 0;
  std::string_view left, right;
  for (sj::element m : merges) {
    if (!merge_parts(m, left, right)) {
      return make_error(ErrorCode::kFormat, "merge {} is neither \"a b\" nor [\"a\", \"b\"]",
                        simdjson::to_string(m));
    }
    on_merge(rank++, left, right);
  }
  return Status::ok_status();
}

// Byte-level BPE: the merges as tokenizer.ggml.merges holds them, "a b".
Status read_hf_merges(sj::element model, TokenizerVocab& v) {
  return for_each_hf_merge(model, [&](size_t, std::string_view left, std::string_view right) {
    std::string& joined = v.merges.emplace_back();
    joined.reserve(left.size() + 1 + right.size());
    joined.append(left).append(" ").append(right);
  });
}

// SentencePiece-style BPE: the earlier a merge, the higher the score of the token it makes
// (so SpmEncoder's best-score-first order is the merge order); tokens no merge makes get
// -infinity and are never merged into (Hugging Face merges only listed pairs).
Status read_hf_merge_scores(sj::element model, TokenizerVocab& v) {
  tok::TextIndex id_of;
  id_of.build(v.tokens);
  v.scores.assign(v.tokens.size(), -std::numeric_limits<float>::infinity());
  std::string joined;
  return for_each_hf_merge(model, [&](size_t rank, std::string_view left, std::string_view right) {
    joined.assign(left).append(right);
    const int32_t id = id_of.find(joined);
    if (id < 0) return;
    float& score = v.scores[id];
    score = std::max(score, -static_cast<float>(rank));
  });
}

Result<std::string> hf_split_pre_name(const json& pre_tokenizer) {
  for (const json* part : hf_components(pre_tokenizer, "pretokenizers")) {
    if (type_of(*part) != "Split") continue;
    const std::string regex = string_or(part->value("pattern", json()), "Regex");
    for (const HfSplitRegex& known : kHfSplitRegexes) {
      if (regex == known.regex) return std::string(known.pre);
    }
    return make_error(ErrorCode::kUnsupported, "pre-tokenizer Split regex '{}' is not one tally "
                      "knows (see src/tokenizer/tokenizer_hf.cpp)", regex);
  }
  for (const json* part : hf_components(pre_tokenizer, "pretokenizers")) {
    if (type_of(*part) == "ByteLevel" && part->value("use_regex", true)) return std::string("gpt-2");
  }
  return make_error(ErrorCode::kUnsupported, "byte-level pre-tokenizer {} has no regex tally knows",
                    pre_tokenizer.dump());
}

// The normalizers of byte-level models: none or NFC.
Status read_byte_level_normalizer(const json& normalizer, TokenizerVocab& v) {
  for (const json* part : hf_components(normalizer, "normalizers")) {
    if (type_of(*part) != "NFC") {
      return make_error(ErrorCode::kUnsupported, "normalizer {} (tally handles NFC)",
                        part->dump());
    }
    v.normalize_nfc = true;
  }
  return Status::ok_status();
}

// SentencePiece-style models spell spaces as U+2581, by a Replace normalizer (Gemma) or a
// Metaspace pre-tokenizer, and may prepend one (Prepend normalizer, Metaspace's scheme).
Status read_spm_spaces(const json& normalizer, const json& pre_tokenizer, TokenizerVocab& v) {
  bool spaces_escaped = false;
  bool prefix = false;
  for (const json* part : hf_components(normalizer, "normalizers")) {
    const std::string_view type = type_of(*part);
    if (type == "Replace" && string_or(part->value("pattern", json()), "String") == " " &&
        string_or(*part, "content") == kHfSpmSpace) {
      spaces_escaped = true;
    } else if (type == "Prepend" && string_or(*part, "prepend") == kHfSpmSpace) {
      prefix = true;
    } else {
      return make_error(ErrorCode::kUnsupported, "normalizer {} of a SentencePiece-style model",
                        part->dump());
    }
  }
  for (const json* part : hf_components(pre_tokenizer, "pretokenizers")) {
    const std::string_view type = type_of(*part);
    if (type == "Metaspace") {
      spaces_escaped = true;
      prefix = string_or(*part, "prepend_scheme", "always") != "never" &&
               part->value("add_prefix_space", true);
    } else if (!(type == "Split" && spaces_escaped &&
                 string_or(part->value("pattern", json()), "String") == " ")) {
      // A split on " " after the normalizer replaced every space splits nothing.
      return make_error(ErrorCode::kUnsupported, "pre-tokenizer {} of a SentencePiece-style model",
                        part->dump());
    }
  }
  if (!spaces_escaped) {
    return make_error(ErrorCode::kUnsupported,
                      "a byte-fallback BPE model that does not spell spaces as U+2581");
  }
  v.add_space_prefix = prefix;
  return Status::ok_status();
}

void mark_spm_token_types(const std::string& unk_text, TokenizerVocab& v) {
  for (size_t i = 0; i < v.tokens.size(); ++i) {
    const std::string& t = v.tokens[i];
    if (v.types[i] != TokenType::kNormal && v.types[i] != TokenType::kControl) continue;
    if (t.size() == 6 && t.starts_with("<0x") && t.back() == '>') v.types[i] = TokenType::kByte;
    if (!unk_text.empty() && t == unk_text) v.types[i] = TokenType::kUnknown;
  }
}

// The id of a special token named by text; kNoTokenId when the config says null or names a
// text that is no token.
std::optional<int32_t> special_id(const TokenizerVocab& v, const json& config,
                                  std::string_view key) {
  if (!config.is_object() || !config.contains(key)) return std::nullopt;
  const std::string text = hf_token_text(config, key);
  if (text.empty()) return kNoTokenId;
  for (size_t i = 0; i < v.tokens.size(); ++i) {
    if (v.tokens[i] == text) return static_cast<int32_t>(i);
  }
  return kNoTokenId;
}

// add_bos_token from the config, else whether the post-processor puts a special token first.
bool hf_adds_bos(const json& post_processor, const json& config) {
  if (config.is_object() && config.contains("add_bos_token") &&
      config["add_bos_token"].is_boolean()) {
    return config["add_bos_token"].get<bool>();
  }
  for (const json* part : hf_components(post_processor, "processors")) {
    if (type_of(*part) != "TemplateProcessing") continue;
    const json single = part->value("single", json::array());
    return single.is_array() && !single.empty() && single[0].contains("SpecialToken");
  }
  return false;
}

void read_hf_specials(const json& post_processor, const json& config, TokenizerVocab& v) {
  v.bos_id = special_id(v, config, "bos_token");
  v.eos_id = special_id(v, config, "eos_token");
  v.unk_id = special_id(v, config, "unk_token");
  v.add_bos = hf_adds_bos(post_processor, config);
  v.add_eos = config.is_object() && config.value("add_eos_token", false);
}

// A small part of the file (normalizer, pre-tokenizer, ...) as nlohmann JSON; null if absent.
json small_part(sj::element parent, std::string_view key) {
  sj::element e;
  if (parent[key].get(e) != simdjson::SUCCESS) return json();
  return json::parse(simdjson::to_string(e));
}

// The model's settings, without its vocab and merges (the bulk of the file).
json model_settings(sj::object model) {
  json out = json::object();
  for (sj::key_value_pair kv : model) {
    if (kv.key == "vocab" || kv.key == "merges") continue;
    out[std::string(kv.key)] = json::parse(simdjson::to_string(kv.value));
  }
  return out;
}

Result<TokenizerVocab> vocab_from_hf_checked(sj::element doc, const json& config) {
  sj::element model_element;
  sj::object model_object;
  if (doc["model"].get(model_element) != simdjson::SUCCESS ||
      model_element.get(model_object) != simdjson::SUCCESS) {
    return make_error(ErrorCode::kFormat, "no \"model\" object");
  }
  const json model = model_settings(model_object);
  if (type_of(model) != "BPE") {
    return make_error(ErrorCode::kUnsupported, "model type '{}' (tally reads BPE)",
                      type_of(model));
  }
  const json normalizer = small_part(doc, "normalizer");
  const json pre_tokenizer = small_part(doc, "pre_tokenizer");
  TokenizerVocab v;
  std::optional<sj::array> added;
  sj::element added_element;
  if (doc["added_tokens"].get(added_element) == simdjson::SUCCESS && !added_element.is_null()) {
    sj::array list;
    if (added_element.get(list) != simdjson::SUCCESS) {
      return make_error(ErrorCode::kFormat, "added_tokens is not a list");
    }
    added = list;
  }
  TALLY_RETURN_IF_ERROR(read_hf_tokens(model_element, added, v));
  const bool byte_level = has_component(pre_tokenizer, "pretokenizers", "ByteLevel") ||
                          type_of(small_part(doc, "decoder")) == "ByteLevel";
  if (byte_level) {
    v.kind = TokenizerKind::kBpe;
    TALLY_RETURN_IF_ERROR(read_hf_merges(model_element, v));
    TALLY_ASSIGN_OR_RETURN(v.pre, hf_split_pre_name(pre_tokenizer));
    TALLY_RETURN_IF_ERROR(read_byte_level_normalizer(normalizer, v));
  } else if (model.value("byte_fallback", false)) {
    v.kind = TokenizerKind::kSpm;
    TALLY_RETURN_IF_ERROR(read_spm_spaces(normalizer, pre_tokenizer, v));
    mark_spm_token_types(string_or(model, "unk_token"), v);
    TALLY_RETURN_IF_ERROR(read_hf_merge_scores(model_element, v));
  } else {
    return make_error(ErrorCode::kUnsupported,
                      "a BPE model that is neither byte-level nor byte-fallback");
  }
  read_hf_specials(small_part(doc, "post_processor"), config, v);
  return v;
}

}  // namespace

std::string hf_token_text(const json& config, std::string_view key) {
  if (!config.is_object()) return {};
  auto it = config.find(key);
  if (it == config.end()) return {};
  if (it->is_string()) return it->get<std::string>();
  return string_or(*it, "content");
}

namespace {

Result<TokenizerVocab> vocab_from_hf_doc(sj::element doc, const json& config) {
  try {
    auto v = vocab_from_hf_checked(doc, config);
    if (!v.ok()) return v.status().with_context("tokenizer.json");
    return v;
  } catch (const json::exception& e) {
    // A field of an unexpected JSON type somewhere the checks above do not look.
    return make_error(ErrorCode::kFormat, "tokenizer.json: {}", e.what());
  }
}

}  // namespace

Result<TokenizerVocab> tokenizer_vocab_from_hf(std::string_view tokenizer_json,
                                               const json& tokenizer_config) {
  auto doc = tok::HfJsonDocument::parse(tokenizer_json);
  if (!doc.ok()) return doc.status().with_context("tokenizer.json");
  return vocab_from_hf_doc((*doc)->root(), tokenizer_config);
}


Result<std::string> read_hf_file(std::string_view path) {
  const std::string p(path);
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(p.c_str(), "rb"), &std::fclose);
  if (!f) return make_error(ErrorCode::kNotFound, "{}: cannot open", p);
  std::string text;
  char buf[1 << 16];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, f.get())) > 0;) text.append(buf, n);
  if (std::ferror(f.get())) return make_error(ErrorCode::kIo, "{}: read failed", p);
  return text;
}

Result<json> read_hf_config(std::string_view path) {
  TALLY_ASSIGN_OR_RETURN(std::string text, read_hf_file(path));
  sj::parser parser;
  sj::object config;
  json out = json::object();
  if (parser.parse(text).get(config) == simdjson::SUCCESS) {
    for (sj::key_value_pair kv : config) {
      if (kv.key == "added_tokens_decoder") continue;  // tokenizer.json's added_tokens again
      out[std::string(kv.key)] = json::parse(simdjson::to_string(kv.value));
    }
    return out;
  }
  // simdjson refuses integers past 64 bits (Llama 3's model_max_length is 1e30).
  out = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!out.is_object()) return make_error(ErrorCode::kFormat, "{}: not a JSON object", path);
  out.erase("added_tokens_decoder");
  return out;
}

namespace {

// Tokenizer files of other formats that a directory without tokenizer.json may hold.
struct OtherTokenizerFile {
  bool (*matches)(std::string_view name);
  std::string_view what;  // what it is, and the way to something tally reads
};
constexpr std::array<OtherTokenizerFile, 3> kOtherTokenizerFiles = {{
    {[](std::string_view n) { return n == "tokenizer.model"; },
     "a SentencePiece model (protobuf), which tally does not read; transformers writes the "
     "tokenizer.json: AutoTokenizer.from_pretrained(DIR).save_pretrained(DIR)"},
    {[](std::string_view n) { return n.starts_with("tok") && n.ends_with(".bin"); },
     "a llama2.c tokenizer, read only with its checkpoint: tally convert --llama2c CHECKPOINT "
     "--tokenizer FILE -o OUT.gguf"},
    {[](std::string_view n) { return n == "vocab.json" || n == "merges.txt"; },
     "GPT-2-style tokenizer files, which tally does not read; transformers writes the "
     "tokenizer.json: AutoTokenizer.from_pretrained(DIR).save_pretrained(DIR)"},
}};

// The error for a directory without tokenizer.json: what is missing, what tally reads, and
// what the directory holds instead with the way from there.
Status hf_missing_tokenizer_error(std::string_view dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(std::filesystem::path(dir), ec), end; !ec && it != end;
       it.increment(ec)) {
    names.push_back(it->path().filename().string());
  }
  std::sort(names.begin(), names.end());
  std::string found;
  for (const OtherTokenizerFile& kind : kOtherTokenizerFiles) {
    std::string files;
    for (const std::string& name : names) {
      if (kind.matches(name)) files += (files.empty() ? "" : " + ") + name;
    }
    if (!files.empty()) found += fmt::format("; the directory has {}: {}", files, kind.what);
  }
  return make_error(ErrorCode::kNotFound,
                    "tokenizer.json not found: tally reads a Hugging Face model's tokenizer from "
                    "tokenizer.json (byte-level or SentencePiece-style BPE, with "
                    "tokenizer_config.json){}",
                    found);
}

}  // namespace

Result<TokenizerVocab> tokenizer_vocab_from_hf_dir(std::string_view dir, const json& tokenizer_config) {
  auto doc = tok::HfJsonDocument::load(std::string(dir) + "/tokenizer.json");
  if (!doc.ok())
    return doc.status().code() == ErrorCode::kNotFound ? hf_missing_tokenizer_error(dir) : doc.status();
  return vocab_from_hf_doc((*doc)->root(), tokenizer_config);
}

Result<std::unique_ptr<Tokenizer>> Tokenizer::from_hf_dir(std::string_view dir) {
  const std::string base(dir);
  json config;
  auto c = read_hf_config(base + "/tokenizer_config.json");
  if (c.ok()) {
    config = std::move(c).value();
  } else if (c.status().code() != ErrorCode::kNotFound) {
    return c.status();
  }
  auto vocab = tokenizer_vocab_from_hf_dir(base, config);
  if (!vocab.ok()) return vocab.status().with_context(base);
  auto tokenizer = from_vocab(std::move(vocab).value());
  if (!tokenizer.ok()) return tokenizer.status().with_context(base);
  return tokenizer;
}

}  // namespace tally
