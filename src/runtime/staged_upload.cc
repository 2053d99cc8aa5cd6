#include "runtime/staged_upload.h"

#include <algorithm>

#include "base/logging.h"

namespace tessera::runtime {

StagedUpload::StagedUpload(Device& device, Stream& compute, Stream& copy)
    : device_(device), compute_(compute), copy_(copy) {}

StagedUpload::~StagedUpload() {
  // Queued copies read host staging (and, separate, device stages that the
  // compute stream may still read): let both streams pass them.
  Status a = copy_.Synchronize();
  Status b = separate_copy_stream() ? compute_.Synchronize() : OkStatus();
  if (!a.ok()) TSR_LOG_WARN("staged upload: {}", a.message());
  if (!b.ok()) TSR_LOG_WARN("staged upload: {}", b.message());
}

StatusOr<std::span<uint8_t>> StagedUpload::HostBytes(uint64_t bytes) {
  const int k = next_;
  Stage& stage = stages_[k];
  if (stage.uploaded != nullptr) {
    TSR_RETURN_IF_ERROR(stage.uploaded->Synchronize());
  } else {
    TSR_ASSIGN_OR_RETURN(stage.uploaded,
                         Event::Create(copy_.plugin(), copy_.device()));
  }
  stage.host.assign((bytes + 7) / 8, 0);
  open_ = k;
  open_bytes_ = bytes;
  return std::span<uint8_t>(reinterpret_cast<uint8_t*>(stage.host.data()), bytes);
}

Status StagedUpload::Commit(Buffer& dst, uint64_t offset) {
  if (open_ < 0) {
    return FailedPreconditionError("StagedUpload::Commit without Host()");
  }
  const int k = open_;
  Stage& stage = stages_[k];
  const uint64_t bytes = open_bytes_;
  open_ = -1;
  next_ ^= 1;
  if (bytes == 0) return OkStatus();
  if (!separate_copy_stream()) {
    TSR_RETURN_IF_ERROR(
        compute_.CopyHostToDevice(dst, offset, stage.host.data(), bytes));
    return stage.uploaded->Record(compute_);
  }
  if (stage.device == nullptr || stage.device->size() < bytes) {
    if (stage.device != nullptr) {
      // The compute stream may still read the old stage; the copy stream
      // may still write it.
      TSR_RETURN_IF_ERROR(copy_.Synchronize());
      TSR_RETURN_IF_ERROR(compute_.Synchronize());
    }
    // Room for growth, so a growing batch reallocates rarely.
    TSR_ASSIGN_OR_RETURN(stage.device, device_.Allocate(std::max<uint64_t>(
                                           2 * bytes, 4096)));
  }
  if (stage.consumed != nullptr) {
    TSR_RETURN_IF_ERROR(copy_.Wait(*stage.consumed));
  } else {
    TSR_ASSIGN_OR_RETURN(stage.consumed,
                         Event::Create(compute_.plugin(), compute_.device()));
  }
  TSR_RETURN_IF_ERROR(
      copy_.CopyHostToDevice(*stage.device, 0, stage.host.data(), bytes));
  TSR_RETURN_IF_ERROR(stage.uploaded->Record(copy_));
  TSR_RETURN_IF_ERROR(compute_.Wait(*stage.uploaded));
  TSR_RETURN_IF_ERROR(compute_.CopyDeviceToDevice(dst, offset, *stage.device, 0, bytes));
  return stage.consumed->Record(compute_);
}

}  // namespace tessera::runtime
