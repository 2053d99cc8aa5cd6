#include "engine/stop_matcher.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace tessera::engine {
namespace {

StopMatcher MakeStopMatcher(std::vector<std::string> stops) {
  auto m = StopMatcher::Create(std::move(stops));
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return std::move(m).value();
}

// Feeds pieces; returns everything emitted (Add texts, plus Flush if no stop).
struct FeedResult {
  std::string emitted;
  std::vector<std::string> per_piece;
  bool stopped = false;
  int stop_index = -1;
};
FeedResult Feed(StopMatcher& m, const std::vector<std::string>& pieces,
                bool flush = true) {
  FeedResult r;
  for (const std::string& p : pieces) {
    StopMatch s = m.Add(p);
    r.per_piece.push_back(s.text);
    r.emitted += s.text;
    if (s.stopped) {
      r.stopped = true;
      r.stop_index = s.stop_index;
      break;
    }
  }
  if (!r.stopped && flush) r.emitted += m.Flush();
  return r;
}

TEST(StopMatcherTest, NoStopsPassesPiecesThrough) {
  StopMatcher m = MakeStopMatcher({});
  FeedResult r = Feed(m, {"Hello", "", " world"});
  EXPECT_EQ(r.emitted, "Hello world");
  EXPECT_EQ(r.per_piece, (std::vector<std::string>{"Hello", "", " world"}));
  EXPECT_FALSE(r.stopped);
}

TEST(StopMatcherTest, StopInsideOnePieceDropsStopAndRest) {
  StopMatcher m = MakeStopMatcher({"END"});
  FeedResult r = Feed(m, {"abc END def"});
  EXPECT_TRUE(r.stopped);
  EXPECT_EQ(r.stop_index, 0);
  EXPECT_EQ(r.emitted, "abc ");
  EXPECT_TRUE(m.finished());
  EXPECT_EQ(m.Add("more").text, "");
  EXPECT_EQ(m.Flush(), "");
}

TEST(StopMatcherTest, StopSpanningSeveralPiecesIsHeldThenDropped) {
  StopMatcher m = MakeStopMatcher({"###"});
  StopMatch a = m.Add("x#");
  EXPECT_EQ(a.text, "x");  // "#" could start "###": held
  EXPECT_EQ(m.held_bytes(), 1u);
  StopMatch b = m.Add("#");
  EXPECT_EQ(b.text, "");
  EXPECT_EQ(m.held_bytes(), 2u);
  StopMatch c = m.Add("#tail");
  EXPECT_TRUE(c.stopped);
  EXPECT_EQ(c.text, "");
}

TEST(StopMatcherTest, HeldTextReleasedWhenItStopsMatching) {
  StopMatcher m = MakeStopMatcher({"stop"});
  EXPECT_EQ(m.Add("a st").text, "a ");
  EXPECT_EQ(m.Add("o").text, "");
  StopMatch s = m.Add("ry");  // "story" is not "stop"
  EXPECT_FALSE(s.stopped);
  EXPECT_EQ(s.text, "story");
  EXPECT_EQ(m.held_bytes(), 0u);
}

TEST(StopMatcherTest, ReleaseKeepsANewCandidateTail) {
  // "aab" with stop "ab": after "a","a" one "a" is released, one held.
  StopMatcher m = MakeStopMatcher({"ab"});
  EXPECT_EQ(m.Add("a").text, "");
  EXPECT_EQ(m.Add("a").text, "a");
  StopMatch s = m.Add("b");
  EXPECT_TRUE(s.stopped);
  EXPECT_EQ(s.text, "");
}

TEST(StopMatcherTest, FailedLongCandidateStillFindsShorterInsideIt) {
  // The whole of "abcab" is held (a prefix of "abcabd"); when "x" breaks
  // that candidate, stop "cabx" is found starting inside the held text.
  StopMatcher m = MakeStopMatcher({"abcabd", "cabx"});
  EXPECT_EQ(m.Add("abcab").text, "");
  StopMatch s = m.Add("x!");
  EXPECT_TRUE(s.stopped);
  EXPECT_EQ(s.stop_index, 1);
  EXPECT_EQ(s.text, "ab");
}

TEST(StopMatcherTest, OverlappingStopsEarliestEndWins) {
  {
    StopMatcher m = MakeStopMatcher({"bc", "ab"});
    FeedResult r = Feed(m, {"xabc"});
    EXPECT_TRUE(r.stopped);
    EXPECT_EQ(r.stop_index, 1);  // "ab" ends first
    EXPECT_EQ(r.emitted, "x");
  }
  {
    StopMatcher m = MakeStopMatcher({"ab", "bc"});
    FeedResult r = Feed(m, {"x", "a", "b", "c"});
    EXPECT_EQ(r.stop_index, 0);
    EXPECT_EQ(r.emitted, "x");
  }
  {
    // Same end: the one starting first wins, emitting less.
    StopMatcher m = MakeStopMatcher({"b", "ab"});
    FeedResult r = Feed(m, {"zab"});
    EXPECT_EQ(r.stop_index, 1);
    EXPECT_EQ(r.emitted, "z");
  }
  {
    // "bc" only ever matches when "ab" did not.
    StopMatcher m = MakeStopMatcher({"ab", "bc"});
    FeedResult r = Feed(m, {"b", "b", "c"});
    EXPECT_EQ(r.stop_index, 1);
    EXPECT_EQ(r.emitted, "b");
  }
}

TEST(StopMatcherTest, PrefixOfOneStopIsWholeOtherStop) {
  StopMatcher m = MakeStopMatcher({"abcd", "ab"});
  FeedResult r = Feed(m, {"a", "b", "c", "d"});
  EXPECT_TRUE(r.stopped);
  EXPECT_EQ(r.stop_index, 1);  // "ab" completes first
  EXPECT_EQ(r.emitted, "");
}

TEST(StopMatcherTest, EmptyPiecesChangeNothing) {
  StopMatcher m = MakeStopMatcher({"xyz"});
  EXPECT_EQ(m.Add("").text, "");
  EXPECT_EQ(m.Add("x").text, "");
  EXPECT_EQ(m.Add("").text, "");
  EXPECT_EQ(m.held_bytes(), 1u);
  StopMatch s = m.Add("yz");
  EXPECT_TRUE(s.stopped);
}

TEST(StopMatcherTest, FlushReleasesHeldTail) {
  StopMatcher m = MakeStopMatcher({"</answer>"});
  FeedResult r = Feed(m, {"42 </ans"});
  EXPECT_FALSE(r.stopped);
  EXPECT_EQ(r.per_piece[0], "42 ");
  EXPECT_EQ(r.emitted, "42 </ans");
  EXPECT_TRUE(m.finished());
  EXPECT_EQ(m.Flush(), "");
}

TEST(StopMatcherTest, Utf8StopsAndTextStayWholeCharacters) {
  // "é" is C3 A9; "日本" is E6 97 A5 E6 9C AC.
  StopMatcher m = MakeStopMatcher({"日本", "é!"});
  EXPECT_EQ(m.Add("caf").text, "caf");
  EXPECT_EQ(m.Add("é").text, "");  // could start "é!"
  StopMatch s = m.Add("?日");
  EXPECT_EQ(s.text, "é?");  // "é" released whole; "日" held
  StopMatch t = m.Add("本語");
  EXPECT_TRUE(t.stopped);
  EXPECT_EQ(t.stop_index, 0);
  EXPECT_EQ(t.text, "");
}

TEST(StopMatcherTest, Utf8SharedLeadBytesDoNotFalselyMatch) {
  // "é" (C3 A9) and "è" (C3 A8) share the lead byte; stop "è" must not fire.
  StopMatcher m = MakeStopMatcher({"è"});
  FeedResult r = Feed(m, {"é", "é"});
  EXPECT_FALSE(r.stopped);
  EXPECT_EQ(r.per_piece, (std::vector<std::string>{"é", "é"}));
  EXPECT_EQ(m.held_bytes(), 0u);
}

TEST(StopMatcherTest, StreamEqualsTruncatedFullText) {
  // Every way of cutting the text into pieces gives the same result as
  // truncating the whole text at the first stop.
  const std::string text = "one two thr three four";
  const std::vector<std::string> stops = {"three", "thx", "our"};
  for (size_t cut1 = 0; cut1 <= text.size(); ++cut1) {
    for (size_t cut2 = cut1; cut2 <= text.size(); ++cut2) {
      StopMatcher m = MakeStopMatcher(stops);
      FeedResult r =
          Feed(m, {text.substr(0, cut1), text.substr(cut1, cut2 - cut1),
                   text.substr(cut2)});
      ASSERT_TRUE(r.stopped) << cut1 << "," << cut2;
      EXPECT_EQ(r.stop_index, 0);
      EXPECT_EQ(r.emitted, "one two thr ") << cut1 << "," << cut2;
    }
  }
}

TEST(StopMatcherTest, HeldTailNeverExceedsLongestStop) {
  StopMatcher m = MakeStopMatcher({"aaaa"});
  std::string emitted;
  for (int i = 0; i < 1000; ++i) {
    StopMatch s = m.Add(i % 4 == 3 ? "b" : "a");
    emitted += s.text;
    EXPECT_LT(m.held_bytes(), 4u);
    ASSERT_FALSE(s.stopped);
  }
  emitted += m.Flush();
  EXPECT_EQ(emitted.size(), 1000u);
}

// Naive reference: the text safe to emit after `fed` (no stop so far) is
// `fed` minus its longest suffix that is a proper prefix of a stop.
std::string NaiveSafePrefix(const std::string& fed,
                            const std::vector<std::string>& stops) {
  for (size_t start = 0; start < fed.size(); ++start) {
    const std::string tail = fed.substr(start);
    for (const std::string& s : stops) {
      if (s.size() > tail.size() && s.compare(0, tail.size(), tail) == 0) {
        return fed.substr(0, start);
      }
    }
  }
  return fed;
}

// Naive reference: the first stop to complete in `text` (smallest end, then
// smallest start), as (start, index), or (npos, -1).
std::pair<size_t, int> NaiveFirstStop(const std::string& text,
                                      const std::vector<std::string>& stops) {
  for (size_t end = 1; end <= text.size(); ++end) {
    for (size_t start = 0; start < end; ++start) {
      for (size_t i = 0; i < stops.size(); ++i) {
        if (stops[i].size() == end - start &&
            text.compare(start, end - start, stops[i]) == 0) {
          return {start, static_cast<int>(i)};
        }
      }
    }
  }
  return {std::string::npos, -1};
}

TEST(StopMatcherTest, RandomStreamsMatchNaiveReference) {
  std::mt19937 rng(1234);
  const std::vector<std::string> alphabet = {"a", "b", "c", "\xC3\xA9"};
  auto random_text = [&](size_t max_chars) {
    std::string s;
    const size_t n = std::uniform_int_distribution<size_t>(1, max_chars)(rng);
    for (size_t i = 0; i < n; ++i) {
      s += alphabet[std::uniform_int_distribution<size_t>(0, 3)(rng)];
    }
    return s;
  };
  for (int trial = 0; trial < 3000; ++trial) {
    std::vector<std::string> stops;
    const int nstops = std::uniform_int_distribution<int>(1, 3)(rng);
    for (int i = 0; i < nstops; ++i) stops.push_back(random_text(4));
    std::vector<std::string> pieces;
    const int npieces = std::uniform_int_distribution<int>(0, 8)(rng);
    for (int i = 0; i < npieces; ++i) {
      pieces.push_back(i % 5 == 4 ? std::string() : random_text(3));
    }
    StopMatcher m = MakeStopMatcher(stops);
    std::string fed, emitted;
    bool stopped = false;
    for (const std::string& p : pieces) {
      fed += p;
      StopMatch s = m.Add(p);
      emitted += s.text;
      const auto [start, index] = NaiveFirstStop(fed, stops);
      if (start != std::string::npos) {
        ASSERT_TRUE(s.stopped) << "trial " << trial;
        EXPECT_EQ(s.stop_index, index) << "trial " << trial;
        EXPECT_EQ(emitted, fed.substr(0, start)) << "trial " << trial;
        stopped = true;
        break;
      }
      ASSERT_FALSE(s.stopped) << "trial " << trial;
      ASSERT_EQ(emitted, NaiveSafePrefix(fed, stops)) << "trial " << trial;
    }
    if (!stopped) {
      EXPECT_EQ(emitted + m.Flush(), fed) << "trial " << trial;
    }
  }
}

TEST(StopMatcherTest, CreateRejectsBadStops) {
  auto empty = StopMatcher::Create({"ok", ""});
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(empty.status().message().find("stop string 1 is empty"),
            std::string::npos);

  auto bad_utf8 = StopMatcher::Create({std::string("\xA9x")});
  ASSERT_FALSE(bad_utf8.ok());
  EXPECT_NE(bad_utf8.status().message().find("not valid UTF-8"),
            std::string::npos);

  auto truncated = StopMatcher::Create({std::string("a\xE6\x97")});
  EXPECT_FALSE(truncated.ok());

  std::vector<std::string> many(StopMatcher::kMaxStopStrings + 1, "x");
  EXPECT_FALSE(StopMatcher::Create(many).ok());

  EXPECT_FALSE(StopMatcher::Create(
                   {std::string(StopMatcher::kMaxStopStringBytes + 1, 'a')})
                   .ok());
}

}  // namespace
}  // namespace tessera::engine
