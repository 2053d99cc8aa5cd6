// `tessera convert-gguf`: writes a Hugging Face checkpoint as a GGUF file
// for llama.cpp (src/gguf/convert.h), e.g. to compare the two on the same
// weights (bench/peer_llamacpp.sh).
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>

#include "base/progress.h"
#include "cli/command.h"
#include "gguf/convert.h"

namespace tessera::cli {

Command AddConvertGgufCommand(CLI::App& root) {
  struct Args {
    std::string model_path;
    std::string out;
    std::string type = "f16";
    bool force = false;
  };
  auto args = std::make_shared<Args>();
  Command command;
  command.app = root.add_subcommand(
      "convert-gguf",
      "Write a Hugging Face model folder (Llama, Qwen2, Qwen3) as a GGUF "
      "file llama.cpp loads: its names and metadata, the tokenizer, 2-D "
      "weights as --type (norms and biases stay f32). Exit 0: done; 2: bad "
      "flags or an unsupported model; 1: a write failed");
  command.app
      ->add_option("--model-path", args->model_path,
                   "Hugging Face model folder (config.json, *.safetensors, "
                   "tokenizer.json)")
      ->required();
  command.app->add_option("--out", args->out, "the .gguf file to write")
      ->required();
  command.app
      ->add_option("--type", args->type,
                   "type of the 2-D weights: f32, f16, bf16 or q8_0")
      ->check(CLI::IsMember({"f32", "f16", "bf16", "q8_0"}))
      ->capture_default_str();
  command.app->add_flag("--force", args->force,
                        "overwrite --out when it exists");

  command.run = [args]() -> int {
    if (std::filesystem::exists(args->out) && !args->force) {
      fmt::print(stderr,
                 "error: {} exists; pass --force to overwrite it or choose "
                 "another --out\n",
                 args->out);
      return 2;
    }
    const gguf::TensorType type = *gguf::ParseTensorType(args->type);
    ProgressReporter reporter("writing tensors",
                              ProgressReporter::ModeForStderr());
    auto progress = [&](uint64_t done, uint64_t total) {
      reporter.Update(done, total);
    };
    auto start = std::chrono::steady_clock::now();
    auto result = gguf::ConvertCheckpointToGguf(args->model_path, args->out,
                                                type, progress);
    reporter.End();
    if (!result.ok()) {
      fmt::print(stderr, "error: {}\n", result.status().message());
      const StatusCode code = result.status().code();
      return code == StatusCode::kInternal || code == StatusCode::kDataLoss ? 1
                                                                            : 2;
    }
    for (const auto& note : result->notes) {
      fmt::print(stderr, "note: {}\n", note);
    }
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    fmt::print(
        "wrote {} ({}, {} tensors, {:.1f} MiB of {} weights, "
        "tokenizer {}{}) in {:.1f} s\n",
        args->out, result->architecture, result->num_tensors,
        result->tensor_bytes / 1048576.0, args->type, result->vocab.model,
        result->vocab.pre.empty() ? "" : "/" + result->vocab.pre, seconds);
    return 0;
  };
  return command;
}

}  // namespace tessera::cli
