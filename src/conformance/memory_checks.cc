// memory: allocation sizes (0 included), buffer_info, alignment (checked
// through host_pointer when device memory is host-visible, else through the
// 1.7 device_address), many live buffers not overlapping, pinned host memory
// when the capability says so, and the 1.7 memory_stats figures.
#include <fmt/format.h>

#include <cstddef>
#include <cstring>
#include <set>

#include "conformance/checks.h"

namespace tessera::conformance {
namespace {

StatusOr<tsr_buffer_info> Info(const PluginEnv& env, tsr_buffer b) {
  tsr_buffer_info info{};
  info.struct_size = sizeof(info);
  TSR_RETURN_IF_ERROR(
      env.Check(env.api().buffer_info(b, &info), "buffer_info"));
  return info;
}

// Where a buffer's alignment can be seen: its host pointer when device
// memory is host-visible, else its device address (ABI 1.7); 0 when
// neither is known. `what` names the one used.
uint64_t ObservableAddress(const tsr_buffer_info& info, bool host_visible,
                           const char** what) {
  if (host_visible && info.host_pointer != nullptr) {
    *what = "host_pointer";
    return reinterpret_cast<uintptr_t>(info.host_pointer);
  }
  *what = "device_address";
  return info.device_address;
}

bool HasMemoryStats(const tsr_plugin_api& api) {
  return api.struct_size >= offsetof(tsr_plugin_api, memory_stats) +
                                sizeof(api.memory_stats) &&
         api.memory_stats != nullptr;
}

StatusOr<tsr_memory_stats> Stats(const PluginEnv& env, int device) {
  tsr_memory_stats stats{};
  stats.struct_size = sizeof(stats);
  TSR_RETURN_IF_ERROR(
      env.Check(env.api().memory_stats(device, &stats), "memory_stats"));
  return stats;
}

}  // namespace

void MemoryChecks(CheckContext& ctx, PluginEnv& env) {
  const tsr_plugin_api& api = env.api();
  const bool host_visible = env.HasCap(TSR_CAP_HOST_VISIBLE_DEVICE_MEM);
  const int last = env.device_count() - 1;

  std::vector<int> devices = {0};
  if (last > 0) devices.push_back(last);
  for (int device : devices) {
    ctx.Run(
        fmt::format("memory.alloc_sizes.device{}", device),
        [&, device]() -> Outcome {
          const uint64_t alignment = env.props(device).alignment;
          std::vector<Buffer> live;
          std::set<tsr_buffer> handles;
          for (uint64_t size : {0ull, 1ull, 3ull, 17ull, 4096ull, 65537ull,
                                1ull << 20, 33ull << 20}) {
            KIT_ASSIGN_OR_FAIL(Buffer b, env.Alloc(device, size));
            if (!handles.insert(b.get()).second) {
              return Fail(fmt::format(
                  "buffer_alloc({} bytes) returned a handle that is "
                  "already live",
                  size));
            }
            KIT_ASSIGN_OR_FAIL(tsr_buffer_info info, Info(env, b.get()));
            if (info.size != size || info.reserved_size < size) {
              return Fail(
                  fmt::format("buffer_info of a {}-byte buffer says size {}, "
                              "reserved_size {}",
                              size, info.size, info.reserved_size));
            }
            if (info.device != device || info.kind != TSR_MEM_DEVICE) {
              return Fail(fmt::format(
                  "buffer_info says device {} kind {}; allocated on "
                  "device {} as TSR_MEM_DEVICE",
                  info.device, info.kind, device));
            }
            if (host_visible && size > 0) {
              if (info.host_pointer == nullptr) {
                return Fail(
                    "TSR_CAP_HOST_VISIBLE_DEVICE_MEM is set but host_pointer "
                    "is NULL");
              }
              if (reinterpret_cast<uintptr_t>(info.host_pointer) % alignment !=
                  0) {
                return Fail(fmt::format(
                    "host_pointer {} is not aligned to the device's "
                    "alignment {}",
                    info.host_pointer, alignment));
              }
            }
            if (info.device_address != 0 &&
                info.device_address % alignment != 0) {
              return Fail(fmt::format(
                  "a {}-byte buffer's device_address {:#x} is not aligned to "
                  "the device's alignment {} (device_properties.alignment)",
                  size, info.device_address, alignment));
            }
            if (host_visible && size > 0 && info.device_address != 0 &&
                info.device_address !=
                    reinterpret_cast<uintptr_t>(info.host_pointer)) {
              return Fail(fmt::format(
                  "host-visible memory whose device_address {:#x} differs "
                  "from its host_pointer {}; for host-visible memory they "
                  "are the same address",
                  info.device_address, info.host_pointer));
            }
            live.push_back(std::move(b));
          }
          return Pass();
        });
  }

  // Each buffer_alloc's alignment argument is honoured, seen through
  // host_pointer or (memory the host cannot see) device_address. Buffers
  // stay live so an allocator cannot hand the same aligned block back.
  ctx.Run("memory.alignment_requested", [&]() -> Outcome {
    const char* seen_through = "";
    std::vector<Buffer> live;
    int checked = 0;
    for (uint64_t alignment : {64ull, 256ull, 4096ull, 65536ull, 1ull << 21}) {
      for (uint64_t size : {1ull, 100ull, 70000ull}) {
        KIT_ASSIGN_OR_FAIL(Buffer b,
                           env.Alloc(0, size, TSR_MEM_DEVICE, alignment));
        KIT_ASSIGN_OR_FAIL(tsr_buffer_info info, Info(env, b.get()));
        const uint64_t address =
            ObservableAddress(info, host_visible, &seen_through);
        if (address == 0) {
          return Skip(
              "inconclusive: device memory is not host-visible and "
              "buffer_info reports no device_address (ABI 1.7), so "
              "alignment cannot be observed; report device_address if the "
              "device has a flat address space");
        }
        if (address % alignment != 0) {
          return Fail(fmt::format(
              "buffer_alloc ignored the requested alignment: a {}-byte "
              "buffer asked to be aligned to {} bytes is at {} {:#x} ({} "
              "bytes past a multiple)",
              size, alignment, seen_through, address, address % alignment));
        }
        live.push_back(std::move(b));
        ++checked;
      }
    }
    return Pass(fmt::format("{} buffers, seen through {}", checked,
                            seen_through));
  });

  // ABI 1.7 memory_stats (optional): a buffer's bytes show in bytes_in_use
  // while it lives and leave it when freed; the peak never falls below
  // what is in use; a limit, when given, is at least what is in use.
  ctx.Run("memory.stats", [&]() -> Outcome {
    if (!HasMemoryStats(api)) {
      return Skip("the plugin does not report memory_stats (optional, 1.7)");
    }
    const uint64_t size = 8ull << 20;
    KIT_ASSIGN_OR_FAIL(tsr_memory_stats before, Stats(env, 0));
    KIT_ASSIGN_OR_FAIL(Buffer b, env.Alloc(0, size));
    KIT_ASSIGN_OR_FAIL(tsr_memory_stats during, Stats(env, 0));
    b.Reset();  // frees it
    KIT_ASSIGN_OR_FAIL(tsr_memory_stats after, Stats(env, 0));
    for (const tsr_memory_stats* s : {&before, &during, &after}) {
      if (s->peak_bytes_in_use < s->bytes_in_use) {
        return Fail(fmt::format(
            "peak_bytes_in_use {} is below bytes_in_use {}",
            s->peak_bytes_in_use, s->bytes_in_use));
      }
      if (s->bytes_limit != 0 && s->bytes_limit < s->bytes_in_use) {
        return Fail(fmt::format("bytes_limit {} is below bytes_in_use {}",
                                s->bytes_limit, s->bytes_in_use));
      }
    }
    if (during.bytes_in_use < before.bytes_in_use + size) {
      return Fail(fmt::format(
          "bytes_in_use went from {} to {} across a live {}-byte "
          "allocation; it must count the host's buffers",
          before.bytes_in_use, during.bytes_in_use, size));
    }
    if (during.peak_bytes_in_use < during.bytes_in_use ||
        after.peak_bytes_in_use < during.bytes_in_use) {
      return Fail(fmt::format("peak_bytes_in_use {} after the buffer is "
                              "below the {} in use while it lived",
                              after.peak_bytes_in_use, during.bytes_in_use));
    }
    if (after.bytes_in_use + size > during.bytes_in_use) {
      return Fail(fmt::format(
          "bytes_in_use went from {} to {} when a {}-byte buffer was freed; "
          "a freed buffer's bytes must leave it (a caching allocator may keep "
          "them only if it also reports them as in use from the start)",
          during.bytes_in_use, after.bytes_in_use, size));
    }
    tsr_memory_stats bad{};
    bad.struct_size = 4;
    tsr_status s = api.memory_stats(0, &bad);
    if (s != TSR_OK) {
      KIT_EXPECT_ERROR(env, "memory_stats with a 4-byte struct_size", s,
                       TSR_ERR_INVALID_ARGUMENT);
    }
    KIT_EXPECT_ERROR(env, "memory_stats of a device that does not exist",
                     api.memory_stats(env.device_count(), &during),
                     TSR_ERR_NOT_FOUND, TSR_ERR_INVALID_ARGUMENT);
    return Pass(fmt::format("in use {} -> {} -> {} bytes, peak {}, limit {}",
                            before.bytes_in_use, during.bytes_in_use,
                            after.bytes_in_use, after.peak_bytes_in_use,
                            after.bytes_limit));
  });

  ctx.Run("memory.many_buffers", [&]() -> Outcome {
    Rng rng(11);
    std::vector<Buffer> live;
    std::vector<uint8_t> tags;
    for (int i = 0; i < 2000; ++i) {
      uint64_t size = static_cast<uint64_t>(rng.Int(1, 300));
      KIT_ASSIGN_OR_FAIL(Buffer b, env.Alloc(0, size));
      uint8_t tag = static_cast<uint8_t>(i * 37 + 1);
      KIT_CHECK_CALL(env, api.memset(nullptr, b.get(), 0, tag, size), "memset");
      live.push_back(std::move(b));
      tags.push_back(tag);
      if (i % 3 == 2) {  // free some as we go
        size_t victim =
            static_cast<size_t>(rng.Int(0, static_cast<int64_t>(live.size())));
        live.erase(live.begin() + victim);
        tags.erase(tags.begin() + victim);
      }
    }
    // Every live buffer still holds its own tag: no two overlap.
    for (size_t i = 0; i < live.size(); ++i) {
      std::vector<uint8_t> back(live[i].size());
      KIT_RETURN_IF_ERROR(
          env.Download(live[i].get(), 0, back.data(), back.size()));
      for (uint8_t v : back) {
        if (v != tags[i]) {
          return Fail(
              fmt::format("live buffer {} of {} lost its contents (holds {}, "
                          "wrote {}); buffers overlap or a free clobbered it",
                          i, live.size(), v, tags[i]));
        }
      }
    }
    return Pass(fmt::format("{} buffers live at the end", live.size()));
  });

  ctx.Run("memory.buffer_info_struct_size", [&]() -> Outcome {
    // As devices.properties_struct_size: never write past min(struct_size,
    // sizeof); a newer host's bigger struct works.
    KIT_ASSIGN_OR_FAIL(Buffer b, env.Alloc(0, 100));
    struct Padded {
      tsr_buffer_info info;
      unsigned char tail[64];
    } big;
    std::memset(&big, 0xa5, sizeof(big));
    big.info.struct_size = sizeof(big);
    KIT_CHECK_CALL(env, api.buffer_info(b.get(), &big.info),
                   "buffer_info with a newer host's bigger struct_size");
    for (unsigned char c : big.tail) {
      if (c != 0xa5)
        return Fail("buffer_info wrote past sizeof(tsr_buffer_info)");
    }
    if (big.info.size != 100) {
      return Fail(fmt::format("buffer_info.size is {} for a bigger struct",
                              big.info.size));
    }
    tsr_buffer_info info;
    std::memset(&info, 0xa5, sizeof(info));
    const uint32_t short_size = offsetof(tsr_buffer_info, size);
    info.struct_size = short_size;
    tsr_status s = api.buffer_info(b.get(), &info);
    if (s != TSR_OK) {
      KIT_EXPECT_ERROR(env, "buffer_info with a struct shorter than v1.0", s,
                       TSR_ERR_INVALID_ARGUMENT);
    }
    const auto* bytes = reinterpret_cast<const unsigned char*>(&info);
    for (size_t i = short_size; i < sizeof(info); ++i) {
      if (bytes[i] != 0xa5) {
        return Fail(
            fmt::format("buffer_info wrote byte {} although struct_size was {}",
                        i, short_size));
      }
    }
    return Pass();
  });

  ctx.Run("memory.pinned_host", [&]() -> Outcome {
    if (!env.HasCap(TSR_CAP_PINNED_HOST)) {
      tsr_buffer b = nullptr;
      KIT_EXPECT_ERROR(env, "a pinned allocation without TSR_CAP_PINNED_HOST",
                       api.buffer_alloc(0, TSR_MEM_PINNED_HOST, 64, 0, &b),
                       TSR_ERR_UNSUPPORTED, TSR_ERR_INVALID_ARGUMENT);
      return Pass("no TSR_CAP_PINNED_HOST: pinned allocations are refused");
    }
    const uint64_t size = 1 << 16;
    KIT_ASSIGN_OR_FAIL(Buffer pinned, env.Alloc(0, size, TSR_MEM_PINNED_HOST));
    KIT_ASSIGN_OR_FAIL(tsr_buffer_info info, Info(env, pinned.get()));
    if (info.kind != TSR_MEM_PINNED_HOST || info.host_pointer == nullptr) {
      return Fail(fmt::format("pinned buffer_info: kind {}, host_pointer {}",
                              info.kind, info.host_pointer));
    }
    // Host writes through host_pointer are what a device copy reads.
    auto* host = static_cast<uint8_t*>(info.host_pointer);
    for (uint64_t i = 0; i < size; ++i) host[i] = static_cast<uint8_t>(i * 7);
    KIT_ASSIGN_OR_FAIL(Buffer device, env.Alloc(0, size));
    KIT_CHECK_CALL(env,
                   api.copy_device_to_device(nullptr, device.get(), 0,
                                             pinned.get(), 0, size),
                   "copy_device_to_device from pinned");
    std::vector<uint8_t> back(size);
    KIT_RETURN_IF_ERROR(env.Download(device.get(), 0, back.data(), size));
    for (uint64_t i = 0; i < size; ++i) {
      if (back[i] != static_cast<uint8_t>(i * 7)) {
        return Fail(fmt::format(
            "byte {} written through host_pointer did not arrive", i));
      }
    }
    // And a copy into the pinned buffer is visible through host_pointer.
    KIT_CHECK_CALL(env, api.memset(nullptr, pinned.get(), 100, 0x3c, 50),
                   "memset pinned");
    for (uint64_t i = 100; i < 150; ++i) {
      if (host[i] != 0x3c)
        return Fail(
            "a memset of a pinned buffer is not visible at host_pointer");
    }
    return Pass();
  });

  ctx.Run("memory.host_pointer_coherent", [&]() -> Outcome {
    if (!host_visible) return Skip("device memory is not host-visible");
    KIT_ASSIGN_OR_FAIL(Buffer b, env.Alloc(0, 4096));
    std::vector<uint8_t> data(4096);
    Rng(3).Bytes(data.data(), data.size());
    KIT_RETURN_IF_ERROR(env.Upload(b.get(), 0, data.data(), data.size()));
    KIT_ASSIGN_OR_FAIL(tsr_buffer_info info, Info(env, b.get()));
    if (std::memcmp(info.host_pointer, data.data(), data.size()) != 0) {
      return Fail("host_pointer does not show what copy_host_to_device wrote");
    }
    return Pass();
  });
}

}  // namespace tessera::conformance
