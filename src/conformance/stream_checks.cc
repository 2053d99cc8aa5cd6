// streams: in-order execution, cross-stream waits (a test that fails when
// stream_wait_event is ignored), event states, re-recording, sticky errors,
// and streams used from several threads at once.
#include <fmt/format.h>

#include <atomic>
#include <cstddef>
#include <chrono>
#include <thread>

#include "conformance/checks.h"
#include "conformance/op_cases.h"
#include "conformance/op_harness.h"
#include "reference/op_contracts.h"

namespace tessera::conformance {
namespace {

// Big buffers for work that keeps a stream busy for a while.
struct SlowWork {
  Buffer src, dst;
  uint64_t size = 0;
};

StatusOr<SlowWork> MakeSlowWork(const PluginEnv& env) {
  SlowWork w;
  w.size = std::min<uint64_t>(64ull << 20, env.props(0).memory_total / 16);
  w.size = std::max<uint64_t>(w.size, 1 << 20);
  TSR_ASSIGN_OR_RETURN(w.src, env.Alloc(0, w.size));
  TSR_ASSIGN_OR_RETURN(w.dst, env.Alloc(0, w.size));
  TSR_RETURN_IF_ERROR(env.Check(
      env.api().memset(nullptr, w.src.get(), 0, 1, w.size), "memset"));
  return w;
}

// Enqueues `copies` big device-to-device copies on `stream`.
Status EnqueueSlowWork(const PluginEnv& env, const SlowWork& w,
                       tsr_stream stream, int copies) {
  for (int i = 0; i < copies; ++i) {
    const Buffer& from = i % 2 ? w.dst : w.src;
    const Buffer& to = i % 2 ? w.src : w.dst;
    TSR_RETURN_IF_ERROR(
        env.Check(env.api().copy_device_to_device(stream, to.get(), 0,
                                                  from.get(), 0, w.size),
                  "copy_device_to_device (work to keep the stream busy)"));
  }
  return OkStatus();
}

StatusOr<uint8_t> ReadByte(const PluginEnv& env, const Buffer& b,
                           uint64_t offset) {
  uint8_t v = 0;
  TSR_RETURN_IF_ERROR(env.Download(b.get(), offset, &v, 1));
  return v;
}

// How many big copies make the work ahead of an event long enough to
// observe (about 1 GiB of copying at the largest work size).
constexpr int kEarlyEventCopies = 16;

// Whether event_synchronize returns before the work recorded ahead of the
// event has run: slow work then a marker on a stream, an event recorded
// after them, event_synchronize, then a synchronous read of the marker. A
// conforming plugin always shows the marker (no timing involved). Used to
// name the real cause when a check built on events fails.
StatusOr<bool> EventCompletesEarly(const PluginEnv& env, const SlowWork& work) {
  const tsr_plugin_api& api = env.api();
  TSR_ASSIGN_OR_RETURN(Buffer m, env.Alloc(0, 64));
  TSR_ASSIGN_OR_RETURN(Stream a, env.NewStream(0));
  TSR_ASSIGN_OR_RETURN(Event e, env.NewEvent(0));
  TSR_RETURN_IF_ERROR(env.Check(api.memset(nullptr, m.get(), 0, 0, 64), "memset m = 0"));
  TSR_RETURN_IF_ERROR(EnqueueSlowWork(env, work, a.get(), kEarlyEventCopies));
  TSR_RETURN_IF_ERROR(
      env.Check(api.memset(a.get(), m.get(), 0, 0x5a, 64), "memset m = marker"));
  TSR_RETURN_IF_ERROR(env.Check(api.event_record(e.get(), a.get()), "event_record"));
  TSR_RETURN_IF_ERROR(env.Check(api.event_synchronize(e.get()), "event_synchronize"));
  TSR_ASSIGN_OR_RETURN(uint8_t v, ReadByte(env, m, 63));
  TSR_RETURN_IF_ERROR(env.Check(api.stream_synchronize(a.get()), "stream_synchronize"));
  return v != 0x5a;
}

// The cause to report when a check that relies on events sees work out of
// order: the event (when it completes early) or `otherwise`.
std::string BlameEventOr(const PluginEnv& env, const SlowWork& work,
                         const std::string& what, const std::string& otherwise) {
  auto early = EventCompletesEarly(env, work);
  if (early.ok() && *early) {
    return fmt::format(
        "{}; the cause is the event: event_synchronize returned before the "
        "work recorded ahead of it had run, so the event completed before the "
        "work it records (see streams.event_covers_prior_work)",
        what);
  }
  return fmt::format("{}; {}", what, otherwise);
}

}  // namespace

void StreamChecks(CheckContext& ctx, PluginEnv& env) {
  const tsr_plugin_api& api = env.api();

  ctx.Run("streams.create_many", [&]() -> Outcome {
    std::vector<Stream> streams;
    std::vector<Event> events;
    for (int i = 0; i < 64; ++i) {
      KIT_ASSIGN_OR_FAIL(Stream s, env.NewStream(i % env.device_count()));
      KIT_ASSIGN_OR_FAIL(Event e, env.NewEvent(i % env.device_count()));
      KIT_CHECK_CALL(env, api.stream_query(s.get()),
                     "stream_query of a new stream");
      streams.push_back(std::move(s));
      events.push_back(std::move(e));
    }
    return Pass();
  });

  ctx.Run("streams.in_order", [&]() -> Outcome {
    const uint64_t size = 4 << 20;
    KIT_ASSIGN_OR_FAIL(Buffer x, env.Alloc(0, size));
    KIT_ASSIGN_OR_FAIL(Buffer y, env.Alloc(0, size));
    KIT_ASSIGN_OR_FAIL(Buffer z, env.Alloc(0, size));
    KIT_ASSIGN_OR_FAIL(Stream s, env.NewStream(0));
    std::vector<uint8_t> hy(size), hz(size);
    for (int round = 0; round < 3; ++round) {
      KIT_CHECK_CALL(env, api.memset(s.get(), x.get(), 0, 1, size),
                     "memset x = 1");
      KIT_CHECK_CALL(
          env, api.copy_device_to_device(s.get(), y.get(), 0, x.get(), 0, size),
          "copy x -> y");
      KIT_CHECK_CALL(env, api.memset(s.get(), x.get(), 0, 2, size),
                     "memset x = 2");
      KIT_CHECK_CALL(
          env, api.copy_device_to_device(s.get(), z.get(), 0, x.get(), 0, size),
          "copy x -> z");
      KIT_CHECK_CALL(
          env, api.copy_device_to_host(s.get(), hy.data(), y.get(), 0, size),
          "y -> host");
      KIT_CHECK_CALL(
          env, api.copy_device_to_host(s.get(), hz.data(), z.get(), 0, size),
          "z -> host");
      KIT_CHECK_CALL(env, api.stream_synchronize(s.get()),
                     "stream_synchronize");
      for (uint64_t i = 0; i < size; i += 4099) {
        if (hy[i] != 1 || hz[i] != 2) {
          return Fail(
              fmt::format("round {}: y[{}] = {}, z[{}] = {} (want 1 and 2): "
                          "work on one stream "
                          "ran out of order",
                          round, i, hy[i], i, hz[i]));
        }
      }
    }
    KIT_CHECK_CALL(env, api.stream_query(s.get()),
                   "stream_query after synchronize");
    return Pass();
  });

  // ABI 1.1 stream_busy_ns (optional): a new stream reports 0, finished
  // work adds to it, it never decreases, and an idle stream keeps its value.
  ctx.Run("streams.busy_ns", [&]() -> Outcome {
    if (api.struct_size < offsetof(tsr_plugin_api, stream_busy_ns) +
                              sizeof(api.stream_busy_ns) ||
        api.stream_busy_ns == nullptr) {
      return Skip("the plugin does not report stream busy time (optional, 1.1)");
    }
    KIT_ASSIGN_OR_FAIL(SlowWork w, MakeSlowWork(env));
    KIT_ASSIGN_OR_FAIL(Stream s, env.NewStream(0));
    uint64_t before = 1, after = 0, later = 0;
    KIT_CHECK_CALL(env, api.stream_busy_ns(s.get(), &before), "stream_busy_ns");
    if (before != 0) {
      return Fail(fmt::format("a new stream reports {} ns busy (want 0)", before));
    }
    KIT_RETURN_IF_ERROR(EnqueueSlowWork(env, w, s.get(), 4));
    KIT_CHECK_CALL(env, api.stream_synchronize(s.get()), "stream_synchronize");
    KIT_CHECK_CALL(env, api.stream_busy_ns(s.get(), &after), "stream_busy_ns");
    if (after == 0) {
      return Fail(fmt::format("4 copies of {} bytes finished but the stream reports 0 ns busy",
                              w.size));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    KIT_CHECK_CALL(env, api.stream_busy_ns(s.get(), &later), "stream_busy_ns");
    if (later != after) {
      return Fail(fmt::format("an idle stream's busy time moved from {} to {} ns", after,
                              later));
    }
    return Pass();
  });

  // An event completes only after the work enqueued ahead of its record:
  // event_synchronize then guarantees that work's results are there.
  ctx.Run("streams.event_covers_prior_work", [&]() -> Outcome {
    KIT_ASSIGN_OR_FAIL(SlowWork work, MakeSlowWork(env));
    KIT_ASSIGN_OR_FAIL(bool early, EventCompletesEarly(env, work));
    if (early) {
      return Fail(fmt::format(
          "event_synchronize returned before the work recorded ahead of the "
          "event had run ({} MiB of copies, then a marker): the event "
          "completed before the work it records; event_record must capture "
          "everything enqueued on the stream so far",
          (work.size >> 20) * kEarlyEventCopies));
    }
    return Pass();
  });

  ctx.Run("streams.cross_stream_wait", [&]() -> Outcome {
    // Stream A: slow work, then a marker into X, then event E. Stream B:
    // wait E, copy X -> Y. Y must hold the marker; if stream_wait_event is
    // ignored, B copies X before A gets there.
    KIT_ASSIGN_OR_FAIL(SlowWork work, MakeSlowWork(env));
    KIT_ASSIGN_OR_FAIL(Buffer x, env.Alloc(0, 4096));
    KIT_ASSIGN_OR_FAIL(Buffer y, env.Alloc(0, 4096));
    KIT_ASSIGN_OR_FAIL(Stream a, env.NewStream(0));
    KIT_ASSIGN_OR_FAIL(Stream b, env.NewStream(0));
    KIT_ASSIGN_OR_FAIL(Event e, env.NewEvent(0));
    int copies = 1;
    for (int round = 0; round < 5; ++round, copies *= 2) {
      const uint8_t marker = static_cast<uint8_t>(0x40 + round);
      KIT_CHECK_CALL(env, api.memset(nullptr, x.get(), 0, 0, 4096),
                     "memset x = 0");
      KIT_CHECK_CALL(env, api.memset(nullptr, y.get(), 0, 0, 4096),
                     "memset y = 0");
      KIT_RETURN_IF_ERROR(EnqueueSlowWork(env, work, a.get(), copies));
      KIT_CHECK_CALL(env, api.memset(a.get(), x.get(), 0, marker, 4096),
                     "memset x = marker on A");
      KIT_CHECK_CALL(env, api.event_record(e.get(), a.get()),
                     "event_record on A");
      KIT_CHECK_CALL(env, api.stream_wait_event(b.get(), e.get()),
                     "stream_wait_event(B, E)");
      KIT_CHECK_CALL(
          env, api.copy_device_to_device(b.get(), y.get(), 0, x.get(), 0, 4096),
          "copy x -> y on B");
      KIT_CHECK_CALL(env, api.stream_synchronize(b.get()),
                     "stream_synchronize(B)");
      KIT_ASSIGN_OR_FAIL(uint8_t first, ReadByte(env, y, 0));
      KIT_ASSIGN_OR_FAIL(uint8_t last, ReadByte(env, y, 4095));
      KIT_CHECK_CALL(env, api.stream_synchronize(a.get()),
                     "stream_synchronize(A)");
      if (first != marker || last != marker) {
        return Fail(BlameEventOr(
            env, work,
            fmt::format("round {}: stream B's copy saw {:#04x}, not the marker "
                        "{:#04x} that stream A wrote before recording the "
                        "event B waited on ({} MiB of work on A before the "
                        "marker)",
                        round, first != marker ? first : last, marker,
                        (work.size >> 20) * copies),
            "the event completes correctly, so stream_wait_event did not hold "
            "B back"));
      }
    }
    return Pass(
        fmt::format("5 rounds, up to {} MiB of work ahead of the marker",
                    (work.size >> 20) * (copies / 2)));
  });

  // event_query and stream_query say NOT_READY while the work runs and OK
  // after. The work grows until NOT_READY is seen; never seeing it is
  // inconclusive (the device outran every size), not a pass. An event that
  // says OK while its stream still runs the work before it completed early.
  ctx.Run("streams.event_query_transition", [&]() -> Outcome {
    KIT_ASSIGN_OR_FAIL(SlowWork work, MakeSlowWork(env));
    KIT_ASSIGN_OR_FAIL(Stream a, env.NewStream(0));
    KIT_ASSIGN_OR_FAIL(Event e, env.NewEvent(0));
    for (int copies = 4; copies <= 256; copies *= 4) {
      const auto enqueue_start = std::chrono::steady_clock::now();
      KIT_RETURN_IF_ERROR(EnqueueSlowWork(env, work, a.get(), copies));
      const double enqueue_ms = std::chrono::duration<double, std::milli>(
                                    std::chrono::steady_clock::now() - enqueue_start)
                                    .count();
      KIT_CHECK_CALL(env, api.event_record(e.get(), a.get()), "event_record");
      const tsr_status first = api.event_query(e.get());
      const tsr_status stream_first = api.stream_query(a.get());
      if (first != TSR_OK && first != TSR_ERR_NOT_READY) {
        KIT_CHECK_CALL(env, first, "event_query while work is pending");
      }
      if (stream_first != TSR_OK && stream_first != TSR_ERR_NOT_READY) {
        KIT_CHECK_CALL(env, stream_first, "stream_query while work is pending");
      }
      if (first == TSR_OK && stream_first == TSR_ERR_NOT_READY) {
        return Fail(fmt::format(
            "event_query said OK while the stream the event was recorded on "
            "was still running the {} MiB of copies ahead of it (nothing was "
            "enqueued after the record): the event completed before the work "
            "it records",
            (work.size >> 20) * copies));
      }
      KIT_CHECK_CALL(env, api.event_synchronize(e.get()), "event_synchronize");
      KIT_CHECK_CALL(env, api.event_query(e.get()),
                     "event_query after event_synchronize");
      KIT_CHECK_CALL(env, api.stream_synchronize(a.get()), "stream_synchronize");
      KIT_CHECK_CALL(env, api.stream_query(a.get()),
                     "stream_query after stream_synchronize");
      if (first == TSR_ERR_NOT_READY) {
        return Pass(fmt::format("observed NOT_READY, then OK ({} MiB of work)",
                                (work.size >> 20) * copies));
      }
      if (enqueue_ms > 20) {
        // The enqueue calls themselves took the work's time: the plugin
        // runs stream work as it is enqueued, so more work shows nothing.
        return Skip(fmt::format(
            "inconclusive: enqueueing {} MiB of copies took {:.0f} ms and the "
            "work was done when event_record returned; the plugin seems to run "
            "stream work at enqueue, so NOT_READY cannot be observed",
            (work.size >> 20) * copies, enqueue_ms));
      }
    }
    return Skip(fmt::format(
        "inconclusive: up to {} MiB of copies finished before the first "
        "event_query, so the NOT_READY -> OK transition was never observed",
        (work.size >> 20) * 256));
  });

  ctx.Run("streams.event_never_recorded", [&]() -> Outcome {
    KIT_ASSIGN_OR_FAIL(Event e, env.NewEvent(0));
    KIT_CHECK_CALL(env, api.event_query(e.get()),
                   "event_query of a never-recorded event");
    KIT_CHECK_CALL(env, api.event_synchronize(e.get()),
                   "event_synchronize of a never-recorded event");
    KIT_ASSIGN_OR_FAIL(Stream s, env.NewStream(0));
    KIT_ASSIGN_OR_FAIL(Buffer b, env.Alloc(0, 64));
    KIT_CHECK_CALL(env, api.stream_wait_event(s.get(), e.get()),
                   "stream_wait_event on a never-recorded event");
    KIT_CHECK_CALL(env, api.memset(s.get(), b.get(), 0, 9, 64),
                   "memset after the wait");
    KIT_CHECK_CALL(
        env, api.stream_synchronize(s.get()),
        "stream_synchronize (must not wait for the unrecorded event)");
    return Pass();
  });

  ctx.Run("streams.event_rerecord", [&]() -> Outcome {
    // Re-recording replaces the capture: synchronizing the event then waits
    // for the later work.
    KIT_ASSIGN_OR_FAIL(SlowWork work, MakeSlowWork(env));
    KIT_ASSIGN_OR_FAIL(Buffer m, env.Alloc(0, 64));
    KIT_ASSIGN_OR_FAIL(Stream a, env.NewStream(0));
    KIT_ASSIGN_OR_FAIL(Event e, env.NewEvent(0));
    KIT_CHECK_CALL(env, api.memset(a.get(), m.get(), 0, 1, 64), "memset m = 1");
    KIT_CHECK_CALL(env, api.event_record(e.get(), a.get()), "event_record");
    KIT_RETURN_IF_ERROR(EnqueueSlowWork(env, work, a.get(), 8));
    KIT_CHECK_CALL(env, api.memset(a.get(), m.get(), 0, 2, 64), "memset m = 2");
    KIT_CHECK_CALL(env, api.event_record(e.get(), a.get()),
                   "event_record again");
    KIT_CHECK_CALL(env, api.event_synchronize(e.get()), "event_synchronize");
    KIT_ASSIGN_OR_FAIL(uint8_t v, ReadByte(env, m, 63));
    KIT_CHECK_CALL(env, api.stream_synchronize(a.get()), "stream_synchronize");
    if (v != 2) {
      return Fail(BlameEventOr(
          env, work,
          fmt::format("after event_synchronize of a re-recorded event the "
                      "buffer holds {}, not 2",
                      v),
          "the event completes correctly otherwise, so re-recording did not "
          "replace the first capture"));
    }
    return Pass();
  });

  // Sticky errors: an op whose data is bad fails when it runs; the stream
  // reports it at synchronize, keeps reporting it, and skips later work.
  for (tsr_op_id op : {TSR_OP_EMBEDDING, TSR_OP_KV_STORE}) {
    const std::string name =
        fmt::format("streams.sticky_error.{}", reference::OpName(op));
    ctx.Run(name, [&, op]() -> Outcome {
      const tsr_op_signature* ops = nullptr;
      size_t n = 0;
      KIT_CHECK_CALL(env, api.list_ops(&ops, &n), "list_ops");
      const tsr_op_signature* sig = nullptr;
      for (size_t i = 0; i < n && sig == nullptr; ++i) {
        if (ops[i].op == op && ops[i].version == reference::kOpVersion &&
            reference::ValidateSignature(ops[i]).ok())
          sig = &ops[i];
      }
      if (sig == nullptr)
        return Skip(
            fmt::format("the plugin does not list {}", reference::OpName(op)));
      std::vector<DType> dtypes(sig->dtypes, sig->dtypes + sig->num_args);
      OpCase c;
      for (const CaseDef& d : MakeOpCases(op, dtypes)) {
        if (d.name == "basic") {
          CaseBuilder builder(HashName(name));
          c = d.build(builder);
        }
      }
      // Poison one id / slot: ids[1] = V + 5, or slots[1] = S + 3.
      if (op == TSR_OP_EMBEDDING) {
        c.args[0].values[1] = static_cast<double>(c.args[1].shape[0] + 5);
      } else {
        c.args[2].values[1] = static_cast<double>(c.args[3].shape[0] + 3);
      }
      KIT_ASSIGN_OR_FAIL(CaseLayout layout, LayOut(c, 5));
      KIT_ASSIGN_OR_FAIL(DeviceCase dc, UploadCase(env, 0, c, layout));
      tsr_kernel kernel = nullptr;
      KIT_CHECK_CALL(env, api.resolve_op(0, sig, &kernel), "resolve_op");
      KIT_ASSIGN_OR_FAIL(Stream a, env.NewStream(0));
      KIT_ASSIGN_OR_FAIL(Event e, env.NewEvent(0));
      KIT_ASSIGN_OR_FAIL(Buffer marker, env.Alloc(0, 64));
      KIT_CHECK_CALL(env, api.memset(nullptr, marker.get(), 0, 0, 64),
                     "memset marker = 0");
      const size_t ni = c.num_inputs, no = c.args.size() - c.num_inputs;
      tsr_status s = api.launch(kernel, a.get(), dc.tensors.data(), ni,
                                dc.tensors.data() + ni, no, nullptr, 0);
      if (s != TSR_OK) {
        return Fail(fmt::format(
            "launch rejected data it cannot have read yet ({}: {}); an "
            "out-of-range "
            "id/slot is a sticky stream error reported by stream_synchronize",
            TsrStatusName(s), env.LastError()));
      }
      KIT_CHECK_CALL(env, api.memset(a.get(), marker.get(), 0, 0x77, 64),
                     "memset after the failing op");
      KIT_CHECK_CALL(env, api.event_record(e.get(), a.get()),
                     "event_record after the failing op");
      KIT_EXPECT_ERROR(env, "stream_synchronize after a bad-data op",
                       api.stream_synchronize(a.get()),
                       TSR_ERR_INVALID_ARGUMENT);
      KIT_EXPECT_ERROR(env, "stream_synchronize again (sticky)",
                       api.stream_synchronize(a.get()),
                       TSR_ERR_INVALID_ARGUMENT);
      KIT_EXPECT_ERROR(env, "stream_query (sticky)", api.stream_query(a.get()),
                       TSR_ERR_INVALID_ARGUMENT);
      tsr_status es = api.event_synchronize(e.get());
      if (es == TSR_OK) {
        auto work = MakeSlowWork(env);
        const std::string what =
            "event_synchronize of an event recorded after the failure "
            "returned TSR_OK";
        if (!work.ok()) return Fail(what + "; it must return the stream's sticky error");
        return Fail(BlameEventOr(env, *work, what,
                                 "it must return the stream's sticky error"));
      }
      KIT_ASSIGN_OR_FAIL(uint8_t v, ReadByte(env, marker, 0));
      if (v == 0x77) {
        return Fail(
            "work enqueued after the failing op still ran; a stream must skip "
            "its later work after a sticky error");
      }
      // Other streams are unaffected.
      KIT_ASSIGN_OR_FAIL(Stream b, env.NewStream(0));
      KIT_CHECK_CALL(env, api.memset(b.get(), marker.get(), 0, 0x55, 64),
                     "memset on another stream");
      KIT_CHECK_CALL(
          env, api.stream_synchronize(b.get()),
          "stream_synchronize of another stream (must not inherit the error)");
      return Pass();
    });
  }

  ctx.Run("streams.threads", [&]() -> Outcome {
    // Four host threads, each with its own stream and buffers, at once.
    constexpr int kThreads = 4;
    std::vector<std::string> errors(kThreads);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        const uint64_t size = 1 << 20;
        auto a = env.Alloc(0, size), b = env.Alloc(0, size);
        auto s = env.NewStream(0);
        if (!a.ok() || !b.ok() || !s.ok()) {
          errors[t] = "setup failed";
          return;
        }
        std::vector<uint8_t> src(size), dst(size);
        Rng rng(100 + t);
        for (int i = 0; i < 25; ++i) {
          rng.Bytes(src.data(), size);
          tsr_stream st = s->get();
          if (api.copy_host_to_device(st, a->get(), 0, src.data(), size) !=
                  TSR_OK ||
              api.copy_device_to_device(st, b->get(), 0, a->get(), 0, size) !=
                  TSR_OK ||
              api.copy_device_to_host(st, dst.data(), b->get(), 0, size) !=
                  TSR_OK ||
              api.stream_synchronize(st) != TSR_OK) {
            errors[t] = fmt::format("a call failed: {}", env.LastError());
            return;
          }
          if (src != dst) {
            errors[t] =
                fmt::format("iteration {}: data came back different", i);
            return;
          }
        }
      });
    }
    for (auto& th : threads) th.join();
    for (int t = 0; t < kThreads; ++t) {
      if (!errors[t].empty())
        return Fail(fmt::format("thread {}: {}", t, errors[t]));
    }
    return Pass();
  });
}

}  // namespace tessera::conformance
