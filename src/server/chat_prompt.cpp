#include "server/chat_prompt.h"

#include <spdlog/spdlog.h>

#include "io/gguf.h"
#include "tokenizer/tokenizer.h"

namespace tally::server {

namespace {

class TemplateRenderer final : public ChatRenderer {
 public:
  TemplateRenderer(ChatTemplate tmpl, ChatTemplateContext ctx, std::string description)
      : tmpl_(std::move(tmpl)), ctx_(std::move(ctx)), description_(std::move(description)) {}

  Result<std::string> render(const std::vector<ChatMessage>& messages,
                             bool add_generation_prompt) const override {
    return tmpl_.render(messages, add_generation_prompt, ctx_);
  }
  std::string describe() const override { return description_; }

 private:
  ChatTemplate tmpl_;
  ChatTemplateContext ctx_;
  std::string description_;
};

}  // namespace

std::unique_ptr<ChatRenderer> template_renderer(ChatTemplate tmpl, ChatTemplateContext ctx,
                                                std::string description) {
  return std::make_unique<TemplateRenderer>(std::move(tmpl), std::move(ctx),
                                            std::move(description));
}

std::unique_ptr<ChatRenderer> chatml_renderer(ChatTemplateContext ctx) {
  return template_renderer(ChatTemplate::builtin(), std::move(ctx), "ChatML (built in)");
}

std::unique_ptr<ChatRenderer> model_chat_renderer(const io::GgufFile& gguf,
                                                  const Tokenizer& tokenizer) {
  auto ctx = ChatTemplateContext::from_tokenizer(tokenizer);
  auto tmpl = ChatTemplate::from_gguf(gguf);
  if (!tmpl.ok()) {
    spdlog::warn("serve: the model's chat template is unusable ({}); using ChatML",
                 tmpl.status().message());
    return chatml_renderer(std::move(ctx));
  }
  const bool builtin = tmpl->is_builtin();
  return template_renderer(
      std::move(*tmpl), std::move(ctx),
      builtin ? "ChatML (the model has no chat template)" : "the model's tokenizer.chat_template");
}

}  // namespace tally::server
