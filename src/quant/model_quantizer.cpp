#include "quant/model_quantizer.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <filesystem>
#include <span>
#include <system_error>
#include <vector>

#include <fmt/format.h>

#include "base/ascii.h"
#include "base/thread_pool.h"
#include "io/gguf.h"
#include "io/gguf_writer.h"
#include "io/imatrix_file.h"
#include "plan/gguf_source.h"
#include "quant/imatrix_match.h"
#include "tensor/quantize.h"

namespace tally::quant {

namespace {

constexpr uint32_t kQuantizerQntVersion = 2;  // GGML_QNT_VERSION
constexpr int64_t kQuantizerChunkBytes = int64_t{4} << 20;

// llama-quantize's choice of what to quantize: weights of more than one row, not norms, not
// the MoE router (ffn_gate_inp) or position / token-type embeddings.
bool quantizer_converts(const plan::PlanTensor& t) {
  const std::string_view name = t.name;
  constexpr std::string_view kSuffix = "weight";
  if (t.is_vector() || name.size() < kSuffix.size() || name.substr(name.size() - kSuffix.size()) != kSuffix)
    return false;
  for (std::string_view skip : {"_norm.weight", "ffn_gate_inp.weight", "pos_embd", "token_types"})
    if (name.find(skip) != std::string_view::npos) return false;
  return true;
}

bool quantizer_reads(DType type) {
  return type == DType::kF32 || type == DType::kF16 || type == DType::kBF16 || type == DType::kQ8_0;
}

Status check_paths(const QuantizeOptions& o) {
  if (o.input_path.empty() || o.output_path.empty())
    return make_error(ErrorCode::kInvalidArgument, "quantize: give an input and an output path");
  std::error_code ec;
  if (!std::filesystem::exists(o.output_path, ec)) return Status::ok_status();
  if (std::filesystem::equivalent(o.input_path, o.output_path, ec))
    return make_error(ErrorCode::kInvalidArgument, "quantize: the output {} is the input file", o.output_path);
  if (!o.overwrite)
    return make_error(ErrorCode::kInvalidArgument, "quantize: {} exists (pass --overwrite to replace it)",
                      o.output_path);
  return Status::ok_status();
}

// One tensor of the output: its source and the type it is written in.
struct QuantizerTensor {
  const io::GgufTensorInfo* info = nullptr;
  int64_t n_cols = 0, n_rows = 0;
  DType out = DType::kF32;
  bool convert = false;  // false: the bytes are copied
  int64_t rows_per_mat = 0;  // rows of one matrix (an expert's, or all)
  const TensorImportance* importance = nullptr;  // [n_mat][n_cols], or null
};

Result<QuantizerTensor> choose_tensor_type(const io::GgufTensorInfo& info, const plan::PlanTensor& t,
                                           const plan::PlanModel& model, const QuantScheme& scheme,
                                           const QuantizeOptions& o, QuantizeSummary& summary) {
  QuantizerTensor q{&info, t.n_cols, t.n_rows, info.type, false};
  if (!quantizer_converts(t)) return q;
  const plan::LlamaTensorType chosen = plan::llama_quant_tensor_type(scheme.llama, t, model, scheme.overrides);
  if (chosen.refused) {
    return make_error(ErrorCode::kUnsupported,
                      "quantize: tensor '{}': rows of {} values are not whole {} blocks of {}, and llama.cpp has "
                      "no fallback type for {} (it refuses the tensor too)",
                      t.name, t.n_cols, dtype_name(chosen.wanted), dtype_info(chosen.wanted).block_size,
                      dtype_name(chosen.wanted));
  }
  if (chosen.type == info.type) return q;  // already in its type: copied, as llama.cpp does
  if (!quantizer_reads(info.type)) {
    return make_error(ErrorCode::kUnsupported,
                      "quantize: tensor '{}' is {}: the input must be f32, f16, bf16 (or q8_0) to quantize from",
                      t.name, dtype_name(info.type));
  }
  q.out = chosen.type;
  q.convert = true;
  ++summary.n_quantized;
  if (chosen.fell_back()) {
    ++summary.n_fallback;
    if (o.on_note)
      o.on_note(fmt::format("{}: rows of {} are not whole {} blocks of {}: using {} (llama.cpp's fallback)", t.name,
                            t.n_cols, dtype_name(chosen.wanted), dtype_info(chosen.wanted).block_size,
                            dtype_name(chosen.type)));
  }
  return q;
}

// Drops the mapped input pages of bytes already written (whole pages inside them), so the
// process never holds more than a chunk or two of the model, even of a large tensor.
void release_input(const io::GgufFile& in, const uint8_t* data, int64_t n_bytes) {
  io::GgufTensorInfo part;
  part.data = data;
  part.n_bytes = static_cast<uint64_t>(n_bytes);
  in.release_tensor_pages(part);
}

// Converts rows of one tensor into chunks of the output type on a thread pool.
class RowRequantizer {
 public:
  RowRequantizer(int n_threads, int64_t max_cols)
      : pool_(n_threads), max_cols_(max_cols),
        scratch_(static_cast<size_t>(pool_.n_threads()) * static_cast<size_t>(max_cols)) {}

  int n_threads() const { return pool_.n_threads(); }

  Status convert(const io::GgufFile& in, const QuantizerTensor& t, io::GgufWriter::TensorEmit emit) {
    const DType in_type = t.info->type;
    const int64_t in_row_bytes = dtype_row_bytes(in_type, t.n_cols);
    const int64_t out_row_bytes = dtype_row_bytes(t.out, t.n_cols);
    const int64_t rows_per_chunk = std::clamp<int64_t>(kQuantizerChunkBytes / out_row_bytes, 1, t.n_rows);
    chunk_.resize(static_cast<size_t>(rows_per_chunk * out_row_bytes));
    const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 16) / t.n_cols);
    for (int64_t first = 0; first < t.n_rows; first += rows_per_chunk) {
      const int64_t n = std::min(rows_per_chunk, t.n_rows - first);
      std::atomic<int64_t> bad_row{-1};
      pool_.parallel_for(n, grain, [&](int64_t begin, int64_t end, int thread) {
        float* values = scratch_.data() + static_cast<size_t>(thread) * static_cast<size_t>(max_cols_);
        for (int64_t r = begin; r < end; ++r) {
          dequantize_row(in_type, t.info->data + (first + r) * in_row_bytes, values, t.n_cols);
          if (!std::all_of(values, values + t.n_cols, [](float v) { return std::isfinite(v); })) {
            bad_row = first + r;  // reported below; not handed to a quantizer
            continue;
          }
          const float* imp = nullptr;
          if (t.importance) {
            const auto& v = (*t.importance)[static_cast<size_t>((first + r) / t.rows_per_mat)];
            imp = v.empty() ? nullptr : v.data();
          }
          quantize_row_weighted(t.out, values, chunk_.data() + r * out_row_bytes, t.n_cols, imp);
        }
      });
      if (bad_row >= 0) {
        return make_error(ErrorCode::kFormat, "quantize: tensor '{}' row {} holds a NaN or infinity",
                          t.info->name, bad_row.load());
      }
      TALLY_RETURN_IF_ERROR(emit(std::span<const uint8_t>(chunk_.data(), static_cast<size_t>(n * out_row_bytes))));
      release_input(in, t.info->data + first * in_row_bytes, n * in_row_bytes);
    }
    return Status::ok_status();
  }

  // A tensor kept in its type: its bytes in chunks, each dropped from memory once written.
  static Status copy(const io::GgufFile& in, const QuantizerTensor& t, io::GgufWriter::TensorEmit emit) {
    for (uint64_t done = 0; done < t.info->n_bytes;) {
      const auto n = static_cast<int64_t>(std::min<uint64_t>(kQuantizerChunkBytes, t.info->n_bytes - done));
      TALLY_RETURN_IF_ERROR(emit(std::span<const uint8_t>(t.info->data + done, static_cast<size_t>(n))));
      release_input(in, t.info->data + done, n);
      done += static_cast<uint64_t>(n);
    }
    return Status::ok_status();
  }

 private:
  ThreadPool pool_;
  int64_t max_cols_;
  std::vector<float> scratch_;  // [n_threads][max_cols]
  std::vector<uint8_t> chunk_;  // [rows of one chunk][out row bytes]
};

// Every key in order but the two llama-quantize sets, which follow (as its writer does).
void copy_quantizer_metadata(const io::GgufFile& in, const QuantScheme& scheme, io::GgufWriter& w) {
  for (const auto& [key, value] : in.metadata()) {
    if (key == "general.quantization_version" || key == "general.file_type") continue;
    w.set_value(std::string(key), value);
  }
  w.set_u32("general.quantization_version", kQuantizerQntVersion);
  w.set_u32("general.file_type", scheme.file_type);
}

Result<QuantScheme> quantizer_scheme(const QuantizeOptions& o) {
  TALLY_ASSIGN_OR_RETURN(QuantScheme scheme, quant_scheme_from_name(o.type));
  scheme.overrides.pure = o.pure;
  scheme.overrides.output_type = o.output_type;
  scheme.overrides.token_embd_type = o.token_embd_type;
  scheme.overrides.has_imatrix = !o.imatrix_path.empty();
  return scheme;
}

}  // namespace

Result<DType> quantize_tensor_type_from_name(std::string_view name) {
  const std::optional<DType> t = dtype_from_name(ascii_lower(name));
  if (t && dtype_has_row_conversion(*t)) return *t;
  std::string names;
  for (DType d : {DType::kF32, DType::kF16, DType::kBF16, DType::kQ8_0, DType::kQ4_0, DType::kQ4_1, DType::kQ5_0,
                  DType::kQ5_1, DType::kQ2_K, DType::kQ3_K, DType::kQ4_K, DType::kQ5_K, DType::kQ6_K,
                  DType::kIQ4_NL, DType::kIQ4_XS})
    names += fmt::format("{}{}", names.empty() ? "" : ", ", dtype_name(d));
  return make_error(ErrorCode::kInvalidArgument, "unknown tensor type '{}' (types: {})", name, names);
}

Result<QuantizeSummary> quantize_model(const QuantizeOptions& o) {
  QuantizeSummary summary;
  TALLY_ASSIGN_OR_RETURN(summary.scheme, quantizer_scheme(o));
  TALLY_RETURN_IF_ERROR(check_paths(o));
  TALLY_ASSIGN_OR_RETURN(const io::GgufFile in, io::GgufFile::open(o.input_path));
  TALLY_ASSIGN_OR_RETURN(const plan::PlanModel model, plan::plan_model_from_gguf(in));

  std::vector<TensorImportance> importance;
  if (!o.imatrix_path.empty()) {
    TALLY_ASSIGN_OR_RETURN(const io::Imatrix m, io::imatrix_read(o.imatrix_path));
    TALLY_ASSIGN_OR_RETURN(importance, imatrix_match(m, model.tensors, o.imatrix_path));
  }

  // Every tensor's type first: a refused tensor stops before anything is written.
  std::vector<QuantizerTensor> tensors;
  int64_t max_cols = 1;
  bool warned_requantize = false;
  for (size_t i = 0; i < in.tensors().size(); ++i) {
    TALLY_ASSIGN_OR_RETURN(QuantizerTensor t, choose_tensor_type(in.tensors()[i], model.tensors[i], model,
                                                                 summary.scheme, o, summary));
    if (t.convert && t.info->type == DType::kQ8_0 && !warned_requantize && o.on_note) {
      o.on_note("requantizing from q8_0: each weight is rounded twice, so the result is a little worse than "
                "quantizing the f16/f32 model");
      warned_requantize = true;
    }
    t.rows_per_mat = t.n_rows / std::max<int64_t>(1, model.tensors[i].n_experts);
    if (t.convert && !importance.empty() && !importance[i].empty()) {
      t.importance = &importance[i];
      ++summary.n_imatrix;
    }
    max_cols = std::max(max_cols, t.n_cols);
    tensors.push_back(t);
  }

  io::GgufWriter w;
  copy_quantizer_metadata(in, summary.scheme, w);
  RowRequantizer rows(o.n_threads, max_cols);
  const auto n_tensors = static_cast<int64_t>(tensors.size());
  for (int64_t i = 0; i < n_tensors; ++i) {
    const QuantizerTensor& t = tensors[static_cast<size_t>(i)];
    summary.input_bytes += t.info->n_bytes;
    summary.output_bytes += static_cast<uint64_t>(t.n_rows * dtype_row_bytes(t.out, t.n_cols));
    TALLY_RETURN_IF_ERROR(w.add_tensor_streamed(
        std::string(t.info->name), t.out, t.info->dims, [&rows, &in, &o, t, i, n_tensors](io::GgufWriter::TensorEmit emit) {
          Status st = t.convert ? rows.convert(in, t, emit) : RowRequantizer::copy(in, t, emit);
          if (o.on_progress) o.on_progress(i + 1, n_tensors);
          return st;
        }));
  }
  TALLY_RETURN_IF_ERROR(w.write(o.output_path));
  summary.n_tensors = n_tensors;
  summary.n_threads = rows.n_threads();
  return summary;
}

}  // namespace tally::quant
