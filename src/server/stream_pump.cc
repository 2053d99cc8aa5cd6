#include "server/stream_pump.h"

#include <string>
#include <utility>

#include "server/openai_response.h"

namespace tessera::server {
namespace {

constexpr const char* kClientGone = "client disconnected";

class SseBody : public AsyncBody {
 public:
  SseBody(std::shared_ptr<StreamSet> streams, SseHandlers handlers)
      : streams_(std::move(streams)), h_(std::move(handlers)) {}

  bool streaming() const override { return true; }

  void Start(std::function<void()> wake) override {
    streams_->SetListener(wake);
    wake();
  }

  bool Pump(std::string* chunk, HttpResponse* /*final*/) override {
    SseWriter out(chunk);
    if (!started_) {
      started_ = true;
      if (h_.on_start) h_.on_start(out);
    }
    for (auto& ev : streams_->TakeReady()) {
      if (ev.output.finished && ev.output.finish.server_abort()) {
        out.Write(SseError(AbortError(ev.output.finish)));
      }
      h_.on_event(out, ev);
    }
    if (!streams_->all_finished()) return false;
    if (h_.on_end) h_.on_end(out);
    return true;
  }

  std::string Heartbeat() override { return ": keep-alive\n\n"; }

  void Cancel() override { streams_->CancelAll(engine::AbortCause::kClientGone, kClientGone); }

 private:
  std::shared_ptr<StreamSet> streams_;
  SseHandlers h_;
  bool started_ = false;
};

class DeferredBody : public AsyncBody {
 public:
  DeferredBody(std::shared_ptr<StreamSet> streams,
               std::function<void(StreamSet::Event&)> on_event,
               std::function<void(HttpResponse&)> on_done)
      : streams_(std::move(streams)),
        on_event_(std::move(on_event)),
        on_done_(std::move(on_done)) {}

  bool streaming() const override { return false; }

  void Start(std::function<void()> wake) override {
    streams_->SetListener(wake);
    wake();
  }

  bool Pump(std::string* /*chunk*/, HttpResponse* final) override {
    for (auto& ev : streams_->TakeReady()) {
      on_event_(ev);
    }
    if (!streams_->all_finished()) return false;
    on_done_(*final);
    return true;
  }

  void Cancel() override { streams_->CancelAll(engine::AbortCause::kClientGone, kClientGone); }

 private:
  std::shared_ptr<StreamSet> streams_;
  std::function<void(StreamSet::Event&)> on_event_;
  std::function<void(HttpResponse&)> on_done_;
};

}  // namespace

void StartStreamingResponse(HttpResponse& res,
                            std::shared_ptr<StreamSet> streams,
                            SseHandlers handlers) {
  res.status = 200;
  res.content_type = "text/event-stream";
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");
  res.async =
      std::make_shared<SseBody>(std::move(streams), std::move(handlers));
}

void DeferResponse(HttpResponse& res, std::shared_ptr<StreamSet> streams,
                   std::function<void(StreamSet::Event&)> on_event,
                   std::function<void(HttpResponse&)> on_done) {
  res.async = std::make_shared<DeferredBody>(
      std::move(streams), std::move(on_event), std::move(on_done));
}

}  // namespace tessera::server
