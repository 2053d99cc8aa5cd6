#include "server/http_connection.h"

#include <fmt/format.h>
#include <strings.h>

#include <boost/asio/buffer.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http/error.hpp>
#include <string_view>
#include <utility>

#include "server/api_error.h"

namespace tessera::server {
namespace {

namespace asio = boost::asio;
namespace http = boost::beast::http;
using boost::system::error_code;

constexpr auto kTickPeriod = std::chrono::seconds(1);
constexpr auto kHeartbeatAfter = std::chrono::seconds(2);
constexpr auto kLingerTime = std::chrono::seconds(2);

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() &&
         ::strncasecmp(a.data(), b.data(), a.size()) == 0;
}

std::string StatusLine(int version, int status) {
  return fmt::format("HTTP/1.{} {} {}\r\n", version == 10 ? 0 : 1, status,
                     HttpReasonPhrase(status));
}

std::string ChunkOf(std::string_view bytes) {
  return fmt::format("{:x}\r\n{}\r\n", bytes.size(), bytes);
}

}  // namespace

HttpConnection::HttpConnection(asio::ip::tcp::socket socket,
                               ConnectionHost& host,
                               const ConnectionLimits& limits)
    : socket_(std::move(socket)),
      tick_(socket_.get_executor()),
      host_(host),
      limits_(limits) {}

void HttpConnection::Start() {
  asio::post(socket_.get_executor(), [self = shared_from_this()] {
    self->phase_deadline_ = Clock::now() + self->limits_.read_timeout;
    self->ArmTick();
    self->Read();
  });
}

void HttpConnection::Drain() {
  asio::post(socket_.get_executor(), [self = shared_from_this()] {
    if (self->state_ == State::kClosed || self->state_ == State::kClosing) {
      return;
    }
    self->close_after_answer_ = true;
    if (self->state_ == State::kIdle || self->state_ == State::kReceiving) {
      // Nothing accepted yet on this connection: no answer is owed.
      self->GracefulClose();
    }
  });
}

void HttpConnection::Abort() {
  asio::post(socket_.get_executor(), [self = shared_from_this()] {
    self->Close("the server is shutting down");
  });
}

// ---- reading ----

void HttpConnection::Read() {
  if (reading_ || peer_eof_ || state_ == State::kClosed) return;
  // While an answer is pending, read ahead only so far (pipelined requests
  // wait in the buffer); reading resumes when the answer is done.
  const bool busy = state_ == State::kHandling || state_ == State::kResponding;
  if (busy && buffer_.size() >= limits_.max_read_ahead_bytes) return;
  reading_ = true;
  socket_.async_read_some(
      buffer_.prepare(16384),
      [self = shared_from_this()](const error_code& ec, size_t n) {
        self->OnRead(ec, n);
      });
}

void HttpConnection::OnRead(const error_code& ec, size_t n) {
  reading_ = false;
  if (state_ == State::kClosed) return;
  if (ec == asio::error::eof) {
    peer_eof_ = true;
    OnPeerEof();
    return;
  }
  if (ec) {
    Close("the client reset the connection");
    return;
  }
  buffer_.commit(n);
  if (state_ == State::kClosing) {
    buffer_.consume(buffer_.size());  // lingering: discard
    Read();
    return;
  }
  if (state_ == State::kIdle || state_ == State::kReceiving) ParseBuffered();
  Read();
}

void HttpConnection::OnPeerEof() {
  switch (state_) {
    case State::kIdle:
    case State::kReceiving:
      // Requests complete in the buffer were parsed already; what is left
      // can never be completed.
      if (writing_ || !writes_.empty()) {
        close_after_answer_ = true;
        state_ = State::kClosing;
      } else {
        Close("the client closed the connection");
      }
      return;
    case State::kHandling:
    case State::kResponding:
      // Half-closed or gone: the answer still goes out (Tick probes a
      // non-streaming wait, heartbeats probe a stream), and so do those of
      // requests already in the buffer (FinishExchange).
      return;
    case State::kClosing:
      Close("closed after the answer");
      return;
    case State::kClosed:
      return;
  }
}

void HttpConnection::ParseBuffered() {
  while ((state_ == State::kIdle || state_ == State::kReceiving) &&
         buffer_.size() > 0) {
    if (state_ == State::kIdle) {
      state_ = State::kReceiving;
      parser_.emplace();
      parser_->header_limit(
          static_cast<std::uint32_t>(limits_.max_header_bytes));
      // Stop after the header: the body limit depends on the route, and
      // the parser checks Content-Length against its limit as the header
      // completes, so it starts at the largest any route takes.
      parser_->eager(false);
      parser_->body_limit(limits_.max_body_bytes);
      request_line_checked_ = false;
      header_checked_ = false;
      phase_deadline_ = Clock::now() + limits_.read_timeout;
    }
    if (!request_line_checked_ && !CheckRequestLine()) return;
    error_code ec;
    const size_t used = parser_->put(buffer_.data(), ec);
    buffer_.consume(used);
    if (ec == http::error::need_more) {
      if (parser_->is_header_done() && !header_checked_) CheckHeader();
      return;
    }
    if (ec == http::error::header_limit) {
      return RefuseRequest(431, fmt::format("the request's header is larger "
                                            "than {} KiB",
                                            limits_.max_header_bytes >> 10));
    }
    if (ec == http::error::body_limit) {
      return RefuseRequest(413, "the request body is too large");
    }
    if (ec) {
      return RefuseRequest(400, "malformed HTTP request: " + ec.message());
    }
    if (parser_->is_header_done() && !header_checked_ && !CheckHeader()) {
      return;
    }
    if (parser_->is_done()) {
      OnRequestComplete();
      return;
    }
    if (used == 0) return;
  }
}

// A request line longer than the limit is refused with 414 before more of
// it is read (a 50 MB request line is cut off at the limit).
bool HttpConnection::CheckRequestLine() {
  const std::string_view data(static_cast<const char*>(buffer_.data().data()),
                              buffer_.size());
  const size_t eol = data.find('\n');
  const size_t line = eol == std::string_view::npos ? data.size() : eol;
  if (line > limits_.max_request_line_bytes) {
    RefuseRequest(414, fmt::format("the request line is longer than {} KiB",
                                   limits_.max_request_line_bytes >> 10));
    return false;
  }
  if (eol != std::string_view::npos) request_line_checked_ = true;
  return true;
}

bool HttpConnection::CheckHeader() {
  header_checked_ = true;
  const auto& header = parser_->get();
  const std::string method(header.method_string());
  std::string path(header.target());
  if (const size_t q = path.find('?'); q != std::string::npos) path.resize(q);
  const size_t limit = host_.MaxBodyBytes(method, path);
  parser_->body_limit(limit);
  if (const auto length = parser_->content_length();
      length && *length > limit) {
    RefuseRequest(413, fmt::format("the request body ({} bytes) is larger "
                                   "than the {} bytes {} {} accepts",
                                   *length, limit, method, path));
    return false;
  }
  // The body gets the read timeout plus a second per 64 KiB announced.
  const uint64_t announced = parser_->content_length().value_or(0);
  phase_deadline_ = Clock::now() + limits_.read_timeout +
                    std::chrono::seconds(announced >> 16);
  parser_->eager(true);
  const auto expect = header[http::field::expect];
  if (!expect.empty() && !parser_->is_done()) {
    if (!EqualsIgnoreCase(std::string_view(expect.data(), expect.size()),
                          "100-continue")) {
      RefuseRequest(417, "only 'Expect: 100-continue' is supported");
      return false;
    }
    QueueWrite(StatusLine(header.version(), 100) + "\r\n");
  }
  return true;
}

void HttpConnection::OnRequestComplete() {
  auto request = std::make_shared<HttpRequest>();
  auto message = parser_->release();
  parser_.reset();
  request->method = std::string(message.method_string());
  request->target = std::string(message.target());
  request->path = request->target;
  if (const size_t q = request->path.find('?'); q != std::string::npos) {
    request->path.resize(q);
  }
  request->version = static_cast<int>(message.version());
  for (const auto& field : message) {
    request->headers.emplace_back(std::string(field.name_string()),
                                  std::string(field.value()));
  }
  request->body = std::move(message.body());
  error_code ec;
  const auto remote = socket_.remote_endpoint(ec);
  if (!ec) request->remote_addr = remote.address().to_string();
  version_ = request->version;
  keep_alive_ = message.keep_alive();
  state_ = State::kHandling;
  host_.Dispatch(std::move(request),
                 [self = shared_from_this()](HttpResponse response) {
                   asio::post(self->socket_.get_executor(),
                              [self, response = std::move(response)]() mutable {
                                self->OnHandled(std::move(response));
                              });
                 });
}

// ---- answering ----

void HttpConnection::OnHandled(HttpResponse response) {
  if (state_ == State::kClosed) {
    if (response.async) response.async->Cancel();
    return;
  }
  state_ = State::kResponding;
  if (!response.async) {
    WriteResponse(response);
    FinishExchange();
    return;
  }
  body_ = std::move(response.async);
  body_streaming_ = body_->streaming();
  deferred_headers_ = std::move(response.headers);
  last_output_ = Clock::now();
  if (body_streaming_) {
    // HTTP/1.0 has no chunked encoding: the stream ends with the connection.
    chunked_ = version_ != 10;
    if (!chunked_) close_after_answer_ = true;
    std::string head = StatusLine(version_, response.status);
    head += fmt::format("Content-Type: {}\r\n", response.content_type);
    for (const auto& [name, value] : deferred_headers_) {
      head += fmt::format("{}: {}\r\n", name, value);
    }
    if (chunked_) head += "Transfer-Encoding: chunked\r\n";
    const bool close = close_after_answer_ || !keep_alive_;
    head +=
        close ? "Connection: close\r\n\r\n" : "Connection: keep-alive\r\n\r\n";
    QueueWrite(std::move(head));
  }
  std::weak_ptr<HttpConnection> weak = weak_from_this();
  body_->Start([weak] {
    if (auto self = weak.lock()) self->Wake();
  });
}

void HttpConnection::Wake() {
  if (wake_pending_.exchange(true)) return;
  asio::post(socket_.get_executor(), [self = shared_from_this()] {
    self->wake_pending_.store(false);
    self->PumpBody();
  });
}

void HttpConnection::PumpBody() {
  if (!body_ || state_ != State::kResponding) return;
  std::string chunk;
  HttpResponse final;
  const bool done = body_->Pump(&chunk, &final);
  if (body_streaming_) {
    if (!chunk.empty()) {
      last_output_ = Clock::now();
      QueueWrite(chunked_ ? ChunkOf(chunk) : std::move(chunk));
    }
    if (!done) return;
    body_.reset();
    if (chunked_) QueueWrite("0\r\n\r\n");
    FinishExchange();
    return;
  }
  if (!done) return;
  body_.reset();
  final.headers.insert(final.headers.begin(), deferred_headers_.begin(),
                       deferred_headers_.end());
  WriteResponse(final);
  FinishExchange();
}

void HttpConnection::WriteResponse(const HttpResponse& response) {
  const bool close = close_after_answer_ || !keep_alive_;
  if (close) close_after_answer_ = true;
  std::string out = StatusLine(version_, response.status);
  out += fmt::format("Content-Type: {}\r\nContent-Length: {}\r\n",
                     response.content_type, response.body.size());
  for (const auto& [name, value] : response.headers) {
    out += fmt::format("{}: {}\r\n", name, value);
  }
  out += close ? "Connection: close\r\n\r\n" : "Connection: keep-alive\r\n\r\n";
  out += response.body;
  QueueWrite(std::move(out));
}

void HttpConnection::FinishExchange() {
  if (state_ == State::kClosed) return;
  if (close_after_answer_) {
    GracefulClose();
    return;
  }
  state_ = State::kIdle;
  phase_deadline_ = Clock::now() + limits_.keep_alive_timeout;
  ParseBuffered();  // a pipelined request may be waiting
  if (peer_eof_ && (state_ == State::kIdle || state_ == State::kReceiving)) {
    // The client sent its FIN: nothing more can come.
    GracefulClose();
    return;
  }
  Read();
}

void HttpConnection::RefuseRequest(int status, const std::string& message) {
  parser_.reset();
  buffer_.consume(buffer_.size());
  version_ = 11;
  close_after_answer_ = true;
  state_ = State::kResponding;
  const ApiError error{status, message, "invalid_request_error", "", ""};
  HttpResponse response;
  response.status = status;
  response.set_content(error.Body(), "application/json");
  WriteResponse(response);
  FinishExchange();
}

// ---- writing and closing ----

void HttpConnection::QueueWrite(std::string bytes) {
  if (state_ == State::kClosed || bytes.empty()) return;
  queued_write_bytes_ += bytes.size();
  if (queued_write_bytes_ > limits_.max_queued_write_bytes) {
    Close("the client does not read its answer");
    return;
  }
  writes_.push_back(std::move(bytes));
  if (!writing_) DoWrite();
}

void HttpConnection::DoWrite() {
  writing_ = true;
  write_started_ = Clock::now();
  asio::async_write(socket_, asio::buffer(writes_.front()),
                    [self = shared_from_this()](const error_code& ec, size_t) {
                      self->writing_ = false;
                      if (self->state_ == State::kClosed) return;
                      if (ec) {
                        self->Close("the client is gone (write failed)");
                        return;
                      }
                      self->queued_write_bytes_ -= self->writes_.front().size();
                      self->writes_.pop_front();
                      if (!self->writes_.empty()) {
                        self->DoWrite();
                      } else if (self->state_ == State::kClosing) {
                        self->GracefulClose();
                      }
                    });
}

// Shuts the sending side once everything is written, then reads (and
// discards) until the client closes or kLingerTime passes, so that a client
// still sending does not get a reset that destroys the answer in flight.
void HttpConnection::GracefulClose() {
  if (state_ == State::kClosed) return;
  if (body_) {
    body_->Cancel();
    body_.reset();
  }
  state_ = State::kClosing;
  if (writing_ || !writes_.empty()) return;  // DoWrite comes back here
  if (peer_eof_) {
    Close("closed after the answer");
    return;
  }
  error_code ignored;
  socket_.shutdown(asio::ip::tcp::socket::shutdown_send, ignored);
  phase_deadline_ = Clock::now() + kLingerTime;
  buffer_.consume(buffer_.size());
  Read();
}

void HttpConnection::Close(const char* /*why*/) {
  if (state_ == State::kClosed) return;
  state_ = State::kClosed;
  if (body_) {
    body_->Cancel();
    body_.reset();
  }
  error_code ignored;
  socket_.shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
  socket_.close(ignored);
  tick_.cancel();
  writes_.clear();
  host_.ConnectionClosed(this);
}

// ---- time ----

void HttpConnection::ArmTick() {
  if (tick_armed_ || state_ == State::kClosed) return;
  tick_armed_ = true;
  tick_.expires_after(kTickPeriod);
  tick_.async_wait([self = shared_from_this()](const error_code&) {
    self->tick_armed_ = false;
    if (self->state_ == State::kClosed) return;
    self->Tick();
    self->ArmTick();
  });
}

// Once a second: deadlines of the read phases and of writes, SSE
// heartbeats, and "102 Processing" probes for a client that sent its FIN
// while a non-streaming answer is pending.
void HttpConnection::Tick() {
  const Clock::time_point now = Clock::now();
  if (writing_ && now - write_started_ > limits_.write_timeout) {
    Close("the client stopped reading its answer");
    return;
  }
  switch (state_) {
    case State::kIdle:
      if (now > phase_deadline_) GracefulClose();
      return;
    case State::kReceiving:
      if (now > phase_deadline_) {
        RefuseRequest(408,
                      "the request did not arrive in time (see "
                      "--http-read-timeout)");
      }
      return;
    case State::kClosing:
      if (now > phase_deadline_) Close("linger time over");
      return;
    case State::kHandling:
      return;
    case State::kResponding:
      if (!body_) return;
      if (body_streaming_) {
        if (now - last_output_ >= kHeartbeatAfter) {
          last_output_ = now;
          const std::string beat = body_->Heartbeat();
          if (!beat.empty()) QueueWrite(chunked_ ? ChunkOf(beat) : beat);
        }
      } else if (peer_eof_ && version_ == 11) {
        // Interim answers are legal before the final one; a fully closed
        // client answers this with a reset, which the write reports.
        QueueWrite(StatusLine(11, 102) + "\r\n");
      }
      return;
    case State::kClosed:
      return;
  }
}

}  // namespace tessera::server
