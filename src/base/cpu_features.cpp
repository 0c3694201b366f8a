#include "base/cpu_features.h"

#include <cpuid.h>

#include <cstdlib>
#include <cstring>

namespace tally {

namespace {

bool os_saves_zmm() {
  unsigned eax, edx;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return (eax & 0xe6) == 0xe6;  // XMM, YMM, opmask, ZMM_Hi256, Hi16_ZMM
}
bool os_saves_ymm() {
  unsigned eax, edx;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return (eax & 0x6) == 0x6;
}

CpuFeatures detect() {
  CpuFeatures f;
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return f;
  const bool osxsave = c & (1u << 27);
  const bool ymm = osxsave && os_saves_ymm();
  const bool zmm = osxsave && os_saves_zmm();
  f.fma = ymm && (c & (1u << 12));
  f.f16c = ymm && (c & (1u << 29));
  if (__get_cpuid_count(7, 0, &a, &b, &c, &d)) {
    f.avx2 = ymm && (b & (1u << 5));
    f.avx512f = zmm && (b & (1u << 16));
    f.avx512bw = zmm && (b & (1u << 30));
    f.avx512vl = zmm && (b & (1u << 31));
    f.avx512vnni = zmm && (c & (1u << 11));
  }
  if (__get_cpuid_count(7, 1, &a, &b, &c, &d)) {
    f.avx512bf16 = zmm && (a & (1u << 5));
    f.avxvnni = ymm && (a & (1u << 4));
  }
  if (const char* isa = std::getenv("TALLY_ISA")) {
    if (std::strcmp(isa, "scalar") == 0) f = CpuFeatures{};
    // "avx2" keeps AVX-VNNI (the AVX2 level as a CPU with it runs it); "avx2-novnni" drops
    // it too, for the plain AVX2 path of CPUs without it (Zen 3) on one that has it.
    const bool novnni = std::strcmp(isa, "avx2-novnni") == 0;
    if (std::strcmp(isa, "avx2") == 0 || novnni) {
      f.avx512f = f.avx512bw = f.avx512vl = f.avx512vnni = f.avx512bf16 = false;
      if (novnni) f.avxvnni = false;
    }
  }
  return f;
}

}  // namespace

std::string CpuFeatures::to_string() const {
  std::string s;
  auto add = [&](bool on, const char* name) {
    if (!on) return;
    if (!s.empty()) s += ' ';
    s += name;
  };
  add(avx2, "avx2");
  add(fma, "fma");
  add(f16c, "f16c");
  add(avx512f, "avx512f");
  add(avx512bw, "avx512bw");
  add(avx512vl, "avx512vl");
  add(avx512vnni, "avx512vnni");
  add(avx512bf16, "avx512bf16");
  add(avxvnni, "avxvnni");
  return s.empty() ? "none" : s;
}

const CpuFeatures& cpu_features() {
  static const CpuFeatures f = detect();
  return f;
}

IsaLevel cpu_isa_level() {
  const auto& f = cpu_features();
  if (f.avx512f && f.avx512bw && f.avx512vl && f.fma && f.f16c) return IsaLevel::kAvx512;
  if (f.avx2 && f.fma && f.f16c) return IsaLevel::kAvx2;
  return IsaLevel::kScalar;
}

const char* isa_level_name(IsaLevel level) {
  switch (level) {
    case IsaLevel::kScalar: return "scalar";
    case IsaLevel::kAvx2: return "avx2";
    case IsaLevel::kAvx512: return "avx512";
  }
  return "?";
}

}  // namespace tally
