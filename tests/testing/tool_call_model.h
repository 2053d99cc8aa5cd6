// A real (tiny) checkpoint whose greedy chat answer is a tool call, for
// end-to-end tests of --tool-call-parser through the whole server.
//
// How: a one-layer Llama whose attention and MLP output projections are
// zero, so the residual stream is just the current token's embedding and
// the next token is a function of the current one (a bigram table written
// into embed_tokens and lm_head). The chain the weights encode:
//   "\n" (the last token of "<|im_start|>assistant\n")
//     -> <tool_call> -> TOOL_JSON -> </tool_call> -> <|im_end|> (EOS)
// where <tool_call>, </tool_call> and TOOL_JSON are added (non-special)
// tokens of a byte-level BPE tokenizer (256 bytes + 3 ChatML specials +
// these 3), as in Qwen's tokenizers. The chat template is make-model's
// tools-aware ChatML. Every op still runs through the engine and plugin.
// Test-only.
#ifndef TESSERA_TESTS_TESTING_TOOL_CALL_MODEL_H_
#define TESSERA_TESTS_TESTING_TOOL_CALL_MODEL_H_

#include <nlohmann/json.hpp>

#include <fstream>
#include <string>
#include <vector>

#include "model/model_config.h"
#include "model/safetensors_writer.h"
#include "model/synthetic_tokenizer.h"
#include "model/weight_spec.h"

namespace tessera::testing {

// The arguments text TOOL_JSON carries.
inline constexpr const char* kToolCallJson =
    "\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n";

inline Status MakeToolCallModel(const std::string& dir) {
  constexpr int64_t kBase = model::kMinSyntheticVocabSize;  // 259
  const int32_t im_end = static_cast<int32_t>(kBase - 1);
  const int32_t open_id = kBase, json_id = kBase + 1, close_id = kBase + 2;
  const int64_t vocab = kBase + 3;
  TSR_ASSIGN_OR_RETURN(model::SyntheticTokenizer tok,
                       model::MakeSyntheticTokenizer(kBase, 1024));
  nlohmann::ordered_json tj = nlohmann::ordered_json::parse(tok.tokenizer_json);
  auto added = [](int32_t id, const std::string& content) {
    return nlohmann::ordered_json{{"id", id},          {"content", content},
                                  {"single_word", false}, {"lstrip", false},
                                  {"rstrip", false},    {"normalized", false},
                                  {"special", false}};
  };
  tj["added_tokens"].push_back(added(open_id, "<tool_call>"));
  tj["added_tokens"].push_back(added(json_id, kToolCallJson));
  tj["added_tokens"].push_back(added(close_id, "</tool_call>"));
  std::ofstream(dir + "/tokenizer.json") << tj.dump(2);
  std::ofstream(dir + "/tokenizer_config.json") << tok.tokenizer_config_json;

  model::ModelConfig c;
  c.architecture = model::Architecture::kLlama;
  c.hidden_size = 64;
  c.intermediate_size = 64;
  c.num_hidden_layers = 1;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 4;
  c.head_dim = 16;
  c.vocab_size = vocab;
  c.max_position_embeddings = 1024;
  c.rms_norm_eps = 1e-6;
  c.rope_theta = 10000.0;
  c.tie_word_embeddings = false;
  c.torch_dtype = "float32";
  {
    std::ofstream out(dir + "/config.json");
    out << model::ModelConfigToJson(c);
    if (!out) return InternalError("cannot write " + dir + "/config.json");
  }
  // The chain, as (current token, next token); "\n" is byte 0x0A, whose
  // byte-level token id is its rank in the 256-byte alphabet.
  const int32_t newline_id = static_cast<int32_t>(
      nlohmann::json::parse(tok.tokenizer_json)["model"]["vocab"]
          .value("\u010a", -1));
  if (newline_id < 0) return InternalError("no byte-level newline token");
  const std::vector<std::pair<int32_t, int32_t>> chain = {
      {newline_id, open_id}, {open_id, json_id}, {json_id, close_id},
      {close_id, im_end}};

  std::vector<model::TensorDecl> decls;
  for (const model::WeightSpec& spec : model::ExpectedWeights(c)) {
    decls.push_back({spec.name, TSR_DTYPE_F32, spec.shape});
  }
  TSR_ASSIGN_OR_RETURN(auto writer, model::SafetensorsWriter::Create(
                                        dir + "/model.safetensors", decls));
  for (const model::TensorDecl& d : decls) {
    std::vector<float> v(static_cast<size_t>(model::NumElements(d.shape)), 0.0f);
    const bool norm = d.name.size() > 11 &&
                      d.name.substr(d.name.size() - 11) == "norm.weight";
    if (norm) std::fill(v.begin(), v.end(), 1.0f);
    const int64_t h = c.hidden_size;
    for (size_t i = 0; i < chain.size(); ++i) {
      if (d.name == "model.embed_tokens.weight") {
        v[static_cast<size_t>(chain[i].first * h + int64_t(i))] = 1.0f;
      } else if (d.name == "lm_head.weight") {
        v[static_cast<size_t>(chain[i].second * h + int64_t(i))] = 10.0f;
      }
    }
    TSR_RETURN_IF_ERROR(
        writer->Append(std::as_bytes(std::span<const float>(v))));
  }
  return writer->Finish();
}

}  // namespace tessera::testing

#endif  // TESSERA_TESTS_TESTING_TOOL_CALL_MODEL_H_
