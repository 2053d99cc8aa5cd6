// Model-loading helpers shared by `generate` and `serve`: the EOS ids a
// checkpoint and its tokenizer declare, and the exit code for a failure
// while loading or running a model.
#ifndef TESSERA_CLI_MODEL_LOADING_H_
#define TESSERA_CLI_MODEL_LOADING_H_

#include <cstdint>
#include <vector>

#include "base/status.h"
#include "model/checkpoint.h"
#include "tokenizer/tokenizer.h"

namespace tessera::cli {

// Any of the checkpoint's EOS ids and the tokenizer's eos token.
std::vector<int32_t> EosIds(const model::Checkpoint& checkpoint,
                            const Tokenizer& tokenizer);

// The checkpoint's fault (unsupported, malformed, mismatched) is bad input
// (kExitBadInput), anything else a runtime failure (kExitRuntimeFailure).
int ModelFailureCode(const Status& status);

}  // namespace tessera::cli

#endif  // TESSERA_CLI_MODEL_LOADING_H_
