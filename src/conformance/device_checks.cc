// devices: enumeration, properties (and their struct_size rule), the dtype
// mask against the op table, and out-of-range device indices.
#include <fmt/format.h>

#include <cstddef>
#include <cstring>

#include "conformance/checks.h"

namespace tessera::conformance {
namespace {

bool Terminated(const char* s, size_t n) {
  return std::memchr(s, '\0', n) != nullptr;
}

}  // namespace

void DeviceChecks(CheckContext& ctx, PluginEnv& env) {
  const tsr_plugin_api& api = env.api();
  const int count = env.device_count();

  ctx.Run("devices.count", [&]() -> Outcome {
    int32_t again = -1;
    KIT_CHECK_CALL(env, api.device_count(&again), "device_count");
    if (again != count) {
      return Fail(
          fmt::format("device_count returned {} then {}", count, again));
    }
    return Pass(fmt::format("{} device(s)", count));
  });

  for (int d = 0; d < count; ++d) {
    ctx.Run(fmt::format("devices.properties.{}", d), [&, d]() -> Outcome {
      const tsr_device_properties& p = env.props(d);
      if (!Terminated(p.name, sizeof(p.name)) || p.name[0] == '\0') {
        return Fail("name is empty or not NUL-terminated");
      }
      if (!Terminated(p.vendor, sizeof(p.vendor)) ||
          !Terminated(p.driver_version, sizeof(p.driver_version))) {
        return Fail("vendor or driver_version is not NUL-terminated");
      }
      if (p.type != TSR_DEVICE_CPU && p.type != TSR_DEVICE_GPU &&
          p.type != TSR_DEVICE_ACCELERATOR) {
        return Fail(fmt::format("type {} is not a tsr_device_type", p.type));
      }
      if (p.physical_index < 0) {
        return Fail(fmt::format("physical_index is {}", p.physical_index));
      }
      if (p.memory_total == 0) return Fail("memory_total is 0");
      if (p.memory_free > p.memory_total) {
        return Fail(fmt::format("memory_free {} > memory_total {}",
                                p.memory_free, p.memory_total));
      }
      if (p.alignment == 0 || (p.alignment & (p.alignment - 1)) != 0) {
        return Fail(
            fmt::format("alignment {} is not a power of two", p.alignment));
      }
      if (p.compute_units == 0) return Fail("compute_units is 0");
      if ((p.dtype_mask & (uint64_t{1} << TSR_DTYPE_F32)) == 0) {
        return Fail(fmt::format("dtype_mask {:#x} lacks F32", p.dtype_mask));
      }
      return Pass(fmt::format("\"{}\" ({}), {} MiB, alignment {}, {} units",
                              p.name, p.vendor, p.memory_total >> 20,
                              p.alignment, p.compute_units));
    });
  }

  ctx.Run("devices.properties_struct_size", [&]() -> Outcome {
    // Rule 1: the plugin writes only min(struct_size, its sizeof) bytes. A
    // newer host passes a bigger struct; a struct shorter than v1.0 may be
    // refused (with a message) or filled partly, but never overrun.
    struct Padded {
      tsr_device_properties props;
      unsigned char tail[64];
    } big;
    std::memset(&big, 0xa5, sizeof(big));
    big.props.struct_size = sizeof(big);
    KIT_CHECK_CALL(env, api.device_properties(0, &big.props),
                   "device_properties with a newer host's bigger struct_size");
    for (unsigned char c : big.tail) {
      if (c != 0xa5) {
        return Fail(
            "device_properties wrote past sizeof(tsr_device_properties) when a "
            "newer host passed a bigger struct; write min(struct_size, sizeof) "
            "bytes");
      }
    }
    if (!Terminated(big.props.name, sizeof(big.props.name)) ||
        big.props.name[0] == '\0') {
      return Fail("name was not filled in for a bigger struct_size");
    }
    tsr_device_properties p;
    std::memset(&p, 0xa5, sizeof(p));
    const uint32_t short_size = offsetof(tsr_device_properties, memory_total);
    p.struct_size = short_size;
    tsr_status s = api.device_properties(0, &p);
    if (s != TSR_OK) {
      KIT_EXPECT_ERROR(env, "device_properties with a struct shorter than v1.0",
                       s, TSR_ERR_INVALID_ARGUMENT);
    }
    const auto* bytes = reinterpret_cast<const unsigned char*>(&p);
    for (size_t i = short_size; i < sizeof(p); ++i) {
      if (bytes[i] != 0xa5) {
        return Fail(fmt::format(
            "device_properties wrote byte {} of tsr_device_properties although "
            "struct_size was {}",
            i, short_size));
      }
    }
    return Pass(s == TSR_OK ? "a short struct is filled partly"
                            : "a short struct is refused");
  });

  ctx.Run("devices.dtype_mask_covers_ops", [&]() -> Outcome {
    const tsr_op_signature* ops = nullptr;
    size_t n = 0;
    KIT_CHECK_CALL(env, api.list_ops(&ops, &n), "list_ops");
    for (int d = 0; d < count; ++d) {
      for (size_t i = 0; i < n; ++i) {
        for (uint32_t a = 0; a < ops[i].num_args && a < TSR_MAX_OP_ARGS; ++a) {
          tsr_dtype dt = ops[i].dtypes[a];
          if (dt <= 0 || dt >= 64 ||
              (env.props(d).dtype_mask & (uint64_t{1} << dt)) == 0) {
            return Fail(fmt::format(
                "op table entry {} (op {}) uses dtype {} that device {}'s "
                "dtype_mask {:#x} does not list",
                i, ops[i].op, dt, d, env.props(d).dtype_mask));
          }
        }
      }
    }
    return Pass();
  });

  ctx.Run("devices.out_of_range", [&]() -> Outcome {
    for (int32_t bad : {count, count + 7, -1}) {
      tsr_device_properties p{};
      p.struct_size = sizeof(p);
      std::string d = std::to_string(bad);
      KIT_EXPECT_ERROR(env, "device_properties(" + d + ")",
                       api.device_properties(bad, &p), TSR_ERR_NOT_FOUND,
                       TSR_ERR_INVALID_ARGUMENT);
      tsr_buffer buffer = nullptr;
      KIT_EXPECT_ERROR(env, "buffer_alloc(device " + d + ")",
                       api.buffer_alloc(bad, TSR_MEM_DEVICE, 64, 0, &buffer),
                       TSR_ERR_NOT_FOUND, TSR_ERR_INVALID_ARGUMENT);
      tsr_stream stream = nullptr;
      KIT_EXPECT_ERROR(env, "stream_create(" + d + ")",
                       api.stream_create(bad, &stream), TSR_ERR_NOT_FOUND,
                       TSR_ERR_INVALID_ARGUMENT);
      tsr_event event = nullptr;
      KIT_EXPECT_ERROR(env, "event_create(" + d + ")",
                       api.event_create(bad, &event), TSR_ERR_NOT_FOUND,
                       TSR_ERR_INVALID_ARGUMENT);
      const tsr_op_signature* ops = nullptr;
      size_t n = 0;
      KIT_CHECK_CALL(env, api.list_ops(&ops, &n), "list_ops");
      if (n > 0) {
        tsr_kernel kernel = nullptr;
        KIT_EXPECT_ERROR(env, "resolve_op(device " + d + ")",
                         api.resolve_op(bad, &ops[0], &kernel),
                         TSR_ERR_NOT_FOUND, TSR_ERR_INVALID_ARGUMENT);
      }
    }
    return Pass();
  });
}

}  // namespace tessera::conformance
