#include "tokenizer/pre_tokenizer_specs.h"

#include <array>

namespace tally::tok {

namespace {

// GPT-2's regex: contractions, optional space + letters / numbers / other symbols, whitespace
// runs that leave the last space to the next word.
constexpr std::string_view kGpt2 =
    R"re('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)re";

// Llama 3 (tiktoken cl100k style): numbers in groups of up to three digits.
constexpr std::string_view kLlama3 =
    R"re((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|)re"
    R"re(\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";

// Qwen2: as Llama 3 but every digit on its own.
constexpr std::string_view kQwen2 =
    R"re((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|)re"
    R"re(\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";

constexpr std::string_view kNewline = R"re([\r\n])re";
constexpr std::string_view kEachDigit = R"re(\p{N})re";
constexpr std::string_view kDigitTriples = R"re([0-9][0-9][0-9])re";
// CJK ideographs, U+0800..U+4E00 and Hangul (DeepSeek's tokenizer.json).
constexpr std::string_view kDeepseekCjk =
    R"re([\x{4E00}-\x{9FA5}\x{0800}-\x{4E00}\x{AC00}-\x{D7FF}]+)re";

// DeepSeek LLM's letters: the cased letters (Lu, Ll, Lt) of its tokenizer.json class.
constexpr std::string_view kDeepseekLlmLetters =
    R"re(\s?[\x{41}-\x{5A}\x{61}-\x{7A}\x{B5}\x{C0}-\x{D6}\x{D8}-\x{F6}\x{F8}-\x{1BA})re"
    R"re(\x{1BC}-\x{1BF}\x{1C4}-\x{293}\x{295}-\x{2AF}\x{370}-\x{373}\x{376}\x{377})re"
    R"re(\x{37B}-\x{37D}\x{37F}\x{386}\x{388}-\x{38A}\x{38C}\x{38E}-\x{3A1}\x{3A3}-\x{3F5})re"
    R"re(\x{3F7}-\x{481}\x{48A}-\x{52F}\x{531}-\x{556}\x{10A0}-\x{10C5}\x{13A0}-\x{13F5})re"
    R"re(\x{13F8}-\x{13FD}\x{1C90}-\x{1CBA}\x{1CBD}-\x{1CBF}\x{1D00}-\x{1D2B}\x{1D6B}-\x{1D77})re"
    R"re(\x{1D79}-\x{1D9A}\x{1E00}-\x{1F15}\x{1F18}-\x{1F1D}\x{1F20}-\x{1F45}\x{1F48}-\x{1F4D})re"
    R"re(\x{1F50}-\x{1F57}\x{1F59}\x{1F5B}\x{1F5D}\x{1F5F}-\x{1F7D}\x{1F80}-\x{1FB4})re"
    R"re(\x{1FB6}-\x{1FBC}\x{1FBE}\x{1FC2}-\x{1FC4}\x{1FC6}-\x{1FCC}\x{1FD0}-\x{1FD3})re"
    R"re(\x{1FD6}-\x{1FDB}\x{1FE0}-\x{1FEC}\x{1FF2}-\x{1FF4}\x{1FF6}-\x{1FFC}\x{2102}\x{2107})re"
    R"re(\x{210A}-\x{2113}\x{2115}\x{2119}-\x{211D}\x{2124}\x{2126}\x{2128}\x{212A}-\x{212D})re"
    R"re(\x{212F}-\x{2134}\x{2139}\x{213C}-\x{213F}\x{2145}-\x{2149}\x{214E}\x{2183}\x{2184})re"
    R"re(\x{2C00}-\x{2C7B}\x{2C7E}-\x{2CE4}\x{2CEB}-\x{2CEE}\x{2CF2}\x{2CF3}\x{A640}-\x{A66D})re"
    R"re(\x{A680}-\x{A69B}\x{A722}-\x{A76F}\x{A771}-\x{A787}\x{A78B}-\x{A78E}\x{AB70}-\x{ABBF})re"
    R"re(\x{FB00}-\x{FB06}\x{FB13}-\x{FB17}\x{FF21}-\x{FF3A}\x{FF41}-\x{FF5A}\x{10400}-\x{1044F})re"
    R"re(\x{104B0}-\x{104D3}\x{104D8}-\x{104FB}\x{10C80}-\x{10CB2}\x{10CC0}-\x{10CF2})re"
    R"re(\x{118A0}-\x{118DF}\x{1E900}-\x{1E943}]+)re";
// ASCII punctuation and symbols (and, harmlessly, letters), their full-width forms, curly
// quotes and CJK punctuation U+3000..U+3002.
constexpr std::string_view kDeepseekLlmPunct =
    R"re(\s?[!-/:-~\x{FF01}-\x{FF0F}\x{FF1A}-\x{FF5E}\x{2018}-\x{201F}\x{3000}-\x{3002}]+)re";

PreTokenizerSpec make(std::string_view name, std::vector<std::string_view> patterns,
                      bool ignore_merges = false, bool add_bos = false) {
  return {name, std::move(patterns), ignore_merges, add_bos};
}

template <size_t N>
bool is_one_of(std::string_view name, const std::array<std::string_view, N>& names) {
  for (std::string_view n : names) {
    if (n == name) return true;
  }
  return false;
}

}  // namespace

std::optional<PreTokenizerSpec> find_pre_tokenizer_spec(std::string_view name) {
  static constexpr std::array<std::string_view, 8> kGpt2Names = {
      "", "default", "gpt-2", "phi-2", "mpt", "olmo", "jais", "trillion"};
  static constexpr std::array<std::string_view, 4> kLlama3Names = {
      "llama3", "llama-v3", "llama-bpe", "falcon3"};
  static constexpr std::array<std::string_view, 4> kQwen2Names = {
      "qwen2", "deepseek-r1-qwen", "stablelm2", "megrez"};
  static constexpr std::array<std::string_view, 7> kStarcoderNames = {
      "starcoder", "refact", "command-r", "smollm", "codeshell", "exaone", "minerva-7b"};

  if (is_one_of(name, kGpt2Names)) return make("gpt-2", {kGpt2});
  if (is_one_of(name, kLlama3Names)) return make("llama3", {kLlama3}, true, true);
  if (name == "dbrx" || name == "smaug-bpe") return make("llama3", {kLlama3});
  if (is_one_of(name, kQwen2Names)) return make("qwen2", {kQwen2});
  if (is_one_of(name, kStarcoderNames)) return make("starcoder", {kEachDigit, kGpt2});
  if (name == "falcon") {
    return make("falcon", {R"re([\p{P}\$\+<=>\^~\|`]+)re", kGpt2, kDigitTriples});
  }
  if (name == "deepseek-llm") {
    return make("deepseek-llm", {kNewline, kDeepseekLlmLetters, kDeepseekLlmPunct,
                                 R"re(\s+$)re", kDeepseekCjk, R"re(\p{N}+)re"});
  }
  if (name == "deepseek-coder") {
    return make("deepseek-coder", {kNewline, R"re(\s?\p{L}+)re", R"re(\s?\p{P}+)re",
                                   kDeepseekCjk, kEachDigit});
  }
  return std::nullopt;
}

}  // namespace tally::tok
