// The built-in demo checkpoint that `tessera serve` runs with no
// --model-path: make-model's "tiny" Qwen3 (f32, seed 0), written once into a
// directory and reused while its stamp matches.
//
// Concurrency contract: any number of processes may call EnsureDemoModel on
// the same directory at once (ctest -j, two servers started together).
// Check-and-write runs under an exclusive flock(2) on "<dir>.lock", so one
// process writes while the others wait and then find the stamp; a process
// that dies mid-write releases the lock, and the next caller rewrites the
// files (the stamp is written last, so a torn directory never matches).
#ifndef TESSERA_MODEL_DEMO_MODEL_H_
#define TESSERA_MODEL_DEMO_MODEL_H_

#include <string>

#include "base/status.h"

namespace tessera::model {

// Identifies make-model's output for the demo; bumped whenever it changes
// (weights, tokenizer, chat template) so an old directory is rewritten.
inline constexpr const char* kDemoModelStamp =
    "tessera-demo 2 (tiny, qwen3, f32, seed 0)";

// Writes the demo checkpoint into `dir` unless it already holds it, and
// returns the directory's canonical path. Internal (with what to do next)
// when the lock or the files cannot be written.
StatusOr<std::string> EnsureDemoModel(const std::string& dir);

}  // namespace tessera::model

#endif  // TESSERA_MODEL_DEMO_MODEL_H_
