#include "server/stream_pump.h"

#include <chrono>
#include <string>

#include "server/openai_response.h"

namespace tessera::server {
namespace {

constexpr auto kPoll = std::chrono::milliseconds(100);
constexpr int kHeartbeatPolls = 20;  // 2 s without output
constexpr const char* kClientGone = "client disconnected";

}  // namespace

void DrainAll(StreamSet& streams,
              const std::function<void(StreamSet::Event&)>& on_event) {
  while (!streams.all_finished()) {
    for (auto& ev : streams.Next(kPoll)) on_event(ev);
  }
}

bool IsServerAbort(const engine::FinishReason& finish) {
  if (finish.kind != engine::FinishReason::Kind::kAbort) return false;
  const std::string& m = finish.message;
  return !m.empty() && m.find("client") == std::string::npos &&
         m.find("abort_request") == std::string::npos;
}

void StartStreamingResponse(httplib::Response& res,
                            std::shared_ptr<StreamSet> streams,
                            SseHandlers handlers) {
  StartSse(
      res,
      [streams, h = std::move(handlers)](SseWriter& out) {
        if (h.on_start) h.on_start(out);
        int idle = 0;
        while (out.ok() && !streams->all_finished()) {
          auto events = streams->Next(kPoll);
          if (events.empty()) {
            if (++idle >= kHeartbeatPolls) {
              idle = 0;
              out.Heartbeat();
            }
            continue;
          }
          idle = 0;
          for (auto& ev : events) {
            if (ev.output.finished && IsServerAbort(ev.output.finish)) {
              out.Write(SseError(AbortError(ev.output.finish)));
            }
            h.on_event(out, ev);
            if (!out.ok()) break;
          }
        }
        if (!out.ok()) {
          streams->CancelAll(kClientGone);
          return;
        }
        if (h.on_end) h.on_end(out);
      },
      [streams](bool ok) {
        if (!ok) streams->CancelAll(kClientGone);
      });
}

}  // namespace tessera::server
