// ApiError: an error answer of the HTTP API, rendered the way OpenAI renders
// errors so that openai clients raise the right exception class:
//   {"error": {"message": "...", "type": "invalid_request_error",
//              "param": "temperature" | null, "code": "..." | null}}
// with `http_status` as the response status. Empty `param` / `code` render
// as null. Plain value type; thread-compatible.
#ifndef TESSERA_SERVER_API_ERROR_H_
#define TESSERA_SERVER_API_ERROR_H_

#include <nlohmann/json.hpp>

#include <optional>
#include <string>

#include "base/status.h"
#include "engine/finish_reason.h"

namespace tessera::server {

using Json = nlohmann::ordered_json;

struct ApiError {
  int http_status = 400;
  std::string message;
  std::string type;   // "invalid_request_error", "authentication_error", ...
  std::string param;  // the request field at fault; empty: none
  std::string code;   // machine-readable, e.g. "model_not_found"; empty: none

  Json ToJson() const;
  // ToJson() serialised (compact, invalid UTF-8 replaced).
  std::string Body() const;
};

// A parse step's outcome: nullopt when it succeeded.
using MaybeApiError = std::optional<ApiError>;

// 400 invalid_request_error naming `param`.
ApiError BadRequest(std::string message, std::string param = "",
                    std::string code = "");
// 400 for a known OpenAI parameter Tessera does not implement yet; code
// "unsupported_parameter".
ApiError UnsupportedParameter(const std::string& param,
                              const std::string& detail = "");
// 401 authentication_error, code "invalid_api_key".
ApiError Unauthorized(std::string message);
// 404 invalid_request_error, code "model_not_found", param "model".
ApiError ModelNotFound(const std::string& model);
// 404 for an unknown route, code "not_found".
ApiError NotFound(std::string message);
// 503 service_unavailable_error (queue full, engine not ready); code
// "server_overloaded".
ApiError ServiceUnavailable(std::string message);
// 500 internal_server_error.
ApiError InternalServerError(std::string message);

// Maps an engine Status to an API error: InvalidArgument/OutOfRange → 400,
// NotFound → 404, ResourceExhausted/Unavailable → 503, Unimplemented → 400
// unsupported, everything else → 500. Requires !status.ok().
ApiError ApiErrorFromStatus(const Status& status);

// The API error for a sequence that ended by abort, by its cause: 503 for
// a shutdown, 500 for everything else (a failure, /abort_request; a gone
// client reads nothing).
ApiError AbortError(const engine::FinishReason& finish);

}  // namespace tessera::server

// Returns the error from the enclosing function when `expr` (a MaybeApiError)
// holds one.
#define TSR_RETURN_IF_API_ERROR(expr)                       \
  do {                                                      \
    ::tessera::server::MaybeApiError tsr_api_err_ = (expr); \
    if (tsr_api_err_) return tsr_api_err_;                  \
  } while (0)

#endif  // TESSERA_SERVER_API_ERROR_H_
