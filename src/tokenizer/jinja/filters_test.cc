#include <gtest/gtest.h>

#include "tokenizer/jinja/test_util.h"

namespace tessera::jinja {
namespace {

using testing::Json;
using testing::R;

TEST(FiltersTest, StringFilters) {
  EXPECT_EQ(R("[{{ '  ab  '|trim }}|{{ 'xxaxx'|trim('x') }}]"), "[ab|a]");
  EXPECT_EQ(
      R("{{ 'ab'|upper }} {{ 'AB'|lower }} {{ 'hello wORLD'|capitalize }}"),
      "AB ab Hello world");
  EXPECT_EQ(R("{{ 'hello wORLD-foo (bar'|title }}"), "Hello World-Foo (Bar");
  EXPECT_EQ(R("{{ 'aaa'|replace('a', 'b') }} {{ 'aaa'|replace('a', 'b', 2) }}"),
            "bbb bba");
  EXPECT_EQ(R("{{ 12|string ~ 'x' }} {{ [1]|string }} {{ none|string }}"),
            "12x [1] None");
  EXPECT_EQ(
      R("{{ '<a href=\"x\">&\\''|e }} {{ '<b>'|escape }} {{ '<b>'|safe }}"),
      "&lt;a href=&#34;x&#34;&gt;&amp;&#39; &lt;b&gt; <b>");
}

TEST(FiltersTest, Indent) {
  EXPECT_EQ(R("[{{ 'a\\nb\\n\\nc'|indent }}]"), "[a\n    b\n\n    c]");
  EXPECT_EQ(R("[{{ 'a\\nb'|indent(2, true) }}]"), "[  a\n  b]");
  EXPECT_EQ(R("[{{ 'a\\n\\nb'|indent(2, blank=true) }}]"), "[a\n  \n  b]");
  EXPECT_EQ(R("[{{ 'x\\ny'|indent('> ', first=true) }}]"), "[> x\n> y]");
  EXPECT_EQ(R("[{{ 'a\\n'|indent(2) }}]"), "[a\n]");
}

TEST(FiltersTest, DefaultAndLength) {
  EXPECT_EQ(R("{{ x|default('d') }} [{{ ''|default('d') }}] "
              "{{ ''|default('d', true) }} {{ none|default('d') }} "
              "{{ x|d('e') }} {{ 0|default(5, boolean=true) }}"),
            "d [] d None e 5");
  EXPECT_EQ(R("{{ [1, 2]|length }} {{ 'héllo'|length }} {{ {'a': 1}|length }} "
              "{{ x|length }} {{ [1, 2, 3]|count }}"),
            "2 5 1 0 3");
}

TEST(FiltersTest, SequenceFilters) {
  EXPECT_EQ(R("{{ [1, 2, 3]|join(',') }} {{ [1, 2]|join }} "
              "{{ [{'n': 'a'}, {'n': 'b'}]|join('/', attribute='n') }}"),
            "1,2,3 12 a/b");
  EXPECT_EQ(R("{{ [1, 2, 3]|first }} {{ [1, 2, 3]|last }} {{ 'abc'|first }} "
              "[{{ []|first }}] {{ {'k': 1}|first }}"),
            "1 3 a [] k");
  EXPECT_EQ(R("{{ 'abc'|list }} {{ {'a': 1, 'b': 2}|list }} {{ (1, 2)|list }}"),
            "['a', 'b', 'c'] ['a', 'b'] [1, 2]");
  EXPECT_EQ(R("{{ {'a': 1, 'b': [2]}|items|list }} {{ x|items|list }}"),
            "[('a', 1), ('b', [2])] []");
  EXPECT_EQ(R("{{ [1, 2, 3]|reverse|list }} {{ 'héllo'|reverse }}"),
            "[3, 2, 1] olléh");
  EXPECT_EQ(R("{{ [3, 1, 2]|sort }} {{ [3, 1, 2]|sort(reverse=true) }} "
              "{{ ['b', 'A', 'c']|sort }} {{ ['b', 'A', "
              "'c']|sort(case_sensitive=true) }}"),
            "[1, 2, 3] [3, 2, 1] ['A', 'b', 'c'] ['A', 'b', 'c']");
  EXPECT_EQ(R("{{ ['B', 'a', 'b', 'A']|unique|list }} "
              "{{ ['B', 'a', 'b']|unique(case_sensitive=true)|list }}"),
            "['B', 'a'] ['B', 'a', 'b']");
  EXPECT_EQ(R("{{ [1, 2, 3]|sum }} {{ [3, 1, 2]|min }} {{ [3, 1, 2]|max }} "
              "{{ ['b', 'A']|min }}"),
            "6 1 3 A");
}

TEST(FiltersTest, SelectRejectMapAndAttributes) {
  const Json vars = Json::parse(R"({"users": [
      {"name": "a", "active": true, "role": "admin", "age": 30},
      {"name": "C", "active": false, "role": "user", "age": 20},
      {"name": "b", "active": true, "role": "user", "age": 25}]})");
  EXPECT_EQ(
      R("{{ users|selectattr('active')|map(attribute='name')|join(',') }}",
        vars),
      "a,b");
  EXPECT_EQ(
      R("{{ users|rejectattr('active')|map(attribute='name')|list }}", vars),
      "['C']");
  EXPECT_EQ(R("{{ users|selectattr('role', 'equalto', 'user')|list|length }} "
              "{{ users|selectattr('role', '==', "
              "'admin')|first|attr('get')('name') }}",
              vars),
            "2 a");
  EXPECT_EQ(R("{{ users|map(attribute='missing', default='?')|list }}", vars),
            "['?', '?', '?']");
  EXPECT_EQ(
      R("{{ users|sort(attribute='name')|map(attribute='name')|join }} "
        "{{ users|sort(attribute='age', reverse=true)|map(attribute='name')"
        "|join }}",
        vars),
      "abC abC");
  EXPECT_EQ(
      R("{{ [1, 2, 3, 4]|select('odd')|list }} "
        "{{ [1, 2, 3, 4]|reject('odd')|list }} {{ [0, 1, '']|select|list }} "
        "{{ ['a', 'b']|map('upper')|list }} "
        "{{ [1.5, 2.5]|map('round', 0, 'floor')|list }}"),
      "[1, 3] [2, 4] [1] ['A', 'B'] [1.0, 2.0]");
  EXPECT_EQ(R("{{ {'b': 2, 'a': 1, 'C': 0}|dictsort }} "
              "{{ {'b': 2, 'a': 1}|dictsort(by='value', reverse=true) }}"),
            "[('a', 1), ('b', 2), ('C', 0)] [('b', 2), ('a', 1)]");
}

TEST(FiltersTest, Numbers) {
  EXPECT_EQ(
      R("{{ '42'|int + 1 }} {{ '4.7'|int }} {{ 'x'|int }} {{ 'x'|int(7) }} "
        "{{ 3.9|int }} {{ true|int }} {{ 'ff'|int(base=16) }}"),
      "43 4 0 7 3 1 255");
  EXPECT_EQ(R("{{ '2.5'|float }} {{ 3|float }} {{ 'x'|float }} {{ "
              "none|float(1.5) }}"),
            "2.5 3.0 0.0 1.5");
  EXPECT_EQ(
      R("{{ 2.5|round }} {{ 3.5|round }} {{ 2.675|round(2) }} {{ 5|round }} "
        "{{ 2.1|round(0, 'ceil') }} {{ 2.9|round(method='floor') }} "
        "{{ 1234.5|round(-2) }}"),
      "2.0 4.0 2.67 5 3.0 2.0 1200.0");
  EXPECT_EQ(R("{{ -3|abs }} {{ -3.5|abs }} {{ (0 - 3)|abs }}"), "3 3.5 3");
}

}  // namespace
}  // namespace tessera::jinja
