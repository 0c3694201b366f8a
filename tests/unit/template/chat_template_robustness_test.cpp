// Hostile and garbage templates: every one ends in a value or an error Status, within the
// render limits (steps, output, memory, nesting), never a crash or a hang. Run under ASan too.
#include <random>
#include <string>
#include <vector>

#include "chat_template_test_util.h"
#include "support/test_data.h"
#include "template/chat_template.h"

namespace tally {
namespace {

jinja::RenderOptions small_limits() {
  jinja::RenderOptions o;
  o.limits.max_steps = 20'000;
  o.limits.max_output_bytes = 64 << 10;
  o.limits.max_alloc_bytes = 4 << 20;
  o.limits.max_call_depth = 16;
  o.now = 0;
  return o;
}

constexpr const char* kVars =
    R"({"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "u"},
  {"role": "assistant", "content": "a", "tool_calls": [{"function": {"name": "f", "arguments": {"x": 1}}}]}],
  "bos_token": "<s>", "eos_token": "</s>", "add_generation_prompt": true, "tools": [{"a": [1, 2]}]})";

// Renders `source` with small limits: whatever happens must be a value or a Status.
void render_must_not_crash(const std::string& source) {
  static const jinja::Value vars = jinja::value_from_json(nlohmann::ordered_json::parse(kVars));
  auto t = jinja::Template::parse(source);
  if (!t.ok()) return;
  auto r = t->render(vars.as_object(), small_limits());
  if (r.ok()) {
    EXPECT_LE(r->size(), size_t{64 << 10}) << source;
  }
}

ErrorCode limited_code(const std::string& source,
                       const jinja::RenderOptions& options = small_limits()) {
  return jinja_test::render(source, kVars, options).status().code();
}

TEST(JinjaRobustness, RandomTokenSoupNeverCrashes) {
  const std::vector<std::string> pieces = {
      "{{",       "}}",       "{%",         "%}",         "{#",
      "#}",       "-",        "+",          " ",          "\n",
      "if ",      "elif ",    "else",       "endif",      "for ",
      " in ",     "endfor",   "set ",       "=",          "==",
      "!=",       "<",        "x",          "ns",         "ns.a",
      "messages", "message",  "loop.index", "loop",       ".",
      "(",        ")",        "[",          "]",          "{",
      "}",        ",",        ":",          "'a'",        "\"b",
      "'",        "1",        "-1",         "2.5",        "|",
      "trim",     "length",   "tojson",     "join",       "selectattr('role', 'equalto', 'user')",
      "list",     " is ",     "defined",    "not ",       "none",
      "~",        "*",        "**",         "//",         "%",
      " and ",    " or ",     "range(",     "namespace(", "raise_exception(",
      "macro ",   "m",        "m(",         "endmacro",   "raw",
      "endraw",   "break",    "continue",   "filter ",    "endfilter",
      "[1:]",     "[-1]",     "'x' * 1000", "strip()",    "items()",
      "\\",       "\xC3\xA9", "\xFF",       "content",    "role",
      "tools",    "recursive"};
  std::mt19937 rng(12345);
  for (int i = 0; i < 1500; ++i) {
    std::string source;
    const int n = 1 + static_cast<int>(rng() % 40);
    for (int k = 0; k < n; ++k) source += pieces[rng() % pieces.size()];
    render_must_not_crash(source);
  }
}

TEST(JinjaRobustness, RandomBytesNeverCrash) {
  std::mt19937 rng(777);
  const std::string alphabet = "{}%#-+ \n\t'\"()[]|.,:=<>!~*/abcxyz019_\\\x80\xC3\xA9\xFF";
  for (int i = 0; i < 1000; ++i) {
    std::string source;
    const size_t n = rng() % 64;
    for (size_t k = 0; k < n; ++k) source += alphabet[rng() % alphabet.size()];
    render_must_not_crash(source);
  }
}

// Real templates with bytes deleted, duplicated or swapped: near-miss syntax.
TEST(JinjaRobustness, MutatedRealTemplatesNeverCrash) {
  const std::vector<std::string> files = {"llama3_1_instruct", "qwen2_5_instruct",
                                          "mistral_v0_3_instruct", "llama2_chat", "gemma_it"};
  std::mt19937 rng(4242);
  for (const std::string& f : files) {
    const std::string text =
        tally_test::read_file(tally_test::repo_path("tests/data/chat_templates/" + f + ".jinja"));
    for (int i = 0; i < 120; ++i) {
      std::string s = text;
      const int edits = 1 + static_cast<int>(rng() % 4);
      for (int e = 0; e < edits && !s.empty(); ++e) {
        const size_t pos = rng() % s.size();
        const size_t len = 1 + rng() % 8;
        switch (rng() % 3) {
          case 0:
            s.erase(pos, len);
            break;
          case 1:
            s.insert(pos, s.substr(pos, len));
            break;
          default:
            std::swap(s[pos], s[rng() % s.size()]);
            break;
        }
      }
      render_must_not_crash(s);
    }
  }
}

TEST(JinjaRobustness, EndlessWorkHitsTheStepLimit) {
  EXPECT_EQ(limited_code(
                "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"),
            ErrorCode::kOutOfRange);
  EXPECT_EQ(limited_code("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}"),
            ErrorCode::kOutOfRange);
  EXPECT_EQ(limited_code("{% macro f(n) %}{{ f(n) }}{{ f(n) }}{% endmacro %}{{ f(1) }}"),
            ErrorCode::kOutOfRange);
}

TEST(JinjaRobustness, HugeValuesHitTheSizeLimits) {
  EXPECT_EQ(limited_code("{{ 'x' * 1000000000000 }}"), ErrorCode::kOutOfRange);
  EXPECT_EQ(limited_code("{{ [1] * 1000000000000 }}"), ErrorCode::kOutOfRange);
  EXPECT_EQ(limited_code("{{ range(1000000000000)|length }}"), ErrorCode::kOutOfRange);
  EXPECT_EQ(
      limited_code(
          "{% set ns = namespace(s='ab') %}{% for i in range(60) %}{% set ns.s = ns.s ~ ns.s %}"
          "{% endfor %}"),
      ErrorCode::kOutOfRange);
  EXPECT_EQ(limited_code("{% for i in range(10000) %}0123456789abcdef{% endfor %}"),
            ErrorCode::kOutOfRange);
  EXPECT_EQ(limited_code("{{ 'ab'|replace('a', 'aaaaaaaaaaaaaaaaaaaaaaaa' * 100000) }}"),
            ErrorCode::kOutOfRange);
  // Many references to one long string: printing them is bounded, not just building them.
  EXPECT_EQ(limited_code("{{ ['x' * 60000] * 100 }}"), ErrorCode::kOutOfRange);
  EXPECT_EQ(limited_code("{{ (['x' * 60000] * 100)|tojson }}"), ErrorCode::kOutOfRange);
  EXPECT_EQ(limited_code("{{ (['x' * 60000] * 100)|join }}"), ErrorCode::kOutOfRange);
  EXPECT_EQ(limited_code("{{ 'a' ~ (['x' * 60000] * 100) }}"), ErrorCode::kOutOfRange);
  // Numbers too large for their parser are errors, not exceptions.
  EXPECT_EQ(limited_code("{{ '{99999999999999999999999}'.format(1) }}"),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(limited_code("{{ messages|map(attribute='99999999999999999999999')|list }}"),
            ErrorCode::kOk);
  // Nested lists grown in a loop stop at the depth limit, before any recursion can overflow.
  EXPECT_NE(
      limited_code("{% set ns = namespace(l=[]) %}{% for i in range(1000) %}{% set ns.l = [ns.l] %}"
                   "{% endfor %}{{ ns.l }}"),
      ErrorCode::kOk);
}

TEST(JinjaRobustness, DeepNestingIsASyntaxError) {
  const int n = 1000;  // each well past kMaxTreeHeight
  EXPECT_EQ(jinja_test::code("{{ " + std::string(n, '(') + "1" + std::string(n, ')') + " }}"),
            ErrorCode::kFormat);
  EXPECT_EQ(jinja_test::code("{{ " + std::string(n, '[') + std::string(n, ']') + " }}"),
            ErrorCode::kFormat);
  std::string nots;
  for (int i = 0; i < n; ++i) nots += "not ";
  EXPECT_EQ(jinja_test::code("{{ " + nots + "1 }}"), ErrorCode::kFormat);
  std::string sum = "1";
  for (int i = 0; i < 20000; ++i) sum += "+1";  // left-nested without parser recursion
  EXPECT_EQ(jinja_test::code("{{ " + sum + " }}"), ErrorCode::kFormat);
  std::string ifs;
  for (int i = 0; i < n; ++i) ifs += "{% if 1 %}";
  for (int i = 0; i < n; ++i) ifs += "{% endif %}";
  EXPECT_EQ(jinja_test::code(ifs), ErrorCode::kFormat);
  std::string chain = "x";
  for (int i = 0; i < 20000; ++i) chain += "|trim";
  EXPECT_EQ(jinja_test::code("{{ " + chain + " }}"), ErrorCode::kFormat);
}

TEST(JinjaRobustness, OversizedSourceIsRefused) {
  EXPECT_EQ(jinja_test::code(std::string(2 << 20, 'a')), ErrorCode::kOutOfRange);
}

TEST(JinjaRobustness, DeepJsonInputIsAnError) {
  std::string deep;
  for (int i = 0; i < 1000; ++i) deep += "[";
  for (int i = 0; i < 1000; ++i) deep += "]";
  ChatTemplateContext ctx;
  ctx.extra["tools"] = nlohmann::ordered_json::parse(deep);
  auto out = ChatTemplate::builtin().render({}, true, ctx);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace tally
