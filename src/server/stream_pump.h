// Draining a response's request streams — the loop every generating route
// shares, for non-streaming answers (DrainAll) and SSE answers
// (StartStreamingResponse).
//
// SSE: the route's `on_start` writes what precedes the outputs (chat's role
// chunks, completions' echo), `on_event` turns each RequestOutput into zero
// or more events, `on_end` writes the tail (usage chunk, [DONE]). While
// nothing arrives, an SSE comment goes out every 2 s so a vanished client is
// noticed; a failed write cancels every unfinished stream, which frees its
// KV at the scheduler's next step. An abort caused by the server (engine
// failure, shutdown) is also reported as an error event before the finish.
// Thread-safety: each response's pump runs on its own handler thread.
#ifndef TESSERA_SERVER_STREAM_PUMP_H_
#define TESSERA_SERVER_STREAM_PUMP_H_

#include <httplib.h>

#include <functional>
#include <memory>

#include "server/engine_bridge.h"
#include "server/http_util.h"

namespace tessera::server {

// Calls on_event for every output of every stream until all finished.
void DrainAll(StreamSet& streams,
              const std::function<void(StreamSet::Event&)>& on_event);

// True for aborts the client did not ask for (they become error events).
bool IsServerAbort(const engine::FinishReason& finish);

struct SseHandlers {
  std::function<void(SseWriter&)> on_start;  // may be empty
  std::function<void(SseWriter&, StreamSet::Event&)> on_event;
  std::function<void(SseWriter&)> on_end;  // only when the client stayed
};

void StartStreamingResponse(httplib::Response& res,
                            std::shared_ptr<StreamSet> streams,
                            SseHandlers handlers);

}  // namespace tessera::server

#endif  // TESSERA_SERVER_STREAM_PUMP_H_
