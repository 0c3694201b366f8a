// White-space control as transformers' Jinja2 environment applies it (trim_blocks and
// lstrip_blocks on, keep_trailing_newline off). Each expected string is Jinja2 3.1's output.
#include "chat_template_test_util.h"

namespace tally {
namespace {

using jinja_test::out;

TEST(JinjaWhitespace, TrimBlocksDropsTheNewlineAfterABlockTag) {
  EXPECT_EQ(out("{% if true %}\nyes\n{% endif %}\nafter"), "yes\nafter");
  EXPECT_EQ(out("{% for i in range(3) %}\n{{ i }}\n{% endfor %}\n"), "0\n1\n2\n");
  // Not after {{ }}: only block and comment tags.
  EXPECT_EQ(out("{{ 'a' }}\n{{ 'b' }}\n"), "a\nb");
}

TEST(JinjaWhitespace, LstripBlocksDropsIndentBeforeABlockTag) {
  EXPECT_EQ(out("{% if true %}\n    a\n{% else %}\n    b\n{% endif %}\nc"), "    a\nc");
  EXPECT_EQ(out("  {% if true %}x{% endif %}"), "x");  // at the template start
  EXPECT_EQ(out("{% if 1 %}\n  {% if 1 %}y{% endif %}{% endif %}"),
            "y");                                          // after a trimmed newline
  EXPECT_EQ(out("a  {% if true %}x{% endif %}"), "a  x");  // text before it on the line
  EXPECT_EQ(out("{{ 1 }}  {% if 1 %}y{% endif %}"), "1  y");
  EXPECT_EQ(out("a\n  {{ 1 }}\nb"), "a\n  1\nb");  // never before {{
  EXPECT_EQ(out("a\n  {# c #}\nb"), "a\nb");       // comments too
}

TEST(JinjaWhitespace, MinusStripsAllWhitespaceOnItsSide) {
  EXPECT_EQ(out("a\n  {%- if true %}\nx{% endif %}\nb"), "axb");
  EXPECT_EQ(out("{%- set x = 3 -%}\n  {{- x -}}  \n"), "3");
  EXPECT_EQ(out("{% for i in range(3) -%}\n{{ i }}\n{%- endfor %}"), "012");
  EXPECT_EQ(out("x {# c -#}  \n y"), "x y");
  EXPECT_EQ(out("x {#- c #}\n y"), "x y");
  EXPECT_EQ(out("{%- if x -%}\n yes \n{%- endif -%}\n|", R"({"x": 1})"), "yes|");
}

TEST(JinjaWhitespace, PlusOptsOut) {
  EXPECT_EQ(out("x\n\t {%+ if 1 %}y{% endif %}"), "x\n\t y");  // no lstrip
  EXPECT_EQ(out("x\n {% if 1 +%}\ny{% endif %}"), "x\n\ny");   // no trim of the newline
}

TEST(JinjaWhitespace, RawBlocks) {
  EXPECT_EQ(out("a\n{% raw %}  {{ x }} {% endraw %}\nb"), "a\n  {{ x }} b");
  EXPECT_EQ(out("{% raw -%}  x  {%- endraw %}|"), "x|");
  EXPECT_EQ(out("  {% raw %}x{% endraw %}\n|"), "x|");
}

TEST(JinjaWhitespace, NewlinesAreNormalizedAndOneTrailingNewlineDropped) {
  EXPECT_EQ(out("{% if 1 %}\r\ny{% endif %}\r\n"), "y");
  EXPECT_EQ(out("a\r\nb\rc"), "a\nb\nc");
  EXPECT_EQ(out("a\n"), "a");
  EXPECT_EQ(out("a\n\n"), "a\n");
}

TEST(JinjaWhitespace, DelimitersInsideStringsAndDicts) {
  EXPECT_EQ(out("{{ '}}' }}{{ {'a': {'b': 1}} }}{{ '%}' }}"), "}}{'a': {'b': 1}}%}");
  EXPECT_EQ(out("{% set d = {'k': '{{'} %}{{ d.k }}"), "{{");
}

}  // namespace
}  // namespace tally
