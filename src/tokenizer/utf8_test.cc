#include "tokenizer/utf8.h"

#include <gtest/gtest.h>

#include "tokenizer/byte_level.h"

namespace tessera::tok {
namespace {

const std::string R(kReplacementChar);

TEST(Utf8, LossyRepairUsesMaximalSubparts) {
  EXPECT_EQ(ToValidUtf8("abc"), "abc");
  EXPECT_EQ(ToValidUtf8("a\xFF"
                        "b"),
            "a" + R + "b");
  EXPECT_EQ(ToValidUtf8("\xE4\xBD"), R);  // truncated: one U+FFFD
  EXPECT_EQ(ToValidUtf8("\xE4\xBD"
                        "x"),
            R + "x");
  EXPECT_EQ(ToValidUtf8("\x80\x80"), R + R);          // lone continuations
  EXPECT_EQ(ToValidUtf8("\xED\xA0\x80"), R + R + R);  // surrogate
  EXPECT_EQ(ToValidUtf8("\xF0\x9F\x98\x80"), "😀");
  EXPECT_EQ(ToValidUtf8("\xC0\xAF"), R + R);  // overlong
  EXPECT_TRUE(IsValidUtf8("日本"));
  EXPECT_FALSE(IsValidUtf8("\xE6\x97"));
}

TEST(Utf8, IncompleteTail) {
  EXPECT_EQ(IncompleteUtf8TailLength(""), 0u);
  EXPECT_EQ(IncompleteUtf8TailLength("ab"), 0u);
  EXPECT_EQ(IncompleteUtf8TailLength("a\xF0"), 1u);
  EXPECT_EQ(IncompleteUtf8TailLength("a\xF0\x9F"), 2u);
  EXPECT_EQ(IncompleteUtf8TailLength("a\xF0\x9F\x98"), 3u);
  EXPECT_EQ(IncompleteUtf8TailLength("a\xF0\x9F\x98\x80"), 0u);
  EXPECT_EQ(IncompleteUtf8TailLength("a\xF0"
                                     "a"),
            0u);  // already invalid
  EXPECT_EQ(IncompleteUtf8TailLength("\x80\x80"), 0u);
}

TEST(ByteLevel, AlphabetIsABijection) {
  EXPECT_EQ(ByteLevelChar(' '), "Ġ");
  EXPECT_EQ(ByteLevelChar('\n'), "Ċ");
  EXPECT_EQ(ByteLevelChar('a'), "a");
  EXPECT_EQ(ByteLevelChar(0xAD), "Ń");
  std::string all;
  for (int b = 0; b < 256; ++b) all.push_back(static_cast<char>(b));
  std::string mapped;
  ByteLevelEncode(all, &mapped);
  std::string back;
  ASSERT_TRUE(ByteLevelDecodeToken(mapped, &back));
  EXPECT_EQ(back, all);
  EXPECT_FALSE(ByteLevelDecodeToken("中", &back));
}

}  // namespace
}  // namespace tessera::tok
