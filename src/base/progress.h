// ProgressReporter: progress of long work (loading or writing weights,
// converting a checkpoint) on stderr, fitted to where stderr goes.
//
// - A terminal: one line redrawn in place ("\rloading weights:  42% (..)")
//   at most every 100 ms, finished with a newline.
// - Anything else (a log under systemd or docker, a pipe): a plain line at
//   most every `interval` (default 10 s), so the log shows the work is
//   alive without filling up; work that ends sooner prints nothing, and a
//   last "done" line follows only if progress lines were printed.
// - Disabled: nothing.
// Lines read "<what>: 42% (1.2 GiB / 2.9 GiB)" (sizes in MiB below 1 GiB),
// or "<what>: 42% (42 / 100)" for counts.
// Not thread-safe: one reporter per piece of work, updated by one thread.
#ifndef TESSERA_BASE_PROGRESS_H_
#define TESSERA_BASE_PROGRESS_H_

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

namespace tessera {

class ProgressReporter {
 public:
  enum class Mode { kTerminal, kLog, kOff };
  enum class Unit { kBytes, kCount };
  using Clock = std::chrono::steady_clock;

  // kTerminal when stderr is a terminal, else kLog; kOff when !enabled.
  static Mode ModeForStderr(bool enabled = true);

  ProgressReporter(std::string what, Mode mode,
                   Clock::duration interval = std::chrono::seconds(10),
                   std::FILE* out = stderr, Unit unit = Unit::kBytes);
  ~ProgressReporter() { End(); }
  ProgressReporter(const ProgressReporter&) = delete;
  ProgressReporter& operator=(const ProgressReporter&) = delete;

  // `done` of `total` bytes (or items, Unit::kCount) so far.
  void Update(uint64_t done, uint64_t total, Clock::time_point now = Clock::now());
  // Ends the line (terminal) or writes the closing line (log); idempotent.
  void End();

 private:
  std::string Line(uint64_t done, uint64_t total) const;

  const std::string what_;
  const Mode mode_;
  const Clock::duration interval_;
  std::FILE* const out_;
  const Unit unit_;
  const Clock::time_point start_;
  Clock::time_point last_print_;
  int last_percent_ = -1;
  bool printed_ = false;
  bool ended_ = false;
  uint64_t last_done_ = 0, last_total_ = 0;
};

}  // namespace tessera

#endif  // TESSERA_BASE_PROGRESS_H_
