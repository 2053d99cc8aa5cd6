// SseReader: an incremental parser of a Server-Sent Events body
// (text/event-stream, as the WHATWG HTML standard defines it), fed the
// bytes of a streamed HTTP response as they arrive, cut at arbitrary
// points.
//
// Lines end in "\n", "\r\n" or "\r" (a "\r\n" split between two Feed calls
// counts once). A line "data:VALUE" or "data: VALUE" adds VALUE to the
// current event's data (several data lines are joined with "\n"); a blank
// line dispatches the event if it has data; lines starting with ":"
// (comments) and other fields (event:, id:, retry:) are ignored. The bytes
// of an unfinished event are kept until more arrive; Finish() reports
// whether the stream ended cleanly (nothing pending).
//
// Not thread-safe: one reader per response.
#ifndef TESSERA_BENCH_SSE_READER_H_
#define TESSERA_BENCH_SSE_READER_H_

#include <string>
#include <string_view>
#include <vector>

namespace tessera::bench {

class SseReader {
 public:
  // Consumes `bytes`; returns the data of every event completed by them, in
  // order (usually zero or one per call).
  std::vector<std::string> Feed(std::string_view bytes);

  // True when no partial line or undispatched event is pending: the stream
  // ended on an event boundary.
  bool Finish() const;

 private:
  void EndLine();

  std::string line_;        // the current line, without its terminator
  std::string data_;        // the current event's data so far
  bool has_data_ = false;   // a data line was seen in the current event
  bool after_cr_ = false;   // the last byte fed was "\r"
  std::vector<std::string>* out_ = nullptr;  // Feed's result, while in Feed
};

}  // namespace tessera::bench

#endif  // TESSERA_BENCH_SSE_READER_H_
