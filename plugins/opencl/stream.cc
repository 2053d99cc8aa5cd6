#include "stream.h"

#include "device.h"

namespace tessera::opencl {
namespace {

// Kinds written by tsr_fail (kernels/common.cl).
enum FailKind {
  kEmbeddingId = 1,
  kKvSlot = 2,
  kAttnQueryRange = 3,
  kAttnLenShort = 4,
  kAttnLenTable = 5,
  kAttnPage = 6,
  kLogprobsId = 7,
};

}  // namespace

Status DescribeStatusRecord(const StatusRecord& r) {
  if (r[0] == 0) return OkStatus();
  const int a = r[2], b = r[3], c = r[4], d = r[5];
  switch (r[1]) {
    case kEmbeddingId:
      return InvalidArgument("embedding: ids[", a, "] = ", b,
                             " is outside the table's rows [0, ", c,
                             "); token ids must be below the vocabulary size");
    case kKvSlot:
      return InvalidArgument("kv_store: slots[", a, "] = ", b, " is outside the KV pool [0, ", c,
                             ") (use -1 to skip a padding token)");
    case kAttnQueryRange:
      return InvalidArgument("paged_attention: query_start[", a, "..", a + 1, "] = [", b, ", ", c,
                             ") is not a valid row range of q's ", d,
                             " rows; query_start must be non-decreasing within [0, T]");
    case kAttnLenShort:
      return InvalidArgument("paged_attention: sequence ", a, " has ", b,
                             " new tokens but seq_lens[", a, "] = ", c,
                             "; seq_lens counts the new tokens too");
    case kAttnLenTable:
      return InvalidArgument("paged_attention: seq_lens[", a, "] = ", b,
                             " exceeds the block table's ", c, " pages of ", d, " slots");
    case kAttnPage:
      return InvalidArgument("paged_attention: block_table[", a, "][", b, "] = ", c,
                             " names slots outside the KV pool of ", d, " slots");
    case kLogprobsId:
      return InvalidArgument("logprobs: ids[", a, "] = ", b, " is outside the vocabulary [0, ", c,
                             ")");
    default:
      return Status(r[0], StrCat("a kernel failed (kind ", r[1], ", values ", a, ", ", b, ", ",
                                 c, ", ", d, ")"));
  }
}

Status Stream::Create(Device& device, std::unique_ptr<Stream>* out) {
  std::unique_ptr<Stream> stream(new Stream(device));
  cl_int err = CL_SUCCESS;
  stream->queue_ = clCreateCommandQueue(device.context, device.id, 0, &err);
  TSR_CL_RETURN_IF_ERROR(ClCheck(err, "clCreateCommandQueue"));
  stream->status_ =
      clCreateBuffer(device.context, CL_MEM_READ_WRITE, sizeof(StatusRecord), nullptr, &err);
  TSR_CL_RETURN_IF_ERROR(ClCheck(err, "clCreateBuffer (stream status record)"));
  const StatusRecord zero{};
  TSR_CL_RETURN_IF_ERROR(ClCheck(clEnqueueWriteBuffer(stream->queue_, stream->status_, CL_TRUE, 0,
                                                      sizeof(zero), zero.data(), 0, nullptr,
                                                      nullptr),
                                 "clEnqueueWriteBuffer (stream status record)"));
  *out = std::move(stream);
  return OkStatus();
}

Stream::~Stream() {
  if (queue_ != nullptr) clFinish(queue_);
  if (last_ != nullptr) clReleaseEvent(last_);
  for (cl_mem m : scratch_) {
    if (m != nullptr) clReleaseMemObject(m);
  }
  if (status_ != nullptr) clReleaseMemObject(status_);
  if (queue_ != nullptr) clReleaseCommandQueue(queue_);
}

Status Stream::EnqueueKernel(KernelSlot& slot, const KernelArgs& args, const NdRange& range,
                             const std::string& what) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (capture_ != nullptr) {
      for (cl_mem m : args.mems()) clRetainMemObject(m);
      capture_->push_back(Captured{&slot, args, range, what});
      return OkStatus();
    }
  }
  return EnqueueNow(slot, args, range, what);
}

Status Stream::BeginCapture() {
  std::lock_guard<std::mutex> lock(mu_);
  if (capture_ != nullptr) {
    return InvalidArgument("begin_capture: the stream is already capturing; end that capture "
                           "first");
  }
  capture_ = std::make_unique<std::vector<Captured>>();
  return OkStatus();
}

Status Stream::EndCapture(std::shared_ptr<Graph>* out) {
  std::unique_ptr<std::vector<Captured>> items;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (capture_ == nullptr) {
      return InvalidArgument("end_capture: the stream is not capturing; call begin_capture first");
    }
    items = std::move(capture_);
  }
  *out = std::make_shared<Graph>(device_, std::move(*items));
  return OkStatus();
}

bool Stream::capturing() {
  std::lock_guard<std::mutex> lock(mu_);
  return capture_ != nullptr;
}

Graph::~Graph() {
  for (const Stream::Captured& item : items_) {
    for (cl_mem m : item.args.mems()) clReleaseMemObject(m);
  }
}

Status Graph::Launch(Stream& stream) const {
  if (&stream.device() != &device_) {
    return InvalidArgument("graph launch: the graph was captured on '", device_.name,
                           "' but the stream is on '", stream.device().name, "'");
  }
  if (stream.capturing()) {
    return InvalidArgument("graph launch: the stream is capturing; graphs do not nest");
  }
  // OpenCL keeps the buffers of enqueued kernels alive until they ran, so
  // destroying the graph after this returns is safe.
  for (const Stream::Captured& item : items_) {
    TSR_CL_RETURN_IF_ERROR(stream.EnqueueNow(*item.slot, item.args, item.range, item.what));
  }
  return OkStatus();
}

Status Stream::EnqueueNow(KernelSlot& slot, const KernelArgs& args, const NdRange& range,
                          const std::string& what) {
  size_t global[3], local[3];
  bool has_local = false;
  for (cl_uint i = 0; i < range.dims; ++i) {
    local[i] = range.local[i];
    has_local = has_local || local[i] != 0;
  }
  for (cl_uint i = 0; i < range.dims; ++i) {
    global[i] = range.global[i] == 0 ? 0 : range.global[i];
    if (has_local) {
      if (local[i] == 0) local[i] = 1;
      global[i] = (global[i] + local[i] - 1) / local[i] * local[i];
    }
    if (global[i] == 0) return OkStatus();  // no work
  }
  cl_event event = nullptr;
  {
    std::lock_guard<std::mutex> lock(slot.mu);
    cl_int err = clSetKernelArg(slot.kernel, 0, sizeof(cl_mem), &status_);
    cl_uint index = 1;
    for (const KernelArgs::Arg& arg : args.args()) {
      if (err != CL_SUCCESS) break;
      err = clSetKernelArg(slot.kernel, index++, arg.size, arg.local ? nullptr : arg.bytes.data());
    }
    TSR_CL_RETURN_IF_ERROR(ClCheck(err, StrCat(what, ": clSetKernelArg ", index - 1)));
    err = clEnqueueNDRangeKernel(queue_, slot.kernel, range.dims, nullptr, global,
                                 has_local ? local : nullptr, 0, nullptr, &event);
    TSR_CL_RETURN_IF_ERROR(ClCheck(err, StrCat(what, ": clEnqueueNDRangeKernel")));
  }
  Track(event);
  return OkStatus();
}

void Stream::Track(cl_event event) {
  if (event == nullptr) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (last_ != nullptr) clReleaseEvent(last_);
  last_ = event;
}

Status Stream::ReadRecord(cl_command_queue queue) {
  StatusRecord record{};
  TSR_CL_RETURN_IF_ERROR(ClCheck(clEnqueueReadBuffer(queue, status_, CL_TRUE, 0, sizeof(record),
                                                     record.data(), 0, nullptr, nullptr),
                                 "reading the stream's status record"));
  Status status = DescribeStatusRecord(record);
  std::lock_guard<std::mutex> lock(mu_);
  if (sticky_.ok() && !status.ok()) sticky_ = status;
  return sticky_;
}

Status Stream::Synchronize() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!sticky_.ok()) return sticky_;
  }
  TSR_CL_RETURN_IF_ERROR(ClCheck(clFinish(queue_), "clFinish"));
  return ReadRecord(queue_);
}

Status Stream::Query() {
  cl_event last = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!sticky_.ok()) return sticky_;
    last = last_;
    if (last != nullptr) clRetainEvent(last);
  }
  if (last != nullptr) {
    cl_int state = CL_COMPLETE;
    cl_int err = clGetEventInfo(last, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof(state), &state,
                                nullptr);
    clReleaseEvent(last);
    TSR_CL_RETURN_IF_ERROR(ClCheck(err, "clGetEventInfo"));
    if (state < 0) {
      return Status(TSR_ERR_DEVICE, StrCat("a command on the stream failed: ", ClErrorName(state)));
    }
    if (state != CL_COMPLETE) return Status(TSR_ERR_NOT_READY, "work is pending");
  }
  // The work tracked so far is done; read the record through the device's
  // synchronous queue (a read on this queue would wait for newer work).
  return ReadRecord(device_.sync_queue);
}

Status Stream::Scratch(size_t bytes, int slot, cl_mem* out) {
  if (slot < 0 || slot >= static_cast<int>(scratch_.size())) {
    return Internal("scratch slot ", slot, " is outside [0, 4)");
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (scratch_size_[slot] < bytes || scratch_[slot] == nullptr) {
    // Releasing is safe while queued kernels still use the old buffer:
    // OpenCL frees it after they finish.
    if (scratch_[slot] != nullptr) clReleaseMemObject(scratch_[slot]);
    scratch_[slot] = nullptr;
    size_t size = bytes < 256 ? 256 : bytes + bytes / 4;
    cl_int err = CL_SUCCESS;
    cl_mem mem = clCreateBuffer(device_.context, CL_MEM_READ_WRITE, size, nullptr, &err);
    TSR_CL_RETURN_IF_ERROR(ClCheck(err, StrCat("clCreateBuffer (", size, " bytes of scratch)")));
    scratch_[slot] = mem;
    scratch_size_[slot] = size;
  }
  *out = scratch_[slot];
  return OkStatus();
}

Status Event::Create(Device& device, std::unique_ptr<Event>* out) {
  std::unique_ptr<Event> event(new Event(device));
  cl_int err = CL_SUCCESS;
  event->snapshot_ =
      clCreateBuffer(device.context, CL_MEM_READ_WRITE, sizeof(StatusRecord), nullptr, &err);
  TSR_CL_RETURN_IF_ERROR(ClCheck(err, "clCreateBuffer (event status snapshot)"));
  *out = std::move(event);
  return OkStatus();
}

Event::~Event() {
  if (marker_ != nullptr) {
    clWaitForEvents(1, &marker_);
    clReleaseEvent(marker_);
  }
  if (snapshot_ != nullptr) clReleaseMemObject(snapshot_);
}

Status Event::Record(Stream& stream) {
  if (stream.device().context != device_.context) {
    return InvalidArgument("the event belongs to '", device_.name, "' (platform '",
                           device_.platform_name, "') but the stream to '",
                           stream.device().name, "'; record an event of the stream's platform");
  }
  KernelSlot* slot = nullptr;
  TSR_CL_RETURN_IF_ERROR(stream.device().Kernel("tsr_snapshot_status", &slot));
  cl_event marker = nullptr;
  {
    std::lock_guard<std::mutex> lock(slot->mu);
    cl_mem record = stream.status_record();
    cl_int err = clSetKernelArg(slot->kernel, 0, sizeof(cl_mem), &record);
    if (err == CL_SUCCESS) err = clSetKernelArg(slot->kernel, 1, sizeof(cl_mem), &snapshot_);
    TSR_CL_RETURN_IF_ERROR(ClCheck(err, "event_record: clSetKernelArg"));
    const size_t global = 8;
    err = clEnqueueNDRangeKernel(stream.queue(), slot->kernel, 1, nullptr, &global, nullptr, 0,
                                 nullptr, &marker);
    TSR_CL_RETURN_IF_ERROR(ClCheck(err, "event_record: clEnqueueNDRangeKernel"));
  }
  clRetainEvent(marker);
  stream.Track(marker);
  std::lock_guard<std::mutex> lock(mu_);
  if (marker_ != nullptr) clReleaseEvent(marker_);
  marker_ = marker;
  return OkStatus();
}

cl_event Event::Marker() {
  std::lock_guard<std::mutex> lock(mu_);
  if (marker_ != nullptr) clRetainEvent(marker_);
  return marker_;
}

Status Event::SnapshotStatus() {
  StatusRecord record{};
  TSR_CL_RETURN_IF_ERROR(ClCheck(clEnqueueReadBuffer(device_.sync_queue, snapshot_, CL_TRUE, 0,
                                                     sizeof(record), record.data(), 0, nullptr,
                                                     nullptr),
                                 "reading the event's status snapshot"));
  return DescribeStatusRecord(record);
}

Status Event::Query() {
  cl_event marker = Marker();
  if (marker == nullptr) return OkStatus();  // never recorded: complete
  cl_int state = CL_COMPLETE;
  cl_int err =
      clGetEventInfo(marker, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof(state), &state, nullptr);
  clReleaseEvent(marker);
  TSR_CL_RETURN_IF_ERROR(ClCheck(err, "clGetEventInfo"));
  if (state < 0) {
    return Status(TSR_ERR_DEVICE, StrCat("the recorded work failed: ", ClErrorName(state)));
  }
  if (state != CL_COMPLETE) return Status(TSR_ERR_NOT_READY, "the recorded work is pending");
  return SnapshotStatus();
}

Status Event::Synchronize() {
  cl_event marker = Marker();
  if (marker == nullptr) return OkStatus();
  cl_int err = clWaitForEvents(1, &marker);
  clReleaseEvent(marker);
  if (err != CL_SUCCESS) return ClCheck(err, "clWaitForEvents");
  return SnapshotStatus();
}

}  // namespace tessera::opencl
