#include "tokenizer/jinja/lexer.h"

#include <gtest/gtest.h>

#include "tokenizer/jinja/test_util.h"

namespace tessera::jinja {
namespace {

using testing::R;

std::vector<Token> Lex(std::string_view source, LexerOptions options = {}) {
  auto tokens = Tokenize(source, options);
  EXPECT_TRUE(tokens.ok()) << tokens.status().ToString();
  return tokens.ok() ? *tokens : std::vector<Token>{};
}

TEST(LexerTest, TokenKindsValuesAndLines) {
  const auto t = Lex("hi\n{{ name|upper }}\n{% if x >= 1.5e1 %}'s'{% endif %}");
  ASSERT_EQ(t.size(), 18u);
  EXPECT_EQ(t[0].kind, TokenKind::kText);
  EXPECT_EQ(t[0].text, "hi\n");
  EXPECT_EQ(t[1].kind, TokenKind::kVariableBegin);
  EXPECT_EQ(t[1].line, 2);
  EXPECT_EQ(t[2].kind, TokenKind::kName);
  EXPECT_EQ(t[3].kind, TokenKind::kOperator);
  EXPECT_EQ(t[3].text, "|");
  EXPECT_EQ(t[5].kind, TokenKind::kVariableEnd);
  EXPECT_EQ(t[6].text, "\n");
  EXPECT_EQ(t[7].kind, TokenKind::kBlockBegin);
  EXPECT_EQ(t[7].line, 3);
  EXPECT_EQ(t[10].text, ">=");
  EXPECT_EQ(t[11].kind, TokenKind::kFloat);
  EXPECT_DOUBLE_EQ(t[11].float_value, 15.0);
  EXPECT_EQ(t[12].kind, TokenKind::kBlockEnd);
  EXPECT_EQ(t[13].text, "'s'");  // quotes outside tags are text
  EXPECT_EQ(t.back().kind, TokenKind::kEnd);
}

TEST(LexerTest, NumbersAndStrings) {
  const auto t =
      Lex(R"({{ 1_000 0x1F 0o17 0b101 2.5 1e3 'a\n\'b' "\u00e9\x41" }})");
  ASSERT_GE(t.size(), 10u);
  EXPECT_EQ(t[1].int_value, 1000);
  EXPECT_EQ(t[2].int_value, 31);
  EXPECT_EQ(t[3].int_value, 15);
  EXPECT_EQ(t[4].int_value, 5);
  EXPECT_EQ(t[5].kind, TokenKind::kFloat);
  EXPECT_EQ(t[6].kind, TokenKind::kFloat);
  EXPECT_EQ(t[7].text, "a\n'b");
  EXPECT_EQ(t[8].text, "éA");
}

TEST(LexerTest, TagEndsOnlyWhereBracketsBalance) {
  EXPECT_EQ(R("{{ {'a': {'b': 1}} }}"), "{'a': {'b': 1}}");
  EXPECT_EQ(R("{{ {'a': 1}['a'] }}"), "1");
}

TEST(LexerTest, TrimBlocksDropsTheNewlineAfterBlockAndCommentTags) {
  EXPECT_EQ(R("a\n{% if true %}\nb\n{% endif %}\nc\n"), "a\nb\nc");
  EXPECT_EQ(R("x\n{# note #}\ny"), "x\ny");
  // Not after a variable tag.
  EXPECT_EQ(R("{{ 'a' }}\n{{ 'b' }}"), "a\nb");
}

TEST(LexerTest, LstripBlocksDropsIndentBeforeBlockTagsOnly) {
  EXPECT_EQ(R("a\n  {% if true %}\n  b\n  {% endif %}\nc"), "a\n  b\nc");
  // Text before the tag on the same line: kept.
  EXPECT_EQ(R("a  {% if true %}  b  {% endif %}  c"), "a    b    c");
  // A variable tag is not a block tag.
  EXPECT_EQ(R("  {{ 'x' }}\n  {% if true %}y{% endif %}"), "  x\ny");
  // After a tag that did not end its line, the next tag is not at a line
  // start.
  EXPECT_EQ(R("{{ 'a' }}  {% if true %}x{% endif %}"), "a  x");
  EXPECT_EQ(R("{% if true %}a{% endif %}  {% if true %}b{% endif %}"), "a  b");
  EXPECT_EQ(R("x\n  {# c #}\ny"), "x\ny");
}

TEST(LexerTest, MinusStripsAllWhitespacePlusKeepsIt) {
  EXPECT_EQ(R("a\n  {%- if true -%}\n  b  \n  {%- endif -%}\n  c"), "abc");
  EXPECT_EQ(R("a {{- 'b' -}} c"), "abc");
  EXPECT_EQ(R("z {#- strip -#}   w"), "zw");
  // Whitespace is Python's: Unicode spaces count.
  EXPECT_EQ(R("a\u3000{{- 'b' -}}\u00a0\n c"), "abc");
  EXPECT_EQ(R("a\n  {%+ if true %}\nb\n  {% endif +%}\nc"), "a\n  b\n\nc");
}

TEST(LexerTest, RawBlocksPassThrough) {
  EXPECT_EQ(R("{% raw %}{{ not parsed }}{% endraw %}"), "{{ not parsed }}");
  EXPECT_EQ(R("[{% raw -%}  a  {%- endraw %}]"), "[a]");
}

TEST(LexerTest, NewlinesAreNormalizedAndOneTrailingNewlineDropped) {
  EXPECT_EQ(R("a\r\nb\rc\n"), "a\nb\nc");
  EXPECT_EQ(R("a\n\n"), "a\n");
}

TEST(LexerTest, JinjaDefaultsWithoutTrimOrLstrip) {
  LexerOptions jinja_defaults;
  jinja_defaults.trim_blocks = false;
  jinja_defaults.lstrip_blocks = false;
  auto t = Template::Parse("a\n  {% if true %}\nb\n  {% endif %}\nc",
                           jinja_defaults);
  ASSERT_TRUE(t.ok());
  auto out = t->Render({});
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(*out, "a\n  \nb\n  \nc");
}

TEST(LexerTest, ErrorsNameTheLine) {
  for (const char* bad : {"a\n{{ 'open", "a\n{{ x", "a\n{# never closed",
                          "a\n{{ (1 }}", "a\n{{ x $ y }}", "a\n{% raw %}x"}) {
    auto t = Tokenize(bad, {});
    ASSERT_FALSE(t.ok()) << bad;
    EXPECT_EQ(t.status().message().rfind("line 2:", 0), 0u)
        << t.status().message();
  }
  EXPECT_FALSE(Tokenize("bad \xff utf8", {}).ok());
}

}  // namespace
}  // namespace tessera::jinja
