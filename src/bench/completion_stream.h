// CompletionStream: turns the SSE events of one streamed /v1/completions
// response into the request's measurements (RequestResult). Pure: the
// caller supplies each event's arrival time, so the HTTP side
// (request_runner.h) and tests share it.
//
// What counts (SGLang's bench_serving definitions):
//   TTFT  send -> the first event whose "choices" is non-empty;
//   ITL   the gaps between consecutive such events (one per generated token
//         on Tessera; an event may carry "" text for a held-back token);
//   E2E   send -> the end of the response body.
// Output tokens come from the final usage chunk (usage.completion_tokens),
// prompt and cached tokens from usage.prompt_tokens and
// usage.prompt_tokens_details.cached_tokens; without a usage chunk the
// choice events are counted instead and nothing is known to be cached.
//
// A request fails on: a `data: {"error": ...}` event, an event that is not
// JSON, a body that ends before `data: [DONE]` or mid-event, or a stream
// without any choice event. Not thread-safe: one per request.
#ifndef TESSERA_BENCH_COMPLETION_STREAM_H_
#define TESSERA_BENCH_COMPLETION_STREAM_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::bench {

struct RequestResult {
  bool success = false;
  std::string error;  // why it failed; empty on success

  int64_t input_len = 0;             // prompt token ids sent
  int64_t requested_output_len = 0;  // max_tokens sent (ignore_eos)

  int64_t output_tokens = 0;  // usage.completion_tokens (else choice events)
  int64_t prompt_tokens = 0;  // usage.prompt_tokens (else input_len)
  int64_t cached_tokens = 0;  // usage...cached_tokens (else 0)
  bool usage_reported = false;
  int64_t choice_events = 0;  // events with a non-empty "choices"
  std::string finish_reason;  // the last non-null one seen

  double ttft_s = 0.0;        // seconds, send -> first choice event
  double e2e_s = 0.0;         // seconds, send -> end of body
  std::vector<double> itl_s;  // (choice_events - 1,) seconds
};

class CompletionStream {
 public:
  CompletionStream(int64_t input_len, int64_t requested_output_len);

  // One event's data, `t_s` seconds after the request was sent. Returns
  // false once the request has failed: stop reading the body.
  bool OnEvent(std::string_view data, double t_s);

  // Marks the request failed with `message` (HTTP or transport errors);
  // the first failure wins.
  void Fail(std::string message);

  // The body ended `t_s` seconds after sending; `clean` when it ended on an
  // event boundary (SseReader::Finish). Settles success.
  void OnEnd(double t_s, bool clean);

  const RequestResult& result() const { return result_; }
  RequestResult TakeResult() { return std::move(result_); }

 private:
  RequestResult result_;
  bool failed_ = false;
  bool done_ = false;  // "[DONE]" seen
  double last_choice_s_ = 0.0;
};

}  // namespace tessera::bench

#endif  // TESSERA_BENCH_COMPLETION_STREAM_H_
