// Reading and writing importance matrices in llama.cpp's GGUF and legacy formats
// (imatrix_file.h).
#include "io/imatrix_file.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string_view>

#include "io/gguf.h"
#include "io/gguf_writer.h"

namespace tally::io {

namespace {

constexpr std::string_view kSumsSuffix = ".in_sum2";
constexpr std::string_view kCountsSuffix = ".counts";
constexpr int32_t kLegacyMaxName = 1 << 16;

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

std::vector<float> tensor_floats(const GgufTensorInfo& t) {
  std::vector<float> v(static_cast<size_t>(t.n_elements()));
  std::memcpy(v.data(), t.data, v.size() * sizeof(float));
  return v;
}

// A little-endian reader over bytes that fails with the offset instead of reading past them.
class LegacyReader {
 public:
  LegacyReader(std::span<const uint8_t> bytes, const std::string& name) : b_(bytes), name_(name) {}
  bool at_end() const { return pos_ == b_.size(); }
  Result<int32_t> i32(std::string_view what) {
    int32_t v = 0;
    TALLY_RETURN_IF_ERROR(take(&v, sizeof(v), what));
    return v;
  }
  Status take(void* out, size_t n, std::string_view what) {
    if (b_.size() - pos_ < n)
      return make_error(ErrorCode::kFormat, "imatrix {}: truncated at byte {} reading {}", name_, pos_, what);
    std::memcpy(out, b_.data() + pos_, n);
    pos_ += n;
    return Status::ok_status();
  }

 private:
  std::span<const uint8_t> b_;
  const std::string& name_;
  size_t pos_ = 0;
};

Status check_entry_values(const std::string& file, const std::string& name, const ImatrixEntry& e) {
  for (float v : e.sums)
    if (!(std::isfinite(v) && v >= 0.0f))
      return make_error(ErrorCode::kFormat, "imatrix {}: '{}' holds a negative or non-finite sum", file, name);
  for (float c : e.counts)
    if (!(std::isfinite(c) && c >= 0.0f))
      return make_error(ErrorCode::kFormat, "imatrix {}: '{}' holds a negative or non-finite count", file, name);
  // Every mean (sum / count) must be a float too: it is what the quantizer weighs by and what
  // the legacy format stores.
  for (int64_t mat = 0; mat < e.n_mat; ++mat)
    for (float v : e.importance(mat))
      if (!std::isfinite(v))
        return make_error(ErrorCode::kFormat, "imatrix {}: '{}' has a mean square past the float range", file, name);
  return Status::ok_status();
}

Result<Imatrix> parse_gguf(const GgufFile& g, const std::string& name) {
  Imatrix m;
  if (const GgufValue* v = g.find("imatrix.datasets"); v && v->type == GgufType::kArray) {
    TALLY_ASSIGN_OR_RETURN(auto names, g.get_string_array("imatrix.datasets"));
    for (std::string_view s : names) m.datasets.emplace_back(s);
  }
  TALLY_ASSIGN_OR_RETURN(const int64_t chunks, g.get_int_or("imatrix.chunk_count", 0));
  TALLY_ASSIGN_OR_RETURN(const int64_t chunk_size, g.get_int_or("imatrix.chunk_size", 0));
  if (chunks < 0 || chunks > UINT32_MAX || chunk_size < 0 || chunk_size > UINT32_MAX)
    return make_error(ErrorCode::kFormat, "imatrix {}: chunk count or size out of range", name);
  m.chunk_count = static_cast<uint32_t>(chunks);
  m.chunk_size = static_cast<uint32_t>(chunk_size);
  for (const GgufTensorInfo& t : g.tensors()) {
    if (!ends_with(t.name, kSumsSuffix)) {
      if (ends_with(t.name, kCountsSuffix)) continue;  // read with its sums
      return make_error(ErrorCode::kFormat, "imatrix {}: tensor '{}' is neither .in_sum2 nor .counts", name, t.name);
    }
    const std::string base(t.name.substr(0, t.name.size() - kSumsSuffix.size()));
    if (base.empty()) return make_error(ErrorCode::kFormat, "imatrix {}: a tensor named '{}'", name, t.name);
    const GgufTensorInfo* counts = g.find_tensor(base + std::string(kCountsSuffix));
    if (!counts) return make_error(ErrorCode::kFormat, "imatrix {}: '{}' has sums but no .counts", name, base);
    if (t.type != DType::kF32 || counts->type != DType::kF32)
      return make_error(ErrorCode::kFormat, "imatrix {}: '{}' must be f32", name, base);
    if (t.dims.empty() || t.dims.size() > 2 || t.dims[0] <= 0)
      return make_error(ErrorCode::kFormat, "imatrix {}: '{}.in_sum2' must be [n_cols, n_mat]", name, base);
    ImatrixEntry e;
    e.n_cols = t.dims[0];
    e.n_mat = t.dims.size() == 2 ? t.dims[1] : 1;
    if (counts->n_elements() != e.n_mat)
      return make_error(ErrorCode::kFormat, "imatrix {}: '{}' has {} counts for {} matrices", name, base,
                        counts->n_elements(), e.n_mat);
    e.sums = tensor_floats(t);
    e.counts = tensor_floats(*counts);
    TALLY_RETURN_IF_ERROR(check_entry_values(name, base, e));
    m.entries.emplace(base, std::move(e));
  }
  for (const GgufTensorInfo& t : g.tensors()) {
    if (ends_with(t.name, kCountsSuffix) &&
        !m.entries.contains(t.name.substr(0, t.name.size() - kCountsSuffix.size())))
      return make_error(ErrorCode::kFormat, "imatrix {}: '{}' has no .in_sum2", name, t.name);
  }
  if (m.entries.empty()) return make_error(ErrorCode::kFormat, "imatrix {}: no entries", name);
  return m;
}

void append_i32(std::vector<uint8_t>& out, int32_t v) {
  const auto* p = reinterpret_cast<const uint8_t*>(&v);
  out.insert(out.end(), p, p + sizeof(v));
}

}  // namespace

std::vector<float> ImatrixEntry::importance(int64_t mat) const {
  std::vector<float> out(static_cast<size_t>(n_cols), 0.0f);
  const float count = counts.size() == 1 ? counts[0] : counts[static_cast<size_t>(mat)];
  if (count <= 0.0f) return out;
  const float* s = sums.data() + mat * n_cols;
  for (int64_t i = 0; i < n_cols; ++i) out[static_cast<size_t>(i)] = s[i] / count;
  return out;
}

Result<Imatrix> imatrix_parse_legacy(std::span<const uint8_t> bytes, const std::string& name) {
  LegacyReader r(bytes, name);
  TALLY_ASSIGN_OR_RETURN(const int32_t n_entries, r.i32("the entry count"));
  if (n_entries < 1) return make_error(ErrorCode::kFormat, "imatrix {}: {} entries", name, n_entries);
  Imatrix m;
  for (int32_t i = 0; i < n_entries; ++i) {
    TALLY_ASSIGN_OR_RETURN(const int32_t len, r.i32("a name length"));
    if (len < 1 || len > kLegacyMaxName)
      return make_error(ErrorCode::kFormat, "imatrix {}: entry {} has a name of {} bytes", name, i, len);
    std::string entry_name(static_cast<size_t>(len), '\0');
    TALLY_RETURN_IF_ERROR(r.take(entry_name.data(), entry_name.size(), "a name"));
    TALLY_ASSIGN_OR_RETURN(const int32_t ncall, r.i32("a call count"));
    TALLY_ASSIGN_OR_RETURN(const int32_t nval, r.i32("a value count"));
    if (ncall < 0 || nval < 1 || static_cast<uint64_t>(nval) * 4 > bytes.size())
      return make_error(ErrorCode::kFormat, "imatrix {}: '{}' has {} calls and {} values", name, entry_name, ncall,
                        nval);
    ImatrixEntry e;
    e.n_cols = nval;  // the matrix split of an expert tensor is not stored: the model's shape gives it
    e.sums.resize(static_cast<size_t>(nval));
    TALLY_RETURN_IF_ERROR(r.take(e.sums.data(), e.sums.size() * sizeof(float), "values"));
    e.counts = {static_cast<float>(ncall)};
    TALLY_RETURN_IF_ERROR(check_entry_values(name, entry_name, e));
    if (!m.entries.emplace(std::move(entry_name), std::move(e)).second)
      return make_error(ErrorCode::kFormat, "imatrix {}: entry {} repeats a name", name, i);
  }
  if (!r.at_end()) {  // the optional trailer: chunk count and the dataset's name
    TALLY_ASSIGN_OR_RETURN(const int32_t chunks, r.i32("the chunk count"));
    m.chunk_count = chunks > 0 ? static_cast<uint32_t>(chunks) : 0;
    if (!r.at_end()) {
      TALLY_ASSIGN_OR_RETURN(const int32_t len, r.i32("the dataset name length"));
      if (len < 0 || len > kLegacyMaxName)
        return make_error(ErrorCode::kFormat, "imatrix {}: a dataset name of {} bytes", name, len);
      std::string dataset(static_cast<size_t>(len), '\0');
      TALLY_RETURN_IF_ERROR(r.take(dataset.data(), dataset.size(), "the dataset name"));
      if (len > 0) m.datasets.push_back(std::move(dataset));
    }
  }
  return m;
}

Result<Imatrix> imatrix_parse(std::span<const uint8_t> bytes, const std::string& name) {
  if (bytes.size() >= 4 && std::memcmp(bytes.data(), "GGUF", 4) == 0) {
    TALLY_ASSIGN_OR_RETURN(const GgufFile g, GgufFile::parse(bytes, name));
    return parse_gguf(g, name);
  }
  return imatrix_parse_legacy(bytes, name);
}

Result<Imatrix> imatrix_read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(ErrorCode::kNotFound, "imatrix: cannot read {}", path);
  const std::vector<uint8_t> bytes{std::istreambuf_iterator<char>(in), {}};
  return imatrix_parse(bytes, path);
}

std::vector<uint8_t> imatrix_to_legacy_bytes(const Imatrix& m) {
  std::vector<uint8_t> out;
  append_i32(out, static_cast<int32_t>(m.entries.size()));
  // One call count per entry: the chunks; values are mean squares times it (as llama.cpp's).
  const uint32_t chunks = std::min<uint32_t>(m.chunk_count, INT32_MAX);
  for (const auto& [name, e] : m.entries) {
    // An entry whose means times the chunk count leave the float range says one call instead
    // (readers divide by it: the same means).
    int32_t ncall = static_cast<int32_t>(std::max<uint32_t>(1, chunks));
    for (int64_t mat = 0; mat < e.n_mat && ncall > 1; ++mat)
      for (float v : e.importance(mat))
        if (!std::isfinite(v * static_cast<float>(ncall))) ncall = 1;
    append_i32(out, static_cast<int32_t>(name.size()));
    out.insert(out.end(), name.begin(), name.end());
    append_i32(out, ncall);
    append_i32(out, static_cast<int32_t>(e.n_mat * e.n_cols));
    for (int64_t mat = 0; mat < e.n_mat; ++mat) {
      for (float v : e.importance(mat)) {
        const float scaled = v * static_cast<float>(ncall);
        const auto* p = reinterpret_cast<const uint8_t*>(&scaled);
        out.insert(out.end(), p, p + sizeof(scaled));
      }
    }
  }
  append_i32(out, static_cast<int32_t>(chunks));
  const std::string dataset = m.datasets.empty() ? std::string() : m.datasets.front();
  append_i32(out, static_cast<int32_t>(dataset.size()));
  out.insert(out.end(), dataset.begin(), dataset.end());
  return out;
}

Status imatrix_write(const Imatrix& m, const std::string& path) {
  if (ends_with(path, ".dat")) {
    const std::vector<uint8_t> bytes = imatrix_to_legacy_bytes(m);
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    out.close();
    if (!out) return make_error(ErrorCode::kIo, "imatrix: cannot write {}", path);
    return Status::ok_status();
  }
  GgufWriter w;
  w.set_string("general.type", "imatrix");
  w.set_string_array("imatrix.datasets", m.datasets);
  w.set_u32("imatrix.chunk_count", m.chunk_count);
  w.set_u32("imatrix.chunk_size", m.chunk_size);
  for (const auto& [name, e] : m.entries) {
    const auto* sums = reinterpret_cast<const uint8_t*>(e.sums.data());
    const auto* counts = reinterpret_cast<const uint8_t*>(e.counts.data());
    TALLY_RETURN_IF_ERROR(w.add_tensor(name + std::string(kSumsSuffix), DType::kF32, {e.n_cols, e.n_mat},
                                       {sums, e.sums.size() * sizeof(float)}));
    TALLY_RETURN_IF_ERROR(w.add_tensor(name + std::string(kCountsSuffix), DType::kF32, {1, e.n_mat},
                                       {counts, e.counts.size() * sizeof(float)}));
  }
  return w.write(path);
}

}  // namespace tally::io
