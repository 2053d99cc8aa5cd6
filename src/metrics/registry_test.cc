#include "metrics/registry.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace tessera::metrics {
namespace {

// The value on the line `series value` in a rendering, or NaN if absent.
double SampleValue(const std::string& text, const std::string& series) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.size() > series.size() && line.starts_with(series) &&
        line[series.size()] == ' ') {
      return std::stod(line.substr(series.size() + 1));
    }
  }
  return std::nan("");
}

TEST(MetricsRegistryTest, RendersGoldenText) {
  Registry registry;
  CounterFamily* requests =
      registry.AddCounter("http_requests_total", "Requests served.", {"code"})
          .value();
  requests->Labels("500").Inc();
  requests->Labels("200").Inc(3);
  GaugeFamily* temperature =
      registry.AddGauge("room_temperature", "Temperature in C.").value();
  temperature->Get().Set(21.5);
  HistogramFamily* latency =
      registry.AddHistogram("latency_seconds", "Latency.", {0.1, 1}).value();
  latency->Get().Observe(0.25);
  latency->Get().Observe(0.5);
  latency->Get().Observe(2);
  latency->Get().Observe(0.05);
  registry.AddGauge("idle", "Never set.").value();
  registry.AddCounter("tokens_total", "Labelled, no child yet.", {"model"})
      .value();

  EXPECT_EQ(registry.RenderPrometheus(),
            "# HELP http_requests_total Requests served.\n"
            "# TYPE http_requests_total counter\n"
            "http_requests_total{code=\"200\"} 3\n"
            "http_requests_total{code=\"500\"} 1\n"
            "# HELP room_temperature Temperature in C.\n"
            "# TYPE room_temperature gauge\n"
            "room_temperature 21.5\n"
            "# HELP latency_seconds Latency.\n"
            "# TYPE latency_seconds histogram\n"
            "latency_seconds_bucket{le=\"0.1\"} 1\n"
            "latency_seconds_bucket{le=\"1\"} 3\n"
            "latency_seconds_bucket{le=\"+Inf\"} 4\n"
            "latency_seconds_sum 2.8\n"
            "latency_seconds_count 4\n"
            "# HELP idle Never set.\n"
            "# TYPE idle gauge\n"
            "idle 0\n"
            "# HELP tokens_total Labelled, no child yet.\n"
            "# TYPE tokens_total counter\n");
}

TEST(MetricsRegistryTest, EscapesLabelValuesAndHelp) {
  Registry registry;
  GaugeFamily* family =
      registry.AddGauge("g", "Line one\nback\\slash \"quoted\"", {"a", "b"})
          .value();
  family->WithLabels({"x\\y", "say \"hi\"\nbye"}).Set(1);
  EXPECT_EQ(registry.RenderPrometheus(),
            "# HELP g Line one\\nback\\\\slash \"quoted\"\n"
            "# TYPE g gauge\n"
            "g{a=\"x\\\\y\",b=\"say \\\"hi\\\"\\nbye\"} 1\n");
}

TEST(MetricsRegistryTest, HistogramBucketsAreCumulativeWithInf) {
  Registry registry;
  HistogramFamily* family =
      registry.AddHistogram("h", "H.", {1, 2, 5}, {"model"}).value();
  Histogram& h = family->Labels("m");
  for (double v : {0.5, 1.0, 1.5, 2.0, 4.0, 7.0, 9.0}) h.Observe(v);
  const std::string text = registry.RenderPrometheus();
  // A value equal to a bound counts in that bound's bucket (le: <=).
  EXPECT_EQ(SampleValue(text, "h_bucket{model=\"m\",le=\"1\"}"), 2);
  EXPECT_EQ(SampleValue(text, "h_bucket{model=\"m\",le=\"2\"}"), 4);
  EXPECT_EQ(SampleValue(text, "h_bucket{model=\"m\",le=\"5\"}"), 5);
  EXPECT_EQ(SampleValue(text, "h_bucket{model=\"m\",le=\"+Inf\"}"), 7);
  EXPECT_EQ(SampleValue(text, "h_count{model=\"m\"}"), 7);
  EXPECT_EQ(SampleValue(text, "h_sum{model=\"m\"}"), 25);

  const Histogram::Snapshot snapshot = h.Read();
  EXPECT_EQ(snapshot.cumulative, (std::vector<uint64_t>{2, 4, 5, 7}));
}

TEST(MetricsRegistryTest, TrailingInfBoundIsDroppedNotDuplicated) {
  Registry registry;
  registry.AddHistogram("h", "H.", {1, INFINITY}).value()->Get().Observe(3);
  const std::string text = registry.RenderPrometheus();
  EXPECT_EQ(SampleValue(text, "h_bucket{le=\"1\"}"), 0);
  EXPECT_EQ(SampleValue(text, "h_bucket{le=\"+Inf\"}"), 1);
  EXPECT_EQ(text.find("+Inf"), text.rfind("+Inf"));
}

TEST(MetricsRegistryTest, ChildReferencesAreStable) {
  Registry registry;
  CounterFamily* family = registry.AddCounter("c_total", "C.", {"k"}).value();
  Counter& first = family->Labels("a");
  for (int i = 0; i < 100; ++i) family->Labels(std::to_string(i)).Inc();
  EXPECT_EQ(&first, &family->WithLabels({"a"}));
  EXPECT_EQ(&family->Labels(std::string("7")), &family->WithLabels({"7"}));
  EXPECT_EQ(family->Labels("7").Value(), 1);
}

TEST(MetricsRegistryTest, RejectsDuplicatesAndBadDefinitions) {
  Registry registry;
  ASSERT_TRUE(registry.AddGauge("dup", "D.").ok());
  EXPECT_EQ(registry.AddGauge("dup", "D.").status().code(),
            StatusCode::kAlreadyExists);
  EXPECT_EQ(registry.AddCounter("dup_total", "D.").status().code(),
            StatusCode::kOk);
  EXPECT_EQ(registry
                .AddCollector("dup_total", "D.", MetricType::kCounter, {},
                              [](CollectorSink&) {})
                .code(),
            StatusCode::kAlreadyExists);

  auto invalid = [](const Status& s) {
    return s.code() == StatusCode::kInvalidArgument;
  };
  EXPECT_TRUE(invalid(registry.AddCounter("requests", "No _total.").status()));
  EXPECT_TRUE(invalid(registry.AddGauge("1bad", "Name.").status()));
  EXPECT_TRUE(invalid(registry.AddGauge("bad-name", "Name.").status()));
  EXPECT_TRUE(invalid(registry.AddGauge("g1", "L.", {"__x"}).status()));
  EXPECT_TRUE(invalid(registry.AddGauge("g2", "L.", {"a", "a"}).status()));
  EXPECT_TRUE(invalid(registry.AddHistogram("h1", "H.", {1}, {"le"}).status()));
  EXPECT_TRUE(invalid(registry.AddHistogram("h2", "H.", {2, 1}).status()));
  EXPECT_TRUE(invalid(registry.AddHistogram("h3", "H.", {1, 1}).status()));
  EXPECT_TRUE(invalid(registry.AddHistogram("h4", "H.", {NAN}).status()));
  EXPECT_TRUE(invalid(registry.AddCollector("c1", "C.", MetricType::kHistogram,
                                            {}, [](CollectorSink&) {})));
  EXPECT_TRUE(
      invalid(registry.AddCollector("c2", "C.", MetricType::kGauge, {}, {})));
  // A rejected definition does not reserve its name.
  EXPECT_TRUE(registry.AddGauge("g1", "Now valid.").ok());
}

TEST(MetricsRegistryTest, CollectorSuppliesSamplesAtRenderTime) {
  Registry registry;
  std::atomic<int> calls{0};
  ASSERT_TRUE(registry
                  .AddCollector("free_blocks", "Free \"KV\" blocks.",
                                MetricType::kGauge, {"device"},
                                [&calls](CollectorSink& sink) {
                                  const int n = ++calls;
                                  sink.Add({"1"}, 10 * n);
                                  sink.Add({"0"}, 5);
                                  sink.Add({"0"}, 0.5);  // summed
                                })
                  .ok());
  EXPECT_EQ(calls, 0);
  EXPECT_EQ(registry.RenderPrometheus(),
            "# HELP free_blocks Free \"KV\" blocks.\n"
            "# TYPE free_blocks gauge\n"
            "free_blocks{device=\"0\"} 5.5\n"
            "free_blocks{device=\"1\"} 10\n");
  EXPECT_EQ(
      SampleValue(registry.RenderPrometheus(), "free_blocks{device=\"1\"}"),
      20);
  EXPECT_EQ(calls, 2);
}

TEST(MetricsRegistryTest, ConcurrentUpdatesWhileRenderingAreExact) {
  constexpr int kThreads = 4;
  constexpr int kIncrements = 50000;
  Registry registry;
  CounterFamily* counters =
      registry.AddCounter("ops_total", "Ops.", {"worker"}).value();
  Counter& shared = registry.AddCounter("shared_total", "S.").value()->Get();
  Gauge& gauge = registry.AddGauge("level", "L.").value()->Get();
  Histogram& histogram =
      registry.AddHistogram("obs", "O.", {0.5, 1.5}).value()->Get();

  // Workers start after the first render, so renders overlap the updates.
  std::atomic<bool> started{false};
  std::atomic<bool> done{false};
  std::thread renderer([&] {
    double last_shared = 0;
    while (!done.load()) {
      const std::string text = registry.RenderPrometheus();
      started = true;
      const double now_shared = SampleValue(text, "shared_total");
      EXPECT_GE(now_shared, last_shared);  // counters never go down
      last_shared = now_shared;
      EXPECT_EQ(SampleValue(text, "obs_bucket{le=\"+Inf\"}"),
                SampleValue(text, "obs_count"));
    }
  });
  std::vector<std::thread> workers;
  for (int t = 0; t < kThreads; ++t) {
    workers.emplace_back([&, t] {
      while (!started.load()) std::this_thread::yield();
      // Each worker creates its own child concurrently with the others.
      Counter& mine = counters->Labels(std::to_string(t));
      for (int i = 0; i < kIncrements; ++i) {
        mine.Inc();
        shared.Inc(2);
        gauge.Inc();
        gauge.Dec(0.5);
        histogram.Observe(i % 3);  // 0, 1, 2 in turn
      }
    });
  }
  for (std::thread& w : workers) w.join();
  done = true;
  renderer.join();

  const std::string text = registry.RenderPrometheus();
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(
        SampleValue(text, "ops_total{worker=\"" + std::to_string(t) + "\"}"),
        kIncrements);
  }
  const double total = static_cast<double>(kThreads) * kIncrements;
  EXPECT_EQ(SampleValue(text, "shared_total"), 2 * total);
  EXPECT_EQ(SampleValue(text, "level"), 0.5 * total);
  EXPECT_EQ(SampleValue(text, "obs_count"), total);
  const Histogram::Snapshot s = histogram.Read();
  const uint64_t zeros = kThreads * ((kIncrements + 2) / 3);
  const uint64_t ones = kThreads * ((kIncrements + 1) / 3);
  EXPECT_EQ(s.cumulative[0], zeros);
  EXPECT_EQ(s.cumulative[1], zeros + ones);
  EXPECT_EQ(s.cumulative[2], static_cast<uint64_t>(total));
  EXPECT_EQ(s.sum, static_cast<double>(ones + 2 * (s.count - zeros - ones)));
}

}  // namespace
}  // namespace tessera::metrics
