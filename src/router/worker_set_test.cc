// Worker URLs and the routing policies over workers whose health and load
// the test sets (no health thread started).
#include "router/worker_set.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

namespace tessera::router {
namespace {

std::unique_ptr<WorkerSet> Make(int n, Policy policy) {
  std::vector<std::unique_ptr<Worker>> workers;
  for (int i = 0; i < n; ++i) {
    auto w = Worker::Create("http://127.0.0.1:" + std::to_string(40000 + i),
                            WorkerRole::kRegular, 0);
    EXPECT_TRUE(w.ok());
    workers.push_back(std::move(*w));
  }
  PolicyOptions p;
  p.policy = policy;
  return std::make_unique<WorkerSet>(std::move(workers), p, p);
}

TEST(WorkerTest, UrlsMustBeHttpHostPort) {
  EXPECT_TRUE(Worker::Create("http://10.0.0.1:8000/", WorkerRole::kRegular, 0).ok());
  EXPECT_FALSE(Worker::Create("10.0.0.1:8000", WorkerRole::kRegular, 0).ok());
  EXPECT_FALSE(Worker::Create("http://host", WorkerRole::kRegular, 0).ok());
  EXPECT_FALSE(Worker::Create("http://host:0", WorkerRole::kRegular, 0).ok());
  EXPECT_FALSE(Worker::Create("http://host:1/v1", WorkerRole::kRegular, 0).ok());
  EXPECT_FALSE(Worker::Create("http://host:1", WorkerRole::kPrefill, 0).ok());
  auto w = Worker::Create("http://h:9/", WorkerRole::kPrefill, 8998);
  ASSERT_TRUE(w.ok());
  EXPECT_EQ((*w)->url(), "http://h:9");
  EXPECT_EQ((*w)->host(), "h");
  EXPECT_EQ((*w)->bootstrap_port(), 8998);
}

TEST(WorkerSetTest, RoundRobinCyclesAndSkipsDeadWorkers) {
  auto set = Make(3, Policy::kRoundRobin);
  std::vector<std::string> seen;
  for (int i = 0; i < 6; ++i) seen.push_back(set->Pick(WorkerRole::kRegular, "")->url());
  EXPECT_EQ(seen[0], seen[3]);
  EXPECT_NE(seen[0], seen[1]);
  EXPECT_NE(seen[1], seen[2]);
  set->workers()[1]->MarkDead("test");
  for (int i = 0; i < 6; ++i) {
    EXPECT_NE(set->Pick(WorkerRole::kRegular, ""), set->workers()[1].get());
  }
  set->workers()[0]->MarkDead("test");
  set->workers()[2]->MarkDead("test");
  EXPECT_EQ(set->Pick(WorkerRole::kRegular, ""), nullptr);
  // A good health check brings a worker back; failures count up to the
  // threshold before it goes.
  set->workers()[2]->RecordCheck(true, 3, "");
  EXPECT_EQ(set->Pick(WorkerRole::kRegular, ""), set->workers()[2].get());
  set->workers()[2]->RecordCheck(false, 2, "x");
  EXPECT_TRUE(set->workers()[2]->healthy());
  set->workers()[2]->RecordCheck(false, 2, "x");
  EXPECT_FALSE(set->workers()[2]->healthy());
}

TEST(WorkerSetTest, PowerOfTwoPrefersTheLessLoaded) {
  auto set = Make(2, Policy::kPowerOfTwo);
  Worker::Load busy1(set->workers()[0].get());
  Worker::Load busy2(set->workers()[0].get());
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(set->Pick(WorkerRole::kRegular, ""), set->workers()[1].get());
  }
}

TEST(WorkerSetTest, RandomAndAvoidUseEveryOtherWorker) {
  auto set = Make(3, Policy::kRandom);
  std::set<const Worker*> seen;
  for (int i = 0; i < 200; ++i) {
    seen.insert(set->Pick(WorkerRole::kRegular, "", set->workers()[0].get()));
  }
  EXPECT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen.count(set->workers()[0].get()), 0u);
}

TEST(WorkerSetTest, CacheAwareFollowsSharedPrefixesAndSpreadsNewOnes) {
  auto set = Make(2, Policy::kCacheAware);
  const std::string system_a(256, 'a'), system_b(256, 'b');
  Worker* first = set->Pick(WorkerRole::kRegular, system_a + " q1");
  // A new prefix goes to the emptier worker.
  Worker* second = set->Pick(WorkerRole::kRegular, system_b + " q1");
  EXPECT_NE(first, second);
  // Requests sharing a prefix follow it.
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(set->Pick(WorkerRole::kRegular, system_a + " q" + std::to_string(i)), first);
    EXPECT_EQ(set->Pick(WorkerRole::kRegular, system_b + " q" + std::to_string(i)), second);
  }
  // Unbalanced load overrides the cache.
  std::vector<std::unique_ptr<Worker::Load>> loads;
  for (int i = 0; i < 40; ++i) loads.push_back(std::make_unique<Worker::Load>(first));
  EXPECT_EQ(set->Pick(WorkerRole::kRegular, system_a + " q9"), second);
}

TEST(PolicyTest, ParsesSglRouterNames) {
  for (const char* n : {"round_robin", "random", "cache_aware", "power_of_two"}) {
    auto p = ParsePolicy(n);
    ASSERT_TRUE(p.ok()) << n;
    EXPECT_STREQ(PolicyName(*p), n);
  }
  EXPECT_FALSE(ParsePolicy("least_loaded").ok());
}

}  // namespace
}  // namespace tessera::router
