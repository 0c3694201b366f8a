// GgufWriter: values are encoded when set (so the writer holds bytes, not views), tensors are
// copied when added (or produced at write time when streamed); write() lays them out as GGUF v3 with every tensor padded to the
// alignment, the same layout llama.cpp's writer produces.
#include "io/gguf_writer.h"

#include <unistd.h>

#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "base/check.h"
#include "io/gguf_parser.h"

namespace tally::io {

namespace {

constexpr uint32_t kVersion = 3;

class Bytes {
 public:
  explicit Bytes(std::vector<uint8_t>& out) : out_(out) {}
  template <typename T>
  void put(T v) {
    const size_t at = out_.size();
    out_.resize(at + sizeof(T));
    std::memcpy(out_.data() + at, &v, sizeof(T));
  }
  void put_type(GgufType t) { put(static_cast<uint32_t>(t)); }
  void put_string(std::string_view s) {
    put(static_cast<uint64_t>(s.size()));
    out_.insert(out_.end(), s.begin(), s.end());
  }
  void pad_to(uint64_t align) { out_.resize((out_.size() + align - 1) / align * align, 0); }

 private:
  std::vector<uint8_t>& out_;
};

// The value without its type tag (array elements carry none).
void put_payload(Bytes& b, GgufType type, const GgufValue& v) {
  TALLY_CHECK(v.type == type, "GGUF value of type {} stored as {}", gguf_type_name(v.type), gguf_type_name(type));
  switch (type) {
    case GgufType::kU8: b.put(static_cast<uint8_t>(v.num.u64)); return;
    case GgufType::kI8: b.put(static_cast<int8_t>(v.num.i64)); return;
    case GgufType::kU16: b.put(static_cast<uint16_t>(v.num.u64)); return;
    case GgufType::kI16: b.put(static_cast<int16_t>(v.num.i64)); return;
    case GgufType::kU32: b.put(static_cast<uint32_t>(v.num.u64)); return;
    case GgufType::kI32: b.put(static_cast<int32_t>(v.num.i64)); return;
    case GgufType::kU64: b.put(v.num.u64); return;
    case GgufType::kI64: b.put(v.num.i64); return;
    case GgufType::kF32: b.put(static_cast<float>(v.num.f64)); return;
    case GgufType::kF64: b.put(v.num.f64); return;
    case GgufType::kBool: b.put(static_cast<uint8_t>(v.num.u64 != 0)); return;
    case GgufType::kString: b.put_string(v.str); return;
    case GgufType::kArray:
      b.put_type(v.elem_type);
      b.put(static_cast<uint64_t>(v.array_size()));
      for (size_t i = 0; i < v.array_size(); ++i) put_payload(b, v.elem_type, v.item(i));
      return;
  }
  TALLY_CHECK(false, "unknown GGUF type {}", static_cast<uint32_t>(type));
}

}  // namespace

struct GgufWriter::Impl {
  struct Entry {
    std::string key;
    std::vector<uint8_t> value;  // type tag + payload
  };
  struct Tensor {
    std::string name;
    DType type;
    std::vector<int64_t> dims;
    uint64_t n_bytes = 0;
    std::vector<uint8_t> data;  // empty when streamed
    TensorProducer produce;     // set when streamed
  };

  std::vector<Entry> kv;
  std::unordered_map<std::string, size_t> kv_index;
  std::vector<Tensor> tensors;
  std::unordered_set<std::string> tensor_names;
  uint64_t alignment = kGgufDefaultAlignment;
  std::string alignment_error;  // set when general.alignment is unusable

  // Replaces an existing key in place (the reader rejects duplicate keys).
  void set(std::string key, std::vector<uint8_t> value) {
    auto [it, inserted] = kv_index.emplace(key, kv.size());
    if (inserted) {
      kv.push_back({std::move(key), std::move(value)});
    } else {
      kv[it->second].value = std::move(value);
    }
  }

  template <typename Fn>
  void set_encoded(std::string key, GgufType type, Fn&& payload) {
    std::vector<uint8_t> bytes;
    Bytes b(bytes);
    b.put_type(type);
    payload(b);
    if (key == "general.alignment") note_alignment(type, bytes);
    set(std::move(key), std::move(bytes));
  }

  void note_alignment(GgufType type, const std::vector<uint8_t>& bytes) {
    uint32_t a = 0;
    if (type == GgufType::kU32) std::memcpy(&a, bytes.data() + 4, 4);
    if (type != GgufType::kU32) {
      alignment_error = fmt::format("general.alignment must be a u32, not {}", gguf_type_name(type));
    } else if (a == 0 || !std::has_single_bit(a)) {
      alignment_error = fmt::format("general.alignment {} is not a nonzero power of two", a);
    } else {
      alignment_error.clear();
      alignment = a;
    }
  }

  // Header, metadata, tensor infos and the padding up to the data section.
  std::vector<uint8_t> head() const {
    std::vector<uint8_t> out;
    Bytes b(out);
    b.put(uint32_t{0x46554747});  // "GGUF"
    b.put(kVersion);
    b.put(static_cast<uint64_t>(tensors.size()));
    b.put(static_cast<uint64_t>(kv.size()));
    for (const Entry& e : kv) {
      b.put_string(e.key);
      out.insert(out.end(), e.value.begin(), e.value.end());
    }
    uint64_t offset = 0;
    for (const Tensor& t : tensors) {
      b.put_string(t.name);
      b.put(static_cast<uint32_t>(t.dims.size()));
      for (int64_t d : t.dims) b.put(static_cast<uint64_t>(d));
      b.put(static_cast<uint32_t>(t.type));
      b.put(offset);
      offset += padded(t.n_bytes);
    }
    b.pad_to(alignment);
    return out;
  }

  uint64_t padded(uint64_t n) const { return (n + alignment - 1) / alignment * alignment; }

  // The tensor's bytes, or an error when its name, dims or type are unusable.
  Result<uint64_t> check_tensor(const std::string& name, DType type, const std::vector<int64_t>& dims) const;

  // Passes every byte of `t` to `emit`; checks that a producer gives exactly n_bytes.
  Status emit_tensor(const Tensor& t, TensorEmit emit) const {
    if (!t.produce) return emit(t.data);
    uint64_t n = 0;
    Status st = t.produce([&](std::span<const uint8_t> chunk) -> Status {
      n += chunk.size();
      if (n > t.n_bytes) return Status::ok_status();  // reported below, without writing past
      return emit(chunk);
    });
    if (!st.ok()) return st.with_context(fmt::format("gguf writer: tensor '{}'", t.name));
    if (n != t.n_bytes) {
      return make_error(ErrorCode::kInternal, "gguf writer: tensor '{}' producer gave {} bytes, needs {}", t.name, n,
                        t.n_bytes);
    }
    return Status::ok_status();
  }
};

GgufWriter::GgufWriter() : impl_(std::make_shared<Impl>()) {}

void GgufWriter::set_u8(std::string key, uint8_t v) { impl_->set_encoded(std::move(key), GgufType::kU8, [&](Bytes& b) { b.put(v); }); }
void GgufWriter::set_i8(std::string key, int8_t v) { impl_->set_encoded(std::move(key), GgufType::kI8, [&](Bytes& b) { b.put(v); }); }
void GgufWriter::set_u16(std::string key, uint16_t v) { impl_->set_encoded(std::move(key), GgufType::kU16, [&](Bytes& b) { b.put(v); }); }
void GgufWriter::set_i16(std::string key, int16_t v) { impl_->set_encoded(std::move(key), GgufType::kI16, [&](Bytes& b) { b.put(v); }); }
void GgufWriter::set_u32(std::string key, uint32_t v) { impl_->set_encoded(std::move(key), GgufType::kU32, [&](Bytes& b) { b.put(v); }); }
void GgufWriter::set_i32(std::string key, int32_t v) { impl_->set_encoded(std::move(key), GgufType::kI32, [&](Bytes& b) { b.put(v); }); }
void GgufWriter::set_u64(std::string key, uint64_t v) { impl_->set_encoded(std::move(key), GgufType::kU64, [&](Bytes& b) { b.put(v); }); }
void GgufWriter::set_i64(std::string key, int64_t v) { impl_->set_encoded(std::move(key), GgufType::kI64, [&](Bytes& b) { b.put(v); }); }
void GgufWriter::set_f32(std::string key, float v) { impl_->set_encoded(std::move(key), GgufType::kF32, [&](Bytes& b) { b.put(v); }); }
void GgufWriter::set_f64(std::string key, double v) { impl_->set_encoded(std::move(key), GgufType::kF64, [&](Bytes& b) { b.put(v); }); }
void GgufWriter::set_bool(std::string key, bool v) {
  impl_->set_encoded(std::move(key), GgufType::kBool, [&](Bytes& b) { b.put(static_cast<uint8_t>(v)); });
}
void GgufWriter::set_string(std::string key, std::string v) {
  impl_->set_encoded(std::move(key), GgufType::kString, [&](Bytes& b) { b.put_string(v); });
}

void GgufWriter::set_string_array(std::string key, std::vector<std::string> v) {
  impl_->set_encoded(std::move(key), GgufType::kArray, [&](Bytes& b) {
    b.put_type(GgufType::kString);
    b.put(static_cast<uint64_t>(v.size()));
    for (const std::string& s : v) b.put_string(s);
  });
}

void GgufWriter::set_f32_array(std::string key, std::vector<float> v) {
  impl_->set_encoded(std::move(key), GgufType::kArray, [&](Bytes& b) {
    b.put_type(GgufType::kF32);
    b.put(static_cast<uint64_t>(v.size()));
    for (float x : v) b.put(x);
  });
}

void GgufWriter::set_i32_array(std::string key, std::vector<int32_t> v) {
  impl_->set_encoded(std::move(key), GgufType::kArray, [&](Bytes& b) {
    b.put_type(GgufType::kI32);
    b.put(static_cast<uint64_t>(v.size()));
    for (int32_t x : v) b.put(x);
  });
}

void GgufWriter::set_value(std::string key, const GgufValue& v) {
  impl_->set_encoded(std::move(key), v.type, [&](Bytes& b) { put_payload(b, v.type, v); });
}

Result<uint64_t> GgufWriter::Impl::check_tensor(const std::string& name, DType type,
                                                const std::vector<int64_t>& dims) const {
  if (name.empty() || name.size() > kGgufMaxTensorNameBytes) {
    return make_error(ErrorCode::kInvalidArgument, "gguf writer: tensor name '{}' must have 1..{} bytes", name,
                      kGgufMaxTensorNameBytes);
  }
  if (tensor_names.count(name)) {
    return make_error(ErrorCode::kInvalidArgument, "gguf writer: tensor '{}' added twice", name);
  }
  if (dims.empty() || dims.size() > kGgufMaxDims) {
    return make_error(ErrorCode::kInvalidArgument, "gguf writer: tensor '{}' has {} dims (1..{} allowed)", name,
                      dims.size(), kGgufMaxDims);
  }
  const auto traits = dtype_traits(static_cast<uint32_t>(type));
  if (!traits) {
    return make_error(ErrorCode::kInvalidArgument, "gguf writer: tensor '{}' has unknown type {}", name,
                      static_cast<uint32_t>(type));
  }
  auto row = dtype_row_bytes_checked(static_cast<uint32_t>(type), dims[0]);
  if (!row) {
    return make_error(ErrorCode::kInvalidArgument, "gguf writer: tensor '{}' row length {} is not a multiple of {}'s block of {}",
                      name, dims[0], traits->name, traits->block_size);
  }
  int64_t n_bytes = *row;
  for (size_t d = 1; d < dims.size(); ++d) {
    if (dims[d] < 0 || __builtin_mul_overflow(n_bytes, dims[d], &n_bytes)) {
      return make_error(ErrorCode::kInvalidArgument, "gguf writer: tensor '{}' dimension {} ({}) is invalid", name, d,
                        dims[d]);
    }
  }
  return static_cast<uint64_t>(n_bytes);
}

Status GgufWriter::add_tensor(std::string name, DType type, std::vector<int64_t> dims,
                              std::span<const uint8_t> data) {
  TALLY_ASSIGN_OR_RETURN(const uint64_t n_bytes, impl_->check_tensor(name, type, dims));
  if (n_bytes != data.size()) {
    return make_error(ErrorCode::kInvalidArgument, "gguf writer: tensor '{}' needs {} bytes, got {}", name, n_bytes,
                      data.size());
  }
  impl_->tensor_names.insert(name);
  impl_->tensors.push_back({std::move(name), type, std::move(dims), n_bytes, {data.begin(), data.end()}, {}});
  return {};
}

Status GgufWriter::add_tensor_streamed(std::string name, DType type, std::vector<int64_t> dims,
                                       TensorProducer produce) {
  TALLY_ASSIGN_OR_RETURN(const uint64_t n_bytes, impl_->check_tensor(name, type, dims));
  if (!produce) {
    return make_error(ErrorCode::kInvalidArgument, "gguf writer: tensor '{}' has no producer", name);
  }
  impl_->tensor_names.insert(name);
  impl_->tensors.push_back({std::move(name), type, std::move(dims), n_bytes, {}, std::move(produce)});
  return {};
}

std::vector<uint8_t> GgufWriter::to_bytes() const {
  TALLY_CHECK(impl_->alignment_error.empty(), "gguf writer: {}", impl_->alignment_error);
  std::vector<uint8_t> out = impl_->head();
  // Reserved whole: a model built in memory (a Hugging Face directory) is not copied again as
  // the vector grows.
  size_t total = out.size();
  for (const Impl::Tensor& t : impl_->tensors) total += impl_->padded(t.n_bytes);
  out.reserve(total);
  Bytes b(out);
  for (const Impl::Tensor& t : impl_->tensors) {
    const Status st = impl_->emit_tensor(t, [&](std::span<const uint8_t> chunk) -> Status {
      out.insert(out.end(), chunk.begin(), chunk.end());
      return Status::ok_status();
    });
    TALLY_CHECK(st.ok(), "{}", st.to_string());
    b.pad_to(impl_->alignment);
  }
  return out;
}

Status GgufWriter::write(const std::string& path) const {
  if (!impl_->alignment_error.empty()) {
    return make_error(ErrorCode::kInvalidArgument, "gguf writer: {}: {}", path, impl_->alignment_error);
  }
  // Written beside the target and renamed at the end: readers never see half a file.
  const std::string tmp = fmt::format("{}.tmp{}", path, static_cast<long>(getpid()));
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) return make_error(ErrorCode::kIo, "gguf writer: {}: cannot create: {}", tmp, std::strerror(errno));
  bool ok = true;
  auto put = [&](const void* p, size_t n) { ok = ok && (n == 0 || std::fwrite(p, 1, n, f) == n); };
  const std::vector<uint8_t> head = impl_->head();
  put(head.data(), head.size());
  const std::vector<uint8_t> zeros(impl_->alignment, 0);
  Status produced;
  for (const Impl::Tensor& t : impl_->tensors) {
    produced = impl_->emit_tensor(t, [&](std::span<const uint8_t> chunk) -> Status {
      put(chunk.data(), chunk.size());
      return ok ? Status::ok_status() : make_error(ErrorCode::kIo, "short write");
    });
    if (!ok || !produced.ok()) break;
    put(zeros.data(), impl_->padded(t.n_bytes) - t.n_bytes);
  }
  const int err = ok ? 0 : errno;
  if (std::fclose(f) != 0) ok = false;
  if (ok && produced.ok() && std::rename(tmp.c_str(), path.c_str()) != 0) ok = false;
  if (!ok || !produced.ok()) {
    const int e = err ? err : errno;
    std::remove(tmp.c_str());
    if (ok) return produced.with_context(path);
    return make_error(ErrorCode::kIo, "gguf writer: {}: cannot write: {}", path, std::strerror(e));
  }
  return {};
}

}  // namespace tally::io
