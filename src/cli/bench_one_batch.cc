// One-batch benchmark: see bench_one_batch.h.
#include "cli/bench_one_batch.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>
#include <span>
#include <vector>

#include "base/dtype.h"
#include "model/sampler.h"

namespace tessera::cli {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Nearest-rank percentile of sorted values, q in [0, 1].
double Percentile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0.0;
  const size_t rank = size_t(std::ceil(q * double(sorted.size())));
  return sorted[std::clamp<size_t>(rank, 1, sorted.size()) - 1];
}

// The page lists of the batch's sequences; freed on destruction.
class BatchPages {
 public:
  explicit BatchPages(kv::KvPool& pool, int64_t sequences)
      : pool_(pool), pages_(size_t(sequences)) {}
  ~BatchPages() {
    for (auto& p : pages_) (void)pool_.Release(p);
  }
  std::vector<int32_t>& operator[](size_t i) { return pages_[i]; }

 private:
  kv::KvPool& pool_;
  std::vector<std::vector<int32_t>> pages_;
};

}  // namespace

int64_t OneBatchKvPagesNeeded(const OneBatchParams& params, int32_t page_size) {
  return params.batch_size *
         kv::KvPool::PagesForTokens(params.input_len + params.output_len,
                                    page_size);
}

StatusOr<OneBatchResult> RunOneBatch(model::ModelRunner& runner,
                                     const OneBatchParams& params,
                                     engine::TpLeader* tp) {
  if (params.batch_size < 1 || params.input_len < 1 || params.output_len < 1) {
    return InvalidArgumentError(fmt::format(
        "batch size {}, input length {} and output length {} must all be at "
        "least 1",
        params.batch_size, params.input_len, params.output_len));
  }
  const model::ModelConfig& config = runner.config();
  const int64_t context = params.input_len + params.output_len;
  if (config.max_position_embeddings > 0 &&
      context > config.max_position_embeddings) {
    return InvalidArgumentError(fmt::format(
        "--input-len {} + --output-len {} = {} exceeds the model's context "
        "(max_position_embeddings {}); shorten them",
        params.input_len, params.output_len, context,
        config.max_position_embeddings));
  }
  kv::KvPool& pool = runner.kv_pool();
  const int64_t pages_needed = OneBatchKvPagesNeeded(params, pool.page_size());
  if (pool.num_free_pages() < pages_needed) {
    return ResourceExhaustedError(fmt::format(
        "batch size {} with {} + {} tokens per sequence needs {} KV pages "
        "({} slots each) but the KV pool has {} free of {}; size the pool for "
        "batch * (input + output) tokens or lower the batch size",
        params.batch_size, params.input_len, params.output_len, pages_needed,
        pool.page_size(), pool.num_free_pages(), pool.num_pages()));
  }

  const size_t batch_size = size_t(params.batch_size);
  std::mt19937_64 gen(params.seed);
  std::uniform_int_distribution<int32_t> token(0,
                                               int32_t(config.vocab_size - 1));
  std::vector<std::vector<int32_t>> prompts(batch_size);
  for (auto& prompt : prompts) {
    prompt.resize(size_t(params.input_len));
    for (auto& id : prompt) id = token(gen);
  }

  BatchPages pages(pool, params.batch_size);
  for (size_t i = 0; i < batch_size; ++i) {
    // The whole context up front: page allocation is not what is timed.
    TSR_RETURN_IF_ERROR(pool.EnsureCapacity(pages[i], context));
  }
  model::Sampler sampler(runner.runtime(), runner.device(), runner.stream(),
                         &runner.copy_stream());
  const std::vector<model::SampleRow> rows(batch_size, model::SampleRow{});

  OneBatchResult result;
  result.params = params;

  // The sampled ids: on the device (the next step's input with overlap)
  // and copied to host[k] behind copied[k], one slot per step in flight.
  runtime::Stream& stream = runner.stream();
  std::vector<int32_t> host[2];
  runtime::EventPtr copied[2];    // on the copy stream
  runtime::EventPtr computed[2];  // on the compute stream, before each copy
  for (int k = 0; k < 2; ++k) {
    TSR_ASSIGN_OR_RETURN(copied[k], runtime::Event::Create(stream.plugin(),
                                                           stream.device()));
    TSR_ASSIGN_OR_RETURN(computed[k], runtime::Event::Create(stream.plugin(),
                                                             stream.device()));
  }
  auto wait = [&](int k) { return model::Sampler::WaitReadBack(*copied[k], *computed[k]); };
  // Enqueues logits -> sample -> copy of the ids into slot k.
  auto sample = [&](const tsr_tensor& logits, int k) -> StatusOr<model::DeviceIds> {
    TSR_ASSIGN_OR_RETURN(model::DeviceIds ids, sampler.Enqueue(logits, rows));
    if (tp != nullptr) TSR_RETURN_IF_ERROR(tp->BroadcastIds(stream, ids));
    TSR_RETURN_IF_ERROR(sampler.ReadBack(ids, host[k], *copied[k], *computed[k]));
    return ids;
  };

  // Every forward pass: first to the worker ranks (tensor parallelism).
  auto forward = [&](const model::Batch& batch) -> StatusOr<tsr_tensor> {
    if (tp != nullptr) {
      TSR_RETURN_IF_ERROR(tp->SendStep(batch, static_cast<int64_t>(batch_size)));
    }
    return runner.ForwardOnDevice(batch);
  };

  // Prefill: all prompts in one forward pass, then the first tokens.
  const auto prefill_start = Clock::now();
  model::Batch prefill;
  for (size_t i = 0; i < batch_size; ++i) {
    prefill.sequences.push_back({prompts[i], 0, pages[i]});
  }
  TSR_ASSIGN_OR_RETURN(tsr_tensor logits, forward(prefill));
  TSR_ASSIGN_OR_RETURN(model::DeviceIds device_ids, sample(logits, 0));
  TSR_RETURN_IF_ERROR(wait(0));
  std::vector<int32_t> last = host[0];
  result.prefill_seconds = SecondsSince(prefill_start);

  // Decode: one token per sequence per step at position input_len + s.
  // Serial: each step reads its ids back before the next is built. Overlap:
  // step s + 1 is launched with step s's ids still on the device (device
  // tokens) and step s's ids are read back after that launch, as the
  // engine's overlap loop does. A step's clock runs from the previous
  // step's read-back to its own.
  static const int32_t kPlaceholder = 0;
  std::vector<double> step_ms;
  step_ms.reserve(size_t(params.output_len));
  double host_s = 0;
  runtime::Plugin& plugin = runner.device().plugin();
  TSR_ASSIGN_OR_RETURN(std::optional<uint64_t> busy_start,
                       plugin.StreamBusyNs(stream.handle()));
  const auto decode_start = Clock::now();
  auto step_start = decode_start;
  for (int64_t s = 0; s < params.output_len; ++s) {
    const int k = int(s % 2) ^ 1;  // prefill used slot 0
    const auto host_start = Clock::now();
    model::Batch decode;
    for (size_t i = 0; i < batch_size; ++i) {
      std::span<const int32_t> token(&last[i], 1);
      if (params.overlap) {
        token = std::span<const int32_t>(&kPlaceholder, 1);
        decode.device_tokens.push_back({int64_t(i), int64_t(i)});
      }
      decode.sequences.push_back({token, params.input_len + s, pages[i]});
    }
    if (params.overlap) {
      decode.token_source = device_ids.buffer;
      decode.token_source_offset = device_ids.offset;
    }
    TSR_ASSIGN_OR_RETURN(logits, forward(decode));
    TSR_ASSIGN_OR_RETURN(device_ids, sample(logits, k));
    host_s += SecondsSince(host_start);
    // Serial: this step's ids; overlap: the previous step's.
    const int read = params.overlap ? k ^ 1 : k;
    if (!params.overlap || s > 0) {
      TSR_RETURN_IF_ERROR(wait(read));
      last = host[read];
      const auto now = Clock::now();
      step_ms.push_back(std::chrono::duration<double, std::milli>(now - step_start).count());
      step_start = now;
    }
  }
  if (params.overlap) {
    TSR_RETURN_IF_ERROR(wait(int((params.output_len - 1) % 2) ^ 1));
    const auto now = Clock::now();
    step_ms.push_back(std::chrono::duration<double, std::milli>(now - step_start).count());
  }
  result.decode_seconds = SecondsSince(decode_start);
  result.host_ms_mean = host_s * 1e3 / double(params.output_len);
  TSR_ASSIGN_OR_RETURN(std::optional<uint64_t> busy_end,
                       plugin.StreamBusyNs(stream.handle()));
  if (busy_start && busy_end) {
    // The stream is idle at both ends (the last read-back waited for it).
    const double busy_ms = double(*busy_end - *busy_start) / 1e6;
    const double wall_ms = result.decode_seconds * 1e3;
    result.outside_kernels_ms_mean =
        std::max(0.0, wall_ms - busy_ms) / double(params.output_len);
    result.device_busy_ms_mean = busy_ms / double(params.output_len);
    result.device_idle_fraction =
        wall_ms > 0 ? std::clamp(1.0 - busy_ms / wall_ms, 0.0, 1.0) : 0.0;
  }

  const double b = double(params.batch_size);
  result.prefill_tokens_per_s =
      result.prefill_seconds > 0
          ? b * double(params.input_len) / result.prefill_seconds
          : 0.0;
  result.decode_tokens_per_s =
      result.decode_seconds > 0
          ? b * double(params.output_len) / result.decode_seconds
          : 0.0;
  double total_ms = 0.0;
  for (double ms : step_ms) total_ms += ms;
  result.step_ms_mean = total_ms / double(step_ms.size());
  std::sort(step_ms.begin(), step_ms.end());
  result.step_ms_p50 = Percentile(step_ms, 0.50);
  result.step_ms_p99 = Percentile(step_ms, 0.99);

  // Step s attends over input_len + s + 1 positions.
  result.mean_context =
      double(params.input_len) + double(params.output_len + 1) / 2.0;
  const kv::KvPoolOptions& kv = pool.options();
  const double kv_bytes_per_token =
      2.0 * double(kv.num_layers) * double(kv.num_kv_heads) *
      double(kv.head_dim) * double(DTypeSize(kv.dtype));
  result.weight_bytes = runner.weights().step_bytes();
  result.kv_bytes_per_step =
      uint64_t(std::llround(b * kv_bytes_per_token * result.mean_context));
  result.bytes_per_step = result.weight_bytes + result.kv_bytes_per_step;
  return result;
}

void ApplyRoofline(OneBatchResult& result, double read_gbps) {
  if (read_gbps <= 0 || result.bytes_per_step == 0) return;
  const double roofline = read_gbps * 1e9 / double(result.bytes_per_step) *
                          double(result.params.batch_size);
  result.roofline_tokens_per_s = roofline;
  result.roofline_fraction = result.decode_tokens_per_s / roofline;
}

nlohmann::ordered_json OneBatchResultToJson(const OneBatchResult& r) {
  auto optional = [](const std::optional<double>& v) {
    return v ? nlohmann::ordered_json(*v) : nlohmann::ordered_json(nullptr);
  };
  nlohmann::ordered_json out = {
      {"batch_size", r.params.batch_size},
      {"overlap", r.params.overlap},
      {"input_len", r.params.input_len},
      {"output_len", r.params.output_len},
      {"prefill_seconds", r.prefill_seconds},
      {"prefill_tokens_per_s", r.prefill_tokens_per_s},
      {"decode_seconds", r.decode_seconds},
      {"decode_tokens_per_s", r.decode_tokens_per_s},
      {"step_ms",
       {{"mean", r.step_ms_mean},
        {"p50", r.step_ms_p50},
        {"p99", r.step_ms_p99}}},
      {"host_ms_mean", r.host_ms_mean},
      {"device_busy_ms_mean", optional(r.device_busy_ms_mean)},
      {"device_idle_fraction", optional(r.device_idle_fraction)},
      {"outside_kernels_ms_mean", optional(r.outside_kernels_ms_mean)},
      {"mean_context", r.mean_context},
      {"weight_bytes", r.weight_bytes},
      {"kv_bytes_per_step", r.kv_bytes_per_step},
      {"bytes_per_step", r.bytes_per_step},
  };
  if (r.roofline_tokens_per_s) {
    out["roofline_tokens_per_s"] = *r.roofline_tokens_per_s;
    out["roofline_fraction"] = *r.roofline_fraction;
  } else {
    out["roofline_tokens_per_s"] = nullptr;
    out["roofline_fraction"] = nullptr;
  }
  return out;
}

}  // namespace tessera::cli
