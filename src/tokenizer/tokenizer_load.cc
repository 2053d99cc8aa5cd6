// Tokenizer::Load and Tokenizer::FromJsonText: reading tokenizer.json and
// tokenizer_config.json into the pipeline components.
#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/bounded_json.h"
#include "base/file_checks.h"
#include "base/logging.h"
#include "tokenizer/json_util.h"
#include "tokenizer/tokenizer.h"

namespace tessera {

using tok::FindField;
using tok::Json;

class TokenizerLoader {
 public:
  static StatusOr<std::unique_ptr<Tokenizer>> Build(
      std::string_view tokenizer_json, std::string_view config_json);

 private:
  static StatusOr<Json> ParseJson(std::string_view text, std::string_view what);
  static Status ReadAddedTokens(const Json& root, Tokenizer* t);
  static Status ReadConfig(const Json& config, Tokenizer* t);
};

namespace {

// A token named in tokenizer_config.json: "text" or {"content": "text", ...}.
StatusOr<std::string> ConfigTokenText(const Json& config,
                                      std::string_view key) {
  const Json* field = FindField(config, key);
  if (field == nullptr) return std::string();
  if (field->is_string()) return field->get<std::string>();
  if (field->is_object()) {
    return tok::RequireString(*field, "content", std::string(key));
  }
  return InvalidArgumentError(fmt::format(
      "{}: expected a string or an object with \"content\", found {}", key,
      tok::DescribeJsonType(*field)));
}

StatusOr<tok::AddedToken> ParseAddedToken(const Json& entry,
                                          std::string_view where) {
  tok::AddedToken token;
  if (!entry.is_object()) {
    return InvalidArgumentError(fmt::format("{}: expected an object, found {}",
                                            where,
                                            tok::DescribeJsonType(entry)));
  }
  TSR_ASSIGN_OR_RETURN(int64_t id, tok::OptionalInt(entry, "id", where, -1));
  if (id < 0 || id > tok::kMaxTokenId) {
    return InvalidArgumentError(fmt::format(
        "{}.id: required token id in [0, {}] is missing or out of range", where,
        tok::kMaxTokenId));
  }
  token.id = static_cast<int32_t>(id);
  TSR_ASSIGN_OR_RETURN(token.content,
                       tok::RequireString(entry, "content", where));
  TSR_ASSIGN_OR_RETURN(token.single_word,
                       tok::OptionalBool(entry, "single_word", where, false));
  TSR_ASSIGN_OR_RETURN(token.lstrip,
                       tok::OptionalBool(entry, "lstrip", where, false));
  TSR_ASSIGN_OR_RETURN(token.rstrip,
                       tok::OptionalBool(entry, "rstrip", where, false));
  TSR_ASSIGN_OR_RETURN(token.special,
                       tok::OptionalBool(entry, "special", where, false));
  // Hugging Face's default: special tokens match the raw text.
  TSR_ASSIGN_OR_RETURN(
      token.normalized,
      tok::OptionalBool(entry, "normalized", where, !token.special));
  return token;
}

StatusOr<std::string> ReadWholeFile(const std::filesystem::path& path) {
  TSR_RETURN_IF_ERROR(
      CheckRegularFile(path.string(), kMaxTextFileBytes, "the file"));
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return NotFoundError(fmt::format(
        "cannot open {}: check that it exists and is readable", path.string()));
  }
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) {
    return DataLossError(fmt::format("reading {} failed", path.string()));
  }
  return buffer.str();
}

}  // namespace

StatusOr<Json> TokenizerLoader::ParseJson(std::string_view text,
                                          std::string_view what) {
  if (text.find_first_not_of(" \t\r\n") == std::string_view::npos) {
    return InvalidArgumentError(fmt::format(
        "the {} is empty; it is probably an interrupted download — fetch it "
        "again",
        what));
  }
  JsonParseError error;
  auto parsed = ParseBoundedJson(text, {}, &error);
  if (parsed.ok()) return std::move(*parsed);
  {
    const bool truncated = error.kind == JsonParseError::Kind::kSyntax &&
                           error.byte >= text.size();
    return InvalidArgumentError(fmt::format(
        "malformed JSON in the {} ({}){}", what, parsed.status().message(),
        truncated ? "; the file ends early, so it is probably truncated — "
                    "download it again"
                  : "; fix or re-download the file"));
  }
}

Status TokenizerLoader::ReadAddedTokens(const Json& root, Tokenizer* t) {
  const Json* added = FindField(root, "added_tokens");
  if (added == nullptr) return OkStatus();
  if (!added->is_array()) {
    return InvalidArgumentError(
        fmt::format("added_tokens: expected an array, found {}",
                    tok::DescribeJsonType(*added)));
  }
  for (size_t i = 0; i < added->size(); ++i) {
    TSR_ASSIGN_OR_RETURN(
        tok::AddedToken token,
        ParseAddedToken((*added)[i], fmt::format("added_tokens[{}]", i)));
    t->added_tokens_.push_back(std::move(token));
  }
  return OkStatus();
}

Status TokenizerLoader::ReadConfig(const Json& config, Tokenizer* t) {
  if (!config.is_object()) {
    return InvalidArgumentError(fmt::format("expected a JSON object, found {}",
                                            tok::DescribeJsonType(config)));
  }
  TSR_ASSIGN_OR_RETURN(t->bos_token_, ConfigTokenText(config, "bos_token"));
  TSR_ASSIGN_OR_RETURN(t->eos_token_, ConfigTokenText(config, "eos_token"));
  TSR_ASSIGN_OR_RETURN(t->add_bos_,
                       tok::OptionalBool(config, "add_bos_token", "", false));
  TSR_ASSIGN_OR_RETURN(t->add_eos_,
                       tok::OptionalBool(config, "add_eos_token", "", false));
  TSR_ASSIGN_OR_RETURN(
      bool cleanup,
      tok::OptionalBool(config, "clean_up_tokenization_spaces", "", false));
  if (cleanup) {
    TSR_LOG_WARN(
        "tokenizer_config.json sets clean_up_tokenization_spaces; Tessera "
        "decodes without that clean-up, so \" .\" stays \" .\"");
  }
  // Tokens only tokenizer_config.json knows about are added.
  if (const Json* decoder = FindField(config, "added_tokens_decoder")) {
    if (!decoder->is_object()) {
      return InvalidArgumentError(
          "added_tokens_decoder: expected an object mapping id -> token");
    }
    for (auto it = decoder->begin(); it != decoder->end(); ++it) {
      const std::string where =
          fmt::format("added_tokens_decoder[\"{}\"]", it.key());
      int64_t id = -1;
      try {
        size_t used = 0;
        id = std::stoll(it.key(), &used);
        if (used != it.key().size()) id = -1;
      } catch (const std::exception&) {
        id = -1;
      }
      if (id < 0 || id > tok::kMaxTokenId) {
        return InvalidArgumentError(
            fmt::format("{}: the key must be a token id", where));
      }
      Json entry = *it;
      if (entry.is_object()) entry["id"] = id;
      TSR_ASSIGN_OR_RETURN(tok::AddedToken token,
                           ParseAddedToken(entry, where));
      const bool known = std::any_of(
          t->added_tokens_.begin(), t->added_tokens_.end(),
          [&](const tok::AddedToken& a) { return a.id == token.id; });
      if (!known) t->added_tokens_.push_back(std::move(token));
    }
  }
  return OkStatus();
}

StatusOr<std::unique_ptr<Tokenizer>> TokenizerLoader::Build(
    std::string_view tokenizer_json, std::string_view config_json) {
  TSR_ASSIGN_OR_RETURN(Json root, ParseJson(tokenizer_json, "tokenizer file"));
  if (!root.is_object()) {
    return InvalidArgumentError(
        fmt::format("expected a JSON object at the top level, found {}",
                    tok::DescribeJsonType(root)));
  }
  auto t = std::unique_ptr<Tokenizer>(new Tokenizer());

  const Json* model = FindField(root, "model");
  if (model == nullptr || !model->is_object()) {
    return InvalidArgumentError(
        "model: required object is missing; this does not look like a Hugging "
        "Face tokenizer.json");
  }
  TSR_ASSIGN_OR_RETURN(std::string model_type,
                       tok::OptionalString(*model, "type", "model", ""));
  if (model_type.empty() && FindField(*model, "merges") != nullptr) {
    model_type = "BPE";  // older files omit the type
  }
  if (model_type != "BPE") {
    return UnimplementedError(fmt::format(
        "model.type \"{}\" is not supported: Tessera reads BPE tokenizers "
        "only (not Unigram, WordPiece or WordLevel)",
        model_type.empty() ? "(missing)" : model_type));
  }
  TSR_ASSIGN_OR_RETURN(t->model_, tok::BpeModel::FromJson(*model, "model"));

  if (const Json* n = FindField(root, "normalizer")) {
    TSR_ASSIGN_OR_RETURN(t->normalizer_,
                         tok::Normalizer::FromJson(*n, "normalizer"));
  }
  if (const Json* p = FindField(root, "pre_tokenizer")) {
    TSR_ASSIGN_OR_RETURN(t->pre_tokenizer_,
                         tok::PreTokenizer::FromJson(*p, "pre_tokenizer"));
  }
  TSR_ASSIGN_OR_RETURN(
      t->post_processor_,
      tok::PostProcessor::FromJson(FindField(root, "post_processor"),
                                   "post_processor"));
  TSR_ASSIGN_OR_RETURN(t->decoder_, tok::Decoder::FromJson(
                                        FindField(root, "decoder"), "decoder"));
  TSR_RETURN_IF_ERROR(ReadAddedTokens(root, t.get()));

  if (!config_json.empty()) {
    auto config = ParseJson(config_json, "tokenizer_config.json");
    if (!config.ok()) {
      return config.status().WithContext("tokenizer_config.json");
    }
    Status s = ReadConfig(*config, t.get());
    if (!s.ok()) return s.WithContext("tokenizer_config.json");
  }
  TSR_RETURN_IF_ERROR(t->Finalize());
  return t;
}

StatusOr<std::unique_ptr<Tokenizer>> Tokenizer::FromJsonText(
    std::string_view tokenizer_json, std::string_view config_json,
    std::string_view source) {
  auto result = TokenizerLoader::Build(tokenizer_json, config_json);
  if (!result.ok()) return result.status().WithContext(source);
  return result;
}

StatusOr<std::unique_ptr<Tokenizer>> Tokenizer::Load(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path json_path, config_path;
  if (fs::is_directory(path, ec)) {
    json_path = fs::path(path) / "tokenizer.json";
    config_path = fs::path(path) / "tokenizer_config.json";
    if (!fs::exists(json_path, ec)) {
      return NotFoundError(fmt::format(
          "{} has no tokenizer.json; Tessera needs the Hugging Face "
          "tokenizer.json (a slow tokenizer.model alone is not enough)",
          path));
    }
  } else if (fs::is_regular_file(path, ec)) {
    json_path = path;
    config_path = json_path.parent_path() / "tokenizer_config.json";
  } else {
    return NotFoundError(fmt::format(
        "tokenizer path {} does not exist; pass a model directory holding "
        "tokenizer.json, or the tokenizer.json file",
        path));
  }
  const std::string source = fmt::format("tokenizer at {}", json_path.string());
  TSR_ASSIGN_OR_RETURN(std::string json_text, ReadWholeFile(json_path));
  std::string config_text;
  if (fs::is_regular_file(config_path, ec)) {
    auto read = ReadWholeFile(config_path);
    if (!read.ok()) return read.status();
    config_text = std::move(read).value();
  }
  auto tokenizer = FromJsonText(json_text, config_text, source);
  if (tokenizer.ok()) {
    TSR_LOG_DEBUG("loaded tokenizer {} ({} tokens)", json_path.string(),
                  (*tokenizer)->vocab_size());
  }
  return tokenizer;
}

}  // namespace tessera
