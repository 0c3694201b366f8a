// Global functions of a render: Jinja2's range, namespace, dict, plus transformers'
// raise_exception and strftime_now.
#include <ctime>
#include <memory>

#include "template/jinja/builtins.h"
#include "template/jinja/error.h"
#include "template/jinja/value_ops.h"

namespace tally::jinja {
namespace {

Value make_range(Interpreter& in, CallArgs& args) {
  if (!args.named.empty()) render_fail("range() takes no keyword arguments");
  const auto& p = args.positional;
  if (p.empty() || p.size() > 3) render_fail("range() expects 1 to 3 arguments");
  for (const Value& v : p) {
    if (!v.is_int() && !v.is_bool()) render_fail("range() arguments must be integers");
  }
  const int64_t start = p.size() == 1 ? 0 : p[0].as_int();
  const int64_t stop = p.size() == 1 ? p[0].as_int() : p[1].as_int();
  const int64_t step = p.size() == 3 ? p[2].as_int() : 1;
  if (step == 0) render_fail("range() arg 3 must not be zero");
  // Count first, so that range(10**12) is refused before anything is built.
  const __int128 span =
      step > 0 ? static_cast<__int128>(stop) - start : static_cast<__int128>(start) - stop;
  const __int128 mag = step > 0 ? step : -static_cast<__int128>(step);
  const __int128 count = span <= 0 ? 0 : (span + mag - 1) / mag;
  if (count > static_cast<__int128>(in.limits().max_alloc_bytes / sizeof(Value))) {
    in.charge(in.limits().max_alloc_bytes + 1);
  }
  in.charge(static_cast<size_t>(count) * sizeof(Value));
  std::vector<Value> items;
  items.reserve(static_cast<size_t>(count));
  for (int64_t i = 0, v = start; i < static_cast<int64_t>(count); ++i, v += step)
    items.emplace_back(v);
  return Value::array(std::move(items));
}

// Keyword arguments (and an optional dict) as a new dict or namespace.
Value make_dict(CallArgs& args, const char* name, bool is_namespace) {
  auto obj = std::make_shared<Object>();
  obj->is_namespace = is_namespace;
  if (args.positional.size() > 1) render_failf("{}() takes at most 1 positional argument", name);
  auto put = [&](const std::string& key, const Value& v) {
    if (is_namespace && v.has_namespace()) render_fail("a namespace cannot hold a namespace");
    obj->set(key, v);
  };
  if (!args.positional.empty()) {
    const Value& init = args.positional[0];
    if (!init.is_object() || init.as_object().is_namespace) {
      render_failf("{}(): the positional argument must be a dict", name);
    }
    for (const auto& [k, v] : init.as_object().entries()) put(k, v);
  }
  for (const auto& [k, v] : args.named) put(k, v);
  return Value::object(std::move(obj));
}

Value raise_exception(Interpreter& in, CallArgs& args) {
  ArgBinder a("raise_exception", args, {"message"});
  throw JinjaError(JinjaError::Kind::kRaised, str_of(in, a.get(0)));
}

Value strftime_now(const GlobalsConfig& config, CallArgs& args) {
  ArgBinder a("strftime_now", args, {"format"});
  const std::string fmt = a.get_string(0, "");
  if (fmt.size() > 256) render_fail("strftime_now(): format too long");
  const std::time_t t = config.now ? *config.now : std::time(nullptr);
  std::tm tm{};
  if (localtime_r(&t, &tm) == nullptr) render_fail("strftime_now(): bad time");
  char buf[2048];
  const size_t n = std::strftime(buf, sizeof buf, fmt.c_str(), &tm);
  if (n == 0 && !fmt.empty()) render_fail("strftime_now(): result too long or empty");
  return Value(std::string(buf, n));
}

}  // namespace

void install_globals(Scope& globals, Interpreter& in, const GlobalsConfig& config) {
  Interpreter* interp = &in;
  globals.vars["range"] =
      Value::function("range", [interp](CallArgs& a) { return make_range(*interp, a); });
  globals.vars["namespace"] =
      Value::function("namespace", [](CallArgs& a) { return make_dict(a, "namespace", true); });
  globals.vars["dict"] =
      Value::function("dict", [](CallArgs& a) { return make_dict(a, "dict", false); });
  globals.vars["raise_exception"] = Value::function(
      "raise_exception", [interp](CallArgs& a) { return raise_exception(*interp, a); });
  globals.vars["strftime_now"] =
      Value::function("strftime_now", [config](CallArgs& a) { return strftime_now(config, a); });
}

}  // namespace tally::jinja
