#include "base/progress.h"

#include <fmt/format.h>
#include <unistd.h>

#include <utility>

namespace tessera {
namespace {

std::string Size(uint64_t bytes) {
  if (bytes >= (uint64_t{1} << 30)) {
    return fmt::format("{:.1f} GiB", static_cast<double>(bytes) / (1 << 30));
  }
  return fmt::format("{:.1f} MiB", static_cast<double>(bytes) / (1 << 20));
}

}  // namespace

ProgressReporter::Mode ProgressReporter::ModeForStderr(bool enabled) {
  if (!enabled) return Mode::kOff;
  return ::isatty(STDERR_FILENO) == 1 ? Mode::kTerminal : Mode::kLog;
}

ProgressReporter::ProgressReporter(std::string what, Mode mode,
                                   Clock::duration interval, std::FILE* out,
                                   Unit unit)
    : what_(std::move(what)),
      mode_(mode),
      interval_(interval),
      out_(out),
      unit_(unit),
      start_(Clock::now()),
      last_print_(start_) {}

std::string ProgressReporter::Line(uint64_t done, uint64_t total) const {
  const int percent = total == 0 ? 100 : static_cast<int>(done * 100 / total);
  if (unit_ == Unit::kCount) {
    return fmt::format("{}: {:3d}% ({} / {})", what_, percent, done, total);
  }
  return fmt::format("{}: {:3d}% ({} / {})", what_, percent, Size(done),
                     Size(total));
}

void ProgressReporter::Update(uint64_t done, uint64_t total,
                              Clock::time_point now) {
  if (mode_ == Mode::kOff || ended_ || total == 0) return;
  last_done_ = done;
  last_total_ = total;
  const int percent = static_cast<int>(done * 100 / total);
  if (mode_ == Mode::kTerminal) {
    if (percent == last_percent_ ||
        (printed_ && done != total &&
         now - last_print_ < std::chrono::milliseconds(100))) {
      return;
    }
    fmt::print(out_, "\r{}", Line(done, total));
  } else {
    if (now - last_print_ < interval_) return;
    fmt::print(out_, "{}\n", Line(done, total));
  }
  std::fflush(out_);
  last_percent_ = percent;
  last_print_ = now;
  printed_ = true;
}

void ProgressReporter::End() {
  if (ended_) return;
  ended_ = true;
  if (!printed_) return;
  if (mode_ == Mode::kTerminal) {
    fmt::print(out_, "\n");
  } else {
    fmt::print(out_, "{}: done in {:.1f} s\n", what_,
               std::chrono::duration<double>(Clock::now() - start_).count());
  }
  std::fflush(out_);
}

}  // namespace tessera
