#include "base/progress.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

namespace tessera {
namespace {

using Clock = ProgressReporter::Clock;
using std::chrono::seconds;

// Runs `body` with a reporter writing to a memory stream; returns the text.
template <typename Body>
std::string Capture(ProgressReporter::Mode mode, Body body) {
  char* buffer = nullptr;
  size_t size = 0;
  std::FILE* f = open_memstream(&buffer, &size);
  {
    ProgressReporter r("loading weights", mode, seconds(10), f);
    body(r);
  }
  std::fclose(f);
  std::string out(buffer, size);
  free(buffer);
  return out;
}

TEST(ProgressTest, LogModePrintsAtTheIntervalAndADoneLine) {
  const auto t0 = Clock::now();
  const std::string out = Capture(ProgressReporter::Mode::kLog, [&](auto& r) {
    r.Update(1 << 20, 100 << 20, t0 + seconds(1));    // too soon: nothing
    r.Update(50 << 20, 100 << 20, t0 + seconds(11));  // a line
    r.Update(60 << 20, 100 << 20, t0 + seconds(12));  // too soon
    r.Update(99 << 20, 100 << 20, t0 + seconds(22));  // a line
  });
  EXPECT_EQ(out.find('\r'), std::string::npos) << out;
  EXPECT_NE(out.find("loading weights:  50% (50.0 MiB / 100.0 MiB)\n"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("loading weights:  99% (99.0 MiB / 100.0 MiB)\n"),
            std::string::npos)
      << out;
  EXPECT_EQ(out.find(" 60%"), std::string::npos) << out;
  EXPECT_NE(out.find("loading weights: done in"), std::string::npos) << out;
}

TEST(ProgressTest, QuickWorkInALogStaysSilent) {
  const auto t0 = Clock::now();
  EXPECT_EQ(Capture(ProgressReporter::Mode::kLog,
                    [&](auto& r) {
                      r.Update(1, 2, t0 + seconds(1));
                      r.Update(2, 2, t0 + seconds(2));
                    }),
            "");
  EXPECT_EQ(Capture(ProgressReporter::Mode::kOff,
                    [&](auto& r) { r.Update(1, 2, t0 + seconds(60)); }),
            "");
}

TEST(ProgressTest, TerminalModeRedrawsOneLine) {
  const auto t0 = Clock::now();
  const std::string out =
      Capture(ProgressReporter::Mode::kTerminal, [&](auto& r) {
        r.Update(uint64_t{1} << 30, uint64_t{4} << 30, t0);
        r.Update(uint64_t{2} << 30, uint64_t{4} << 30, t0 + seconds(1));
        r.Update(uint64_t{4} << 30, uint64_t{4} << 30, t0 + seconds(2));
      });
  EXPECT_EQ(out,
            "\rloading weights:  25% (1.0 GiB / 4.0 GiB)"
            "\rloading weights:  50% (2.0 GiB / 4.0 GiB)"
            "\rloading weights: 100% (4.0 GiB / 4.0 GiB)\n");
}

TEST(ProgressTest, CountsInALog) {
  char* buffer = nullptr;
  size_t size = 0;
  std::FILE* f = open_memstream(&buffer, &size);
  const auto t0 = Clock::now();
  {
    ProgressReporter r("requests done", ProgressReporter::Mode::kLog,
                       seconds(10), f, ProgressReporter::Unit::kCount);
    r.Update(40, 100, t0 + seconds(11));
  }
  std::fclose(f);
  const std::string out(buffer, size);
  free(buffer);
  EXPECT_NE(out.find("requests done:  40% (40 / 100)\n"), std::string::npos)
      << out;
}

}  // namespace
}  // namespace tessera
