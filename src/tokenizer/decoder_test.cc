#include "tokenizer/decoder.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tokenizer/byte_level.h"
#include "tokenizer/utf8.h"

namespace tessera::tok {
namespace {

std::unique_ptr<Decoder> MakeDecoder(const Json* config) {
  auto decoder = Decoder::FromJson(config, "decoder");
  EXPECT_TRUE(decoder.ok()) << decoder.status().ToString();
  return decoder.ok() ? std::move(decoder).value() : nullptr;
}

std::string DecodeAll(const Decoder& decoder,
                      const std::vector<std::string>& tokens) {
  Decoder::Stream stream(decoder);
  std::string out;
  for (const std::string& t : tokens) stream.Push(t, &out);
  stream.Finish(&out);
  return out;
}

const Json kSentencePiece = {
    {"type", "Sequence"},
    {"decoders",
     {{{"type", "Replace"}, {"pattern", {{"String", "▁"}}}, {"content", " "}},
      {{"type", "ByteFallback"}},
      {{"type", "Fuse"}},
      {{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}}}}};

// Shared by the decoder, structured output's token bytes and the server's
// logprob bytes: a malformed token is "not a byte token", never an
// exception.
TEST(Decoder, ParseByteTokenAcceptsOnlyWellFormedHex) {
  uint8_t byte = 0;
  EXPECT_TRUE(ParseByteToken("<0xE2>", &byte));
  EXPECT_EQ(byte, 0xE2);
  EXPECT_TRUE(ParseByteToken("<0x0a>", &byte));
  EXPECT_EQ(byte, 0x0A);
  for (const char* bad : {"<0xZZ>", "<0x1>", "<0x123>", "<1xAB>", "0xAB>", ""}) {
    EXPECT_FALSE(ParseByteToken(bad, &byte)) << bad;
  }
  EXPECT_EQ(HexDigit('f'), 15);
  EXPECT_EQ(HexDigit('G'), -1);
}

TEST(Decoder, SentencePieceChain) {
  auto d = MakeDecoder(&kSentencePiece);
  EXPECT_EQ(DecodeAll(*d, {"▁Hello", "▁wor", "ld"}), "Hello world");
  EXPECT_EQ(DecodeAll(*d, {"▁", "▁a"}), " a");  // only one space stripped
  // 你 = E4 BD A0 as a valid run; an invalid run gives one U+FFFD per byte.
  EXPECT_EQ(DecodeAll(*d, {"▁x", "<0xE4>", "<0xBD>", "<0xA0>", "!"}), "x你!");
  EXPECT_EQ(DecodeAll(*d, {"<0xE4>", "<0xBD>", "▁y"}),
            "\xEF\xBF\xBD\xEF\xBF\xBD y");
  EXPECT_EQ(DecodeAll(*d, {"<0xE4>", "<0xBD>", "<0xA0>", "<0xFF>"}),
            "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");
}

TEST(Decoder, ByteLevel) {
  const Json config = {{"type", "ByteLevel"}};
  auto d = MakeDecoder(&config);
  EXPECT_EQ(DecodeAll(*d, {"Hello", "Ġworld", "Ċ"}), "Hello world\n");
  // "ðŁĺ" + "Ģ" = F0 9F 98 80 (😀) split over two tokens.
  EXPECT_EQ(DecodeAll(*d, {"ðŁĺ", "Ģ"}), "😀");
  EXPECT_EQ(DecodeAll(*d, {"ðŁĺ"}), kReplacementChar);
  // A character outside the alphabet: the token's own bytes are used.
  EXPECT_EQ(DecodeAll(*d, {"<｜x｜>", "Ġa"}), "<｜x｜> a");
}

TEST(Decoder, MetaspaceDropsReplacementOnlyInFirstPiece) {
  const Json config = {{"type", "Metaspace"},
                       {"replacement", "▁"},
                       {"prepend_scheme", "always"}};
  auto d = MakeDecoder(&config);
  EXPECT_EQ(DecodeAll(*d, {"▁Hey", "▁friend"}), "Hey friend");
  const Json never = {
      {"type", "Metaspace"}, {"replacement", "▁"}, {"prepend_scheme", "never"}};
  EXPECT_EQ(DecodeAll(*MakeDecoder(&never), {"▁Hey", "▁friend"}), " Hey friend");
}

TEST(Decoder, NoDecoderJoinsWithSpaces) {
  auto d = MakeDecoder(nullptr);
  EXPECT_EQ(DecodeAll(*d, {"a", "b", "c"}), "a b c");
}

TEST(Decoder, TextModeReplaceAndStripHoldBackAcrossChunks) {
  const Json config = {
      {"type", "Sequence"},
      {"decoders",
       {{{"type", "Fuse"}},
        {{"type", "Replace"},
         {"pattern", {{"String", "<br>"}}},
         {"content", "\n"}},
        {{"type", "Strip"}, {"content", "-"}, {"start", 2}, {"stop", 2}}}}};
  auto d = MakeDecoder(&config);
  const std::vector<std::string> tokens = {"---a<b", "r>b", "<", "br", ">c---"};
  EXPECT_EQ(DecodeAll(*d, tokens), "-a\nb\nc-");
  // Streaming: no piece holds a partial "<br>", and the pieces add up.
  Decoder::Stream stream(*d);
  std::string all;
  for (const std::string& t : tokens) {
    std::string piece;
    stream.Push(t, &piece);
    EXPECT_EQ(piece.find('<'), std::string::npos) << piece;
    all += piece;
  }
  stream.Finish(&all);
  EXPECT_EQ(all, "-a\nb\nc-");
}

TEST(Decoder, RejectsUnsupportedTypesAndOrders) {
  const Json wordpiece = {{"type", "WordPiece"}, {"prefix", "##"}};
  auto a = Decoder::FromJson(&wordpiece, "decoder");
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(a.status().message().find("\"WordPiece\""), std::string::npos);
  const Json order = {
      {"type", "Sequence"},
      {"decoders", {{{"type", "Fuse"}}, {{"type", "ByteFallback"}}}}};
  auto b = Decoder::FromJson(&order, "decoder");
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.status().message().find("ByteFallback"), std::string::npos);
}

}  // namespace
}  // namespace tessera::tok
