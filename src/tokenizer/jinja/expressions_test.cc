// Expressions: literals, operators and precedence, attribute/item access,
// slicing, tests, calls, methods and globals.
#include <gtest/gtest.h>

#include "tokenizer/jinja/test_util.h"

namespace tessera::jinja {
namespace {

using testing::Json;
using testing::R;

TEST(ExpressionsTest, LiteralsPrintAsPythonStr) {
  EXPECT_EQ(R("{{ 1 }} {{ -2 }} {{ 1.5 }} {{ 10.0 }} {{ 'a' }} {{ \"b\" }}"),
            "1 -2 1.5 10.0 a b");
  EXPECT_EQ(R("{{ true }} {{ True }} {{ false }} {{ none }} {{ None }}"),
            "True True False None None");
  EXPECT_EQ(R("{{ [1, 'a', none, true, 2.0] }}"), "[1, 'a', None, True, 2.0]");
  EXPECT_EQ(R("{{ {'k': 'v', 'n': [1]} }}"), "{'k': 'v', 'n': [1]}");
  EXPECT_EQ(R("{{ (1, 2) }} {{ (1,) }} {{ () }} {{ [] }} {{ {} }}"),
            "(1, 2) (1,) () [] {}");
  EXPECT_EQ(R("{{ 'it\\'s' }} {{ ['it\\'s'] }}"), "it's [\"it's\"]");
  EXPECT_EQ(R("{{ 'a\\tb\\u00e9\\x41\\101' }}|{{ 'c:\\d' }}"), "a\tbéAA|c:\\d");
  EXPECT_EQ(R("{{ 'con' 'cat' }}"), "concat");
  EXPECT_EQ(R("{{ 1_000 + 0x10 }} {{ 1.5e3 }} {{ 2E-2 }}"), "1016 1500.0 0.02");
}

TEST(ExpressionsTest, ArithmeticHasPythonSemantics) {
  EXPECT_EQ(R("{{ 1 + 2 }} {{ 7 - 10 }} {{ 3 * 4 }} {{ 7 / 2 }} {{ 6 / 3 }}"),
            "3 -3 12 3.5 2.0");
  EXPECT_EQ(R("{{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} "
              "{{ 10 % -3 }}"),
            "3 -4 1 2 -2");
  EXPECT_EQ(R("{{ 7.5 // 2 }} {{ -10.5 % 3 }} {{ 2 ** 10 }} {{ 2 ** -1 }}"),
            "3.0 1.5 1024 0.5");
  EXPECT_EQ(R("{{ 0.1 + 0.2 }} {{ true + 1 }} {{ 1 + 2.0 }}"),
            "0.30000000000000004 2 3.0");
  EXPECT_EQ(R("{{ 'ab' + 'cd' }} {{ 'ab' * 3 }} {{ 2 * [0] }} {{ [1] + [2] }}"),
            "abcd ababab [0, 0] [1, 2]");
  EXPECT_EQ(R("{{ -(3) }} {{ +4 }} {{ - 2.5 }}"), "-3 4 -2.5");
}

TEST(ExpressionsTest, PrecedenceFollowsJinja) {
  EXPECT_EQ(R("{{ 1 + 2 * 3 - 4 / 2 }}"), "5.0");
  EXPECT_EQ(R("{{ 2 ** 3 ** 2 }}"), "64");  // left-associative in Jinja
  EXPECT_EQ(R("{{ 'n=' ~ 1 ~ none }}"), "n=1None");
  EXPECT_EQ(R("{{ [1, 2, 3]|length - 1 }}"), "2");  // filter binds tightest
  EXPECT_EQ(R("{{ -2|abs }}"), "2");
  EXPECT_EQ(R("{{ not true or true }} {{ not (true or true) }}"), "True False");
  EXPECT_EQ(R("{{ 1 + 1 == 2 and 'a' in 'cat' }}"), "True");
}

TEST(ExpressionsTest, ComparisonsAndMembership) {
  EXPECT_EQ(R("{{ 1 == 1.0 }} {{ 1 == '1' }} {{ 'a' != 'b' }} {{ true == 1 }}"),
            "True False True True");
  EXPECT_EQ(R("{{ 1 < 2 < 3 }} {{ 3 > 2 > 2 }} {{ 'a' < 'b' }} "
              "{{ [1, 2] < [1, 3] }} {{ 2 >= 2.0 }}"),
            "True False True True True");
  EXPECT_EQ(R("{{ (1, 2) == [1, 2] }} {{ [1, [2]] == [1, [2]] }} "
              "{{ {'a': 1, 'b': 2} == {'b': 2, 'a': 1} }}"),
            "False True True");
  EXPECT_EQ(R("{{ 'a' in ['a'] }} {{ 'z' not in 'abc' }} {{ 'k' in {'k': 1} }} "
              "{{ 'ell' in 'hello' }} {{ 1 in [1.0] }}"),
            "True True True True True");
}

TEST(ExpressionsTest, AndOrReturnTheDecidingOperand) {
  EXPECT_EQ(R("{{ 1 and 2 }} {{ 0 and 2 }} {{ 0 or 'x' }} {{ '' or [] }} "
              "{{ none or 'd' }}"),
            "2 0 x [] d");
  EXPECT_EQ(R("{{ not 0 }} {{ not 'a' }} {{ not [] }} {{ not x }}"),
            "True False True True");
}

TEST(ExpressionsTest, ConditionalExpression) {
  EXPECT_EQ(R("{{ 'a' if true else 'b' }} {{ 'a' if false else 'b' }}"), "a b");
  EXPECT_EQ(R("[{{ 'a' if false }}]"), "[]");
  EXPECT_EQ(R("{{ 'a' if false else 'b' if true else 'c' }}"), "b");
}

TEST(ExpressionsTest, AttributeAndItemAccess) {
  const Json vars = Json::parse(
      R"({"m": {"role": "user", "content": "hi", "items": [1]},
          "l": [10, 20, 30], "s": "héllo"})");
  EXPECT_EQ(R("{{ m.role }} {{ m['content'] }} {{ l[0] }} {{ l[-1] }} "
              "{{ l.1 }} {{ s[1] }}",
              vars),
            "user hi 10 30 20 é");
  // Missing keys and indices are undefined: empty when printed.
  EXPECT_EQ(
      R("[{{ m.nope }}{{ m['nope'] }}{{ l[9] }}{{ none.x }}{{ 3[0] }}]", vars),
      "[]");
  EXPECT_EQ(R("{{ m.nope is defined }} {{ m.role is defined }}", vars),
            "False True");
  // Attribute lookup finds dict methods before keys; subscripts find keys.
  EXPECT_EQ(R("{{ m['items'] }} {{ m.items()|list|length }}", vars), "[1] 3");
}

TEST(ExpressionsTest, SlicingHasPythonSemantics) {
  const Json vars = Json::parse(R"({"l": [1, 2, 3, 4, 5], "s": "héllo"})");
  EXPECT_EQ(R("{{ l[1:3] }} {{ l[:2] }} {{ l[3:] }} {{ l[::-1] }} "
              "{{ l[::2] }} {{ l[-2:] }} {{ l[-10:10] }} {{ l[4:1:-2] }}",
              vars),
            "[2, 3] [1, 2] [4, 5] [5, 4, 3, 2, 1] [1, 3, 5] [4, 5] "
            "[1, 2, 3, 4, 5] [5, 3]");
  EXPECT_EQ(
      R("{{ s[::-1] }} {{ s[1:3] }} {{ s[:none] }} {{ (1, 2, 3)[1:] }}", vars),
      "olléh él héllo (2, 3)");
}

TEST(ExpressionsTest, Tests) {
  EXPECT_EQ(R("{{ x is defined }} {{ x is undefined }} {{ x is not defined }} "
              "{{ none is none }} {{ 0 is none }}"),
            "False True True True False");
  EXPECT_EQ(R("{{ 'a' is string }} {{ 1 is number }} {{ true is number }} "
              "{{ 1.5 is number }} {{ 'a' is number }}"),
            "True True True True False");
  EXPECT_EQ(R("{{ 1 is integer }} {{ true is integer }} {{ 1.0 is float }} "
              "{{ true is boolean }} {{ 1 is boolean }}"),
            "True False True True False");
  EXPECT_EQ(R("{{ true is true }} {{ 1 is true }} {{ false is false }} "
              "{{ 0 is false }}"),
            "True False True False");
  EXPECT_EQ(R("{{ {} is mapping }} {{ [] is mapping }} {{ [] is iterable }} "
              "{{ 'a' is iterable }} {{ 1 is iterable }} {{ 'a' is sequence }} "
              "{{ 1 is sequence }}"),
            "True False True True False True False");
  EXPECT_EQ(R("{{ 2 is even }} {{ 3 is odd }} {{ 3 is even }} "
              "{{ 6 is divisibleby 3 }} {{ 6 is divisibleby(4) }}"),
            "True True False True False");
  EXPECT_EQ(R("{{ 1 is eq 1 }} {{ 1 is equalto 2 }} {{ 1 is ne 2 }} "
              "{{ 1 is lt 2 }} {{ 2 is ge 3 }} {{ 'a' is in 'abc' }}"),
            "True False True True False True");
  EXPECT_EQ(R("{{ 'ab' is lower }} {{ 'AB' is upper }} {{ range is callable }} "
              "{{ none is sameas none }} {{ 'upper' is filter }} "
              "{{ 'odd' is test }}"),
            "True True True True True True");
}

TEST(ExpressionsTest, StringMethods) {
  EXPECT_EQ(R("{{ 'Hello'.startswith('He') }} {{ 'abc'.endswith(('x', 'c')) }} "
              "{{ 'abc'.startswith('b', 1) }}"),
            "True True True");
  EXPECT_EQ(R("{{ 'a,b,,c'.split(',') }} {{ ' a  b '.split() }} "
              "{{ 'a,b,c'.rsplit(',', 1) }} {{ 'a b c'.split(' ', 1) }}"),
            "['a', 'b', '', 'c'] ['a', 'b'] ['a,b', 'c'] ['a', 'b c']");
  EXPECT_EQ(R("[{{ '  x  '.strip() }}|{{ 'xxyxx'.lstrip('x') }}|"
              "{{ 'xxyxx'.rstrip('x') }}|{{ '\\n\\nz\\n'.strip('\\n') }}]"),
            "[x|yxx|xxy|z]");
  EXPECT_EQ(R("{{ 'abc'.upper() }} {{ 'ABC'.lower() }} "
              "{{ 'hello world'.title() }} {{ 'hELLO'.capitalize() }}"),
            "ABC abc Hello World Hello");
  EXPECT_EQ(
      R("{{ 'aXbX'.replace('X', '-') }} {{ 'aXbX'.replace('X', '-', 1) }} "
        "{{ 'héllo'.find('l') }} {{ 'hello'.find('z') }} "
        "{{ 'hello'.rfind('l') }} {{ 'hello'.count('l') }}"),
      "a-b- a-bX 2 -1 3 2");
  EXPECT_EQ(R("{{ '{} and {}'.format(1, 'x') }} {{ '{0}{name}{{}}'.format('a', "
              "name='b') }} {{ '{!r}'.format('q') }}"),
            "1 and x ab{} 'q'");
  EXPECT_EQ(R("{{ '-'.join(['a', 'b']) }} {{ 'a\\nb\\r\\nc'.splitlines() }} "
              "{{ 'pre_x'.removeprefix('pre_') }} {{ ' \\t'.isspace() }}"),
            "a-b ['a', 'b', 'c'] x True");
  // The Qwen3 idiom for reasoning content.
  EXPECT_EQ(R("{{ c.split('</think>')[-1].lstrip('\\n') }}|"
              "{{ c.split('</think>')[0].rstrip('\\n').split('<think>')[-1]"
              ".lstrip('\\n') }}",
              Json{{"c", "<think>\nplan\n</think>\n\nanswer"}}),
            "answer|plan");
}

TEST(ExpressionsTest, DictAndListMethods) {
  const Json vars = Json::parse(R"({"d": {"a": 1, "b": 2}, "l": [1, 2, 1]})");
  EXPECT_EQ(R("{{ d.get('a') }} {{ d.get('z', 'def') }} {{ d.get('z') }} "
              "{{ d.keys()|list }} {{ d.values()|list }} {{ d.items()|list }}",
              vars),
            "1 def None ['a', 'b'] [1, 2] [('a', 1), ('b', 2)]");
  EXPECT_EQ(R("{{ l.count(1) }} {{ l.index(2) }}", vars), "2 1");
}

TEST(ExpressionsTest, Globals) {
  EXPECT_EQ(R("{{ range(3)|list }} {{ range(1, 10, 3)|list }} "
              "{{ range(5, 0, -2)|list }}"),
            "[0, 1, 2] [1, 4, 7] [5, 3, 1]");
  EXPECT_EQ(R("{{ dict(a=1, b=2) }} {{ dict({'x': 1}, y=2) }} "
              "{{ namespace(x=1).x }}"),
            "{'a': 1, 'b': 2} {'x': 1, 'y': 2} 1");
  // strftime_now formats the current local time.
  const std::string year = R("{{ strftime_now('%Y') }}");
  ASSERT_EQ(year.size(), 4u) << year;
  EXPECT_GE(std::stoi(year), 2024);
}

}  // namespace
}  // namespace tessera::jinja
