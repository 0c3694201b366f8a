// Helpers for the Jinja interpreter tests: render a template source with variables given as
// JSON text. Expected strings in these tests are what Jinja2 3.1 prints with transformers'
// settings (trim_blocks, lstrip_blocks, its tojson and raise_exception).
#pragma once

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "template/jinja/json.h"
#include "template/jinja/template.h"

namespace tally::jinja_test {

inline Result<std::string> render(std::string_view source, std::string_view vars_json = "{}",
                                  const jinja::RenderOptions& options = {}) {
  auto t = jinja::Template::parse(source);
  if (!t.ok()) return t.status();
  const jinja::Value vars = jinja::value_from_json(nlohmann::ordered_json::parse(vars_json));
  return t->render(vars.as_object(), options);
}

// The output, or "<error: ...>" (so a failure shows the message in the EXPECT_EQ diff).
inline std::string out(std::string_view source, std::string_view vars_json = "{}") {
  auto r = render(source, vars_json);
  return r.ok() ? *r : "<error: " + r.status().to_string() + ">";
}

// The error message ("" when the render succeeded).
inline std::string error(std::string_view source, std::string_view vars_json = "{}") {
  auto r = render(source, vars_json);
  return r.ok() ? "" : r.status().message();
}

inline ErrorCode code(std::string_view source, std::string_view vars_json = "{}") {
  return render(source, vars_json).status().code();
}

}  // namespace tally::jinja_test
