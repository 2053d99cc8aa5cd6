// StagedUpload: host-to-device uploads that run on a copy stream, so they
// never queue behind the compute stream's running work, and that the
// compute stream sees in order with what it enqueues afterwards.
//
// One upload (Commit) is, with `copy` != `compute`:
//
//   copy:     wait(stage k consumed) -> host[k] to stage[k] -> record uploaded[k]
//   compute:  wait(uploaded[k]) -> stage[k] to dst -> record consumed[k]
//
// Two stages (k alternates), each a host and a device buffer, so the copy of
// step n+1's bytes runs while step n computes; the copy waits only for the
// compute stream to have taken stage k's bytes from two uploads ago, long
// done in steady state. The host reuses host[k] after uploaded[k] (Host()
// waits for it, also long done). With `copy` == `compute` (a plugin with one
// queue, or a test), Commit is a plain ordered host-to-device copy into dst.
//
// Shapes: bytes only; dst is any buffer of the compute stream's device and
// must stay alive until the compute stream passes the upload.
//
// Thread-safety: one thread at a time (the thread that enqueues on both
// streams).
#ifndef TESSERA_RUNTIME_STAGED_UPLOAD_H_
#define TESSERA_RUNTIME_STAGED_UPLOAD_H_

#include <cstdint>
#include <span>
#include <vector>

#include "base/status.h"
#include "runtime/buffer.h"
#include "runtime/device.h"
#include "runtime/stream.h"

namespace tessera::runtime {

class StagedUpload {
 public:
  // `compute` reads what is uploaded; `copy` carries the host copies. Both
  // streams and the device must outlive the object.
  StagedUpload(Device& device, Stream& compute, Stream& copy);
  // Synchronises the copy stream: no queued copy still reads host staging.
  ~StagedUpload();
  StagedUpload(const StagedUpload&) = delete;
  StagedUpload& operator=(const StagedUpload&) = delete;

  // Host bytes for the next upload, `count` elements of T (zeroed), valid
  // until Commit. Waits until the copy that last read this stage finished.
  template <typename T>
  StatusOr<std::span<T>> Host(size_t count) {
    TSR_ASSIGN_OR_RETURN(std::span<uint8_t> bytes, HostBytes(count * sizeof(T)));
    return std::span<T>(reinterpret_cast<T*>(bytes.data()), count);
  }
  StatusOr<std::span<uint8_t>> HostBytes(uint64_t bytes);

  // Enqueues the bytes Host() returned into dst[offset, offset + bytes):
  // work enqueued on the compute stream after Commit reads them.
  Status Commit(Buffer& dst, uint64_t offset);

  bool separate_copy_stream() const { return &copy_ != &compute_; }

 private:
  struct Stage {
    std::vector<uint64_t> host;  // 8-byte aligned staging, any element type
    BufferPtr device;            // the copy stream's target (separate only)
    EventPtr uploaded;           // on copy: host[k] has been read
    EventPtr consumed;           // on compute: stage[k] has been read
  };

  Device& device_;
  Stream& compute_;
  Stream& copy_;
  Stage stages_[2];
  int next_ = 0;          // the stage Host() hands out
  int open_ = -1;         // the stage between Host() and Commit()
  uint64_t open_bytes_ = 0;
};

}  // namespace tessera::runtime

#endif  // TESSERA_RUNTIME_STAGED_UPLOAD_H_
