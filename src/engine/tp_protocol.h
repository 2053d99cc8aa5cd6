// The tensor-parallel control channel: rank 0 (the scheduler) tells each
// worker rank what to run, one message per step, over a stream socket (a
// socketpair inherited by a worker on the same node).
//
// A message is a 16-byte header {u32 magic, u32 type, u64 payload bytes}
// then the payload. Types:
//   kStep      a model::Batch (sequences' tokens, cached lengths, pages;
//              device tokens; all_logits) plus `sampled_rows`, the rows the
//              step's ids broadcast carries;
//   kShutdown  no payload: exit cleanly;
// and from a worker to rank 0 during start-up:
//   kHello     the worker's runtime started (it joins the communicator next);
//   kReady     its runner is built; the payload describes it (model,
//              dtypes, shard, KV pages, plugin and ABI) for rank 0 to
//              compare with its own.
// A worker on another node (--nnodes) reaches rank 0 over TCP instead
// (--dist-init-addr) and opens the channel with
//   kJoin      its rank, as text;
// which rank 0 answers with
//   kJoined    "<communicator id hex> <KV pool tokens>" (what a local
//              worker gets as flags).
// Host byte order (every rank runs on the same architecture).
//
// Thread-safety: a channel end is used by one thread at a time.
#ifndef TESSERA_ENGINE_TP_PROTOCOL_H_
#define TESSERA_ENGINE_TP_PROTOCOL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "model/model_runner.h"

namespace tessera::engine {

enum class TpMessageType : uint32_t {
  kStep = 1,
  kShutdown = 2,
  kHello = 3,
  kReady = 4,
  kJoin = 5,
  kJoined = 6,
};

// A step as a worker receives it; batch() views into the owned vectors.
struct TpStep {
  struct Sequence {
    std::vector<int32_t> tokens;
    std::vector<int32_t> pages;
    int64_t cached_len = 0;
    bool all_rows = false;
  };
  std::vector<Sequence> sequences;
  std::vector<model::DeviceToken> device_tokens;
  bool all_logits = false;
  int64_t sampled_rows = 0;

  // The batch to run; token_source is left for the worker to set.
  model::Batch batch() const;
};

struct TpMessage {
  TpMessageType type = TpMessageType::kShutdown;
  TpStep step;       // kStep only
  std::string text;  // kReady, kJoin, kJoined
};

// Writes one step / a shutdown to `fd` (blocking until written).
Status SendTpStep(int fd, const model::Batch& batch, int64_t sampled_rows);
Status SendTpShutdown(int fd);
Status SendTpHello(int fd);
Status SendTpReady(int fd, const std::string& description);
// A text message (kReady, kJoin, kJoined).
Status SendTpText(int fd, TpMessageType type, const std::string& text);
// Reads the next message. Unavailable when the peer closed the channel.
StatusOr<TpMessage> ReceiveTpMessage(int fd);

}  // namespace tessera::engine

#endif  // TESSERA_ENGINE_TP_PROTOCOL_H_
