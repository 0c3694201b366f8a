#include "serve_process.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <regex>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

#include "support/run_command.h"
#include "support/test_data.h"

namespace tally_test {

namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool has_flag(const std::vector<std::string>& args, const std::string& flag) {
  for (const auto& a : args) {
    if (a == flag) return true;
  }
  return false;
}

}  // namespace

ServeProcess::ServeProcess(const std::vector<std::string>& args) {
  static int counter = 0;
  dir_ = temp_dir() + "/serve" + std::to_string(counter++);
  std::filesystem::create_directories(dir_);
  std::vector<std::string> argv = {tally_binary(), "serve", "--port", "0", "--access-log",
                                   dir_ + "/access.log"};
  if (!has_flag(args, "-m")) argv.insert(argv.end(), {"-m", repo_path("models/stories260K.gguf")});
  if (!has_flag(args, "--kv-cache-memory")) argv.insert(argv.end(), {"--kv-cache-memory", "64MiB"});
  if (!has_flag(args, "--threads")) argv.insert(argv.end(), {"--threads", "2"});
  argv.insert(argv.end(), args.begin(), args.end());

  const std::string err_path = dir_ + "/stderr.txt";
  pid_ = spawn_process(argv, "/dev/null", err_path);
  if (pid_ < 0) return;
  // "tally serve: listening on http://127.0.0.1:PORT (...)"
  const std::regex listening(R"(listening on http://[^:]+:(\d+))");
  for (int i = 0; i < 600 && port_ == 0; ++i) {
    std::smatch m;
    const std::string text = slurp(err_path);
    if (std::regex_search(text, m, listening)) {
      port_ = static_cast<uint16_t>(std::stoi(m[1]));
      break;
    }
    if (!running()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (port_ == 0) ADD_FAILURE() << "tally serve did not start:\n" << stderr_text();
}

ServeProcess::~ServeProcess() {
  if (pid_ > 0) stop(SIGKILL, 5);
}

std::string ServeProcess::url() const { return "http://127.0.0.1:" + std::to_string(port_); }

bool ServeProcess::running() {
  if (pid_ <= 0) return false;
  int status = 0;
  const pid_t r = waitpid(pid_, &status, WNOHANG);
  if (r == pid_) {
    exit_status_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    pid_ = -1;
    return false;
  }
  return true;
}

void ServeProcess::send_signal(int signal) {
  if (pid_ > 0) ::kill(pid_, signal);
}

int ServeProcess::stop(int signal, double timeout_seconds) {
  if (pid_ <= 0) return exit_status_;
  ::kill(pid_, signal);
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::milliseconds(static_cast<int64_t>(timeout_seconds * 1000));
  while (running()) {
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
      pid_ = -1;
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return exit_status_;
}

std::string ServeProcess::stderr_text() const { return slurp(dir_ + "/stderr.txt"); }
std::string ServeProcess::access_log() const { return slurp(dir_ + "/access.log"); }

CurlReply curl(const std::string& url, const std::string& method, const std::string& body,
               const std::vector<std::string>& headers) {
  static std::atomic<int> counter{0};
  const std::string base = temp_dir() + "/curl" + std::to_string(counter++);
  // Appended piece by piece: GCC 12 warns (-Wrestrict, wrongly) on "literal" + std::string&&.
  std::string cmd = "curl -sS -N --max-time 60 -X ";
  auto arg = [&cmd](const std::string& flag, const std::string& value) {
    cmd += ' ';
    cmd += flag;
    cmd += ' ';
    cmd += shell_quote(value);
  };
  cmd += method;
  arg("-o", base + ".body");
  arg("-D", base + ".head");
  cmd += " -w '%{http_code}'";
  for (const auto& h : headers) arg("-H", h);
  if (!body.empty()) {
    std::ofstream(base + ".req", std::ios::binary) << body;
    arg("-H", "Content-Type: application/json");
    arg("--data-binary", "@" + base + ".req");
  }
  cmd += ' ';
  cmd += shell_quote(url);
  const CommandResult r = run_command(cmd);
  CurlReply reply;
  reply.status = std::atoi(r.out.c_str());
  reply.body = slurp(base + ".body");
  reply.headers = slurp(base + ".head");
  return reply;
}

bool node_sdk_available(std::string& why) {
  static std::once_flag once;
  static bool ok = false;
  static std::string reason;
  std::call_once(once, [] {
    std::string cmd = "bash ";
    cmd += shell_quote(repo_path("tests/e2e/node/install.sh"));
    const CommandResult r = run_command(cmd);
    ok = r.exit_code == 0;
    reason = r.err.empty() ? r.out : r.err;
  });
  why = reason;
  return ok;
}

NodeResult run_node(const std::string& script, const std::vector<std::string>& env) {
  std::string cmd = "env";
  for (const auto& e : env) {
    cmd += ' ';
    cmd += shell_quote(e);
  }
  cmd += " node ";
  cmd += shell_quote(repo_path("tests/e2e/node/" + script));
  const CommandResult r = run_command(cmd);
  return {r.exit_code, r.out, r.err};
}

}  // namespace tally_test
