// Chat messages -> prompt text, through the model's own chat template
// (tokenizer.chat_template, rendered by template/chat_template.h) or ChatML when the model
// has none (llama.cpp's fallback). The server calls a ChatRenderer, so tests can give it any.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "template/chat_template.h"

namespace tally {
class Tokenizer;
namespace io {
class GgufFile;
}
}  // namespace tally

namespace tally::server {

class ChatRenderer {
 public:
  virtual ~ChatRenderer() = default;
  // The prompt text; add_generation_prompt appends the opening of the assistant's turn.
  // InvalidArgument / OutOfRange when the template rejects the messages (says why).
  virtual Result<std::string> render(const std::vector<ChatMessage>& messages,
                                     bool add_generation_prompt) const = 0;
  // Where the template came from, for the start-up log.
  virtual std::string describe() const = 0;
};

// A template with its variables (bos_token, eos_token, ...).
std::unique_ptr<ChatRenderer> template_renderer(ChatTemplate tmpl, ChatTemplateContext ctx,
                                                std::string description);
// ChatML (ChatTemplate::builtin()).
std::unique_ptr<ChatRenderer> chatml_renderer(ChatTemplateContext ctx = {});
// The model's tokenizer.chat_template; ChatML when it has none, or (with a warning in the
// log) when its template does not parse.
std::unique_ptr<ChatRenderer> model_chat_renderer(const io::GgufFile& gguf,
                                                  const Tokenizer& tokenizer);

}  // namespace tally::server
