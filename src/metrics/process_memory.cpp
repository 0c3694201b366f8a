#include "metrics/process_memory.h"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <sstream>
#include <string>

namespace tally::metrics {

namespace {

// The value of "Name:   1234 kB" in bytes, or -1 when the line is absent or malformed.
int64_t status_field_bytes(std::string_view text, std::string_view name) {
  size_t at = 0;
  while (at < text.size()) {
    const size_t end = std::min(text.find('\n', at), text.size());
    const std::string_view line = text.substr(at, end - at);
    at = end + 1;
    if (line.size() <= name.size() || line.substr(0, name.size()) != name ||
        line[name.size()] != ':')
      continue;
    std::string_view rest = line.substr(name.size() + 1);
    const size_t digits = rest.find_first_not_of(" \t");
    if (digits == std::string_view::npos) return -1;
    rest.remove_prefix(digits);
    int64_t kib = 0;
    auto [ptr, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), kib);
    if (ec != std::errc() || std::string_view(ptr, rest.data() + rest.size()) != " kB") return -1;
    return kib * 1024;
  }
  return -1;
}

}  // namespace

Result<ProcessMemory> parse_process_status(std::string_view text) {
  ProcessMemory m;
  const struct {
    std::string_view name;
    int64_t* out;
  } fields[] = {{"VmRSS", &m.resident_bytes},        {"RssAnon", &m.resident_anon_bytes},
                {"RssFile", &m.resident_file_bytes}, {"RssShmem", &m.resident_shmem_bytes},
                {"VmHWM", &m.peak_resident_bytes},   {"VmSize", &m.virtual_bytes},
                {"VmPeak", &m.peak_virtual_bytes}};
  for (const auto& f : fields) {
    *f.out = status_field_bytes(text, f.name);
    if (*f.out < 0)
      return make_error(ErrorCode::kFormat, "process status: no '{}: N kB' line", f.name);
  }
  return m;
}

Result<ProcessMemory> read_process_memory(int pid) {
  const std::string path = pid == 0 ? "/proc/self/status" : fmt::format("/proc/{}/status", pid);
  std::ifstream in(path);
  if (!in.is_open()) return make_error(ErrorCode::kIo, "{}: cannot open", path);
  std::ostringstream text;
  text << in.rdbuf();
  auto m = parse_process_status(text.str());
  if (!m.ok()) return m.status().with_context(path);
  return m;
}

}  // namespace tally::metrics
