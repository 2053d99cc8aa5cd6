#include <memory>

#include "entries.h"
#include "plugin_state.h"

namespace tessera::opencl::entry {
namespace {

Status FindStream(tsr_stream handle, std::shared_ptr<Stream>* out) {
  TSR_CL_RETURN_IF_ERROR(RequireState(TSR_ERR_INVALID_HANDLE));
  *out = State()->streams.Find(handle);
  if (*out == nullptr) {
    return InvalidHandle("stream ", static_cast<const void*>(handle),
                         " is not a live stream of this plugin (NULL, destroyed, or never "
                         "created here)");
  }
  return OkStatus();
}

Status FindEvent(tsr_event handle, std::shared_ptr<Event>* out) {
  TSR_CL_RETURN_IF_ERROR(RequireState(TSR_ERR_INVALID_HANDLE));
  *out = State()->events.Find(handle);
  if (*out == nullptr) {
    return InvalidHandle("event ", static_cast<const void*>(handle),
                         " is not a live event of this plugin (NULL, destroyed, or never "
                         "created here)");
  }
  return OkStatus();
}

// Calls that wait on a stream or order against it are refused while it
// records a graph (its work is not queued).
Status NotCapturing(Stream& stream, const char* what) {
  if (!stream.capturing()) return OkStatus();
  return InvalidArgument(what, ": the stream is capturing a graph; only launches, device "
                               "copies and memsets may be enqueued until end_capture");
}

Status FindGraph(tsr_graph handle, std::shared_ptr<Graph>* out) {
  TSR_CL_RETURN_IF_ERROR(RequireState(TSR_ERR_INVALID_HANDLE));
  *out = State()->graphs.Find(handle);
  if (*out == nullptr) {
    return InvalidHandle("graph ", static_cast<const void*>(handle),
                         " is not a live graph of this plugin (NULL, destroyed, or never "
                         "captured here)");
  }
  return OkStatus();
}

}  // namespace

tsr_status GraphBeginCapture(tsr_stream handle) {
  return Guard("graph begin_capture", [&]() -> Status {
    std::shared_ptr<Stream> stream;
    TSR_CL_RETURN_IF_ERROR(FindStream(handle, &stream));
    return stream->BeginCapture();
  });
}

tsr_status GraphEndCapture(tsr_stream handle, tsr_graph* out) {
  return Guard("graph end_capture", [&]() -> Status {
    if (out == nullptr) return InvalidArgument("out is NULL");
    std::shared_ptr<Stream> stream;
    TSR_CL_RETURN_IF_ERROR(FindStream(handle, &stream));
    std::shared_ptr<Graph> graph;
    TSR_CL_RETURN_IF_ERROR(stream->EndCapture(&graph));
    *out = ToHandle<tsr_graph>(State()->graphs.Add(std::move(graph)));
    return OkStatus();
  });
}

tsr_status GraphLaunch(tsr_graph graph_handle, tsr_stream stream_handle) {
  return Guard("graph launch", [&]() -> Status {
    std::shared_ptr<Graph> graph;
    std::shared_ptr<Stream> stream;
    TSR_CL_RETURN_IF_ERROR(FindGraph(graph_handle, &graph));
    TSR_CL_RETURN_IF_ERROR(FindStream(stream_handle, &stream));
    return graph->Launch(*stream);
  });
}

tsr_status GraphDestroy(tsr_graph handle) {
  return Guard("graph destroy", [&]() -> Status {
    TSR_CL_RETURN_IF_ERROR(RequireState(TSR_ERR_INVALID_HANDLE));
    if (State()->graphs.Remove(handle) == nullptr) {
      return InvalidHandle("graph ", static_cast<const void*>(handle),
                           " is not a live graph of this plugin (NULL, already destroyed, or "
                           "never captured here)");
    }
    return OkStatus();
  });
}

tsr_status StreamCreate(int32_t device, tsr_stream* out) {
  return Guard("stream_create", [&]() -> Status {
    if (out == nullptr) return InvalidArgument("out is NULL");
    TSR_CL_RETURN_IF_ERROR(CheckDevice(device));
    PluginState* state = State();
    std::unique_ptr<Stream> stream;
    TSR_CL_RETURN_IF_ERROR(Stream::Create(*state->devices[device], &stream));
    *out = ToHandle<tsr_stream>(state->streams.Add(std::shared_ptr<Stream>(std::move(stream))));
    return OkStatus();
  });
}

tsr_status StreamDestroy(tsr_stream handle) {
  return Guard("stream_destroy", [&]() -> Status {
    TSR_CL_RETURN_IF_ERROR(RequireState(TSR_ERR_INVALID_HANDLE));
    std::shared_ptr<Stream> stream = State()->streams.Remove(handle);
    if (stream == nullptr) {
      return InvalidHandle("stream ", static_cast<const void*>(handle),
                           " is not a live stream of this plugin (NULL, already destroyed, or "
                           "never created here)");
    }
    return OkStatus();  // the last reference finishes the queue
  });
}

tsr_status StreamSynchronize(tsr_stream handle) {
  return Guard("stream_synchronize", [&]() -> Status {
    std::shared_ptr<Stream> stream;
    TSR_CL_RETURN_IF_ERROR(FindStream(handle, &stream));
    TSR_CL_RETURN_IF_ERROR(NotCapturing(*stream, "stream_synchronize"));
    return stream->Synchronize();
  });
}

tsr_status StreamQuery(tsr_stream handle) {
  return Guard("stream_query", [&]() -> Status {
    std::shared_ptr<Stream> stream;
    TSR_CL_RETURN_IF_ERROR(FindStream(handle, &stream));
    TSR_CL_RETURN_IF_ERROR(NotCapturing(*stream, "stream_query"));
    return stream->Query();  // NOT_READY carries "work still pending"
  });
}

tsr_status EventCreate(int32_t device, tsr_event* out) {
  return Guard("event_create", [&]() -> Status {
    if (out == nullptr) return InvalidArgument("out is NULL");
    TSR_CL_RETURN_IF_ERROR(CheckDevice(device));
    std::unique_ptr<Event> event;
    TSR_CL_RETURN_IF_ERROR(Event::Create(*State()->devices[device], &event));
    *out = ToHandle<tsr_event>(State()->events.Add(std::shared_ptr<Event>(std::move(event))));
    return OkStatus();
  });
}

tsr_status EventDestroy(tsr_event handle) {
  return Guard("event_destroy", [&]() -> Status {
    TSR_CL_RETURN_IF_ERROR(RequireState(TSR_ERR_INVALID_HANDLE));
    if (State()->events.Remove(handle) == nullptr) {
      return InvalidHandle("event ", static_cast<const void*>(handle),
                           " is not a live event of this plugin (NULL, already destroyed, or "
                           "never created here)");
    }
    return OkStatus();
  });
}

tsr_status EventRecord(tsr_event event_handle, tsr_stream stream_handle) {
  return Guard("event_record", [&]() -> Status {
    std::shared_ptr<Event> event;
    std::shared_ptr<Stream> stream;
    TSR_CL_RETURN_IF_ERROR(FindEvent(event_handle, &event));
    TSR_CL_RETURN_IF_ERROR(FindStream(stream_handle, &stream));
    TSR_CL_RETURN_IF_ERROR(NotCapturing(*stream, "event_record"));
    return event->Record(*stream);
  });
}

tsr_status StreamWaitEvent(tsr_stream stream_handle, tsr_event event_handle) {
  return Guard("stream_wait_event", [&]() -> Status {
    std::shared_ptr<Stream> stream;
    std::shared_ptr<Event> event;
    TSR_CL_RETURN_IF_ERROR(FindStream(stream_handle, &stream));
    TSR_CL_RETURN_IF_ERROR(FindEvent(event_handle, &event));
    TSR_CL_RETURN_IF_ERROR(NotCapturing(*stream, "stream_wait_event"));
    if (event->device().context != stream->device().context) {
      return InvalidArgument("the event was created on '", event->device().name,
                             "' and the stream on '", stream->device().name,
                             "', which belong to different OpenCL platforms");
    }
    cl_event marker = event->Marker();
    if (marker == nullptr) return OkStatus();  // never recorded: nothing to wait for
    cl_event barrier = nullptr;
    cl_int err = clEnqueueBarrierWithWaitList(stream->queue(), 1, &marker, &barrier);
    clReleaseEvent(marker);
    TSR_CL_RETURN_IF_ERROR(ClCheck(err, "clEnqueueBarrierWithWaitList"));
    stream->Track(barrier);
    return OkStatus();
  });
}

tsr_status EventSynchronize(tsr_event handle) {
  return Guard("event_synchronize", [&]() -> Status {
    std::shared_ptr<Event> event;
    TSR_CL_RETURN_IF_ERROR(FindEvent(handle, &event));
    Status status = event->Synchronize();
    if (status.ok()) return status;
    return Status(status.code(),
                  StrCat("work captured by the event failed: ", status.message()));
  });
}

tsr_status EventQuery(tsr_event handle) {
  return Guard("event_query", [&]() -> Status {
    std::shared_ptr<Event> event;
    TSR_CL_RETURN_IF_ERROR(FindEvent(handle, &event));
    Status status = event->Query();
    if (status.ok() || status.code() == TSR_ERR_NOT_READY) return status;
    return Status(status.code(),
                  StrCat("work captured by the event failed: ", status.message()));
  });
}

}  // namespace tessera::opencl::entry
