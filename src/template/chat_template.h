// Chat messages -> the prompt text a model was trained on, rendered with the model's own
// Jinja template (GGUF tokenizer.chat_template) the way transformers' apply_chat_template
// does, or with a built-in ChatML template when the model has none (llama.cpp's default).
//
// Usage (server):
//   TALLY_ASSIGN_OR_RETURN(auto tmpl, ChatTemplate::from_gguf(gguf));
//   ChatTemplateContext ctx = ChatTemplateContext::from_tokenizer(tokenizer);
//   TALLY_ASSIGN_OR_RETURN(std::string prompt, tmpl.render(messages, true, ctx));
//   tokens = tokenizer.encode(prompt, /*add_special=*/false, /*parse_special=*/true);
// The rendered text already holds the BOS text when the template writes bos_token (most do),
// so encode without adding special tokens (or add BOS only if the text does not start with
// ctx.bos_token).
//
// A ChatTemplate is immutable: render() may be called from many threads at once. Copies are
// cheap (the parsed template is shared). See docs/chat_templates.md.
#pragma once

#include <ctime>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "template/jinja/interpreter.h"
#include "template/jinja/template.h"

namespace tally {

namespace io {
class GgufFile;
}
class Tokenizer;

struct ChatMessage {
  std::string role;     // "system", "user", "assistant", "tool", ...
  std::string content;  // the text (OpenAI's text parts joined by "\n")
  // More fields of the message for the template (name, tool_calls, tool_call_id, ...): a JSON
  // object whose keys are added to the message dict; a "content" key here replaces `content`
  // (from_openai_json puts a null content there). Null: nothing extra.
  nlohmann::ordered_json extra;

  // An OpenAI chat message: {"role": "...", "content": "text" | [{"type": "text", "text":
  // "..."}, ...] | null, other keys -> extra}. Non-text parts (images, audio) are kUnsupported;
  // a missing role or a content of another type is kInvalidArgument. Messages say what is
  // wrong with the message; the caller says which message it is.
  static Result<ChatMessage> from_openai_json(const nlohmann::ordered_json& j);
  static Result<ChatMessage> from_openai_json(const nlohmann::json& j);
};

struct ChatTemplateContext {
  std::string bos_token;  // the texts of the tokenizer's BOS / EOS tokens ("" if none)
  std::string eos_token;
  // More template variables: tools, date_string, enable_thinking, ... (messages,
  // add_generation_prompt, bos_token and eos_token always come from the render call).
  nlohmann::ordered_json extra = nlohmann::ordered_json::object();
  std::optional<std::time_t> now;  // strftime_now()'s clock; nullopt = the real time
  // A template that rejects or drops system messages gets the leading system message merged
  // into the first user message (llama.cpp's behaviour), else the template decides.
  bool merge_system_if_unsupported = true;
  jinja::RenderLimits limits;

  // bos_token / eos_token from the tokenizer's BOS and EOS pieces.
  static ChatTemplateContext from_tokenizer(const Tokenizer& tokenizer);
};

class ChatTemplate {
 public:
  // The GGUF key tokenizer.chat_template (or tokenizer.chat_template.<name> when `name` is
  // given). Absent or empty: the built-in template. Present but not a string, or not
  // parseable: kFormat naming the key and the line:column (the caller may fall back to
  // builtin()).
  static Result<ChatTemplate> from_gguf(const io::GgufFile& gguf, std::string_view name = {});
  // A Hugging Face tokenizer_config.json's chat_template: a string, or the list form
  // [{"name": ..., "template": ...}] from which `name` (default "default") is taken. Absent,
  // null or empty: the built-in template. kNotFound for a name the config lacks.
  static Result<ChatTemplate> from_hf_config(const nlohmann::json& config,
                                             std::string_view name = {});
  // A template from its Jinja source (kFormat with line:column if it does not parse).
  static Result<ChatTemplate> from_source(std::string_view source);
  // The fallback: ChatML, "<|im_start|>{role}\n{content}<|im_end|>\n" per message, then
  // "<|im_start|>assistant\n" for the generation prompt.
  static ChatTemplate builtin();
  static std::string_view builtin_source();

  // The prompt for `messages`; add_generation_prompt appends the assistant header the model
  // continues from. Errors (the message says which, with the template's line:column):
  // kInvalidArgument when the template raises (e.g. "Conversation roles must alternate ...")
  // or fails on these messages, kOutOfRange when a render limit is reached.
  Result<std::string> render(const std::vector<ChatMessage>& messages, bool add_generation_prompt,
                             const ChatTemplateContext& ctx) const;

  const std::string& source() const { return source_; }
  bool is_builtin() const { return builtin_; }
  // Whether a leading system message reaches the output (probed once when built).
  bool supports_system_role() const { return supports_system_role_; }

 private:
  ChatTemplate(std::string source, jinja::Template tmpl, bool builtin);
  Result<std::string> render_raw(const std::vector<ChatMessage>& messages,
                                 bool add_generation_prompt, const ChatTemplateContext& ctx) const;
  bool probe_system_role() const;

  std::string source_;
  jinja::Template tmpl_;
  bool builtin_ = false;
  bool supports_system_role_ = true;
};

}  // namespace tally
