#include "gguf/gguf_vocab.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string_view>

#include "base/bounded_json.h"
#include "base/file_checks.h"

namespace tessera::gguf {
namespace {

using nlohmann::json;

StatusOr<json> ReadJson(const std::string& path) {
  TSR_RETURN_IF_ERROR(CheckRegularFile(path, kMaxTextFileBytes, "the file"));
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return NotFoundError(fmt::format("{}: cannot open the file", path));
  }
  std::stringstream text;
  text << in.rdbuf();
  auto parsed = ParseBoundedJson(text.str());
  if (!parsed.ok()) {
    return InvalidArgumentError(
        fmt::format("{}: not valid JSON ({}); re-download or regenerate it",
                    path, parsed.status().message()));
  }
  return std::move(*parsed);
}

// obj[key] when it is a string / bool, else the default (never throws).
std::string StringField(const json& obj, std::string_view key) {
  if (!obj.is_object()) return "";
  auto it = obj.find(std::string(key));
  return it != obj.end() && it->is_string() ? it->get<std::string>() : "";
}
bool BoolField(const json& obj, std::string_view key, bool fallback) {
  if (!obj.is_object()) return fallback;
  auto it = obj.find(std::string(key));
  return it != obj.end() && it->is_boolean() ? it->get<bool>() : fallback;
}
json Field(const json& obj, std::string_view key) {
  if (!obj.is_object()) return json();
  auto it = obj.find(std::string(key));
  return it != obj.end() ? *it : json();
}

// Calls `visit` on `node` and, for a {"type": "Sequence"} node, on each
// member of its `list_key` array (recursively).
template <typename Visit>
void ForEachComponent(const json& node, std::string_view list_key,
                      const Visit& visit) {
  if (!node.is_object()) return;
  visit(node);
  auto it = node.find(std::string(list_key));
  if (StringField(node, "type") == "Sequence" && it != node.end() &&
      it->is_array()) {
    for (const json& child : *it) ForEachComponent(child, list_key, visit);
  }
}

bool HasComponent(const json& node, std::string_view list_key,
                  std::string_view type) {
  bool found = false;
  ForEachComponent(node, list_key, [&](const json& c) {
    if (StringField(c, "type") == type) found = true;
  });
  return found;
}

// "<0x41>" and the like.
bool IsByteToken(std::string_view token) {
  if (token.size() != 6 || token.substr(0, 3) != "<0x" || token[5] != '>') {
    return false;
  }
  auto hex = [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'F') ||
           (c >= 'a' && c <= 'f');
  };
  return hex(token[3]) && hex(token[4]);
}

// A merges entry, either "left right" or ["left", "right"].
std::optional<std::pair<std::string, std::string>> ParseMerge(
    const json& merge) {
  if (merge.is_string()) {
    const std::string& s = merge.get_ref<const std::string&>();
    size_t space = s.find(' ', 1);
    if (space == std::string::npos) return std::nullopt;
    return std::make_pair(s.substr(0, space), s.substr(space + 1));
  }
  if (merge.is_array() && merge.size() == 2 && merge[0].is_string() &&
      merge[1].is_string()) {
    return std::make_pair(merge[0].get<std::string>(),
                          merge[1].get<std::string>());
  }
  return std::nullopt;
}

// The pre-tokenizer name llama.cpp knows for this byte-level pipeline.
std::string ByteLevelPreName(const json& pre_tokenizer,
                             std::vector<std::string>& notes) {
  std::vector<std::string> regexes;
  bool byte_level_regex = false;
  ForEachComponent(pre_tokenizer, "pretokenizers", [&](const json& c) {
    const std::string type = StringField(c, "type");
    if (type == "Split" && c.contains("pattern") && c["pattern"].is_object() &&
        c["pattern"].contains("Regex") && c["pattern"]["Regex"].is_string()) {
      regexes.push_back(c["pattern"]["Regex"].get<std::string>());
    }
    if (type == "ByteLevel" && BoolField(c, "use_regex", true)) {
      byte_level_regex = true;
    }
  });
  if (regexes.size() == 1 && regexes[0] == kQwen2PreRegex) return "qwen2";
  if (regexes.size() == 1 && regexes[0] == kLlama3PreRegex) return "llama-bpe";
  if (regexes.empty() && byte_level_regex) return "gpt-2";
  notes.push_back(
      "the pre-tokenizer matches none llama.cpp knows by name (qwen2, "
      "llama-bpe, gpt-2); wrote tokenizer.ggml.pre \"default\", so llama.cpp "
      "may split text differently (token ids passed directly are "
      "unaffected)");
  return "default";
}

// Whether the post-processor's single-sequence template starts with the
// BOS token.
bool PostProcessorAddsBos(const json& post, const std::string& bos_text) {
  bool adds = false;
  ForEachComponent(post, "processors", [&](const json& c) {
    if (StringField(c, "type") != "TemplateProcessing") return;
    auto single = c.find("single");
    if (single == c.end() || !single->is_array() || single->empty()) return;
    const json& first = (*single)[0];
    if (first.contains("SpecialToken") && first["SpecialToken"].is_object() &&
        StringField(first["SpecialToken"], "id") == bos_text) {
      adds = true;
    }
  });
  return adds;
}

}  // namespace

StatusOr<VocabSummary> AddTokenizerMetadata(const std::string& model_dir,
                                            const VocabOptions& options,
                                            GgufWriter& writer) {
  namespace fs = std::filesystem;
  const std::string path = (fs::path(model_dir) / "tokenizer.json").string();
  TSR_ASSIGN_OR_RETURN(json tok, ReadJson(path));
  json config = json::object();
  const std::string config_path =
      (fs::path(model_dir) / "tokenizer_config.json").string();
  if (fs::exists(config_path)) {
    TSR_ASSIGN_OR_RETURN(config, ReadJson(config_path));
  }

  if (!tok.is_object() || !tok.contains("model") || !tok["model"].is_object()) {
    return InvalidArgumentError(
        fmt::format("{}: no \"model\" object; is this a Hugging Face "
                    "tokenizer.json?",
                    path));
  }
  const json& model = tok["model"];
  const std::string model_type = StringField(model, "type");
  if (model_type != "BPE") {
    return UnimplementedError(fmt::format(
        "{}: a {} tokenizer; GGUF conversion supports BPE tokenizers "
        "(byte-level or SentencePiece-style) only",
        path, model_type.empty() ? "typeless" : model_type));
  }
  if (!model.contains("vocab") || !model["vocab"].is_object()) {
    return InvalidArgumentError(
        fmt::format("{}: model.vocab is missing or not an object", path));
  }

  const int64_t vocab_size = options.vocab_size;
  VocabSummary summary;
  std::vector<std::string> tokens(static_cast<size_t>(vocab_size));
  std::vector<bool> present(static_cast<size_t>(vocab_size), false);
  std::vector<int32_t> types(static_cast<size_t>(vocab_size),
                             int32_t(TokenType::kNormal));
  std::map<std::string, int64_t, std::less<>> id_of;
  auto place = [&](const std::string& text, int64_t id) -> Status {
    if (id < 0 || id >= vocab_size) {
      return InvalidArgumentError(fmt::format(
          "{}: token '{}' has id {}, outside the model's vocab_size {}", path,
          text, id, vocab_size));
    }
    tokens[size_t(id)] = text;
    present[size_t(id)] = true;
    id_of[text] = id;
    return OkStatus();
  };
  for (const auto& [text, id] : model["vocab"].items()) {
    if (!id.is_number_integer()) {
      return InvalidArgumentError(
          fmt::format("{}: vocab entry '{}' has no integer id", path, text));
    }
    TSR_RETURN_IF_ERROR(place(text, id.get<int64_t>()));
  }
  std::vector<std::pair<int64_t, bool>> added;  // (id, special)
  if (tok.contains("added_tokens") && tok["added_tokens"].is_array()) {
    for (const json& a : tok["added_tokens"]) {
      if (!a.is_object() || !a.contains("id") || !a.contains("content") ||
          !a["id"].is_number_integer() || !a["content"].is_string()) {
        return InvalidArgumentError(fmt::format(
            "{}: an added_tokens entry lacks an integer id or content", path));
      }
      const int64_t id = a["id"].get<int64_t>();
      TSR_RETURN_IF_ERROR(place(a["content"].get<std::string>(), id));
      added.emplace_back(id, BoolField(a, "special", false));
    }
  }
  for (int64_t id = 0; id < vocab_size; ++id) {
    if (!present[size_t(id)]) {
      tokens[size_t(id)] = fmt::format("[PAD{}]", id);
      types[size_t(id)] = int32_t(TokenType::kUnused);
      ++summary.num_padding;
    }
  }

  const json pre_tokenizer = Field(tok, "pre_tokenizer");
  const json decoder = Field(tok, "decoder");
  const bool byte_level =
      HasComponent(pre_tokenizer, "pretokenizers", "ByteLevel") ||
      HasComponent(decoder, "decoders", "ByteLevel");
  const bool byte_fallback = BoolField(model, "byte_fallback", false);
  const json merges =
      model.contains("merges") ? model["merges"] : json::array();
  if (!merges.is_array()) {
    return InvalidArgumentError(
        fmt::format("{}: model.merges is not an array", path));
  }

  std::optional<int64_t> unk_id;
  if (model.contains("unk_token") && model["unk_token"].is_string()) {
    auto it = id_of.find(model["unk_token"].get<std::string>());
    if (it != id_of.end()) unk_id = it->second;
  }

  if (byte_level) {
    summary.model = "gpt2";
    for (auto [id, special] : added) {
      types[size_t(id)] =
          int32_t(special ? TokenType::kControl : TokenType::kUserDefined);
    }
    std::vector<std::string> merge_strings;
    merge_strings.reserve(merges.size());
    for (const json& m : merges) {
      auto pair = ParseMerge(m);
      if (!pair) {
        return InvalidArgumentError(
            fmt::format("{}: merge #{} is neither \"a b\" nor [\"a\", \"b\"]",
                        path, merge_strings.size()));
      }
      merge_strings.push_back(pair->first + " " + pair->second);
    }
    summary.num_merges = int64_t(merge_strings.size());
    summary.pre = ByteLevelPreName(pre_tokenizer, summary.notes);
    writer.SetString("tokenizer.ggml.model", "gpt2");
    writer.SetString("tokenizer.ggml.pre", summary.pre);
    writer.SetStringArray("tokenizer.ggml.tokens", tokens);
    writer.SetI32Array("tokenizer.ggml.token_type", types);
    writer.SetStringArray("tokenizer.ggml.merges", std::move(merge_strings));
  } else if (byte_fallback) {
    summary.model = "llama";
    // Scores: -rank of the first merge that makes the token.
    std::vector<float> scores(static_cast<size_t>(vocab_size), 0.0f);
    std::vector<bool> merged(static_cast<size_t>(vocab_size), false);
    for (size_t rank = 0; rank < merges.size(); ++rank) {
      auto pair = ParseMerge(merges[rank]);
      if (!pair) {
        return InvalidArgumentError(fmt::format(
            "{}: merge #{} is neither \"a b\" nor [\"a\", \"b\"]", path, rank));
      }
      auto it = id_of.find(pair->first + pair->second);
      if (it == id_of.end() || merged[size_t(it->second)]) continue;
      merged[size_t(it->second)] = true;
      scores[size_t(it->second)] = -float(rank);
    }
    for (int64_t id = 0; id < vocab_size; ++id) {
      if (!present[size_t(id)]) continue;
      if (IsByteToken(tokens[size_t(id)])) {
        types[size_t(id)] = int32_t(TokenType::kByte);
      } else if (!merged[size_t(id)]) {
        scores[size_t(id)] = -float(int64_t(merges.size()) + id);
      }
    }
    for (auto [id, special] : added) {
      types[size_t(id)] =
          int32_t(special ? TokenType::kControl : TokenType::kUserDefined);
      scores[size_t(id)] = 0.0f;
    }
    if (unk_id) {
      types[size_t(*unk_id)] = int32_t(TokenType::kUnknown);
      scores[size_t(*unk_id)] = 0.0f;
    }
    bool prepends_space = false;
    ForEachComponent(Field(tok, "normalizer"), "normalizers",
                     [&](const json& c) {
                       if (StringField(c, "type") == "Prepend" &&
                           StringField(c, "prepend") == "\u2581") {
                         prepends_space = true;
                       }
                     });
    writer.SetString("tokenizer.ggml.model", "llama");
    writer.SetStringArray("tokenizer.ggml.tokens", tokens);
    writer.SetF32Array("tokenizer.ggml.scores", std::move(scores));
    writer.SetI32Array("tokenizer.ggml.token_type", types);
    writer.SetBool("tokenizer.ggml.add_space_prefix", prepends_space);
  } else {
    return UnimplementedError(fmt::format(
        "{}: a BPE tokenizer that is neither byte-level (ByteLevel "
        "pre-tokenizer/decoder) nor SentencePiece-style (byte_fallback); "
        "GGUF conversion does not know how llama.cpp should read it",
        path));
  }
  summary.num_tokens = vocab_size;

  if (options.bos_token_id) {
    writer.SetU32("tokenizer.ggml.bos_token_id",
                  uint32_t(*options.bos_token_id));
  }
  if (options.eos_token_id) {
    writer.SetU32("tokenizer.ggml.eos_token_id",
                  uint32_t(*options.eos_token_id));
  }
  if (unk_id)
    writer.SetU32("tokenizer.ggml.unknown_token_id", uint32_t(*unk_id));

  bool add_bos = false;
  if (config.contains("add_bos_token") &&
      config["add_bos_token"].is_boolean()) {
    add_bos = config["add_bos_token"].get<bool>();
  } else if (options.bos_token_id &&
             *options.bos_token_id < int32_t(vocab_size)) {
    add_bos = PostProcessorAddsBos(Field(tok, "post_processor"),
                                   tokens[size_t(*options.bos_token_id)]);
  }
  writer.SetBool("tokenizer.ggml.add_bos_token", add_bos);
  writer.SetBool("tokenizer.ggml.add_eos_token",
                 BoolField(config, "add_eos_token", false));
  if (config.contains("chat_template") && config["chat_template"].is_string()) {
    writer.SetString("tokenizer.chat_template",
                     config["chat_template"].get<std::string>());
  }
  return summary;
}

}  // namespace tessera::gguf
