#include "gguf/gguf_tokenizer.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace tessera::gguf {
namespace {

// Key order is irrelevant to the loader; std::map objects keep inserting
// 150k vocabulary entries O(log n) each.
using Json = nlohmann::json;

constexpr std::string_view kSpaceMarker = "\u2581";  // ▁

// Byte length of the UTF-8 sequence starting with `lead` (1 for a stray
// continuation byte, so splitting always advances).
size_t Utf8Length(unsigned char lead) {
  if (lead >= 0xF0) return 4;
  if (lead >= 0xE0) return 3;
  if (lead >= 0xC0) return 2;
  return 1;
}

struct Vocab {
  const std::vector<std::string>* tokens = nullptr;
  std::vector<int64_t> types;  // TokenType per id (NORMAL when absent)
  const std::vector<double>* scores = nullptr;
};

bool IsSpecialType(int64_t type) {
  return type == int64_t(TokenType::kControl) ||
         type == int64_t(TokenType::kUnknown);
}

// "llama" merges: every split of a normal token into two usable tokens,
// ranked by the token's score (see the header).
std::vector<std::string> MergesFromScores(const Vocab& v) {
  const auto& tokens = *v.tokens;
  std::unordered_map<std::string_view, int64_t> usable;
  for (size_t id = 0; id < tokens.size(); ++id) {
    const int64_t t = v.types[id];
    if (t == int64_t(TokenType::kNormal) ||
        t == int64_t(TokenType::kUserDefined)) {
      usable.emplace(tokens[id], int64_t(id));
    }
  }
  struct Merge {
    double score;
    int64_t id;
    size_t pos;
  };
  std::vector<Merge> merges;
  for (size_t id = 0; id < tokens.size(); ++id) {
    if (v.types[id] != int64_t(TokenType::kNormal)) continue;
    const std::string& text = tokens[id];
    for (size_t pos = Utf8Length(text[0]); pos < text.size();
         pos += Utf8Length(text[pos])) {
      std::string_view left(text.data(), pos);
      std::string_view right(text.data() + pos, text.size() - pos);
      if (usable.count(left) && usable.count(right)) {
        merges.push_back({(*v.scores)[id], int64_t(id), pos});
      }
    }
  }
  std::stable_sort(merges.begin(), merges.end(),
                   [](const Merge& a, const Merge& b) {
                     if (a.score != b.score) return a.score > b.score;
                     if (a.id != b.id) return a.id < b.id;
                     return a.pos < b.pos;
                   });
  std::vector<std::string> out;
  out.reserve(merges.size());
  for (const Merge& m : merges) {
    const std::string& text = tokens[size_t(m.id)];
    out.push_back(text.substr(0, m.pos) + " " + text.substr(m.pos));
  }
  return out;
}

Json AddedToken(int64_t id, const std::string& text, bool special) {
  return {{"id", id},          {"content", text}, {"single_word", false},
          {"lstrip", false},   {"rstrip", false}, {"normalized", false},
          {"special", special}};
}

Json Split(std::string_view regex) {
  return {{"type", "Split"},
          {"pattern", {{"Regex", regex}}},
          {"behavior", "Isolated"},
          {"invert", false}};
}

Json ByteLevel(bool use_regex) {
  return {{"type", "ByteLevel"},
          {"add_prefix_space", false},
          {"trim_offsets", false},
          {"use_regex", use_regex}};
}

}  // namespace

StatusOr<GgufTokenizerFiles> TokenizerFilesFromGguf(const GgufFile& file) {
  const std::string& path = file.path();
  GgufTokenizerFiles out;
  TSR_ASSIGN_OR_RETURN(auto model, file.GetString("tokenizer.ggml.model"));
  if (!model) {
    return InvalidArgumentError(fmt::format(
        "{}: no tokenizer.ggml.model; the file carries no tokenizer", path));
  }
  out.model = *model;
  if (out.model != "gpt2" && out.model != "llama") {
    return UnimplementedError(fmt::format(
        "{}: tokenizer model '{}'; Tessera reads GGUF tokenizers of the "
        "models 'gpt2' (byte-level BPE) and 'llama' (SentencePiece BPE)",
        path, out.model));
  }
  Vocab v;
  TSR_ASSIGN_OR_RETURN(v.tokens, file.GetStringArray("tokenizer.ggml.tokens"));
  if (v.tokens == nullptr || v.tokens->empty()) {
    return InvalidArgumentError(
        fmt::format("{}: tokenizer.ggml.tokens is missing or empty", path));
  }
  const size_t n = v.tokens->size();
  TSR_ASSIGN_OR_RETURN(const std::vector<int64_t>* types,
                       file.GetIntArray("tokenizer.ggml.token_type"));
  if (types != nullptr && types->size() != n) {
    return InvalidArgumentError(fmt::format(
        "{}: tokenizer.ggml.token_type has {} entries for {} tokens", path,
        types->size(), n));
  }
  v.types = types ? *types
                  : std::vector<int64_t>(n, int64_t(TokenType::kNormal));

  auto token_id = [&](std::string_view key) -> StatusOr<std::optional<int64_t>> {
    TSR_ASSIGN_OR_RETURN(auto id, file.GetInt(key));
    if (id && (*id < 0 || size_t(*id) >= n)) {
      return InvalidArgumentError(fmt::format(
          "{}: {} is {}, outside the {} tokens", path, key, *id, n));
    }
    return id;
  };
  TSR_ASSIGN_OR_RETURN(auto bos, token_id("tokenizer.ggml.bos_token_id"));
  TSR_ASSIGN_OR_RETURN(auto eos, token_id("tokenizer.ggml.eos_token_id"));
  TSR_ASSIGN_OR_RETURN(auto unk, token_id("tokenizer.ggml.unknown_token_id"));
  TSR_ASSIGN_OR_RETURN(auto add_bos, file.GetBool("tokenizer.ggml.add_bos_token"));
  TSR_ASSIGN_OR_RETURN(auto add_eos, file.GetBool("tokenizer.ggml.add_eos_token"));
  TSR_ASSIGN_OR_RETURN(out.chat_template,
                       file.GetString("tokenizer.chat_template"));

  Json tok;
  tok["version"] = "1.0";
  tok["truncation"] = nullptr;
  tok["padding"] = nullptr;
  Json added = Json::array();
  Json vocab = Json::object();
  std::unordered_set<std::string_view> seen;  // first id of a duplicate wins
  const bool gpt2 = out.model == "gpt2";
  bool default_add_bos = !gpt2;
  for (size_t id = 0; id < n; ++id) {
    const std::string& text = (*v.tokens)[id];
    const int64_t type = v.types[id];
    const bool special = IsSpecialType(type) || (unk && *unk == int64_t(id));
    const bool user = type == int64_t(TokenType::kUserDefined);
    if (special || user) added.push_back(AddedToken(int64_t(id), text, special));
    // Byte-level files keep added tokens out of the BPE vocabulary (as
    // Qwen's and Llama 3's tokenizer.json do); SentencePiece ones list
    // every token there (as Llama 2's do).
    if (gpt2 && (special || user)) continue;
    if (seen.insert(text).second) vocab[text] = int64_t(id);
  }
  tok["added_tokens"] = std::move(added);

  Json bpe = {{"type", "BPE"},       {"dropout", nullptr},
                      {"unk_token", nullptr}, {"continuing_subword_prefix", nullptr},
                      {"end_of_word_suffix", nullptr}, {"fuse_unk", !gpt2},
                      {"byte_fallback", !gpt2}, {"ignore_merges", false}};
  if (unk) bpe["unk_token"] = (*v.tokens)[size_t(*unk)];
  if (gpt2) {
    TSR_ASSIGN_OR_RETURN(auto pre, file.GetString("tokenizer.ggml.pre"));
    out.pre = pre.value_or("default");
    TSR_ASSIGN_OR_RETURN(const std::vector<std::string>* merges,
                         file.GetStringArray("tokenizer.ggml.merges"));
    if (merges == nullptr) {
      return InvalidArgumentError(fmt::format(
          "{}: a gpt2 tokenizer without tokenizer.ggml.merges", path));
    }
    if (out.pre == "qwen2" || out.pre == "deepseek-r1-qwen") {
      tok["normalizer"] = {{"type", "NFC"}};
      tok["pre_tokenizer"] = {
          {"type", "Sequence"},
          {"pretokenizers", {Split(kQwen2PreRegex), ByteLevel(false)}}};
    } else if (out.pre == "llama-bpe" || out.pre == "llama3" ||
               out.pre == "smaug-bpe") {
      tok["normalizer"] = nullptr;
      tok["pre_tokenizer"] = {
          {"type", "Sequence"},
          {"pretokenizers", {Split(kLlama3PreRegex), ByteLevel(false)}}};
      bpe["ignore_merges"] = true;
      default_add_bos = true;
    } else if (out.pre == "gpt-2") {
      tok["normalizer"] = nullptr;
      tok["pre_tokenizer"] = ByteLevel(true);
    } else {
      return UnimplementedError(fmt::format(
          "{}: byte-level tokenizer with pre-tokenizer '{}'; Tessera knows "
          "qwen2, deepseek-r1-qwen, llama-bpe, smaug-bpe and gpt-2",
          path, out.pre));
    }
    tok["post_processor"] = nullptr;
    tok["decoder"] = ByteLevel(true);
    bpe["vocab"] = std::move(vocab);
    bpe["merges"] = *merges;
  } else {
    TSR_ASSIGN_OR_RETURN(v.scores, file.GetFloatArray("tokenizer.ggml.scores"));
    if (v.scores == nullptr || v.scores->size() != n) {
      return InvalidArgumentError(fmt::format(
          "{}: a llama tokenizer needs tokenizer.ggml.scores with one entry "
          "per token ({})",
          path, n));
    }
    TSR_ASSIGN_OR_RETURN(auto space_prefix,
                         file.GetBool("tokenizer.ggml.add_space_prefix"));
    const bool prefix = space_prefix.value_or(true);
    Json normalizers = Json::array();
    if (prefix) normalizers.push_back({{"type", "Prepend"}, {"prepend", kSpaceMarker}});
    normalizers.push_back({{"type", "Replace"},
                           {"pattern", {{"String", " "}}},
                           {"content", kSpaceMarker}});
    tok["normalizer"] = {{"type", "Sequence"}, {"normalizers", normalizers}};
    tok["pre_tokenizer"] = nullptr;
    tok["post_processor"] = nullptr;
    Json decoders = Json::array();
    decoders.push_back({{"type", "Replace"},
                        {"pattern", {{"String", kSpaceMarker}}},
                        {"content", " "}});
    decoders.push_back({{"type", "ByteFallback"}});
    decoders.push_back({{"type", "Fuse"}});
    if (prefix) {
      decoders.push_back(
          {{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}});
    }
    tok["decoder"] = {{"type", "Sequence"}, {"decoders", decoders}};
    bpe["merges"] = MergesFromScores(v);
    bpe["vocab"] = std::move(vocab);
  }
  tok["model"] = std::move(bpe);
  // Token, merge and template strings become JSON strings: bytes that are
  // not UTF-8 (a corrupt file) are an error, not an exception.
  auto dump = [&](const Json& j, std::string* text) -> Status {
    try {
      *text = j.dump();
    } catch (const Json::exception& e) {
      return InvalidArgumentError(fmt::format(
          "{}: the tokenizer metadata holds text that is not UTF-8 ({}); the "
          "file is corrupt",
          path, e.what()));
    }
    return OkStatus();
  };
  TSR_RETURN_IF_ERROR(dump(tok, &out.tokenizer_json));

  Json config = Json::object();
  config["add_bos_token"] = add_bos.value_or(default_add_bos) && bos.has_value();
  config["add_eos_token"] = add_eos.value_or(false) && eos.has_value();
  config["bos_token"] = bos ? Json((*v.tokens)[size_t(*bos)]) : Json();
  config["eos_token"] = eos ? Json((*v.tokens)[size_t(*eos)]) : Json();
  if (unk) config["unk_token"] = (*v.tokens)[size_t(*unk)];
  config["clean_up_tokenization_spaces"] = false;
  if (out.chat_template) config["chat_template"] = *out.chat_template;
  TSR_RETURN_IF_ERROR(dump(config, &out.tokenizer_config_json));
  return out;
}

}  // namespace tessera::gguf
