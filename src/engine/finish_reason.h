// FinishReason: how one generated sequence ended. The engine fills it in;
// the server renders it as /generate's meta_info.finish_reason and as the
// OpenAI finish_reason string, and picks an aborted request's HTTP status
// from its AbortCause (never from the message text). Plain value type.
#ifndef TESSERA_ENGINE_FINISH_REASON_H_
#define TESSERA_ENGINE_FINISH_REASON_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tessera::engine {

// Why a sequence was aborted.
enum class AbortCause {
  kClientGone,    // the client disconnected (nobody reads the answer)
  kAbortRequest,  // /abort_request (or the client's own cancellation)
  kShutdown,      // the server is shutting down
  kError,         // the device, the model or the server failed
};

// "client_gone", "abort_request", "shutdown", "error".
std::string_view AbortCauseName(AbortCause cause);

struct FinishReason {
  enum class Kind { kStop, kLength, kAbort };
  Kind kind = Kind::kStop;
  std::optional<int32_t> matched_token;     // kStop on a stop token / EOS
  std::optional<std::string> matched_text;  // kStop on a stop string
  int64_t length = 0;                       // kLength: tokens generated
  AbortCause cause = AbortCause::kError;    // kAbort: which kind of abort
  std::string message;                      // kAbort: why, for people

  // An abort the server caused (shutdown, failure), as opposed to one the
  // client asked for: the answer reports it as an error.
  bool server_abort() const {
    return kind == Kind::kAbort &&
           (cause == AbortCause::kShutdown || cause == AbortCause::kError);
  }
};

}  // namespace tessera::engine

#endif  // TESSERA_ENGINE_FINISH_REASON_H_
