// `tessera make-model`: writes a Hugging Face model directory with seeded
// random weights and a generated tokenizer (src/model/make_model.h).
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <memory>

#include "base/progress.h"
#include "cli/command.h"
#include "model/checkpoint.h"
#include "model/make_model.h"

namespace tessera::cli {
namespace {

// Redraws one "\r"-terminated progress line on a terminal, at most every
// 100 ms or percent.

}  // namespace

Command AddMakeModelCommand(CLI::App& root) {
  struct Args {
    std::string arch = "qwen3";
    std::string preset;
    std::string out;
    uint64_t seed = 0;
    std::string dtype = "bf16";
    bool force = false;
    bool embedding = false;
    uint64_t shard_mib = 0;
  };
  auto args = std::make_shared<Args>();
  Command command;
  command.app = root.add_subcommand(
      "make-model",
      "Write a Hugging Face model directory (config.json, "
      "generation_config.json, model.safetensors, tokenizer.json, "
      "tokenizer_config.json) with seeded random weights and a generated "
      "byte-level BPE tokenizer, for tests, benchmarks and demos.");
  command.app
      ->add_option("--arch", args->arch,
                   "architecture flavour: qwen3 (q/k norms), qwen2 (q/k/v "
                   "biases) or llama")
      ->check(CLI::IsMember({"qwen3", "qwen2", "llama"}))
      ->capture_default_str();
  std::string preset_help = fmt::format(
      "model shape: {}", fmt::join(model::MakeModelPresetNames(), ", "));
  command.app->add_option("--preset", args->preset, preset_help)
      ->required()
      ->check(CLI::IsMember(model::MakeModelPresetNames()));
  command.app->add_option("--out", args->out, "output directory")->required();
  command.app
      ->add_option("--seed", args->seed,
                   "random seed; the same seed writes the same bytes")
      ->capture_default_str();
  command.app
      ->add_option("--dtype", args->dtype, "weight dtype: bf16, f16 or f32")
      ->check(CLI::IsMember({"bf16", "f16", "f32"}))
      ->capture_default_str();
  command.app->add_flag(
      "--embedding", args->embedding,
      "an embedding model as sentence-transformers exports one (Qwen3-"
      "Embedding's layout: no lm_head, last-token pooling, normalized); "
      "serve it with --is-embedding");
  command.app->add_flag("--force", args->force,
                        "write into an existing non-empty directory "
                        "(overwrites the model files there)");
  command.app
      ->add_option("--shard-size-mib", args->shard_mib,
                   "split the weights into shards of at most this many "
                   "MiB plus model.safetensors.index.json (0: one "
                   "file)")
      ->capture_default_str();

  command.run = [args]() -> int {
    model::MakeModelOptions options;
    options.preset = args->preset;
    options.arch = *model::ParseArchitecture(args->arch);
    options.out_dir = args->out;
    options.seed = args->seed;
    options.dtype = *ParseDType(args->dtype);
    options.force = args->force;
    options.embedding = args->embedding;
    options.max_shard_bytes = args->shard_mib << 20;
    auto progress = std::make_shared<ProgressReporter>(
        "writing weights", ProgressReporter::ModeForStderr());
    options.progress = [progress](uint64_t done, uint64_t total) {
      progress->Update(done, total);
    };
    auto start = std::chrono::steady_clock::now();
    auto result = model::MakeModel(options);
    progress->End();
    if (!result.ok()) {
      fmt::print(stderr, "error: {}\n", result.status().message());
      return 1;
    }
    // Read back what was written: a make-model that writes a checkpoint
    // Tessera cannot load is a bug worth failing on loudly.
    auto checkpoint = model::Checkpoint::Open(options.out_dir);
    Status valid = !checkpoint.ok() ? checkpoint.status()
                   : args->embedding
                       ? (*checkpoint)->Validate(model::ExpectedEmbeddingWeights(
                             (*checkpoint)->config()))
                       : (*checkpoint)->Validate();
    if (!valid.ok()) {
      fmt::print(stderr, "error: the written checkpoint does not load: {}\n",
                 valid.message());
      return 1;
    }
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    fmt::print(
        "wrote {} ({} {} {}, {:.1f}M parameters, {:.1f} MiB of "
        "weights, seed {}) in {:.1f} s\n",
        options.out_dir, model::ArchitectureClassName(options.arch),
        args->preset, args->dtype, result->num_parameters / 1e6,
        result->weight_bytes / 1048576.0, args->seed, seconds);
    return 0;
  };
  return command;
}

}  // namespace tessera::cli
