// `tally bench serve` end to end: the real binary loads a real `tally serve` (bundled model)
// on loopback. Counts and timings must agree with what was asked (every request completes
// with the asked output tokens, E2E >= TTFT, ITLs fit inside E2E), the JSON carries every
// record, errors (nothing listening, a bad key, a bad dataset file) exit cleanly with one line.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "serve_process.h"
#include "support/run_command.h"
#include "support/test_data.h"

namespace {

using nlohmann::json;
using tally_test::CommandResult;
using tally_test::ServeProcess;
using tally_test::shell_quote;

CommandResult bench(const std::string& url, const std::string& flags, const std::string& env = "") {
  std::string cmd = env;
  cmd += ' ';
  cmd += shell_quote(tally_test::tally_binary());
  cmd += " bench serve --no-progress --base-url ";
  cmd += shell_quote(url);
  cmd += ' ';
  cmd += flags;
  return tally_test::run_command(cmd);
}

json read_json(const std::string& path) {
  std::ifstream in(path);
  return json::parse(in, nullptr, false);
}

// A loopback port nobody listens on: bound, then closed.
int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

// The report's last line, "output tok/s: X  ttft p50: Y ms  tpot p50: Z ms  failed: N", X Y Z
// with 2 decimals (read back and printed again it must be the same); N in `failed`.
bool script_line_of(const std::string& out, int& failed) {
  if (out.size() < 2 || out.back() != '\n') return false;
  const std::string line = out.substr(out.rfind('\n', out.size() - 2) + 1);
  double x = 0, y = 0, z = 0;
  if (std::sscanf(line.c_str(), "output tok/s: %lf  ttft p50: %lf ms  tpot p50: %lf ms  failed: %d",
                  &x, &y, &z, &failed) != 4) {
    return false;
  }
  char again[200];
  std::snprintf(again, sizeof again,
                "output tok/s: %.2f  ttft p50: %.2f ms  tpot p50: %.2f ms  failed: %d\n", x, y, z,
                failed);
  return line == again;
}

// Every record of a successful run agrees with itself and with what was asked.
void expect_consistent(const json& run, int n, int output_len) {
  EXPECT_EQ(run["completed"], n);
  EXPECT_EQ(run["failed"], 0);
  ASSERT_EQ(run["requests"].size(), static_cast<size_t>(n));
  int64_t out_total = 0;
  for (const auto& r : run["requests"]) {
    EXPECT_TRUE(r["success"].get<bool>()) << r["error"];
    const double ttft = r["ttft_s"], e2e = r["e2el_s"];
    EXPECT_GT(ttft, 0.0);
    EXPECT_GE(e2e, ttft);
    EXPECT_EQ(r["output_tokens"], output_len);
    EXPECT_TRUE(r["usage_reported"].get<bool>());
    double itl_sum = 0;
    for (double g : r["itl_s"]) {
      EXPECT_GE(g, 0.0);
      itl_sum += g;
    }
    EXPECT_LE(ttft + itl_sum, e2e + 1e-9);
    EXPECT_GE(r["send_s"].get<double>(), 0.0);
    out_total += r["output_tokens"].get<int64_t>();
  }
  EXPECT_EQ(run["total_output_tokens"], out_total);
  EXPECT_GE(run["mean_e2el_ms"].get<double>(), run["mean_ttft_ms"].get<double>());
}

TEST(BenchServe, RandomRunIsConsistent) {
  ServeProcess server;
  ASSERT_TRUE(server.started());
  const std::string dir = tally_test::temp_dir();
  const CommandResult r = bench(server.url(),
                                "--num-prompts 8 --random-input-len 16 --random-output-len 8 "
                                "--ignore-eos --max-concurrency 4 --json " +
                                    dir + "/run.json" + " --plot " + dir + "/run.svg");
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  int failed = -1;
  ASSERT_TRUE(script_line_of(r.out, failed)) << r.out;
  EXPECT_EQ(failed, 0);
  EXPECT_NE(r.out.find("Prompt lengths counted by:               server /tokenize"),
            std::string::npos)
      << r.out;
  const json run = read_json(dir + "/run.json");
  ASSERT_TRUE(run.is_object());
  expect_consistent(run, 8, 8);
  EXPECT_LE(run["max_in_flight"].get<int>(), 4);
  EXPECT_EQ(run["model_id"], "stories260K");
  for (const auto& rec : run["requests"]) {
    EXPECT_EQ(rec["expected_input_len"], 16);  // exact, by the server's tokenizer
    EXPECT_EQ(rec["input_tokens"], 17);        // + the BOS the server adds
  }
  const std::string svg = tally_test::read_file(dir + "/run.svg");
  EXPECT_NE(svg.find("<svg"), std::string::npos);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
}

TEST(BenchServe, ChatMultiTurnAndPoissonArrivals) {
  ServeProcess server;
  ASSERT_TRUE(server.started());
  const std::string out = tally_test::temp_dir() + "/mt.json";
  const CommandResult r = bench(server.url(),
                                "--backend openai-chat --dataset-name multi-turn --num-prompts 6 "
                                "--multi-turn-turns 3 --random-input-len 12 --random-output-len 6 "
                                "--ignore-eos --request-rate 50 --seed 9 --json " +
                                    out);
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  const json run = read_json(out);
  expect_consistent(run, 6, 6);
  EXPECT_EQ(run["endpoint"], "/v1/chat/completions");
  // Each later turn resends the history: its prompt is longer than the turn before.
  const auto& reqs = run["requests"];
  EXPECT_GT(reqs[1]["input_tokens"].get<int>(), reqs[0]["input_tokens"].get<int>());
  EXPECT_GT(reqs[2]["input_tokens"].get<int>(), reqs[1]["input_tokens"].get<int>());
  // The second conversation arrives after a drawn gap, turns follow their predecessor.
  EXPECT_GT(reqs[3]["send_s"].get<double>(), 0.0);
  EXPECT_GE(reqs[1]["send_s"].get<double>(),
            reqs[0]["send_s"].get<double>() + reqs[0]["e2el_s"].get<double>());
}

TEST(BenchServe, SharegptFileAndBadFiles) {
  ServeProcess server;
  ASSERT_TRUE(server.started());
  const std::string dir = tally_test::temp_dir();
  json data = json::array();
  for (int i = 0; i < 5; ++i) {
    data.push_back({{"id", std::to_string(i)},
                    {"conversations",
                     {{{"from", "human"},
                       {"value", "Tell me a story about a little dog number " + std::to_string(i)}},
                      {{"from", "gpt"}, {"value", "Once upon a time there was a little dog."}}}}});
  }
  std::ofstream(dir + "/sg.json") << data.dump();
  const CommandResult r =
      bench(server.url(), "--dataset-name sharegpt --dataset-path " + dir + "/sg.json" +
                              " --num-prompts 3 --sharegpt-output-len 5 --ignore-eos --json " +
                              dir + "/sg_run.json");
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  expect_consistent(read_json(dir + "/sg_run.json"), 3, 5);

  std::ofstream(dir + "/bad.json") << "[{\"conversations\": 3}]";
  const CommandResult bad =
      bench(server.url(), "--dataset-name sharegpt --dataset-path " + dir + "/bad.json");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("entry 0 has no 'conversations' list"), std::string::npos) << bad.err;
  EXPECT_EQ(std::count(bad.err.begin(), bad.err.end(), '\n'), 1) << bad.err;
}

TEST(BenchServe, ApiKeyFromFlagOrEnvironment) {
  ServeProcess server({"--api-key", "sekrit"});
  ASSERT_TRUE(server.started());
  const std::string small =
      "--num-prompts 2 --random-input-len 8 --random-output-len 4 --ignore-eos";
  const CommandResult no_key = bench(server.url(), small, "env -u OPENAI_API_KEY");
  EXPECT_EQ(no_key.exit_code, 1);
  EXPECT_NE(no_key.err.find("401"), std::string::npos) << no_key.err;
  const CommandResult flag = bench(server.url(), small + " --api-key sekrit");
  EXPECT_EQ(flag.exit_code, 0) << flag.err;
  EXPECT_NE(flag.out.find("failed: 0\n"), std::string::npos) << flag.out;
  const CommandResult env = bench(server.url(), small, "OPENAI_API_KEY=sekrit");
  EXPECT_EQ(env.exit_code, 0) << env.err;
}

TEST(BenchServe, NothingListeningFailsCleanly) {
  const CommandResult r =
      bench("http://127.0.0.1:" + std::to_string(free_port()), "--num-prompts 2");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("cannot reach the server"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_EQ(bench("https://127.0.0.1:1", "").exit_code, 2);
  EXPECT_EQ(bench("http://127.0.0.1:1", "--plot out.png").exit_code, 2);
}

}  // namespace
