// abi: the table, the manifest, the optional sub-tables, and the life cycle
// (probe, init, second init, shutdown and re-init, options). Runs with the
// plugin NOT initialised and leaves it that way after every check.
#include <fmt/format.h>

#include <cstddef>
#include <cstring>

#include "conformance/checks.h"
#include "runtime/plugin_library.h"

namespace tessera::conformance {
namespace {

constexpr uint64_t kKnownCaps =
    TSR_CAP_PINNED_HOST | TSR_CAP_HOST_VISIBLE_DEVICE_MEM | TSR_CAP_GRAPHS |
    TSR_CAP_COLLECTIVES | TSR_CAP_FUSED_OPS;

// Calls shutdown when it goes out of scope (after a successful init).
struct ShutdownGuard {
  const PluginEnv& env;
  bool active = true;
  ~ShutdownGuard() {
    if (active) env.Shutdown();
  }
};

Outcome CountDevices(const PluginEnv& env, int32_t* count) {
  *count = -1;
  KIT_CHECK_CALL(env, env.api().device_count(count), "device_count");
  if (*count < 1) {
    return Fail(fmt::format("device_count returned {} after a successful init",
                            *count));
  }
  return Pass();
}

}  // namespace

void AbiChecks(CheckContext& ctx, PluginEnv& env) {
  const tsr_plugin_api& api = env.api();

  ctx.Run("abi.struct_sizes", [&]() -> Outcome {
    constexpr size_t kV10Size =
        offsetof(tsr_plugin_api, graph) + sizeof(tsr_plugin_api::graph);
    if (api.struct_size < kV10Size) {
      return Fail(fmt::format(
          "tsr_plugin_api.struct_size is {}, smaller than the {} bytes of the "
          "v1.0 table (every v1.0 entry, comm and graph included)",
          api.struct_size, kV10Size));
    }
    if (api.manifest->struct_size < sizeof(tsr_plugin_manifest)) {
      return Fail(fmt::format(
          "manifest.struct_size is {}, smaller than the {} bytes of the v1.0 "
          "manifest",
          api.manifest->struct_size, sizeof(tsr_plugin_manifest)));
    }
    return Pass();
  });

  ctx.Run("abi.manifest", [&]() -> Outcome {
    const tsr_plugin_manifest& m = *api.manifest;
    if (!runtime::IsValidPluginName(m.name)) {
      return Fail(fmt::format(
          "manifest.name is {}; it must be 1-64 characters of [a-z0-9_]",
          m.name ? fmt::format("\"{}\"", runtime::PluginText(m.name, 64))
                 : "NULL"));
    }
    if (m.version == nullptr || m.version[0] == '\0') {
      return Fail("manifest.version is NULL or empty");
    }
    if (m.description == nullptr) return Fail("manifest.description is NULL");
    if (m.requirements == nullptr) {
      return Fail("manifest.requirements is NULL (use \"\" for none)");
    }
    if (m.abi_major != api.abi_major || m.abi_minor != api.abi_minor) {
      return Fail(
          fmt::format("the manifest says ABI {}.{} but the table says {}.{}",
                      m.abi_major, m.abi_minor, api.abi_major, api.abi_minor));
    }
    if (m.min_host_abi_minor > TSR_PLUGIN_ABI_MINOR) {
      return Fail(fmt::format(
          "manifest.min_host_abi_minor is {}, newer than this host's ABI "
          "minor {}; this host cannot use the plugin",
          m.min_host_abi_minor, TSR_PLUGIN_ABI_MINOR));
    }
    if (m.min_host_abi_minor > m.abi_minor) {
      return Fail(fmt::format(
          "manifest.min_host_abi_minor {} is above the plugin's own minor {}",
          m.min_host_abi_minor, m.abi_minor));
    }
    if (api.abi_minor <= TSR_PLUGIN_ABI_MINOR &&
        (m.capabilities & ~kKnownCaps)) {
      return Fail(fmt::format(
          "manifest.capabilities has unknown bits {:#x} for ABI {}.{}",
          m.capabilities & ~kKnownCaps, api.abi_major, api.abi_minor));
    }
    return Pass(fmt::format("{} {} (ABI {}.{}, capabilities {:#x})", m.name,
                            m.version, m.abi_major, m.abi_minor,
                            m.capabilities));
  });

  ctx.Run("abi.sub_tables", [&]() -> Outcome {
    const bool caps_comm = env.HasCap(TSR_CAP_COLLECTIVES);
    const bool caps_graph = env.HasCap(TSR_CAP_GRAPHS);
    if (caps_comm != (api.comm != nullptr)) {
      return Fail(fmt::format(
          "TSR_CAP_COLLECTIVES is {} but the comm table is {}",
          caps_comm ? "set" : "clear", api.comm ? "present" : "NULL"));
    }
    if (caps_graph != (api.graph != nullptr)) {
      return Fail(fmt::format("TSR_CAP_GRAPHS is {} but the graph table is {}",
                              caps_graph ? "set" : "clear",
                              api.graph ? "present" : "NULL"));
    }
    if (api.comm != nullptr) {
      const tsr_comm_api& c = *api.comm;
      if (c.struct_size < sizeof(tsr_comm_api)) {
        return Fail(fmt::format("comm.struct_size {} < v1.0 size {}",
                                c.struct_size, sizeof(tsr_comm_api)));
      }
      if (!c.comm_init_all || !c.comm_destroy || !c.all_reduce ||
          !c.all_gather || !c.broadcast || !c.send || !c.recv) {
        return Fail(
            "the comm table has a NULL entry; all are required when "
            "it is present");
      }
    }
    if (api.graph != nullptr) {
      const tsr_graph_api& g = *api.graph;
      if (g.struct_size < sizeof(tsr_graph_api)) {
        return Fail(fmt::format("graph.struct_size {} < v1.0 size {}",
                                g.struct_size, sizeof(tsr_graph_api)));
      }
      if (!g.begin_capture || !g.end_capture || !g.launch || !g.destroy) {
        return Fail(
            "the graph table has a NULL entry; all are required when "
            "it is present");
      }
    }
    return Pass();
  });

  ctx.Run("abi.last_error_before_init", [&]() -> Outcome {
    const char* message = api.last_error();
    if (message == nullptr) return Fail("last_error() returned NULL");
    (void)std::strlen(message);
    return Pass();
  });

  ctx.Run("abi.probe_idempotent", [&]() -> Outcome {
    int32_t a = api.probe(), b = api.probe();
    if (a != b) {
      return Fail(fmt::format("probe() returned {} then {}", a, b));
    }
    if (a <= 0) return Fail(fmt::format("probe() returned {}", a));
    return Pass(fmt::format("score {}", a));
  });

  ctx.Run("abi.device_count_before_init", [&]() -> Outcome {
    int32_t count = -1;
    KIT_EXPECT_ERROR(env, "device_count before init", api.device_count(&count),
                     TSR_ERR_INVALID_ARGUMENT, TSR_ERR_INVALID_HANDLE,
                     TSR_ERR_UNSUPPORTED, TSR_ERR_NOT_FOUND, TSR_ERR_DEVICE,
                     TSR_ERR_INTERNAL);
    return Pass();
  });

  ctx.Run("abi.init_null_args", [&]() -> Outcome {
    KIT_CHECK_CALL(env, api.init(nullptr), "init(NULL)");
    ShutdownGuard guard{env};
    int32_t count;
    Outcome o = CountDevices(env, &count);
    if (o.status != CheckStatus::kPass) return o;
    guard.active = false;
    KIT_CHECK_CALL(env, api.shutdown(), "shutdown");
    return Pass(fmt::format("{} device(s)", count));
  });

  ctx.Run("abi.init_explicit_args", [&]() -> Outcome {
    KIT_CHECK_CALL(env, env.RawInit(), "init(explicit args)");
    ShutdownGuard guard{env};
    int32_t count;
    return CountDevices(env, &count);
  });

  ctx.Run("abi.init_args_struct_size", [&]() -> Outcome {
    // A newer host passes a bigger tsr_init_args (unknown trailing fields,
    // zero here): the plugin reads what it knows and initialises.
    std::vector<tsr_option> opts;
    for (const auto& [k, v] : env.options())
      opts.push_back({k.c_str(), v.c_str()});
    struct Padded {
      tsr_init_args args;
      unsigned char tail[64];
    } big;
    std::memset(&big, 0, sizeof(big));
    big.args.struct_size = sizeof(big);
    big.args.options = opts.empty() ? nullptr : opts.data();
    big.args.num_options = opts.size();
    big.args.num_visible_devices = -1;
    KIT_CHECK_CALL(env, api.init(&big.args),
                   "init with a newer host's bigger tsr_init_args");
    {
      ShutdownGuard guard{env};
      int32_t count;
      Outcome o = CountDevices(env, &count);
      if (o.status != CheckStatus::kPass) return o;
    }
    // A struct shorter than v1.0 (no visible_devices): refused with a
    // message, or read partly; never a crash.
    tsr_init_args small{};
    small.struct_size = offsetof(tsr_init_args, visible_devices);
    small.options = big.args.options;
    small.num_options = big.args.num_options;
    tsr_status s = api.init(&small);
    if (s == TSR_OK) {
      ShutdownGuard guard{env};
      int32_t count;
      return CountDevices(env, &count);
    }
    KIT_EXPECT_ERROR(env, "init with a tsr_init_args shorter than v1.0", s,
                     TSR_ERR_INVALID_ARGUMENT);
    return Pass("a short struct is refused");
  });

  ctx.Run("abi.second_init_fails", [&]() -> Outcome {
    KIT_CHECK_CALL(env, env.RawInit(), "init");
    ShutdownGuard guard{env};
    KIT_EXPECT_ERROR(env, "a second init", api.init(nullptr),
                     TSR_ERR_INVALID_ARGUMENT);
    int32_t count;
    return CountDevices(env, &count);  // still initialised and working
  });

  ctx.Run("abi.shutdown_reinit", [&]() -> Outcome {
    for (int round = 0; round < 3; ++round) {
      KIT_CHECK_CALL(env, env.RawInit(), fmt::format("init (round {})", round));
      ShutdownGuard guard{env};
      tsr_buffer buffer = nullptr;
      KIT_CHECK_CALL(env, api.buffer_alloc(0, TSR_MEM_DEVICE, 1024, 0, &buffer),
                     "buffer_alloc after init");
      tsr_stream stream = nullptr;
      KIT_CHECK_CALL(env, api.stream_create(0, &stream), "stream_create");
      KIT_CHECK_CALL(env, api.memset(stream, buffer, 0, 7, 1024), "memset");
      KIT_CHECK_CALL(env, api.stream_synchronize(stream), "stream_synchronize");
      KIT_CHECK_CALL(env, api.stream_destroy(stream), "stream_destroy");
      KIT_CHECK_CALL(env, api.buffer_free(buffer), "buffer_free");
      guard.active = false;
      KIT_CHECK_CALL(env, api.shutdown(),
                     fmt::format("shutdown (round {})", round));
    }
    return Pass();
  });

  ctx.Run("abi.unknown_option_rejected", [&]() -> Outcome {
    const std::string key = "tessera_kit_no_such_option";
    tsr_status s = env.RawInit({{key, "1"}});
    if (s == TSR_OK) {
      env.Shutdown();
      return Fail(fmt::format("init accepted the unknown option {}=1", key));
    }
    std::string message = env.LastError();
    if (s != TSR_ERR_INVALID_ARGUMENT) {
      return Fail(
          fmt::format("init with an unknown option returned {}; "
                      "expected TSR_ERR_INVALID_ARGUMENT ({})",
                      TsrStatusName(s), message));
    }
    if (message.find(key) == std::string::npos) {
      return Fail(
          fmt::format("the init error does not name the unknown key {}: \"{}\"",
                      key, message));
    }
    // The failed init must leave the plugin able to init again.
    KIT_CHECK_CALL(env, env.RawInit(), "init after a rejected init");
    ShutdownGuard guard{env};
    return Pass();
  });

  ctx.Run("abi.visible_devices", [&]() -> Outcome {
    KIT_CHECK_CALL(env, env.RawInit(), "init");
    int32_t all = 0;
    {
      ShutdownGuard guard{env};
      Outcome o = CountDevices(env, &all);
      if (o.status != CheckStatus::kPass) return o;
    }
    struct Case {
      std::vector<int32_t> visible;
      int32_t want_count;
      int32_t want_physical0;
    };
    std::vector<Case> cases = {{{0}, 1, 0}, {{0, 1 << 20}, 1, 0}};
    if (all >= 2) cases.push_back({{all - 1, 0}, 2, all - 1});
    for (const Case& c : cases) {
      std::string what =
          fmt::format("init(visible_devices [{}])", fmt::join(c.visible, ", "));
      KIT_CHECK_CALL(env, env.RawInit({}, &c.visible), what);
      ShutdownGuard guard{env};
      int32_t count = -1;
      KIT_CHECK_CALL(env, api.device_count(&count), "device_count");
      if (count != c.want_count) {
        return Fail(fmt::format("after {} device_count is {}, expected {}",
                                what, count, c.want_count));
      }
      tsr_device_properties p{};
      p.struct_size = sizeof(p);
      KIT_CHECK_CALL(env, api.device_properties(0, &p), "device_properties(0)");
      if (p.physical_index != c.want_physical0) {
        return Fail(
            fmt::format("after {} device 0 has physical_index {}, expected {}",
                        what, p.physical_index, c.want_physical0));
      }
    }
    return Pass(fmt::format("{} physical device(s)", all));
  });
}

}  // namespace tessera::conformance
