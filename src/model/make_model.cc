#include "model/make_model.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>

#include "model/checkpoint.h"
#include "model/generation_config.h"
#include "model/random_weights.h"
#include "model/safetensors_writer.h"
#include "model/synthetic_tokenizer.h"
#include "model/weight_spec.h"

namespace tessera::model {
namespace {

namespace fs = std::filesystem;

// Elements generated per chunk (4 MiB of floats).
constexpr size_t kChunkElements = size_t(1) << 20;

struct Preset {
  std::string_view name;
  int64_t hidden, intermediate, layers, heads, kv_heads, head_dim, vocab;
  int64_t max_positions;
  double rope_theta;
  bool tied;
};

constexpr Preset kPresets[] = {
    {"tiny", 64, 128, 2, 4, 2, 16, 1024, 2048, 10000.0, false},
    {"small", 256, 768, 4, 8, 4, 32, 8192, 4096, 1000000.0, true},
    {"qwen3-0.6b", 1024, 3072, 28, 16, 8, 128, 151936, 40960, 1000000.0, true},
};

std::string TorchDTypeName(DType dtype) {
  switch (dtype) {
    case TSR_DTYPE_F32:
      return "float32";
    case TSR_DTYPE_F16:
      return "float16";
    case TSR_DTYPE_BF16:
      return "bfloat16";
    default:
      return "";
  }
}

Status WriteTextFile(const fs::path& path, std::string_view text) {
  const fs::path partial = path.string() + ".partial";
  {
    std::ofstream out(partial, std::ios::binary | std::ios::trunc);
    out.write(text.data(), std::streamsize(text.size()));
    out.close();
    if (!out) {
      std::error_code ec;
      fs::remove(partial, ec);
      return InternalError(fmt::format("{}: write failed: {}", path.string(),
                                       std::strerror(errno)));
    }
  }
  std::error_code ec;
  fs::rename(partial, path, ec);
  if (ec) {
    return InternalError(fmt::format("{}: cannot rename into place: {}",
                                     path.string(), ec.message()));
  }
  return OkStatus();
}

Status PrepareOutputDir(const fs::path& dir, bool force) {
  std::error_code ec;
  if (fs::exists(dir, ec)) {
    if (!fs::is_directory(dir, ec)) {
      return FailedPreconditionError(
          fmt::format("{}: exists and is not a directory; choose another --out",
                      dir.string()));
    }
    if (!fs::is_empty(dir, ec) && !force) {
      return FailedPreconditionError(fmt::format(
          "{}: exists and is not empty; pass --force to overwrite the model "
          "files in it, or choose another --out",
          dir.string()));
    }
    // Old weights would otherwise shadow or mix with the new ones.
    static const std::regex kShard(R"(model-\d+-of-\d+\.safetensors)");
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
      std::string name = entry.path().filename().string();
      if (name == kSafetensorsFileName || name == kSafetensorsIndexFileName ||
          std::regex_match(name, kShard)) {
        fs::remove(entry.path(), ec);
        if (ec) {
          return InternalError(fmt::format(
              "{}: cannot remove: {}", entry.path().string(), ec.message()));
        }
      }
    }
    return OkStatus();
  }
  fs::create_directories(dir, ec);
  if (ec) {
    return InternalError(fmt::format("{}: cannot create directory: {}",
                                     dir.string(), ec.message()));
  }
  return OkStatus();
}

// Converts `values` to `dtype`, appending to `bytes`.
void Encode(std::span<const float> values, DType dtype,
            std::vector<std::byte>* bytes) {
  const size_t elem = DTypeSize(dtype);
  bytes->resize(values.size() * elem);
  std::byte* out = bytes->data();
  if (dtype == TSR_DTYPE_F32) {
    std::memcpy(out, values.data(), values.size() * 4);
    return;
  }
  for (size_t i = 0; i < values.size(); ++i) {
    uint16_t bits = dtype == TSR_DTYPE_BF16 ? FloatToBf16(values[i])
                                            : FloatToF16(values[i]);
    std::memcpy(out + 2 * i, &bits, 2);
  }
}

GenerationConfig MakeGenerationConfig(const ModelConfig& config,
                                      int32_t endoftext_id) {
  GenerationConfig g;
  g.bos_token_id = endoftext_id;
  g.pad_token_id = endoftext_id;
  g.eos_token_ids = config.eos_token_ids;
  g.eos_token_ids.push_back(endoftext_id);
  g.do_sample = true;
  g.temperature = 0.6;
  g.top_k = 20;
  g.top_p = 0.95;
  g.present = {"bos_token_id", "pad_token_id", "eos_token_id", "do_sample",
               "temperature",  "top_k",        "top_p"};
  return g;
}

}  // namespace

std::vector<std::string> MakeModelPresetNames() {
  std::vector<std::string> names;
  for (const Preset& p : kPresets) names.emplace_back(p.name);
  return names;
}

StatusOr<ModelConfig> MakeModelPresetConfig(std::string_view preset,
                                            Architecture arch, DType dtype) {
  const Preset* found = nullptr;
  for (const Preset& p : kPresets) {
    if (p.name == preset) found = &p;
  }
  if (found == nullptr) {
    return InvalidArgumentError(
        fmt::format("unknown preset \"{}\" (presets: {})", preset,
                    fmt::join(MakeModelPresetNames(), ", ")));
  }
  if (TorchDTypeName(dtype).empty()) {
    return InvalidArgumentError(
        fmt::format("dtype {} cannot hold weights; use f32, f16 or bf16",
                    DTypeName(dtype)));
  }
  ModelConfig c;
  c.architecture = arch;
  c.hidden_size = found->hidden;
  c.intermediate_size = found->intermediate;
  c.num_hidden_layers = found->layers;
  c.num_attention_heads = found->heads;
  c.num_key_value_heads = found->kv_heads;
  c.head_dim = found->head_dim;
  c.vocab_size = found->vocab;
  c.max_position_embeddings = found->max_positions;
  c.rms_norm_eps = 1e-6;
  c.rope_theta = found->rope_theta;
  c.tie_word_embeddings = found->tied;
  c.attention_bias = arch == Architecture::kQwen2;
  c.torch_dtype = TorchDTypeName(dtype);
  // The synthetic tokenizer's special tokens sit at the top three ids.
  c.bos_token_id = int32_t(found->vocab - 3);     // <|endoftext|>
  c.eos_token_ids = {int32_t(found->vocab - 1)};  // <|im_end|>
  c.hidden_act = "silu";
  return c;
}

StatusOr<MakeModelResult> MakeModel(const MakeModelOptions& options) {
  if (options.out_dir.empty()) {
    return InvalidArgumentError("make-model: no output directory given");
  }
  TSR_ASSIGN_OR_RETURN(
      ModelConfig config,
      MakeModelPresetConfig(options.preset, options.arch, options.dtype));
  const fs::path dir(options.out_dir);
  TSR_RETURN_IF_ERROR(PrepareOutputDir(dir, options.force));

  MakeModelResult result;
  result.config = config;
  TSR_ASSIGN_OR_RETURN(SyntheticTokenizer tokenizer,
                       MakeSyntheticTokenizer(config.vocab_size,
                                              config.max_position_embeddings));
  auto write_text = [&](std::string_view name, std::string_view text) {
    fs::path path = dir / name;
    result.files.push_back(path.string());
    return WriteTextFile(path, text);
  };
  TSR_RETURN_IF_ERROR(write_text(kConfigFileName, ModelConfigToJson(config)));
  TSR_RETURN_IF_ERROR(write_text(kGenerationConfigFileName,
                                 GenerationConfigToJson(MakeGenerationConfig(
                                     config, tokenizer.endoftext_id))));
  if (options.embedding) {
    // The pooled token ends every input, as Qwen3-Embedding's tokenizer
    // appends it.
    nlohmann::ordered_json tj =
        nlohmann::ordered_json::parse(tokenizer.tokenizer_json);
    tj["post_processor"] = {
        {"type", "TemplateProcessing"},
        {"single",
         {{{"Sequence", {{"id", "A"}, {"type_id", 0}}}},
          {{"SpecialToken", {{"id", "<|endoftext|>"}, {"type_id", 0}}}}}},
        {"pair",
         {{{"Sequence", {{"id", "A"}, {"type_id", 0}}}},
          {{"Sequence", {{"id", "B"}, {"type_id", 1}}}},
          {{"SpecialToken", {{"id", "<|endoftext|>"}, {"type_id", 1}}}}}},
        {"special_tokens",
         {{"<|endoftext|>",
           {{"id", "<|endoftext|>"},
            {"ids", {tokenizer.endoftext_id}},
            {"tokens", {"<|endoftext|>"}}}}}}};
    tokenizer.tokenizer_json = tj.dump(2) + "\n";
    TSR_RETURN_IF_ERROR(write_text(
        "modules.json",
        R"([
  {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
  {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
  {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}
]
)"));
    std::error_code ec;
    fs::create_directories(dir / "1_Pooling", ec);
    TSR_RETURN_IF_ERROR(write_text(
        "1_Pooling/config.json",
        fmt::format(R"({{
  "word_embedding_dimension": {},
  "pooling_mode_cls_token": false,
  "pooling_mode_mean_tokens": false,
  "pooling_mode_max_tokens": false,
  "pooling_mode_mean_sqrt_len_tokens": false,
  "pooling_mode_weightedmean_tokens": false,
  "pooling_mode_lasttoken": true,
  "include_prompt": true
}}
)",
                    config.hidden_size)));
  }
  TSR_RETURN_IF_ERROR(write_text("tokenizer.json", tokenizer.tokenizer_json));
  TSR_RETURN_IF_ERROR(
      write_text("tokenizer_config.json", tokenizer.tokenizer_config_json));

  // Tensors to write: every required one (a tied lm_head is left out).
  std::vector<TensorDecl> decls;
  for (WeightSpec& spec : options.embedding ? ExpectedEmbeddingWeights(config)
                                             : ExpectedWeights(config)) {
    if (spec.optional) continue;
    // A base-model export: no "model." prefix (checkpoint.h reads both).
    if (options.embedding && spec.name.rfind("model.", 0) == 0) {
      spec.name = spec.name.substr(6);
    }
    decls.push_back(
        {std::move(spec.name), options.dtype, std::move(spec.shape)});
  }
  const size_t elem = DTypeSize(options.dtype);
  auto decl_bytes = [&](const TensorDecl& d) {
    return uint64_t(NumElements(d.shape)) * elem;
  };
  std::vector<std::vector<TensorDecl>> shards(1);
  uint64_t shard_bytes = 0;
  for (TensorDecl& d : decls) {
    uint64_t bytes = decl_bytes(d);
    result.weight_bytes += bytes;
    result.num_parameters += NumElements(d.shape);
    if (options.max_shard_bytes > 0 && !shards.back().empty() &&
        shard_bytes + bytes > options.max_shard_bytes) {
      shards.emplace_back();
      shard_bytes = 0;
    }
    shard_bytes += bytes;
    shards.back().push_back(std::move(d));
  }

  std::vector<float> values(kChunkElements);
  std::vector<std::byte> encoded;
  uint64_t done = 0;
  nlohmann::ordered_json weight_map = nlohmann::ordered_json::object();
  const bool sharded = options.max_shard_bytes > 0;
  for (size_t s = 0; s < shards.size(); ++s) {
    std::string file_name =
        sharded ? fmt::format("model-{:05d}-of-{:05d}.safetensors", s + 1,
                              shards.size())
                : std::string(kSafetensorsFileName);
    const fs::path path = dir / file_name;
    for (const TensorDecl& d : shards[s]) weight_map[d.name] = file_name;
    TSR_ASSIGN_OR_RETURN(auto writer,
                         SafetensorsWriter::Create(path.string(), shards[s]));
    for (const TensorDecl& d : shards[s]) {
      const uint64_t key = TensorStreamKey(options.seed, d.name);
      const InitRule rule = InitFor(d.name);
      const uint64_t count = uint64_t(NumElements(d.shape));
      for (uint64_t first = 0; first < count; first += kChunkElements) {
        size_t n = size_t(std::min<uint64_t>(kChunkElements, count - first));
        std::span<float> chunk(values.data(), n);
        FillNormalLike(key, first, rule.mean, rule.stddev, chunk);
        Encode(chunk, options.dtype, &encoded);
        TSR_RETURN_IF_ERROR(writer->Append(encoded));
        done += encoded.size();
        if (options.progress) options.progress(done, result.weight_bytes);
      }
    }
    TSR_RETURN_IF_ERROR(writer->Finish());
    result.files.push_back(path.string());
  }
  if (sharded) {
    nlohmann::ordered_json index = {
        {"metadata", {{"total_size", result.weight_bytes}}},
        {"weight_map", std::move(weight_map)}};
    TSR_RETURN_IF_ERROR(
        write_text(kSafetensorsIndexFileName, index.dump(2) + "\n"));
  }
  return result;
}

}  // namespace tessera::model
