// The cross-process communicator (comm_get_unique_id / comm_init_rank, ABI
// 1.3) with its ranks as threads of this process: every op and dtype,
// in-place use, sizes that need many staging steps, send/recv larger than a
// channel ring, mismatched calls, a rank that never joins or never calls
// (a timeout, not a hang) and a destroyed peer. Real processes are
// plugin-check's `collectives_mp` group (it forks the ranks).
#include <chrono>
#include <cstring>
#include <thread>

#include "cpu_plugin_test_util.h"

namespace tessera::cpu::testing {
namespace {

class ShmCommTest : public CpuPluginTest {
 protected:
  void StartRanks(int n, int timeout_ms = 60000) {
    n_ = n;
    ASSERT_EQ(InitWith({{"devices", std::to_string(n)},
                        {"threads", "1"},
                        {"comm_timeout_ms", std::to_string(timeout_ms)}}),
              TSR_OK)
        << api_->last_error();
    ASSERT_EQ(api_->comm->comm_get_unique_id(&id_), TSR_OK) << api_->last_error();
    comms_.assign(n, nullptr);
    streams_.assign(n, nullptr);
    std::vector<tsr_status> status(n);
    std::vector<std::string> errors(n);
    std::vector<std::thread> threads;
    for (int r = 0; r < n; ++r) {
      ASSERT_EQ(api_->stream_create(r, &streams_[r]), TSR_OK);
      threads.emplace_back([&, r] {
        status[r] = JoinRank(r, n, &comms_[r]);
        if (status[r] != TSR_OK) errors[r] = api_->last_error();
      });
    }
    for (auto& t : threads) t.join();
    for (int r = 0; r < n; ++r) ASSERT_EQ(status[r], TSR_OK) << "rank " << r << ": " << errors[r];
  }
  tsr_status JoinRank(int rank, int n, tsr_comm* out) {
    tsr_comm_init_rank_args args{};
    args.struct_size = sizeof(args);
    args.id = &id_;
    args.num_ranks = n;
    args.rank = rank;
    args.device = rank;
    args.node = 0;
    args.num_nodes = 1;
    return api_->comm->comm_init_rank(&args, out);
  }
  void TearDown() override {
    for (int r = 0; r < n_; ++r) {
      if (streams_[r] != nullptr) api_->stream_destroy(streams_[r]);
      if (comms_[r] != nullptr) api_->comm->comm_destroy(comms_[r]);
    }
    CpuPluginTest::TearDown();
  }
  // Synchronizes every rank's stream, each on its own thread (a rank's
  // stream may wait for the others).
  std::vector<tsr_status> SyncAll() {
    std::vector<tsr_status> out(n_);
    std::vector<std::thread> threads;
    for (int r = 0; r < n_; ++r) {
      threads.emplace_back([&, r] { out[r] = api_->stream_synchronize(streams_[r]); });
    }
    for (auto& t : threads) t.join();
    return out;
  }
  int n_ = 0;
  tsr_comm_unique_id id_{};
  std::vector<tsr_comm> comms_;
  std::vector<tsr_stream> streams_;
};

// Values rank r holds at element i (small integers: exact in bf16/f16).
double Value(int r, int64_t i) { return static_cast<double>((i * 7 + r * 13) % 23 - 11); }

TEST_F(ShmCommTest, AllReduceEveryOpAndDtypeInPlaceAndOut) {
  StartRanks(3);
  const int64_t count = 1001;  // not divisible by the ranks
  for (tsr_reduce_op op : {TSR_REDUCE_SUM, TSR_REDUCE_MAX, TSR_REDUCE_MIN}) {
    for (tsr_dtype dt : {TSR_DTYPE_F32, TSR_DTYPE_BF16, TSR_DTYPE_F16, TSR_DTYPE_I32}) {
      std::vector<DeviceTensor> send, recv;
      for (int r = 0; r < n_; ++r) {
        std::vector<double> v(count);
        for (int64_t i = 0; i < count; ++i) v[i] = Value(r, i);
        send.push_back(Make(dt, {count}, v, {}, 0, r));
        recv.push_back(r == 1 ? send.back() : Zeros(dt, {count}));  // rank 1 in place
      }
      for (int r = 0; r < n_; ++r) {
        ASSERT_EQ(api_->comm->all_reduce(comms_[r], streams_[r], &send[r].desc, &recv[r].desc, op),
                  TSR_OK)
            << api_->last_error();
      }
      for (tsr_status s : SyncAll()) ASSERT_EQ(s, TSR_OK) << api_->last_error();
      std::vector<double> want(count);
      for (int64_t i = 0; i < count; ++i) {
        double w = Value(0, i);
        for (int q = 1; q < n_; ++q) {
          const double v = Value(q, i);
          w = op == TSR_REDUCE_SUM ? w + v : op == TSR_REDUCE_MAX ? std::max(w, v) : std::min(w, v);
        }
        want[i] = w;
      }
      for (int r = 0; r < n_; ++r) ExpectNear(Read(recv[r]), want, 0);
    }
  }
}

TEST_F(ShmCommTest, LargeAllReduceTakesManyStepsAndMatchesOnEveryRank) {
  StartRanks(2);
  const int64_t count = (int64_t{9} << 20) / 4 + 17;  // > two 4 MiB staging slots of f32
  std::vector<DeviceTensor> buf;
  for (int r = 0; r < n_; ++r) {
    std::vector<double> v(count);
    for (int64_t i = 0; i < count; ++i) v[i] = Value(r, i);
    buf.push_back(Make(TSR_DTYPE_F32, {count}, v, {}, 0, r));
  }
  for (int r = 0; r < n_; ++r) {
    ASSERT_EQ(api_->comm->all_reduce(comms_[r], streams_[r], &buf[r].desc, &buf[r].desc,
                                     TSR_REDUCE_SUM),
              TSR_OK);
  }
  for (tsr_status s : SyncAll()) ASSERT_EQ(s, TSR_OK) << api_->last_error();
  std::vector<double> got0 = Read(buf[0]), got1 = Read(buf[1]);
  for (int64_t i : {int64_t{0}, count / 3, count / 2 + 5, count - 1}) {
    EXPECT_EQ(got0[i], Value(0, i) + Value(1, i)) << i;
  }
  EXPECT_EQ(got0, got1);
}

TEST_F(ShmCommTest, AllGatherBroadcastReduceScatterAndSendRecv) {
  StartRanks(3);
  const int64_t part = 70001;  // reduce_scatter / all_gather slices: several steps at 3 ranks
  // all_gather: rank r contributes [r*1000 + i].
  std::vector<DeviceTensor> gsend, grecv;
  for (int r = 0; r < n_; ++r) {
    std::vector<double> v(part);
    for (int64_t i = 0; i < part; ++i) v[i] = (r * 1000 + i) % 2048;
    gsend.push_back(Make(TSR_DTYPE_F32, {part}, v, {}, 0, r));
    grecv.push_back(Zeros(TSR_DTYPE_F32, {n_ * part}));
  }
  // reduce_scatter: send holds n slices; rank 2 receives in place.
  std::vector<DeviceTensor> rsend, rrecv;
  for (int r = 0; r < n_; ++r) {
    std::vector<double> v(n_ * part);
    for (int64_t i = 0; i < n_ * part; ++i) v[i] = Value(r, i);
    rsend.push_back(Make(TSR_DTYPE_F32, {n_ * part}, v, {}, 0, r));
    if (r == 2) {
      DeviceTensor slice = rsend.back();
      slice.desc.offset += 2 * part * 4;
      slice.desc.shape[0] = part;
      rrecv.push_back(slice);
    } else {
      rrecv.push_back(Zeros(TSR_DTYPE_F32, {part}));
    }
  }
  // broadcast from rank 1.
  std::vector<DeviceTensor> bcast;
  for (int r = 0; r < n_; ++r) {
    const double v = r;
    bcast.push_back(Make(TSR_DTYPE_I32, {5}, {v, v, v, v, v}, {}, 0, r));
  }
  // send/recv: a ring r -> r+1, larger than one channel ring.
  const int64_t big = (int64_t{3} << 20) / 4;
  std::vector<DeviceTensor> out, in;
  for (int r = 0; r < n_; ++r) {
    std::vector<double> v(big, 100.0 + r);
    out.push_back(Make(TSR_DTYPE_F32, {big}, v, {}, 0, r));
    in.push_back(Zeros(TSR_DTYPE_F32, {big}));
  }
  for (int r = 0; r < n_; ++r) {
    tsr_comm c = comms_[r];
    tsr_stream s = streams_[r];
    ASSERT_EQ(api_->comm->all_gather(c, s, &gsend[r].desc, &grecv[r].desc), TSR_OK);
    ASSERT_EQ(api_->comm->reduce_scatter(c, s, &rsend[r].desc, &rrecv[r].desc, TSR_REDUCE_SUM),
              TSR_OK)
        << api_->last_error();
    ASSERT_EQ(api_->comm->broadcast(c, s, &bcast[r].desc, 1), TSR_OK);
    // Even ranks send first; the odd receive first (rank 2 sends to 0, which
    // receives from 2 after its own send: no cycle of blocked senders).
    const int next = (r + 1) % n_, prev = (r + n_ - 1) % n_;
    if (r % 2 == 0) {
      ASSERT_EQ(api_->comm->send(c, s, &out[r].desc, next), TSR_OK);
      ASSERT_EQ(api_->comm->recv(c, s, &in[r].desc, prev), TSR_OK);
    } else {
      ASSERT_EQ(api_->comm->recv(c, s, &in[r].desc, prev), TSR_OK);
      ASSERT_EQ(api_->comm->send(c, s, &out[r].desc, next), TSR_OK);
    }
  }
  for (tsr_status s : SyncAll()) ASSERT_EQ(s, TSR_OK) << api_->last_error();
  for (int r = 0; r < n_; ++r) {
    std::vector<double> g = Read(grecv[r]);
    for (int64_t i : {int64_t{0}, part - 1, part, 2 * part + 7, 3 * part - 1}) {
      EXPECT_EQ(g[i], ((i / part) * 1000 + i % part) % 2048) << "rank " << r << " at " << i;
    }
    std::vector<double> rs = Read(rrecv[r]);
    for (int64_t i : {int64_t{0}, part / 2, part - 1}) {
      EXPECT_EQ(rs[i], Value(0, r * part + i) + Value(1, r * part + i) + Value(2, r * part + i))
          << "rank " << r << " at " << i;
    }
    ExpectNear(Read(bcast[r]), {1, 1, 1, 1, 1}, 0);
    std::vector<double> got = Read(in[r]);
    EXPECT_EQ(got.front(), 100.0 + (r + n_ - 1) % n_);
    EXPECT_EQ(got.back(), 100.0 + (r + n_ - 1) % n_);
  }
}

TEST_F(ShmCommTest, MismatchedCallsFailOnEveryRankNamingTheRank) {
  StartRanks(2);
  DeviceTensor a0 = Make(TSR_DTYPE_F32, {4}, {1, 2, 3, 4}, {}, 0, 0);
  DeviceTensor a1 = Make(TSR_DTYPE_F32, {5}, {1, 2, 3, 4, 5}, {}, 0, 1);
  ASSERT_EQ(api_->comm->all_reduce(comms_[0], streams_[0], &a0.desc, &a0.desc, TSR_REDUCE_SUM),
            TSR_OK);
  ASSERT_EQ(api_->comm->all_reduce(comms_[1], streams_[1], &a1.desc, &a1.desc, TSR_REDUCE_SUM),
            TSR_OK);
  // Each stream runs on its own worker: synchronizing them one by one from
  // this thread reads each rank's error here.
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(api_->stream_synchronize(streams_[r]), TSR_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(api_->last_error()).find("rank 1 passed 5"), std::string::npos)
        << api_->last_error();
  }
}

TEST_F(ShmCommTest, APeerThatNeverCallsIsATimeoutNotAHang) {
  StartRanks(2, /*timeout_ms=*/300);
  DeviceTensor a = Make(TSR_DTYPE_F32, {4}, {1, 2, 3, 4}, {}, 0, 0);
  ASSERT_EQ(api_->comm->all_reduce(comms_[0], streams_[0], &a.desc, &a.desc, TSR_REDUCE_SUM),
            TSR_OK);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(api_->stream_synchronize(streams_[0]), TSR_ERR_DEVICE);
  const std::string error = api_->last_error();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  EXPECT_NE(error.find("still missing: rank(s) 1"), std::string::npos) << error;
  // The communicator stays broken: rank 1's late call fails at once too.
  DeviceTensor b = Make(TSR_DTYPE_F32, {4}, {1, 2, 3, 4}, {}, 0, 1);
  ASSERT_EQ(api_->comm->all_reduce(comms_[1], streams_[1], &b.desc, &b.desc, TSR_REDUCE_SUM),
            TSR_OK);
  EXPECT_EQ(api_->stream_synchronize(streams_[1]), TSR_ERR_DEVICE);
  EXPECT_NE(std::string(api_->last_error()).find("broken"), std::string::npos);
}

TEST_F(ShmCommTest, ARankThatNeverJoinsFailsInitWithinTheTimeout) {
  ASSERT_EQ(InitWith({{"devices", "2"}, {"threads", "1"}, {"comm_timeout_ms", "200"}}), TSR_OK);
  ASSERT_EQ(api_->comm->comm_get_unique_id(&id_), TSR_OK);
  tsr_comm comm = nullptr;
  EXPECT_EQ(JoinRank(0, 3, &comm), TSR_ERR_DEVICE);
  const std::string error = api_->last_error();
  EXPECT_NE(error.find("still missing: rank(s) 1, 2"), std::string::npos) << error;
  // A rank whose rank 0 never appears fails the same way.
  tsr_comm_unique_id other{};
  ASSERT_EQ(api_->comm->comm_get_unique_id(&other), TSR_OK);
  EXPECT_NE(std::memcmp(&other, &id_, sizeof(other)), 0);
  id_ = other;
  EXPECT_EQ(JoinRank(1, 2, &comm), TSR_ERR_DEVICE);
  EXPECT_NE(std::string(api_->last_error()).find("for rank 0 to create"), std::string::npos);
}

TEST_F(ShmCommTest, ADestroyedPeerFailsTheWaitingRank) {
  StartRanks(2);
  ASSERT_EQ(api_->comm->comm_destroy(comms_[1]), TSR_OK);
  comms_[1] = nullptr;
  DeviceTensor a = Make(TSR_DTYPE_F32, {4}, {1, 2, 3, 4}, {}, 0, 0);
  ASSERT_EQ(api_->comm->all_reduce(comms_[0], streams_[0], &a.desc, &a.desc, TSR_REDUCE_SUM),
            TSR_OK);
  EXPECT_EQ(api_->stream_synchronize(streams_[0]), TSR_ERR_DEVICE);
  EXPECT_NE(std::string(api_->last_error()).find("rank 1 destroyed its communicator"),
            std::string::npos)
      << api_->last_error();
}

TEST_F(ShmCommTest, BadArgumentsAreRefusedSynchronously) {
  StartRanks(2);
  tsr_comm comm = nullptr;
  tsr_comm_unique_id junk{};
  tsr_comm_init_rank_args args{};
  args.struct_size = sizeof(args);
  args.id = &junk;
  args.num_ranks = 2;
  args.rank = 0;
  EXPECT_EQ(api_->comm->comm_init_rank(&args, &comm), TSR_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(api_->last_error()).find("not made by this plugin"), std::string::npos);
  args.id = &id_;
  args.rank = 2;
  EXPECT_EQ(api_->comm->comm_init_rank(&args, &comm), TSR_ERR_INVALID_ARGUMENT);
  args.rank = 0;
  args.node = 2;  // not one of num_nodes
  args.num_nodes = 2;
  EXPECT_EQ(api_->comm->comm_init_rank(&args, &comm), TSR_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(api_->last_error()).find("node 2 must be 0..1"), std::string::npos)
      << api_->last_error();
  DeviceTensor s = Make(TSR_DTYPE_F32, {5}, {1, 2, 3, 4, 5}, {}, 0, 0);
  DeviceTensor r = Zeros(TSR_DTYPE_F32, {2});
  EXPECT_EQ(api_->comm->reduce_scatter(comms_[0], streams_[0], &s.desc, &r.desc, TSR_REDUCE_SUM),
            TSR_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(api_->last_error()).find("2 x recv's 2"), std::string::npos)
      << api_->last_error();
  EXPECT_EQ(api_->comm->send(comms_[0], streams_[0], &s.desc, 0), TSR_ERR_INVALID_ARGUMENT);
}

}  // namespace
}  // namespace tessera::cpu::testing
