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
// token) unless --ignore-eos, at --stop strings and --stop-token-ids, or
// after --max-new-tokens (128), capped to the model's
// max_position_embeddings with a warning; --min-new-tokens, the repetition
// / presence / frequency penalties and --top-logprobs work as in the API.
// The request runs through the same serving engine as `tessera serve`
// (src/engine: scheduler, executor, sampler, stop handling), so generate
// and serve give the same tokens for the same request and seed. The prompt
// is prefilled in chunks of --chunked-prefill-size tokens (2048), each over
// the KV cache of the ones before.
//
// Output: without --json, the continuation streams to stdout (flushed per
// token) and the timing line goes to stderr. With --json, stdout holds
// exactly one JSON object: prompt (the text the model saw: the rendered
// chat with --chat), prompt_ids, output_ids (the prompt excluded, a final
// EOS included), text (the continuation: prompt + text is the decoded
// whole), finish_reason ("stop" | "length"), matched_stop (the stop string
// or id that ended it), token counts, seconds and tokens/s of prefill and
// decode, logprobs (with --top-logprobs), the sampling settings and the
// device.
// Logs always go to stderr.
//
// Exit codes: 0 done; 2 bad input (flags, a missing or unsupported model
// directory, a failing chat template, an unusable plugin choice); 1 the
// device or the model failed while loading or running.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <future>
#include <memory>
#include <optional>
#include <vector>
#include <random>
#include <string>

#include "cli/command.h"
#include "cli/cli_io.h"
#include "prompt/prompt_tools.h"
#include "cli/model_loading.h"
#include "cli/runtime_start.h"
#include "cli/tp_launch.h"
#include "engine/engine.h"
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
  std::vector<std::string> stop;
  std::vector<int32_t> stop_token_ids;
  int64_t min_new_tokens = 0;
  double repetition_penalty = 1.0;
  double presence_penalty = 0.0;
  double frequency_penalty = 0.0;
  int32_t top_logprobs = -1;
  int64_t chunked_prefill_size = 2048;
  bool json = false;
  std::string quantization = "auto";
  std::string kv_cache_dtype = "auto";
  runtime::RuntimeFlags flags;
  TpFlags tp;
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
  if (o.top_logprobs < -1 || o.top_logprobs > 20) {
    return InvalidArgumentError(fmt::format(
        "--top-logprobs {} must be in [0, 20]", o.top_logprobs));
  }
  if (o.min_new_tokens < 0) {
    return InvalidArgumentError(fmt::format(
        "--min-new-tokens {} must be >= 0", o.min_new_tokens));
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

// The most tokens `text` can encode to as a plain prompt: every token of
// the tokenizers Tessera reads (byte-level BPE, SentencePiece-style BPE
// with byte fallback) covers at least one byte of the text, and encoding
// adds at most a word-boundary prefix piece and the special tokens of the
// tokenizer's template (BOS / EOS).
int64_t PromptTokenBound(const std::string& text) {
  constexpr int64_t kAddedTokensAtMost = 4;
  return int64_t(text.size()) + kAddedTokensAtMost;
}

int RunGenerate(const GenerateOptions& o) {
  if (Status flags = CheckFlags(o); !flags.ok()) {
    return ReportError(flags, kExitBadInput);
  }
  // The tokenizer (~0.4 s for a 151k-token vocabulary) builds on its own
  // thread while the checkpoint opens, the runtime starts and, for a plain
  // prompt, the weights load: the KV pool and batch are then sized from an
  // upper bound on the prompt's tokens (PromptTokenBound), and the real
  // count is checked once the tokenizer is there. A chat prompt needs the
  // template first, so it waits. Where both the tokenizer and the
  // checkpoint are bad, the tokenizer's error is the one reported.
  std::future<StatusOr<std::unique_ptr<prompt::PromptTools>>> tools_ready =
      std::async(std::launch::async, [&o] {
        return prompt::PromptTools::Load(o.model_path, o.chat_template);
      });
  std::unique_ptr<prompt::PromptTools> tools;
  prompt::PreparedPrompt prompt;
  // Joins the tokenizer thread and encodes the prompt (once).
  auto prepare_prompt = [&]() -> Status {
    if (tools != nullptr) return OkStatus();
    auto loaded = tools_ready.get();
    if (!loaded.ok()) return loaded.status();
    tools = std::move(loaded).value();
    if (o.chat) {
      Json messages = Json::array({{{"role", "user"}, {"content", o.prompt}}});
      auto rendered = tools->RenderChat(messages, nullptr,
                                        /*add_generation_prompt=*/true, nullptr);
      if (!rendered.ok()) return rendered.status().WithContext("--chat");
      prompt.text = std::move(rendered).value();
    } else {
      prompt.text = o.prompt;
    }
    prompt.ids = tools->tokenizer().Encode(prompt.text, /*add_special_tokens=*/!o.chat);
    if (prompt.ids.empty()) {
      return InvalidArgumentError("--prompt encodes to no tokens; give some text");
    }
    return OkStatus();
  };
  if (o.chat) {
    if (Status ready = prepare_prompt(); !ready.ok()) return ReportError(ready, kExitBadInput);
  }

  const auto load_start = std::chrono::steady_clock::now();
  auto checkpoint = model::Checkpoint::Open(o.model_path);
  if (!checkpoint.ok()) {
    if (Status ready = prepare_prompt(); !ready.ok()) return ReportError(ready, kExitBadInput);
    return ReportError(checkpoint.status(), kExitBadInput);
  }
  const model::ModelConfig& config = (*checkpoint)->config();
  const int64_t context = config.max_position_embeddings;
  // The prompt's token count where known, else its bound (at most the
  // context: longer prompts are refused once counted).
  const int64_t prompt_tokens_at_most =
      tools != nullptr ? int64_t(prompt.ids.size())
                       : std::min(context, PromptTokenBound(o.prompt));
  const ResolvedSampling sampling =
      ResolveSampling(o, (*checkpoint)->generation_config());

  TpFlags tp_flags = o.tp;
  if (Status tp = PrepareTp(tp_flags); !tp.ok()) return ReportError(tp, kExitBadInput);
  runtime::RuntimeFlags flags = o.flags;
  if (tp_flags.tp_size > 1) {
    flags.cpu_plugin_options.push_back(
        {"threads", std::to_string(TpRankThreads(tp_flags)), "--tp-size"});
  }
  auto rt = StartUsableRuntime(flags);
  if (!rt.ok()) return ReportError(rt.status(), kExitBadInput);
  model::ModelRunnerOptions runner_options;
  runner_options.kv_capacity_tokens =
      std::min(context, prompt_tokens_at_most + o.max_new_tokens);
  ApplyQuantizationFlag(o.quantization, **checkpoint, &runner_options);
  ApplyKvCacheDtypeFlag(o.kv_cache_dtype, &runner_options);
  runner_options.max_batch_tokens =
      o.chunked_prefill_size > 0 ? std::min(prompt_tokens_at_most, o.chunked_prefill_size)
                                 : prompt_tokens_at_most;
  std::unique_ptr<TpGroup> tp;  // outlives the runner and the engine
  if (tp_flags.tp_size > 1) {
    TpRunnerSpec spec;
    spec.model_path = o.model_path;
    spec.kv_cache_dtype = o.kv_cache_dtype;
    spec.quantization = o.quantization;
    spec.page_size = runner_options.page_size;
    spec.kv_tokens = runner_options.kv_capacity_tokens;
    spec.max_batch_tokens = runner_options.max_batch_tokens;
    spec.cpu_threads = TpRankThreads(tp_flags);
    spec.flags = o.flags;  // the worker adds its own thread count
    auto group = TpGroup::Start(**rt, tp_flags, spec);
    if (!group.ok()) return ReportError(group.status(), kExitBadInput);
    tp = std::move(*group);
    runner_options.device = TpDevice(tp_flags, 0);
    runner_options.comm = &tp->comm();
  }
  auto runner = model::ModelRunner::Create(**rt, **checkpoint, runner_options);
  if (!runner.ok()) {
    return ReportError(runner.status(), ModelFailureCode(runner.status()));
  }
  if (tp != nullptr) {
    if (Status ready = tp->AwaitReady(**runner, o.model_path); !ready.ok()) {
      return ReportError(ready, kExitRuntimeFailure);
    }
  }
  if (Status ready = prepare_prompt(); !ready.ok()) return ReportError(ready, kExitBadInput);
  const Tokenizer& tokenizer = tools->tokenizer();
  const int64_t prompt_len = int64_t(prompt.ids.size());
  if (prompt_len > prompt_tokens_at_most && prompt_len < context) {
    return ReportError(InternalError(fmt::format(
                           "the prompt encodes to {} tokens, more than the {} its {} bytes "
                           "were bounded by (PromptTokenBound); please report this tokenizer",
                           prompt_len, prompt_tokens_at_most, o.prompt.size())),
                       kExitRuntimeFailure);
  }
  if (prompt_len >= context) {
    return ReportError(InvalidArgumentError(fmt::format(
                           "the prompt has {} tokens but the model's context "
                           "(max_position_embeddings) is {}; shorten it",
                           prompt_len, context)),
                       kExitBadInput);
  }
  int64_t max_new_tokens = o.max_new_tokens;
  if (prompt_len + max_new_tokens > context) {
    max_new_tokens = context - prompt_len;
    fmt::print(stderr,
               "warning: --max-new-tokens {} with a {}-token prompt exceeds "
               "the context of {}; generating at most {}\n",
               o.max_new_tokens, prompt_len, context, max_new_tokens);
  }
  engine::EngineRequest request;
  request.rid = "generate";
  request.prompt_ids = prompt.ids;
  request.max_new_tokens = max_new_tokens;
  request.sampling = sampling.ToParams();
  request.seed =
      o.seed_opt->count() > 0
          ? o.seed
          : (uint64_t(std::random_device{}()) << 32) | std::random_device{}();
  request.ignore_eos = o.ignore_eos;
  request.stop = o.stop;
  request.stop_token_ids = o.stop_token_ids;
  request.logit.repetition_penalty = float(o.repetition_penalty);
  request.logit.presence_penalty = float(o.presence_penalty);
  request.logit.frequency_penalty = float(o.frequency_penalty);
  request.logit.min_tokens = int32_t(o.min_new_tokens);
  request.top_logprobs = o.top_logprobs;

  // The same engine `serve` runs, with one request: stop strings and ids,
  // penalties, logprobs and seeds behave exactly as they do over HTTP.
  engine::EngineOptions engine_options;
  engine_options.tp = tp != nullptr ? &tp->leader() : nullptr;
  engine_options.context_length = context;
  engine_options.chunked_prefill_size = o.chunked_prefill_size;
  engine_options.max_running_requests = 1;
  engine_options.log_interval_s = 0;
  engine_options.eos_ids = EosIds(**checkpoint, tokenizer);
  auto engine =
      engine::Engine::Create(**runner, tokenizer, engine_options);
  if (!engine.ok()) {
    return ReportError(engine.status(), ModelFailureCode(engine.status()));
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

  const auto submitted = std::chrono::steady_clock::now();
  auto stream = (*engine)->Submit(request);
  if (!stream.ok()) return ReportError(stream.status(), kExitBadInput);
  std::vector<int32_t> output_ids;
  std::string text;
  Json logprobs = Json::array();
  engine::RequestOutput last;
  std::optional<std::chrono::steady_clock::time_point> first_token;
  while (!last.finished) {
    for (engine::RequestOutput& out :
         (*stream)->Wait(std::chrono::milliseconds(100))) {
      if (!first_token && !out.token_ids.empty()) {
        first_token = std::chrono::steady_clock::now();
      }
      output_ids.insert(output_ids.end(), out.token_ids.begin(),
                        out.token_ids.end());
      text += out.text;
      for (const engine::TokenLogprobs& lp : out.logprobs) {
        Json top = Json::array();
        for (const auto& [id, value] : lp.top) top.push_back({id, value});
        logprobs.push_back(
            {{"id", lp.id}, {"logprob", lp.logprob}, {"top", std::move(top)}});
      }
      if (!o.json && !out.text.empty()) {
        std::fwrite(out.text.data(), 1, out.text.size(), stdout);
        std::fflush(stdout);
      }
      if (out.finished) last = std::move(out);
    }
  }
  const auto done = std::chrono::steady_clock::now();
  (*engine)->Shutdown(0);
  if (last.finish.kind == engine::FinishReason::Kind::kAbort) {
    if (!o.json) std::fputc('\n', stdout);
    return ReportError(InternalError(last.finish.message)
                           .WithContext("generating"),
                       kExitRuntimeFailure);
  }
  const std::string finish_reason =
      last.finish.kind == engine::FinishReason::Kind::kLength ? "length"
                                                              : "stop";
  const double prefill_s =
      first_token ? std::chrono::duration<double>(*first_token - submitted)
                        .count()
                  : 0.0;
  const double decode_s =
      first_token
          ? std::chrono::duration<double>(done - *first_token).count()
          : 0.0;
  const int64_t decode_tokens =
      std::max<int64_t>(0, int64_t(output_ids.size()) - 1);
  const double prefill_tps = prefill_s > 0 ? prompt_len / prefill_s : 0.0;
  const double decode_tps = decode_s > 0 ? decode_tokens / decode_s : 0.0;
  const std::string stats = fmt::format(
      "prefill: {} tokens in {:.1f} ms ({:.1f} tok/s); decode: {} tokens in "
      "{:.1f} ms ({:.1f} tok/s); finish_reason: {}",
      prompt_len, prefill_s * 1e3, prefill_tps, decode_tokens, decode_s * 1e3,
      decode_tps, finish_reason);
  if (o.json) {
    Json out = Json::object();
    out["prompt"] = prompt.text;
    out["prompt_ids"] = prompt.ids;
    out["output_ids"] = output_ids;
    out["text"] = text;
    out["finish_reason"] = finish_reason;
    if (last.finish.matched_text) {
      out["matched_stop"] = *last.finish.matched_text;
    } else if (last.finish.matched_token) {
      out["matched_stop"] = *last.finish.matched_token;
    }
    out["prompt_tokens"] = prompt_len;
    out["completion_tokens"] = output_ids.size();
    out["prefill_seconds"] = prefill_s;
    out["decode_seconds"] = decode_s;
    out["prefill_tokens_per_s"] = prefill_tps;
    out["decode_tokens_per_s"] = decode_tps;
    if (o.top_logprobs >= 0) out["logprobs"] = std::move(logprobs);
    out["sampling"] = {{"temperature", sampling.temperature},
                       {"top_p", sampling.top_p},
                       {"top_k", sampling.top_k},
                       {"min_p", sampling.min_p},
                       {"seed", *request.seed},
                       {"max_new_tokens", max_new_tokens},
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
  command.app->add_option("--stop", o->stop,
                          "stop when this text is generated (repeatable; "
                          "the text is not part of the output)");
  command.app->add_option("--stop-token-ids", o->stop_token_ids,
                          "stop when one of these token ids is sampled");
  command.app
      ->add_option("--min-new-tokens", o->min_new_tokens,
                   "generate at least this many tokens before any stop id")
      ->capture_default_str();
  command.app
      ->add_option("--repetition-penalty", o->repetition_penalty,
                   "> 1 discourages tokens seen in prompt and output")
      ->capture_default_str();
  command.app
      ->add_option("--presence-penalty", o->presence_penalty,
                   "[-2, 2]: subtracted once from every generated token")
      ->capture_default_str();
  command.app
      ->add_option("--frequency-penalty", o->frequency_penalty,
                   "[-2, 2]: subtracted per occurrence of a generated token")
      ->capture_default_str();
  command.app->add_option(
      "--top-logprobs", o->top_logprobs,
      "with --json: each generated token's logprob and the N likeliest "
      "alternatives (0: the token's alone)");
  command.app
      ->add_option("--chunked-prefill-size", o->chunked_prefill_size,
                   "prefill the prompt in chunks of at most this many tokens "
                   "(0 or -1: all at once)")
      ->capture_default_str();
  AddQuantizationOption(command.app, &o->quantization);
  AddKvCacheDtypeOption(command.app, &o->kv_cache_dtype);
  AddTpFlags(command.app, &o->tp);
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
