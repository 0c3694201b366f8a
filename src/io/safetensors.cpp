// SafetensorsFile: the header parser (every check of safetensors.h) and the checkpoint index.
#include "io/safetensors.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <limits>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <simdjson.h>

namespace tally::io {

namespace {

namespace sj = simdjson::dom;

struct DtypeInfo {
  std::string_view name;
  int64_t bytes;
  std::optional<DType> type;
};

// The safetensors dtypes (its Dtype enum) and their element sizes.
constexpr DtypeInfo kDtypes[] = {
    {"F64", 8, std::nullopt}, {"F32", 4, DType::kF32}, {"F16", 2, DType::kF16},
    {"BF16", 2, DType::kBF16}, {"I64", 8, std::nullopt}, {"U64", 8, std::nullopt},
    {"I32", 4, std::nullopt}, {"U32", 4, std::nullopt}, {"I16", 2, std::nullopt},
    {"U16", 2, std::nullopt}, {"I8", 1, std::nullopt}, {"U8", 1, std::nullopt},
    {"BOOL", 1, std::nullopt}, {"F8_E4M3", 1, std::nullopt}, {"F8_E5M2", 1, std::nullopt},
};

const DtypeInfo* find_dtype(std::string_view name) {
  for (const DtypeInfo& d : kDtypes)
    if (d.name == name) return &d;
  return nullptr;
}

struct Span {
  uint64_t begin, end;
  size_t tensor;
};

template <typename... Args>
Status bad(const std::string& file, fmt::format_string<Args...> f, Args&&... args) {
  return Status(ErrorCode::kFormat,
                fmt::format("safetensors: {}: {}", file, fmt::format(f, std::forward<Args>(args)...)));
}

Result<uint64_t> offset_value(sj::element e, const std::string& file, std::string_view tensor) {
  uint64_t v = 0;
  if (e.get_uint64().get(v) != simdjson::SUCCESS)
    return bad(file, "tensor '{}': data_offsets must be two non-negative integers", tensor);
  return v;
}

Status parse_tensor(sj::element e, std::string_view name, uint64_t data_size,
                    const std::string& file, SafetensorsTensor& t, Span& span) {
  sj::object o;
  if (e.get_object().get(o) != simdjson::SUCCESS) return bad(file, "tensor '{}' is not an object", name);
  std::string_view dtype;
  if (o["dtype"].get_string().get(dtype) != simdjson::SUCCESS)
    return bad(file, "tensor '{}': missing or non-string 'dtype'", name);
  const DtypeInfo* info = find_dtype(dtype);
  if (info == nullptr) return bad(file, "tensor '{}': unknown dtype '{}'", name, dtype);
  sj::array shape;
  if (o["shape"].get_array().get(shape) != simdjson::SUCCESS)
    return bad(file, "tensor '{}': missing or non-array 'shape'", name);
  uint64_t n = 1;
  bool overflow = false;
  for (sj::element d : shape) {
    uint64_t v = 0;
    if (d.get_uint64().get(v) != simdjson::SUCCESS || v > (uint64_t{1} << 48))
      return bad(file, "tensor '{}': shape entries must be integers in [0, 2^48]", name);
    t.shape.push_back(static_cast<int64_t>(v));
    if (v != 0 && n > std::numeric_limits<uint64_t>::max() / v) overflow = true;
    n *= v;
  }
  if (t.shape.size() > 8) return bad(file, "tensor '{}': {} dims (at most 8)", name, t.shape.size());
  sj::array offsets;
  if (o["data_offsets"].get_array().get(offsets) != simdjson::SUCCESS || offsets.size() != 2)
    return bad(file, "tensor '{}': 'data_offsets' must be [begin, end]", name);
  TALLY_ASSIGN_OR_RETURN(span.begin, offset_value(offsets.at(0), file, name));
  TALLY_ASSIGN_OR_RETURN(span.end, offset_value(offsets.at(1), file, name));
  if (span.begin > span.end)
    return bad(file, "tensor '{}': data_offsets [{}, {}] end before they begin", name, span.begin, span.end);
  if (span.end > data_size)
    return bad(file, "tensor '{}': data_offsets [{}, {}] run past the data ({} bytes)", name,
               span.begin, span.end, data_size);
  if (overflow || n > std::numeric_limits<uint64_t>::max() / static_cast<uint64_t>(info->bytes) ||
      n * static_cast<uint64_t>(info->bytes) != span.end - span.begin)
    return bad(file, "tensor '{}': {} bytes for a {} tensor of shape [{}]", name,
               span.end - span.begin, dtype, fmt::join(t.shape, ", "));
  t.name = std::string(name);
  t.dtype = std::string(dtype);
  t.type = info->type;
  return Status::ok_status();
}

Status parse_metadata(sj::element e, const std::string& file, std::map<std::string, std::string>& out) {
  sj::object o;
  if (e.get_object().get(o) != simdjson::SUCCESS) return bad(file, "'__metadata__' is not an object");
  for (auto field : o) {
    std::string_view v;
    if (field.value.get_string().get(v) != simdjson::SUCCESS)
      return bad(file, "'__metadata__' entry '{}' is not a string", field.key);
    if (!out.emplace(std::string(field.key), std::string(v)).second)
      return bad(file, "'__metadata__' has '{}' twice", field.key);
  }
  return Status::ok_status();
}

}  // namespace

int64_t SafetensorsTensor::n_elements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

Result<SafetensorsFile> SafetensorsFile::open(const std::string& path) {
  auto map = MappedFile::open(path);
  if (!map.ok()) return map.status().with_context("safetensors");
  auto owned = std::make_unique<MappedFile>(std::move(map).value());
  TALLY_ASSIGN_OR_RETURN(SafetensorsFile file, parse(owned->bytes(), path));
  file.map_ = std::move(owned);  // the views stay valid: the map does not move
  return file;
}

Result<SafetensorsFile> SafetensorsFile::parse(std::span<const uint8_t> bytes, std::string name) {
  SafetensorsFile file;
  file.name_ = std::move(name);
  const std::string& fname = file.name_;
  if (bytes.size() < 8) return bad(fname, "{} bytes: too short for the header length", bytes.size());
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | bytes[static_cast<size_t>(i)];
  if (n > kMaxSafetensorsHeader)
    return bad(fname, "header of {} bytes (at most {})", n, kMaxSafetensorsHeader);
  if (n > bytes.size() - 8)
    return bad(fname, "header of {} bytes is larger than the file ({} bytes after the length)", n,
               bytes.size() - 8);
  const uint8_t* data = bytes.data() + 8 + n;
  const uint64_t data_size = bytes.size() - 8 - n;

  simdjson::padded_string header(reinterpret_cast<const char*>(bytes.data() + 8), static_cast<size_t>(n));
  sj::parser parser;
  sj::element doc;
  if (auto err = parser.parse(header).get(doc); err)
    return bad(fname, "header is not valid JSON ({})", simdjson::error_message(err));
  sj::object root;
  if (doc.get_object().get(root) != simdjson::SUCCESS) return bad(fname, "header is not a JSON object");

  std::vector<Span> spans;
  for (auto field : root) {
    if (field.key == "__metadata__") {
      if (!file.metadata_.empty()) return bad(fname, "'__metadata__' appears twice");
      TALLY_RETURN_IF_ERROR(parse_metadata(field.value, fname, file.metadata_));
      continue;
    }
    SafetensorsTensor t;
    Span span{};
    TALLY_RETURN_IF_ERROR(parse_tensor(field.value, field.key, data_size, fname, t, span));
    span.tensor = file.tensors_.size();
    t.bytes = {data + span.begin, static_cast<size_t>(span.end - span.begin)};
    file.tensors_.push_back(std::move(t));
    spans.push_back(span);
  }
  for (size_t i = 0; i < file.tensors_.size(); ++i) {
    if (!file.index_.emplace(file.tensors_[i].name, i).second)
      return bad(fname, "tensor '{}' appears twice", file.tensors_[i].name);
  }
  // Sorted by begin, each tensor must start where the previous ended: no overlap, no hole.
  std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  uint64_t at = 0;
  for (const Span& s : spans) {
    const std::string& tname = file.tensors_[s.tensor].name;
    if (s.begin < at)
      return bad(fname, "tensor '{}' (bytes {}..{}) overlaps the tensor before it (ending at {})",
                 tname, s.begin, s.end, at);
    if (s.begin > at)
      return bad(fname, "bytes {}..{} of the data belong to no tensor (before '{}')", at, s.begin, tname);
    at = s.end;
  }
  if (at != data_size)
    return bad(fname, "bytes {}..{} of the data belong to no tensor (after the last)", at, data_size);
  return file;
}

const SafetensorsTensor* SafetensorsFile::find(std::string_view name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

void SafetensorsFile::release(const SafetensorsTensor& t) const {
  if (map_) map_->release_pages(t.bytes);
}

Result<SafetensorsCheckpoint> SafetensorsCheckpoint::open_dir(const std::string& dir) {
  namespace fs = std::filesystem;
  SafetensorsCheckpoint ckpt;
  std::vector<std::string> shards;
  std::vector<std::pair<std::string, std::string>> weight_map;  // tensor -> shard
  const std::string index_path = dir + "/model.safetensors.index.json";
  std::error_code ec;
  if (fs::exists(index_path, ec)) {
    simdjson::padded_string text;
    if (simdjson::padded_string::load(index_path).get(text) != simdjson::SUCCESS)
      return make_error(ErrorCode::kIo, "{}: cannot read", index_path);
    sj::parser parser;
    sj::element doc;
    if (auto err = parser.parse(text).get(doc); err)
      return make_error(ErrorCode::kFormat, "{}: not valid JSON ({})", index_path, simdjson::error_message(err));
    sj::object wm;
    if (doc["weight_map"].get_object().get(wm) != simdjson::SUCCESS)
      return make_error(ErrorCode::kFormat, "{}: no 'weight_map' object", index_path);
    for (auto field : wm) {
      std::string_view shard;
      if (field.value.get_string().get(shard) != simdjson::SUCCESS || shard.empty() ||
          shard.find('/') != std::string_view::npos || shard.find("..") != std::string_view::npos)
        return make_error(ErrorCode::kFormat, "{}: weight_map['{}'] is not a file name in the directory",
                          index_path, field.key);
      weight_map.emplace_back(std::string(field.key), std::string(shard));
      if (std::find(shards.begin(), shards.end(), shard) == shards.end()) shards.emplace_back(shard);
    }
    if (shards.empty()) return make_error(ErrorCode::kFormat, "{}: empty weight_map", index_path);
  } else if (fs::exists(dir + "/model.safetensors", ec)) {
    shards.push_back("model.safetensors");
  } else {
    return make_error(ErrorCode::kNotFound,
                      "{}: no model.safetensors nor model.safetensors.index.json", dir);
  }
  for (size_t s = 0; s < shards.size(); ++s) {
    TALLY_ASSIGN_OR_RETURN(SafetensorsFile f, SafetensorsFile::open(dir + "/" + shards[s]));
    ckpt.files_.push_back(std::make_unique<SafetensorsFile>(std::move(f)));
    for (const SafetensorsTensor& t : ckpt.files_.back()->tensors()) {
      if (!ckpt.index_.emplace(t.name, std::make_pair(&t, s)).second)
        return make_error(ErrorCode::kFormat, "{}: tensor '{}' is in two shards", dir, t.name);
    }
  }
  for (const auto& [tensor, shard] : weight_map) {
    auto it = ckpt.index_.find(tensor);
    if (it == ckpt.index_.end() || shards[it->second.second] != shard)
      return make_error(ErrorCode::kFormat, "{}: the index puts '{}' in {}, which does not hold it",
                        dir, tensor, shard);
  }
  return ckpt;
}

const SafetensorsTensor* SafetensorsCheckpoint::find(std::string_view name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : it->second.first;
}

const SafetensorsFile& SafetensorsCheckpoint::file_of(std::string_view name) const {
  return *files_[index_.at(name).second];
}

std::vector<std::string_view> SafetensorsCheckpoint::names() const {
  std::vector<std::string_view> out;
  for (const auto& [name, where] : index_) out.push_back(name);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace tally::io
