// `tessera generate --model-path DIR --prompt TEXT [--chat] [--json] ...`:
// runs one prompt through a Hugging Face checkpoint on the selected device
// plugin and streams the continuation to stdout as it is generated.
//
// Sampling: --temperature/--top-p/--top-k/--min-p default to the values
// generation_config.json sets, else temperature 1.0, top-p 1, top-k all,
// min-p off (SGLang's rule: do_sample is not consulted; --temperature 0 is
// greedy). --seed fixes the sampler's generator (same seed, same tokens);
// without it a random seed is drawn and reported. Generation stops at any
// EOS id (generation_config.json, config.json and the tokenizer's eos
// token) unless --ignore-eos, or after --max-new-tokens (128), capped to the
// model's max_position_embeddings with a warning. The prompt is prefilled
// in chunks of --chunked-prefill-size tokens (2048), each over the KV cache
// of the ones before.
//
// Output: without --json, the continuation streams to stdout (flushed per
// token) and the timing line goes to stderr. With --json, stdout holds
// exactly one JSON object: prompt (the text the model saw: the rendered
// chat with --chat), prompt_ids, output_ids (the prompt excluded, a final
// EOS included), text (the continuation: prompt + text is the decoded
// whole), finish_reason ("stop" | "length"), token counts, seconds and
// tokens/s of prefill and decode, the sampling settings and the device.
// Logs always go to stderr.
//
// Exit codes: 0 done; 2 bad input (flags, a missing or unsupported model
// directory, a failing chat template, an unusable plugin choice); 1 the
// device or the model failed while loading or running.
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <random>
#include <string>

#include "cli/command.h"
#include "cli/generate_loop.h"
#include "cli/generate_prompt.h"
#include "cli/model_loading.h"
#include "cli/runtime_start.h"
#include "model/checkpoint.h"
#include "model/model_runner.h"
#include "runtime/runtime.h"

namespace tessera::cli {
namespace {

using Json = nlohmann::ordered_json;

struct GenerateOptions {
  std::string model_path;
  std::string prompt;
  bool chat = false;
  std::string chat_template;
  int64_t max_new_tokens = 128;
  double temperature = 1.0;
  double top_p = 1.0;
  int64_t top_k = 0;
  double min_p = 0.0;
  uint64_t seed = 0;
  bool ignore_eos = false;
  int64_t chunked_prefill_size = 2048;
  bool json = false;
  std::string quantization = "none";
  std::string kv_cache_dtype = "auto";
  runtime::RuntimeFlags flags;
  // Set after parsing: which sampling flags were given.
  CLI::Option* temperature_opt = nullptr;
  CLI::Option* top_p_opt = nullptr;
  CLI::Option* top_k_opt = nullptr;
  CLI::Option* min_p_opt = nullptr;
  CLI::Option* seed_opt = nullptr;
};

Status CheckFlags(const GenerateOptions& o) {
  if (o.max_new_tokens < 1) {
    return InvalidArgumentError(fmt::format(
        "--max-new-tokens {} must be at least 1", o.max_new_tokens));
  }
  if (o.temperature < 0) {
    return InvalidArgumentError(fmt::format(
        "--temperature {} must be >= 0 (0 is greedy)", o.temperature));
  }
  if (!(o.top_p > 0 && o.top_p <= 1)) {
    return InvalidArgumentError(
        fmt::format("--top-p {} must be in (0, 1]", o.top_p));
  }
  if (o.chunked_prefill_size < -1) {
    return InvalidArgumentError(fmt::format(
        "--chunked-prefill-size {} must be positive (0 or -1: no chunking)",
        o.chunked_prefill_size));
  }
  if (o.top_k < -1) {
    return InvalidArgumentError(
        fmt::format("--top-k {} must be >= 0 (0 or -1: all tokens)", o.top_k));
  }
  if (!(o.min_p >= 0 && o.min_p <= 1)) {
    return InvalidArgumentError(
        fmt::format("--min-p {} must be in [0, 1]", o.min_p));
  }
  return OkStatus();
}

// The sampling settings as given (doubles, for exact reporting): flags,
// else generation_config.json, else SGLang's defaults.
struct ResolvedSampling {
  double temperature = 1.0;
  double top_p = 1.0;
  int64_t top_k = 0;  // 0: all
  double min_p = 0.0;

  model::SamplingParams ToParams() const {
    model::SamplingParams p;
    p.temperature = float(temperature);
    p.top_p = float(top_p);
    p.top_k = int32_t(top_k);
    p.min_p = float(min_p);
    return p;
  }
};

ResolvedSampling ResolveSampling(const GenerateOptions& o,
                                 const model::GenerationConfig& gen) {
  ResolvedSampling r;
  if (o.temperature_opt->count() > 0) {
    r.temperature = o.temperature;
  } else if (gen.Has("temperature")) {
    r.temperature = gen.temperature;
  }
  if (o.top_p_opt->count() > 0) {
    r.top_p = o.top_p;
  } else if (gen.Has("top_p")) {
    r.top_p = gen.top_p;
  }
  if (o.top_k_opt->count() > 0) {
    r.top_k = o.top_k;
  } else if (gen.Has("top_k")) {
    r.top_k = gen.top_k;
  }
  if (r.top_k < 0) r.top_k = 0;  // SGLang's -1: all tokens
  if (o.min_p_opt->count() > 0) {
    r.min_p = o.min_p;
  } else if (gen.Has("min_p")) {
    r.min_p = gen.min_p;
  }
  return r;
}

int RunGenerate(const GenerateOptions& o) {
  if (Status flags = CheckFlags(o); !flags.ok()) {
    return ReportError(flags, kExitBadInput);
  }
  // Tokenizer and prompt first: cheap, and most mistakes show here.
  auto tools = PromptTools::Load(o.model_path, o.chat_template);
  if (!tools.ok()) return ReportError(tools.status(), kExitBadInput);
  PreparedPrompt prompt;
  if (o.chat) {
    Json messages = Json::array({{{"role", "user"}, {"content", o.prompt}}});
    auto rendered =
        (*tools)->RenderChat(messages, nullptr,
                             /*add_generation_prompt=*/true, nullptr);
    if (!rendered.ok()) {
      return ReportError(rendered.status().WithContext("--chat"),
                         kExitBadInput);
    }
    prompt.text = std::move(rendered).value();
  } else {
    prompt.text = o.prompt;
  }
  const Tokenizer& tokenizer = (*tools)->tokenizer();
  prompt.ids = tokenizer.Encode(prompt.text, /*add_special_tokens=*/!o.chat);
  if (prompt.ids.empty()) {
    return ReportError(
        InvalidArgumentError("--prompt encodes to no tokens; give some text"),
        kExitBadInput);
  }

  const auto load_start = std::chrono::steady_clock::now();
  auto checkpoint = model::Checkpoint::Open(o.model_path);
  if (!checkpoint.ok()) {
    return ReportError(checkpoint.status(), kExitBadInput);
  }
  const model::ModelConfig& config = (*checkpoint)->config();
  const int64_t prompt_len = int64_t(prompt.ids.size());
  const int64_t context = config.max_position_embeddings;
  if (prompt_len >= context) {
    return ReportError(InvalidArgumentError(fmt::format(
                           "the prompt has {} tokens but the model's context "
                           "(max_position_embeddings) is {}; shorten it",
                           prompt_len, context)),
                       kExitBadInput);
  }
  GenerateParams params;
  params.max_new_tokens = o.max_new_tokens;
  params.prefill_chunk_tokens =
      o.chunked_prefill_size > 0 ? o.chunked_prefill_size : prompt_len;
  if (prompt_len + params.max_new_tokens > context) {
    params.max_new_tokens = context - prompt_len;
    fmt::print(stderr,
               "warning: --max-new-tokens {} with a {}-token prompt exceeds "
               "the context of {}; generating at most {}\n",
               o.max_new_tokens, prompt_len, context, params.max_new_tokens);
  }
  const ResolvedSampling sampling =
      ResolveSampling(o, (*checkpoint)->generation_config());
  params.sampling = sampling.ToParams();
  params.seed =
      o.seed_opt->count() > 0
          ? o.seed
          : (uint64_t(std::random_device{}()) << 32) | std::random_device{}();
  if (!o.ignore_eos) params.eos_ids = EosIds(**checkpoint, tokenizer);

  auto rt = StartUsableRuntime(o.flags);
  if (!rt.ok()) return ReportError(rt.status(), kExitBadInput);
  model::ModelRunnerOptions runner_options;
  runner_options.kv_capacity_tokens = prompt_len + params.max_new_tokens;
  ApplyQuantizationFlag(o.quantization, &runner_options);
  ApplyKvCacheDtypeFlag(o.kv_cache_dtype, &runner_options);
  runner_options.max_batch_tokens =
      std::min(prompt_len, params.prefill_chunk_tokens);
  auto runner = model::ModelRunner::Create(**rt, **checkpoint, runner_options);
  if (!runner.ok()) {
    return ReportError(runner.status(), ModelFailureCode(runner.status()));
  }
  const runtime::Device& device = (*runner)->device();
  fmt::print(stderr,
             "loaded {} ({}, {} layers, {}) on {} ({}) in {:.0f} ms; prompt "
             "{} tokens\n",
             o.model_path, model::ArchitectureClassName(config.architecture),
             config.num_hidden_layers, DTypeName((*runner)->activation_dtype()),
             device.Label(), (*rt)->plugin().name(),
             std::chrono::duration<double, std::milli>(
                 std::chrono::steady_clock::now() - load_start)
                 .count(),
             prompt_len);
  std::fflush(stderr);

  std::function<void(std::string_view)> on_text;
  if (!o.json) {
    on_text = [](std::string_view piece) {
      std::fwrite(piece.data(), 1, piece.size(), stdout);
      std::fflush(stdout);
    };
  }
  auto result = Generate(**runner, tokenizer, prompt.ids, params, on_text);
  if (!result.ok()) {
    if (!o.json) std::fputc('\n', stdout);
    return ReportError(result.status().WithContext("generating"),
                       ModelFailureCode(result.status()));
  }
  const std::string stats = fmt::format(
      "prefill: {} tokens in {:.1f} ms ({:.1f} tok/s); decode: {} tokens in "
      "{:.1f} ms ({:.1f} tok/s); finish_reason: {}",
      result->prefill_tokens, result->prefill_seconds * 1e3,
      result->prefill_tokens_per_s(), result->decode_tokens,
      result->decode_seconds * 1e3, result->decode_tokens_per_s(),
      result->finish_reason);
  if (o.json) {
    Json out = Json::object();
    out["prompt"] = prompt.text;
    out["prompt_ids"] = prompt.ids;
    out["output_ids"] = result->output_ids;
    out["text"] = result->text;
    out["finish_reason"] = result->finish_reason;
    out["prompt_tokens"] = result->prefill_tokens;
    out["completion_tokens"] = result->output_ids.size();
    out["prefill_seconds"] = result->prefill_seconds;
    out["decode_seconds"] = result->decode_seconds;
    out["prefill_tokens_per_s"] = result->prefill_tokens_per_s();
    out["decode_tokens_per_s"] = result->decode_tokens_per_s();
    out["sampling"] = {{"temperature", sampling.temperature},
                       {"top_p", sampling.top_p},
                       {"top_k", sampling.top_k},
                       {"min_p", sampling.min_p},
                       {"seed", params.seed},
                       {"max_new_tokens", params.max_new_tokens},
                       {"ignore_eos", o.ignore_eos}};
    out["plugin"] = (*rt)->plugin().name();
    out["device"] = device.Label();
    fmt::print("{}\n", DumpJson(out));
  } else {
    fmt::print("\n");
  }
  std::fflush(stdout);
  fmt::print(stderr, "{}\n", stats);
  return kExitOk;
}

}  // namespace

Command AddGenerateCommand(CLI::App& root) {
  auto o = std::make_shared<GenerateOptions>();
  Command command;
  command.app = root.add_subcommand(
      "generate",
      "Generate a continuation of one prompt with a Hugging Face model and "
      "stream it to stdout; prefill and decode tokens/s go to stderr. Exit "
      "0: done; 2: bad flags, model directory or plugin choice; 1: the "
      "device or model failed");
  command.app
      ->add_option("--model-path", o->model_path,
                   "Hugging Face model folder (config.json, *.safetensors, "
                   "tokenizer.json)")
      ->required();
  command.app->add_option("--prompt", o->prompt, "the prompt text")->required();
  command.app->add_flag("--chat", o->chat,
                        "send the prompt as one user message through the "
                        "chat template (with the generation prompt)");
  command.app->add_option("--chat-template", o->chat_template,
                          "with --chat: use this Jinja file instead of the "
                          "model's template");
  command.app
      ->add_option("--max-new-tokens", o->max_new_tokens,
                   "most tokens to generate")
      ->capture_default_str();
  o->temperature_opt = command.app->add_option(
      "--temperature", o->temperature,
      "0: greedy (default: generation_config.json, else 1.0)");
  o->top_p_opt = command.app->add_option("--top-p", o->top_p,
                                         "nucleus mass in (0, 1] (default: "
                                         "generation_config.json, else 1)");
  o->top_k_opt =
      command.app->add_option("--top-k", o->top_k,
                              "keep the k likeliest tokens; 0 or -1: all "
                              "(default: generation_config.json, else all)");
  o->min_p_opt =
      command.app->add_option("--min-p", o->min_p,
                              "drop tokens below min_p x the top probability "
                              "(default: generation_config.json, else off)");
  o->seed_opt = command.app->add_option(
      "--seed", o->seed, "sampling seed (default: random, reported)");
  command.app->add_flag("--ignore-eos", o->ignore_eos,
                        "do not stop at EOS; always generate "
                        "--max-new-tokens");
  command.app
      ->add_option("--chunked-prefill-size", o->chunked_prefill_size,
                   "prefill the prompt in chunks of at most this many tokens "
                   "(0 or -1: all at once)")
      ->capture_default_str();
  AddQuantizationOption(command.app, &o->quantization);
  AddKvCacheDtypeOption(command.app, &o->kv_cache_dtype);
  command.app->add_flag("--json", o->json,
                        "print one JSON object (ids, text, finish_reason, "
                        "tokens/s) instead of streaming text");
  command.app->add_option("--device-plugin", o->flags.device_plugin,
                          "use this plugin .so (beats TESSERA_DEVICE_PLUGIN)");
  command.app->add_option("--platform", o->flags.platform,
                          "use the plugin with this name, e.g. cpu (beats "
                          "TESSERA_PLATFORM)");
  command.run = [o] { return RunGenerate(*o); };
  return command;
}

}  // namespace tessera::cli
