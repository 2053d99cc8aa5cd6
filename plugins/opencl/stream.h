// Streams and events of the OpenCL plugin.
//
// A Stream is one in-order cl_command_queue plus its status record: a
// device buffer of 8 ints that every kernel reads first (st[0] != 0: skip)
// and that kernels finding bad data (an embedding id or KV slot out of
// range, a malformed block table) fill with tsr_fail (kernels/common.cl).
// That is how errors raised while queued work runs become sticky: the
// stream's later kernels, memsets and device copies all return at once,
// and Synchronize/Query (and any event recorded after the failure) report
// it. Host-to-device and device-to-host copies are plain queue commands and
// are not skipped.
//
// An Event is a status snapshot buffer plus the cl_event of the snapshot
// kernel that record enqueues: waiting on it waits for the captured work,
// and its snapshot tells whether that work failed. Another stream waits on
// it with clEnqueueBarrierWithWaitList (same platform context).
//
// Graphs: between BeginCapture and EndCapture, EnqueueKernel records the
// kernel, its arguments (bytes as set at capture, buffers retained) and its
// range instead of enqueueing it; a Graph replays the list on a stream of
// the same device by setting each kernel's recorded arguments (the status
// record of the replaying stream as argument 0) and enqueueing it. Every
// launch, device copy and memset of this plugin is such a kernel. Host
// copies, synchronize, query, event record and waits on a capturing stream
// are refused by the entries.
//
// Thread-safety: all members are thread-safe.
#ifndef TESSERA_PLUGINS_OPENCL_STREAM_H_
#define TESSERA_PLUGINS_OPENCL_STREAM_H_

#include <array>
#include <mutex>

#include "cl_launch.h"

namespace tessera::opencl {

class Device;
struct KernelSlot;

// The 8 ints of a status record: [0] code (0 = OK), [1] failure kind, [2..5]
// its values (common.cl).
using StatusRecord = std::array<cl_int, 8>;

// The Status a record describes (OK for code 0).
Status DescribeStatusRecord(const StatusRecord& record);

class Stream {
 public:
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  static Status Create(Device& device, std::unique_ptr<Stream>* out);

  Device& device() const { return device_; }
  cl_command_queue queue() const { return queue_; }
  cl_mem status_record() const { return status_; }

  // Enqueues `slot`'s kernel with the status record as argument 0.
  Status EnqueueKernel(KernelSlot& slot, const KernelArgs& args, const NdRange& range,
                       const std::string& what);
  // Adopts `event` (a command just enqueued) as the stream's latest work.
  void Track(cl_event event);

  Status Synchronize();
  Status Query();

  // Scratch buffer `slot` (0..3) of at least `bytes` bytes.
  Status Scratch(size_t bytes, int slot, cl_mem* out);

  // Graph capture (see the file comment).
  Status BeginCapture();
  Status EndCapture(std::shared_ptr<class Graph>* out);
  bool capturing();

 private:
  friend class Graph;
  struct Captured {
    KernelSlot* slot;
    KernelArgs args;
    NdRange range;
    std::string what;
  };
  Status EnqueueNow(KernelSlot& slot, const KernelArgs& args, const NdRange& range,
                    const std::string& what);
  explicit Stream(Device& device) : device_(device) {}
  // Reads the record (the queue must have passed the work of interest).
  Status ReadRecord(cl_command_queue queue);

  Device& device_;
  cl_command_queue queue_ = nullptr;
  cl_mem status_ = nullptr;
  std::mutex mu_;
  cl_event last_ = nullptr;       // guarded by mu_
  Status sticky_;                 // guarded by mu_: once set, kept
  std::array<cl_mem, 4> scratch_{};        // guarded by mu_
  std::array<size_t, 4> scratch_size_{};   // guarded by mu_
  std::unique_ptr<std::vector<Captured>> capture_;  // guarded by mu_
};

// A captured list of kernels of one device; replayed by Launch. Holds a
// reference on every buffer its kernels use.
class Graph {
 public:
  Graph(Device& device, std::vector<Stream::Captured> items)
      : device_(device), items_(std::move(items)) {}
  ~Graph();
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;
  Status Launch(Stream& stream) const;

 private:
  Device& device_;
  const std::vector<Stream::Captured> items_;
};

class Event {
 public:
  ~Event();
  static Status Create(Device& device, std::unique_ptr<Event>* out);

  Device& device() const { return device_; }
  Status Record(Stream& stream);
  // A retained marker (NULL when never recorded); the caller releases it.
  cl_event Marker();
  Status Query();
  Status Synchronize();

 private:
  explicit Event(Device& device) : device_(device) {}
  Status SnapshotStatus();

  Device& device_;
  cl_mem snapshot_ = nullptr;
  std::mutex mu_;
  cl_event marker_ = nullptr;  // guarded by mu_
};

}  // namespace tessera::opencl

#endif  // TESSERA_PLUGINS_OPENCL_STREAM_H_
