// `tessera serve [--model-path DIR] [--host 127.0.0.1] [--port 30000]
// [--served-model-name NAME] [--api-key KEY] [--chat-template FILE]
// [--context-length N] [--page-size 16] [--max-total-tokens N |
// --mem-fraction-static F] [--chunked-prefill-size 2048]
// [--max-running-requests 256] [--max-queued-requests N]
// [--schedule-policy lpm|fcfs] [--disable-radix-cache]
// [--enable-hierarchical-cache [--hicache-ratio 2 | --hicache-size GB]
//  [--hicache-mem-layout page_first|layer_first]
//  [--hicache-write-policy write_through|write_through_selective|write_back]]
// [--max-inflight-launches 2 | --disable-overlap-schedule]
// [--graph-max-bs 160 | --disable-graph] (SGLang's --cuda-graph-max-bs and
// --disable-cuda-graph are accepted as aliases)
// [--reasoning-parser qwen3] [--tool-call-parser qwen] [--is-embedding]
// [--dtype auto|float32|bfloat16] [--cpu-threads N] [--log-interval S]
// [--shutdown-grace S] [--platform NAME | --device-plugin PATH]`
//
// Flags follow SGLang's launch_server spelling. Without --model-path the
// built-in demo model is served: a make-model `tiny` Qwen3 checkpoint
// (random weights, byte-level tokenizer, ChatML template) written once
// under <build>/demo-model and served as "tessera-demo".
//
// KV pool size: --max-total-tokens, else --mem-fraction-static (of the
// device's memory, minus the weights, as SGLang), else a quarter of the
// device's memory capped at 32 x the context length.
//
// Start-up: model → runtime → runner → engine (warm-up) → HTTP; the log
// says "listening on http://HOST:PORT" when /health turns 200. SIGTERM or
// SIGINT: /health answers 503, new requests 503, running ones get
// --shutdown-grace seconds to finish, the rest are aborted, exit 0.
// Exit codes: 0 clean shutdown; 2 bad flags, model or port; 1 runtime
// failure.
#include <fmt/format.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <mutex>
#include <thread>

#include "base/logging.h"
#include "cli/command.h"
#include "cli/cli_io.h"
#include "cli/disagg_flags.h"
#include "cli/hicache_flags.h"
#include "prompt/prompt_tools.h"
#include "cli/model_loading.h"
#include "cli/runtime_start.h"
#include "cli/tp_launch.h"
#include "cli/tp_nodes.h"
#include "engine/engine.h"
#include "metrics/process_metrics.h"
#include "metrics/registry.h"
#include "metrics/serving_metrics.h"
#include "model/checkpoint.h"
#include "model/demo_model.h"
#include "model/model_runner.h"
#include "model/pooling_config.h"
#include "parsers/reasoning_parser.h"
#include "parsers/tool_call_parser.h"
#include "server/cors.h"
#include "server/http_server.h"
#include "server/serving_context.h"

namespace tessera::cli {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

constexpr const char* kDemoName = "tessera-demo";

struct ServeOptions {
  std::string model_path;
  std::string chat_template;
  server::ServerOptions server;
  int64_t context_length = 0;
  int32_t page_size = 16;
  int64_t max_total_tokens = 0;
  double mem_fraction_static = 0;
  int64_t chunked_prefill_size = 2048;
  int64_t max_running_requests = 256;
  int64_t max_queued_requests = 0;
  std::string schedule_policy = "lpm";
  bool disable_radix_cache = false;
  bool is_embedding = false;
  int64_t max_inflight_launches = 2;
  bool disable_overlap_schedule = false;
  bool disable_graph = false;
  bool disable_copy_stream = false;
  int64_t graph_max_bs = 160;
  std::string dtype = "auto";
  std::string quantization = "auto";
  std::string kv_cache_dtype = "auto";
  int cpu_threads = 0;
  double log_interval = 5.0;
  double shutdown_grace = 30.0;
  runtime::RuntimeFlags flags;
  TpFlags tp;
  HiCacheFlags hicache;
  DisaggFlags disagg;
};

std::string ExecutableDir() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string(".") : exe.parent_path().string();
}

// The demo checkpoint, written on first use next to the build's bin/
// (model/demo_model.h: safe when several servers start at once).
StatusOr<std::string> EnsureDemoModel() {
  return model::EnsureDemoModel(
      (fs::path(ExecutableDir()) / ".." / "demo-model").string());
}

uint64_t WeightFileBytes(const std::string& dir) {
  uint64_t total = 0;
  std::error_code ec;
  if (fs::is_regular_file(dir, ec)) return fs::file_size(dir, ec);  // GGUF
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (e.path().extension() == ".safetensors") total += e.file_size(ec);
  }
  return total;
}

// What storage-tier keys say about the weights: the config text, the
// weight files' total size and the dtype / quantization flags (the KV
// geometry is added by the cache).
std::string ModelIdentityText(const ServeOptions& o,
                              const model::Checkpoint& checkpoint) {
  std::string config;
  if (checkpoint.is_gguf()) {
    config = model::ModelConfigToJson(checkpoint.config());
  } else if (std::ifstream in(fs::path(checkpoint.dir()) / "config.json"); in) {
    config.assign(std::istreambuf_iterator<char>(in),
                  std::istreambuf_iterator<char>());
  }
  return fmt::format("{}|{}|{}|{}|{}", config,
                     WeightFileBytes(checkpoint.dir()), o.dtype,
                     o.quantization, o.kv_cache_dtype);
}

Status CheckFlags(const ServeOptions& o) {
  if (o.max_total_tokens < 0 || o.mem_fraction_static < 0 ||
      o.mem_fraction_static >= 1.0) {
    return InvalidArgumentError(
        "--max-total-tokens must be positive and --mem-fraction-static in "
        "(0, 1)");
  }
  if (o.page_size < 1) return InvalidArgumentError("--page-size must be >= 1");
  if (o.server.port < 0 || o.server.port > 65535) {
    return InvalidArgumentError("--port must be in [0, 65535]");
  }
  if (o.dtype != "auto" && o.dtype != "float32" && o.dtype != "bfloat16") {
    return InvalidArgumentError("--dtype must be auto, float32 or bfloat16");
  }
  if (!o.server.reasoning_parser.empty()) {
    TSR_RETURN_IF_ERROR(
        parsers::ReasoningParser::Create(o.server.reasoning_parser, false)
            .status()
            .WithContext("--reasoning-parser"));
  }
  if (!o.server.tool_call_parser.empty()) {
    TSR_RETURN_IF_ERROR(
        parsers::ToolCallParser::Create(o.server.tool_call_parser, {})
            .status()
            .WithContext("--tool-call-parser"));
  }
  TSR_RETURN_IF_ERROR(o.hicache.ToOptions().status());
  TSR_RETURN_IF_ERROR(o.disagg.Check());
  return engine::ParseSchedulePolicy(o.schedule_policy).status();
}

// Blocks SIGTERM/SIGINT in every thread started after this; a watcher
// thread takes them with sigwait.
sigset_t TerminationSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  return set;
}

void WireMetrics(engine::Engine& engine, metrics::ServingMetrics& m) {
  engine.SetTimingObserver([&m](const engine::RequestTiming& t) {
    m.num_requests().Inc();
    if (t.aborted) m.num_aborted_requests().Inc();
    m.prompt_tokens().Inc(static_cast<double>(t.prompt_tokens));
    m.generation_tokens().Inc(static_cast<double>(t.completion_tokens));
    m.cached_tokens().Inc(static_cast<double>(t.cached_tokens));
    m.queue_time().Observe(t.queue_s);
    if (t.ttft_s >= 0) m.time_to_first_token().Observe(t.ttft_s);
    for (double itl : t.itl_s) m.inter_token_latency().Observe(itl);
    m.e2e_request_latency().Observe(t.e2e_s);
  });
}

// Everything `serve` builds after the HTTP port is open, in build order
// (destroyed in reverse: the engine stops before the runner it drives).
struct LoadedModel {
  std::unique_ptr<prompt::PromptTools> prompts;
  std::unique_ptr<model::Checkpoint> checkpoint;
  std::unique_ptr<runtime::Runtime> runtime;
  // Destroyed after the runner and the engine that use its communicator.
  std::unique_ptr<TpGroup> tp;
  std::unique_ptr<model::ModelRunner> runner;
  // PD disaggregation's KV sender / receiver: used by the engine, so built
  // before it and destroyed after it.
  DisaggSide disagg;
  std::unique_ptr<engine::Engine> engine;
  std::unique_ptr<metrics::Registry> registry;
  std::unique_ptr<metrics::ServingMetrics> metrics;
};

// The tokens one forward pass may take.
int64_t MaxBatchTokens(const ServeOptions& o) {
  return std::clamp<int64_t>(o.chunked_prefill_size > 0 ? o.chunked_prefill_size : 2048, 64,
                             4096);
}

// What every worker rank must build (the KV pool size is rank 0's to set).
TpRunnerSpec TpSpecOf(const ServeOptions& o) {
  TpRunnerSpec spec;
  spec.model_path = o.model_path;
  spec.dtype = o.dtype;
  spec.kv_cache_dtype = o.kv_cache_dtype;
  spec.quantization = o.quantization;
  spec.page_size = o.page_size;
  spec.max_batch_tokens = MaxBatchTokens(o);
  spec.cpu_threads = o.cpu_threads;
  spec.flags = o.flags;
  return spec;
}

// Loads the model and starts the engine; on failure returns the exit code
// after printing the error.
int LoadModel(ServeOptions& o, bool demo, LoadedModel& m) {
  // The tokenizer (~0.4 s for a 151k-token vocabulary) builds on its own
  // thread while the checkpoint opens and the weights load; where both the
  // tokenizer and the checkpoint are bad, the tokenizer's error is the one
  // reported, as when it loaded first.
  std::future<StatusOr<std::unique_ptr<prompt::PromptTools>>> prompts_ready =
      std::async(std::launch::async, [&model_path = o.model_path,
                                      &chat_template = o.chat_template] {
        return prompt::PromptTools::Load(model_path, chat_template);
      });
  auto checkpoint = model::Checkpoint::Open(o.model_path);
  if (!checkpoint.ok()) {
    auto prompts = prompts_ready.get();
    if (!prompts.ok()) return ReportError(prompts.status(), kExitBadInput);
    return ReportError(checkpoint.status(), kExitBadInput);
  }
  m.checkpoint = std::move(*checkpoint);
  const model::ModelConfig& config = m.checkpoint->config();

  const int tp_size = o.tp.tp_size;
  if (Status tp = PrepareTp(o.tp); !tp.ok()) return ReportError(tp, kExitBadInput);
  if (tp_size > 1 && o.cpu_threads == 0) o.cpu_threads = TpRankThreads(o.tp);
  if (o.cpu_threads > 0) {
    o.flags.cpu_plugin_options.push_back(
        {"threads", std::to_string(o.cpu_threads), "--cpu-threads"});
  }
  auto rt = StartUsableRuntime(o.flags);
  if (!rt.ok()) return ReportError(rt.status(), kExitBadInput);
  m.runtime = std::move(*rt);

  model::ModelRunnerOptions ro;
  ro.page_size = o.page_size;
  if (o.dtype == "float32") ro.activation_dtype = TSR_DTYPE_F32;
  if (o.dtype == "bfloat16") ro.activation_dtype = TSR_DTYPE_BF16;
  ApplyQuantizationFlag(o.quantization, *m.checkpoint, &ro);
  ApplyKvCacheDtypeFlag(o.kv_cache_dtype, &ro);
  const int64_t context =
      o.context_length > 0 ? o.context_length : config.max_position_embeddings;
  // The device rank 0 runs on (--base-gpu-id under tensor parallelism).
  const int tp_size_for_memory = std::max(1, o.tp.tp_size);
  const int memory_device =
      tp_size_for_memory > 1 ? TpDevice(o.tp, 0) : 0;
  if (memory_device >= m.runtime->num_devices()) {
    return ReportError(InvalidArgumentError(fmt::format(
                           "--base-gpu-id puts rank 0 on device {}, but the {} "
                           "plugin has {} device(s)",
                           memory_device, m.runtime->plugin().name(),
                           m.runtime->num_devices())),
                       kExitBadInput);
  }
  const uint64_t device_memory =
      m.runtime->device(memory_device).properties().memory_total;
  if (o.max_total_tokens > 0) {
    ro.kv_capacity_tokens = o.max_total_tokens;
  } else if (o.mem_fraction_static > 0 && tp_size_for_memory == 1) {
    // The runner measures what the weights take on the device.
    ro.kv_memory_fraction = o.mem_fraction_static;
    ro.kv_capacity_tokens = 0;
  } else if (o.mem_fraction_static > 0) {
    // Every rank must hold the same tokens, decided before the ranks load:
    // each rank's share of the weight files stands for its weights.
    const double budget = o.mem_fraction_static * double(device_memory) -
                          double(WeightFileBytes(o.model_path)) / tp_size_for_memory;
    if (budget <= 0) {
      return ReportError(
          InvalidArgumentError(fmt::format(
              "--mem-fraction-static {} of {:.1f} GiB leaves no room for the "
              "KV cache after the weights; raise it or use "
              "--max-total-tokens",
              o.mem_fraction_static, device_memory / 1073741824.0)),
          kExitBadInput);
    }
    ro.kv_memory_budget_bytes = static_cast<uint64_t>(budget);
    ro.kv_capacity_tokens = 0;
  } else {
    const DType kv_dtype = ro.kv_cache_dtype.value_or(ro.activation_dtype.value_or(
        config.torch_dtype == "float32" ? TSR_DTYPE_F32 : TSR_DTYPE_BF16));
    const uint64_t per_token = 2ull * config.num_hidden_layers *
                               config.num_key_value_heads * config.head_dim *
                               DTypeSize(kv_dtype);
    const uint64_t by_memory =
        device_memory / 4 / std::max<uint64_t>(per_token, 1);
    ro.kv_capacity_tokens = static_cast<int64_t>(
        std::min<uint64_t>(by_memory, 32ull * static_cast<uint64_t>(context)));
  }
  ro.max_batch_tokens = MaxBatchTokens(o);
  // Decode graphs for batch buckets up to --graph-max-bs, capped by
  // --max-running-requests (no batch is larger).
  ro.graph_max_batch =
      o.disable_graph ? 0 : std::min(o.graph_max_bs, o.max_running_requests);
  ro.copy_stream = !o.disable_copy_stream;
  ro.graph_capture_context = context;  // every graph captured at start-up
  std::optional<model::PoolingConfig> pooling;
  if (o.is_embedding) {
    auto p = model::LoadPoolingConfig(o.model_path);
    if (!p.ok()) return ReportError(p.status(), kExitBadInput);
    pooling = *p;
    ro.embedding_only = true;
    ro.graph_max_batch = 0;  // no decode steps
    TSR_LOG_INFO("embedding model: {} pooling{}",
                 model::PoolingModeName(pooling->mode),
                 pooling->normalize ? ", normalized" : "");
  }
  const auto load_start = std::chrono::steady_clock::now();
  if (tp_size > 1) {
    ro.device = TpDevice(o.tp, 0);
    if (ro.kv_memory_budget_bytes > 0) {
      // Every rank's pool holds the same tokens: the budget over this
      // rank's share of the KV heads, as an explicit capacity.
      auto shard = model::PlanTpShard(config, 0, tp_size);
      if (!shard.ok()) return ReportError(shard.status(), kExitBadInput);
      const DType kv_dtype = ro.kv_cache_dtype.value_or(ro.activation_dtype.value_or(
          config.torch_dtype == "float32" ? TSR_DTYPE_F32 : TSR_DTYPE_BF16));
      const uint64_t per_token = 2ull * config.num_hidden_layers * shard->kv_heads *
                                 config.head_dim * DTypeSize(kv_dtype);
      ro.kv_capacity_tokens =
          static_cast<int64_t>(ro.kv_memory_budget_bytes / std::max<uint64_t>(per_token, 1));
      ro.kv_memory_budget_bytes = 0;
    }
    TpRunnerSpec spec = TpSpecOf(o);
    spec.kv_tokens = ro.kv_capacity_tokens;
    auto group = TpGroup::Start(*m.runtime, o.tp, spec);
    if (!group.ok()) return ReportError(group.status(), kExitBadInput);
    m.tp = std::move(*group);
    ro.comm = &m.tp->comm();
  }
  auto runner = model::ModelRunner::Create(*m.runtime, *m.checkpoint, ro);
  if (!runner.ok()) {
    return ReportError(runner.status(), ModelFailureCode(runner.status()));
  }
  m.runner = std::move(*runner);
  if (m.tp != nullptr) {
    if (Status ready = m.tp->AwaitReady(*m.runner, o.model_path); !ready.ok()) {
      return ReportError(ready, kExitRuntimeFailure);
    }
  }

  engine::EngineOptions eo;
  eo.tp = m.tp != nullptr ? &m.tp->leader() : nullptr;
  eo.context_length = context;
  eo.chunked_prefill_size = o.chunked_prefill_size;
  eo.max_running_requests = o.max_running_requests;
  eo.max_queued_requests = o.max_queued_requests;
  eo.policy = *engine::ParseSchedulePolicy(o.schedule_policy);
  eo.disable_radix_cache = o.disable_radix_cache;
  eo.hicache = *o.hicache.ToOptions();
  eo.hicache.model_identity = ModelIdentityText(o, *m.checkpoint);
  eo.max_inflight_launches =
      o.disable_overlap_schedule ? 1 : o.max_inflight_launches;
  eo.log_interval_s = o.log_interval;
  auto prompts = prompts_ready.get();
  if (!prompts.ok()) return ReportError(prompts.status(), kExitBadInput);
  m.prompts = std::move(*prompts);
  eo.eos_ids = EosIds(*m.checkpoint, m.prompts->tokenizer());
  eo.disagg_mode = o.disagg.Mode();
  eo.pooling = pooling;
  if (eo.disagg_mode != engine::DisaggMode::kNull) {
    const std::string fingerprint = fmt::format(
        "{} layers={} hidden={} vocab={} weights={}B dtype={} quant={}",
        model::ArchitectureClassName(config.architecture),
        config.num_hidden_layers, config.hidden_size, config.vocab_size,
        WeightFileBytes(m.checkpoint->dir()), o.dtype, o.quantization);
    auto side = StartDisaggregation(o.disagg, m.runner->kv_pool(), fingerprint,
                                    tp_size, o.server.host);
    if (!side.ok()) return ReportError(side.status(), kExitBadInput);
    m.disagg = std::move(*side);
    eo.kv_sender = m.disagg.sender.get();
    eo.kv_receiver = m.disagg.receiver.get();
  }
  auto engine = engine::Engine::Create(*m.runner, m.prompts->tokenizer(), eo);
  if (!engine.ok()) {
    return ReportError(engine.status(), ModelFailureCode(engine.status()));
  }
  m.engine = std::move(*engine);

  m.registry = std::make_unique<metrics::Registry>();
  auto serving_metrics = metrics::ServingMetrics::Create(
      m.registry.get(), o.server.served_model_name);
  if (!serving_metrics.ok()) {
    return ReportError(serving_metrics.status(), kExitRuntimeFailure);
  }
  m.metrics =
      std::make_unique<metrics::ServingMetrics>(std::move(*serving_metrics));
  WireMetrics(*m.engine, *m.metrics);
  if (Status process = metrics::RegisterProcessMetrics(m.registry.get());
      !process.ok()) {
    return ReportError(process, kExitRuntimeFailure);
  }
  runtime::Runtime& runtime = *m.runtime;
  (void)metrics::RegisterDeviceMemoryMetrics(m.registry.get(), [&runtime] {
    std::vector<metrics::DeviceMemoryRow> rows;
    runtime::Plugin& plugin = runtime.plugin();
    for (int d = 0; d < runtime.num_devices(); ++d) {
      auto f = plugin.MemoryFigures(d);
      if (!f.ok()) continue;  // a failing entry drops the row, not the scrape
      rows.push_back({plugin.name(), d, f->from_plugin ? "plugin" : "host",
                      f->in_use_bytes, f->peak_bytes, f->limit_bytes});
    }
    return rows;
  });
  (void)metrics::RegisterOpFallbackMetric(m.registry.get(), [&runtime] {
    std::vector<metrics::OpFallbackCount> out;
    for (const auto& c : runtime.dispatcher().Counters()) {
      out.push_back({c.op, c.plugin, c.fallbacks});
    }
    return out;
  });

  if (eo.hicache.enabled) {
    engine::Engine* e = m.engine.get();
    (void)metrics::RegisterCacheTierMetrics(m.registry.get(), [e] {
      const engine::EngineStats st = e->Stats();
      metrics::CacheTierSnapshot snap;
      snap.tiers.push_back(
          {"device",
           static_cast<double>(std::max<int64_t>(
               0, st.cached_tokens_total - st.host_hit_tokens_total)),
           static_cast<double>(st.kv_cached_tokens),
           static_cast<double>(st.kv_capacity_tokens)});
      snap.tiers.push_back({"host", static_cast<double>(st.host_hit_tokens_total),
                            static_cast<double>(st.host_cached_tokens),
                            static_cast<double>(st.host_capacity_tokens)});
      snap.transfers.push_back(
          {"backup", static_cast<double>(st.hicache_backup_bytes_total),
           st.hicache_backup_seconds_total,
           static_cast<double>(st.hicache_backup_pages_total)});
      snap.transfers.push_back(
          {"load", static_cast<double>(st.hicache_load_bytes_total),
           st.hicache_load_seconds_total,
           static_cast<double>(st.hicache_load_pages_total)});
      snap.transfer_failures =
          static_cast<double>(st.hicache_transfer_failures_total);
      if (st.storage_enabled) {
        const double ps = static_cast<double>(e->runner().kv_pool().page_size());
        snap.tiers.push_back(
            {"storage", static_cast<double>(st.storage_hit_tokens_total),
             st.storage_objects < 0 ? -1.0
                                    : static_cast<double>(st.storage_objects) * ps,
             -1.0});
        snap.transfers.push_back(
            {"storage_write", static_cast<double>(st.storage_bytes_written_total),
             0.0, static_cast<double>(st.storage_pages_written_total)});
        snap.transfers.push_back(
            {"storage_read", static_cast<double>(st.storage_bytes_read_total),
             st.storage_read_seconds_total,
             static_cast<double>(st.storage_pages_read_total)});
        snap.transfer_failures += static_cast<double>(
            st.storage_failures_total + st.storage_corrupt_pages_total);
      }
      return snap;
    });
  }

  const runtime::Device& device = m.runner->device();
  o.server.info = Json{{"version", TESSERA_VERSION},
                       {"plugin", runtime.plugin().name()},
                       {"device", device.Label()},
                       {"dtype", DTypeName(m.runner->activation_dtype())},
                       {"tp_size", tp_size},
                       {"disaggregation_mode", o.disagg.mode},
                       {"disaggregation_bootstrap_port", m.disagg.bootstrap_port},
                       {"architecture", model::ArchitectureClassName(
                                            config.architecture)},
                       {"demo_model", demo},
                       {"is_embedding", o.is_embedding}};
  if (pooling) {
    o.server.info["pooling"] = model::PoolingModeName(pooling->mode);
    o.server.info["normalize"] = pooling->normalize;
  }
  // Changes when anything that can change outputs does (OpenAI's meaning).
  o.server.system_fingerprint = fmt::format(
      "fp_{:010x}",
      std::hash<std::string>{}(fmt::format(
          "{}|{}|{}|{}|{}", o.server.info.dump(), o.model_path,
          o.quantization, o.kv_cache_dtype, o.chat_template)) &
          0xffffffffffull);
  TSR_LOG_INFO(
      "model {} ({}, {} layers, {}) on {} ({}), KV cache {} tokens in pages "
      "of {}, loaded and warmed up in {:.1f} s",
      o.server.served_model_name,
      model::ArchitectureClassName(config.architecture),
      config.num_hidden_layers, DTypeName(m.runner->activation_dtype()),
      device.Label(), runtime.plugin().name(), m.runner->kv_pool().num_slots(),
      o.page_size,
      std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                    load_start)
          .count());
  return kExitOk;
}

int RunServe(ServeOptions o) {
  // Block SIGTERM/SIGINT before any thread starts (HTTP workers, plugin
  // workers, the scheduler inherit the mask); the watcher thread below
  // takes them with sigwait.
  sigset_t signals = TerminationSignals();
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  if (Status origins = server::NormalizeAllowedOrigins(
          &o.server.allowed_origins);
      !origins.ok()) {
    return ReportError(origins, kExitBadInput);
  }
  if (o.server.grammar_backend != "tessera" &&
      o.server.grammar_backend != "none") {
    TSR_LOG_INFO(
        "--grammar-backend {}: Tessera has its own grammar engine "
        "(src/grammar), which serves structured output instead",
        o.server.grammar_backend);
  }
  if (Status flags = CheckFlags(o); !flags.ok()) {
    return ReportError(flags, kExitBadInput);
  }
  const bool demo = o.model_path.empty();
  if (demo) {
    auto dir = EnsureDemoModel();
    if (!dir.ok()) return ReportError(dir.status(), kExitRuntimeFailure);
    o.model_path = *dir;
    if (o.server.served_model_name.empty()) {
      o.server.served_model_name = kDemoName;
    }
    TSR_LOG_INFO(
        "no --model-path: serving the built-in demo model '{}' (make-model "
        "preset tiny, random weights, from {}); pass --model-path for a "
        "real model",
        kDemoName, o.model_path);
  } else if (Status dir = prompt::CheckModelDir(o.model_path); !dir.ok()) {
    return ReportError(dir, kExitBadInput);
  }
  if (o.server.served_model_name.empty()) {
    o.server.served_model_name = o.model_path;
  }
  o.server.model_path = o.model_path;

  if (o.tp.nnodes > 1 && o.tp.node_rank > 0) {
    // Another node of a multi-node group: no server here, only ranks
    // (tp_nodes.h). A signal ends this process, and its ranks with it.
    pthread_sigmask(SIG_UNBLOCK, &signals, nullptr);
    if (Status tp = PrepareTp(o.tp); !tp.ok()) return ReportError(tp, kExitBadInput);
    if (o.cpu_threads == 0) o.cpu_threads = TpRankThreads(o.tp);
    return RunFollowerNode(o.tp, TpSpecOf(o));
  }

  // HTTP first, so /health answers 503 while the model loads.
  server::ServingContext ctx(o.server);
  server::HttpServer http(ctx);
  if (Status bound = http.Bind(); !bound.ok()) {
    return ReportError(bound, kExitBadInput);
  }
  std::atomic<bool> http_drained{true};
  std::thread http_thread([&http, &http_drained] {
    http_drained.store(http.Run());
  });
  TSR_LOG_INFO("listening on http://{}:{}", o.server.host, http.port());

  std::mutex stop_mu;
  bool stopped = false;
  engine::Engine* running_engine = nullptr;  // guarded by stop_mu
  std::thread watcher([&] {
    int sig = 0;
    sigwait(&signals, &sig);
    engine::Engine* engine = nullptr;
    {
      std::lock_guard<std::mutex> lock(stop_mu);
      if (stopped) return;
      stopped = true;
      engine = running_engine;
    }
    TSR_LOG_INFO("received {}: draining ({} s grace for running requests)",
                 sig == SIGINT ? "SIGINT" : "SIGTERM", o.shutdown_grace);
    ctx.draining.store(true);
    // Connections get the grace period and a little more to send what the
    // engine finishes or aborts; then what is left is closed.
    http.Stop(std::chrono::seconds(static_cast<int64_t>(o.shutdown_grace) + 5));
    if (engine != nullptr) engine->Shutdown(o.shutdown_grace);
  });
  auto stop_watcher = [&] {
    {
      std::lock_guard<std::mutex> lock(stop_mu);
      if (!stopped) {
        stopped = true;
        pthread_kill(watcher.native_handle(), SIGTERM);
      }
    }
    watcher.join();
  };

  LoadedModel m;
  const int loaded = LoadModel(o, demo, m);
  bool stop_now = loaded != kExitOk;
  {
    std::lock_guard<std::mutex> lock(stop_mu);
    stop_now = stop_now || stopped;
    if (!stop_now) running_engine = m.engine.get();
  }
  if (stop_now) {
    http.Stop(std::chrono::seconds(2));
    http_thread.join();
    stop_watcher();
    if (m.engine) m.engine->Shutdown(0);
    return loaded;
  }
  ctx.engine = m.engine.get();
  ctx.prompts = m.prompts.get();
  ctx.registry = m.registry.get();
  ctx.metrics = m.metrics.get();
  ctx.ready.store(true, std::memory_order_release);
  TSR_LOG_INFO("ready: http://{}:{} serves '{}'", o.server.host, http.port(),
               o.server.served_model_name);

  // Tensor parallelism: a worker rank that exits takes the model with it.
  // In-flight requests fail on their next collective (the plugin notices
  // the dead peer); /health turns 503 and the server shuts down, exiting 1.
  std::atomic<bool> monitor_stop{false};
  std::string tp_failure;  // written by the monitor before it signals
  std::thread tp_monitor;
  if (m.tp != nullptr) {
    tp_monitor = std::thread([&] {
      while (!monitor_stop.load()) {
        if (auto exit = m.tp->PollExited()) {
          tp_failure = fmt::format("tensor-parallel rank {} exited ({}) while serving",
                                   exit->rank,
                                   RankProcesses::DescribeWaitStatus(exit->wait_status));
          TSR_LOG_ERROR("{}; shutting down", tp_failure);
          ctx.ready.store(false, std::memory_order_release);
          std::lock_guard<std::mutex> lock(stop_mu);
          if (!stopped) pthread_kill(watcher.native_handle(), SIGTERM);
          return;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    });
  }

  http_thread.join();  // returns after Stop, once connections are closed
  monitor_stop.store(true);
  if (tp_monitor.joinable()) tp_monitor.join();
  stop_watcher();
  if (!http_drained.load()) {
    // A handler is stuck (it cannot be interrupted); its thread still uses
    // the engine and the context, so exit without destroying them.
    TSR_LOG_WARN("exiting with HTTP handlers still running");
    std::fflush(nullptr);
    std::_Exit(kExitOk);
  }
  m.engine->Shutdown(0);
  if (!tp_failure.empty()) {
    return ReportError(UnavailableError(tp_failure +
                                        "; see that rank's message above (killed, out of "
                                        "memory, or a device failure)"),
                       kExitRuntimeFailure);
  }
  TSR_LOG_INFO("server stopped");
  return kExitOk;
}

}  // namespace

Command AddServeCommand(CLI::App& root) {
  Command command;
  command.app = root.add_subcommand(
      "serve",
      "serve a model over HTTP: OpenAI-compatible /v1/completions, "
      "/v1/chat/completions, /v1/models and native /generate, /metrics, ...");
  auto o = std::make_shared<ServeOptions>();
  CLI::App* app = command.app;
  app->add_option("--model-path", o->model_path,
                  "Hugging Face model directory (default: the built-in "
                  "demo model)");
  app->add_option("--host", o->server.host, "address to listen on")
      ->capture_default_str();
  app->add_option("--port", o->server.port, "port (0: any free port)")
      ->capture_default_str();
  app->add_option("--served-model-name", o->server.served_model_name,
                  "the model id of /v1/models (default: the model path)");
  app->add_option("--api-key", o->server.api_key,
                  "require 'Authorization: Bearer KEY'");
  app->add_option("--chat-template", o->chat_template,
                  "a Jinja file (or tokenizer_config.json) replacing the "
                  "model's chat template");
  app->add_option("--context-length", o->context_length,
                  "context length (default: the model's)");
  app->add_option("--page-size", o->page_size, "KV slots per page")
      ->capture_default_str();
  app->add_option("--max-total-tokens", o->max_total_tokens,
                  "KV cache pool size in tokens");
  app->add_option("--mem-fraction-static", o->mem_fraction_static,
                  "fraction of device memory for weights + KV cache");
  app->add_option("--chunked-prefill-size", o->chunked_prefill_size,
                  "most tokens per step (prefill chunks + decode); <= 0 "
                  "disables chunking")
      ->capture_default_str();
  app->add_option("--max-running-requests", o->max_running_requests,
                  "most sequences in a batch")
      ->capture_default_str();
  app->add_option("--max-queued-requests", o->max_queued_requests,
                  "most waiting requests before 503 (0: unlimited)")
      ->capture_default_str();
  app->add_option("--schedule-policy", o->schedule_policy, "lpm or fcfs")
      ->capture_default_str();
  app->add_flag("--disable-radix-cache", o->disable_radix_cache,
                "turn the prefix cache off");
  app->add_flag("--is-embedding", o->is_embedding,
                "serve an embedding model: POST /v1/embeddings, pooled as the "
                "model's modules.json says (default: last token, normalized); "
                "the generation routes answer 400");
  AddHiCacheFlags(app, &o->hicache);
  AddDisaggFlags(app, &o->disagg);
  app->add_option("--max-inflight-launches", o->max_inflight_launches,
                  "steps launched before the host postprocesses the oldest: "
                  "2 overlaps the host's work with the device's, 1 is the "
                  "serial loop")
      ->capture_default_str();
  app->add_flag("--disable-overlap-schedule", o->disable_overlap_schedule,
                "the serial loop (same as --max-inflight-launches 1)");
  app->add_flag("--disable-graph,--disable-cuda-graph", o->disable_graph,
                "run every decode step eagerly instead of replaying the "
                "graph captured for its batch-size bucket");
  app->add_flag("--disable-copy-stream", o->disable_copy_stream,
                "run uploads and the sampled ids' read-back on the compute "
                "stream instead of a copy stream (for A/B measurements)");
  app->add_option("--graph-max-bs,--cuda-graph-max-bs", o->graph_max_bs,
                  "largest batch-size bucket with a decode graph (buckets 1, "
                  "2, 4, 8, 16, 24, 32, then every 16; capped by "
                  "--max-running-requests)")
      ->capture_default_str();
  app->add_option("--reasoning-parser", o->server.reasoning_parser,
                  "split <think> blocks into reasoning_content (qwen3)");
  app->add_option("--tool-call-parser", o->server.tool_call_parser,
                  "turn <tool_call> blocks into tool_calls (qwen)");
  app->add_option("--dtype", o->dtype,
                  "activation and KV dtype: auto, float32, bfloat16")
      ->capture_default_str();
  AddQuantizationOption(app, &o->quantization);
  AddTpFlags(app, &o->tp, /*nodes=*/true);
  AddKvCacheDtypeOption(app, &o->kv_cache_dtype);
  app->add_option("--cpu-threads", o->cpu_threads,
                  "threads of the cpu plugin (default: all cores)");
  app->add_option("--log-interval", o->log_interval,
                  "seconds between status lines while busy (0: off)")
      ->capture_default_str();
  app->add_option("--shutdown-grace", o->shutdown_grace,
                  "seconds running requests get to finish after SIGTERM")
      ->capture_default_str();
  app->add_option("--http-threads", o->server.http_threads,
                  "threads running route handlers (parsing, tokenizing, chat "
                  "templates); connections and streams need none")
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));
  app->add_option("--max-connections", o->server.max_connections,
                  "most open HTTP connections; more are answered 503 at once")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  app->add_option("--http-read-timeout", o->server.http_read_timeout,
                  "seconds a client has to send a request's header (a new "
                  "connection's first request included)")
      ->capture_default_str()
      ->check(CLI::Range(1, 3600));
  app->add_option("--http-keep-alive-timeout",
                  o->server.http_keep_alive_timeout,
                  "seconds an idle keep-alive connection stays open")
      ->capture_default_str()
      ->check(CLI::Range(1, 3600));
  app->add_option("--grammar-backend", o->server.grammar_backend,
                  "structured output (response_format, regex, ebnf, "
                  "json_schema): tessera (built in) or none; SGLang's "
                  "xgrammar, outlines and llguidance select the built-in "
                  "engine")
      ->capture_default_str()
      ->check(CLI::IsMember({"tessera", "none", "xgrammar", "outlines",
                             "llguidance"}));
  app->add_option("--allowed-origins", o->server.allowed_origins,
                  "origins (scheme://host:port, or '*') browsers may call "
                  "the API from (CORS); also a JSON list as vLLM takes it. "
                  "Default: none (CORS off)")
      ->delimiter(',');
  app->add_option("--device-plugin", o->flags.device_plugin,
                  "use this plugin .so (beats TESSERA_DEVICE_PLUGIN)");
  app->add_option("--platform", o->flags.platform,
                  "use the plugin with this name, e.g. cpu (beats "
                  "TESSERA_PLATFORM)");
  command.run = [o] { return RunServe(*o); };
  return command;
}

}  // namespace tessera::cli
