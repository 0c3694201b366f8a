// llama2.c checkpoint -> GGUF (llama architecture), in llama.cpp's key and tensor order.
#include "io/llama2c.h"

#include <cstring>
#include <initializer_list>
#include <iterator>

#include <fmt/format.h>

#include "base/mapped_file.h"
#include "io/gguf_tensor_names.h"

namespace tally::io {

namespace {

constexpr size_t kHeaderBytes = 7 * 4;
constexpr uint32_t kExportMagic = 0x616b3432;  // "ak42": llama2.c's newer export versions
constexpr float kRmsEpsilon = 1e-5f;           // what llama2.c's run.c uses
constexpr uint32_t kNoToken = 0xFFFFFFFF;      // llama.cpp writes -1 as u32 for absent ids

// Where each fp32 tensor starts, in floats after the header. Per-layer tensors are stored
// layer after layer: layer l of `wq` starts at wq + l * wq_layer.
struct Layout {
  int64_t token_embedding, rms_att, wq, wk, wv, wo, rms_ffn, w1, w2, w3, rms_final, freq_cis, wcls, end;
  int64_t wq_layer, wk_layer, wo_layer, ffn_layer;  // floats per layer
};

bool mul(std::initializer_list<int64_t> xs, int64_t* out) {
  int64_t p = 1;
  for (int64_t x : xs)
    if (__builtin_mul_overflow(p, x, &p)) return false;
  *out = p;
  return true;
}

// Fills `l`; false when a size overflows int64 (only absurd headers get there).
bool compute_layout(const Llama2cConfig& c, Layout* l) {
  int64_t emb, rms, freq, cls;
  if (!mul({c.vocab_size, c.dim}, &emb) || !mul({c.n_layers, c.dim}, &rms) ||
      !mul({c.dim, c.dim}, &l->wq_layer) || !mul({c.kv_dim(), c.dim}, &l->wk_layer) ||
      !mul({c.dim, c.dim}, &l->wo_layer) || !mul({c.hidden_dim, c.dim}, &l->ffn_layer) ||
      !mul({c.seq_len, c.head_size() / 2}, &freq)) {
    return false;
  }
  cls = c.shared_classifier ? 0 : emb;
  int64_t wq, wk, wo, ffn;
  if (!mul({c.n_layers, l->wq_layer}, &wq) || !mul({c.n_layers, l->wk_layer}, &wk) ||
      !mul({c.n_layers, l->wo_layer}, &wo) || !mul({c.n_layers, l->ffn_layer}, &ffn)) {
    return false;
  }
  int64_t at = 0;
  bool ok = true;
  auto next = [&](int64_t* field, int64_t n) {
    *field = at;
    ok = ok && !__builtin_add_overflow(at, n, &at);
  };
  next(&l->token_embedding, emb);
  next(&l->rms_att, rms);
  next(&l->wq, wq);
  next(&l->wk, wk);
  next(&l->wv, wk);
  next(&l->wo, wo);
  next(&l->rms_ffn, rms);
  next(&l->w1, ffn);
  next(&l->w2, ffn);
  next(&l->w3, ffn);
  next(&l->rms_final, c.dim);
  int64_t freq_cis_imag = 0;  // RoPE tables, unused: GGUF llama computes RoPE itself
  next(&l->freq_cis, freq);
  next(&freq_cis_imag, freq);
  next(&l->wcls, cls);
  l->end = at;
  if (c.shared_classifier) l->wcls = l->token_embedding;
  return ok && at <= (INT64_MAX - static_cast<int64_t>(kHeaderBytes)) / 4;
}

Status check_header(const Llama2cConfig& c, std::string_view name) {
  auto bad = [&](std::string what) { return make_error(ErrorCode::kFormat, "llama2c: {}: {}", name, what); };
  const std::pair<const char*, int32_t> fields[] = {{"dim", c.dim}, {"hidden_dim", c.hidden_dim},
                                                     {"n_layers", c.n_layers}, {"n_heads", c.n_heads},
                                                     {"n_kv_heads", c.n_kv_heads}, {"seq_len", c.seq_len}};
  for (size_t i = 0; i < std::size(fields); ++i) {
    if (fields[i].second <= 0) {
      return bad(fmt::format("header field {} = {} is not positive at offset {}", fields[i].first, fields[i].second,
                             i < 5 ? i * 4 : 24));
    }
  }
  if (c.vocab_size <= 0) return bad(fmt::format("header field vocab_size = {} is invalid at offset 20", c.vocab_size));
  if (c.dim % c.n_heads != 0) return bad(fmt::format("dim {} is not a multiple of n_heads {}", c.dim, c.n_heads));
  if (c.n_kv_heads > c.n_heads || c.n_heads % c.n_kv_heads != 0) {
    return bad(fmt::format("n_heads {} is not a multiple of n_kv_heads {}", c.n_heads, c.n_kv_heads));
  }
  if (c.head_size() % 2 != 0) return bad(fmt::format("head size {} is odd (RoPE rotates pairs)", c.head_size()));
  return {};
}

}  // namespace

Result<Llama2cConfig> llama2c_read_config(std::span<const uint8_t> checkpoint, std::string_view name) {
  if (checkpoint.size() < kHeaderBytes) {
    return make_error(ErrorCode::kFormat, "llama2c: {}: {} bytes is too short for the 28-byte header", name,
                      checkpoint.size());
  }
  int32_t h[7];
  std::memcpy(h, checkpoint.data(), sizeof(h));
  if (static_cast<uint32_t>(h[0]) == kExportMagic) {
    return make_error(ErrorCode::kUnsupported,
                      "llama2c: {}: llama2.c export version {} (magic \"ak42\") is not supported; only the legacy "
                      "version 0 checkpoint (export.py --version 0)",
                      name, h[1]);
  }
  Llama2cConfig c;
  c.dim = h[0];
  c.hidden_dim = h[1];
  c.n_layers = h[2];
  c.n_heads = h[3];
  c.n_kv_heads = h[4];
  c.vocab_size = h[5] == INT32_MIN ? 0 : (h[5] < 0 ? -h[5] : h[5]);
  c.shared_classifier = h[5] > 0;
  c.seq_len = h[6];
  TALLY_RETURN_IF_ERROR(check_header(c, name));
  Layout l;
  if (!compute_layout(c, &l)) {
    return make_error(ErrorCode::kFormat, "llama2c: {}: the header's sizes overflow (dim {}, hidden_dim {}, {} layers)",
                      name, c.dim, c.hidden_dim, c.n_layers);
  }
  const int64_t expected = static_cast<int64_t>(kHeaderBytes) + l.end * 4;
  if (static_cast<uint64_t>(expected) != checkpoint.size()) {
    return make_error(ErrorCode::kFormat,
                      "llama2c: {}: file has {} bytes but the header (dim {}, hidden_dim {}, n_layers {}, n_heads {}, "
                      "n_kv_heads {}, vocab_size {}, seq_len {}) needs {}",
                      name, checkpoint.size(), c.dim, c.hidden_dim, c.n_layers, c.n_heads, c.n_kv_heads, h[5],
                      c.seq_len, expected);
  }
  return c;
}

namespace {

void set_metadata(const Llama2cConfig& c, Llama2cVocab vocab, const std::string& model_name, GgufWriter& out) {
  out.set_string_array("tokenizer.ggml.tokens", std::move(vocab.pieces));
  out.set_f32_array("tokenizer.ggml.scores", std::move(vocab.scores));
  out.set_i32_array("tokenizer.ggml.token_type", std::move(vocab.types));
  out.set_string("tokenizer.ggml.model", "llama");
  out.set_string("general.architecture", "llama");
  out.set_string("general.name", model_name);
  out.set_u32("tokenizer.ggml.unknown_token_id", 0);  // llama2.c's SentencePiece ids
  out.set_u32("tokenizer.ggml.bos_token_id", 1);
  out.set_u32("tokenizer.ggml.eos_token_id", 2);
  out.set_u32("tokenizer.ggml.seperator_token_id", kNoToken);  // sic: llama.cpp's key
  out.set_u32("tokenizer.ggml.padding_token_id", kNoToken);
  out.set_u32("llama.context_length", static_cast<uint32_t>(c.seq_len));
  out.set_u32("llama.embedding_length", static_cast<uint32_t>(c.dim));
  out.set_u32("llama.feed_forward_length", static_cast<uint32_t>(c.hidden_dim));
  out.set_u32("llama.attention.head_count", static_cast<uint32_t>(c.n_heads));
  out.set_u32("llama.attention.head_count_kv", static_cast<uint32_t>(c.n_kv_heads));
  out.set_u32("llama.block_count", static_cast<uint32_t>(c.n_layers));
  out.set_u32("llama.rope.dimension_count", static_cast<uint32_t>(c.head_size()));
  out.set_f32("llama.attention.layer_norm_rms_epsilon", kRmsEpsilon);
}

Status add_tensors(const Llama2cConfig& c, const Layout& l, std::span<const uint8_t> weights, GgufWriter& out) {
  // `weights` starts after the header; sizes were checked against it by llama2c_read_config.
  auto add = [&](std::string name, int64_t at, std::vector<int64_t> dims) {
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    return out.add_tensor(std::move(name), DType::kF32, std::move(dims),
                          weights.subspan(static_cast<size_t>(at) * 4, static_cast<size_t>(n) * 4));
  };
  const int64_t dim = c.dim, hidden = c.hidden_dim, vocab = c.vocab_size, kv_dim = c.kv_dim();
  TALLY_RETURN_IF_ERROR(add(gguf_tensor_name(GgufTensor::kTokenEmbd), l.token_embedding, {dim, vocab}));
  TALLY_RETURN_IF_ERROR(add(gguf_tensor_name(GgufTensor::kOutputNorm), l.rms_final, {dim}));
  TALLY_RETURN_IF_ERROR(add(gguf_tensor_name(GgufTensor::kOutput), l.wcls, {dim, vocab}));
  for (int64_t i = 0; i < c.n_layers; ++i) {
    TALLY_RETURN_IF_ERROR(add(gguf_tensor_name(GgufTensor::kAttnQ, i), l.wq + i * l.wq_layer, {dim, dim}));
    TALLY_RETURN_IF_ERROR(add(gguf_tensor_name(GgufTensor::kAttnK, i), l.wk + i * l.wk_layer, {dim, kv_dim}));
    TALLY_RETURN_IF_ERROR(add(gguf_tensor_name(GgufTensor::kAttnV, i), l.wv + i * l.wk_layer, {dim, kv_dim}));
    TALLY_RETURN_IF_ERROR(add(gguf_tensor_name(GgufTensor::kAttnOut, i), l.wo + i * l.wo_layer, {dim, dim}));
    TALLY_RETURN_IF_ERROR(add(gguf_tensor_name(GgufTensor::kAttnNorm, i), l.rms_att + i * dim, {dim}));
    TALLY_RETURN_IF_ERROR(add(gguf_tensor_name(GgufTensor::kFfnGate, i), l.w1 + i * l.ffn_layer, {dim, hidden}));
    TALLY_RETURN_IF_ERROR(add(gguf_tensor_name(GgufTensor::kFfnDown, i), l.w2 + i * l.ffn_layer, {hidden, dim}));
    TALLY_RETURN_IF_ERROR(add(gguf_tensor_name(GgufTensor::kFfnUp, i), l.w3 + i * l.ffn_layer, {dim, hidden}));
    TALLY_RETURN_IF_ERROR(add(gguf_tensor_name(GgufTensor::kFfnNorm, i), l.rms_ffn + i * dim, {dim}));
  }
  return {};
}

}  // namespace

Status llama2c_to_gguf(std::span<const uint8_t> checkpoint, std::span<const uint8_t> tokenizer,
                       const Llama2cConvertOptions& options, GgufWriter& out) {
  TALLY_ASSIGN_OR_RETURN(Llama2cConfig c, llama2c_read_config(checkpoint, options.checkpoint_path));
  TALLY_ASSIGN_OR_RETURN(Llama2cVocab vocab, llama2c_read_tokenizer(tokenizer, c.vocab_size, options.tokenizer_path));
  Layout l;
  compute_layout(c, &l);  // succeeded in llama2c_read_config
  set_metadata(c, std::move(vocab), options.model_name, out);
  return add_tensors(c, l, checkpoint.subspan(kHeaderBytes), out);
}

Status convert_llama2c(const Llama2cConvertOptions& options) {
  auto checkpoint = MappedFile::open(options.checkpoint_path);
  if (!checkpoint.ok()) return checkpoint.status().with_context("llama2c checkpoint");
  auto tokenizer = MappedFile::open(options.tokenizer_path);
  if (!tokenizer.ok()) return tokenizer.status().with_context("llama2c tokenizer");
  GgufWriter out;
  TALLY_RETURN_IF_ERROR(llama2c_to_gguf(checkpoint->bytes(), tokenizer->bytes(), options, out));
  return out.write(options.output_path);
}

}  // namespace tally::io
