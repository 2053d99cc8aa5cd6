// HttpConnection: one client connection of the HTTP front (http_server.h),
// event-driven on Asio. No thread is held by a connection: bytes are read as
// they arrive and parsed with Beast's HTTP/1.1 parser; a complete request is
// handed to the ConnectionHost (which runs its handler on a worker thread);
// the answer is written back asynchronously, whether it is a whole response
// or an AsyncBody (an SSE stream, or a response that waits for generation).
//
// What a client cannot do to it:
//   - hold it without sending: the first request must arrive within
//     read_timeout of the connect, the next within keep_alive_timeout of the
//     previous answer, and a request's header within read_timeout of its
//     first byte (a client that sends a byte at a time is cut off: 408);
//   - send unbounded input: a request line over max_request_line_bytes is
//     414, a header over max_header_bytes 431, a body over the route's limit
//     413 (refused from Content-Length before it is read when possible);
//   - leave work running: a client that resets or closes the connection
//     cancels its request's generation (AsyncBody::Cancel). A client that
//     only shut down its sending side (half-close) still gets its answer:
//     while a non-streaming answer is pending the connection sends
//     "102 Processing" once a second after the client's FIN, and the
//     connection reset a fully closed client answers with cancels the work;
//   - stall the writer: a write that makes no progress for write_timeout
//     closes the connection (and cancels its work).
// Pipelined requests are answered in order, one at a time.
//
// Thread-safety: every member runs on the connection's strand; Start, Drain
// and Abort may be called from any thread (they post onto it).
#ifndef TESSERA_SERVER_HTTP_CONNECTION_H_
#define TESSERA_SERVER_HTTP_CONNECTION_H_

#include <atomic>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/optional.hpp>
#include <chrono>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <string>

#include "server/http_message.h"

namespace tessera::server {

struct ConnectionLimits {
  std::chrono::seconds read_timeout{10};
  std::chrono::seconds keep_alive_timeout{5};
  std::chrono::seconds write_timeout{60};
  size_t max_request_line_bytes = size_t{16} << 10;
  size_t max_header_bytes = size_t{64} << 10;
  // The largest body any route accepts (each route has its own limit).
  size_t max_body_bytes = size_t{64} << 20;
  // Bytes read ahead (pipelined requests) while an answer is pending.
  size_t max_read_ahead_bytes = size_t{1} << 20;
  // Answer bytes queued for a client that does not read them.
  size_t max_queued_write_bytes = size_t{64} << 20;
};

class HttpConnection;

// What a connection needs from its server. Called on the connection's
// strand; implementations must be thread-safe.
class ConnectionHost {
 public:
  virtual ~ConnectionHost() = default;
  // The most body bytes `method path` accepts.
  virtual size_t MaxBodyBytes(const std::string& method,
                              const std::string& path) = 0;
  // Runs the handler for `request` off the I/O threads and calls `done`
  // with its response (from any thread, exactly once).
  virtual void Dispatch(std::shared_ptr<HttpRequest> request,
                        std::function<void(HttpResponse)> done) = 0;
  // `connection` is closed (exactly once per connection).
  virtual void ConnectionClosed(const HttpConnection* connection) = 0;
};

class HttpConnection : public std::enable_shared_from_this<HttpConnection> {
 public:
  HttpConnection(boost::asio::ip::tcp::socket socket, ConnectionHost& host,
                 const ConnectionLimits& limits);
  HttpConnection(const HttpConnection&) = delete;
  HttpConnection& operator=(const HttpConnection&) = delete;

  void Start();
  // Server shutdown: close now when idle, else after the current answer.
  void Drain();
  // Close now, cancelling whatever the connection was answering.
  void Abort();

 private:
  using Clock = std::chrono::steady_clock;
  using Parser =
      boost::beast::http::request_parser<boost::beast::http::string_body>;
  enum class State {
    kIdle,        // between requests (nothing of the next one yet)
    kReceiving,   // part of a request is in
    kHandling,    // the handler runs on a worker
    kResponding,  // writing the answer or waiting for its AsyncBody
    kClosing,     // answer sent, send side shut down, draining reads
    kClosed,
  };

  void Read();
  void OnRead(const boost::system::error_code& ec, size_t n);
  void OnPeerEof();
  void ParseBuffered();
  bool CheckRequestLine();
  bool CheckHeader();
  void OnRequestComplete();
  void OnHandled(HttpResponse response);
  void Wake();
  void PumpBody();
  void FinishExchange();
  void Tick();
  void ArmTick();

  // Writes an error answer and closes the connection afterwards.
  void RefuseRequest(int status, const std::string& message);
  void WriteResponse(const HttpResponse& response);
  void QueueWrite(std::string bytes);
  void DoWrite();
  void GracefulClose();
  void Close(const char* why);

  boost::asio::ip::tcp::socket socket_;
  boost::asio::steady_timer tick_;
  ConnectionHost& host_;
  const ConnectionLimits limits_;

  State state_ = State::kIdle;
  boost::beast::flat_buffer buffer_;
  boost::optional<Parser> parser_;
  bool request_line_checked_ = false;
  bool header_checked_ = false;
  bool reading_ = false;
  bool peer_eof_ = false;
  bool close_after_answer_ = false;
  Clock::time_point phase_deadline_;  // idle / header / body deadline

  // The current request (valid from OnRequestComplete to FinishExchange).
  int version_ = 11;
  bool keep_alive_ = true;
  std::shared_ptr<AsyncBody> body_;
  bool body_streaming_ = false;
  // Headers of the handler's response (CORS, ...), kept for the final
  // response a non-streaming AsyncBody fills later.
  HttpHeaders deferred_headers_;
  bool chunked_ = false;
  Clock::time_point last_output_;
  std::atomic<bool> wake_pending_{false};

  std::deque<std::string> writes_;
  size_t queued_write_bytes_ = 0;
  bool writing_ = false;
  Clock::time_point write_started_;
  bool tick_armed_ = false;
};

}  // namespace tessera::server

#endif  // TESSERA_SERVER_HTTP_CONNECTION_H_
