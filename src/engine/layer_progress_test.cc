// LayerProgress: a waiter answers per layer; Finish answers everything after
// it, waits for running waiters and drops the waiter; no waiter and no
// Finish runs into the deadline.
#include "engine/layer_progress.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

namespace tessera::engine {
namespace {

using Clock = std::chrono::steady_clock;

Clock::time_point In(double seconds) {
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(
                            std::chrono::duration<double>(seconds));
}

TEST(LayerProgressTest, TheWaiterAnswersEachLayerInOrder) {
  LayerProgress p(3);
  std::vector<int64_t> asked;
  std::thread consumer([&] {
    for (int64_t l = 0; l < 3; ++l) EXPECT_TRUE(p.WaitForLayer(l, In(10)).ok());
  });
  p.Attach([&asked](int64_t l) {
    asked.push_back(l);
    return OkStatus();
  });
  consumer.join();
  EXPECT_EQ(asked, (std::vector<int64_t>{0, 1, 2}));
  EXPECT_TRUE(p.attached());
  EXPECT_FALSE(p.WaitForLayer(3, In(1)).ok());  // outside [0, 3)
}

TEST(LayerProgressTest, TheWaitersErrorIsTheLayers) {
  LayerProgress p(2);
  p.Attach([](int64_t l) {
    return l == 1 ? InternalError("the step failed on the device")
                  : OkStatus();
  });
  EXPECT_TRUE(p.WaitForLayer(0, In(1)).ok());
  Status s = p.WaitForLayer(1, In(1));
  EXPECT_EQ(s.code(), StatusCode::kInternal);
}

TEST(LayerProgressTest, FinishWithoutAWaiterAnswersEveryLayer) {
  LayerProgress ok(4);
  std::thread finisher([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    ok.Finish(OkStatus());
  });
  EXPECT_TRUE(ok.WaitForLayer(0, In(10)).ok());  // woken by Finish
  finisher.join();
  EXPECT_TRUE(ok.WaitForLayer(3, In(0)).ok());
  EXPECT_FALSE(ok.attached());

  LayerProgress failed(4);
  failed.Finish(AbortedError("the request ended"));
  failed.Finish(OkStatus());  // the first call wins
  failed.Attach([](int64_t) { return OkStatus(); });  // ignored after Finish
  EXPECT_EQ(failed.WaitForLayer(2, In(1)).code(), StatusCode::kAborted);
  EXPECT_FALSE(failed.attached());
}

TEST(LayerProgressTest, NeitherWaiterNorFinishRunsIntoTheDeadline) {
  LayerProgress p(2);
  const auto start = Clock::now();
  Status s = p.WaitForLayer(0, In(0.05));
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_GE(Clock::now() - start, std::chrono::milliseconds(45));
}

TEST(LayerProgressTest, FinishWaitsForARunningWaiterThenDropsIt) {
  LayerProgress p(1);
  auto held = std::make_shared<int>(7);  // stands for the device events
  std::weak_ptr<int> watch = held;
  std::atomic<bool> in_waiter{false};
  std::atomic<bool> release{false};
  p.Attach([held, &in_waiter, &release](int64_t) {
    in_waiter = true;
    while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return OkStatus();
  });
  held.reset();
  std::thread consumer([&] { EXPECT_TRUE(p.WaitForLayer(0, In(10)).ok()); });
  while (!in_waiter) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::atomic<bool> finished{false};
  std::thread finisher([&] {
    p.Finish(OkStatus());
    finished = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  EXPECT_FALSE(finished);  // the waiter still runs
  EXPECT_FALSE(watch.expired());
  release = true;
  finisher.join();
  consumer.join();
  EXPECT_TRUE(watch.expired());  // dropped by Finish, on its thread
}

}  // namespace
}  // namespace tessera::engine
