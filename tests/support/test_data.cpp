#include "support/test_data.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

namespace tally_test {

std::string source_dir() { return TALLY_SOURCE_DIR; }
std::string repo_path(const std::string& rel) { return source_dir() + "/" + rel; }

std::string shared_dir() {
  if (const char* env = std::getenv("TALLY_SHARED_DIR")) return env;
  return TALLY_SHARED_DIR;
}

bool file_exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

bool shared_available() { return file_exists(shared_dir() + "/models"); }

bool in_ci() {
  const char* ci = std::getenv("CI");
  return ci && std::string(ci) == "true";
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << "cannot read " << path;
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string temp_dir() {
  static std::string dir = [] {
    std::string tmpl = "/tmp/tally_test_XXXXXX";
    char* d = mkdtemp(tmpl.data());
    return std::string(d ? d : "/tmp");
  }();
  return dir;
}

}  // namespace tally_test
