// Statements: if, for (loop variables, filters, else, unpacking, break and
// continue), set (plain, tuple, namespace, block), macro, call, filter blocks,
// with, print, generation, and Jinja's scoping rules.
#include <gtest/gtest.h>

#include <thread>

#include "tokenizer/jinja/test_util.h"

namespace tessera::jinja {
namespace {

using testing::Json;
using testing::R;

TEST(StatementsTest, IfElifElse) {
  const char* t = "{% if x %}a{% elif y %}b{% else %}c{% endif %}";
  EXPECT_EQ(R(t, Json{{"x", 1}}), "a");
  EXPECT_EQ(R(t, Json{{"y", "s"}}), "b");
  EXPECT_EQ(R(t, Json{{"x", ""}, {"y", Json::array()}}), "c");
  EXPECT_EQ(R(t), "c");
}

TEST(StatementsTest, LoopVariables) {
  EXPECT_EQ(R("{% for x in 'abc' %}{{ loop.index }}{{ loop.index0 }}"
              "{{ loop.revindex }}{{ loop.revindex0 }}{{ loop.length }}"
              "{{ loop.first|int }}{{ loop.last|int }} {% endfor %}"),
            "1032310 2121300 3210301 ");
  EXPECT_EQ(R("{% for x in [1, 2, 3] %}{{ loop.previtem }}-{{ loop.nextitem }}"
              "{{ loop.cycle('o', 'e') }}|{% endfor %}"),
            "-2o|1-3e|2-o|");
}

TEST(StatementsTest, LoopFilterElseAndUnpacking) {
  EXPECT_EQ(R("{% for x in range(6) if x is even %}{{ x }}@{{ loop.index }}/"
              "{{ loop.length }} {% endfor %}"),
            "0@1/3 2@2/3 4@3/3 ");
  EXPECT_EQ(R("{% for x in [] %}{{ x }}{% else %}empty{% endfor %}"), "empty");
  EXPECT_EQ(R("{% for x in [1] if x > 5 %}{{ x }}{% else %}none{% endfor %}"),
            "none");
  EXPECT_EQ(R("{% for x in undefined_thing %}x{% else %}u{% endfor %}"), "u");
  EXPECT_EQ(R("{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}",
              Json::parse(R"({"d": {"b": 1, "a": 2}})")),
            "b=1;a=2;");
  EXPECT_EQ(R("{% for k in d %}{{ k }}{% endfor %}",
              Json::parse(R"({"d": {"b": 1, "a": 2}})")),
            "ba");
  EXPECT_EQ(R("{% for (a, b) in [(1, 2), [3, 4]] %}{{ a + b }},{% endfor %}"),
            "3,7,");
}

TEST(StatementsTest, BreakAndContinue) {
  EXPECT_EQ(R("{% for i in range(10) %}{% if i == 3 %}{% continue %}{% endif %}"
              "{% if i == 6 %}{% break %}{% endif %}{{ i }}{% endfor %}"),
            "01245");
  EXPECT_EQ(R("{% for i in [1, 2] %}{% for j in [1, 2, 3] %}{% if j == 2 %}"
              "{% break %}{% endif %}{{ i }}{{ j }} {% endfor %}{% endfor %}"),
            "11 21 ");
}

TEST(StatementsTest, SetForms) {
  EXPECT_EQ(R("{% set x = 1 %}{% set y = x + 1 %}{{ x }}{{ y }}"), "12");
  EXPECT_EQ(R("{% set a, b = 5, 6 %}{{ a }}{{ b }} {% set t = 1, 2 %}{{ t }}"),
            "56 (1, 2)");
  EXPECT_EQ(R("{% set x %}hello {{ 1 + 1 }}{% endset %}[{{ x }}]"),
            "[hello 2]");
  EXPECT_EQ(
      R("{% set x | upper | replace('L', '_') %}hello{% endset %}{{ x }}"),
      "HE__O");
}

TEST(StatementsTest, LoopScopeHidesSetsNamespaceCarriesThem) {
  // A set inside a loop is local to the iteration, as in Jinja.
  EXPECT_EQ(R("{% set x = 1 %}{% for i in range(3) %}{% set x = x + i %}{{ x }}"
              "{% endfor %}{{ x }}"),
            "1231");
  EXPECT_EQ(R("{% for i in range(3) %}[{{ y }}]{% set y = i %}{% endfor %}"),
            "[][][]");
  EXPECT_EQ(
      R("{% set ns = namespace(total=0, seen=false) %}"
        "{% for i in range(4) %}{% set ns.total = ns.total + i %}"
        "{% set ns.seen = true %}{% endfor %}{{ ns.total }} {{ ns.seen }}"),
      "6 True");
  // An if block does not open a scope.
  EXPECT_EQ(R("{% if true %}{% set z = 5 %}{% endif %}{{ z }}"), "5");
}

TEST(StatementsTest, Macros) {
  EXPECT_EQ(R("{% macro greet(name, punct='!') %}Hi {{ name }}{{ punct }}"
              "{% endmacro %}{{ greet('a') }} {{ greet('b', '?') }} "
              "{{ greet(punct='.', name='c') }}"),
            "Hi a! Hi b? Hi c.");
  EXPECT_EQ(R("{% macro m(a) %}{{ a }}{{ varargs }}{{ kwargs }}{% endmacro %}"
              "{{ m(1, 2, 3, x=4) }}"),
            "1(2, 3){'x': 4}");
  EXPECT_EQ(R("{% macro m(a, b=a * 2) %}{{ a }},{{ b }},[{{ c }}]{% endmacro %}"
              "{{ m(3) }}"),
            "3,6,[]");
  // Macros see the template's variables and can recurse.
  EXPECT_EQ(R("{% set sep = '.' %}{% macro count(n) %}{{ n }}{{ sep }}"
              "{% if n > 0 %}{{ count(n - 1) }}{% endif %}{% endmacro %}"
              "{{ count(3) }}"),
            "3.2.1.0.");
}

TEST(StatementsTest, CallBlocks) {
  EXPECT_EQ(R("{% macro wrap(tag) %}<{{ tag }}>{{ caller() }}</{{ tag }}>"
              "{% endmacro %}{% call wrap('b') %}inner{% endcall %}"),
            "<b>inner</b>");
  EXPECT_EQ(R("{% macro each(items) %}{% for i in items %}{{ caller(i) }}"
              "{% endfor %}{% endmacro %}{% call(x) each([1, 2]) %}[{{ x }}]"
              "{% endcall %}"),
            "[1][2]");
}

TEST(StatementsTest, FilterWithPrintAndGeneration) {
  EXPECT_EQ(R("{% filter upper %}abc{{ 'd' }}{% endfilter %}"), "ABCD");
  EXPECT_EQ(R("{% filter trim | upper %}  x  {% endfilter %}"), "X");
  EXPECT_EQ(R("{% with a = 1, b = 2 %}{{ a + b }}{% endwith %}[{{ a }}]"),
            "3[]");
  EXPECT_EQ(R("{% print 1 + 1 %}"), "2");
  // Hugging Face's {% generation %} marks assistant text; it renders in
  // place.
  EXPECT_EQ(R("a{% generation %}b{{ 'c' }}{% endgeneration %}d"), "abcd");
}

TEST(StatementsTest, RaiseExceptionStopsTheRender) {
  auto s = testing::Err(
      "{% for m in messages %}\n{% if m.role not in ['user', 'assistant'] %}\n"
      "{{ raise_exception('Only user and assistant roles are supported!') }}\n"
      "{% endif %}{% endfor %}",
      Json::parse(R"({"messages": [{"role": "tool"}]})"));
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "line 3: the chat template raised an error: Only user and "
            "assistant roles are supported!");
}

TEST(StatementsTest, ConcurrentRendersOfOneTemplateAreIndependent) {
  auto t = Template::Parse(
      "{% set ns = namespace(n=0) %}{% for m in xs %}{% set ns.n = ns.n + m %}"
      "{% endfor %}{{ ns.n }}");
  ASSERT_TRUE(t.ok());
  std::vector<std::thread> threads;
  std::vector<std::string> results(8);
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&, i] {
      Json vars = {{"xs", Json::array()}};
      for (int k = 0; k <= i * 100; ++k) vars["xs"].push_back(k);
      auto r = t->RenderJson(vars);
      results[i] = r.ok() ? *r : r.status().ToString();
    });
  }
  for (auto& th : threads) th.join();
  for (int i = 0; i < 8; ++i) {
    const int n = i * 100;
    EXPECT_EQ(results[i], std::to_string(n * (n + 1) / 2));
  }
}

}  // namespace
}  // namespace tessera::jinja
