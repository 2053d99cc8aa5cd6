#include "engine/tp_ranks.h"

#include <fmt/format.h>

#include <algorithm>

#include "base/logging.h"
#include "engine/tp_protocol.h"

namespace tessera::engine {

Status TpLeader::SendStep(const model::Batch& batch, int64_t sampled_rows) {
  for (size_t i = 0; i < worker_fds_.size(); ++i) {
    Status s = SendTpStep(worker_fds_[i], batch, sampled_rows);
    if (!s.ok()) {
      return s.WithContext(fmt::format("tensor-parallel rank {}", i + 1));
    }
  }
  return OkStatus();
}

Status TpLeader::BroadcastIds(runtime::Stream& stream, const model::DeviceIds& ids) {
  if (ids.buffer == nullptr || ids.rows == 0) return OkStatus();
  const tsr_tensor t = ids.buffer->View(TSR_DTYPE_I32, {ids.rows}, ids.offset);
  Status s = comm_.Broadcast(stream, t, 0);
  return s.ok() ? s : s.WithContext("broadcasting the sampled ids to the tensor-parallel ranks");
}

void TpLeader::Shutdown() {
  for (size_t i = 0; i < worker_fds_.size(); ++i) {
    Status s = SendTpShutdown(worker_fds_[i]);
    if (!s.ok()) TSR_LOG_DEBUG("tensor-parallel rank {}: {}", i + 1, s.message());
  }
}

Status RunTpWorker(model::ModelRunner& runner, runtime::Communicator& comm, int fd) {
  runtime::Device& device = runner.device();
  runtime::Stream& stream = runner.stream();
  runtime::BufferPtr ids;  // the last broadcast ids: the next step's device tokens
  int64_t capacity = 0;
  for (;;) {
    TSR_ASSIGN_OR_RETURN(TpMessage m, ReceiveTpMessage(fd));
    if (m.type == TpMessageType::kShutdown) return stream.Synchronize();
    model::Batch batch = m.step.batch();
    if (!batch.device_tokens.empty()) {
      if (ids == nullptr) {
        return DataLossError("rank 0 sent a step reading sampled ids before any broadcast");
      }
      batch.token_source = ids.get();
      batch.token_source_offset = 0;
    }
    TSR_ASSIGN_OR_RETURN(tsr_tensor logits, runner.ForwardOnDevice(batch));
    (void)logits;  // rank 0 samples
    if (m.step.sampled_rows > capacity) {
      // Queued work may still read the old buffer: let it finish first.
      TSR_RETURN_IF_ERROR(stream.Synchronize());
      capacity = std::max<int64_t>(m.step.sampled_rows, 1024);
      TSR_ASSIGN_OR_RETURN(ids, device.Allocate(static_cast<uint64_t>(capacity) * 4));
    }
    if (m.step.sampled_rows > 0) {
      TSR_RETURN_IF_ERROR(
          comm.Broadcast(stream, ids->View(TSR_DTYPE_I32, {m.step.sampled_rows}), 0));
    }
    // A failed kernel is sticky: report it now instead of letting rank 0
    // wait for collectives this rank skips.
    auto idle = stream.IsIdle();
    if (!idle.ok()) return idle.status().WithContext("the worker's stream failed");
  }
}

}  // namespace tessera::engine
