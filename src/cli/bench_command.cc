// `tessera bench --one-batch --model-path DIR [--batch-size 1,8,32]
// [--input-len 512] [--output-len 32] [--json] [--output-file F] [--smoke]
// [--no-bandwidth] [--bandwidth-bytes N] [--cpu-threads N] [--seed S]
// [--platform NAME | --device-plugin PATH]`: the model runner timed alone
// (bench_one_batch.h) for each batch size, with the memory roofline from a
// host read-bandwidth probe (read_bandwidth.h) run first in the same
// process unless --no-bandwidth.
//
// Output: a table on stdout, or with --json exactly one JSON object
// {model, plugin, device, dtype, bandwidth|null, results: [...]};
// --output-file writes that object to a file as well. Progress lines go to
// stderr only when stderr is a terminal. --smoke: input-len 16, output-len
// 4, batch sizes 1,2 and a 64 MiB probe (seconds on a tiny model), unless
// those flags are given explicitly.
//
// Exit codes: 0 done; 2 bad input (flags, model directory, plugin choice,
// a KV pool too small); 1 the device or the model failed.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "cli/bench_one_batch.h"
#include "cli/command.h"
#include "cli/generate_prompt.h"
#include "cli/runtime_start.h"
#include "cli/read_bandwidth.h"
#include "model/checkpoint.h"
#include "model/model_runner.h"
#include "runtime/runtime.h"

namespace tessera::cli {
namespace {

using Json = nlohmann::ordered_json;

struct BenchOptions {
  bool one_batch = false;
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
  runtime::RuntimeFlags flags;
  CLI::Option* batch_opt = nullptr;
  CLI::Option* input_opt = nullptr;
  CLI::Option* output_opt = nullptr;
  CLI::Option* bandwidth_bytes_opt = nullptr;
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
      "model {} on {} ({}), {}\n", out["model"].get<std::string>(),
      out["device"].get<std::string>(), out["plugin"].get<std::string>(),
      out["dtype"].get<std::string>());
  text += fmt::format(
      "{:>5} {:>6} {:>6} {:>12} {:>12} {:>9} {:>9} {:>9} "
      "{:>12} {:>9}\n",
      "batch", "in", "out", "prefill t/s", "decode t/s", "step ms", "p50 ms",
      "p99 ms", "MB/step", "roofline");
  for (const Json& r : out["results"]) {
    text += fmt::format(
        "{:>5} {:>6} {:>6} {:>12.1f} {:>12.2f} {:>9.2f} {:>9.2f} {:>9.2f} "
        "{:>12.1f} {:>9}\n",
        r["batch_size"].get<int64_t>(), r["input_len"].get<int64_t>(),
        r["output_len"].get<int64_t>(), r["prefill_tokens_per_s"].get<double>(),
        r["decode_tokens_per_s"].get<double>(),
        r["step_ms"]["mean"].get<double>(), r["step_ms"]["p50"].get<double>(),
        r["step_ms"]["p99"].get<double>(),
        double(r["bytes_per_step"].get<uint64_t>()) / 1e6,
        r["roofline_fraction"].is_number()
            ? fmt::format("{:.1f}%",
                          100.0 * r["roofline_fraction"].get<double>())
            : std::string("-"));
  }
  return text;
}

int RunBench(BenchOptions o) {
  if (!o.one_batch) {
    return ReportError(
        InvalidArgumentError("choose a benchmark: only --one-batch exists "
                             "(the model runner timed alone)"),
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
  if (progress) fmt::print(stderr, "loading {}...\n", o.model_path);
  auto runner = model::ModelRunner::Create(**rt, **checkpoint, runner_options);
  if (!runner.ok()) {
    return ReportError(runner.status().WithContext(fmt::format(
                           "creating the runner (KV pool for {} tokens)",
                           runner_options.kv_capacity_tokens)),
                       FailureCode(runner.status()));
  }

  Json out = Json::object();
  out["benchmark"] = "one_batch";
  out["model"] = o.model_path;
  out["plugin"] = (*rt)->plugin().name();
  out["device"] = (*runner)->device().Label();
  out["dtype"] = std::string(DTypeName((*runner)->activation_dtype()));
  out["seed"] = o.seed;
  out["bandwidth"] =
      bandwidth ? ReadBandwidthToJson(*bandwidth) : Json(nullptr);
  out["results"] = Json::array();
  for (int64_t b : o.batch_sizes) {
    if (progress) {
      fmt::print(stderr, "batch {}: prefill {} x {} tokens, {} decode steps\n",
                 b, b, o.input_len, o.output_len);
    }
    OneBatchParams params;
    params.batch_size = b;
    params.input_len = o.input_len;
    params.output_len = o.output_len;
    params.seed = o.seed;
    auto result = RunOneBatch(**runner, params);
    if (!result.ok()) {
      return ReportError(
          result.status().WithContext(fmt::format("batch size {}", b)),
          FailureCode(result.status()));
    }
    if (bandwidth) ApplyRoofline(*result, bandwidth->read_gbps);
    out["results"].push_back(OneBatchResultToJson(*result));
  }

  const std::string json_text = DumpJson(out);
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
    fmt::print("{}", TextTable(out));
  }
  std::fflush(stdout);
  return kExitOk;
}

}  // namespace

Command AddBenchCommand(CLI::App& root) {
  auto o = std::make_shared<BenchOptions>();
  Command command;
  command.app = root.add_subcommand(
      "bench",
      "Benchmarks. --one-batch: the model runner timed alone (prefill and "
      "per-step decode for each batch size) against the host memory "
      "roofline. Exit 0: done; 2: bad flags, model or plugin choice; 1: the "
      "device or model failed");
  command.app->add_flag("--one-batch", o->one_batch,
                        "time the model runner alone on random prompts");
  command.app
      ->add_option("--model-path", o->model_path,
                   "Hugging Face model folder (config.json, *.safetensors)")
      ->required();
  o->batch_opt = command.app
                     ->add_option("--batch-size", o->batch_sizes,
                                  "batch sizes to run, comma-separated")
                     ->delimiter(',')
                     ->capture_default_str();
  o->input_opt = command.app
                     ->add_option("--input-len", o->input_len,
                                  "prompt tokens per sequence (random ids)")
                     ->capture_default_str();
  o->output_opt = command.app
                      ->add_option("--output-len", o->output_len,
                                   "decode steps (greedy) per batch")
                      ->capture_default_str();
  command.app->add_option("--seed", o->seed, "seed of the random prompt ids")
      ->capture_default_str();
  command.app->add_flag("--json", o->json,
                        "print one JSON object instead of a table");
  command.app->add_option("--output-file", o->output_file,
                          "also write the JSON object to this file");
  command.app->add_flag("--smoke", o->smoke,
                        "tiny sizes (input 16, output 4, batches 1,2, 64 MiB "
                        "probe) for a quick check");
  command.app->add_flag("--no-bandwidth", o->no_bandwidth,
                        "skip the read-bandwidth probe (no roofline)");
  o->bandwidth_bytes_opt =
      command.app
          ->add_option("--bandwidth-bytes", o->bandwidth_bytes,
                       "bytes the bandwidth probe reads per pass")
          ->capture_default_str();
  command.app->add_option("--cpu-threads", o->cpu_threads,
                          "threads of the bandwidth probe (0: all)");
  command.app->add_option("--device-plugin", o->flags.device_plugin,
                          "use this plugin .so (beats TESSERA_DEVICE_PLUGIN)");
  command.app->add_option("--platform", o->flags.platform,
                          "use the plugin with this name, e.g. cpu (beats "
                          "TESSERA_PLATFORM)");
  command.run = [o] { return RunBench(*o); };
  return command;
}

}  // namespace tessera::cli
