#include "server/api_error.h"

#include <fmt/format.h>

#include <utility>

namespace tessera::server {

Json ApiError::ToJson() const {
  Json inner = Json::object();
  inner["message"] = message;
  inner["type"] = type;
  inner["param"] = param.empty() ? Json(nullptr) : Json(param);
  inner["code"] = code.empty() ? Json(nullptr) : Json(code);
  Json out = Json::object();
  out["error"] = std::move(inner);
  return out;
}

std::string ApiError::Body() const {
  return ToJson().dump(-1, ' ', false, Json::error_handler_t::replace);
}

ApiError BadRequest(std::string message, std::string param, std::string code) {
  return ApiError{400, std::move(message), "invalid_request_error",
                  std::move(param), std::move(code)};
}

ApiError UnsupportedParameter(const std::string& param,
                              const std::string& detail) {
  std::string message =
      fmt::format("'{}' is not supported by Tessera yet", param);
  if (!detail.empty()) message += fmt::format(" ({})", detail);
  message += "; remove it from the request";
  return ApiError{400, std::move(message), "invalid_request_error", param,
                  "unsupported_parameter"};
}

ApiError Unauthorized(std::string message) {
  return ApiError{401, std::move(message), "authentication_error", "",
                  "invalid_api_key"};
}

ApiError ModelNotFound(const std::string& model) {
  return ApiError{404,
                  fmt::format("The model '{}' does not exist; GET /v1/models "
                              "lists the models this server serves",
                              model),
                  "invalid_request_error", "model", "model_not_found"};
}

ApiError NotFound(std::string message) {
  return ApiError{404, std::move(message), "invalid_request_error", "",
                  "not_found"};
}

ApiError ServiceUnavailable(std::string message) {
  return ApiError{503, std::move(message), "service_unavailable_error", "",
                  "server_overloaded"};
}

ApiError InternalServerError(std::string message) {
  return ApiError{500, std::move(message), "internal_server_error", "", ""};
}

ApiError ApiErrorFromStatus(const Status& status) {
  switch (status.code()) {
    case StatusCode::kInvalidArgument:
    case StatusCode::kOutOfRange:
    case StatusCode::kFailedPrecondition:
      return BadRequest(status.message());
    case StatusCode::kNotFound:
      return NotFound(status.message());
    case StatusCode::kResourceExhausted:
    case StatusCode::kUnavailable:
      return ServiceUnavailable(status.message());
    case StatusCode::kUnimplemented:
      return ApiError{400, status.message(), "invalid_request_error", "",
                      "unsupported_parameter"};
    default:
      return InternalServerError(status.message());
  }
}

ApiError AbortError(const engine::FinishReason& finish) {
  if (finish.cause == engine::AbortCause::kShutdown) {
    return ServiceUnavailable(finish.message.empty()
                                  ? "the server is shutting down"
                                  : finish.message);
  }
  return InternalServerError(finish.message.empty() ? "request aborted"
                                                    : finish.message);
}

}  // namespace tessera::server
