// The multi-turn dataset and load of `tessera bench --dataset-name
// multi-turn`, in the spirit of SGLang's bench_multiturn.py: agent and chat
// clients that resend an ever longer history, the workload the
// hierarchical KV cache is for.
//
// Dataset: num_conversations conversations of `rounds` rounds. Round r of
// conversation c sends
//   q_0 a_0 q_1 a_1 ... q_{r-1} a_{r-1} q_r
// where q_t is the turn's new question (question_len random ids) and a_t
// the previous answer (answer_len = output_len random ids: a seeded stand-in
// for the server's own answer, so every server compared gets the very same
// prompts), and asks for output_len tokens. Conversation c round r is
// conversations[c][r]; BenchRequest::group = c. A pure function of its
// options.
//
// Load: conversations start at Poisson arrivals (--request-rate, or all
// at once) and stay live until their last round; within a conversation
// round r + 1 is sent when round r has completed; at most max_concurrency
// requests are in flight, taken first come, first served, so the rounds of
// all live conversations interleave and their histories together are the
// working set (as users who think between turns). Results come back
// conversation-major (c * rounds + r).
//
// RunMultiTurnLoad is called from one thread and blocks; `send` runs on
// one worker thread per conversation in flight.
#ifndef TESSERA_BENCH_MULTI_TURN_H_
#define TESSERA_BENCH_MULTI_TURN_H_

#include <cstdint>
#include <vector>

#include "base/status.h"
#include "bench/datasets.h"
#include "bench/load_generator.h"

namespace tessera::bench {

struct MultiTurnDatasetOptions {
  int64_t num_conversations = 16;
  int64_t rounds = 4;
  int64_t question_len = 256;  // new ids per round
  int64_t output_len = 64;     // generated (and stand-in answer) per round
  int64_t vocab_size = 0;      // > 0, from the server
  uint64_t seed = 0;
};

// InvalidArgument naming the flag for sizes < 1 or a bad vocabulary.
StatusOr<std::vector<std::vector<BenchRequest>>> MakeMultiTurnDataset(
    const MultiTurnDatasetOptions& options);

// Runs the conversations under the load above.
StatusOr<LoadResult> RunMultiTurnLoad(
    const std::vector<std::vector<BenchRequest>>& conversations,
    const SendFn& send, const LoadOptions& options);

}  // namespace tessera::bench

#endif  // TESSERA_BENCH_MULTI_TURN_H_
