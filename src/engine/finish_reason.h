// FinishReason: how one generated sequence ended. The engine fills it in;
// the server renders it as /generate's meta_info.finish_reason and as the
// OpenAI finish_reason string. Plain value type.
#ifndef TESSERA_ENGINE_FINISH_REASON_H_
#define TESSERA_ENGINE_FINISH_REASON_H_

#include <cstdint>
#include <optional>
#include <string>

namespace tessera::engine {

struct FinishReason {
  enum class Kind { kStop, kLength, kAbort };
  Kind kind = Kind::kStop;
  std::optional<int32_t> matched_token;     // kStop on a stop token / EOS
  std::optional<std::string> matched_text;  // kStop on a stop string
  int64_t length = 0;                       // kLength: tokens generated
  std::string message;                      // kAbort: why
};

}  // namespace tessera::engine

#endif  // TESSERA_ENGINE_FINISH_REASON_H_
