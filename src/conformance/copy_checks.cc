// copies: synchronous and asynchronous host-to-device, device-to-host,
// device-to-device and memset round trips with offsets, the bytes around
// each copy untouched, in-stream ordering of copies, cross-device copies.
#include <fmt/format.h>

#include <cstring>

#include "conformance/checks.h"

namespace tessera::conformance {
namespace {

// "" when equal, else where they first differ.
std::string Diff(const std::vector<uint8_t>& got,
                 const std::vector<uint8_t>& want, const std::string& what) {
  if (got.size() != want.size()) return what + ": size differs";
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i] != want[i]) {
      return fmt::format("{}: byte {} is {:#04x}, want {:#04x}", what, i,
                         got[i], want[i]);
    }
  }
  return "";
}

}  // namespace

void CopyChecks(CheckContext& ctx, PluginEnv& env) {
  const tsr_plugin_api& api = env.api();

  // The host model of a buffer, and a device buffer kept equal to it.
  constexpr uint64_t kSize = 1000;
  auto fresh = [&](uint64_t seed,
                   std::vector<uint8_t>* model) -> StatusOr<Buffer> {
    model->resize(kSize);
    Rng(seed).Bytes(model->data(), kSize);
    TSR_ASSIGN_OR_RETURN(Buffer b, env.Alloc(0, kSize));
    TSR_RETURN_IF_ERROR(env.Upload(b.get(), 0, model->data(), kSize));
    return b;
  };
  auto read = [&](const Buffer& b) -> StatusOr<std::vector<uint8_t>> {
    std::vector<uint8_t> out(b.size());
    TSR_RETURN_IF_ERROR(env.Download(b.get(), 0, out.data(), out.size()));
    return out;
  };

  for (bool async : {false, true}) {
    const std::string mode = async ? "async" : "sync";
    ctx.Run(fmt::format("copies.{}.h2d_d2h", mode), [&, async]() -> Outcome {
      std::vector<uint8_t> model;
      KIT_ASSIGN_OR_FAIL(Buffer b, fresh(1, &model));
      Stream stream;
      if (async) {
        KIT_ASSIGN_OR_FAIL(stream, env.NewStream(0));
      }
      std::vector<uint8_t> src(777), dst(333, 0);
      Rng(2).Bytes(src.data(), src.size());
      KIT_CHECK_CALL(
          env,
          api.copy_host_to_device(stream.get(), b.get(), 13, src.data(), 777),
          "copy_host_to_device at offset 13");
      std::memcpy(model.data() + 13, src.data(), 777);
      KIT_CHECK_CALL(
          env,
          api.copy_device_to_host(stream.get(), dst.data(), b.get(), 400, 333),
          "copy_device_to_host at offset 400");
      if (async)
        KIT_CHECK_CALL(env, api.stream_synchronize(stream.get()),
                       "stream_synchronize");
      std::string d = Diff(
          dst, std::vector<uint8_t>(model.begin() + 400, model.begin() + 733),
          "the bytes read back");
      if (!d.empty()) return Fail(d);
      KIT_ASSIGN_OR_FAIL(auto all, read(b));
      d = Diff(all, model,
               "the buffer after the copy (bytes around it must not change)");
      return d.empty() ? Pass() : Fail(d);
    });

    ctx.Run(fmt::format("copies.{}.d2d", mode), [&, async]() -> Outcome {
      std::vector<uint8_t> ma, mb;
      KIT_ASSIGN_OR_FAIL(Buffer a, fresh(3, &ma));
      KIT_ASSIGN_OR_FAIL(Buffer b, fresh(4, &mb));
      Stream stream;
      if (async) {
        KIT_ASSIGN_OR_FAIL(stream, env.NewStream(0));
      }
      KIT_CHECK_CALL(
          env,
          api.copy_device_to_device(stream.get(), b.get(), 17, a.get(), 5, 300),
          "copy_device_to_device");
      std::memcpy(mb.data() + 17, ma.data() + 5, 300);
      // Within one buffer, non-overlapping ranges.
      KIT_CHECK_CALL(env,
                     api.copy_device_to_device(stream.get(), a.get(), 600,
                                               a.get(), 10, 99),
                     "copy_device_to_device within one buffer");
      std::memcpy(ma.data() + 600, ma.data() + 10, 99);
      if (async)
        KIT_CHECK_CALL(env, api.stream_synchronize(stream.get()),
                       "stream_synchronize");
      KIT_ASSIGN_OR_FAIL(auto ga, read(a));
      KIT_ASSIGN_OR_FAIL(auto gb, read(b));
      std::string d = Diff(gb, mb, "the destination buffer");
      if (d.empty()) d = Diff(ga, ma, "the source buffer");
      return d.empty() ? Pass() : Fail(d);
    });

    ctx.Run(fmt::format("copies.{}.memset", mode), [&, async]() -> Outcome {
      std::vector<uint8_t> model;
      KIT_ASSIGN_OR_FAIL(Buffer b, fresh(5, &model));
      Stream stream;
      if (async) {
        KIT_ASSIGN_OR_FAIL(stream, env.NewStream(0));
      }
      KIT_CHECK_CALL(env, api.memset(stream.get(), b.get(), 7, 0xab, 100),
                     "memset");
      std::memset(model.data() + 7, 0xab, 100);
      KIT_CHECK_CALL(env, api.memset(stream.get(), b.get(), 999, 0x00, 1),
                     "memset of the last byte");
      model[999] = 0;
      if (async)
        KIT_CHECK_CALL(env, api.stream_synchronize(stream.get()),
                       "stream_synchronize");
      KIT_ASSIGN_OR_FAIL(auto got, read(b));
      std::string d = Diff(got, model, "the buffer after memset");
      return d.empty() ? Pass() : Fail(d);
    });
  }

  ctx.Run("copies.async.d2h_sees_memset", [&]() -> Outcome {
    // An async D2H after an async memset on the same stream sees the memset;
    // large sizes leave room for a race to show.
    const uint64_t size = 16 << 20;
    KIT_ASSIGN_OR_FAIL(Buffer b, env.Alloc(0, size));
    KIT_ASSIGN_OR_FAIL(Stream stream, env.NewStream(0));
    std::vector<uint8_t> host(size);
    for (uint8_t value : {0x11, 0x22, 0x33}) {
      KIT_CHECK_CALL(env, api.memset(stream.get(), b.get(), 0, value, size),
                     "memset");
      KIT_CHECK_CALL(
          env,
          api.copy_device_to_host(stream.get(), host.data(), b.get(), 0, size),
          "copy_device_to_host");
      KIT_CHECK_CALL(env, api.stream_synchronize(stream.get()),
                     "stream_synchronize");
      for (uint64_t i = 0; i < size; i += 4093) {
        if (host[i] != value) {
          return Fail(fmt::format(
              "byte {} read {:#04x} after a memset to {:#04x} on the "
              "same stream",
              i, host[i], value));
        }
      }
      if (host[size - 1] != value)
        return Fail("the last byte missed the memset");
    }
    return Pass();
  });

  ctx.Run("copies.async.chain", [&]() -> Outcome {
    // H2D -> D2D -> D2D -> D2H on one stream, 8 MiB each: each step must see
    // the previous one.
    const uint64_t size = 8 << 20;
    std::vector<uint8_t> src(size), dst(size, 0);
    Rng(9).Bytes(src.data(), size);
    KIT_ASSIGN_OR_FAIL(Buffer a, env.Alloc(0, size));
    KIT_ASSIGN_OR_FAIL(Buffer b, env.Alloc(0, size));
    KIT_ASSIGN_OR_FAIL(Buffer c, env.Alloc(0, size));
    KIT_ASSIGN_OR_FAIL(Stream stream, env.NewStream(0));
    KIT_CHECK_CALL(
        env,
        api.copy_host_to_device(stream.get(), a.get(), 0, src.data(), size),
        "h2d");
    KIT_CHECK_CALL(
        env,
        api.copy_device_to_device(stream.get(), b.get(), 0, a.get(), 0, size),
        "d2d");
    KIT_CHECK_CALL(
        env,
        api.copy_device_to_device(stream.get(), c.get(), 0, b.get(), 0, size),
        "d2d");
    KIT_CHECK_CALL(
        env,
        api.copy_device_to_host(stream.get(), dst.data(), c.get(), 0, size),
        "d2h");
    KIT_CHECK_CALL(env, api.stream_synchronize(stream.get()),
                   "stream_synchronize");
    std::string d = Diff(dst, src, "the data after H2D, D2D, D2D, D2H");
    return d.empty() ? Pass() : Fail(d);
  });

  ctx.Run("copies.cross_device", [&]() -> Outcome {
    if (env.device_count() < 2) {
      return Skip("one device (the cpu plugin takes --options devices=2)");
    }
    const int other = env.device_count() - 1;
    std::vector<uint8_t> src(5000), back(5000);
    Rng(12).Bytes(src.data(), src.size());
    KIT_ASSIGN_OR_FAIL(Buffer a, env.Alloc(0, 5000));
    KIT_ASSIGN_OR_FAIL(Buffer b, env.Alloc(other, 5000));
    KIT_RETURN_IF_ERROR(env.Upload(a.get(), 0, src.data(), src.size()));
    KIT_CHECK_CALL(
        env, api.copy_device_to_device(nullptr, b.get(), 0, a.get(), 0, 5000),
        fmt::format("copy_device_to_device from device 0 to {}", other));
    KIT_RETURN_IF_ERROR(env.Download(b.get(), 0, back.data(), back.size()));
    std::string d = Diff(back, src, "the copy to the other device");
    if (!d.empty()) return Fail(d);
    KIT_ASSIGN_OR_FAIL(Stream stream, env.NewStream(0));
    KIT_CHECK_CALL(env, api.memset(nullptr, a.get(), 0, 0, 5000), "memset");
    KIT_CHECK_CALL(
        env,
        api.copy_device_to_device(stream.get(), a.get(), 0, b.get(), 0, 5000),
        "async copy_device_to_device back to device 0");
    KIT_CHECK_CALL(env, api.stream_synchronize(stream.get()),
                   "stream_synchronize");
    KIT_RETURN_IF_ERROR(env.Download(a.get(), 0, back.data(), back.size()));
    d = Diff(back, src, "the async copy back");
    return d.empty() ? Pass() : Fail(d);
  });
}

}  // namespace tessera::conformance
