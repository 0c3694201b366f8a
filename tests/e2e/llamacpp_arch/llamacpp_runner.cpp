#include "llamacpp_runner.h"

#include <fstream>

#include "support/run_command.h"
#include "support/test_data.h"

namespace tally_test {

const std::string& llamacpp_install_error() {
  static const std::string error = [] {
    const auto r = run_command("bash " + shell_quote(repo_path("tests/llamacpp/install.sh")));
    if (r.exit_code == 0) return std::string();
    return "tests/llamacpp/install.sh exited " + std::to_string(r.exit_code) + ": " + r.err;
  }();
  return error;
}

nlohmann::json run_llamacpp(const std::string& script, const nlohmann::json& job, std::string& error) {
  static int runs = 0;
  const std::string stem = temp_dir() + "/llamacpp_" + std::to_string(runs++);
  {
    std::ofstream out(stem + "_job.json");
    out << job.dump();
  }
  const auto r = run_command("node " + shell_quote(repo_path("tests/llamacpp/" + script)) + " " +
                             shell_quote(stem + "_job.json") + " " + shell_quote(stem + "_out.json"));
  if (r.exit_code != 0) {
    error = script + " exited " + std::to_string(r.exit_code) + ": " + r.err;
    return nullptr;
  }
  return nlohmann::json::parse(read_file(stem + "_out.json"));
}

}  // namespace tally_test
