#include "io/safetensors_writer.h"

#include <cstring>
#include <fstream>

#include <nlohmann/json.hpp>

namespace tally::io {

void SafetensorsWriter::add(std::string name, std::string dtype, std::vector<int64_t> shape,
                            std::span<const uint8_t> bytes) {
  entries_.push_back({std::move(name), std::move(dtype), std::move(shape), {bytes.begin(), bytes.end()}});
}

std::vector<uint8_t> SafetensorsWriter::to_bytes() const {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata_.empty()) header["__metadata__"] = metadata_;
  uint64_t at = 0;
  for (const Entry& e : entries_) {
    header[e.name] = {{"dtype", e.dtype}, {"shape", e.shape}, {"data_offsets", {at, at + e.bytes.size()}}};
    at += e.bytes.size();
  }
  std::string text = header.dump();
  while (text.size() % 8 != 0) text.push_back(' ');
  size_t total = 8 + text.size();
  for (const Entry& e : entries_) total += e.bytes.size();
  std::vector<uint8_t> out(total);
  const uint64_t n = text.size();
  for (int i = 0; i < 8; ++i) out[static_cast<size_t>(i)] = static_cast<uint8_t>(n >> (8 * i));
  std::memcpy(out.data() + 8, text.data(), text.size());
  size_t pos = 8 + text.size();
  for (const Entry& e : entries_) {
    if (!e.bytes.empty()) std::memcpy(out.data() + pos, e.bytes.data(), e.bytes.size());
    pos += e.bytes.size();
  }
  return out;
}

Status SafetensorsWriter::write(const std::string& path) const {
  const std::vector<uint8_t> bytes = to_bytes();
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) return make_error(ErrorCode::kIo, "{}: write failed", path);
  return Status();
}

}  // namespace tally::io
