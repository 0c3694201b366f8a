#include "llamacpp_lib.h"

#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>

#include <fmt/format.h>

#include "support/run_command.h"
#include "support/test_data.h"

namespace tally_test {

using tally::DType;
using tally::ErrorCode;
using tally::make_error;
using tally::Result;
using tally::Status;

namespace {

// llama.h's llama_model_quantize_params, declared only up to the last field set here:
//   int32 nthread; enum llama_ftype ftype; enum ggml_type output_tensor_type,
//   token_embedding_type; bool allow_requantize, quantize_output_tensor, only_copy, pure,
//   keep_split, dry_run; const llama_model_imatrix_data* imatrix; ... (more pointers, a size)
// Why a prefix is safe: llama_model_quantize_default_params() returns the struct by value, and
// on x86-64 SysV a struct over 16 bytes is returned through a buffer the caller passes; our
// type is 512 bytes, so the callee fills the first sizeof(its struct) bytes (64 in this
// release) and the padding keeps the fields we did not declare as it wrote them. We then pass
// a pointer to llama_model_quantize, which reads its own full layout from that same buffer.
// The enums are int-sized (C enums with small values), and `imatrix` sits at offset 24 whether
// or not `dry_run` exists (the bools end at 21 or 22, then pointer alignment). get() checks the
// defaults (nthread 0, ftype Q8_0, both types GGML_TYPE_COUNT, output tensor quantized, no
// imatrix) so a changed layout fails loudly instead of quantizing something else.
struct QuantizeParamsHead {
  int32_t nthread;
  int32_t ftype;
  int32_t output_tensor_type;
  int32_t token_embedding_type;
  bool allow_requantize;
  bool quantize_output_tensor;
  bool only_copy;
  bool pure;
  bool keep_split;
  bool dry_run;
  const void* imatrix;  // const llama_model_imatrix_data*, ended by an entry with name == nullptr
};
union QuantizeParams {
  QuantizeParamsHead head;
  unsigned char padding[512];
};
static_assert(offsetof(QuantizeParamsHead, imatrix) == 24);

// llama.h's struct llama_model_imatrix_data (a C struct of three words).
struct ImatrixData {
  const char* name;
  const float* data;
  size_t size;
};

constexpr int32_t kGgmlTypeCount = 43;  // GGML_TYPE_COUNT in this release (ggml.h)
constexpr int32_t kLlamaFtypeQ8_0 = 7;

using LogCallback = void (*)(int level, const char* text, void* user_data);

}  // namespace

struct LlamaCppLib::Symbols {
  // ggml.h
  size_t (*quantize_chunk)(int32_t type, const float* src, void* dst, int64_t start, int64_t nrows,
                           int64_t n_per_row, const float* imatrix) = nullptr;
  void (*quantize_init)(int32_t type) = nullptr;
  size_t (*row_size)(int32_t type, int64_t ne) = nullptr;
  void (*fp16_to_fp32_row)(const uint16_t* x, float* y, int64_t n) = nullptr;
  // llama.h
  QuantizeParams (*quantize_default_params)() = nullptr;
  uint32_t (*model_quantize)(const char* in, const char* out, const QuantizeParams* params) = nullptr;
  void (*log_set)(LogCallback cb, void* user_data) = nullptr;
};

namespace {

// llama.cpp's log of the current llama_model_quantize call (they are serialised).
std::mutex g_quantize_mutex;
std::string g_log;
void capture_log(int, const char* text, void*) {
  g_log += text;
  if (g_log.size() > (1u << 20)) g_log.erase(0, g_log.size() - (1u << 19));
}

template <typename F>
Status resolve(void* handle, const char* name, F& out) {
  void* p = dlsym(handle, name);
  if (!p) return make_error(ErrorCode::kNotFound, "symbol {} not found", name);
  out = reinterpret_cast<F>(p);
  return Status::ok_status();
}

// The one file in dir whose name starts with `prefix` and ends in ".so" (the libraries carry
// the release in their names: libllama.v0.5.0.so).
Result<std::string> find_library(const std::string& dir, const std::string& prefix) {
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    const std::string n = e.path().filename().string();
    if (n.rfind(prefix, 0) == 0 && n.size() > 3 && n.substr(n.size() - 3) == ".so") return e.path().string();
  }
  return make_error(ErrorCode::kNotFound, "no {}*.so in {}", prefix, dir);
}

const char* dequantize_symbol(DType t) {
  switch (t) {
    case DType::kQ4_0: return "dequantize_row_q4_0";
    case DType::kQ4_1: return "dequantize_row_q4_1";
    case DType::kQ5_0: return "dequantize_row_q5_0";
    case DType::kQ5_1: return "dequantize_row_q5_1";
    case DType::kQ8_0: return "dequantize_row_q8_0";
    case DType::kQ2_K: return "dequantize_row_q2_K";
    case DType::kQ3_K: return "dequantize_row_q3_K";
    case DType::kQ4_K: return "dequantize_row_q4_K";
    case DType::kQ5_K: return "dequantize_row_q5_K";
    case DType::kQ6_K: return "dequantize_row_q6_K";
    case DType::kIQ4_NL: return "dequantize_row_iq4_nl";
    case DType::kIQ4_XS: return "dequantize_row_iq4_xs";
    default: return nullptr;
  }
}

}  // namespace

std::string llamacpp_lib_dir() {
  if (const char* env = std::getenv("TALLY_LLAMACPP_LIB_DIR")) return env;
  return repo_path("tests/llamacpp/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64");
}

Status LlamaCppLib::load(const std::string& dir) {
  dir_ = dir;
  TALLY_ASSIGN_OR_RETURN(const std::string llama_path, find_library(dir, "libllama."));
  TALLY_ASSIGN_OR_RETURN(const std::string ggml_path, find_library(dir, "libggml-base"));
  // libllama needs libggml and libggml-base, found beside it through its RUNPATH ($ORIGIN).
  llama_ = dlopen(llama_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!llama_) return make_error(ErrorCode::kNotFound, "dlopen {}: {}", llama_path, dlerror());
  ggml_ = dlopen(ggml_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!ggml_) return make_error(ErrorCode::kNotFound, "dlopen {}: {}", ggml_path, dlerror());
  sym_ = new Symbols;
  TALLY_RETURN_IF_ERROR(resolve(ggml_, "ggml_quantize_chunk", sym_->quantize_chunk));
  TALLY_RETURN_IF_ERROR(resolve(ggml_, "ggml_quantize_init", sym_->quantize_init));
  TALLY_RETURN_IF_ERROR(resolve(ggml_, "ggml_row_size", sym_->row_size));
  TALLY_RETURN_IF_ERROR(resolve(ggml_, "ggml_fp16_to_fp32_row", sym_->fp16_to_fp32_row));
  TALLY_RETURN_IF_ERROR(resolve(llama_, "llama_model_quantize_default_params", sym_->quantize_default_params));
  TALLY_RETURN_IF_ERROR(resolve(llama_, "llama_model_quantize", sym_->model_quantize));
  TALLY_RETURN_IF_ERROR(resolve(llama_, "llama_log_set", sym_->log_set));

  const QuantizeParams p = sym_->quantize_default_params();
  const QuantizeParamsHead& h = p.head;
  if (h.nthread != 0 || h.ftype != kLlamaFtypeQ8_0 || h.output_tensor_type != kGgmlTypeCount ||
      h.token_embedding_type != kGgmlTypeCount || !h.quantize_output_tensor || h.pure || h.imatrix != nullptr) {
    return make_error(ErrorCode::kUnsupported,
                      "llama_model_quantize_default_params() does not match the layout declared in "
                      "llamacpp_lib.cpp (nthread {}, ftype {}, output type {}, embedding type {}): another llama.h?",
                      h.nthread, h.ftype, h.output_tensor_type, h.token_embedding_type);
  }
  std::ifstream meta(dir + "/_nlcBuildMetadata.json");
  std::stringstream ss;
  ss << meta.rdbuf();
  const std::string json = ss.str();
  const size_t at = json.find("\"release\":\"");
  if (at != std::string::npos) release_ = json.substr(at + 11, json.find('"', at + 11) - at - 11);
  return Status::ok_status();
}

Result<LlamaCppLib*> LlamaCppLib::get() {
  static LlamaCppLib* lib = nullptr;
  static Status status;
  static std::once_flag once;
  std::call_once(once, [] {
    auto* l = new LlamaCppLib;
    status = l->load(llamacpp_lib_dir());
    if (status.ok()) lib = l;
  });
  if (!lib) return status;
  return lib;
}

Result<LlamaCppLib*> llamacpp_lib_or_install() {
  static std::once_flag once;
  static Status install;
  std::call_once(once, [] {
    if (std::getenv("TALLY_LLAMACPP_LIB_DIR")) return;  // given: nothing to install
    const CommandResult r = run_command("bash " + shell_quote(repo_path("tests/llamacpp/install.sh")));
    if (r.exit_code != 0)
      install = make_error(ErrorCode::kNotFound, "tests/llamacpp/install.sh failed ({}): {}", r.exit_code, r.err);
  });
  if (!install.ok()) return install;
  return LlamaCppLib::get();
}

std::vector<uint8_t> LlamaCppLib::quantize_rows(DType type, const float* src, int64_t n_rows, int64_t n_per_row,
                                                const float* imatrix) const {
  const auto t = static_cast<int32_t>(type);
  std::vector<uint8_t> out(sym_->row_size(t, n_per_row) * static_cast<size_t>(n_rows));
  sym_->quantize_init(t);
  const size_t n = sym_->quantize_chunk(t, src, out.data(), 0, n_rows, n_per_row, imatrix);
  out.resize(n);
  return out;
}

void LlamaCppLib::dequantize_row(DType type, const void* src, float* dst, int64_t n) const {
  if (type == DType::kF16) {
    sym_->fp16_to_fp32_row(static_cast<const uint16_t*>(src), dst, n);
    return;
  }
  using Dequantize = void (*)(const void*, float*, int64_t);
  const char* name = dequantize_symbol(type);
  void* p = name ? dlsym(ggml_, name) : nullptr;
  if (!p) {
    std::fill(dst, dst + n, std::nanf(""));
    return;
  }
  reinterpret_cast<Dequantize>(p)(src, dst, n);
}

Status LlamaCppLib::model_quantize(const LlamaCppQuantizeRequest& r) const {
  std::vector<ImatrixData> imatrix;
  for (const LlamaCppImatrixEntry& e : r.imatrix) imatrix.push_back({e.name.c_str(), e.means.data(), e.means.size()});
  imatrix.push_back({nullptr, nullptr, 0});

  QuantizeParams p = sym_->quantize_default_params();
  p.head.nthread = r.n_threads;
  p.head.ftype = static_cast<int32_t>(r.ftype);
  p.head.pure = r.pure;
  if (r.output_type) p.head.output_tensor_type = static_cast<int32_t>(*r.output_type);
  if (r.token_embd_type) p.head.token_embedding_type = static_cast<int32_t>(*r.token_embd_type);
  if (!r.imatrix.empty()) p.head.imatrix = imatrix.data();

  std::lock_guard<std::mutex> lock(g_quantize_mutex);
  g_log.clear();
  sym_->log_set(capture_log, nullptr);
  const uint32_t rc = sym_->model_quantize(r.input_path.c_str(), r.output_path.c_str(), &p);
  if (rc != 0) {
    const std::string tail = g_log.size() > 2000 ? g_log.substr(g_log.size() - 2000) : g_log;
    return make_error(ErrorCode::kInternal, "llama_model_quantize({} -> {}, ftype {}) returned {}: {}", r.input_path,
                      r.output_path, r.ftype, rc, tail);
  }
  return Status::ok_status();
}

}  // namespace tally_test
