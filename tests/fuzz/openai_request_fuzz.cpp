// libFuzzer target: the OpenAI request readers on arbitrary bytes (JSON or not). Each reader
// must return either a request or one 4xx ApiError with a message; never crash, hang or
// leak. The first byte picks the reader, the rest is the body.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "server/openai_request.h"

namespace {

using namespace tally::server;

void require(bool cond) {
  if (!cond) __builtin_trap();
}

void check_error(const std::optional<ApiError>& e) {
  if (!e) return;
  require(e->status >= 400 && e->status < 500);
  require(!e->message.empty());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view body(reinterpret_cast<const char*>(data) + 1, size - 1);
  IgnoredFields ignored;
  switch (data[0] % 4) {
    case 0: {
      CompletionRequest req;
      const auto e = parse_completion_request(body, req, ignored);
      check_error(e);
      if (!e) require(!req.prompts.empty());
      break;
    }
    case 1: {
      ChatRequest req;
      const auto e = parse_chat_request(body, req, ignored);
      check_error(e);
      if (!e) require(!req.messages.empty());
      break;
    }
    case 2: {
      TokenizeRequest req;
      check_error(parse_tokenize_request(body, req, ignored));
      break;
    }
    default: {
      DetokenizeRequest req;
      check_error(parse_detokenize_request(body, req, ignored));
      break;
    }
  }
  return 0;
}
