#include "bench/request_runner.h"

#include <fmt/format.h>
#include <httplib.h>

#include <algorithm>
#include <chrono>
#include <exception>

#include "bench/sse_reader.h"

namespace tessera::bench {
namespace {

using Clock = std::chrono::steady_clock;

// Timeouts: a request may wait long in the server's queue before its first
// byte (SGLang's client allows 6 hours); connecting and writing are quick.
constexpr int kConnectTimeoutS = 30;
constexpr int kWriteTimeoutS = 300;
constexpr int kReadTimeoutS = 6 * 60 * 60;

// Error bodies are read into memory up to this size.
constexpr size_t kMaxErrorBody = 64 * 1024;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// httplib names its errors in one word; say what happened to the request.
std::string DescribeFailure(httplib::Error error, bool response_started) {
  if (response_started) {
    return "the connection broke while the answer was streaming";
  }
  switch (error) {
    case httplib::Error::Connection:
      return "could not connect";
    case httplib::Error::ConnectionTimeout:
      return "connecting timed out";
    case httplib::Error::Write:
      return "the request could not be written";
    case httplib::Error::Read:
      return "the connection closed before any response; a server "
             "overwhelmed by simultaneous connections (a short listen "
             "backlog) does this";
    default:
      return "no response";
  }
}

void Send(const Endpoint& endpoint, const std::string& body,
          CompletionStream& stream) {
  httplib::Client client(endpoint.origin);
  if (!client.is_valid()) {
    stream.Fail(fmt::format("cannot use the URL {}", endpoint.Url()));
    stream.OnEnd(0.0, true);
    return;
  }
  client.set_connection_timeout(kConnectTimeoutS);
  client.set_write_timeout(kWriteTimeoutS);
  client.set_read_timeout(kReadTimeoutS);
  client.set_tcp_nodelay(true);

  httplib::Request req;
  req.method = "POST";
  req.path = endpoint.path_prefix + "/v1/completions";
  req.body = body;
  req.set_header("Content-Type", "application/json");
  req.set_header("Accept", "text/event-stream");
  // Compressed streams would reach us in bursts and skew the clocks.
  req.set_header("Accept-Encoding", "identity");

  int status = 0;
  std::string error_body;
  SseReader reader;
  Clock::time_point start;
  req.response_handler = [&](const httplib::Response& response) {
    status = response.status;
    return true;
  };
  req.content_receiver = [&](const char* data, size_t size, uint64_t,
                             uint64_t) {
    if (status != 200) {
      if (error_body.size() < kMaxErrorBody) {
        error_body.append(data, std::min(size, kMaxErrorBody - error_body.size()));
      }
      return true;
    }
    const double t = SecondsSince(start);
    for (const std::string& event : reader.Feed(std::string_view(data, size))) {
      if (!stream.OnEvent(event, t)) return false;  // failed: stop reading
    }
    return true;
  };

  httplib::Response response;
  httplib::Error error = httplib::Error::Success;
  start = Clock::now();
  const bool sent = client.send(req, response, error);
  const double end = SecondsSince(start);
  if (status != 0 && status != 200) {
    stream.Fail(fmt::format("HTTP {}: {}", status,
                            ErrorMessageFromBody(error_body)));
  } else if (!sent && error != httplib::Error::Canceled) {
    // Canceled: our receiver stopped after the stream failed; the reason is
    // already recorded.
    stream.Fail(fmt::format("POST {}/v1/completions failed: {} ({})",
                            endpoint.Url(), httplib::to_string(error),
                            DescribeFailure(error, status == 200)));
  }
  stream.OnEnd(end, reader.Finish());
}

}  // namespace

nlohmann::ordered_json CompletionRequestJson(
    const std::string& model, const BenchRequest& request,
    const nlohmann::ordered_json& extra) {
  nlohmann::ordered_json body = nlohmann::ordered_json::object();
  body["model"] = model;
  body["prompt"] = request.prompt_ids;
  body["max_tokens"] = request.output_len;
  body["temperature"] = 0;
  body["ignore_eos"] = true;
  body["stream"] = true;
  body["stream_options"] = {{"include_usage", true}};
  for (const auto& [key, value] : extra.items()) body[key] = value;
  return body;
}

RequestResult RunRequest(const Endpoint& endpoint, const std::string& model,
                         const BenchRequest& request,
                         const nlohmann::ordered_json& extra) {
  CompletionStream stream(int64_t(request.prompt_ids.size()),
                          request.output_len);
  try {
    Send(endpoint, CompletionRequestJson(model, request, extra).dump(), stream);
  } catch (const std::exception& e) {  // std::bad_alloc and the like
    stream.Fail(fmt::format("the request could not be sent: {}", e.what()));
    stream.OnEnd(0.0, true);
  }
  return stream.TakeResult();
}

}  // namespace tessera::bench
