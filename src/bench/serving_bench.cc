#include "bench/serving_bench.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>

#include "bench/http_endpoint.h"
#include "bench/request_runner.h"
#include "bench/server_probe.h"

namespace tessera::bench {
namespace {

using OrderedJson = nlohmann::ordered_json;

// Streams derived from --seed (arbitrary odd constants).
constexpr uint64_t kArrivalSeedMix = 0x9e3779b97f4a7c15ull;
constexpr uint64_t kWarmupSeedMix = 0xbf58476d1ce4e5b9ull;

OrderedJson DatasetJson(const ServingBenchConfig& c) {
  OrderedJson d = OrderedJson::object();
  d["name"] = c.dataset_name;
  if (c.dataset_name == kDatasetRandom) {
    d["num_prompts"] = c.random.num_prompts;
    d["input_len"] = c.random.input_len;
    d["output_len"] = c.random.output_len;
    d["range_ratio"] = c.random.range_ratio;
  } else if (c.dataset_name == kDatasetMultiTurn) {
    d["num_conversations"] = c.random.num_prompts;
    d["rounds"] = c.multi_turn_rounds;
    d["question_len"] = c.random.input_len;
    d["output_len"] = c.random.output_len;
  } else {
    d["num_groups"] = c.shared_prefix.num_groups;
    d["prompts_per_group"] = c.shared_prefix.prompts_per_group;
    d["system_prompt_len"] = c.shared_prefix.system_prompt_len;
    d["question_len"] = c.shared_prefix.question_len;
    d["output_len"] = c.shared_prefix.output_len;
  }
  return d;
}

MultiTurnDatasetOptions MultiTurnOptions(const ServingBenchConfig& c,
                                         int64_t vocab_size) {
  MultiTurnDatasetOptions o;
  o.num_conversations = c.random.num_prompts;
  o.rounds = c.multi_turn_rounds;
  o.question_len = c.random.input_len;
  o.output_len = c.random.output_len;
  o.vocab_size = vocab_size;
  o.seed = c.seed;
  return o;
}

// tessera:cache_tier_hit_tokens_total per tier from /metrics; empty when
// the server does not export it.
std::map<std::string, double> TierHitTokens(const Endpoint& endpoint) {
  std::map<std::string, double> out;
  auto reply = HttpGet(endpoint, "/metrics", 10.0);
  if (!reply.ok() || reply->status != 200) return out;
  const std::string prefix = "tessera:cache_tier_hit_tokens_total{tier=\"";
  size_t pos = 0;
  while ((pos = reply->body.find(prefix, pos)) != std::string::npos) {
    pos += prefix.size();
    const size_t end = reply->body.find('"', pos);
    if (end == std::string::npos) break;
    const std::string tier = reply->body.substr(pos, end - pos);
    const size_t value = reply->body.find("} ", end);
    if (value == std::string::npos) break;
    out[tier] = std::strtod(reply->body.c_str() + value + 2, nullptr);
    pos = value;
  }
  return out;
}

StatusOr<std::vector<BenchRequest>> MakeDataset(const ServingBenchConfig& c,
                                                int64_t vocab_size) {
  if (c.dataset_name == kDatasetMultiTurn) {
    TSR_ASSIGN_OR_RETURN(auto conversations,
                         MakeMultiTurnDataset(MultiTurnOptions(c, vocab_size)));
    std::vector<BenchRequest> flat;
    for (auto& conv : conversations) {
      for (auto& r : conv) flat.push_back(std::move(r));
    }
    return flat;
  }
  if (c.dataset_name == kDatasetRandom) {
    RandomDatasetOptions o = c.random;
    o.vocab_size = vocab_size;
    o.seed = c.seed;
    return MakeRandomDataset(o);
  }
  if (c.dataset_name == kDatasetSharedPrefix) {
    SharedPrefixDatasetOptions o = c.shared_prefix;
    o.vocab_size = vocab_size;
    o.seed = c.seed;
    return MakeSharedPrefixDataset(o);
  }
  return InvalidArgumentError(fmt::format(
      "--dataset-name {} is unknown; use {}, {} or {}", c.dataset_name,
      kDatasetRandom, kDatasetSharedPrefix, kDatasetMultiTurn));
}

Status CheckContext(const std::vector<BenchRequest>& requests,
                    const ServedModel& model) {
  if (model.max_model_len <= 0) return OkStatus();
  for (const BenchRequest& r : requests) {
    const int64_t in = int64_t(r.prompt_ids.size());
    if (in + r.output_len > model.max_model_len) {
      return InvalidArgumentError(fmt::format(
          "a request needs {} + {} = {} tokens but {} has max_model_len {}; "
          "lower the input or output length flags",
          in, r.output_len, in + r.output_len, model.id,
          model.max_model_len));
    }
  }
  return OkStatus();
}

}  // namespace

StatusOr<ServingBenchReport> RunServingBench(const ServingBenchConfig& config) {
  if (!(config.request_rate > 0.0)) {
    return InvalidArgumentError(
        "--request-rate must be > 0 requests/s, or inf (all at once)");
  }
  if (config.max_concurrency < 0 || config.warmup_requests < 0) {
    return InvalidArgumentError(
        "--max-concurrency and --warmup-requests must not be negative");
  }
  TSR_ASSIGN_OR_RETURN(const Endpoint endpoint, ParseBaseUrl(config.base_url));
  TSR_ASSIGN_OR_RETURN(const ServerInfo info, ProbeServer(endpoint));
  TSR_ASSIGN_OR_RETURN(const ServedModel model,
                       ChooseModel(info, config.model));
  const int64_t vocab_size =
      config.vocab_size > 0 ? config.vocab_size : info.vocab_size;
  if (vocab_size <= 0) {
    return InvalidArgumentError(fmt::format(
        "the server at {} does not report its vocabulary size (GET "
        "/server_info \"vocab_size\"); pass --vocab-size N",
        endpoint.Url()));
  }
  TSR_ASSIGN_OR_RETURN(const std::vector<BenchRequest> requests,
                       MakeDataset(config, vocab_size));
  TSR_RETURN_IF_ERROR(CheckContext(requests, model));

  for (int64_t i = 0; i < config.warmup_requests; ++i) {
    const BenchRequest warmup = MakeWarmupRequest(
        requests.front(), vocab_size,
        config.seed ^ kWarmupSeedMix ^ uint64_t(i));
    const RequestResult r =
        RunRequest(endpoint, model.id, warmup, config.extra_request_body);
    if (!r.success) {
      return AbortedError(fmt::format(
          "the warm-up request to {} failed, so the benchmark did not "
          "start: {}",
          endpoint.Url(), r.error));
    }
  }

  LoadOptions load_options;
  load_options.request_rate = config.request_rate;
  load_options.max_concurrency = config.max_concurrency;
  load_options.seed = config.seed ^ kArrivalSeedMix;
  auto progress = std::make_shared<ProgressReporter>(
      "requests done", config.progress, std::chrono::seconds(10), stderr,
      ProgressReporter::Unit::kCount);
  // (called under the load generator's lock: one caller at a time)
  load_options.on_progress = [progress](int64_t done, int64_t total) {
    progress->Update(static_cast<uint64_t>(done), static_cast<uint64_t>(total));
    if (done == total) progress->End();
  };
  const SendFn send = [&](const BenchRequest& request) {
    return RunRequest(endpoint, model.id, request, config.extra_request_body);
  };
  const bool multi_turn = config.dataset_name == kDatasetMultiTurn;
  const std::map<std::string, double> hits_before =
      multi_turn ? TierHitTokens(endpoint) : std::map<std::string, double>{};
  LoadResult load;
  if (multi_turn) {
    TSR_ASSIGN_OR_RETURN(
        auto conversations,
        MakeMultiTurnDataset(MultiTurnOptions(config, vocab_size)));
    TSR_ASSIGN_OR_RETURN(load,
                         RunMultiTurnLoad(conversations, send, load_options));
  } else {
    TSR_ASSIGN_OR_RETURN(load, RunLoad(requests, send, load_options));
  }

  ServingBenchReport report;
  report.summary = SummarizeLoad(load);
  OrderedJson& out = report.result;
  out = OrderedJson::object();
  out["benchmark"] = "serving";
  out["base_url"] = endpoint.Url();
  out["model"] = model.id;
  out["dataset"] = DatasetJson(config);
  out["request_rate"] = std::isinf(config.request_rate)
                            ? OrderedJson(nullptr)
                            : OrderedJson(config.request_rate);
  out["max_concurrency"] = config.max_concurrency > 0
                               ? OrderedJson(config.max_concurrency)
                               : OrderedJson(nullptr);
  out["seed"] = config.seed;
  out["warmup_requests"] = config.warmup_requests;
  if (!config.extra_request_body.empty()) {
    out["extra_request_body"] = config.extra_request_body;
  }
  out["vocab_size"] = vocab_size;
  const OrderedJson summary = SummaryJson(report.summary);
  for (const auto& item : summary.items()) out[item.key()] = item.value();
  if (multi_turn) {
    // Mean TTFT per round (results are conversation-major).
    const int64_t rounds = config.multi_turn_rounds;
    OrderedJson by_round = OrderedJson::array();
    for (int64_t r = 0; r < rounds; ++r) {
      double sum = 0;
      int64_t n = 0;
      for (size_t i = size_t(r); i < load.results.size(); i += size_t(rounds)) {
        if (!load.results[i].success) continue;
        sum += load.results[i].ttft_s * 1000.0;
        ++n;
      }
      by_round.push_back(n > 0 ? OrderedJson(sum / double(n)) : OrderedJson(nullptr));
    }
    out["ttft_ms_by_round"] = by_round;
    const std::map<std::string, double> hits_after = TierHitTokens(endpoint);
    if (hits_after.empty()) {
      out["cache_tier_hit_tokens"] = nullptr;
      out["cache_tier_hit_rate"] = nullptr;
    } else {
      OrderedJson tokens = OrderedJson::object(), rate = OrderedJson::object();
      const double prompt = double(std::max<int64_t>(
          1, report.summary.reported_prompt_tokens));
      for (const char* tier : {"device", "host", "storage"}) {
        auto a = hits_after.find(tier);
        if (a == hits_after.end()) continue;
        auto b = hits_before.find(tier);
        const double d = a->second - (b == hits_before.end() ? 0.0 : b->second);
        tokens[tier] = d;
        rate[tier] = d / prompt;
      }
      out["cache_tier_hit_tokens"] = tokens;
      out["cache_tier_hit_rate"] = rate;
    }
  }
  return report;
}

}  // namespace tessera::bench
