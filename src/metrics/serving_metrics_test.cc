#include "metrics/serving_metrics.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace tessera::metrics {
namespace {

bool Contains(const std::string& text, const std::string& piece) {
  return text.find(piece) != std::string::npos;
}

TEST(ServingMetricsTest, RendersEveryDocumentedFamily) {
  Registry registry;
  ASSERT_TRUE(ServingMetrics::Create(&registry, "llama-3").ok());
  const std::string text = registry.RenderPrometheus();
  const std::vector<std::pair<std::string, std::string>> families = {
      {"tessera:num_running_reqs", "gauge"},
      {"tessera:num_queue_reqs", "gauge"},
      {"tessera:num_used_tokens", "gauge"},
      {"tessera:token_usage", "gauge"},
      {"tessera:cache_hit_rate", "gauge"},
      {"tessera:gen_throughput", "gauge"},
      {"tessera:device_idle_fraction", "gauge"},
      {"tessera:max_total_num_tokens", "gauge"},
      {"tessera:prompt_tokens_total", "counter"},
      {"tessera:generation_tokens_total", "counter"},
      {"tessera:cached_tokens_total", "counter"},
      {"tessera:num_requests_total", "counter"},
      {"tessera:num_aborted_requests_total", "counter"},
      {"tessera:num_retracted_requests_total", "counter"},
      {"tessera:time_to_first_token_seconds", "histogram"},
      {"tessera:inter_token_latency_seconds", "histogram"},
      {"tessera:e2e_request_latency_seconds", "histogram"},
      {"tessera:queue_time_seconds", "histogram"},
  };
  for (const auto& [name, type] : families) {
    SCOPED_TRACE(name);
    EXPECT_TRUE(Contains(text, "# HELP " + name + " "));
    EXPECT_TRUE(Contains(text, "# TYPE " + name + " " + type + "\n"));
    const std::string sample = type == "histogram"
                                   ? name + "_count{model_name=\"llama-3\"} 0\n"
                                   : name + "{model_name=\"llama-3\"} 0\n";
    EXPECT_TRUE(Contains(text, sample));
  }
  // SGLang's bucket bounds, e.g. TTFT starts at 100 ms, queue time at 0.
  EXPECT_TRUE(Contains(
      text,
      "tessera:time_to_first_token_seconds_bucket{model_name=\"llama-3\","
      "le=\"0.1\"} 0\n"));
  EXPECT_TRUE(Contains(text,
                       "tessera:inter_token_latency_seconds_bucket{model_name="
                       "\"llama-3\",le=\"0.002\"} 0\n"));
  EXPECT_TRUE(Contains(text,
                       "tessera:queue_time_seconds_bucket{model_name="
                       "\"llama-3\",le=\"0\"} 0\n"));
}

TEST(ServingMetricsTest, HandlesUpdateTheRenderedSeries) {
  Registry registry;
  StatusOr<ServingMetrics> created = ServingMetrics::Create(&registry, "m");
  ASSERT_TRUE(created.ok());
  const ServingMetrics& metrics = *created;
  metrics.num_running_reqs().Set(3);
  metrics.token_usage().Set(0.25);
  metrics.max_total_num_tokens().Set(161721);
  metrics.prompt_tokens().Inc(128);
  metrics.num_retracted_requests().Inc();
  metrics.inter_token_latency().Observe(0.012);
  const std::string text = registry.RenderPrometheus();
  EXPECT_TRUE(Contains(text, "tessera:num_running_reqs{model_name=\"m\"} 3\n"));
  EXPECT_TRUE(Contains(text, "tessera:token_usage{model_name=\"m\"} 0.25\n"));
  EXPECT_TRUE(Contains(
      text, "tessera:max_total_num_tokens{model_name=\"m\"} 161721\n"));
  EXPECT_TRUE(
      Contains(text, "tessera:prompt_tokens_total{model_name=\"m\"} 128\n"));
  EXPECT_TRUE(Contains(
      text, "tessera:num_retracted_requests_total{model_name=\"m\"} 1\n"));
  EXPECT_TRUE(Contains(text,
                       "tessera:inter_token_latency_seconds_bucket{model_name="
                       "\"m\",le=\"0.01\"} 0\n"));
  EXPECT_TRUE(Contains(text,
                       "tessera:inter_token_latency_seconds_bucket{model_name="
                       "\"m\",le=\"0.015\"} 1\n"));
}

TEST(ServingMetricsTest, CreatingTwiceOnOneRegistryFails) {
  Registry registry;
  ASSERT_TRUE(ServingMetrics::Create(&registry, "m").ok());
  EXPECT_EQ(ServingMetrics::Create(&registry, "m").status().code(),
            StatusCode::kAlreadyExists);
}

TEST(ServingMetricsTest, OpFallbackCollectorReadsSourceAtEachScrape) {
  Registry registry;
  std::vector<OpFallbackCount> rows = {
      {"rms_norm", "cuda", 2}, {"gelu", "cuda", 5}, {"rms_norm", "cuda", 1}};
  ASSERT_TRUE(
      RegisterOpFallbackMetric(&registry, [&rows] { return rows; }).ok());
  EXPECT_EQ(registry.RenderPrometheus(),
            "# HELP tessera:op_fallback_total Number of op runs that fell "
            "back from the plugin's kernel to the fallback path.\n"
            "# TYPE tessera:op_fallback_total counter\n"
            "tessera:op_fallback_total{op=\"gelu\",plugin=\"cuda\"} 5\n"
            "tessera:op_fallback_total{op=\"rms_norm\",plugin=\"cuda\"} 3\n");
  rows.push_back({"rope", "rocm", 7});
  EXPECT_TRUE(Contains(registry.RenderPrometheus(),
                       "tessera:op_fallback_total{op=\"rope\",plugin=\"rocm\"} "
                       "7\n"));
  EXPECT_EQ(RegisterOpFallbackMetric(
                &registry, [] { return std::vector<OpFallbackCount>{}; })
                .code(),
            StatusCode::kAlreadyExists);
  EXPECT_EQ(RegisterOpFallbackMetric(&registry, nullptr).code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tessera::metrics
