#include "cli/model_loading.h"

#include <algorithm>

#include "cli/generate_prompt.h"

namespace tessera::cli {

std::vector<int32_t> EosIds(const model::Checkpoint& checkpoint,
                            const Tokenizer& tokenizer) {
  std::vector<int32_t> ids = checkpoint.EosTokenIds();
  if (auto eos = tokenizer.eos_id();
      eos && std::find(ids.begin(), ids.end(), *eos) == ids.end()) {
    ids.push_back(*eos);
  }
  return ids;
}

int ModelFailureCode(const Status& status) {
  switch (status.code()) {
    case StatusCode::kInvalidArgument:
    case StatusCode::kNotFound:
    case StatusCode::kUnimplemented:
      return kExitBadInput;
    default:
      return kExitRuntimeFailure;
  }
}

}  // namespace tessera::cli
