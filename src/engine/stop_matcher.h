// StopMatcher: finds stop strings in streamed output text and decides which
// text is safe to send to the client now.
//
// Feed it the pieces the IncrementalDetokenizer emits, in order. Add returns
// the text that can be emitted: any tail that could still be the beginning of
// a stop string is HELD BACK until a later piece shows it is not one (then it
// is released) or completes the stop string. When a stop string completes,
// Add reports it (and which one) together with the text before it; the stop
// string itself and everything after it are dropped, as OpenAI does. Flush
// releases the held tail when generation ends for another reason (EOS, stop
// token, length).
//
// Which stop wins: the one whose match ENDS first in the stream (the point
// where token-by-token generation would have stopped); on a tie, the one that
// STARTS first (so less text is emitted). E.g. stops {"ab", "bc"} on "abc"
// stop at "ab"; stops {"b", "ab"} on "ab" stop at "ab", emitting "".
//
// Cost: the matcher keeps only the held tail, shorter than the longest stop
// string (L bytes). Add(piece) scans held + piece once per stop string, plus
// O(L^2 * #stops) for the held-tail check: no rescans of earlier output.
//
// UTF-8: stop strings must be valid UTF-8 (Create checks). Since UTF-8 is
// self-synchronising, a match or a held tail in valid UTF-8 text always
// starts on a character boundary, so emitted text stays whole characters
// when the pieces are (the detokenizer's guarantee).
//
// Invariants: held_ is the longest suffix of the text fed so far (after the
// last emission) that is a proper prefix of some stop string; it never
// contains a whole stop string. After a stop or Flush the matcher is
// finished and Add returns empty, non-stop results.
//
// Thread-safety: not thread-safe; one instance per request stream.
#ifndef TESSERA_ENGINE_STOP_MATCHER_H_
#define TESSERA_ENGINE_STOP_MATCHER_H_

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace tessera::engine {

struct StopMatch {
  std::string text;      // safe to emit now (before the stop string, if any)
  bool stopped = false;  // a stop string completed
  int stop_index = -1;   // index into the stop strings given to Create
};

class StopMatcher {
 public:
  // At most this many stop strings per request (OpenAI allows 4; SGLang and
  // vLLM more). Keeps Add's per-piece cost bounded.
  static constexpr size_t kMaxStopStrings = 64;
  static constexpr size_t kMaxStopStringBytes = 1024;

  // Errors (INVALID_ARGUMENT, naming the string's index): an empty stop
  // string, one that is not valid UTF-8, longer than kMaxStopStringBytes, or
  // more than kMaxStopStrings of them. No stop strings is fine: then Add
  // returns each piece unchanged.
  static StatusOr<StopMatcher> Create(std::vector<std::string> stops);

  // Consumes one piece of output text (may be empty).
  StopMatch Add(std::string_view piece);

  // Generation ended for another reason: returns the held tail. Later calls
  // return "".
  std::string Flush();

  bool finished() const { return finished_; }
  // Bytes currently held back (for tests and metrics).
  size_t held_bytes() const { return held_.size(); }
  const std::vector<std::string>& stops() const { return stops_; }

 private:
  explicit StopMatcher(std::vector<std::string> stops);

  // Length of the longest suffix of `text` that is a proper prefix of a stop.
  size_t HeldTailLength(std::string_view text) const;

  std::vector<std::string> stops_;
  size_t max_stop_len_ = 0;
  std::string held_;
  bool finished_ = false;
};

}  // namespace tessera::engine

#endif  // TESSERA_ENGINE_STOP_MATCHER_H_
