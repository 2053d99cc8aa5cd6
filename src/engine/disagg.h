// PD disaggregation, the engine's side: what a prefill server hands its KV
// sender and what a decode server expects from its KV receiver. The
// transfer engine behind them (UCX, bootstrap service) is src/disagg/.
//
// A request carries a BootstrapInfo (SGLang's bootstrap_host /
// bootstrap_port / bootstrap_room, set by the router on both copies of the
// request). Then:
//   prefill server  computes the prompt and samples the first token like
//                   any request (max_new_tokens forced to 1), keeps its KV
//                   pages and hands the sender a KvBeginJob when it
//                   schedules the prompt's last chunk (the sender streams
//                   each layer's KV as the device finishes it,
//                   layer_progress.h) and a KvSendJob with the first token
//                   once the step is collected; the request finishes when
//                   the sender reports the room done (its pages then go to
//                   the radix cache, as usual);
//   decode server   matches the prompt against its radix cache, reserves
//                   pages for the rest of the prompt plus one decode slot,
//                   hands KvRecvJob to the receiver and decodes from the
//                   moment the receiver reports the room done (KV written
//                   and the first token known).
// Rooms are unique per request (the router draws them at random).
//
// Thread-safety: KvSender / KvReceiver implementations are called from the
// scheduler thread only, except where they say otherwise.
#ifndef TESSERA_ENGINE_DISAGG_H_
#define TESSERA_ENGINE_DISAGG_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <memory>

#include "base/status.h"
#include "engine/layer_progress.h"
#include "engine/request.h"

namespace tessera::engine {

enum class DisaggMode { kNull, kPrefill, kDecode };
StatusOr<DisaggMode> ParseDisaggMode(std::string_view name);
const char* DisaggModeName(DisaggMode mode);

// Prefill side, when the step that completes the prompt is scheduled: its
// KV (positions [0, slots.size()) at these pool slots), written layer by
// layer as `layers` says.
struct KvBeginJob {
  uint64_t room = 0;
  std::vector<int32_t> prompt_ids;  // to check the decode side's prompt
  std::vector<int32_t> slots;       // slot of each prompt position
  std::shared_ptr<LayerProgress> layers;
};

// Prefill side, once the step is collected: the first sampled token. After
// a Begin for the room only room, first_token and first_logprobs are read;
// without one the job says where the (already written) KV is.
struct KvSendJob {
  uint64_t room = 0;
  std::vector<int32_t> prompt_ids;  // to check the decode side's prompt
  std::vector<int32_t> slots;       // slot of each prompt position
  int32_t first_token = 0;
  std::optional<TokenLogprobs> first_logprobs;
};

// Decode side: where the prompt's KV goes. Positions [0, cached) are
// already in this server's radix cache and are not sent.
struct KvRecvJob {
  BootstrapInfo bootstrap;
  std::vector<int32_t> prompt_ids;
  std::vector<int32_t> slots;  // slot of each prompt position
  int64_t cached = 0;
};

// A finished room, either side. On the decode side an OK result carries the
// first token (its KV is in place); an error means the pages' contents are
// unknown.
struct KvTransferResult {
  uint64_t room = 0;
  Status status;
  int32_t first_token = 0;
  std::optional<TokenLogprobs> first_logprobs;
  uint64_t bytes = 0;   // KV bytes moved
  double seconds = 0;   // from the job's start to its end
};

class KvSender {
 public:
  virtual ~KvSender() = default;
  // Starts sending the job's KV to the decode server registered for its
  // room (or to the one that registers before the transfer timeout), each
  // layer once job.layers says it is written. The pages must stay
  // untouched until Poll reports the room (or Cancel returns true).
  virtual void Begin(KvBeginJob job) = 0;
  // The first token of a begun room (or, without Begin, the whole job): the
  // completion goes to the decode server once every layer is there. Poll
  // reports a room only after its Send or a Cancel that returned false.
  virtual void Send(KvSendJob job) = 0;
  // Rooms finished since the last call.
  virtual std::vector<KvTransferResult> Poll() = 0;
  // Gives up a room whose request went away (client gone, aborted, failed
  // step): true when no write has started (its pages are free to reuse
  // now, and Poll will not report it); false when writes are in flight
  // (Poll reports the room, failed, once they are done).
  virtual bool Cancel(uint64_t room) = 0;
};

class KvReceiver {
 public:
  virtual ~KvReceiver() = default;
  // Registers the job's pages with the prefill server of its bootstrap
  // info and waits for them to be written.
  virtual void Expect(KvRecvJob job) = 0;
  // Rooms finished (written, failed or timed out) since the last call. A
  // room is reported exactly once, whatever happens to its request.
  virtual std::vector<KvTransferResult> Poll() = 0;
};

}  // namespace tessera::engine

#endif  // TESSERA_ENGINE_DISAGG_H_
