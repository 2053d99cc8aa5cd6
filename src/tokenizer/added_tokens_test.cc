#include "tokenizer/added_tokens.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace tessera::tok {
namespace {

// Renders segments as "[id]" for tokens and the text otherwise.
std::string Show(std::string_view text,
                 const std::vector<AddedTokenMatcher::Segment>& segs) {
  std::string out;
  for (const auto& s : segs) {
    const std::string_view piece = text.substr(s.begin, s.end - s.begin);
    if (s.id >= 0) {
      out.append("[").append(std::to_string(s.id)).append(":");
      out.append(piece).append("]");
    } else {
      out.append("(").append(piece).append(")");
    }
  }
  return out;
}

AddedTokenMatcher Build(const std::vector<AddedToken>& tokens) {
  std::vector<std::string> patterns;
  for (const auto& t : tokens) patterns.push_back(t.content);
  return AddedTokenMatcher(tokens, patterns);
}

TEST(AddedTokenMatcher, LeftmostLongest) {
  AddedTokenMatcher m = Build({{1, "<a>"}, {2, "<a>b"}, {3, "b<"}});
  const std::string text = "x<a>b<a>y";
  // At offset 1 both "<a>" and "<a>b" start: the longer wins; "b<" starts
  // later inside it and is not considered.
  EXPECT_EQ(Show(text, m.Split(text)), "(x)[2:<a>b][1:<a>](y)");
  EXPECT_EQ(Show("plain", m.Split("plain")), "(plain)");
  EXPECT_TRUE(m.Split("").empty());
}

TEST(AddedTokenMatcher, StripAndSingleWordFlags) {
  AddedToken mask{5, "<mask>"};
  mask.lstrip = true;
  mask.rstrip = true;
  AddedToken word{6, "cat"};
  word.single_word = true;
  AddedTokenMatcher m = Build({mask, word});
  const std::string a = "hi  <mask>  there";
  EXPECT_EQ(Show(a, m.Split(a)), "(hi)[5:  <mask>  ](there)");
  const std::string b = "cat concat cat_ cat!";
  EXPECT_EQ(Show(b, m.Split(b)), "[6:cat]( concat cat_ )[6:cat](!)");
}

}  // namespace
}  // namespace tessera::tok
