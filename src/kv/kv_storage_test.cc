// The storage tier's pieces: page keys and objects (every corruption is
// refused), the file backend (restart, LRU capacity, crash leftovers), the
// Redis backend against a real redis-server (and one that goes away), the
// storage worker's verified prefetch, and RadixCache::InsertHost.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <thread>
#include <unistd.h>

#include "kv/file_storage.h"
#include "kv/kv_storage.h"
#include "kv/page_object.h"
#include "kv/radix_cache.h"
#include "kv/redis_storage.h"
#include "kv/storage_worker.h"
#include "testing/redis_server.h"

namespace tessera::kv {
namespace {

namespace fs = std::filesystem;
using Bytes = std::vector<uint8_t>;

Bytes Payload(size_t n, uint8_t salt) {
  Bytes b(n);
  for (size_t i = 0; i < n; ++i) b[i] = static_cast<uint8_t>(i * 7 + salt);
  return b;
}

class TempDir {
 public:
  TempDir() {
    path_ = (fs::temp_directory_path() /
             ("tessera_storage_test_" + std::to_string(::getpid()) + "_" +
              std::to_string(counter_++)))
                .string();
    fs::remove_all(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  const std::string& path() const { return path_; }

 private:
  inline static int counter_ = 0;
  std::string path_;
};

TEST(PageKeyTest, ChainCoversTheWholePrefix) {
  const std::vector<int32_t> a = {1, 2, 3, 4, 5, 6};
  const std::vector<int32_t> b = {9, 2, 3, 4, 5, 6};  // differs in page 0
  const auto ka = ChainKeys(7, a, 2, 0, 3);
  const auto kb = ChainKeys(7, b, 2, 0, 3);
  ASSERT_EQ(ka.size(), 3u);
  for (int i = 0; i < 3; ++i) EXPECT_FALSE(ka[i] == kb[i]) << i;
  // A suffix of the chain equals the chain computed from page 0.
  const auto tail = ChainKeys(7, a, 2, 1, 2);
  EXPECT_EQ(tail[0], ka[1]);
  EXPECT_EQ(tail[1], ka[2]);
  // Another identity (model, layout) gives other keys.
  EXPECT_FALSE(ChainKeys(8, a, 2, 0, 1)[0] == ka[0]);
  EXPECT_EQ(ka[0].Hex().size(), 32u);
  EXPECT_NE(ModelIdentity("m", 2, 2, 4, 1, 16), ModelIdentity("m", 2, 2, 4, 1, 8));
}

TEST(PageObjectTest, RoundTripsAndRefusesEveryCorruption) {
  const PageKey key{1, 2};
  const Bytes payload = Payload(100, 3);
  const Bytes object = EncodePageObject(42, key, 16, payload);
  auto ok = DecodePageObject(object, 42, key, payload.size());
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_TRUE(std::equal(ok->begin(), ok->end(), payload.begin()));

  auto refused = [&](const Bytes& o, uint64_t identity, PageKey k,
                     const char* why) {
    auto r = DecodePageObject(o, identity, k, payload.size());
    ASSERT_FALSE(r.ok()) << why;
    EXPECT_EQ(r.status().code(), StatusCode::kDataLoss) << why;
  };
  refused(Bytes(object.begin(), object.begin() + 70), 42, key, "truncated");
  refused(Bytes(object.begin(), object.begin() + 10), 42, key, "header cut");
  refused(object, 43, key, "foreign model");
  refused(object, 42, PageKey{1, 3}, "another key");
  Bytes flipped = object;
  flipped[kPageObjectHeaderBytes + 50] ^= 1;
  refused(flipped, 42, key, "payload bit flip");
  Bytes magic = object;
  magic[0] = 'X';
  refused(magic, 42, key, "magic");
}

TEST(FileStorageTest, PutGetSurvivesReopen) {
  TempDir dir;
  const PageKey k1{1, 1}, k2{2, 2}, k3{3, 3};
  {
    auto s = FileKvStorage::Open(dir.path(), 0);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    ASSERT_TRUE((*s)->Put(k1, Payload(10, 1)).ok());
    ASSERT_TRUE((*s)->Put(k2, Payload(10, 2)).ok());
    EXPECT_EQ((*s)->objects(), 2);
    EXPECT_EQ((*s)->Get(k3).status().code(), StatusCode::kNotFound);
  }
  // A crash mid-write leaves a temporary file: ignored and removed.
  std::ofstream(fs::path(dir.path()) / (k3.Hex() + ".kvp.tmp-1-1")) << "half";
  auto s = FileKvStorage::Open(dir.path(), 0);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ((*s)->objects(), 2);
  auto got = (*s)->Get(k2);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(*got, Payload(10, 2));
  const std::vector<PageKey> keys = {k1, k2, k3, k1};
  EXPECT_EQ(*(*s)->CountPresent(keys), 2u);
  EXPECT_FALSE(fs::exists(fs::path(dir.path()) / (k3.Hex() + ".kvp.tmp-1-1")));
  ASSERT_TRUE((*s)->Clear().ok());
  EXPECT_EQ((*s)->objects(), 0);
  EXPECT_EQ(*(*s)->CountPresent(keys), 0u);
}

TEST(FileStorageTest, CapacityEvictsLeastRecentlyUsed) {
  TempDir dir;
  auto s = FileKvStorage::Open(dir.path(), 250);
  ASSERT_TRUE(s.ok());
  ASSERT_TRUE((*s)->Put(PageKey{0, 1}, Payload(100, 1)).ok());
  ASSERT_TRUE((*s)->Put(PageKey{0, 2}, Payload(100, 2)).ok());
  ASSERT_TRUE((*s)->Get(PageKey{0, 1}).ok());  // 1 is now the newer
  ASSERT_TRUE((*s)->Put(PageKey{0, 3}, Payload(100, 3)).ok());
  EXPECT_EQ((*s)->objects(), 2);
  EXPECT_LE((*s)->bytes(), 250);
  EXPECT_TRUE((*s)->Get(PageKey{0, 1}).ok());
  EXPECT_EQ((*s)->Get(PageKey{0, 2}).status().code(), StatusCode::kNotFound);
}

TEST(FileStorageTest, RefusesAnUnusableDirectory) {
  EXPECT_EQ(FileKvStorage::Open("", 0).status().code(),
            StatusCode::kInvalidArgument);
  TempDir dir;
  std::ofstream(dir.path()) << "a file, not a directory";
  EXPECT_FALSE(FileKvStorage::Open(dir.path(), 0).ok());
  fs::remove(dir.path());
}

TEST(RedisUrlTest, ParsesHostPortDb) {
  auto u = ParseRedisUrl("redis://10.0.0.2:7000/3");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->host, "10.0.0.2");
  EXPECT_EQ(u->port, 7000);
  EXPECT_EQ(u->db, 3);
  EXPECT_EQ(ParseRedisUrl("redis://h").value().port, 6379);
  for (const char* bad : {"http://h:1", "redis://:1", "redis://h:x",
                          "redis://h:1/-1", "redis://h:70000"}) {
    EXPECT_EQ(ParseRedisUrl(bad).status().code(), StatusCode::kInvalidArgument)
        << bad;
  }
}

TEST(RedisStorageTest, PutGetCountClearOnARealServer) {
  testing::RedisServer redis;
  TSR_REQUIRE_REDIS(redis);
  auto s = RedisKvStorage::Open(redis.url() + "/1", 2000);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  const PageKey k1{5, 1}, k2{5, 2};
  ASSERT_TRUE((*s)->Put(k1, Payload(1000, 1)).ok());
  ASSERT_TRUE((*s)->Put(k2, Payload(1000, 2)).ok());
  auto got = (*s)->Get(k2);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(*got, Payload(1000, 2));
  const std::vector<PageKey> keys = {k1, k2, PageKey{9, 9}, k1};
  EXPECT_EQ(*(*s)->CountPresent(keys), 2u);
  EXPECT_EQ((*s)->Get(PageKey{9, 9}).status().code(), StatusCode::kNotFound);
  ASSERT_TRUE((*s)->Clear().ok());
  EXPECT_EQ(*(*s)->CountPresent(keys), 0u);
}

TEST(RedisStorageTest, AServerThatGoesAwayIsUnavailableThenReconnects) {
  testing::RedisServer redis;
  TSR_REQUIRE_REDIS(redis);
  auto s = RedisKvStorage::Open(redis.url(), 500);
  ASSERT_TRUE(s.ok());
  ASSERT_TRUE((*s)->Put(PageKey{1, 1}, Payload(10, 1)).ok());
  const int port = redis.port();
  redis.Stop(/*kill=*/true);
  EXPECT_EQ((*s)->Get(PageKey{1, 1}).status().code(), StatusCode::kUnavailable);
  EXPECT_EQ((*s)->Put(PageKey{1, 2}, Payload(10, 1)).code(),
            StatusCode::kUnavailable);
  ASSERT_TRUE(redis.Start(port));
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  EXPECT_TRUE((*s)->Put(PageKey{1, 3}, Payload(10, 3)).ok());
  EXPECT_EQ(OpenKvStorage({"redis", "", 0, "redis://127.0.0.1:1", 200})
                .status()
                .code(),
            StatusCode::kUnavailable);
}

TEST(StorageWorkerTest, PrefetchReturnsTheVerifiedPrefixOnly) {
  TempDir dir;
  auto backend = FileKvStorage::Open(dir.path(), 0);
  ASSERT_TRUE(backend.ok());
  FileKvStorage* raw = backend->get();
  StorageWorker worker(std::move(*backend), 77, 4, 64);
  const std::vector<int32_t> tokens = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  const auto keys = ChainKeys(77, tokens, 4, 0, 3);
  worker.Write(keys, {Payload(64, 1), Payload(64, 2), Payload(64, 3)});
  worker.WaitIdle();
  EXPECT_EQ(worker.Totals().pages_written, 3);
  // Corrupt page 1 on disk: the prefetch stops before it.
  {
    const std::string path = dir.path() + "/" + keys[1].Hex() + ".kvp";
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(kPageObjectHeaderBytes) + 3);
    f.put('\x55');
  }
  worker.Prefetch(keys);
  worker.WaitIdle();
  auto done = worker.PollPrefetched();
  ASSERT_EQ(done.size(), 1u);
  ASSERT_EQ(done[0].payloads.size(), 1u);
  EXPECT_EQ(done[0].payloads[0], Payload(64, 1));
  EXPECT_EQ(worker.Totals().corrupt_pages, 1);
  // A truncated page 0 gives nothing at all.
  fs::resize_file(dir.path() + "/" + keys[0].Hex() + ".kvp", 80);
  worker.Prefetch(keys);
  worker.WaitIdle();
  done = worker.PollPrefetched();
  ASSERT_EQ(done.size(), 1u);
  EXPECT_TRUE(done[0].payloads.empty());
  ASSERT_TRUE(worker.Clear().ok());
  EXPECT_EQ(raw->objects(), 0);
}

TEST(RadixInsertHostTest, AddsAHostOnlyContinuation) {
  RadixCache c(RadixCacheOptions{2, false});
  ASSERT_TRUE(c.Insert(std::vector<int32_t>{1, 2, 3, 4},
                       std::vector<int32_t>{0, 1, 2, 3})
                  .ok());
  const std::vector<int32_t> t = {1, 2, 3, 4, 5, 6, 7, 8};
  // Pages 1..3 given; page 1 is on the device already.
  EXPECT_EQ(c.InsertHost(t, 1, std::vector<int32_t>{10, 11, 12}), 1);
  EXPECT_EQ(c.host_size(), 4);
  auto m = c.MatchPrefix(t);
  EXPECT_EQ(m.length, 4);
  EXPECT_EQ(m.host_length, 4);
  // The tree no longer reaches the first page given: nothing taken.
  EXPECT_EQ(c.InsertHost(std::vector<int32_t>{9, 9, 9, 9}, 1,
                         std::vector<int32_t>{20}),
            1);
  EXPECT_TRUE(c.CheckIntegrity().ok()) << c.CheckIntegrity().ToString();
}

}  // namespace
}  // namespace tessera::kv
