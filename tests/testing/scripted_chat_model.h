// Real (tiny) checkpoints whose greedy chat answer is a fixed script, for
// end-to-end tests of the output parsers (--tool-call-parser,
// --reasoning-parser) through the whole server.
//
// How: a one-layer Llama whose attention and MLP output projections are
// zero, so the residual stream is just the current token's embedding and
// the next token is a function of the current one (a bigram table written
// into embed_tokens and lm_head). The chain the weights encode:
//   "\n" (the last token of "<|im_start|>assistant\n")
//     -> piece 0 -> piece 1 -> ... -> <|im_end|> (EOS)
// where each piece is an added (non-special) token of a byte-level BPE
// tokenizer (256 bytes + 3 ChatML specials + the pieces), as Qwen's
// tokenizers have <tool_call> and <think>. The chat template is
// make-model's tools-aware ChatML. Every op still runs through the engine
// and the plugin. Pieces must be distinct and not "\n". Test-only.
#ifndef TESSERA_TESTS_TESTING_SCRIPTED_CHAT_MODEL_H_
#define TESSERA_TESTS_TESTING_SCRIPTED_CHAT_MODEL_H_

#include <nlohmann/json.hpp>

#include <fstream>
#include <string>
#include <vector>

#include "model/model_config.h"
#include "model/safetensors_writer.h"
#include "model/synthetic_tokenizer.h"
#include "model/weight_spec.h"

namespace tessera::testing {

// The answer pieces of the two scripts the tests use.
inline std::vector<std::string> ToolCallScript() {
  return {"<tool_call>",
          "\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
          "\"Paris\"}}\n",
          "</tool_call>"};
}
inline std::vector<std::string> ReasoningScript() {
  return {"<think>", "\nThe user wants the weather.\n", "</think>",
          "\n\nIt is sunny in Paris."};
}

inline Status MakeScriptedChatModel(const std::string& dir,
                                    const std::vector<std::string>& pieces) {
  constexpr int64_t kBase = model::kMinSyntheticVocabSize;  // 259
  const int32_t im_end = static_cast<int32_t>(kBase - 1);
  const int64_t vocab = kBase + static_cast<int64_t>(pieces.size());
  TSR_ASSIGN_OR_RETURN(model::SyntheticTokenizer tok,
                       model::MakeSyntheticTokenizer(kBase, 1024));
  nlohmann::ordered_json tj = nlohmann::ordered_json::parse(tok.tokenizer_json);
  auto added = [](int32_t id, const std::string& content) {
    return nlohmann::ordered_json{{"id", id},          {"content", content},
                                  {"single_word", false}, {"lstrip", false},
                                  {"rstrip", false},    {"normalized", false},
                                  {"special", false}};
  };
  for (size_t i = 0; i < pieces.size(); ++i) {
    tj["added_tokens"].push_back(
        added(static_cast<int32_t>(kBase + int64_t(i)), pieces[i]));
  }
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
  std::vector<std::pair<int32_t, int32_t>> chain;
  int32_t current = newline_id;
  for (size_t i = 0; i < pieces.size(); ++i) {
    const int32_t next = static_cast<int32_t>(kBase + int64_t(i));
    chain.emplace_back(current, next);
    current = next;
  }
  chain.emplace_back(current, im_end);
  if (static_cast<int64_t>(chain.size()) > 64) {
    return InvalidArgumentError("at most 63 script pieces (hidden size 64)");
  }

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

#endif  // TESSERA_TESTS_TESTING_SCRIPTED_CHAT_MODEL_H_
