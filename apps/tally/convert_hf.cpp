// tally convert --hf DIR -o OUT.gguf [--type TYPE]: a Hugging Face directory -> the GGUF
// llama.cpp's converter would write (model/hf_checkpoint.h), streamed tensor by tensor with a
// progress bar. f32 / f16 / bf16 are written directly; any other type is a quantization mix of
// `tally quantize`: the float GGUF is written beside the output first, then quantized into it.
#include "convert_hf.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>

#include <fmt/format.h>

#include "cli_common.h"
#include "model/hf_checkpoint.h"
#include "progress_bar.h"
#include "quant/model_quantizer.h"

namespace tally::cli {

namespace {

Result<HfConvertSummary> write_float_gguf(const std::string& dir, std::optional<DType> type, const std::string& out) {
  io::GgufWriter w;
  ProgressBar bar("converting " + dir);
  int64_t done = 0, total = 0;
  TALLY_ASSIGN_OR_RETURN(HfConvertSummary s, hf_dir_to_gguf(dir, type, w, [&] { bar.update(++done, total); }));
  total = s.n_tensors;
  TALLY_RETURN_IF_ERROR(w.write(out));
  bar.finish();
  return s;
}

}  // namespace

int run_convert_hf(const std::string& dir, const std::string& type_name, const std::string& output) {
  const auto start = std::chrono::steady_clock::now();
  std::optional<DType> float_type;
  bool quantize = false;
  if (type_name != "auto") {
    float_type = dtype_from_name(type_name);
    if (!float_type || (*float_type != DType::kF32 && *float_type != DType::kF16 && *float_type != DType::kBF16)) {
      float_type.reset();
      auto scheme = quant::quant_scheme_from_name(type_name);
      if (!scheme.ok()) return report_error(scheme.status().with_context("convert --type"));
      quantize = true;
    }
  }
  const std::string float_path = quantize ? fmt::format("{}.f.tmp{}", output, static_cast<long>(getpid())) : output;
  auto s = write_float_gguf(dir, float_type, float_path);
  if (!s.ok()) return report_error(s.status());
  if (quantize) {
    quant::QuantizeOptions q;
    q.input_path = float_path;
    q.output_path = output;
    q.type = type_name;
    q.overwrite = true;
    ProgressBar bar("quantizing to " + type_name);
    q.on_progress = bar.callback();
    q.on_note = [](std::string_view line) { fmt::print(stderr, "tally: {}\n", line); };
    auto r = quant::quantize_model(q);
    bar.finish();
    std::remove(float_path.c_str());
    if (!r.ok()) return report_error(r.status());
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  fmt::print(stderr, "tally: wrote {} ({} as {}, {} tensors from {} safetensors file{}, {}) in {:.1f} s\n", output,
             s->info.hf_arch, s->info.arch, s->n_tensors, s->n_shards, s->n_shards == 1 ? "" : "s",
             type_name, seconds);
  return kExitOk;
}

}  // namespace tally::cli
