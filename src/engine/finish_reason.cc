#include "engine/finish_reason.h"

namespace tessera::engine {

std::string_view AbortCauseName(AbortCause cause) {
  switch (cause) {
    case AbortCause::kClientGone:
      return "client_gone";
    case AbortCause::kAbortRequest:
      return "abort_request";
    case AbortCause::kShutdown:
      return "shutdown";
    case AbortCause::kError:
      return "error";
  }
  return "error";
}

}  // namespace tessera::engine
