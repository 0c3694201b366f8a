// libFuzzer target: the chat template interpreter (src/template/jinja). The input is a
// template source, then a NUL byte, then the template's variables as JSON (messages, tools,
// ...); without a NUL the whole input is the source and a fixed conversation is used.
// Parsing and rendering must end in a value or an error Status within small render limits
// (steps, memory, depth): never a crash, a hang or a sanitizer report. (ChatTemplate itself
// probes each new template with the default, larger limits, so the fuzzer drives the
// interpreter directly.)
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "template/jinja/json.h"
#include "template/jinja/template.h"

namespace {

using namespace tally::jinja;

void require(bool cond) {
  if (!cond) __builtin_trap();
}

constexpr const char* kConversation =
    R"({"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"},
  {"role": "assistant", "content": "Hello", "tool_calls": [{"function": {"name": "f", "arguments": {"x": 1}}}]},
  {"role": "user", "content": "Bye"}], "bos_token": "<s>", "eos_token": "</s>",
  "add_generation_prompt": true, "tools": [{"type": "function", "function": {"name": "f"}}]})";

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t nul = input.find('\0');
  const std::string_view source = input.substr(0, nul);
  static const Value conversation = value_from_json(nlohmann::ordered_json::parse(kConversation));
  Value vars = conversation;
  if (nul != std::string_view::npos) {
    const auto j = nlohmann::ordered_json::parse(input.substr(nul + 1), nullptr, false);
    if (j.is_object()) vars = value_from_json(j);
  }

  auto tmpl = Template::parse(source);
  if (!tmpl.ok()) {
    require(!tmpl.status().message().empty());
    return 0;
  }
  RenderOptions options;
  options.now = 0;
  options.limits.max_steps = 100'000;
  options.limits.max_output_bytes = 1 << 20;
  options.limits.max_alloc_bytes = 16 << 20;
  options.limits.max_call_depth = 16;
  auto out = tmpl->render(vars.as_object(), options);
  if (out.ok()) {
    require(out->size() <= options.limits.max_output_bytes);
  } else {
    require(!out.status().message().empty());
  }
  return 0;
}
