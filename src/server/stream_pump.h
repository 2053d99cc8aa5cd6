// Answers that wait for generation, driven by the connection (an AsyncBody,
// http_message.h) instead of a thread per request.
//
// SSE (StartStreamingResponse): the route's `on_start` writes what precedes
// the outputs (chat's role chunks, completions' echo), `on_event` turns
// each RequestOutput into zero or more events, `on_end` writes the tail
// (usage chunk, [DONE]). An abort caused by the server (engine failure,
// shutdown) is also reported as an error event before the finish. While
// nothing arrives the connection sends an SSE comment every 2 s, so a
// vanished client is noticed.
//
// Whole answers (DeferResponse): `on_event` sees every output as it comes
// and `on_done` fills the response once every stream finished.
//
// Either way the request streams wake the connection when outputs arrive
// (StreamSet::SetListener), and a client that goes away cancels every
// unfinished stream, which frees its KV at the scheduler's next step.
// Thread-safety: the callbacks run on the connection's strand, one at a
// time.
#ifndef TESSERA_SERVER_STREAM_PUMP_H_
#define TESSERA_SERVER_STREAM_PUMP_H_

#include <functional>
#include <memory>

#include "server/engine_bridge.h"
#include "server/http_message.h"
#include "server/http_util.h"

namespace tessera::server {

struct SseHandlers {
  std::function<void(SseWriter&)> on_start;  // may be empty
  std::function<void(SseWriter&, StreamSet::Event&)> on_event;
  std::function<void(SseWriter&)> on_end;  // only when the client stayed
};

void StartStreamingResponse(HttpResponse& res,
                            std::shared_ptr<StreamSet> streams,
                            SseHandlers handlers);

void DeferResponse(HttpResponse& res, std::shared_ptr<StreamSet> streams,
                   std::function<void(StreamSet::Event&)> on_event,
                   std::function<void(HttpResponse&)> on_done);

}  // namespace tessera::server

#endif  // TESSERA_SERVER_STREAM_PUMP_H_
