#include "synth/synthetic_model.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <system_error>

#include <fmt/format.h>

#include "io/gguf.h"
#include "io/gguf_tensor_names.h"
#include "io/gguf_writer.h"
#include "synth/row_producer.h"
#include "synth/synthetic_values.h"
#include "synth/synthetic_vocab.h"

namespace tally::synth {

namespace {

constexpr uint32_t kQuantizationVersion = 2;  // GGML_QNT_VERSION

// Hyper-parameters in the order and with the types convert_hf_to_gguf.py writes them.
void set_model_metadata(const SyntheticModelSpec& spec, const quant::QuantScheme& scheme, uint64_t seed,
                        io::GgufWriter& w) {
  const plan::PlanModel& m = spec.shape;
  const std::string& arch = m.architecture;
  auto key = [&](const char* suffix) { return fmt::format("{}.{}", arch, suffix); };
  auto u32 = [](int64_t v) { return static_cast<uint32_t>(v); };
  w.set_string("general.architecture", arch);
  w.set_string("general.type", "model");
  w.set_string("general.name", fmt::format("synthetic {}", m.name));
  w.set_string("general.description",
               fmt::format("synthetic weights (seed {}) in the shapes of {}, written by tally convert --synthetic; "
                           "not a trained model",
                           seed, m.name));
  w.set_u32(key("block_count"), u32(m.n_layers));
  w.set_u32(key("context_length"), u32(m.context_length));
  w.set_u32(key("embedding_length"), u32(m.n_embd));
  w.set_u32(key("feed_forward_length"), u32(m.n_ff));
  w.set_u32(key("attention.head_count"), u32(m.n_heads));
  w.set_u32(key("attention.head_count_kv"), u32(m.n_kv_heads));
  w.set_f32(key("rope.freq_base"), spec.rope_freq_base);
  w.set_f32(key("attention.layer_norm_rms_epsilon"), spec.rms_norm_eps);
  if (spec.head_dim_keys) {
    w.set_u32(key("attention.key_length"), u32(m.head_dim));
    w.set_u32(key("attention.value_length"), u32(m.head_dim));
  }
  if (spec.sliding_window > 0) w.set_u32(key("attention.sliding_window"), u32(spec.sliding_window));
  if (m.n_expert > 0) {
    w.set_u32(key("expert_count"), u32(m.n_expert));
    w.set_u32(key("expert_used_count"), u32(m.n_expert_used));
    if (m.n_ff_exp != m.n_ff) w.set_u32(key("expert_feed_forward_length"), u32(m.n_ff_exp));
    if (m.n_ff_shexp > 0) w.set_u32(key("expert_shared_feed_forward_length"), u32(m.n_ff_shexp));
  }
  if (spec.rope_linear_factor > 0.0f) {
    w.set_string(key("rope.scaling.type"), "linear");
    w.set_f32(key("rope.scaling.factor"), spec.rope_linear_factor);
  }
  w.set_u32("general.file_type", scheme.file_type);
  if (arch == "llama") {
    w.set_u32(key("vocab_size"), u32(m.n_vocab));
    w.set_u32(key("rope.dimension_count"), u32(m.head_dim));
  }
  if (arch == "phi3") {  // Phi3MiniModel's keys (no LongRoPE: the original context is the trained one)
    w.set_u32(key("rope.scaling.original_context_length"), u32(m.context_length));
    w.set_u32(key("rope.dimension_count"), u32(m.head_dim));
  }
}

int64_t n_elements(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

Status check_spec(const SyntheticModelSpec& spec) {
  const plan::PlanModel& m = spec.shape;
  // The architectures whose tensors plan_model_shape_tensors lists (model/arch.h runs them).
  constexpr std::string_view kArchs[] = {"llama", "qwen2", "qwen3", "gemma2", "gemma3", "qwen2moe", "qwen3moe", "phi3"};
  if (std::find(std::begin(kArchs), std::end(kArchs), m.architecture) == std::end(kArchs)) {
    return make_error(ErrorCode::kUnsupported,
                      "synthetic model '{}': architecture '{}' (llama, qwen2, qwen3, gemma2, gemma3, qwen2moe, "
                      "qwen3moe or phi3)",
                      m.name, m.architecture);
  }
  TALLY_RETURN_IF_ERROR(plan::plan_model_validate(m));
  if (m.tensors.empty()) {
    return make_error(ErrorCode::kInvalidArgument, "synthetic model '{}' has no tensor list", m.name);
  }
  if (!(spec.rope_freq_base > 0.0f) || !(spec.rms_norm_eps > 0.0f)) {
    return make_error(ErrorCode::kInvalidArgument, "synthetic model '{}': rope base and rms epsilon must be positive",
                      m.name);
  }
  return Status::ok_status();
}

Status check_options(const SyntheticOptions& o) {
  if (o.output_path.empty()) return make_error(ErrorCode::kInvalidArgument, "synthetic model: no output path");
  if (o.vocab_gguf.empty()) {
    return make_error(ErrorCode::kInvalidArgument, "synthetic model: no vocab GGUF to take the tokenizer from");
  }
  if (!(o.weight_std > 0.0f) || !std::isfinite(o.weight_std)) {
    return make_error(ErrorCode::kInvalidArgument, "synthetic model: weight std {} must be positive", o.weight_std);
  }
  return Status::ok_status();
}

RowFill fill_of(const SyntheticTensor& t, uint64_t seed, float weight_std) {
  RowFill fill;
  fill.stream = synthetic_stream(seed, t.shape.name);
  fill.mean = t.shape.role == plan::TensorRole::kNorm ? 1.0f : 0.0f;
  fill.std = weight_std;
  return fill;
}

Status add_tensors(const SyntheticModelSpec& spec, const std::vector<SyntheticTensor>& tensors,
                   const SyntheticOptions& o, RowProducer& rows, io::GgufWriter& w) {
  const auto n_tensors = static_cast<int64_t>(tensors.size());
  for (int64_t i = 0; i < n_tensors; ++i) {
    const SyntheticTensor& t = tensors[i];
    if (t.shape.name == io::gguf_tensor_name(io::GgufTensor::kRopeFreqs)) {
      const std::vector<float> f =
          llama3_rope_factors(spec.shape.head_dim, spec.rope_freq_base, *spec.llama3_rope);
      const auto* bytes = reinterpret_cast<const uint8_t*>(f.data());
      TALLY_RETURN_IF_ERROR(w.add_tensor(t.shape.name, DType::kF32, t.dims, {bytes, f.size() * sizeof(float)}));
      continue;
    }
    const RowFill fill = fill_of(t, o.seed, o.weight_std);
    TALLY_RETURN_IF_ERROR(w.add_tensor_streamed(
        t.shape.name, t.type, t.dims, [&rows, &o, fill, t, i, n_tensors](io::GgufWriter::TensorEmit emit) {
          Status st = rows.produce(t.type, t.shape.n_cols, t.shape.n_rows, fill, emit);
          if (o.on_progress) o.on_progress(i + 1, n_tensors);
          return st;
        }));
  }
  return Status::ok_status();
}

}  // namespace

Result<std::vector<SyntheticTensor>> synthetic_tensors(const SyntheticModelSpec& spec, const quant::QuantScheme& scheme) {
  TALLY_RETURN_IF_ERROR(check_spec(spec));
  std::vector<SyntheticTensor> out;
  if (spec.llama3_rope) {
    // convert_hf_to_gguf.py yields it before the model's own tensors.
    plan::PlanTensor rope;
    rope.name = io::gguf_tensor_name(io::GgufTensor::kRopeFreqs);
    rope.n_cols = spec.shape.head_dim / 2;
    out.push_back({rope, {rope.n_cols}, DType::kF32});
  }
  for (const plan::PlanTensor& t : spec.shape.tensors) {
    SyntheticTensor s;
    s.shape = t;
    if (t.n_experts > 0)
      s.dims = {t.n_cols, t.n_rows / t.n_experts, t.n_experts};
    else
      s.dims = t.is_vector() ? std::vector<int64_t>{t.n_cols} : std::vector<int64_t>{t.n_cols, t.n_rows};
    TALLY_ASSIGN_OR_RETURN(s.type, quant::quant_scheme_tensor_type(scheme, t, spec.shape));
    out.push_back(std::move(s));
  }
  return out;
}

Result<SyntheticSummary> write_synthetic_model(const SyntheticOptions& o) {
  TALLY_RETURN_IF_ERROR(check_options(o));
  SyntheticModelSpec spec;
  if (o.spec) {
    spec = *o.spec;
  } else {
    TALLY_ASSIGN_OR_RETURN(spec, synthetic_model_spec(o.preset));
  }
  TALLY_ASSIGN_OR_RETURN(const quant::QuantScheme scheme, quant::quant_scheme_from_name(o.type));
  TALLY_ASSIGN_OR_RETURN(const std::vector<SyntheticTensor> tensors, synthetic_tensors(spec, scheme));
  TALLY_ASSIGN_OR_RETURN(const io::GgufFile vocab, io::GgufFile::open(o.vocab_gguf));

  io::GgufWriter w;
  set_model_metadata(spec, scheme, o.seed, w);
  TALLY_ASSIGN_OR_RETURN(const VocabCopy vocab_copy, copy_tokenizer_metadata(vocab, spec.shape.n_vocab, w, spec.added_tokens));
  w.set_u32("general.quantization_version", kQuantizationVersion);

  int64_t max_cols = 1;
  for (const SyntheticTensor& t : tensors) max_cols = std::max(max_cols, t.shape.n_cols);
  RowProducer rows(o.n_threads, max_cols);
  TALLY_RETURN_IF_ERROR(add_tensors(spec, tensors, o, rows, w));
  TALLY_RETURN_IF_ERROR(w.write(o.output_path));

  SyntheticSummary s;
  s.model_name = fmt::format("synthetic {}", spec.shape.name);
  s.scheme = scheme;
  s.n_tensors = static_cast<int64_t>(tensors.size());
  for (const SyntheticTensor& t : tensors) s.n_params += n_elements(t.dims);
  s.n_vocab = spec.shape.n_vocab;
  s.n_file_tokens = vocab_copy.n_file_tokens;
  s.n_placeholder_tokens = vocab_copy.n_placeholders;
  std::error_code ec;
  s.file_bytes = std::filesystem::file_size(o.output_path, ec);
  s.n_threads = rows.n_threads();
  return s;
}

}  // namespace tally::synth
