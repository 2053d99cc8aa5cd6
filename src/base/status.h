// Status and StatusOr<T>: the error currency of Tessera.
//
// A Status is OK or carries a code and a message a person can act on. No
// exception crosses a module boundary; functions that can fail return Status
// or StatusOr<T>. Thread-compatible value types.
#ifndef TESSERA_BASE_STATUS_H_
#define TESSERA_BASE_STATUS_H_

#include <cassert>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace tessera {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,
  kNotFound,
  kAlreadyExists,
  kFailedPrecondition,
  kOutOfRange,
  kResourceExhausted,
  kUnimplemented,
  kUnavailable,
  kDataLoss,
  kInternal,
  kAborted,
};

std::string_view StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message)
      : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "INVALID_ARGUMENT: message", or "OK".
  std::string ToString() const;

  // Returns a copy whose message is "prefix: message" (OK stays OK).
  Status WithContext(std::string_view prefix) const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status OkStatus() { return Status(); }
inline Status InvalidArgumentError(std::string m) {
  return Status(StatusCode::kInvalidArgument, std::move(m));
}
inline Status NotFoundError(std::string m) {
  return Status(StatusCode::kNotFound, std::move(m));
}
inline Status AlreadyExistsError(std::string m) {
  return Status(StatusCode::kAlreadyExists, std::move(m));
}
inline Status FailedPreconditionError(std::string m) {
  return Status(StatusCode::kFailedPrecondition, std::move(m));
}
inline Status OutOfRangeError(std::string m) {
  return Status(StatusCode::kOutOfRange, std::move(m));
}
inline Status ResourceExhaustedError(std::string m) {
  return Status(StatusCode::kResourceExhausted, std::move(m));
}
inline Status UnimplementedError(std::string m) {
  return Status(StatusCode::kUnimplemented, std::move(m));
}
inline Status UnavailableError(std::string m) {
  return Status(StatusCode::kUnavailable, std::move(m));
}
inline Status DataLossError(std::string m) {
  return Status(StatusCode::kDataLoss, std::move(m));
}
inline Status InternalError(std::string m) {
  return Status(StatusCode::kInternal, std::move(m));
}
inline Status AbortedError(std::string m) {
  return Status(StatusCode::kAborted, std::move(m));
}

// Holds a T or a non-OK Status.
template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(const Status& status) : v_(status) {  // NOLINT: implicit by design
    assert(!status.ok() && "StatusOr built from an OK Status");
  }
  StatusOr(Status&& status) : v_(std::move(status)) {  // NOLINT
    assert(!std::get<Status>(v_).ok() && "StatusOr built from an OK Status");
  }
  StatusOr(const T& value) : v_(value) {}  // NOLINT
  StatusOr(T&& value) : v_(std::move(value)) {}  // NOLINT

  bool ok() const { return std::holds_alternative<T>(v_); }
  Status status() const { return ok() ? Status() : std::get<Status>(v_); }

  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<Status, T> v_;
};

}  // namespace tessera

#define TSR_STATUS_CONCAT_INNER(a, b) a##b
#define TSR_STATUS_CONCAT(a, b) TSR_STATUS_CONCAT_INNER(a, b)

// Returns from the enclosing function if `expr` (a Status) is not OK.
#define TSR_RETURN_IF_ERROR(expr)                 \
  do {                                            \
    ::tessera::Status tsr_status_tmp_ = (expr);   \
    if (!tsr_status_tmp_.ok()) return tsr_status_tmp_; \
  } while (0)

// `TSR_ASSIGN_OR_RETURN(auto x, Foo());` declares x from a StatusOr or
// returns its error.
#define TSR_ASSIGN_OR_RETURN(lhs, expr) \
  TSR_ASSIGN_OR_RETURN_IMPL(TSR_STATUS_CONCAT(tsr_statusor_, __LINE__), lhs, expr)
#define TSR_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                              \
  if (!tmp.ok()) return tmp.status();             \
  lhs = std::move(tmp).value()

#endif  // TESSERA_BASE_STATUS_H_
