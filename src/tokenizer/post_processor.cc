#include "tokenizer/post_processor.h"

#include <fmt/format.h>

#include <string>

namespace tessera::tok {

namespace {

// [token, id] as Roberta/Bert processors store cls and sep.
StatusOr<int32_t> TokenPairId(const Json& config, std::string_view key,
                              std::string_view where) {
  const Json* pair = FindField(config, key);
  if (pair == nullptr || !pair->is_array() || pair->size() != 2 ||
      !(*pair)[1].is_number_integer()) {
    return InvalidArgumentError(
        fmt::format("{}: expected [token, id]", FieldPath(where, key)));
  }
  return (*pair)[1].get<int32_t>();
}

bool IsSequenceName(std::string_view name) {
  return name == "A" || name == "B";
}

}  // namespace

StatusOr<std::unique_ptr<PostProcessor>> PostProcessor::FromJson(
    const Json* config, std::string_view where) {
  auto processor = std::unique_ptr<PostProcessor>(new PostProcessor());
  if (config != nullptr) {
    TSR_RETURN_IF_ERROR(Parse(*config, where, &processor->template_));
  }
  return processor;
}

Status PostProcessor::Parse(const Json& config, std::string_view where,
                            std::vector<Item>* items) {
  TSR_ASSIGN_OR_RETURN(std::string type, RequireType(config, where));
  if (type == "ByteLevel") return OkStatus();
  if (type == "Sequence") {
    const Json* list = FindField(config, "processors");
    if (list == nullptr || !list->is_array()) {
      return InvalidArgumentError(fmt::format(
          "{}: a Sequence post-processor needs a \"processors\" array", where));
    }
    for (size_t i = 0; i < list->size(); ++i) {
      std::vector<Item> inner;
      TSR_RETURN_IF_ERROR(Parse(
          (*list)[i], fmt::format("{}.processors[{}]", where, i), &inner));
      if (inner.empty()) continue;
      if (!items->empty()) {
        // Compose: the later template wraps the earlier result.
        std::vector<Item> composed;
        for (Item& item : inner) {
          if (item.is_sequence) {
            composed.insert(composed.end(), items->begin(), items->end());
          } else {
            composed.push_back(std::move(item));
          }
        }
        *items = std::move(composed);
      } else {
        *items = std::move(inner);
      }
    }
    return OkStatus();
  }
  if (type == "RobertaProcessing" || type == "BertProcessing") {
    TSR_ASSIGN_OR_RETURN(int32_t cls, TokenPairId(config, "cls", where));
    TSR_ASSIGN_OR_RETURN(int32_t sep, TokenPairId(config, "sep", where));
    items->push_back({false, {cls}});
    items->push_back({true, {}});
    items->push_back({false, {sep}});
    return OkStatus();
  }
  if (type == "TemplateProcessing") return ParseTemplate(config, where, items);
  return UnimplementedError(fmt::format(
      "{}: post-processor type \"{}\" is not supported (supported: "
      "TemplateProcessing, ByteLevel, RobertaProcessing, BertProcessing, "
      "Sequence)",
      where, type));
}

Status PostProcessor::ParseTemplate(const Json& config, std::string_view where,
                                    std::vector<Item>* items) {
  const Json* single = FindField(config, "single");
  if (single == nullptr) {
    return InvalidArgumentError(
        fmt::format("{}.single: required template is missing", where));
  }
  const Json* specials = FindField(config, "special_tokens");
  auto special_ids = [&](const std::string& name,
                         std::string_view path) -> StatusOr<Item> {
    const Json* entry =
        specials != nullptr ? FindField(*specials, name) : nullptr;
    const Json* ids = entry != nullptr ? FindField(*entry, "ids") : nullptr;
    if (ids == nullptr || !ids->is_array()) {
      return InvalidArgumentError(fmt::format(
          "{}: special token \"{}\" has no entry with \"ids\" in {}.special_"
          "tokens",
          path, name, where));
    }
    Item item;
    for (const Json& id : *ids) {
      if (!id.is_number_integer()) {
        return InvalidArgumentError(fmt::format(
            "{}.special_tokens[\"{}\"].ids: expected integers", where, name));
      }
      item.ids.push_back(id.get<int32_t>());
    }
    return item;
  };

  std::vector<Item> parsed;
  auto add_piece = [&](std::string piece, std::string_view path) -> Status {
    // String form: "$A", "$B", "$", "$A:1" or "<s>", "<s>:1".
    if (const size_t colon = piece.rfind(':');
        colon != std::string::npos && colon > 0) {
      piece.resize(colon);
    }
    if (!piece.empty() && piece[0] == '$') {
      parsed.push_back({true, {}});
      return OkStatus();
    }
    TSR_ASSIGN_OR_RETURN(Item item, special_ids(piece, path));
    parsed.push_back(std::move(item));
    return OkStatus();
  };

  const std::string single_path = FieldPath(where, "single");
  if (single->is_string()) {
    const std::string& text = single->get_ref<const std::string&>();
    size_t pos = 0;
    while (pos < text.size()) {
      size_t end = text.find(' ', pos);
      if (end == std::string::npos) end = text.size();
      if (end > pos) {
        TSR_RETURN_IF_ERROR(
            add_piece(text.substr(pos, end - pos), single_path));
      }
      pos = end + 1;
    }
  } else if (single->is_array()) {
    for (size_t i = 0; i < single->size(); ++i) {
      const Json& element = (*single)[i];
      const std::string path = fmt::format("{}[{}]", single_path, i);
      if (const Json* seq = FindField(element, "Sequence")) {
        TSR_ASSIGN_OR_RETURN(std::string id, RequireString(*seq, "id", path));
        if (!IsSequenceName(id)) {
          return InvalidArgumentError(fmt::format(
              "{}.Sequence.id: expected \"A\" or \"B\", found \"{}\"", path,
              id));
        }
        parsed.push_back({true, {}});
      } else if (const Json* sp = FindField(element, "SpecialToken")) {
        TSR_ASSIGN_OR_RETURN(std::string id, RequireString(*sp, "id", path));
        TSR_ASSIGN_OR_RETURN(Item item, special_ids(id, path));
        parsed.push_back(std::move(item));
      } else {
        return InvalidArgumentError(fmt::format(
            "{}: expected {{\"Sequence\": ...}} or {{\"SpecialToken\": ...}}",
            path));
      }
    }
  } else {
    return InvalidArgumentError(
        fmt::format("{}: expected a template string or array", single_path));
  }
  *items = std::move(parsed);
  return OkStatus();
}

void PostProcessor::SetFallback(std::optional<int32_t> bos,
                                std::optional<int32_t> eos) {
  fallback_bos_ = bos;
  fallback_eos_ = eos;
}

void PostProcessor::AddSpecialTokens(std::vector<int32_t>* ids) const {
  if (template_.empty()) {
    if (fallback_bos_) ids->insert(ids->begin(), *fallback_bos_);
    if (fallback_eos_) ids->push_back(*fallback_eos_);
    return;
  }
  std::vector<int32_t> out;
  out.reserve(ids->size() + 4);
  for (const Item& item : template_) {
    if (item.is_sequence) {
      out.insert(out.end(), ids->begin(), ids->end());
    } else {
      out.insert(out.end(), item.ids.begin(), item.ids.end());
    }
  }
  ids->swap(out);
}

}  // namespace tessera::tok
