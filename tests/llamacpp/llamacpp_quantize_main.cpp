// llama-quantize through llama.cpp's prebuilt libllama (llamacpp_lib.h), for measurements:
//   tally_llamacpp_quantize IN.gguf OUT.gguf TYPE [--imatrix FILE] [--pure] [--threads N]
// TYPE is a llama-quantize file type name (Q4_K_M, IQ4_XS, ...); FILE an imatrix in either of
// llama.cpp's formats (read by tally's reader, handed over as column means). The libraries come
// from $TALLY_LLAMACPP_LIB_DIR or tests/llamacpp/node_modules (bash tests/llamacpp/install.sh).
#include <cstdio>
#include <cstdlib>
#include <string>

#include "io/imatrix_file.h"
#include "llamacpp_lib.h"
#include "plan/llama_quant_rules.h"

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s IN.gguf OUT.gguf TYPE [--imatrix FILE] [--pure] [--threads N]\n", argv[0]);
    return 2;
  }
  tally_test::LlamaCppQuantizeRequest r;
  r.input_path = argv[1];
  r.output_path = argv[2];
  const auto ft = tally::plan::llama_file_type_from_name(argv[3]);
  if (!ft) {
    std::fprintf(stderr, "unknown type %s (types: %s)\n", argv[3], tally::plan::llama_file_type_names().c_str());
    return 2;
  }
  r.ftype = ft->ftype;
  r.n_threads = 2;
  for (int i = 4; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--pure") {
      r.pure = true;
    } else if (a == "--threads" && i + 1 < argc) {
      r.n_threads = std::atoi(argv[++i]);
    } else if (a == "--imatrix" && i + 1 < argc) {
      auto m = tally::io::imatrix_read(argv[++i]);
      if (!m.ok()) {
        std::fprintf(stderr, "%s\n", m.status().to_string().c_str());
        return 1;
      }
      for (const auto& [name, e] : m->entries) {
        tally_test::LlamaCppImatrixEntry x{name, {}};
        for (int64_t mat = 0; mat < e.n_mat; ++mat) {
          const std::vector<float> means = e.importance(mat);
          x.means.insert(x.means.end(), means.begin(), means.end());
        }
        r.imatrix.push_back(std::move(x));
      }
    } else {
      std::fprintf(stderr, "unknown argument %s\n", a.c_str());
      return 2;
    }
  }
  auto lib = tally_test::LlamaCppLib::get();
  if (!lib.ok()) {
    std::fprintf(stderr, "%s\n", lib.status().to_string().c_str());
    return 1;
  }
  const tally::Status st = (*lib)->model_quantize(r);
  if (!st.ok()) {
    std::fprintf(stderr, "%s\n", st.to_string().c_str());
    return 1;
  }
  std::printf("%s -> %s (%s, llama.cpp %s)\n", r.input_path.c_str(), r.output_path.c_str(), argv[3],
              (*lib)->release().c_str());
  return 0;
}
