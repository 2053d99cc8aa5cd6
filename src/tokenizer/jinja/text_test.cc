#include "tokenizer/jinja/text.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace tessera::jinja::text {
namespace {

using Strings = std::vector<std::string>;

TEST(TextTest, FormatFloatMatchesPythonRepr) {
  EXPECT_EQ(FormatFloat(1.0), "1.0");
  EXPECT_EQ(FormatFloat(0.1), "0.1");
  EXPECT_EQ(FormatFloat(2.5), "2.5");
  EXPECT_EQ(FormatFloat(-0.0), "-0.0");
  EXPECT_EQ(FormatFloat(1.0 / 3), "0.3333333333333333");
  EXPECT_EQ(FormatFloat(0.0001), "0.0001");
  EXPECT_EQ(FormatFloat(0.00001), "1e-05");
  EXPECT_EQ(FormatFloat(1.5e-7), "1.5e-07");
  EXPECT_EQ(FormatFloat(1e15), "1000000000000000.0");
  EXPECT_EQ(FormatFloat(1e16), "1e+16");
  EXPECT_EQ(FormatFloat(1.25e20), "1.25e+20");
  EXPECT_EQ(FormatFloat(123.456), "123.456");
  EXPECT_EQ(FormatFloat(std::numeric_limits<double>::infinity()), "inf");
  EXPECT_EQ(FormatFloat(-std::numeric_limits<double>::infinity()), "-inf");
  EXPECT_EQ(FormatFloat(std::nan("")), "nan");
}

TEST(TextTest, LengthAndSubstrCountCodePoints) {
  EXPECT_EQ(Length("héllo"), 5);
  EXPECT_EQ(Length("😀a"), 2);
  EXPECT_EQ(Substr("héllo", 1, 3), "él");
  EXPECT_EQ(Substr("abc", 2, 1), "");
}

TEST(TextTest, StripKnowsUnicodeWhitespaceAndCharSets) {
  EXPECT_EQ(Strip(" \t\n x y \u00a0\u3000", std::nullopt, true, true), "x y");
  EXPECT_EQ(Strip("  x  ", std::nullopt, true, false), "x  ");
  EXPECT_EQ(Strip("  x  ", std::nullopt, false, true), "  x");
  EXPECT_EQ(Strip("xyaxy", std::string("xy"), true, true), "a");
  EXPECT_EQ(Strip("ééaé", std::string("é"), true, true), "a");
}

TEST(TextTest, SplitFollowsPython) {
  EXPECT_EQ(Split("a,b,,c", std::string(","), -1),
            (Strings{"a", "b", "", "c"}));
  EXPECT_EQ(Split("a,b,c", std::string(","), 1), (Strings{"a", "b,c"}));
  EXPECT_EQ(Split("  a  b c  ", std::nullopt, -1), (Strings{"a", "b", "c"}));
  EXPECT_EQ(Split("  a b  c  ", std::nullopt, 1), (Strings{"a", "b  c  "}));
  EXPECT_EQ(Split("", std::nullopt, -1), Strings{});
  EXPECT_EQ(Split("", std::string(","), -1), Strings{""});
  EXPECT_EQ(RSplit("a,b,c", std::string(","), 1), (Strings{"a,b", "c"}));
  EXPECT_EQ(RSplit("  a b  c  ", std::nullopt, 1), (Strings{"  a b", "c"}));
  EXPECT_EQ(RSplit("a<x>b<x>", std::string("<x>"), -1),
            (Strings{"a", "b", ""}));
}

TEST(TextTest, SplitLines) {
  EXPECT_EQ(SplitLines("a\nb\r\nc\rd", false), (Strings{"a", "b", "c", "d"}));
  EXPECT_EQ(SplitLines("a\n\nb\n", false), (Strings{"a", "", "b"}));
  EXPECT_EQ(SplitLines("a\nb", true), (Strings{"a\n", "b"}));
  EXPECT_EQ(SplitLines("a\u2028b", false), (Strings{"a", "b"}));
}

TEST(TextTest, CaseMappingIsUnicodeAware) {
  EXPECT_EQ(Upper("abc é ß"), "ABC É SS");
  EXPECT_EQ(Lower("ÀÉÎ Σ"), "àéî σ");
  EXPECT_EQ(Capitalize("hELLO wORLD"), "Hello world");
  EXPECT_EQ(Title("hello world's x-ray"), "Hello World'S X-Ray");
  EXPECT_TRUE(IsUpperString("ABC 1"));
  EXPECT_FALSE(IsUpperString("AbC"));
  EXPECT_FALSE(IsUpperString("123"));
  EXPECT_TRUE(IsLowerString("abc é"));
}

TEST(TextTest, ReplaceFindCount) {
  EXPECT_EQ(Replace("aaa", "a", "b", -1), "bbb");
  EXPECT_EQ(Replace("aaa", "a", "b", 2), "bba");
  EXPECT_EQ(Replace("ab", "", "-", -1), "-a-b-");
  EXPECT_EQ(Find("héllo", "l"), 2);
  EXPECT_EQ(RFind("héllo", "l"), 3);
  EXPECT_EQ(Find("abc", "z"), -1);
  EXPECT_EQ(Count("aaaa", "aa"), 2);
  EXPECT_EQ(Count("abc", ""), 4);
}

TEST(TextTest, EscapesAndRepr) {
  EXPECT_EQ(HtmlEscape("<a href=\"x\">&'"),
            "&lt;a href=&#34;x&#34;&gt;&amp;&#39;");
  EXPECT_EQ(Repr("abc"), "'abc'");
  EXPECT_EQ(Repr("it's"), "\"it's\"");
  EXPECT_EQ(Repr("it's \"q\""), "'it\\'s \"q\"'");
  EXPECT_EQ(Repr("a\nb\\\x01é"), "'a\\nb\\\\\\x01é'");
}

TEST(TextTest, ParseNumbersLikePython) {
  EXPECT_EQ(ParseInt(" 42 ", 10), 42);
  EXPECT_EQ(ParseInt("-1_000", 10), -1000);
  EXPECT_EQ(ParseInt("0x1f", 16), 31);
  EXPECT_EQ(ParseInt("ff", 16), 255);
  EXPECT_FALSE(ParseInt("4.5", 10).has_value());
  EXPECT_FALSE(ParseInt("1__0", 10).has_value());
  EXPECT_FALSE(ParseInt("", 10).has_value());
  EXPECT_FALSE(ParseInt("99999999999999999999", 10).has_value());
  EXPECT_EQ(ParseFloat(" 2.5 "), 2.5);
  EXPECT_EQ(ParseFloat("1e3"), 1000.0);
  EXPECT_EQ(ParseFloat("-inf"), -std::numeric_limits<double>::infinity());
  EXPECT_FALSE(ParseFloat("0x10").has_value());
  EXPECT_FALSE(ParseFloat("abc").has_value());
}

TEST(TextTest, Utf8Validation) {
  EXPECT_TRUE(IsValidUtf8("plain é 😀 \xEF\xBF\xBD"));
  EXPECT_FALSE(IsValidUtf8("bad \xff byte"));
  EXPECT_FALSE(IsValidUtf8("truncated \xC3"));
  EXPECT_FALSE(IsValidUtf8("overlong \xC0\xAF"));
  EXPECT_EQ(Encode(Decode("a\xffz")), "a\xEF\xBF\xBDz");
}

}  // namespace
}  // namespace tessera::jinja::text
