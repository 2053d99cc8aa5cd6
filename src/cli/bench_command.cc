// `tessera bench`: two benchmarks.
//
// Serving (the default), in the manner of SGLang's bench_serving: loads a
// running OpenAI-compatible server (`tessera serve`) with streamed
// /v1/completions and reports TTFT, TPOT, ITL, E2E latency and throughput
// (src/bench/serving_bench.h). Flags, with SGLang's spelling:
//   [--base-url URL | --host H --port P] [--model NAME]
//   [--dataset-name random|shared-prefix (alias generated-shared-prefix)
//    |multi-turn] [--multi-turn-rounds R]
//   [--num-prompts N] [--random-input-len N] [--random-output-len N]
//   [--random-range-ratio R] [--gsp-num-groups G] [--gsp-prompts-per-group P]
//   [--gsp-system-prompt-len S] [--gsp-question-len Q] [--gsp-output-len O]
//   [--request-rate R|inf] [--max-concurrency C] [--warmup-requests N]
//   [--vocab-size V] [--seed S] [--json] [--output-file F] [--smoke]
// --smoke: 8 prompts of exactly input 32 / output 8 (range ratio 1) at
// concurrency 4 (shared-prefix: 2 groups x 4 prompts, system 32, question
// 8, output 8), each only when not given explicitly. Exit codes: 0 every request succeeded; 1 some failed
// (or the warm-up did), with the reasons on stderr; 2 bad flags or no ready
// server at the URL.
//
// `tessera bench --one-batch --model-path DIR [--batch-size 1,8,32]
// [--input-len 512] [--output-len 32] [--json] [--output-file F] [--smoke]
// [--no-bandwidth] [--bandwidth-bytes N] [--cpu-threads N] [--seed S]
// [--platform NAME | --device-plugin PATH]`: the model runner timed alone
// (bench_one_batch.h) for each batch size, serial and overlapped — tokens/s,
// step times, "host ms" (building and launching a step), "busy ms" (kernel
// time per step, where the plugin reports stream busy time) and "idle" (the
// device idle fraction, 1 - busy / wall) — with the memory roofline from a
// host read-bandwidth probe (read_bandwidth.h) run first in the same
// process unless --no-bandwidth.
//
// Output (both): a table on stdout, or with --json exactly one JSON object
// (one-batch: {model, plugin, device, dtype, bandwidth|null, results: [...]};
// serving: see ServingBenchReport); --output-file writes that object to a
// file as well. Progress goes to stderr only when stderr is a terminal.
// One-batch --smoke: input-len 16, output-len 4, batch sizes 1,2 and a
// 64 MiB probe (seconds on a tiny model), unless those flags are given.
//
// Flags of one benchmark given to the other are bad flags (exit 2).
// One-batch exit codes: 0 done; 2 bad input (flags, model directory,
// plugin choice, a KV pool too small); 1 the device or the model failed.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "bench/serving_bench.h"
#include "bench/soak.h"
#include "cli/bench_one_batch.h"
#include "cli/command.h"
#include "cli/cli_io.h"
#include "prompt/prompt_tools.h"
#include "cli/model_loading.h"
#include "cli/runtime_start.h"
#include "cli/tp_launch.h"
#include "cli/read_bandwidth.h"
#include "model/checkpoint.h"
#include "model/model_runner.h"
#include "runtime/runtime.h"

namespace tessera::cli {
namespace {

using Json = nlohmann::ordered_json;

struct BenchOptions {
  bool one_batch = false;
  bool disable_graph = false;
  bool disable_copy_stream = false;
  double soak_seconds = 0;  // > 0: the soak instead of the benchmark
  std::string model_path;
  std::vector<int64_t> batch_sizes = {1, 8, 32};
  int64_t input_len = 512;
  int64_t output_len = 32;
  uint64_t seed = 0;
  bool json = false;
  std::string output_file;
  bool smoke = false;
  bool no_bandwidth = false;
  uint64_t bandwidth_bytes = uint64_t{1} << 30;
  int cpu_threads = 0;
  std::string quantization = "auto";
  std::string kv_cache_dtype = "auto";
  TpFlags tp;
  runtime::RuntimeFlags flags;
  CLI::Option* batch_opt = nullptr;
  CLI::Option* input_opt = nullptr;
  CLI::Option* output_opt = nullptr;
  CLI::Option* bandwidth_bytes_opt = nullptr;

  // Serving benchmark (flags bound straight into the config).
  bench::ServingBenchConfig serving;
  std::string host = "127.0.0.1";
  int port = 30000;
  std::string request_rate = "inf";
  std::string extra_request_body;
  CLI::Option* base_url_opt = nullptr;
  CLI::Option* max_concurrency_opt = nullptr;
  CLI::Option* range_ratio_opt = nullptr;
  // --smoke sizes apply to each of these only when it was not given.
  struct SmokeDefault {
    CLI::Option* option;
    int64_t* value;
    int64_t smoke;
  };
  std::vector<SmokeDefault> smoke_defaults;

  // Flags that belong to one benchmark only.
  std::vector<CLI::Option*> one_batch_only;
  std::vector<CLI::Option*> serving_only;
};

int FailureCode(const Status& status) {
  switch (status.code()) {
    case StatusCode::kInvalidArgument:
    case StatusCode::kNotFound:
    case StatusCode::kUnimplemented:
    case StatusCode::kResourceExhausted:
      return kExitBadInput;
    default:
      return kExitRuntimeFailure;
  }
}

std::string TextTable(const Json& out) {
  std::string text;
  if (out["bandwidth"].is_object()) {
    text += fmt::format(
        "host read bandwidth: {:.2f} GB/s ({} threads, {} MiB; host memory, "
        "what the cpu plugin's decode is bound by)\n",
        out["bandwidth"]["read_gbps"].get<double>(),
        out["bandwidth"]["threads"].get<int>(),
        out["bandwidth"]["bytes"].get<uint64_t>() >> 20);
  }
  text += fmt::format(
      "model {} on {} ({}), {}, KV cache {}, layers {}, decode {}\n",
      out["model"].get<std::string>(), out["device"].get<std::string>(),
      out["plugin"].get<std::string>(), out["dtype"].get<std::string>(),
      out["kv_cache_dtype"].get<std::string>(),
      out["fused_decoder_layer"].get<bool>() ? "fused (decoder_layer)"
                                             : "op by op",
      out["graphs"].get<bool>() ? "graph replay" : "eager");
  text += fmt::format(
      "{:>5} {:>7} {:>6} {:>6} {:>12} {:>12} {:>9} {:>9} {:>9} {:>8} {:>8} "
      "{:>6} {:>12} {:>9}\n",
      "batch", "overlap", "in", "out", "prefill t/s", "decode t/s", "step ms",
      "p50 ms", "p99 ms", "host ms", "busy ms", "idle", "MB/step",
      "roofline");
  auto optional_ms = [](const Json& v) {
    return v.is_number() ? fmt::format("{:.3f}", v.get<double>())
                         : std::string("-");
  };
  for (const Json& r : out["results"]) {
    text += fmt::format(
        "{:>5} {:>7} {:>6} {:>6} {:>12.1f} {:>12.2f} {:>9.2f} {:>9.2f} "
        "{:>9.2f} {:>8.3f} {:>8} {:>6} {:>12.1f} {:>9}\n",
        r["batch_size"].get<int64_t>(), r["overlap"].get<bool>() ? "on" : "off",
        r["input_len"].get<int64_t>(),
        r["output_len"].get<int64_t>(), r["prefill_tokens_per_s"].get<double>(),
        r["decode_tokens_per_s"].get<double>(),
        r["step_ms"]["mean"].get<double>(), r["step_ms"]["p50"].get<double>(),
        r["step_ms"]["p99"].get<double>(), r["host_ms_mean"].get<double>(),
        optional_ms(r["device_busy_ms_mean"]),
        r["device_idle_fraction"].is_number()
            ? fmt::format("{:.1f}%",
                          100.0 * r["device_idle_fraction"].get<double>())
            : std::string("-"),
        double(r["bytes_per_step"].get<uint64_t>()) / 1e6,
        r["roofline_fraction"].is_number()
            ? fmt::format("{:.1f}%",
                          100.0 * r["roofline_fraction"].get<double>())
            : std::string("-"));
  }
  return text;
}

// Writes `json_text` to --output-file (when given) and prints the table or
// the JSON to stdout; kExitOk, or kExitBadInput when the file cannot be
// written.
int Emit(const BenchOptions& o, const std::string& json_text,
         const std::string& table) {
  if (!o.output_file.empty()) {
    std::ofstream file(o.output_file);
    file << json_text << "\n";
    if (!file.good()) {
      return ReportError(
          InvalidArgumentError(fmt::format(
              "cannot write --output-file {}; check the directory exists and "
              "is writable",
              o.output_file)),
          kExitBadInput);
    }
  }
  if (o.json) {
    fmt::print("{}\n", json_text);
  } else {
    fmt::print("{}", table);
  }
  std::fflush(stdout);
  return kExitOk;
}

int RunOneBatchBench(BenchOptions o) {
  if (o.model_path.empty()) {
    return ReportError(
        InvalidArgumentError("--one-batch needs --model-path DIR (a Hugging "
                             "Face model folder)"),
        kExitBadInput);
  }
  if (o.smoke) {
    if (o.batch_opt->count() == 0) o.batch_sizes = {1, 2};
    if (o.input_opt->count() == 0) o.input_len = 16;
    if (o.output_opt->count() == 0) o.output_len = 4;
    if (o.bandwidth_bytes_opt->count() == 0) o.bandwidth_bytes = 64u << 20;
  }
  if (o.batch_sizes.empty() ||
      std::any_of(o.batch_sizes.begin(), o.batch_sizes.end(),
                  [](int64_t b) { return b < 1; })) {
    return ReportError(
        InvalidArgumentError("--batch-size takes a comma-separated list of "
                             "sizes >= 1, e.g. 1,8,32"),
        kExitBadInput);
  }
  if (o.input_len < 1 || o.output_len < 1) {
    return ReportError(
        InvalidArgumentError(
            fmt::format("--input-len {} and --output-len {} must be at least 1",
                        o.input_len, o.output_len)),
        kExitBadInput);
  }
  const bool progress = ::isatty(STDERR_FILENO) == 1;

  // The probe first, while the model's weights are not yet competing for
  // the memory and the cores.
  std::optional<ReadBandwidthResult> bandwidth;
  if (!o.no_bandwidth) {
    if (progress) fmt::print(stderr, "measuring host read bandwidth...\n");
    ReadBandwidthOptions bw;
    bw.bytes = o.bandwidth_bytes;
    bw.threads = o.cpu_threads;
    auto measured = MeasureReadBandwidth(bw);
    if (!measured.ok()) {
      return ReportError(measured.status(), FailureCode(measured.status()));
    }
    bandwidth = *measured;
  }

  auto checkpoint = model::Checkpoint::Open(o.model_path);
  if (!checkpoint.ok()) return ReportError(checkpoint.status(), kExitBadInput);
  if (Status tp = PrepareTp(o.tp); !tp.ok()) return ReportError(tp, kExitBadInput);
  const int tp_size = o.tp.tp_size;
  const int rank_threads = TpRankThreads(o.tp);
  if (tp_size > 1) {
    o.flags.cpu_plugin_options.push_back(
        {"threads", std::to_string(rank_threads), "--tp-size"});
  }
  auto rt = StartUsableRuntime(o.flags);
  if (!rt.ok()) return ReportError(rt.status(), kExitBadInput);
  const int64_t max_batch =
      *std::max_element(o.batch_sizes.begin(), o.batch_sizes.end());
  model::ModelRunnerOptions runner_options;
  const int32_t page_size = runner_options.page_size;
  // Whole pages per sequence, so every batch fits: B * (input + output).
  runner_options.kv_capacity_tokens =
      max_batch *
      kv::KvPool::PagesForTokens(o.input_len + o.output_len, page_size) *
      page_size;
  // The workspace sized for the largest prefill up front (not timed).
  runner_options.max_batch_tokens = max_batch * o.input_len;
  runner_options.show_progress = progress;
  // Graphs for the buckets the batches use, captured before anything is
  // timed, with block tables covering input + output.
  runner_options.graph_max_batch =
      o.disable_graph ? 0 : model::DecodeGraphBucket(max_batch);
  runner_options.graph_capture_context = o.input_len + o.output_len;
  runner_options.copy_stream = !o.disable_copy_stream;
  ApplyQuantizationFlag(o.quantization, **checkpoint, &runner_options);
  ApplyKvCacheDtypeFlag(o.kv_cache_dtype, &runner_options);
  if (progress) fmt::print(stderr, "loading {}...\n", o.model_path);
  std::unique_ptr<TpGroup> tp;  // outlives the runner
  if (tp_size > 1) {
    TpRunnerSpec spec;
    spec.model_path = o.model_path;
    spec.kv_cache_dtype = o.kv_cache_dtype;
    spec.quantization = o.quantization;
    spec.page_size = page_size;
    spec.kv_tokens = runner_options.kv_capacity_tokens;
    spec.max_batch_tokens = runner_options.max_batch_tokens;
    spec.cpu_threads = rank_threads;
    spec.flags = o.flags;
    spec.flags.cpu_plugin_options.clear();  // the worker sets its threads
    auto group = TpGroup::Start(**rt, o.tp, spec);
    if (!group.ok()) return ReportError(group.status(), kExitBadInput);
    tp = std::move(*group);
    runner_options.device = TpDevice(o.tp, 0);
    runner_options.comm = &tp->comm();
  }
  auto runner = model::ModelRunner::Create(**rt, **checkpoint, runner_options);
  if (!runner.ok()) {
    return ReportError(runner.status().WithContext(fmt::format(
                           "creating the runner (KV pool for {} tokens)",
                           runner_options.kv_capacity_tokens)),
                       FailureCode(runner.status()));
  }

  if (tp != nullptr) {
    if (Status ready = tp->AwaitReady(**runner, o.model_path); !ready.ok()) {
      return ReportError(ready, kExitRuntimeFailure);
    }
  }

  Json out = Json::object();
  out["benchmark"] = "one_batch";
  out["tp_size"] = tp_size;
  out["model"] = o.model_path;
  out["plugin"] = (*rt)->plugin().name();
  out["device"] = (*runner)->device().Label();
  out["dtype"] = std::string(DTypeName((*runner)->activation_dtype()));
  out["quantization"] = o.quantization;
  out["kv_cache_dtype"] = std::string(DTypeName((*runner)->kv_cache_dtype()));
  out["fused_decoder_layer"] = (*runner)->uses_fused_layers();
  out["graphs"] = (*runner)->uses_graphs();
  out["seed"] = o.seed;
  out["bandwidth"] =
      bandwidth ? ReadBandwidthToJson(*bandwidth) : Json(nullptr);
  out["results"] = Json::array();
  for (int64_t b : o.batch_sizes) {
    if (progress) {
      fmt::print(stderr, "batch {}: prefill {} x {} tokens, {} decode steps\n",
                 b, b, o.input_len, o.output_len);
    }
    // The serial loop, then overlap (what the server runs), in the same
    // run so the two compare on the same machine state.
    for (bool overlap : {false, true}) {
      OneBatchParams params;
      params.batch_size = b;
      params.input_len = o.input_len;
      params.output_len = o.output_len;
      params.seed = o.seed;
      params.overlap = overlap;
      auto result = RunOneBatch(**runner, params, tp != nullptr ? &tp->leader() : nullptr);
      if (!result.ok()) {
        return ReportError(
            result.status().WithContext(fmt::format("batch size {}", b)),
            FailureCode(result.status()));
      }
      if (bandwidth) ApplyRoofline(*result, bandwidth->read_gbps);
      out["results"].push_back(OneBatchResultToJson(*result));
    }
  }

  return Emit(o, DumpJson(out), TextTable(out));
}

// "inf" (any case) or a positive number of requests per second.
StatusOr<double> ParseRequestRate(const std::string& text) {
  std::string lower = text;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return char(std::tolower(c)); });
  if (lower == "inf" || lower == "infinity") return bench::kInfiniteRate;
  errno = 0;
  char* end = nullptr;
  const double rate = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || errno != 0 ||
      !std::isfinite(rate) || !(rate > 0.0)) {
    return InvalidArgumentError(fmt::format(
        "--request-rate {} is not a rate; give requests per second > 0 "
        "(Poisson arrivals) or inf (all at once)",
        text));
  }
  return rate;
}

int FailureCodeOfServing(const Status& status) {
  switch (status.code()) {
    case StatusCode::kInvalidArgument:
    case StatusCode::kNotFound:
    case StatusCode::kUnavailable:
    case StatusCode::kFailedPrecondition:
      return kExitBadInput;
    default:
      return kExitRuntimeFailure;
  }
}

// Takes `o` by reference: smoke_defaults point into it.
int RunServingBenchCommand(BenchOptions& o) {
  bench::ServingBenchConfig& config = o.serving;
  if (o.base_url_opt->count() == 0) {
    config.base_url = fmt::format("http://{}:{}", o.host, o.port);
  }
  if (config.dataset_name == "generated-shared-prefix") {
    config.dataset_name = bench::kDatasetSharedPrefix;  // SGLang's name
  }
  auto rate = ParseRequestRate(o.request_rate);
  if (!rate.ok()) return ReportError(rate.status(), kExitBadInput);
  config.request_rate = *rate;
  config.seed = o.seed;
  if (!o.extra_request_body.empty()) {
    auto extra = nlohmann::ordered_json::parse(o.extra_request_body, nullptr,
                                               false);
    if (extra.is_discarded() || !extra.is_object()) {
      return ReportError(
          InvalidArgumentError(
              "--extra-request-body must be a JSON object, e.g. "
              "'{\"response_format\": {\"type\": \"json_object\"}}'"),
          kExitBadInput);
    }
    config.extra_request_body = std::move(extra);
  }
  if (o.smoke) {
    for (const auto& d : o.smoke_defaults) {
      if (d.option->count() == 0) *d.value = d.smoke;
    }
    if (o.max_concurrency_opt->count() == 0) config.max_concurrency = 4;
    if (o.range_ratio_opt->count() == 0) config.random.range_ratio = 1.0;
  }
  config.progress = ProgressReporter::ModeForStderr();

  auto report = bench::RunServingBench(config);
  if (!report.ok()) {
    return ReportError(report.status(), FailureCodeOfServing(report.status()));
  }
  const int emitted =
      Emit(o, DumpJson(report->result), bench::ResultTable(report->result));
  if (emitted != kExitOk) return emitted;
  const bench::BenchSummary& summary = report->summary;
  if (summary.failed > 0) {
    return ReportError(
        InternalError(fmt::format(
            "{} of {} requests failed; the first: {}", summary.failed,
            summary.failed + summary.completed,
            summary.errors.empty() ? std::string("?") : summary.errors[0])),
        kExitRuntimeFailure);
  }
  return kExitOk;
}

// Flags of the other benchmark are mistakes worth naming.
Status CheckModeFlags(const BenchOptions& o) {
  for (const CLI::Option* option : o.one_batch ? o.serving_only
                                               : o.one_batch_only) {
    if (option->count() == 0) continue;
    if (o.one_batch) {
      return InvalidArgumentError(fmt::format(
          "{} is a flag of the serving benchmark (without --one-batch), not "
          "of --one-batch",
          option->get_name()));
    }
    return InvalidArgumentError(fmt::format(
        "{} belongs to --one-batch (the model runner timed alone); without "
        "--one-batch `tessera bench` benchmarks a running server: tessera "
        "bench --base-url http://HOST:PORT",
        option->get_name()));
  }
  return OkStatus();
}

std::string SoakTable(const Json& r) {
  const Json& q = r["requests"];
  std::string text = fmt::format(
      "soak {} s at concurrency {}: {} requests ({} ok, {} refused, {} "
      "disconnected, {} aborted, {} errors, {} lost)\n",
      r["seconds"].dump(), r["concurrency"].dump(), q["total"].dump(),
      q["ok"].dump(), q["refused"].dump(), q["disconnects"].dump(),
      q["aborts"].dump(), q["errors"].dump(), q["lost"].dump());
  const Json& m = r["resident_memory"];
  text += fmt::format("resident memory {} -> {} MiB, slope {:.3f} MiB/10 min "
                      "over the second half\n",
                      m["start_mib"].dump(), m["end_mib"].dump(),
                      m["slope_mib_per_10min"].get<double>());
  for (const char* key : {"open_fds", "threads"}) {
    const Json& f = r[key];
    text += fmt::format("{}: {} -> {}, {} when idle after; second-half "
                        "growth {:.1f}\n",
                        key, f["start"].dump(), f["end"].dump(),
                        f["idle"].dump(),
                        f["second_half_growth"].get<double>());
  }
  text += r["passed"].get<bool>() ? "PASSED\n" : "FAILED\n";
  for (const Json& why : r["failures"]) {
    text += "  " + why.get<std::string>() + "\n";
  }
  return text;
}

int RunSoakCommand(BenchOptions& o) {
  bench::SoakConfig config;
  config.base_url = o.base_url_opt->count() > 0
                        ? o.serving.base_url
                        : fmt::format("http://{}:{}", o.host, o.port);
  config.model = o.serving.model;
  config.seconds = o.soak_seconds;
  config.seed = o.seed;
  config.concurrency =
      o.max_concurrency_opt->count() > 0 ? o.serving.max_concurrency : 16;
  config.progress = ::isatty(STDERR_FILENO) == 1;
  auto report = bench::RunSoak(config);
  if (!report.ok()) {
    return ReportError(report.status(), FailureCodeOfServing(report.status()));
  }
  const int emitted = Emit(o, DumpJson(report->result), SoakTable(report->result));
  if (emitted != kExitOk) return emitted;
  if (!report->passed) {
    return ReportError(InternalError("the soak failed: " +
                                     report->failures.front()),
                       kExitRuntimeFailure);
  }
  return kExitOk;
}

int RunBench(BenchOptions& o) {
  if (Status mode = CheckModeFlags(o); !mode.ok()) {
    return ReportError(mode, kExitBadInput);
  }
  if (o.soak_seconds > 0) {
    if (o.one_batch) {
      return ReportError(InvalidArgumentError("--soak runs against a server; "
                                              "it does not go with "
                                              "--one-batch"),
                         kExitBadInput);
    }
    return RunSoakCommand(o);
  }
  return o.one_batch ? RunOneBatchBench(o) : RunServingBenchCommand(o);
}

}  // namespace

Command AddBenchCommand(CLI::App& root) {
  auto o = std::make_shared<BenchOptions>();
  Command command;
  CLI::App* app = root.add_subcommand(
      "bench",
      "Benchmarks. Default: the serving benchmark against a running server "
      "(`tessera serve`): streamed /v1/completions on random token-id "
      "prompts; TTFT, TPOT, ITL, E2E latency and throughput. --one-batch: "
      "the model runner timed alone (prefill and per-step decode for each "
      "batch size) against the host memory roofline. Exit 0: done; 1: "
      "requests, the device or the model failed; 2: bad flags, no ready "
      "server, or a bad model or plugin choice");
  command.app = app;

  // Shared by both benchmarks.
  app->add_option("--seed", o->seed,
                  "seed of the random prompts (and of the arrival times)")
      ->capture_default_str();
  app->add_flag("--json", o->json, "print one JSON object instead of a table");
  app->add_option("--output-file", o->output_file,
                  "also write the JSON object to this file");
  app->add_flag("--smoke", o->smoke,
                "tiny sizes for a seconds-long check (serving: 8 prompts, "
                "input 32, output 8, range ratio 1, concurrency 4; --one-batch: input 16, "
                "output 4, batches 1,2, 64 MiB probe)");

  // Serving benchmark.
  bench::ServingBenchConfig& s = o->serving;
  const std::string serving = "Serving benchmark";
  auto serving_option = [&](CLI::Option* option) {
    option->group(serving);
    o->serving_only.push_back(option);
    return option;
  };
  auto sized = [&](const char* name, int64_t& value, const char* help,
                   int64_t smoke) {
    CLI::Option* option = serving_option(
        app->add_option(name, value, help)
            ->check(CLI::Range(int64_t{1}, int64_t{100000000}))
            ->capture_default_str());
    o->smoke_defaults.push_back({option, &value, smoke});
    return option;
  };
  o->base_url_opt = serving_option(
      app->add_option("--base-url", s.base_url,
                      "server URL, e.g. http://127.0.0.1:30000 (beats "
                      "--host/--port)"));
  CLI::Option* host_opt = serving_option(
      app->add_option("--host", o->host, "server host")->capture_default_str());
  CLI::Option* port_opt = serving_option(
      app->add_option("--port", o->port, "server port")
          ->check(CLI::Range(1, 65535))
          ->capture_default_str());
  o->base_url_opt->excludes(host_opt)->excludes(port_opt);
  serving_option(app->add_option(
      "--extra-request-body", o->extra_request_body,
      "a JSON object whose members are added to every request (SGLang's "
      "flag), e.g. '{\"response_format\": {\"type\": \"json_object\"}}'"));
  serving_option(app->add_option(
      "--model", s.model,
      "model name to request (default: the first the server lists)"));
  serving_option(
      app->add_option("--dataset-name", s.dataset_name,
                      "random | shared-prefix (SGLang: "
                      "generated-shared-prefix) | multi-turn")
          ->check(CLI::IsMember({std::string(bench::kDatasetRandom),
                                 std::string(bench::kDatasetSharedPrefix),
                                 std::string("generated-shared-prefix"),
                                 std::string(bench::kDatasetMultiTurn)}))
          ->capture_default_str());
  sized("--num-prompts", s.random.num_prompts, "random: number of requests", 8);
  sized("--random-input-len", s.random.input_len,
        "random: longest prompt, in token ids", 32);
  sized("--random-output-len", s.random.output_len,
        "random: longest output, in tokens", 8);
  o->range_ratio_opt = serving_option(
      app->add_option("--random-range-ratio", s.random.range_ratio,
                      "random: lengths uniform in [max(1, len * R), len]; 1: "
                      "exactly len")
          ->check(CLI::Range(0.0, 1.0))
          ->capture_default_str());
  sized("--multi-turn-rounds", s.multi_turn_rounds,
        "multi-turn: rounds per conversation (--num-prompts "
        "conversations; each round adds --random-input-len new ids and "
        "asks for --random-output-len)",
        2);
  sized("--gsp-num-groups", s.shared_prefix.num_groups,
        "shared-prefix: groups, one system prompt each", 2);
  sized("--gsp-prompts-per-group", s.shared_prefix.prompts_per_group,
        "shared-prefix: prompts sharing a group's system prompt", 4);
  sized("--gsp-system-prompt-len", s.shared_prefix.system_prompt_len,
        "shared-prefix: system prompt tokens", 32);
  sized("--gsp-question-len", s.shared_prefix.question_len,
        "shared-prefix: question tokens after the system prompt", 8);
  sized("--gsp-output-len", s.shared_prefix.output_len,
        "shared-prefix: output tokens per request", 8);
  serving_option(
      app->add_option("--request-rate", o->request_rate,
                      "requests per second (Poisson arrivals), or inf: all "
                      "at once")
          ->capture_default_str());
  o->max_concurrency_opt = serving_option(
      app->add_option("--max-concurrency", s.max_concurrency,
                      "most requests in flight at once (default: no limit)")
          ->check(CLI::Range(int64_t{1}, int64_t{1} << 20)));
  serving_option(
      app->add_option("--warmup-requests", s.warmup_requests,
                      "untimed requests sent first, one at a time")
          ->check(CLI::Range(int64_t{0}, int64_t{1} << 20))
          ->capture_default_str());
  serving_option(
      app->add_option("--vocab-size", s.vocab_size,
                      "token ids are drawn from [0, V) (default: the "
                      "server's /server_info vocab_size)")
          ->check(CLI::Range(int64_t{1}, int64_t{INT32_MAX})));

  serving_option(
      app->add_option("--soak", o->soak_seconds,
                      "instead of the benchmark, a mixed load for SECONDS "
                      "(streamed and whole chat and completions, clients "
                      "that disconnect, aborted requests) that fails when "
                      "the server's memory, descriptors or threads grow or "
                      "a request is lost; with --max-concurrency (16)")
          ->check(CLI::PositiveNumber));

  // --one-batch.
  const std::string one_batch = "--one-batch (the model runner alone)";
  auto one_batch_option = [&](CLI::Option* option) {
    option->group(one_batch);
    o->one_batch_only.push_back(option);
    return option;
  };
  app->add_flag("--one-batch", o->one_batch,
                "time the model runner alone on random prompts")
      ->group(one_batch);
  one_batch_option(app->add_flag(
      "--disable-graph,--disable-cuda-graph", o->disable_graph,
      "run decode steps eagerly instead of replaying captured graphs"));
  one_batch_option(app->add_flag(
      "--disable-copy-stream", o->disable_copy_stream,
      "run uploads and read-backs on the compute stream (A/B measurements)"));
  one_batch_option(
      app->add_option("--model-path", o->model_path,
                      "Hugging Face model folder (config.json, "
                      "*.safetensors)"));
  o->batch_opt = one_batch_option(
      app->add_option("--batch-size", o->batch_sizes,
                      "batch sizes to run, comma-separated")
          ->delimiter(',')
          ->capture_default_str());
  o->input_opt = one_batch_option(
      app->add_option("--input-len", o->input_len,
                      "prompt tokens per sequence (random ids)")
          ->capture_default_str());
  o->output_opt = one_batch_option(
      app->add_option("--output-len", o->output_len,
                      "decode steps (greedy) per batch")
          ->capture_default_str());
  one_batch_option(app->add_flag("--no-bandwidth", o->no_bandwidth,
                                 "skip the read-bandwidth probe (no roofline)"));
  o->bandwidth_bytes_opt = one_batch_option(
      app->add_option("--bandwidth-bytes", o->bandwidth_bytes,
                      "bytes the bandwidth probe reads per pass")
          ->capture_default_str());
  one_batch_option(AddQuantizationOption(app, &o->quantization));
  one_batch_option(AddKvCacheDtypeOption(app, &o->kv_cache_dtype));
  for (CLI::Option* option : AddTpFlags(app, &o->tp)) one_batch_option(option);
  one_batch_option(app->add_option("--cpu-threads", o->cpu_threads,
                                   "threads of the bandwidth probe (0: all)"));
  one_batch_option(
      app->add_option("--device-plugin", o->flags.device_plugin,
                      "use this plugin .so (beats TESSERA_DEVICE_PLUGIN)"));
  one_batch_option(
      app->add_option("--platform", o->flags.platform,
                      "use the plugin with this name, e.g. cpu (beats "
                      "TESSERA_PLATFORM)"));
  command.run = [o] { return RunBench(*o); };
  return command;
}

}  // namespace tessera::cli
