// GgufFile: opening (map + parse) and the typed lookups over parsed metadata.
#include "io/gguf.h"

#include <cmath>
#include <cstring>
#include <limits>

#include <fmt/format.h>

#include "io/gguf_parser.h"

namespace tally::io {

Result<GgufFile> GgufFile::open(const std::string& path) {
  auto map = MappedFile::open(path);
  if (!map.ok()) return map.status().with_context("gguf");
  auto owned = std::make_unique<MappedFile>(std::move(map).value());
  TALLY_ASSIGN_OR_RETURN(GgufFile file, parse(owned->bytes(), path));
  file.map_ = std::move(owned);  // the views into the bytes stay valid: the map does not move
  return file;
}

Result<GgufFile> GgufFile::parse(std::span<const uint8_t> bytes, std::string name) {
  GgufFile file;
  file.name_ = std::move(name);
  file.bytes_ = bytes;
  GgufParser parser(bytes, file.name_);
  TALLY_RETURN_IF_ERROR(parser.parse(file));
  return file;
}

Result<GgufFile> GgufFile::parse_owned(std::vector<uint8_t> bytes, std::string name) {
  auto owned = std::make_shared<const std::vector<uint8_t>>(std::move(bytes));
  TALLY_ASSIGN_OR_RETURN(GgufFile file, parse(*owned, std::move(name)));
  file.owned_ = std::move(owned);  // the views stay valid: the vector's buffer does not move
  return file;
}

const GgufValue* GgufFile::find(std::string_view key) const {
  auto it = kv_index_.find(key);
  return it == kv_index_.end() ? nullptr : &kv_[it->second].second;
}

const GgufTensorInfo* GgufFile::find_tensor(std::string_view name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

size_t GgufFile::release_tensor_pages(const GgufTensorInfo& tensor) const {
  const uint8_t* begin = bytes_.data();
  const bool in_map = tensor.data >= begin && tensor.data < begin + bytes_.size();
  return map_ && in_map ? map_->release_pages(tensor.bytes()) : 0;
}

Status GgufFile::add_external_tensors(std::vector<ExternalTensor> tensors, std::shared_ptr<const void> owner) {
  for (const ExternalTensor& e : tensors) {
    if (tensor_index_.count(e.name) != 0)
      return make_error(ErrorCode::kFormat, "gguf: {}: tensor '{}' twice", name_, e.name);
    GgufTensorInfo t;
    t.name = e.name;
    t.raw_type = static_cast<uint32_t>(e.type);
    t.type = e.type;
    t.dims = e.dims;
    const auto want = dtype_row_bytes_checked(t.raw_type, t.dims.empty() ? 1 : t.dims[0]);
    const int64_t rows = t.dims.empty() ? 0 : t.n_elements() / t.dims[0];
    if (!want || static_cast<uint64_t>(*want) * static_cast<uint64_t>(rows) != e.bytes.size())
      return make_error(ErrorCode::kFormat, "gguf: {}: tensor '{}' has {} bytes, not its shape's", name_, e.name,
                        e.bytes.size());
    t.n_bytes = e.bytes.size();
    t.data = e.bytes.data();
    tensor_index_.emplace(t.name, tensors_.size());
    tensors_.push_back(std::move(t));
  }
  external_owners_.push_back(std::move(owner));
  return Status::ok_status();
}

bool GgufFile::owns_bytes_of(const GgufTensorInfo& tensor) const {
  if (!owned_) return false;
  const uint8_t* begin = owned_->data();
  return tensor.data >= begin && tensor.data < begin + owned_->size();
}

namespace {

Status not_found(const std::string& file, std::string_view key) {
  return make_error(ErrorCode::kNotFound, "gguf: {}: key '{}' not found", file, key);
}

Status wrong_type(const std::string& file, std::string_view key, const GgufValue& v, std::string_view expected) {
  std::string type(gguf_type_name(v.type));
  if (v.type == GgufType::kArray) type = fmt::format("array of {}", gguf_type_name(v.elem_type));
  return make_error(ErrorCode::kFormat, "gguf: {}: key '{}' is {}, expected {}", file, key, type, expected);
}

// An array element as f32, only when the conversion loses nothing.
std::optional<float> exact_float(const GgufValue& v) {
  constexpr double kExactIntLimit = 9007199254740992.0;  // 2^53: larger integers round in double
  double d = 0;
  if (v.is_float()) {
    d = v.num.f64;
    if (std::isnan(d)) return std::numeric_limits<float>::quiet_NaN();
  } else if (v.is_integer()) {
    auto i = v.as_int();
    if (!i || std::fabs(static_cast<double>(*i)) > kExactIntLimit) return std::nullopt;
    d = static_cast<double>(*i);
  } else {
    return std::nullopt;
  }
  if (std::isfinite(d) && std::fabs(d) > std::numeric_limits<float>::max()) return std::nullopt;
  const float f = static_cast<float>(d);
  if (static_cast<double>(f) != d) return std::nullopt;
  return f;
}

}  // namespace

Result<int64_t> GgufFile::get_int(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) return not_found(name_, key);
  if (!v->is_integer()) return wrong_type(name_, key, *v, "an integer");
  auto i = v->as_int();
  if (!i) return make_error(ErrorCode::kFormat, "gguf: {}: key '{}' value {} does not fit int64", name_, key, v->num.u64);
  return *i;
}

Result<double> GgufFile::get_float(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) return not_found(name_, key);
  auto d = v->as_float();
  if (!d) return wrong_type(name_, key, *v, "a number");
  return *d;
}

Result<bool> GgufFile::get_bool(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) return not_found(name_, key);
  auto b = v->as_bool();
  if (!b) return wrong_type(name_, key, *v, "bool");
  return *b;
}

Result<std::string_view> GgufFile::get_string(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) return not_found(name_, key);
  auto s = v->as_string();
  if (!s) return wrong_type(name_, key, *v, "string");
  return *s;
}

Result<std::vector<std::string_view>> GgufFile::get_string_array(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) return not_found(name_, key);
  if (v->type != GgufType::kArray || v->elem_type != GgufType::kString) return wrong_type(name_, key, *v, "array of string");
  std::vector<std::string_view> out;
  out.reserve(v->array_size());
  for (size_t i = 0; i < v->array_size(); ++i) out.push_back(v->item(i).str);
  return out;
}

Result<std::vector<float>> GgufFile::get_f32_array(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) return not_found(name_, key);
  if (v->type != GgufType::kArray) return wrong_type(name_, key, *v, "array of f32");
  std::vector<float> out(v->array_size());
  if (v->elem_type == GgufType::kF32) {  // the common case: no checks per element
    if (v->packed) {
      std::memcpy(out.data(), v->packed, out.size() * sizeof(float));
      return out;
    }
    for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<float>(v->items[i].num.f64);
    return out;
  }
  for (size_t i = 0; i < out.size(); ++i) {
    const GgufValue item = v->item(i);
    auto f = exact_float(item);
    if (!f) {
      return make_error(ErrorCode::kFormat, "gguf: {}: key '{}' element {} ({}) is not exactly an f32", name_, key, i,
                        item.to_display_string());
    }
    out[i] = *f;
  }
  return out;
}

Result<std::vector<int64_t>> GgufFile::get_int_array(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) return not_found(name_, key);
  if (v->type != GgufType::kArray) return wrong_type(name_, key, *v, "array of integers");
  GgufValue probe;
  probe.type = v->elem_type;
  if (!probe.is_integer() && v->elem_type != GgufType::kBool) return wrong_type(name_, key, *v, "array of integers");
  std::vector<int64_t> out(v->array_size());
  for (size_t i = 0; i < out.size(); ++i) {
    const GgufValue item = v->item(i);
    auto x = item.as_int();
    if (!x) {
      return make_error(ErrorCode::kFormat, "gguf: {}: key '{}' element {} ({}) does not fit int64", name_, key, i,
                        item.to_display_string());
    }
    out[i] = *x;
  }
  return out;
}

Result<int64_t> GgufFile::get_int_or(std::string_view key, int64_t fallback) const {
  return find(key) ? get_int(key) : Result<int64_t>(fallback);
}

Result<double> GgufFile::get_float_or(std::string_view key, double fallback) const {
  return find(key) ? get_float(key) : Result<double>(fallback);
}

Result<bool> GgufFile::get_bool_or(std::string_view key, bool fallback) const {
  return find(key) ? get_bool(key) : Result<bool>(fallback);
}

}  // namespace tally::io
