// The memory a process really holds, as the kernel counts it (/proc/PID/status): what `top`
// shows as RES, what a container's memory limit and the OOM killer act on. The memory ledger
// (engine_types.h) predicts it; /metrics and the tests put the two side by side.
#pragma once

#include <cstdint>
#include <string_view>

#include "base/status.h"

namespace tally::metrics {

struct ProcessMemory {
  int64_t resident_bytes = 0;       // VmRSS = anon + file + shmem
  int64_t resident_anon_bytes = 0;  // RssAnon: heap, tally's own mappings (KV, repacked weights)
  int64_t resident_file_bytes = 0;  // RssFile: file pages mapped in (the binary, the GGUF)
  int64_t resident_shmem_bytes = 0; // RssShmem
  int64_t peak_resident_bytes = 0;  // VmHWM: the most VmRSS has been
  int64_t virtual_bytes = 0;        // VmSize: the address space, mostly not memory
  int64_t peak_virtual_bytes = 0;   // VmPeak
};

// Parses the text of /proc/PID/status (sizes in kB). Format error when a field is missing.
Result<ProcessMemory> parse_process_status(std::string_view status_text);

// Reads /proc/self/status (pid 0) or /proc/PID/status. Io error when it cannot be read.
Result<ProcessMemory> read_process_memory(int pid = 0);

}  // namespace tally::metrics
