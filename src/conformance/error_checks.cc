// errors: every entry must turn bad input into an error code plus a
// last_error() message, never a crash: NULL out-pointers, NULL / freed /
// made-up handles, bad alignments, impossible allocations, copies out of
// bounds, unknown ops, and last_error()'s per-thread rule. Launch errors are
// in launch_error_checks.cc. Runs in its own process, so a plugin that
// crashes on one of these fails that check only.
#include <fmt/format.h>

#include <functional>
#include <thread>

#include "conformance/checks.h"

namespace tessera::conformance {
namespace {

enum class BadKind { kNull, kFreed, kBogus };
constexpr BadKind kAllKinds[] = {BadKind::kNull, BadKind::kFreed,
                                 BadKind::kBogus};

const char* KindName(BadKind k) {
  switch (k) {
    case BadKind::kNull:
      return "null_handle";
    case BadKind::kFreed:
      return "freed_handle";
    case BadKind::kBogus:
      return "bogus_handle";
  }
  return "";
}

template <typename H>
H Bogus() {
  return reinterpret_cast<H>(static_cast<uintptr_t>(0x1234));
}

// A call's status and the last_error() read right after it.
struct CallResult {
  tsr_status status;
  std::string message;
  bool message_null;
};

CallResult Capture(const PluginEnv& env, tsr_status status) {
  const char* m = env.api().last_error();
  return {status, m ? m : "", m == nullptr};
}

// Runs `call` with a bad handle of kind `kind`, expecting an error.
template <typename H>
Outcome ExpectBadHandle(const PluginEnv& env, BadKind kind,
                        const std::function<StatusOr<H>()>& make_and_free,
                        const std::function<CallResult(H)>& call,
                        const std::string& what) {
  H handle{};
  switch (kind) {
    case BadKind::kNull:
      handle = nullptr;
      break;
    case BadKind::kBogus:
      handle = Bogus<H>();
      break;
    case BadKind::kFreed: {
      KIT_ASSIGN_OR_FAIL(handle, make_and_free());
      break;
    }
  }
  std::string label =
      fmt::format("{} with a {} handle", what,
                  kind == BadKind::kNull    ? "NULL"
                  : kind == BadKind::kFreed ? "freed"
                                            : "made-up (0x1234)");
  CallResult r = call(handle);
  const char* message = r.message_null ? nullptr : r.message.c_str();
  std::string msg =
      kind == BadKind::kNull
          ? PluginEnv::ExpectErrorMessage(
                r.status, message,
                {TSR_ERR_INVALID_HANDLE, TSR_ERR_INVALID_ARGUMENT}, label)
          : PluginEnv::ExpectErrorMessage(r.status, message,
                                          {TSR_ERR_INVALID_HANDLE}, label);
  return msg.empty() ? Pass() : Fail(msg);
}

}  // namespace

void LaunchErrorChecks(CheckContext& ctx, PluginEnv& env);

void ErrorChecks(CheckContext& ctx, PluginEnv& env) {
  const tsr_plugin_api& api = env.api();

  // --- NULL out-pointers -------------------------------------------------
  struct NullOut {
    const char* name;
    std::function<tsr_status()> call;
  };
  const tsr_op_signature* listed = nullptr;
  size_t listed_count = 0;
  api.list_ops(&listed, &listed_count);
  std::vector<NullOut> null_outs = {
      {"device_count", [&] { return api.device_count(nullptr); }},
      {"device_properties", [&] { return api.device_properties(0, nullptr); }},
      {"buffer_alloc",
       [&] { return api.buffer_alloc(0, TSR_MEM_DEVICE, 64, 0, nullptr); }},
      {"stream_create", [&] { return api.stream_create(0, nullptr); }},
      {"event_create", [&] { return api.event_create(0, nullptr); }},
      {"list_ops_array",
       [&] {
         size_t n;
         return api.list_ops(nullptr, &n);
       }},
      {"list_ops_count",
       [&] {
         const tsr_op_signature* p;
         return api.list_ops(&p, nullptr);
       }},
      {"resolve_op_signature",
       [&] {
         tsr_kernel k;
         return api.resolve_op(0, nullptr, &k);
       }},
  };
  if (listed_count > 0) {
    null_outs.push_back({"resolve_op_out", [&] {
                           return api.resolve_op(0, &listed[0], nullptr);
                         }});
  }
  for (const NullOut& n : null_outs) {
    ctx.Run(fmt::format("errors.null_out.{}", n.name), [&]() -> Outcome {
      KIT_EXPECT_ERROR(env, fmt::format("{} with a NULL pointer", n.name),
                       n.call(), TSR_ERR_INVALID_ARGUMENT);
      return Pass();
    });
  }
  ctx.Run("errors.null_out.buffer_info", [&]() -> Outcome {
    KIT_ASSIGN_OR_FAIL(Buffer b, env.Alloc(0, 64));
    KIT_EXPECT_ERROR(env, "buffer_info with a NULL info",
                     api.buffer_info(b.get(), nullptr),
                     TSR_ERR_INVALID_ARGUMENT);
    return Pass();
  });
  ctx.Run("errors.null_host_pointer", [&]() -> Outcome {
    KIT_ASSIGN_OR_FAIL(Buffer b, env.Alloc(0, 64));
    KIT_EXPECT_ERROR(env, "copy_host_to_device from NULL",
                     api.copy_host_to_device(nullptr, b.get(), 0, nullptr, 16),
                     TSR_ERR_INVALID_ARGUMENT);
    KIT_EXPECT_ERROR(env, "copy_device_to_host into NULL",
                     api.copy_device_to_host(nullptr, nullptr, b.get(), 0, 16),
                     TSR_ERR_INVALID_ARGUMENT);
    return Pass();
  });

  // --- invalid handles ----------------------------------------------------
  auto freed_buffer = [&]() -> StatusOr<tsr_buffer> {
    tsr_buffer b = nullptr;
    TSR_RETURN_IF_ERROR(env.Check(
        api.buffer_alloc(0, TSR_MEM_DEVICE, 64, 0, &b), "buffer_alloc"));
    TSR_RETURN_IF_ERROR(env.Check(api.buffer_free(b), "buffer_free"));
    return b;
  };
  auto freed_stream = [&]() -> StatusOr<tsr_stream> {
    tsr_stream s = nullptr;
    TSR_RETURN_IF_ERROR(env.Check(api.stream_create(0, &s), "stream_create"));
    TSR_RETURN_IF_ERROR(env.Check(api.stream_destroy(s), "stream_destroy"));
    return s;
  };
  auto freed_event = [&]() -> StatusOr<tsr_event> {
    tsr_event e = nullptr;
    TSR_RETURN_IF_ERROR(env.Check(api.event_create(0, &e), "event_create"));
    TSR_RETURN_IF_ERROR(env.Check(api.event_destroy(e), "event_destroy"));
    return e;
  };
  uint8_t host[64] = {};

  using BufferCall = std::function<CallResult(tsr_buffer)>;
  std::vector<std::pair<std::string, BufferCall>> buffer_calls = {
      {"buffer_free",
       [&](tsr_buffer b) { return Capture(env, api.buffer_free(b)); }},
      {"buffer_info",
       [&](tsr_buffer b) {
         tsr_buffer_info info{};
         info.struct_size = sizeof(info);
         return Capture(env, api.buffer_info(b, &info));
       }},
      {"copy_host_to_device",
       [&](tsr_buffer b) {
         return Capture(env, api.copy_host_to_device(nullptr, b, 0, host, 16));
       }},
      {"copy_device_to_host",
       [&](tsr_buffer b) {
         return Capture(env, api.copy_device_to_host(nullptr, host, b, 0, 16));
       }},
      {"memset",
       [&](tsr_buffer b) {
         return Capture(env, api.memset(nullptr, b, 0, 1, 16));
       }},
  };
  for (const auto& [entry, call] : buffer_calls) {
    for (BadKind kind : kAllKinds) {
      ctx.Run(fmt::format("errors.{}.{}", entry, KindName(kind)),
              [&]() -> Outcome {
                return ExpectBadHandle<tsr_buffer>(env, kind, freed_buffer,
                                                   call, entry);
              });
    }
  }
  for (bool bad_dst : {true, false}) {
    for (BadKind kind : kAllKinds) {
      std::string entry =
          bad_dst ? "copy_device_to_device_dst" : "copy_device_to_device_src";
      ctx.Run(fmt::format("errors.{}.{}", entry, KindName(kind)),
              [&]() -> Outcome {
                KIT_ASSIGN_OR_FAIL(Buffer good, env.Alloc(0, 64));
                return ExpectBadHandle<tsr_buffer>(
                    env, kind, freed_buffer,
                    [&](tsr_buffer b) {
                      return Capture(
                          env, bad_dst ? api.copy_device_to_device(
                                             nullptr, b, 0, good.get(), 0, 16)
                                       : api.copy_device_to_device(
                                             nullptr, good.get(), 0, b, 0, 16));
                    },
                    entry);
              });
    }
  }

  using StreamCall = std::function<CallResult(tsr_stream)>;
  // Copies and memsets take NULL as "synchronous", so only freed and
  // made-up streams are errors for them.
  std::vector<std::tuple<std::string, StreamCall, bool>> stream_calls = {
      {"stream_destroy",
       [&](tsr_stream s) { return Capture(env, api.stream_destroy(s)); }, true},
      {"stream_synchronize",
       [&](tsr_stream s) { return Capture(env, api.stream_synchronize(s)); },
       true},
      {"stream_query",
       [&](tsr_stream s) { return Capture(env, api.stream_query(s)); }, true},
      {"event_record_stream",
       [&](tsr_stream s) -> CallResult {
         tsr_event e = nullptr;
         if (api.event_create(0, &e) != TSR_OK)
           return {TSR_OK, "event_create failed", false};
         CallResult r = Capture(env, api.event_record(e, s));
         api.event_destroy(e);
         return r;
       },
       true},
      {"stream_wait_event_stream",
       [&](tsr_stream s) -> CallResult {
         tsr_event e = nullptr;
         if (api.event_create(0, &e) != TSR_OK)
           return {TSR_OK, "event_create failed", false};
         CallResult r = Capture(env, api.stream_wait_event(s, e));
         api.event_destroy(e);
         return r;
       },
       true},
      {"memset_stream",
       [&](tsr_stream s) -> CallResult {
         tsr_buffer b = nullptr;
         if (api.buffer_alloc(0, TSR_MEM_DEVICE, 64, 0, &b) != TSR_OK) {
           return {TSR_OK, "buffer_alloc failed", false};
         }
         CallResult r = Capture(env, api.memset(s, b, 0, 1, 16));
         api.buffer_free(b);
         return r;
       },
       false},
      {"copy_host_to_device_stream",
       [&](tsr_stream s) -> CallResult {
         tsr_buffer b = nullptr;
         if (api.buffer_alloc(0, TSR_MEM_DEVICE, 64, 0, &b) != TSR_OK) {
           return {TSR_OK, "buffer_alloc failed", false};
         }
         CallResult r =
             Capture(env, api.copy_host_to_device(s, b, 0, host, 16));
         api.buffer_free(b);
         return r;
       },
       false},
  };
  for (const auto& [entry, call, null_is_error] : stream_calls) {
    for (BadKind kind : kAllKinds) {
      if (kind == BadKind::kNull && !null_is_error) continue;
      ctx.Run(fmt::format("errors.{}.{}", entry, KindName(kind)),
              [&]() -> Outcome {
                return ExpectBadHandle<tsr_stream>(env, kind, freed_stream,
                                                   call, entry);
              });
    }
  }

  using EventCall = std::function<CallResult(tsr_event)>;
  std::vector<std::pair<std::string, EventCall>> event_calls = {
      {"event_destroy",
       [&](tsr_event e) { return Capture(env, api.event_destroy(e)); }},
      {"event_synchronize",
       [&](tsr_event e) { return Capture(env, api.event_synchronize(e)); }},
      {"event_query",
       [&](tsr_event e) { return Capture(env, api.event_query(e)); }},
      {"event_record_event",
       [&](tsr_event e) -> CallResult {
         tsr_stream s = nullptr;
         if (api.stream_create(0, &s) != TSR_OK)
           return {TSR_OK, "stream_create failed", false};
         CallResult r = Capture(env, api.event_record(e, s));
         api.stream_destroy(s);
         return r;
       }},
      {"stream_wait_event_event",
       [&](tsr_event e) -> CallResult {
         tsr_stream s = nullptr;
         if (api.stream_create(0, &s) != TSR_OK)
           return {TSR_OK, "stream_create failed", false};
         CallResult r = Capture(env, api.stream_wait_event(s, e));
         api.stream_synchronize(s);
         api.stream_destroy(s);
         return r;
       }},
  };
  for (const auto& [entry, call] : event_calls) {
    for (BadKind kind : kAllKinds) {
      ctx.Run(fmt::format("errors.{}.{}", entry, KindName(kind)),
              [&]() -> Outcome {
                return ExpectBadHandle<tsr_event>(env, kind, freed_event, call,
                                                  entry);
              });
    }
  }

  // --- allocation ---------------------------------------------------------
  ctx.Run("errors.alloc.bad_alignment", [&]() -> Outcome {
    for (uint64_t alignment : {3ull, 24ull, 100ull, (1ull << 20) + 1}) {
      tsr_buffer b = nullptr;
      KIT_EXPECT_ERROR(env,
                       fmt::format("buffer_alloc with alignment {}", alignment),
                       api.buffer_alloc(0, TSR_MEM_DEVICE, 64, alignment, &b),
                       TSR_ERR_INVALID_ARGUMENT);
    }
    return Pass();
  });
  ctx.Run("errors.alloc.impossible_size", [&]() -> Outcome {
    tsr_buffer b = nullptr;
    KIT_EXPECT_ERROR(env, "buffer_alloc of 2^62 bytes",
                     api.buffer_alloc(0, TSR_MEM_DEVICE, 1ull << 62, 0, &b),
                     TSR_ERR_OUT_OF_MEMORY);
    KIT_EXPECT_ERROR(env, "buffer_alloc of 2^64 - 1 bytes",
                     api.buffer_alloc(0, TSR_MEM_DEVICE, ~0ull, 0, &b),
                     TSR_ERR_OUT_OF_MEMORY, TSR_ERR_INVALID_ARGUMENT);
    // The plugin still works afterwards.
    KIT_ASSIGN_OR_FAIL(Buffer ok, env.Alloc(0, 4096));
    return Pass();
  });
  ctx.Run("errors.alloc.bad_kind", [&]() -> Outcome {
    tsr_buffer b = nullptr;
    KIT_EXPECT_ERROR(env, "buffer_alloc of kind 99",
                     api.buffer_alloc(0, 99, 64, 0, &b),
                     TSR_ERR_INVALID_ARGUMENT, TSR_ERR_UNSUPPORTED);
    return Pass();
  });

  // --- copies out of bounds -----------------------------------------------
  ctx.Run("errors.copy.out_of_bounds", [&]() -> Outcome {
    KIT_ASSIGN_OR_FAIL(Buffer a, env.Alloc(0, 100));
    KIT_ASSIGN_OR_FAIL(Buffer b, env.Alloc(0, 100));
    std::vector<uint8_t> data(256);
    const uint64_t kHuge = ~0ull - 3;
    struct Bad {
      std::string what;
      std::function<tsr_status()> call;
    };
    std::vector<Bad> bad = {
        {"copy_host_to_device of 101 bytes into 100",
         [&] {
           return api.copy_host_to_device(nullptr, a.get(), 0, data.data(),
                                          101);
         }},
        {"copy_host_to_device at offset 90 of 20 bytes",
         [&] {
           return api.copy_host_to_device(nullptr, a.get(), 90, data.data(),
                                          20);
         }},
        {"copy_host_to_device at offset 2^64-4 (overflow)",
         [&] {
           return api.copy_host_to_device(nullptr, a.get(), kHuge, data.data(),
                                          8);
         }},
        {"copy_device_to_host at offset 99 of 2 bytes",
         [&] {
           return api.copy_device_to_host(nullptr, data.data(), a.get(), 99, 2);
         }},
        {"copy_device_to_host at offset 2^64-4 (overflow)",
         [&] {
           return api.copy_device_to_host(nullptr, data.data(), a.get(), kHuge,
                                          8);
         }},
        {"copy_device_to_device past the end of dst",
         [&] {
           return api.copy_device_to_device(nullptr, a.get(), 60, b.get(), 0,
                                            41);
         }},
        {"copy_device_to_device past the end of src",
         [&] {
           return api.copy_device_to_device(nullptr, a.get(), 0, b.get(), 70,
                                            31);
         }},
        {"memset past the end",
         [&] { return api.memset(nullptr, a.get(), 50, 0, 51); }},
        {"memset at offset 2^64-4 (overflow)",
         [&] { return api.memset(nullptr, a.get(), kHuge, 0, 8); }},
    };
    for (const Bad& x : bad) {
      KIT_EXPECT_ERROR(env, x.what, x.call(), TSR_ERR_INVALID_ARGUMENT);
    }
    return Pass();
  });
  ctx.Run("errors.copy.async_out_of_bounds", [&]() -> Outcome {
    // Either the enqueue fails, or the stream reports it at synchronize.
    KIT_ASSIGN_OR_FAIL(Buffer a, env.Alloc(0, 100));
    KIT_ASSIGN_OR_FAIL(Stream stream, env.NewStream(0));
    std::vector<uint8_t> data(256);
    tsr_status s =
        api.copy_host_to_device(stream.get(), a.get(), 50, data.data(), 51);
    if (s == TSR_OK) {
      s = api.stream_synchronize(stream.get());
      KIT_EXPECT_ERROR(env,
                       "an async out-of-bounds copy (reported at synchronize)",
                       s, TSR_ERR_INVALID_ARGUMENT);
      return Pass("reported at stream_synchronize");
    }
    KIT_EXPECT_ERROR(env, "an async out-of-bounds copy", s,
                     TSR_ERR_INVALID_ARGUMENT);
    return Pass("reported at enqueue");
  });

  // --- resolve ------------------------------------------------------------
  ctx.Run("errors.resolve.unknown_op", [&]() -> Outcome {
    // 1001: the first fused id no minor defines yet.
    for (tsr_op_id op : {0u, 14u, 999u, 1001u}) {
      tsr_op_signature sig{};
      sig.struct_size = sizeof(sig);
      sig.op = op;
      sig.version = 1;
      sig.num_args = 3;
      sig.dtypes[0] = sig.dtypes[1] = sig.dtypes[2] = TSR_DTYPE_F32;
      tsr_kernel k = nullptr;
      KIT_EXPECT_ERROR(env, fmt::format("resolve_op of op id {}", op),
                       api.resolve_op(0, &sig, &k), TSR_ERR_NOT_FOUND);
    }
    return Pass();
  });
  ctx.Run("errors.resolve.unlisted_signature", [&]() -> Outcome {
    tsr_op_signature sig{};
    sig.struct_size = sizeof(sig);
    sig.op = TSR_OP_ADD;
    sig.version = 1;
    sig.num_args = 3;
    sig.dtypes[0] = sig.dtypes[1] = sig.dtypes[2] = TSR_DTYPE_I64;  // not in v1
    tsr_kernel k = nullptr;
    KIT_EXPECT_ERROR(env, "resolve_op of add (i64, i64, i64)",
                     api.resolve_op(0, &sig, &k), TSR_ERR_NOT_FOUND);
    sig.dtypes[0] = sig.dtypes[1] = sig.dtypes[2] = TSR_DTYPE_F32;
    sig.version = 2;
    KIT_EXPECT_ERROR(env, "resolve_op of add version 2",
                     api.resolve_op(0, &sig, &k), TSR_ERR_NOT_FOUND);
    sig.version = 1;
    sig.num_args = TSR_MAX_OP_ARGS + 1;
    KIT_EXPECT_ERROR(env, "resolve_op with num_args 13",
                     api.resolve_op(0, &sig, &k), TSR_ERR_INVALID_ARGUMENT,
                     TSR_ERR_NOT_FOUND);
    return Pass();
  });

  // --- last_error ---------------------------------------------------------
  ctx.Run("errors.last_error_per_thread", [&]() -> Outcome {
    tsr_buffer b = nullptr;
    tsr_status s = api.buffer_alloc(0, TSR_MEM_DEVICE, 64, 3, &b);
    std::string mine = env.LastError();
    if (s == TSR_OK || mine.empty()) {
      return Fail("buffer_alloc with alignment 3 did not fail with a message");
    }
    std::string theirs;
    tsr_status their_status = TSR_OK;
    std::thread other([&] {
      tsr_device_properties p{};
      p.struct_size = sizeof(p);
      their_status = api.device_properties(1 << 20, &p);
      theirs = env.LastError();
    });
    other.join();
    if (their_status == TSR_OK || theirs.empty()) {
      return Fail(
          "device_properties(2^20) on another thread did not fail with a "
          "message");
    }
    std::string after = env.LastError();
    if (after != mine) {
      return Fail(fmt::format(
          "last_error() on this thread changed from \"{}\" to \"{}\" after a "
          "failure on another thread; it must be per thread",
          mine, after));
    }
    return Pass();
  });

  LaunchErrorChecks(ctx, env);
}

}  // namespace tessera::conformance
