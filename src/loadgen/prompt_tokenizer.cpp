#include "loadgen/prompt_tokenizer.h"

#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <unordered_map>

#include "loadgen/openai_protocol.h"
#include "loadgen/word_list.h"

namespace tally::loadgen {

using Json = nlohmann::json;

namespace {

class WordTokenizer final : public PromptTokenizer {
 public:
  explicit WordTokenizer(std::string why) : why_(std::move(why)) {
    const auto words = prompt_words();
    for (size_t i = 0; i < words.size(); ++i) ids_.emplace(words[i], static_cast<int32_t>(i));
  }
  Result<std::vector<int32_t>> encode(const std::string& text) override {
    std::vector<int32_t> out;
    std::istringstream in(text);
    std::string w;
    const auto n = static_cast<int32_t>(prompt_words().size());
    while (in >> w) {
      auto it = ids_.find(w);
      out.push_back(it != ids_.end() ? it->second
                                     : static_cast<int32_t>(std::hash<std::string>{}(w) % n));
    }
    return out;
  }
  Result<std::string> decode(const std::vector<int32_t>& ids) override {
    std::string out;
    const auto words = prompt_words();
    for (int32_t id : ids) {
      if (id < 0 || static_cast<size_t>(id) >= words.size()) continue;
      if (!out.empty()) out += ' ';
      out += words[static_cast<size_t>(id)];
    }
    return out;
  }
  bool exact() const override { return false; }
  std::string description() const override { return "words (approximate lengths: " + why_ + ")"; }

 private:
  std::string why_;
  std::unordered_map<std::string, int32_t> ids_;
};

// vLLM's shapes ({"prompt"} / {"tokens"} -> {"prompt"}) or llama.cpp's ({"content"} /
// {"tokens"} -> {"content"}).
class ServerTokenizer final : public PromptTokenizer {
 public:
  ServerTokenizer(HttpClient& client, std::string model, std::string api_key, bool llama_cpp)
      : client_(client), model_(std::move(model)), key_(std::move(api_key)), llama_(llama_cpp) {}

  Result<std::vector<int32_t>> encode(const std::string& text) override {
    Json body = {{"add_special_tokens", false}};
    if (llama_) {
      body["content"] = text;
    } else {
      body["model"] = model_;
      body["prompt"] = text;
    }
    TALLY_ASSIGN_OR_RETURN(Json reply, post("/tokenize", body));
    const auto it = reply.find("tokens");
    if (it == reply.end() || !it->is_array()) {
      return make_error(ErrorCode::kFormat, "/tokenize answered without a 'tokens' list");
    }
    std::vector<int32_t> ids;
    for (const auto& t : *it) {
      if (t.is_number_integer())
        ids.push_back(t.get<int32_t>());
      else if (t.is_object() && t.contains("id"))
        ids.push_back(t["id"].get<int32_t>());
      else
        return make_error(ErrorCode::kFormat, "/tokenize: a token is not an integer");
    }
    return ids;
  }
  Result<std::string> decode(const std::vector<int32_t>& ids) override {
    Json body = {{"tokens", ids}};
    if (!llama_) body["model"] = model_;
    TALLY_ASSIGN_OR_RETURN(Json reply, post("/detokenize", body));
    const char* field = llama_ ? "content" : "prompt";
    if (!reply.contains(field) || !reply[field].is_string()) {
      return make_error(ErrorCode::kFormat, "/detokenize answered without '{}'", field);
    }
    return reply[field].get<std::string>();
  }
  bool exact() const override { return true; }
  std::string description() const override {
    return llama_ ? "server /tokenize (llama.cpp)" : "server /tokenize";
  }

 private:
  Result<Json> post(const std::string& path, const Json& body) {
    HttpRequestSpec spec;
    spec.method = "POST";
    spec.path = path;
    spec.body = body.dump(-1, ' ', false, Json::error_handler_t::replace);
    spec.api_key = key_;
    spec.timeout_s = 60;
    TALLY_ASSIGN_OR_RETURN(HttpResult r, client_.fetch(spec));
    if (r.status != 200) {
      return make_error(ErrorCode::kUnsupported, "{} answered HTTP {}: {}", path, r.status,
                        error_message_of_body(r.body));
    }
    Json j = Json::parse(r.body, nullptr, false);
    if (!j.is_object()) return make_error(ErrorCode::kFormat, "{} answered no JSON object", path);
    return j;
  }

  HttpClient& client_;
  std::string model_;
  std::string key_;
  bool llama_;
};

}  // namespace

std::unique_ptr<PromptTokenizer> make_word_tokenizer(std::string why) {
  return std::make_unique<WordTokenizer>(std::move(why));
}

std::unique_ptr<PromptTokenizer> probe_server_tokenizer(HttpClient& client,
                                                        const std::string& model,
                                                        const std::string& api_key,
                                                        std::string& why) {
  for (bool llama : {false, true}) {
    auto tok = std::make_unique<ServerTokenizer>(client, model, api_key, llama);
    auto ids = tok->encode("Once upon a time");
    if (ids.ok() && !ids->empty() && tok->decode(*ids).ok()) return tok;
    if (!llama) why = ids.ok() ? "/tokenize gave no tokens" : ids.status().message();
  }
  return nullptr;
}

}  // namespace tally::loadgen
