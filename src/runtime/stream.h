// Stream and Event: owned handles of a plugin's in-order queues and markers.
//
// A Stream is an in-order queue of work on one device; everything enqueued
// returns without waiting. Errors that happen while queued work runs are
// sticky: Synchronize() reports them. An Event marks a point in a stream;
// another stream can Wait() for it without blocking the host.
//
// Ownership: StreamPtr / EventPtr (std::unique_ptr) own; the destructors
// synchronise (a stream) and then call the plugin's destroy entry, logging a
// failure. The Plugin must outlive them.
//
// Thread-safety: one stream must not be used from two threads at once (the
// ABI's rule 5); different streams may be used concurrently. Events may be
// queried from any thread.
#ifndef TESSERA_RUNTIME_STREAM_H_
#define TESSERA_RUNTIME_STREAM_H_

#include <cstdint>
#include <memory>

#include "base/status.h"
#include "runtime/buffer.h"
#include "runtime/plugin.h"

namespace tessera::runtime {

class Event;

class Stream {
 public:
  static StatusOr<std::unique_ptr<Stream>> Create(Plugin& plugin,
                                                  int32_t device);
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  Plugin& plugin() const { return *plugin_; }
  int32_t device() const { return device_; }
  tsr_stream handle() const { return handle_; }

  // Waits for everything enqueued so far; returns the sticky error, if any.
  Status Synchronize();
  // true when idle, false while work is pending; the sticky error otherwise.
  StatusOr<bool> IsIdle();
  // Later work on this stream waits for `event` (of any stream).
  Status Wait(const Event& event);

  // Asynchronous copies and memset. Host memory must stay valid and
  // untouched until the stream passes the copy. Offsets and sizes in bytes,
  // within each Buffer's size().
  Status CopyHostToDevice(Buffer& dst, uint64_t dst_offset, const void* src,
                          uint64_t bytes);
  Status CopyDeviceToHost(void* dst, const Buffer& src, uint64_t src_offset,
                          uint64_t bytes);
  Status CopyDeviceToDevice(Buffer& dst, uint64_t dst_offset, const Buffer& src,
                            uint64_t src_offset, uint64_t bytes);
  Status Memset(Buffer& dst, uint64_t offset, uint8_t value, uint64_t bytes);

 private:
  Stream(Plugin* plugin, int32_t device, tsr_stream handle)
      : plugin_(plugin), device_(device), handle_(handle) {}

  Plugin* const plugin_;
  const int32_t device_;
  const tsr_stream handle_;
};

class Event {
 public:
  static StatusOr<std::unique_ptr<Event>> Create(Plugin& plugin,
                                                 int32_t device);
  ~Event();
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  tsr_event handle() const { return handle_; }
  int32_t device() const { return device_; }

  // Captures the work enqueued on `stream` so far (replacing an earlier
  // capture).
  Status Record(Stream& stream);
  // Blocks until the captured work finished; returns its error, if any.
  Status Synchronize();
  // true once the captured work finished (an unrecorded event is complete).
  StatusOr<bool> IsComplete();

 private:
  Event(Plugin* plugin, int32_t device, tsr_event handle)
      : plugin_(plugin), device_(device), handle_(handle) {}

  Plugin* const plugin_;
  const int32_t device_;
  const tsr_event handle_;
};

using StreamPtr = std::unique_ptr<Stream>;
using EventPtr = std::unique_ptr<Event>;

}  // namespace tessera::runtime

#endif  // TESSERA_RUNTIME_STREAM_H_
