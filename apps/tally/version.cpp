#include "version.h"

#include <fmt/format.h>

#include "backend/cpu/matmul.h"
#include "base/cpu_features.h"
#include "git_commit.h"  // generated at build time (cmake/git_commit.cmake)

namespace tally::cli {

std::string version_text() {
  const CpuFeatures& cpu = cpu_features();
  return fmt::format(
      "tally {} (commit {}, {} build, {} {})\n"
      "CPU features: {}\n"
      "kernels: {} (ISA level {}; TALLY_ISA=scalar|avx2|avx512 lowers it)",
      TALLY_VERSION, TALLY_GIT_COMMIT, TALLY_BUILD_TYPE,
#if defined(__clang__)
      "clang", __clang_version__,
#else
      "g++", __VERSION__,
#endif
      cpu.to_string().empty() ? "none of the SIMD ones tally uses" : cpu.to_string(),
      cpu::matmul_path_name(), isa_level_name(cpu_isa_level()));
}

}  // namespace tally::cli
