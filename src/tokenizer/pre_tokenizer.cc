#include "tokenizer/pre_tokenizer.h"

#include <fmt/format.h>

#include <algorithm>

#include "tokenizer/byte_level.h"

namespace tessera::tok {

namespace {

// The GPT-2 pre-tokenization pattern ByteLevel uses when use_regex is true.
constexpr std::string_view kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

std::vector<std::pair<size_t, size_t>> FindLiteral(std::string_view text,
                                                   std::string_view literal) {
  std::vector<std::pair<size_t, size_t>> matches;
  if (literal.empty()) return matches;
  size_t pos = 0;
  while ((pos = text.find(literal, pos)) != std::string_view::npos) {
    matches.emplace_back(pos, pos + literal.size());
    pos += literal.size();
  }
  return matches;
}

}  // namespace

std::vector<std::pair<size_t, size_t>> SplitByMatches(
    size_t size, const std::vector<std::pair<size_t, size_t>>& delimiters,
    SplitBehavior behavior, bool invert) {
  // 1. Cover [0, size) with (range, is_delimiter) in order.
  struct Part {
    size_t begin, end;
    bool is_match;
  };
  std::vector<Part> parts;
  parts.reserve(delimiters.size() * 2 + 1);
  size_t prev = 0;
  for (auto [begin, end] : delimiters) {
    if (begin > prev) parts.push_back({prev, begin, invert});
    parts.push_back({begin, end, !invert});
    prev = end;
  }
  if (prev < size) parts.push_back({prev, size, invert});

  // 2. Combine per behaviour: (range, remove).
  struct Out {
    size_t begin, end;
    bool remove;
  };
  std::vector<Out> outs;
  outs.reserve(parts.size());
  switch (behavior) {
    case SplitBehavior::kIsolated:
    case SplitBehavior::kRemoved:
      for (const Part& p : parts) {
        outs.push_back({p.begin, p.end,
                        behavior == SplitBehavior::kRemoved && p.is_match});
      }
      break;
    case SplitBehavior::kContiguous: {
      bool previous_match = false;
      for (const Part& p : parts) {
        if (p.is_match == previous_match && !outs.empty()) {
          outs.back().end = p.end;
        } else {
          outs.push_back({p.begin, p.end, false});
        }
        previous_match = p.is_match;
      }
      break;
    }
    case SplitBehavior::kMergedWithPrevious: {
      bool previous_match = false;
      for (const Part& p : parts) {
        if (p.is_match && !previous_match && !outs.empty()) {
          outs.back().end = p.end;
        } else {
          outs.push_back({p.begin, p.end, false});
        }
        previous_match = p.is_match;
      }
      break;
    }
    case SplitBehavior::kMergedWithNext: {
      bool previous_match = false;
      for (auto it = parts.rbegin(); it != parts.rend(); ++it) {
        if (it->is_match && !previous_match && !outs.empty()) {
          outs.back().begin = it->begin;
        } else {
          outs.push_back({it->begin, it->end, false});
        }
        previous_match = it->is_match;
      }
      std::reverse(outs.begin(), outs.end());
      break;
    }
  }

  std::vector<std::pair<size_t, size_t>> pieces;
  pieces.reserve(outs.size());
  for (const Out& o : outs) {
    if (!o.remove && o.end > o.begin) pieces.emplace_back(o.begin, o.end);
  }
  return pieces;
}

StatusOr<std::unique_ptr<PreTokenizer>> PreTokenizer::FromJson(
    const Json& config, std::string_view where) {
  auto pre = std::unique_ptr<PreTokenizer>(new PreTokenizer());
  TSR_RETURN_IF_ERROR(Parse(config, where, &pre->steps_));
  for (const Step& step : pre->steps_) {
    if (step.kind == Kind::kByteLevel && step.use_regex &&
        pre->gpt2_regex_ == nullptr) {
      TSR_ASSIGN_OR_RETURN(pre->gpt2_regex_, Regex::Compile(kGpt2Pattern));
    }
  }
  return pre;
}

Status PreTokenizer::Parse(const Json& config, std::string_view where,
                           std::vector<Step>* steps) {
  TSR_ASSIGN_OR_RETURN(std::string type, RequireType(config, where));
  Step step;
  if (type == "Sequence") {
    const Json* list = FindField(config, "pretokenizers");
    if (list == nullptr || !list->is_array()) {
      return InvalidArgumentError(fmt::format(
          "{}: a Sequence pre-tokenizer needs a \"pretokenizers\" array",
          where));
    }
    for (size_t i = 0; i < list->size(); ++i) {
      TSR_RETURN_IF_ERROR(Parse(
          (*list)[i], fmt::format("{}.pretokenizers[{}]", where, i), steps));
    }
    return OkStatus();
  } else if (type == "Split") {
    step.kind = Kind::kSplit;
    const Json* pattern = FindField(config, "pattern");
    const std::string pattern_path = FieldPath(where, "pattern");
    if (pattern != nullptr && FindField(*pattern, "String") != nullptr) {
      TSR_ASSIGN_OR_RETURN(step.literal,
                           RequireString(*pattern, "String", pattern_path));
    } else if (pattern != nullptr && FindField(*pattern, "Regex") != nullptr) {
      TSR_ASSIGN_OR_RETURN(std::string re,
                           RequireString(*pattern, "Regex", pattern_path));
      auto compiled = Regex::Compile(re);
      if (!compiled.ok()) return compiled.status().WithContext(pattern_path);
      step.regex = std::move(compiled).value();
    } else {
      return InvalidArgumentError(
          fmt::format("{}: expected {{\"String\": ...}} or {{\"Regex\": ...}}",
                      pattern_path));
    }
    TSR_ASSIGN_OR_RETURN(std::string behavior,
                         RequireString(config, "behavior", where));
    if (behavior == "Removed") {
      step.behavior = SplitBehavior::kRemoved;
    } else if (behavior == "Isolated") {
      step.behavior = SplitBehavior::kIsolated;
    } else if (behavior == "MergedWithPrevious") {
      step.behavior = SplitBehavior::kMergedWithPrevious;
    } else if (behavior == "MergedWithNext") {
      step.behavior = SplitBehavior::kMergedWithNext;
    } else if (behavior == "Contiguous") {
      step.behavior = SplitBehavior::kContiguous;
    } else {
      return InvalidArgumentError(fmt::format(
          "{}.behavior: unknown split behaviour \"{}\" (expected Removed, "
          "Isolated, MergedWithPrevious, MergedWithNext or Contiguous)",
          where, behavior));
    }
    TSR_ASSIGN_OR_RETURN(step.invert,
                         OptionalBool(config, "invert", where, false));
  } else if (type == "ByteLevel") {
    step.kind = Kind::kByteLevel;
    TSR_ASSIGN_OR_RETURN(step.add_prefix_space,
                         OptionalBool(config, "add_prefix_space", where, true));
    TSR_ASSIGN_OR_RETURN(step.use_regex,
                         OptionalBool(config, "use_regex", where, true));
  } else if (type == "Metaspace") {
    step.kind = Kind::kMetaspace;
    TSR_ASSIGN_OR_RETURN(step.replacement,
                         OptionalString(config, "replacement", where,
                                        "\xE2\x96\x81"));  // U+2581
    if (step.replacement.empty()) {
      return InvalidArgumentError(
          fmt::format("{}.replacement: must be one character", where));
    }
    TSR_ASSIGN_OR_RETURN(bool add_prefix_space,
                         OptionalBool(config, "add_prefix_space", where, true));
    TSR_ASSIGN_OR_RETURN(std::string scheme,
                         OptionalString(config, "prepend_scheme", where,
                                        add_prefix_space ? "always" : "never"));
    if (scheme == "always") {
      step.prepend = Prepend::kAlways;
    } else if (scheme == "first") {
      step.prepend = Prepend::kFirst;
    } else if (scheme == "never") {
      step.prepend = Prepend::kNever;
    } else {
      return InvalidArgumentError(fmt::format(
          "{}.prepend_scheme: unknown value \"{}\" (expected always, first or "
          "never)",
          where, scheme));
    }
    TSR_ASSIGN_OR_RETURN(step.split,
                         OptionalBool(config, "split", where, true));
  } else {
    return UnimplementedError(fmt::format(
        "{}: pre-tokenizer type \"{}\" is not supported (supported: Split, "
        "ByteLevel, Metaspace, Sequence)",
        where, type));
  }
  steps->push_back(std::move(step));
  return OkStatus();
}

void PreTokenizer::ApplyStep(const Step& step, Piece piece,
                             std::vector<Piece>* out) const {
  auto emit_split = [&](const std::string& text,
                        const std::vector<std::pair<size_t, size_t>>& matches,
                        SplitBehavior behavior, bool invert, bool at_origin) {
    for (auto [begin, end] :
         SplitByMatches(text.size(), matches, behavior, invert)) {
      out->push_back(
          {text.substr(begin, end - begin), at_origin && begin == 0});
    }
  };

  switch (step.kind) {
    case Kind::kSplit: {
      auto matches = step.regex != nullptr
                         ? step.regex->FindAll(piece.text)
                         : FindLiteral(piece.text, step.literal);
      emit_split(piece.text, matches, step.behavior, step.invert,
                 piece.at_origin);
      return;
    }
    case Kind::kByteLevel: {
      if (step.add_prefix_space && piece.text.front() != ' ') {
        piece.text.insert(piece.text.begin(), ' ');
      }
      std::vector<std::pair<size_t, size_t>> ranges;
      if (step.use_regex) {
        ranges =
            SplitByMatches(piece.text.size(), gpt2_regex_->FindAll(piece.text),
                           SplitBehavior::kIsolated, false);
      } else {
        ranges.emplace_back(0, piece.text.size());
      }
      for (auto [begin, end] : ranges) {
        Piece mapped{std::string(), piece.at_origin && begin == 0};
        ByteLevelEncode(std::string_view(piece.text).substr(begin, end - begin),
                        &mapped.text);
        out->push_back(std::move(mapped));
      }
      return;
    }
    case Kind::kMetaspace: {
      std::string text = LiteralReplaceAll(piece.text, " ", step.replacement);
      const bool starts_with_replacement =
          text.compare(0, step.replacement.size(), step.replacement) == 0;
      if (!starts_with_replacement &&
          (step.prepend == Prepend::kAlways ||
           (step.prepend == Prepend::kFirst && piece.at_origin))) {
        text.insert(0, step.replacement);
      }
      if (step.split) {
        emit_split(text, FindLiteral(text, step.replacement),
                   SplitBehavior::kMergedWithNext, false, piece.at_origin);
      } else {
        out->push_back({std::move(text), piece.at_origin});
      }
      return;
    }
  }
}

void PreTokenizer::PreTokenize(std::string_view text, bool at_origin,
                               std::vector<std::string>* words) const {
  if (text.empty()) return;
  std::vector<Piece> pieces;
  pieces.push_back({std::string(text), at_origin});
  std::vector<Piece> next;
  for (const Step& step : steps_) {
    next.clear();
    for (Piece& piece : pieces) ApplyStep(step, std::move(piece), &next);
    pieces.swap(next);
  }
  for (Piece& piece : pieces) words->push_back(std::move(piece.text));
}

}  // namespace tessera::tok
