// The render budget: templates that never end or grow without bound fail
// with an error naming the limit, quickly and without exhausting memory;
// real-sized work stays within it.
#include "tokenizer/jinja/render_budget.h"

#include <gtest/gtest.h>

#include <string>

#include "tokenizer/jinja/test_util.h"
#include "tokenizer/jinja/text.h"

namespace tessera::jinja {
namespace {

using testing::Err;
using testing::R;

void ExpectErrorHas(const Status& s, const std::string& words) {
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
  EXPECT_NE(s.message().find(words), std::string::npos) << s.ToString();
}

TEST(RenderBudgetTest, NestedLoopsThatNeverEndRunOutOfSteps) {
  ExpectErrorHas(Err("{% for a in range(100000) %}{% for b in range(100000) %}"
                     "{% for c in range(100000) %}{% endfor %}{% endfor %}"
                     "{% endfor %}"),
                 "more than 10000000 steps");
}

TEST(RenderBudgetTest, StringDoublingIsStoppedAtTheStringLimit) {
  ExpectErrorHas(
      Err("{% set ns = namespace(s='x') %}{% for i in range(64) %}"
          "{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s|length }}"),
      "the concatenated string would be");
  ExpectErrorHas(Err("{% set ns = namespace(s='x') %}{% for i in range(64) %}"
                     "{% set ns.s = ns.s + ns.s %}{% endfor %}"),
                 "MiB for one string");
}

TEST(RenderBudgetTest, ReplaceJoinAndRepeatBombsAreRefusedBeforeBuilding) {
  const std::string mega = "{% set m = 'a' * 1000000 %}";
  ExpectErrorHas(Err(mega + "{{ m|replace('a', m) }}"),
                 "the result of 'replace' would be 1000000000000 bytes");
  ExpectErrorHas(Err(mega + "{{ m.replace('a', m) }}"),
                 "the result of str.replace");
  ExpectErrorHas(Err(mega + "{{ ([m] * 100) | join(m) }}"), "joined string");
  ExpectErrorHas(Err(mega + "{{ m.join([m] * 100) }}"), "str.join");
  ExpectErrorHas(Err("{{ 'x' * 1000000000000 }}"), "the repeated string");
  ExpectErrorHas(Err("{{ [1] * 1000000000000 }}"), "too large");
}

TEST(RenderBudgetTest, ManyStringsKeptInAListExhaustTheCreatedBytes) {
  // Each string is under the one-string limit; together they pass the
  // render's total.
  ExpectErrorHas(Err("{% set ns = namespace(l=[]) %}"
                     "{% for i in range(1000) %}"
                     "{% set ns.l = ns.l + ['x' * 10000000] %}{% endfor %}"),
                 "MiB of strings");
}

TEST(RenderBudgetTest, OutputIsBounded) {
  ExpectErrorHas(Err("{% for i in range(100) %}{{ 'y' * 1000000 }}"
                     "{% endfor %}"),
                 "the rendered output would be");
}

TEST(RenderBudgetTest, OrdinaryWorkFitsEasily) {
  EXPECT_EQ(R("{% for i in range(1000) %}{{ i % 10 }}{% endfor %}").size(),
            1000u);
  EXPECT_EQ(R("{{ ('ab' * 1000)|replace('a', 'xyz')|length }}"), "4000");
}

TEST(RenderBudgetTest, ReplacedSizeMatchesReplace) {
  struct Case {
    std::string s, old_s, repl;
    int64_t count;
  };
  for (const Case& c : std::initializer_list<Case>{{"aXbXc", "X", "yy", -1},
                                                   {"aXbXc", "X", "", -1},
                                                   {"aXbXc", "X", "yy", 1},
                                                   {"aXbXc", "X", "yy", 0},
                                                   {"héllo", "", "-", -1},
                                                   {"héllo", "", "-", 2},
                                                   {"aaaa", "aa", "b", -1},
                                                   {"", "", "zz", -1}}) {
    EXPECT_EQ(text::ReplacedSize(c.s, c.old_s, c.repl, c.count),
              text::Replace(c.s, c.old_s, c.repl, c.count).size())
        << c.s << " " << c.old_s << " " << c.repl << " " << c.count;
  }
}

}  // namespace
}  // namespace tessera::jinja
