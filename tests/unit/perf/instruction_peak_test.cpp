// The instruction peaks' plumbing: which instructions are measured on this CPU, that each gets
// its samples, and how kernel peaks map onto them. No speed is asserted.
#include "perf/instruction_peak.h"

#include <gtest/gtest.h>

#include "base/cpu_features.h"
#include "perf/model_bench.h"
#include "perf/model_bench_report.h"

namespace tally::perf {
namespace {

InstructionPeakOptions quick() {
  InstructionPeakOptions o;
  o.repetitions = 3;
  o.warmup = 1;
  o.seconds_per_sample = 0.001;
  return o;
}

TEST(InstructionPeak, MeasuresEachInstructionOfThisIsaLevel) {
  ThreadPool pool(2);
  const std::vector<InstructionPeak> peaks = measure_instruction_peaks(pool, quick());
  const CpuFeatures& f = cpu_features();
  std::vector<PeakInstruction> want;
  std::vector<std::string> names;
  switch (cpu_isa_level()) {
    case IsaLevel::kAvx512:
      want = {PeakInstruction::kFmaF32, PeakInstruction::kDotInt8};
      names = {"vfmadd231ps zmm", f.avx512vnni ? "vpdpbusd zmm" : "vpmaddubsw+vpmaddwd ymm"};
      if (f.avx512bf16) {
        want.push_back(PeakInstruction::kDotBf16);
        names.push_back("vdpbf16ps zmm");
      }
      break;
    case IsaLevel::kAvx2:
      want = {PeakInstruction::kFmaF32, PeakInstruction::kDotInt8};
      names = {"vfmadd231ps ymm",
               f.avxvnni ? "vpdpbusd ymm (AVX-VNNI)" : "vpmaddubsw+vpmaddwd ymm"};
      break;
    case IsaLevel::kScalar:
      break;
  }
  ASSERT_EQ(peaks.size(), want.size());
  for (size_t i = 0; i < peaks.size(); ++i) {
    EXPECT_EQ(peaks[i].kind, want[i]);
    EXPECT_EQ(peaks[i].instruction, names[i]);
    EXPECT_EQ(peaks[i].gops.n, 3);
    EXPECT_GT(peaks[i].gops.min, 0.0);
    EXPECT_LE(peaks[i].gops.min, peaks[i].gops.max);
    // Each thread's best is at least its share of the best all-thread sample.
    EXPECT_GE(peaks[i].peak() * (1 + 1e-9), peaks[i].gops.max);
  }
}

TEST(InstructionPeak, BadOptionsAreRefused) {
  ThreadPool pool(1);
  InstructionPeakOptions o = quick();
  o.repetitions = 0;
  EXPECT_DEATH(measure_instruction_peaks(pool, o), "reps=0");
}

TEST(InstructionPeak, WeightTypesMapToTheirKernelsInstruction) {
  EXPECT_EQ(peak_instruction_for(DType::kF32), PeakInstruction::kFmaF32);
  EXPECT_EQ(peak_instruction_for(DType::kF16), PeakInstruction::kFmaF32);
  EXPECT_EQ(peak_instruction_for(DType::kBF16), PeakInstruction::kFmaF32);
  for (DType t : {DType::kQ8_0, DType::kQ4_0, DType::kQ4_K, DType::kQ6_K})
    EXPECT_EQ(peak_instruction_for(t), PeakInstruction::kDotInt8) << dtype_name(t);
  EXPECT_STREQ(peak_instruction_name(PeakInstruction::kDotInt8), "int8 dot");
}

TEST(InstructionPeak, KernelPeaksTakeTheirInstructionsRate) {
  InstructionPeak fma{PeakInstruction::kFmaF32, "fma", {}, 0.0};
  fma.gops.median = 300;
  fma.peak_gops = 400;
  const std::vector<InstructionPeak> peaks = {fma};
  KernelPeak q4, f16;
  q4.type = DType::kQ4_0;
  q4.gflops.median = 100;
  f16.type = DType::kF16;
  f16.gflops.median = 50;
  f16.n_in = 2048;
  EXPECT_EQ(instruction_peak_for(peaks, DType::kQ4_0), nullptr);  // int8 dot not measured
  ASSERT_EQ(instruction_peak_for(peaks, DType::kF16), &peaks[0]);
  const std::vector<KernelPeak> at = peaks_at_instruction_rate({q4, f16}, peaks);
  ASSERT_EQ(at.size(), 1u);  // q4_0 left out: its ceiling is unknown, not wrong
  EXPECT_EQ(at[0].type, DType::kF16);
  EXPECT_EQ(at[0].n_in, 2048);
  EXPECT_DOUBLE_EQ(at[0].gflops.median, 400);
}

TEST(InstructionPeak, ReportShowsEachKernelsShareOfItsInstruction) {
  ModelBenchResult r;
  InstructionPeak dot{PeakInstruction::kDotInt8, "vpdpbusd zmm", {}, 0.0};
  dot.gops.median = 900;
  dot.peak_gops = 1000;
  r.instruction_peaks = {dot};
  KernelPeak q8;
  q8.type = DType::kQ8_0;
  q8.gflops.median = 250;
  r.peaks = {q8};
  BenchRow row;
  row.kind = BenchKind::kPrefill;
  row.n = 512;
  row.tok_s.median = 30;
  row.ceiling_tok_s = row.compute_ceiling_tok_s = 60;
  row.fraction = 0.5;
  row.hardware_ceiling_tok_s = 120;
  r.rows = {row};
  const std::string table = model_bench_table(r, {"m.gguf", "llama", 1, 64});
  EXPECT_NE(table.find("int8 dot peak  1000.0 Gop/s"), std::string::npos) << table;
  EXPECT_NE(table.find("= 25.0% of int8 dot"), std::string::npos) << table;
  EXPECT_NE(table.find("50.0%   25.0%"), std::string::npos) << table;  // of ceil, of hw
  const nlohmann::json j = model_bench_json(r, {"m.gguf", "llama", 1, 64});
  EXPECT_EQ(j["instruction_peak_gops"][0]["instruction"], "vpdpbusd zmm");
  EXPECT_DOUBLE_EQ(j["instruction_peak_gops"][0]["peak_gops"].get<double>(), 1000);
  EXPECT_DOUBLE_EQ(j["kernel_peak_gflops"][0]["fraction_of_instruction_peak"].get<double>(), 0.25);
  EXPECT_DOUBLE_EQ(j["tests"][0]["hardware_ceiling_tok_s"].get<double>(), 120);
}

}  // namespace
}  // namespace tally::perf
