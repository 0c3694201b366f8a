#include "model/hf_checkpoint.h"

#include <deque>
#include <filesystem>
#include <limits>
#include <memory>

#include <fmt/format.h>

#include "io/gguf_tensor_names.h"
#include "io/safetensors.h"
#include "model/generation_config.h"
#include "model/hf_tensors.h"
#include "tokenizer/tokenizer_hf.h"

namespace tally {

namespace {

using nlohmann::json;

// llama.cpp's tokenizer.ggml.pre name for the pre-tokenizer tokenizer_hf.h recognised.
std::string gguf_pre_name(const TokenizerVocab& v) {
  if (v.kind == TokenizerKind::kSpm) return "default";
  if (v.pre.empty()) return "gpt-2";
  if (v.pre == "llama3") return "llama-bpe";
  return v.pre;
}

Status write_tokenizer(TokenizerVocab v, int64_t n_vocab, io::GgufWriter& w) {
  const size_t n = static_cast<size_t>(n_vocab);
  if (v.tokens.size() > n)
    return make_error(ErrorCode::kFormat, "tokenizer.json has {} tokens, more than config.json's vocab_size {}",
                      v.tokens.size(), n_vocab);
  // The embedding's extra rows get unused placeholders, as llama.cpp's converter pads them.
  if (v.types.empty()) v.types.assign(v.tokens.size(), TokenType::kNormal);
  if (v.kind == TokenizerKind::kSpm && v.scores.empty()) v.scores.assign(v.tokens.size(), 0.0f);
  for (size_t i = v.tokens.size(); i < n; ++i) {
    v.tokens.push_back(fmt::format("[PAD{}]", i));
    v.types.push_back(TokenType::kUnused);
    if (v.kind == TokenizerKind::kSpm) v.scores.push_back(-std::numeric_limits<float>::infinity());
  }
  w.set_string("tokenizer.ggml.model", v.kind == TokenizerKind::kSpm ? "llama" : "gpt2");
  w.set_string("tokenizer.ggml.pre", gguf_pre_name(v));
  w.set_string_array("tokenizer.ggml.tokens", std::move(v.tokens));
  if (v.kind == TokenizerKind::kSpm) w.set_f32_array("tokenizer.ggml.scores", std::move(v.scores));
  std::vector<int32_t> types;
  for (TokenType t : v.types) types.push_back(static_cast<int32_t>(t));
  w.set_i32_array("tokenizer.ggml.token_type", std::move(types));
  if (v.kind == TokenizerKind::kBpe) w.set_string_array("tokenizer.ggml.merges", std::move(v.merges));
  auto id = [&](const char* key, std::optional<int32_t> value) {
    if (value && *value >= 0) w.set_u32(key, static_cast<uint32_t>(*value));
  };
  id("tokenizer.ggml.bos_token_id", v.bos_id);
  id("tokenizer.ggml.eos_token_id", v.eos_id);
  id("tokenizer.ggml.unknown_token_id", v.unk_id);
  id("tokenizer.ggml.eot_token_id", v.eot_id);
  id("tokenizer.ggml.eom_token_id", v.eom_id);
  if (v.add_bos) w.set_bool("tokenizer.ggml.add_bos_token", *v.add_bos);
  if (v.add_eos) w.set_bool("tokenizer.ggml.add_eos_token", *v.add_eos);
  if (v.add_space_prefix) w.set_bool("tokenizer.ggml.add_space_prefix", *v.add_space_prefix);
  return Status::ok_status();
}

// tokenizer_config.json's chat_template (a string, or named templates), else chat_template.jinja.
Status write_chat_template(const std::string& dir, const json& config, io::GgufWriter& w) {
  if (auto it = config.find("chat_template"); it != config.end() && !it->is_null()) {
    if (it->is_string()) {
      w.set_string("tokenizer.chat_template", it->get<std::string>());
      return Status::ok_status();
    }
    if (!it->is_array())
      return make_error(ErrorCode::kFormat, "tokenizer_config.json: chat_template is not a string or a list");
    for (const json& t : *it) {
      if (!t.is_object() || !t.value("name", json()).is_string() || !t.value("template", json()).is_string())
        return make_error(ErrorCode::kFormat, "tokenizer_config.json: a chat_template entry without name/template");
      const std::string name = t["name"].get<std::string>();
      w.set_string(name == "default" ? "tokenizer.chat_template" : "tokenizer.chat_template." + name,
                   t["template"].get<std::string>());
    }
    return Status::ok_status();
  }
  auto jinja = read_hf_file(dir + "/chat_template.jinja");
  if (jinja.ok()) w.set_string("tokenizer.chat_template", std::move(jinja).value());
  return Status::ok_status();
}

// generation_config.json: default sampling and stop ids (generation_config.h); its first
// eos_token_id is the EOS where tokenizer_config.json names none.
Status apply_generation_config(const std::string& dir, TokenizerVocab& v, io::GgufWriter& w) {
  auto c = read_generation_config_dir(dir);
  if (!c.ok()) return c.status();
  if (!c->eos_ids.empty() && !v.eos_id) v.eos_id = c->eos_ids.front();
  write_generation_config(*c, v.eos_id, w);
  return Status::ok_status();
}

Result<json> read_json(const std::string& path) {
  TALLY_ASSIGN_OR_RETURN(std::string text, read_hf_file(path));
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return make_error(ErrorCode::kFormat, "{}: not a JSON object", path);
  return j;
}

// The tensors of a directory bound in place (open_model_file): views into the mapped
// safetensors files, which this keeps open, under names it keeps.
struct InPlaceTensors {
  std::shared_ptr<io::SafetensorsCheckpoint> ckpt;
  std::deque<std::string> names;
  std::vector<io::GgufFile::ExternalTensor> tensors;

  void add(std::string name, DType type, std::vector<int64_t> dims, std::span<const uint8_t> bytes) {
    names.push_back(std::move(name));
    tensors.push_back({names.back(), type, std::move(dims), bytes});
  }
};

// Whether `t` is already what the GGUF tensor of `p` holds: same type, rows as they are, no
// Gemma + 1, and aligned for its element type (the kernels read it in place).
bool usable_in_place(const HfTensorPlan& p, const io::SafetensorsTensor& t) {
  const size_t elem = p.type == DType::kF32 ? 4 : 2;
  return p.order == HfRowOrder::kAsIs && !p.plus_one && t.type == p.type &&
         reinterpret_cast<uintptr_t>(t.bytes.data()) % elem == 0;
}

// Binds `p` in place when its bytes can be used as they are in the checkpoint: one source
// tensor, or the experts of a merged 3-D expert tensor, bound as the per-expert matrices the
// model also reads (blk.N.ffn_gate.E.weight). False: `p` must be produced (copied).
bool bind_in_place(const HfTensorPlan& p, InPlaceTensors& out) {
  for (const io::SafetensorsTensor* t : p.sources)
    if (!usable_in_place(p, *t)) return false;
  if (p.sources.size() == 1) {
    if (p.sources[0]->bytes.size() != p.n_bytes()) return false;
    out.add(p.name, p.type, p.dims, p.sources[0]->bytes);
    return true;
  }
  const std::optional<io::GgufTensorId> id = io::gguf_tensor_parse(p.name);
  const bool experts = id && (id->tensor == io::GgufTensor::kFfnGateExps || id->tensor == io::GgufTensor::kFfnUpExps ||
                              id->tensor == io::GgufTensor::kFfnDownExps);
  if (!experts || p.dims.size() != 3 || static_cast<int64_t>(p.sources.size()) != p.dims[2]) return false;
  const uint64_t expert_bytes = p.n_bytes() / p.sources.size();
  for (const io::SafetensorsTensor* t : p.sources)
    if (t->bytes.size() != expert_bytes) return false;
  for (size_t e = 0; e < p.sources.size(); ++e)
    out.add(io::gguf_expert_tensor_name(id->tensor, id->layer, static_cast<int64_t>(e)), p.type,
            {p.dims[0], p.dims[1]}, p.sources[e]->bytes);
  return true;
}

uint32_t file_type_of(DType t) {
  switch (t) {
    case DType::kF16: return 1;
    case DType::kBF16: return 32;  // LLAMA_FTYPE_MOSTLY_BF16
    default: return 0;
  }
}

// in_place: null to produce every tensor into `w`; else the tensors usable as they are go there
// instead (bound by open_model_file), and only the others into `w`.
Result<HfConvertSummary> convert(const std::string& dir, std::optional<DType> type, io::GgufWriter& w,
                                 std::function<void()> on_tensor, bool metadata_only,
                                 InPlaceTensors* in_place = nullptr) {
  if (type && *type != DType::kF32 && *type != DType::kF16 && *type != DType::kBF16)
    return make_error(ErrorCode::kInvalidArgument, "weights of type {} (f32, f16 or bf16 here)", dtype_name(*type));
  auto config = read_json(dir + "/config.json");
  if (!config.ok()) return config.status();
  // The tokenizer files are checked before the weights are touched.
  json tok_config;
  if (auto c = read_hf_config(dir + "/tokenizer_config.json"); c.ok()) {
    tok_config = std::move(c).value();
  } else if (c.status().code() != ErrorCode::kNotFound) {
    return c.status();
  }
  TALLY_ASSIGN_OR_RETURN(TokenizerVocab vocab, tokenizer_vocab_from_hf_dir(dir, tok_config));

  HfConvertSummary summary;
  std::filesystem::path dir_path = std::filesystem::path(dir).lexically_normal();
  if (dir_path.filename().empty()) dir_path = dir_path.parent_path();  // a trailing '/'
  const std::string name = dir_path.filename().string();
  TALLY_ASSIGN_OR_RETURN(summary.info,
                         hf_config_to_gguf(*config, name.empty() ? std::string("model") : name, w));
  auto ckpt = std::make_shared<io::SafetensorsCheckpoint>();
  TALLY_ASSIGN_OR_RETURN(*ckpt, io::SafetensorsCheckpoint::open_dir(dir));
  TALLY_ASSIGN_OR_RETURN(std::vector<HfTensorPlan> plans, plan_hf_tensors(summary.info, *ckpt, type));
  summary.n_shards = ckpt->n_files();
  w.set_u32("general.file_type", file_type_of(plans.front().type));
  w.set_u32("general.quantization_version", 2);
  TALLY_RETURN_IF_ERROR(apply_generation_config(dir, vocab, w));
  TALLY_RETURN_IF_ERROR(write_tokenizer(std::move(vocab), summary.info.n_vocab, w));
  TALLY_RETURN_IF_ERROR(write_chat_template(dir, tok_config, w));

  if (metadata_only) return summary;
  for (const auto& [name, f] : {std::pair<const char*, const std::vector<float>*>{"rope_freqs.weight", &summary.info.rope_freqs},
                                {"rope_factors_long.weight", &summary.info.rope_factors_long},
                                {"rope_factors_short.weight", &summary.info.rope_factors_short}}) {
    if (f->empty()) continue;
    TALLY_RETURN_IF_ERROR(w.add_tensor(name, DType::kF32, {static_cast<int64_t>(f->size())},
                                       {reinterpret_cast<const uint8_t*>(f->data()), f->size() * sizeof(float)}));
    ++summary.n_tensors;
  }
  if (in_place) in_place->ckpt = ckpt;
  for (HfTensorPlan& p : plans) {
    summary.tensor_bytes += p.n_bytes();
    ++summary.n_tensors;
    if (in_place && bind_in_place(p, *in_place)) continue;
    auto plan = std::make_shared<HfTensorPlan>(std::move(p));
    TALLY_RETURN_IF_ERROR(w.add_tensor_streamed(
        plan->name, plan->type, plan->dims, [ckpt, plan, on_tensor](io::GgufWriter::TensorEmit emit) {
          TALLY_RETURN_IF_ERROR(produce_hf_tensor(*plan, emit));
          for (const io::SafetensorsTensor* t : plan->sources) ckpt->file_of(t->name).release(*t);
          if (on_tensor) on_tensor();
          return Status::ok_status();
        }));
  }
  return summary;
}

}  // namespace

bool is_hf_model_dir(const std::string& path) {
  std::error_code ec;
  return std::filesystem::is_directory(path, ec);
}

Result<HfConvertSummary> hf_dir_to_gguf(const std::string& dir, std::optional<DType> type, io::GgufWriter& w,
                                        std::function<void()> on_tensor, bool metadata_only) {
  auto s = convert(dir, type, w, std::move(on_tensor), metadata_only);
  if (!s.ok()) return s.status().with_context(dir);
  return s;
}

Result<io::GgufFile> open_model_file(const std::string& path, bool metadata_only) {
  if (!is_hf_model_dir(path)) return io::GgufFile::open(path);
  io::GgufWriter w;
  auto in_place = std::make_shared<InPlaceTensors>();
  auto s = convert(path, std::nullopt, w, {}, metadata_only, in_place.get());
  if (!s.ok()) return s.status().with_context(path);
  TALLY_ASSIGN_OR_RETURN(io::GgufFile file, io::GgufFile::parse_owned(w.to_bytes(), path));
  std::vector<io::GgufFile::ExternalTensor> tensors = std::move(in_place->tensors);
  TALLY_RETURN_IF_ERROR(file.add_external_tensors(std::move(tensors), std::move(in_place)));
  return file;
}

}  // namespace tally
