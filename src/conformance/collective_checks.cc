// collectives (only when the plugin has a comm table): all_reduce (sum, max,
// min), all_gather, broadcast and send/recv over every device the plugin
// exposes, one host thread per rank. A single device checks the trivial
// communicator; the cpu plugin exposes more with --options devices=N. With
// two devices, decoder_layer v2 split over the two ranks
// (decoder_layer_tp_check.cc).
#include <fmt/format.h>

#include <cstring>
#include <functional>
#include <thread>

#include "conformance/checks.h"

namespace tessera::conformance {
namespace {

tsr_tensor Vector(tsr_buffer buffer, int64_t count) {
  tsr_tensor t{};
  t.struct_size = sizeof(t);
  t.dtype = TSR_DTYPE_F32;
  t.buffer = buffer;
  t.ndim = 1;
  t.shape[0] = count;
  t.strides[0] = 1;
  return t;
}

struct Ranks {
  std::vector<tsr_comm> comms;
  std::vector<Stream> streams;
};

// Runs fn(rank) on one thread per rank, then synchronises every stream.
Status PerRank(const PluginEnv& env, Ranks& ranks,
               const std::function<tsr_status(int)>& fn,
               const std::string& what) {
  const int n = static_cast<int>(ranks.comms.size());
  std::vector<tsr_status> status(n, TSR_OK);
  std::vector<std::string> messages(n);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      status[r] = fn(r);
      if (status[r] != TSR_OK) messages[r] = env.LastError();
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < n; ++r) {
    if (status[r] != TSR_OK) {
      return InternalError(fmt::format("{} on rank {} returned {}: {}", what, r,
                                       TsrStatusName(status[r]), messages[r]));
    }
  }
  for (int r = 0; r < n; ++r) {
    TSR_RETURN_IF_ERROR(env.Check(
        env.api().stream_synchronize(ranks.streams[r].get()),
        fmt::format("stream_synchronize after {} (rank {})", what, r)));
  }
  return OkStatus();
}

StatusOr<std::vector<float>> ReadFloats(const PluginEnv& env, const Buffer& b,
                                        size_t n) {
  std::vector<float> out(n);
  TSR_RETURN_IF_ERROR(env.Download(b.get(), 0, out.data(), n * sizeof(float)));
  return out;
}

}  // namespace

void CollectiveChecks(CheckContext& ctx, PluginEnv& env) {
  const tsr_plugin_api& api = env.api();
  if (api.comm == nullptr) {
    ctx.Report("collectives.absent", Skip("the plugin has no comm table"));
    return;
  }
  const tsr_comm_api& comm = *api.comm;
  const int n = env.device_count();
  Ranks ranks;
  std::string init_error;

  ctx.Run("collectives.init", [&]() -> Outcome {
    std::vector<int32_t> devices(n);
    for (int i = 0; i < n; ++i) devices[i] = i;
    ranks.comms.assign(n, nullptr);
    KIT_CHECK_CALL(env,
                   comm.comm_init_all(devices.data(), n, ranks.comms.data()),
                   fmt::format("comm_init_all over {} device(s)", n));
    for (int r = 0; r < n; ++r) {
      if (ranks.comms[r] == nullptr)
        return Fail(fmt::format("rank {} got a NULL comm", r));
      KIT_ASSIGN_OR_FAIL(Stream s, env.NewStream(r));
      ranks.streams.push_back(std::move(s));
    }
    return Pass(fmt::format("{} rank(s)", n));
  });
  auto ready = [&]() {
    return static_cast<int>(ranks.streams.size()) == n && n > 0;
  };

  const int64_t count = 1000;
  for (auto [op, op_name] :
       {std::pair{TSR_REDUCE_SUM, "sum"}, std::pair{TSR_REDUCE_MAX, "max"},
        std::pair{TSR_REDUCE_MIN, "min"}}) {
    ctx.Run(
        fmt::format("collectives.all_reduce.{}", op_name),
        [&, op = op]() -> Outcome {
          if (!ready()) return Fail("collectives.init failed");
          std::vector<Buffer> send, recv;
          for (int r = 0; r < n; ++r) {
            std::vector<float> v(count);
            for (int64_t i = 0; i < count; ++i)
              v[i] = static_cast<float>((i * 7 + r * 13) % 101 - 50);
            KIT_ASSIGN_OR_FAIL(Buffer s, env.Alloc(r, count * 4));
            KIT_ASSIGN_OR_FAIL(Buffer d, env.Alloc(r, count * 4));
            KIT_RETURN_IF_ERROR(env.Upload(s.get(), 0, v.data(), count * 4));
            send.push_back(std::move(s));
            recv.push_back(std::move(d));
          }
          KIT_RETURN_IF_ERROR(PerRank(
              env, ranks,
              [&](int r) {
                tsr_tensor s = Vector(send[r].get(), count),
                           d = Vector(recv[r].get(), count);
                return comm.all_reduce(ranks.comms[r], ranks.streams[r].get(),
                                       &s, &d, op);
              },
              "all_reduce"));
          for (int r = 0; r < n; ++r) {
            KIT_ASSIGN_OR_FAIL(auto got, ReadFloats(env, recv[r], count));
            for (int64_t i = 0; i < count; ++i) {
              float want = op == TSR_REDUCE_SUM   ? 0.0f
                           : op == TSR_REDUCE_MAX ? -1e30f
                                                  : 1e30f;
              for (int q = 0; q < n; ++q) {
                float v = static_cast<float>((i * 7 + q * 13) % 101 - 50);
                want = op == TSR_REDUCE_SUM   ? want + v
                       : op == TSR_REDUCE_MAX ? std::max(want, v)
                                              : std::min(want, v);
              }
              if (got[i] != want) {
                return Fail(fmt::format("rank {} element {} is {}, want {}", r,
                                        i, got[i], want));
              }
            }
          }
          return Pass();
        });
  }

  ctx.Run("collectives.all_gather", [&]() -> Outcome {
    if (!ready()) return Fail("collectives.init failed");
    const int64_t part = 333;
    std::vector<Buffer> send, recv;
    for (int r = 0; r < n; ++r) {
      std::vector<float> v(part);
      for (int64_t i = 0; i < part; ++i)
        v[i] = static_cast<float>(r * 1000 + i);
      KIT_ASSIGN_OR_FAIL(Buffer s, env.Alloc(r, part * 4));
      KIT_ASSIGN_OR_FAIL(Buffer d, env.Alloc(r, part * n * 4));
      KIT_RETURN_IF_ERROR(env.Upload(s.get(), 0, v.data(), part * 4));
      send.push_back(std::move(s));
      recv.push_back(std::move(d));
    }
    KIT_RETURN_IF_ERROR(PerRank(
        env, ranks,
        [&](int r) {
          tsr_tensor s = Vector(send[r].get(), part),
                     d = Vector(recv[r].get(), part * n);
          return comm.all_gather(ranks.comms[r], ranks.streams[r].get(), &s,
                                 &d);
        },
        "all_gather"));
    for (int r = 0; r < n; ++r) {
      KIT_ASSIGN_OR_FAIL(auto got, ReadFloats(env, recv[r], part * n));
      for (int64_t i = 0; i < part * n; ++i) {
        float want = static_cast<float>((i / part) * 1000 + i % part);
        if (got[i] != want) {
          return Fail(
              fmt::format("rank {} element {} is {}, want {} (rank-major)", r,
                          i, got[i], want));
        }
      }
    }
    return Pass();
  });

  ctx.Run("collectives.broadcast", [&]() -> Outcome {
    if (!ready()) return Fail("collectives.init failed");
    const int root = n - 1;
    std::vector<Buffer> bufs;
    for (int r = 0; r < n; ++r) {
      std::vector<float> v(count, static_cast<float>(r + 1));
      KIT_ASSIGN_OR_FAIL(Buffer b, env.Alloc(r, count * 4));
      KIT_RETURN_IF_ERROR(env.Upload(b.get(), 0, v.data(), count * 4));
      bufs.push_back(std::move(b));
    }
    KIT_RETURN_IF_ERROR(PerRank(
        env, ranks,
        [&](int r) {
          tsr_tensor t = Vector(bufs[r].get(), count);
          return comm.broadcast(ranks.comms[r], ranks.streams[r].get(), &t,
                                root);
        },
        "broadcast"));
    for (int r = 0; r < n; ++r) {
      KIT_ASSIGN_OR_FAIL(auto got, ReadFloats(env, bufs[r], count));
      for (int64_t i = 0; i < count; ++i) {
        if (got[i] != static_cast<float>(root + 1)) {
          return Fail(fmt::format("rank {} element {} is {}, want root {}'s {}",
                                  r, i, got[i], root, root + 1));
        }
      }
    }
    return Pass(fmt::format("root {}", root));
  });

  ctx.Run("collectives.send_recv", [&]() -> Outcome {
    if (!ready()) return Fail("collectives.init failed");
    if (n < 2)
      return Skip(
          "needs two devices (the cpu plugin takes --options devices=2)");
    // Pairs (0, 1), (2, 3), ...: the even rank sends then receives, the odd
    // rank receives then sends, so blocking implementations cannot deadlock.
    const int pairs = n / 2;
    std::vector<Buffer> out, in;
    for (int r = 0; r < 2 * pairs; ++r) {
      std::vector<float> v(count, static_cast<float>(100 + r));
      KIT_ASSIGN_OR_FAIL(Buffer o, env.Alloc(r, count * 4));
      KIT_ASSIGN_OR_FAIL(Buffer i, env.Alloc(r, count * 4));
      KIT_RETURN_IF_ERROR(env.Upload(o.get(), 0, v.data(), count * 4));
      out.push_back(std::move(o));
      in.push_back(std::move(i));
    }
    KIT_RETURN_IF_ERROR(PerRank(
        env, ranks,
        [&](int r) -> tsr_status {
          if (r >= 2 * pairs) return TSR_OK;
          const int peer = r ^ 1;
          tsr_tensor o = Vector(out[r].get(), count),
                     i = Vector(in[r].get(), count);
          tsr_comm c = ranks.comms[r];
          tsr_stream s = ranks.streams[r].get();
          if (r % 2 == 0) {
            tsr_status st = comm.send(c, s, &o, peer);
            return st != TSR_OK ? st : comm.recv(c, s, &i, peer);
          }
          tsr_status st = comm.recv(c, s, &i, peer);
          return st != TSR_OK ? st : comm.send(c, s, &o, peer);
        },
        "send/recv"));
    for (int r = 0; r < 2 * pairs; ++r) {
      KIT_ASSIGN_OR_FAIL(auto got, ReadFloats(env, in[r], count));
      if (got[0] != static_cast<float>(100 + (r ^ 1)) ||
          got[count - 1] != static_cast<float>(100 + (r ^ 1))) {
        return Fail(fmt::format("rank {} received {}, want {} from rank {}", r,
                                got[0], 100 + (r ^ 1), r ^ 1));
      }
    }
    return Pass();
  });

  ctx.Run("collectives.decoder_layer_tp", [&]() -> Outcome {
    if (!ready()) return Fail("collectives.init failed");
    std::vector<tsr_stream> streams;
    for (const Stream& s : ranks.streams) streams.push_back(s.get());
    return DecoderLayerTpCheck(env, ranks.comms, streams);
  });

  ctx.Run("collectives.destroy", [&]() -> Outcome {
    if (ranks.comms.empty()) return Fail("collectives.init failed");
    ranks.streams.clear();
    for (int r = 0; r < n; ++r) {
      if (ranks.comms[r] == nullptr) continue;
      KIT_CHECK_CALL(env, comm.comm_destroy(ranks.comms[r]),
                     fmt::format("comm_destroy rank {}", r));
    }
    ranks.comms.clear();
    return Pass();
  });
}

}  // namespace tessera::conformance
