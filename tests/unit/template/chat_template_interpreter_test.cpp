// The Jinja subset feature by feature. Every expected string is what Jinja2 3.1 renders with
// transformers' environment (checked when the test was written).
#include <cstdlib>
#include <ctime>

#include "chat_template_test_util.h"

namespace tally {
namespace {

using jinja_test::code;
using jinja_test::error;
using jinja_test::out;

TEST(JinjaInterpreter, LiteralsPrintLikePython) {
  EXPECT_EQ(out("{{ 'a' }}{{ \"b\" }}{{ 'x' 'y' }}"), "abxy");
  EXPECT_EQ(out("{{ 'it\\'s' }}|{{ \"a\\\"b\" }}|{{ 'tab\\there' }}|{{ '\\u00e9\\x41' }}"),
            "it's|a\"b|tab\there|\xC3\xA9"
            "A");
  EXPECT_EQ(out("{{ 42 }} {{ -7 }} {{ 1_000 }} {{ true }} {{ False }} {{ none }} {{ None }}"),
            "42 -7 1000 True False None None");
  EXPECT_EQ(out("{{ 0.1 }} {{ 100.0 }} {{ 1e15 }} {{ 1e16 }} {{ 1.5e-7 }} {{ 1e-5 }} {{ -1.25 }}"),
            "0.1 100.0 1000000000000000.0 1e+16 1.5e-07 1e-05 -1.25");
  EXPECT_EQ(out("{{ [1, 'a', none, true, 1.0, {'k': []}] }}"),
            "[1, 'a', None, True, 1.0, {'k': []}]");
  EXPECT_EQ(out("{{ (1, 2) }}{{ (1,) }}{{ () }}{{ {} }}"), "(1, 2)(1,)(){}");
  EXPECT_EQ(out("{{ ['it\\'s', 'a\"b', 'x\\ny'] }}"), "[\"it's\", 'a\"b', 'x\\ny']");
}

TEST(JinjaInterpreter, VariablesAndUndefined) {
  EXPECT_EQ(out("{{ x }}|{{ y }}|", R"({"x": "v"})"), "v||");  // undefined prints nothing
  EXPECT_EQ(out("{{ x.a.b }}{{ x['a']['b'] }}{{ x.a['b'] }}", R"({"x": {"a": {"b": 5}}})"), "555");
  EXPECT_EQ(out("{{ x.missing }}|{{ x.missing is defined }}", R"({"x": {}})"), "|False");
  EXPECT_EQ(out("{{ x.0 }}{{ x[1] }}{{ x[-1] }}{{ x[5] }}|", R"({"x": ["p", "q"]})"), "pqq|");
  EXPECT_EQ(out("{{ none.x }}|"), "|");
  EXPECT_NE(error("{{ x.y }}").find("'x' is undefined"), std::string::npos);
  EXPECT_NE(error("{{ x.missing.deeper }}", R"({"x": {}})").find("has no attribute 'missing'"),
            std::string::npos);
}

TEST(JinjaInterpreter, Comments) { EXPECT_EQ(out("a{# note #}b{# multi\nline #}c"), "abc"); }

TEST(JinjaInterpreter, IfElifElse) {
  const char* t = "{% if x == 1 %}one{% elif x == 2 %}two{% else %}many{% endif %}";
  EXPECT_EQ(out(t, R"({"x": 1})"), "one");
  EXPECT_EQ(out(t, R"({"x": 2})"), "two");
  EXPECT_EQ(out(t, R"({"x": 3})"), "many");
  EXPECT_EQ(out("{% if x %}t{% endif %}|{% if [] %}t{% endif %}|{% if 'a' %}t{% endif %}"), "||t");
}

TEST(JinjaInterpreter, ForLoopVariables) {
  EXPECT_EQ(out("{% for a, b in [[1,2],[3,4]] %}{{a}}{{b}}{{loop.index}}{{loop.last}}{% endfor %}"),
            "121False342True");
  EXPECT_EQ(
      out("{% for x in 'ab' %}{{ loop.index0 }}{{ loop.first }}{{ loop.length }}{{ loop.revindex }}"
          "{{ loop.revindex0 }}{% endfor %}"),
      "0True221"
      "1False210");
  EXPECT_EQ(out("{% for x in 'ab' %}{{ loop.cycle('o','e') }}{{ loop.previtem }}{{ loop.nextitem "
                "}}{% endfor %}"),
            "obea");
  EXPECT_EQ(out("{% for k, v in {'a': 1, 'b': 2}.items() %}{{k}}={{v}};{% endfor %}"), "a=1;b=2;");
  EXPECT_EQ(out("{% for k in {'b': 1, 'a': 2} %}{{k}}{% endfor %}"), "ba");  // insertion order
  EXPECT_EQ(out("{% for c in 'h\xC3\xA9!' %}[{{c}}]{% endfor %}"), "[h][\xC3\xA9][!]");
}

TEST(JinjaInterpreter, ForElseFilterBreakContinue) {
  EXPECT_EQ(out("{% for a in [] %}x{% else %}E{% endfor %}"), "E");
  EXPECT_EQ(
      out("{% for a in [1,2,3,4] if a is odd %}{{a}}{{loop.length}}{{loop.index}}{% endfor %}"),
      "121322");
  EXPECT_EQ(out("{% for a in [2] if a is odd %}x{% else %}none odd{% endfor %}"), "none odd");
  EXPECT_EQ(out("{% for a in range(5) %}{% if a == 3 %}{% break %}{% endif %}{% if a == 1 %}{% "
                "continue %}"
                "{% endif %}{{a}}{% endfor %}"),
            "02");
  EXPECT_EQ(out("{% for x in undefined_list %}x{% endfor %}|"), "|");
}

TEST(JinjaInterpreter, LoopScopeIsFreshEachIteration) {
  // A set inside a loop is gone after the loop, and even by the next iteration.
  EXPECT_EQ(
      out("{% for i in range(3) %}{% if i == 0 %}{% set x = 'a' %}{% endif %}{{ x }}{% endfor %}"),
      "a");
  EXPECT_EQ(
      out("{% set x = 1 %}{% for i in range(2) %}{{ x }}{% set x = 2 %}{{ x }}{% endfor %}{{ x }}"),
      "12121");
  EXPECT_EQ(out("{% for i in [1] %}{% set z = 1 %}{% endfor %}{{ z }}|"), "|");
  // if does not open a scope.
  EXPECT_EQ(out("{% set y = 5 %}{% if true %}{% set y = 6 %}{% endif %}{{ y }}"), "6");
}

TEST(JinjaInterpreter, SetAndNamespace) {
  EXPECT_EQ(out("{% set a, b = 1, 2 %}{{ a }}{{ b }}"), "12");
  EXPECT_EQ(out("{% set a = [1, 2] %}{% set b, c = a %}{{ b + c }}"), "3");
  EXPECT_EQ(out("{% set x %}a{{ 1 }}b{% endset %}{{ x|upper }}"), "A1B");
  EXPECT_EQ(out("{% set ns = namespace(i=0, found=false) %}{% for m in [1,2,3] %}{% set ns.i = "
                "ns.i + m %}"
                "{% endfor %}{{ ns.i }}{{ ns.found }}"),
            "6False");
  EXPECT_EQ(out("{% set ns = namespace() %}{% set ns.index = 0 %}{{ ns.index }}"), "0");
  EXPECT_NE(error("{% set d = {} %}{% set d.x = 1 %}").find("not a namespace()"),
            std::string::npos);
  EXPECT_NE(
      error("{% set ns = namespace() %}{% set ns.self = ns %}").find("cannot hold a namespace"),
      std::string::npos);
  EXPECT_NE(error("{% set a, b = [1, 2, 3] %}").find("cannot unpack 3 values into 2 names"),
            std::string::npos);
}

TEST(JinjaInterpreter, Macros) {
  EXPECT_EQ(out("{% macro f(a, b='B') %}<{{a}}{{b}}>{% endmacro %}{{ f(1) }}{{ f(1, b=2) }}{{ "
                "f(b=3, a=4) }}"),
            "<1B><12><43>");
  EXPECT_EQ(
      out("{% macro r(n) %}{% if n > 0 %}{{ n }}{{ r(n - 1) }}{% endif %}{% endmacro %}{{ r(3) }}"),
      "321");
  EXPECT_EQ(out("{% set x = 'top' %}{% macro m() %}{{ x }}{% endmacro %}{{ m() }}"), "top");
  EXPECT_NE(error("{% macro f(a) %}{% endmacro %}{{ f(1, 2) }}").find("takes 1 arguments"),
            std::string::npos);
  EXPECT_NE(error("{% macro f(a) %}{% endmacro %}{{ f(b=1) }}").find("no parameter 'b'"),
            std::string::npos);
}

TEST(JinjaInterpreter, FilterBlockAndRaw) {
  EXPECT_EQ(out("{% filter upper %}hi {{ 'x' }}{% endfilter %}"), "HI X");
  EXPECT_EQ(out("a{% raw %}{{ not evaluated }}{% endraw %}b"), "a{{ not evaluated }}b");
  EXPECT_EQ(out("{% generation %}g{% endgeneration %}"), "g");  // transformers' tag
}

TEST(JinjaInterpreter, Arithmetic) {
  EXPECT_EQ(out("{{ 1 + 2 }} {{ 7 - 10 }} {{ 6 * 7 }} {{ 10 / 4 }} {{ 10 // 4 }} {{ 10 % 4 }} {{ 2 "
                "** 10 }}"),
            "3 -3 42 2.5 2 2 1024");
  EXPECT_EQ(
      out("{{ -7 // 2 }} {{ -7 % 3 }} {{ 10.5 // 4 }} {{ 2 ** -1 }} {{ 0.1 + 0.2 }} {{ 1 / 3 }}"),
      "-4 2 2.0 0.5 0.30000000000000004 0.3333333333333333");
  EXPECT_EQ(out("{{ 'ab' + 'cd' }}{{ [1] + [2] }}{{ 'ab' * 2 }}{{ [0] * 3 }}{{ 3 * 'x' }}"),
            "abcd[1, 2]abab[0, 0, 0]xxx");
  EXPECT_EQ(out("{{ -x }}{{ +x }}{{ true + 1 }}", R"({"x": 3})"), "-332");
  EXPECT_EQ(out("{{ '%s and %s' % ('a', 'b') }}|{{ '%d%%' % 5 }}|{{ '%.2f' % 3.14159 }}"),
            "a and b|5%|3.14");
}

TEST(JinjaInterpreter, ConcatBindsTighterThanPlus) {
  EXPECT_EQ(out("{{ 'a' ~ 1 ~ none ~ [1] ~ 1.5 }}"), "a1None[1]1.5");
  EXPECT_EQ(out("{{ 2 ~ 3 * 2 }}"), "26");
  EXPECT_NE(error("{{ 1 + 2 ~ 3 }}").find("unsupported operand type(s) for +: 'int' and 'str'"),
            std::string::npos);
}

TEST(JinjaInterpreter, ComparisonsAndLogic) {
  EXPECT_EQ(out("{{ 1 < 2 < 3 }}{{ 3 > 2 > 5 }}{{ 1 == 1.0 }}{{ true == 1 }}{{ [1] == [1] }}{{ 1 "
                "!= 2 }}"),
            "TrueFalseTrueTrueTrueTrue");
  EXPECT_EQ(out("{{ a == b }}", R"({"a": {"x": 1, "y": 2}, "b": {"y": 2, "x": 1}})"), "True");
  EXPECT_EQ(out("{{ 'a' < 'b' }}{{ [1, 2] < [1, 3] }}{{ 2 >= 2 }}{{ 1 <= 0 }}"),
            "TrueTrueTrueFalse");
  EXPECT_EQ(out("{{ not true or true }}{{ not (true or true) }}{{ true and false or 'z' }}{{ 0 or "
                "'' or [] }}"),
            "TrueFalsez[]");
  EXPECT_EQ(out("{{ 1 and 2 }}{{ 0 and 2 }}{{ '' or 'b' }}"), "20b");
  EXPECT_EQ(out("{{ 'a' in 'cat' }}{{ 1 in [1] }}{{ 'k' in {'k': 1} }}{{ 'k' not in {} }}{{ 'x' in "
                "undef }}"),
            "TrueTrueTrueTrueFalse");
  EXPECT_NE(error("{{ 1 < 'a' }}").find("'<' not supported between instances of 'int' and 'str'"),
            std::string::npos);
}

TEST(JinjaInterpreter, InlineIf) {
  EXPECT_EQ(
      out("{{ 1 if 0 else 2 }}{{ (1 if true else 2) + 3 }}{{ 'y' if none is none else 'n' }}"),
      "24y");
  EXPECT_EQ(out("{{ 'x' if false }}|"), "|");
}

TEST(JinjaInterpreter, IndexingAndSlicing) {
  EXPECT_EQ(out("{{ x[1:] }}{{ x[:-1] }}{{ x[::2] }}{{ x[::-1] }}{{ x[1:2] }}{{ x[:] }}",
                R"({"x": [1, 2, 3]})"),
            "[2, 3][1, 2][1, 3][3, 2, 1][2][1, 2, 3]");
  EXPECT_EQ(out("{{ 'abcdef'[4:1:-1] }} {{ 'abc'[1] }}{{ 'abc'[-1] }}{{ 'abc'[5] }}|"), "edc bc|");
  EXPECT_EQ(out("{{ 'h\xC3\xA9llo'[1:3] }}{{ 'h\xC3\xA9llo'|length }}"),
            "\xC3\xA9l5");  // characters, not bytes
  EXPECT_EQ(out("{{ messages[1:]|length }}", R"({"messages": [{"r": 1}, {"r": 2}, {"r": 3}]})"),
            "2");
}

TEST(JinjaInterpreter, StringMethods) {
  EXPECT_EQ(out("{{ '  a  '.strip() }}|{{ 'xaxx'.strip('x') }}|{{ 'xxhixx'.lstrip('x') }}|{{ "
                "'xxhixx'.rstrip('x') }}"),
            "a|a|hixx|xxhi");
  EXPECT_EQ(out("{{ 'abc'.startswith('ab') }}{{ 'abc'.startswith(('x', 'a')) }}{{ "
                "'abc'.endswith('bc') }}"),
            "TrueTrueTrue");
  EXPECT_EQ(out("{{ 'a,b'.split(',') }}{{ ' a  b '.split() }}{{ 'a b c'.split(' ', 1) }}{{ ' a b c "
                "'.rsplit(None, 1) }}"),
            "['a', 'b']['a', 'b']['a', 'b c'][' a b', 'c']");
  EXPECT_EQ(out("{{ 'Hello'.upper() }}{{ 'Hello'.lower() }}{{ 'hello world'.title() }}{{ "
                "'hELLO'.capitalize() }}"),
            "HELLOhelloHello WorldHello");
  EXPECT_EQ(out("{{ 'a-b'.replace('-', '+') }}{{ 'aaa'.count('a') }}{{ 'abc'.find('c') }}{{ "
                "'abc'.find('z') }}"),
            "a+b32-1");
  EXPECT_EQ(
      out("{{ ', '.join(['a', 'b']) }}|{{ '{} and {}'.format(1, 'x') }}|{{ '{0}{0}'.format(7) }}"),
      "a, b|1 and x|77");
  EXPECT_EQ(out("{{ 'a\\n\\nb'.splitlines() }}{{ '12'.isdigit() }}{{ 'ab'.isalpha() }}"),
            "['a', '', 'b']TrueTrue");
}

TEST(JinjaInterpreter, DictMethods) {
  EXPECT_EQ(out("{{ d.get('a') }}{{ d.get('b') }}{{ d.get('b', 'no') }}", R"({"d": {"a": 1}})"),
            "1Noneno");
  EXPECT_EQ(
      out("{{ d.items()|list }}{{ d.keys()|list }}{{ d.values()|list }}", R"({"d": {"a": 1}})"),
      "[('a', 1)]['a'][1]");
}

TEST(JinjaInterpreter, StringFilters) {
  EXPECT_EQ(out("{{ '  x '|trim }}|{{ 'xxhixx'|trim('x') }}|{{ 'hi'|upper }}{{ 'HI'|lower }}"),
            "x|hi|HIhi");
  EXPECT_EQ(out("{{ 'hello'|capitalize }}{{ 'HeLLo wORld'|title }}{{ \"it's\"|title }}"),
            "HelloHello WorldIt's");
  EXPECT_EQ(out("{{ 'aXbX'|replace('X', '-') }}{{ 'aXbX'|replace('X', '-', 1) }}"), "a-b-a-bX");
  EXPECT_EQ(out("{{ 5|string + 'x' }}{{ true|string }}{{ none|string }}"), "5xTrueNone");
  EXPECT_EQ(
      out("{{ 'a\\nb'|indent(2) }}|{{ 'a\\nb'|indent(2, true) }}|{{ 'a\\n\\nb\\n'|indent }}|"),
      "a\n  b|  a\n  b|a\n\n    b\n|");
  EXPECT_EQ(out("{{ '<a>'|e }}{{ '<a>'|safe }}{{ '%s-%d'|format('a', 3) }}"), "&lt;a&gt;<a>a-3");
}

TEST(JinjaInterpreter, SequenceFilters) {
  EXPECT_EQ(out("{{ x|length }}{{ x|count }}{{ x|first }}{{ x|last }}{{ []|first }}|",
                R"({"x": [3, 1, 2]})"),
            "3332|");
  EXPECT_EQ(out("{{ [1, 2]|join }}{{ ['a', 1]|join(', ') }}{{ x|join('/', attribute='n') }}",
                R"({"x": [{"n": "a"}, {"n": "b"}]})"),
            "12a, 1a/b");
  EXPECT_EQ(out("{{ 'abc'|list }}{{ {'a': 1, 'b': 2}|list }}{{ {'k': 'v'}|items|list }}"),
            "['a', 'b', 'c']['a', 'b'][('k', 'v')]");
  EXPECT_EQ(out("{{ [3, 1, 2]|sort }}{{ ['b', 'A', 'a']|sort }}{{ [3, 1, 2]|sort(reverse=true) "
                "}}{{ [1, 2, 3]|reverse|list }}"),
            "[1, 2, 3]['A', 'a', 'b'][3, 2, 1][3, 2, 1]");
  EXPECT_EQ(out("{{ [1, 2]|sum }}{{ [1, 5]|max }}{{ [4, 2]|min }}{{ [1, 2, 1]|unique|list }}{{ "
                "-2|abs }}"),
            "352[1, 2]2");
  EXPECT_EQ(out("{{ 3.14159|round(2) }}{{ 2.5|round }}{{ 3.5|round }}{{ 2.1|round(0, 'ceil') }}"),
            "3.142.04.03.0");
}

TEST(JinjaInterpreter, SelectAndMap) {
  const char* data =
      R"({"x": [{"role": "system", "a": 1}, {"role": "user", "a": 2}, {"role": "user", "b": 3}]})";
  EXPECT_EQ(out("{{ x|selectattr('role', 'equalto', 'user')|list|length }}", data), "2");
  EXPECT_EQ(out("{{ x|selectattr('a')|map(attribute='a')|list }}", data), "[1, 2]");
  EXPECT_EQ(out("{{ x|rejectattr('a', 'defined')|list }}", data), "[{'role': 'user', 'b': 3}]");
  EXPECT_EQ(out("{{ [1, 2, 3, 4]|select('even')|list }}{{ [1, 2, 3, 4]|reject('even')|list }}"),
            "[2, 4][1, 3]");
  EXPECT_EQ(out("{{ [1, 2]|map('string')|join('-') }}{{ ['a', 'b']|map('upper')|list }}"),
            "1-2['A', 'B']");
}

TEST(JinjaInterpreter, DefaultIntFloat) {
  EXPECT_EQ(out("{{ x|default('d') }}{{ ''|default('d') }}{{ ''|default('d', true) }}{{ "
                "none|default('d') }}"),
            "ddNone");
  EXPECT_EQ(out("{{ '3'|int + 1 }}{{ 'x'|int }}{{ 3.7|int }}{{ '2.5'|int }}{{ '2.5'|float }}{{ "
                "'x'|float }}"),
            "40322.50.0");
}

TEST(JinjaInterpreter, ToJsonIsTransformersVersion) {
  // Keys in insertion order, no HTML escaping, non-ASCII kept, ", " and ": " separators.
  EXPECT_EQ(
      out("{{ x|tojson }}",
          R"({"x": {"b": [1, 2.5, {}], "a": null, "c": "\u00e9\n\u0001\"\\<", "d": true}})"),
      "{\"b\": [1, 2.5, {}], \"a\": null, \"c\": \"\xC3\xA9\\n\\u0001\\\"\\\\<\", \"d\": true}");
  EXPECT_EQ(out("{{ x|tojson(indent=2) }}", R"({"x": {"b": [1, {}], "a": []}})"),
            "{\n  \"b\": [\n    1,\n    {}\n  ],\n  \"a\": []\n}");
  EXPECT_EQ(out("{{ x|tojson(separators=(',', ':')) }}{{ x|tojson(sort_keys=true) }}",
                R"({"x": {"b": 1, "a": [1, 2]}})"),
            "{\"b\":1,\"a\":[1,2]}{\"a\": [1, 2], \"b\": 1}");
  EXPECT_EQ(out("{{ 'x\xC3\xA9'|tojson(ensure_ascii=true) }}"), "\"x\\u00e9\"");
  EXPECT_NE(error("{{ undefined_thing|tojson }}").find("not JSON serializable"), std::string::npos);
}

TEST(JinjaInterpreter, Tests) {
  EXPECT_EQ(out("{{ x is defined }}{{ y is defined }}{{ y is undefined }}{{ x is not none }}{{ "
                "none is none }}",
                R"({"x": 1})"),
            "TrueFalseTrueTrueTrue");
  EXPECT_EQ(out("{{ m.content is string }}{{ m is mapping }}{{ [] is iterable }}{{ 'a' is sequence "
                "}}{{ 1 is number }}",
                R"({"m": {"content": "s"}})"),
            "TrueTrueTrueTrueTrue");
  EXPECT_EQ(out("{{ 1.0 is float }}{{ 1 is integer }}{{ true is boolean }}{{ true is integer }}{{ "
                "x is false }}",
                R"({"x": false})"),
            "TrueTrueTrueFalseTrue");
  EXPECT_EQ(out("{{ 1 is odd }}{{ 2 is even }}{{ 9 is divisibleby 3 }}{{ 'a' is lower }}{{ 'A' is "
                "upper }}"),
            "TrueTrueTrueTrueTrue");
  EXPECT_EQ(out("{{ 3 is eq 3 }}{{ 3 is equalto 3 }}{{ 3 is ne 3 }}{{ 1 is lt 2 }}{{ 'a' is in "
                "'abc' }}{{ f is callable }}"
                "{{ range is callable }}",
                "{}"),
            "TrueTrueFalseTrueTrueFalseTrue");
  EXPECT_EQ(out("{% if not x is defined %}nd{% endif %}{% if x is not defined %}nd2{% endif %}"),
            "ndnd2");
  EXPECT_NE(error("{{ 1 is frobnicated }}").find("no test named 'frobnicated'"), std::string::npos);
}

TEST(JinjaInterpreter, RangeAndDict) {
  EXPECT_EQ(out("{{ range(3)|list }}{{ range(1, 7, 2)|list }}{{ range(5, 0, -2)|list }}{{ "
                "range(0)|list }}"),
            "[0, 1, 2][1, 3, 5][5, 3, 1][]");
  EXPECT_EQ(out("{{ dict(a=1, b='x') }}"), "{'a': 1, 'b': 'x'}");
}

TEST(JinjaInterpreter, RaiseExceptionIsAnErrorWithItsPosition) {
  auto r = jinja_test::render(
      "line one\n{% if true %}\n  {{ raise_exception('bad roles') }}\n{% endif %}");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(r.status().message(), "template raised an exception at 3:6: bad roles");
}

TEST(JinjaInterpreter, StrftimeNowUsesTheGivenClock) {
  setenv("TZ", "UTC", 1);
  tzset();
  jinja::RenderOptions options;
  options.now = 1721995200;  // 2024-07-26 12:00:00 UTC
  auto r = jinja_test::render("{{ strftime_now('%d %b %Y %H:%M') }}", "{}", options);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(*r, "26 Jul 2024 12:00");
}

struct ErrorCase {
  const char* source;
  ErrorCode code;
  const char* message;  // the whole Status message
};

class JinjaErrorTest : public ::testing::TestWithParam<ErrorCase> {};

TEST_P(JinjaErrorTest, ReportsWhatAndWhere) {
  const ErrorCase& c = GetParam();
  auto r = jinja_test::render(c.source, R"({"s": "str", "n": 1})");
  ASSERT_FALSE(r.ok()) << c.source;
  EXPECT_EQ(r.status().code(), c.code) << c.source;
  EXPECT_EQ(r.status().message(), c.message) << c.source;
}

INSTANTIATE_TEST_SUITE_P(
    Jinja, JinjaErrorTest,
    ::testing::Values(
        ErrorCase{"a\n{% if true %}b", ErrorCode::kFormat,
                  "template syntax error at 2:4: 'if' is never closed: expected 'endif'"},
        ErrorCase{"{% for x in y %}{% endif %}", ErrorCode::kFormat,
                  "template syntax error at 1:20: expected 'endfor', got 'endif'"},
        ErrorCase{"x{% endif %}", ErrorCode::kFormat,
                  "template syntax error at 1:5: unexpected 'endif'"},
        ErrorCase{"{% include 'x' %}", ErrorCode::kFormat,
                  "template syntax error at 1:4: unknown or unsupported tag 'include'"},
        ErrorCase{"{{ x |}}", ErrorCode::kFormat,
                  "template syntax error at 1:7: expected a name, got '}}'"},
        ErrorCase{"{{ }}", ErrorCode::kFormat, "template syntax error at 1:4: unexpected '}}'"},
        ErrorCase{"\n  {{ 'abc }}", ErrorCode::kFormat,
                  "template syntax error at 2:6: unterminated string literal"},
        ErrorCase{"{# no end", ErrorCode::kFormat,
                  "template syntax error at 1:1: unterminated comment"},
        ErrorCase{"{{ a $ b }}", ErrorCode::kFormat,
                  "template syntax error at 1:6: unexpected character '$'"},
        ErrorCase{"{% break %}", ErrorCode::kFormat,
                  "template syntax error at 1:4: 'break' outside of a loop"},
        ErrorCase{"{{ s + n }}", ErrorCode::kInvalidArgument,
                  "template render error at 1:6: can only concatenate str (not \"int\") to str"},
        ErrorCase{"{{ s.upper() + x.y }}", ErrorCode::kInvalidArgument,
                  "template render error at 1:17: 'x' is undefined"},
        ErrorCase{"{{ s|frobnicate }}", ErrorCode::kInvalidArgument,
                  "template render error at 1:6: no filter named 'frobnicate'"},
        ErrorCase{"{{ n() }}", ErrorCode::kInvalidArgument,
                  "template render error at 1:4: 'int' object is not callable"},
        ErrorCase{"{{ 1 // 0 }}", ErrorCode::kInvalidArgument,
                  "template render error at 1:6: integer division or modulo by zero"},
        ErrorCase{"{{ 9223372036854775807 + 1 }}", ErrorCode::kInvalidArgument,
                  "template render error at 1:24: integer overflow"},
        ErrorCase{"{{ s.strip(1, 2) }}", ErrorCode::kInvalidArgument,
                  "template render error at 1:5: strip() takes at most 1 arguments (2 given)"}));

}  // namespace
}  // namespace tally
