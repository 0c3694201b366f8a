// What the CPU can do, read once with cpuid. Kernels pick their ISA path from this at run time,
// so one binary runs everywhere and uses AVX-512 where it exists.
#pragma once

#include <string>

namespace tally {

struct CpuFeatures {
  bool avx2 = false;
  bool fma = false;
  bool f16c = false;
  bool avx512f = false;
  bool avx512bw = false;
  bool avx512vl = false;
  bool avx512vnni = false;
  bool avx512bf16 = false;
  bool avxvnni = false;
  std::string to_string() const;  // "avx2 fma f16c avx512f ..."
};

// The detected features, optionally lowered by the environment variable TALLY_ISA
// ("scalar", "avx2", "avx2-novnni": AVX2 without AVX-VNNI, "avx512") so tests and benchmarks
// can force each path.
const CpuFeatures& cpu_features();

enum class IsaLevel { kScalar = 0, kAvx2 = 1, kAvx512 = 2 };
IsaLevel cpu_isa_level();
const char* isa_level_name(IsaLevel level);

}  // namespace tally
