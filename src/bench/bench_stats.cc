#include "bench/bench_stats.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

namespace tessera::bench {
namespace {

using OrderedJson = nlohmann::ordered_json;

OrderedJson DistributionJson(const Distribution& d) {
  OrderedJson out = OrderedJson::object();
  out["mean"] = d.mean;
  out["median"] = d.median;
  out["std"] = d.std;
  out["p95"] = d.p95;
  out["p99"] = d.p99;
  out["max"] = d.max;
  return out;
}

double Rate(double amount, double seconds) {
  return seconds > 0.0 ? amount / seconds : 0.0;
}

// One "label:   value" line, the values starting in column 42.
void Line(std::string& text, std::string_view label, const std::string& value) {
  text += fmt::format("{:<41}{}\n", label, value);
}
std::string Fixed(const OrderedJson& v) {
  return fmt::format("{:.2f}", v.get<double>());
}

void Rule(std::string& text, std::string_view title, char fill) {
  const size_t width = 50;
  const size_t left = (width - title.size()) / 2;
  text += std::string(left, fill) + std::string(title) +
          std::string(width - left - title.size(), fill) + "\n";
}

void DistributionLines(std::string& text, const OrderedJson& d, std::string_view what,
                       bool tail) {
  Line(text, fmt::format("Mean {} (ms):", what), Fixed(d["mean"]));
  Line(text, fmt::format("Median {} (ms):", what), Fixed(d["median"]));
  Line(text, fmt::format("Std {} (ms):", what), Fixed(d["std"]));
  if (tail) Line(text, fmt::format("P95 {} (ms):", what), Fixed(d["p95"]));
  Line(text, fmt::format("P99 {} (ms):", what), Fixed(d["p99"]));
  if (tail) Line(text, fmt::format("Max {} (ms):", what), Fixed(d["max"]));
}

std::string DatasetText(const OrderedJson& dataset) {
  std::string text = dataset.value("name", std::string("?"));
  std::string params;
  for (const auto& [key, value] : dataset.items()) {
    if (key == "name") continue;
    params += fmt::format("{}{}={}", params.empty() ? "" : ", ", key,
                          value.dump());
  }
  return params.empty() ? text : text + " (" + params + ")";
}

}  // namespace

double Percentile(const std::vector<double>& sorted, double p) {
  const double rank = std::clamp(p, 0.0, 100.0) / 100.0 *
                      double(sorted.size() - 1);
  const size_t lo = size_t(std::floor(rank));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (rank - double(lo));
}

Distribution Summarize(std::vector<double> values) {
  Distribution d;
  if (values.empty()) return d;
  std::sort(values.begin(), values.end());
  d.count = int64_t(values.size());
  d.mean = std::accumulate(values.begin(), values.end(), 0.0) / double(d.count);
  double squares = 0.0;
  for (const double v : values) squares += (v - d.mean) * (v - d.mean);
  d.std = std::sqrt(squares / double(d.count));
  d.median = Percentile(values, 50.0);
  d.p95 = Percentile(values, 95.0);
  d.p99 = Percentile(values, 99.0);
  d.max = values.back();
  return d;
}

BenchSummary SummarizeLoad(const LoadResult& load) {
  BenchSummary s;
  s.duration_s = load.duration_s;
  s.peak_concurrency = load.peak_concurrency;
  std::vector<double> ttft, tpot, itl, e2e;
  double e2e_sum_s = 0.0;
  for (const RequestResult& r : load.results) {
    if (!r.success) {
      ++s.failed;
      if (s.errors.size() < kMaxErrorsKept) s.errors.push_back(r.error);
      continue;
    }
    ++s.completed;
    s.total_input_tokens += r.input_len;
    s.total_output_tokens += r.output_tokens;
    s.reported_prompt_tokens += r.prompt_tokens;
    s.cached_tokens += r.cached_tokens;
    if (r.output_tokens != r.requested_output_len) ++s.output_len_mismatches;
    ttft.push_back(r.ttft_s * 1e3);
    e2e.push_back(r.e2e_s * 1e3);
    e2e_sum_s += r.e2e_s;
    if (r.output_tokens > 1) {
      tpot.push_back((r.e2e_s - r.ttft_s) * 1e3 /
                     double(r.output_tokens - 1));
    }
    for (const double gap : r.itl_s) itl.push_back(gap * 1e3);
  }
  s.cached_token_fraction =
      s.reported_prompt_tokens > 0
          ? double(s.cached_tokens) / double(s.reported_prompt_tokens)
          : 0.0;
  s.request_throughput = Rate(double(s.completed), s.duration_s);
  s.input_throughput = Rate(double(s.total_input_tokens), s.duration_s);
  s.output_throughput = Rate(double(s.total_output_tokens), s.duration_s);
  s.total_throughput = s.input_throughput + s.output_throughput;
  s.mean_concurrency = Rate(e2e_sum_s, s.duration_s);
  s.ttft_ms = Summarize(std::move(ttft));
  s.tpot_ms = Summarize(std::move(tpot));
  s.itl_ms = Summarize(std::move(itl));
  s.e2e_ms = Summarize(std::move(e2e));
  return s;
}

nlohmann::ordered_json SummaryJson(const BenchSummary& s) {
  OrderedJson out = OrderedJson::object();
  out["completed"] = s.completed;
  out["failed"] = s.failed;
  out["errors"] = s.errors;
  out["duration_s"] = s.duration_s;
  out["total_input_tokens"] = s.total_input_tokens;
  out["total_output_tokens"] = s.total_output_tokens;
  out["reported_prompt_tokens"] = s.reported_prompt_tokens;
  out["cached_tokens"] = s.cached_tokens;
  out["cached_token_fraction"] = s.cached_token_fraction;
  out["output_len_mismatches"] = s.output_len_mismatches;
  out["request_throughput"] = s.request_throughput;
  out["input_throughput"] = s.input_throughput;
  out["output_throughput"] = s.output_throughput;
  out["total_throughput"] = s.total_throughput;
  out["mean_concurrency"] = s.mean_concurrency;
  out["peak_concurrency"] = s.peak_concurrency;
  out["ttft_ms"] = DistributionJson(s.ttft_ms);
  out["tpot_ms"] = DistributionJson(s.tpot_ms);
  out["itl_ms"] = DistributionJson(s.itl_ms);
  out["e2e_ms"] = DistributionJson(s.e2e_ms);
  return out;
}

std::string ResultTable(const nlohmann::ordered_json& r) {
  std::string text;
  Rule(text, " Serving Benchmark Result ", '=');
  Line(text, "Server:", r.value("base_url", ""));
  Line(text, "Model:", r.value("model", ""));
  Line(text, "Dataset:", DatasetText(r.value("dataset", OrderedJson::object())));
  const OrderedJson rate = r.value("request_rate", OrderedJson());
  Line(text, "Traffic request rate:",
       rate.is_number() ? fmt::format("{:g}", rate.get<double>()) : "inf");
  const OrderedJson limit = r.value("max_concurrency", OrderedJson());
  Line(text, "Max request concurrency:",
       limit.is_number() ? std::to_string(limit.get<int64_t>()) : "not set");
  Line(text, "Successful requests:", std::to_string(r["completed"].get<int64_t>()));
  Line(text, "Failed requests:", std::to_string(r["failed"].get<int64_t>()));
  Line(text, "Benchmark duration (s):", Fixed(r["duration_s"]));
  Line(text, "Total input tokens:",
       std::to_string(r["total_input_tokens"].get<int64_t>()));
  Line(text, "Total generated tokens:",
       std::to_string(r["total_output_tokens"].get<int64_t>()));
  Line(text, "Cached input tokens:",
       std::to_string(r["cached_tokens"].get<int64_t>()));
  Line(text, "Cached input fraction (%):",
       fmt::format("{:.2f}", 100.0 * r["cached_token_fraction"].get<double>()));
  Line(text, "Request throughput (req/s):", Fixed(r["request_throughput"]));
  Line(text, "Input token throughput (tok/s):", Fixed(r["input_throughput"]));
  Line(text, "Output token throughput (tok/s):", Fixed(r["output_throughput"]));
  Line(text, "Total token throughput (tok/s):", Fixed(r["total_throughput"]));
  Line(text, "Concurrency (mean in flight):", Fixed(r["mean_concurrency"]));
  Line(text, "Peak concurrency:",
       std::to_string(r["peak_concurrency"].get<int64_t>()));
  Rule(text, "End-to-End Latency", '-');
  DistributionLines(text, r["e2e_ms"], "E2E Latency", false);
  Rule(text, "Time to First Token", '-');
  DistributionLines(text, r["ttft_ms"], "TTFT", false);
  Rule(text, "Time per Output Token (excl. 1st token)", '-');
  DistributionLines(text, r["tpot_ms"], "TPOT", false);
  Rule(text, "Inter-Token Latency", '-');
  DistributionLines(text, r["itl_ms"], "ITL", true);
  if (r.contains("ttft_ms_by_round")) {
    Rule(text, "Multi-turn", '-');
    const OrderedJson& rounds = r["ttft_ms_by_round"];
    for (size_t i = 0; i < rounds.size(); ++i) {
      Line(text, fmt::format("Mean TTFT round {} (ms):", i),
           rounds[i].is_number() ? Fixed(rounds[i]) : std::string("n/a"));
    }
    const OrderedJson rate = r.value("cache_tier_hit_rate", OrderedJson());
    if (rate.is_object()) {
      for (const auto& [tier, value] : rate.items()) {
        Line(text, fmt::format("Hit rate, {} tier (%):", tier),
             fmt::format("{:.2f}", 100.0 * value.get<double>()));
      }
    }
  }
  Rule(text, "", '=');
  if (r["output_len_mismatches"].get<int64_t>() > 0) {
    text += fmt::format(
        "warning: {} requests generated a different number of tokens than "
        "max_tokens (does the server honour ignore_eos?)\n",
        r["output_len_mismatches"].get<int64_t>());
  }
  const OrderedJson& errors = r["errors"];
  if (!errors.empty()) {
    text += fmt::format("first {} of {} failures:\n", errors.size(),
                        r["failed"].get<int64_t>());
    for (const OrderedJson& e : errors) text += "  " + e.get<std::string>() + "\n";
  }
  return text;
}

}  // namespace tessera::bench
