#include "template/chat_template.h"

#include <memory>
#include <new>

#include "base/check.h"
#include "io/gguf.h"
#include "template/jinja/error.h"
#include "template/jinja/json.h"
#include "tokenizer/tokenizer.h"

namespace tally {
namespace {

// The built-in fallback (ChatML, as llama.cpp uses for models without a template).
constexpr std::string_view kBuiltinSource =
    "{%- for message in messages -%}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{ '<|im_start|>assistant\\n' }}{%- endif -%}";

// Texts no real conversation contains, to see whether a system message reaches the output.
constexpr std::string_view kProbeSystem = "tally-probe-system-3f9c";
constexpr std::string_view kProbeUser = "tally-probe-user-3f9c";

jinja::Value message_value(const ChatMessage& m) {
  auto obj = std::make_shared<jinja::Object>();
  obj->set("role", jinja::Value(m.role));
  obj->set("content", jinja::Value(m.content));
  if (m.extra.is_object()) {
    for (auto it = m.extra.begin(); it != m.extra.end(); ++it) {
      if (it.key() == "role") continue;
      obj->set(it.key(), jinja::value_from_json(it.value(), 1));
    }
  }
  return jinja::Value::object(std::move(obj));
}

// A leading system message folded into the user message after it ("system\nuser"), or
// turned into a user message when no user message follows.
std::vector<ChatMessage> merge_system(const std::vector<ChatMessage>& messages) {
  std::vector<ChatMessage> out;
  out.reserve(messages.size());
  if (messages.size() >= 2 && messages[1].role == "user") {
    ChatMessage user = messages[1];
    user.content = messages[0].content + "\n" + user.content;
    out.push_back(std::move(user));
    out.insert(out.end(), messages.begin() + 2, messages.end());
  } else {
    ChatMessage user = messages[0];
    user.role = "user";
    out.push_back(std::move(user));
    out.insert(out.end(), messages.begin() + 1, messages.end());
  }
  return out;
}

}  // namespace

ChatTemplateContext ChatTemplateContext::from_tokenizer(const Tokenizer& tokenizer) {
  ChatTemplateContext ctx;
  if (tokenizer.bos() >= 0) ctx.bos_token = std::string(tokenizer.piece(tokenizer.bos()));
  if (tokenizer.eos() >= 0) ctx.eos_token = std::string(tokenizer.piece(tokenizer.eos()));
  return ctx;
}

ChatTemplate::ChatTemplate(std::string source, jinja::Template tmpl, bool builtin)
    : source_(std::move(source)), tmpl_(std::move(tmpl)), builtin_(builtin) {
  supports_system_role_ = probe_system_role();
}

std::string_view ChatTemplate::builtin_source() { return kBuiltinSource; }

ChatTemplate ChatTemplate::builtin() {
  auto parsed = jinja::Template::parse(kBuiltinSource);
  TALLY_CHECK(parsed.ok(), "built-in chat template does not parse: {}",
              parsed.status().to_string());
  return ChatTemplate(std::string(kBuiltinSource), std::move(parsed).value(), true);
}

Result<ChatTemplate> ChatTemplate::from_source(std::string_view source) {
  auto parsed = jinja::Template::parse(source);
  if (!parsed.ok()) return parsed.status().with_context("chat template");
  return ChatTemplate(std::string(source), std::move(parsed).value(), false);
}

Result<ChatTemplate> ChatTemplate::from_gguf(const io::GgufFile& gguf, std::string_view name) {
  std::string key = "tokenizer.chat_template";
  if (!name.empty()) key += "." + std::string(name);
  const io::GgufValue* v = gguf.find(key);
  if (v == nullptr) return builtin();
  const auto text = v->as_string();
  if (!text) {
    return make_error(ErrorCode::kFormat, "{}: {} is a {}, not a string", gguf.name(), key,
                      io::gguf_type_name(v->type));
  }
  if (text->empty()) return builtin();
  auto parsed = from_source(*text);
  if (!parsed.ok()) return parsed.status().with_context(gguf.name() + ": " + key);
  return parsed;
}

Result<ChatTemplate> ChatTemplate::from_hf_config(const nlohmann::json& config,
                                                  std::string_view name) {
  const std::string wanted = name.empty() ? "default" : std::string(name);
  const nlohmann::json* source = nullptr;
  if (config.is_object() && config.contains("chat_template")) source = &config["chat_template"];
  if (source != nullptr && source->is_array()) {  // [{"name": ..., "template": ...}, ...]
    const nlohmann::json* named = nullptr;
    for (const nlohmann::json& entry : *source) {
      if (entry.is_object() && entry.value("name", "") == wanted) named = &entry["template"];
    }
    if (named == nullptr) {
      return make_error(ErrorCode::kNotFound,
                        "tokenizer_config.json: no chat template named '{}'", wanted);
    }
    source = named;
  } else if (!name.empty()) {
    return make_error(ErrorCode::kNotFound,
                      "tokenizer_config.json: no chat template named '{}'", wanted);
  }
  if (source == nullptr || source->is_null()) return builtin();
  if (!source->is_string()) {
    return make_error(ErrorCode::kFormat, "tokenizer_config.json: chat_template is a {}, not a "
                      "string or a list of named templates", source->type_name());
  }
  if (source->get_ref<const std::string&>().empty()) return builtin();
  auto parsed = from_source(source->get_ref<const std::string&>());
  if (!parsed.ok()) return parsed.status().with_context("tokenizer_config.json");
  return parsed;
}

bool ChatTemplate::probe_system_role() const {
  std::vector<ChatMessage> probe(2);
  probe[0].role = "system";
  probe[0].content = kProbeSystem;
  probe[1].role = "user";
  probe[1].content = kProbeUser;
  ChatTemplateContext ctx;
  ctx.now = 0;
  auto out = render_raw(probe, true, ctx);
  return out.ok() && out->find(kProbeSystem) != std::string::npos;
}

Result<std::string> ChatTemplate::render(const std::vector<ChatMessage>& messages,
                                         bool add_generation_prompt,
                                         const ChatTemplateContext& ctx) const {
  if (!supports_system_role_ && ctx.merge_system_if_unsupported && !messages.empty() &&
      messages[0].role == "system") {
    return render_raw(merge_system(messages), add_generation_prompt, ctx);
  }
  return render_raw(messages, add_generation_prompt, ctx);
}

Result<std::string> ChatTemplate::render_raw(const std::vector<ChatMessage>& messages,
                                             bool add_generation_prompt,
                                             const ChatTemplateContext& ctx) const {
  jinja::Object vars;
  try {
    if (ctx.extra.is_object()) {
      for (auto it = ctx.extra.begin(); it != ctx.extra.end(); ++it) {
        vars.set(it.key(), jinja::value_from_json(it.value()));
      }
    }
    std::vector<jinja::Value> list;
    list.reserve(messages.size());
    for (const ChatMessage& m : messages) list.push_back(message_value(m));
    vars.set("messages", jinja::Value::array(std::move(list)));
  } catch (const jinja::JinjaError& e) {
    return make_error(ErrorCode::kInvalidArgument, "chat template input: {}", e.message());
  } catch (const std::bad_alloc&) {
    return Status(ErrorCode::kOutOfMemory, "chat template input: out of memory");
  }
  vars.set("add_generation_prompt", jinja::Value(add_generation_prompt));
  vars.set("bos_token", jinja::Value(ctx.bos_token));
  vars.set("eos_token", jinja::Value(ctx.eos_token));
  jinja::RenderOptions options;
  options.limits = ctx.limits;
  options.now = ctx.now;
  auto out = tmpl_.render(vars, options);
  if (!out.ok()) return out.status().with_context("chat template");
  return out;
}

}  // namespace tally
