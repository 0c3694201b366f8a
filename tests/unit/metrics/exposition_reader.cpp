#include "exposition_reader.h"

#include <sstream>

namespace tally_test {

std::string Sample::label(const std::string& key) const {
  for (const auto& [k, v] : labels) {
    if (k == key) return v;
  }
  return "";
}

std::string Sample::labels_without_le() const {
  std::string key;
  for (const auto& [k, v] : labels) {
    if (k != "le") key += k + "=" + v + ";";
  }
  return key;
}

std::vector<Sample> Exposition::named(const std::string& name) const {
  std::vector<Sample> out;
  for (const Sample& s : samples) {
    if (s.name == name) out.push_back(s);
  }
  return out;
}

namespace {

// Parses `{k="v",...}` starting at text[i] == '{'; returns the index past '}' or npos.
size_t read_labels(const std::string& text, size_t i, Sample& sample) {
  ++i;
  while (i < text.size() && text[i] != '}') {
    const size_t eq = text.find('=', i);
    if (eq == std::string::npos || eq + 1 >= text.size() || text[eq + 1] != '"') {
      return std::string::npos;
    }
    std::string key = text.substr(i, eq - i);
    std::string value;
    size_t j = eq + 2;
    for (; j < text.size() && text[j] != '"'; ++j) {
      if (text[j] == '\\' && j + 1 < text.size()) {
        ++j;
        value += text[j] == 'n' ? '\n' : text[j];
      } else {
        value += text[j];
      }
    }
    if (j >= text.size()) return std::string::npos;
    sample.labels.emplace_back(std::move(key), std::move(value));
    i = j + 1;
    if (i < text.size() && text[i] == ',') ++i;
  }
  return i < text.size() ? i + 1 : std::string::npos;
}

}  // namespace

Exposition read_exposition(const std::string& text) {
  Exposition e;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    if (line.starts_with("# TYPE ") || line.starts_with("# HELP ")) {
      const size_t sp = line.find(' ', 7);
      if (sp == std::string::npos) {
        if (e.error.empty()) e.error = line;
        continue;
      }
      (line[2] == 'T' ? e.types : e.help)[line.substr(7, sp - 7)] = line.substr(sp + 1);
      continue;
    }
    if (line[0] == '#') continue;
    Sample s;
    size_t i = line.find_first_of("{ ");
    if (i == std::string::npos) {
      if (e.error.empty()) e.error = line;
      continue;
    }
    s.name = line.substr(0, i);
    if (line[i] == '{') {
      i = read_labels(line, i, s);
      if (i == std::string::npos || i >= line.size() || line[i] != ' ') {
        if (e.error.empty()) e.error = line;
        continue;
      }
    }
    s.value = line.substr(i + 1);
    e.samples.push_back(std::move(s));
  }
  return e;
}

}  // namespace tally_test
