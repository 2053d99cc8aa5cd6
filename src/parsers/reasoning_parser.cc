#include "parsers/reasoning_parser.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <array>

#include "parsers/partial_tag.h"

namespace tessera::parsers {
namespace {

constexpr std::string_view kThinkOpen = "<think>";
constexpr std::string_view kThinkClose = "</think>";

struct ReasoningFormat {
  std::string_view name;
  // The chat template always opens the reasoning block in the prompt.
  bool always_forced;
};

// Both formats use <think>...</think>; they differ only in who opens it.
constexpr std::array<ReasoningFormat, 2> kFormats = {{
    {"deepseek-r1", true},
    {"qwen3", false},
}};

size_t SkipSpaces(std::string_view text) {
  size_t i = 0;
  while (i < text.size() && IsSpace(text[i])) ++i;
  return i;
}

size_t SkipNewlines(std::string_view text) {
  size_t i = 0;
  while (i < text.size() && IsNewline(text[i])) ++i;
  return i;
}

}  // namespace

std::vector<std::string> ReasoningParserNames() {
  std::vector<std::string> names;
  for (const ReasoningFormat& f : kFormats) names.emplace_back(f.name);
  return names;
}

StatusOr<std::unique_ptr<ReasoningParser>> ReasoningParser::Create(
    std::string_view name, bool force_reasoning) {
  for (const ReasoningFormat& f : kFormats) {
    if (f.name == name) {
      return std::unique_ptr<ReasoningParser>(
          new ReasoningParser(force_reasoning || f.always_forced));
    }
  }
  return InvalidArgumentError(
      fmt::format("unknown reasoning parser '{}'; valid names are: {}", name,
                  fmt::join(ReasoningParserNames(), ", ")));
}

ReasoningParser::ReasoningParser(bool force_reasoning)
    : force_reasoning_(force_reasoning) {}

ReasoningParseResult ReasoningParser::ParseFull(std::string_view text) const {
  std::string_view rest = text.substr(SkipSpaces(text));
  bool has_open = rest.starts_with(kThinkOpen);
  if (!has_open && !force_reasoning_) {
    return {std::nullopt, std::string(text)};
  }
  std::string_view body = has_open ? rest.substr(kThinkOpen.size()) : text;
  size_t end = body.find(kThinkClose);
  if (end == std::string_view::npos) return {std::string(body), ""};
  std::string_view after = body.substr(end + kThinkClose.size());
  after.remove_prefix(SkipNewlines(after));
  return {std::string(body.substr(0, end)), std::string(after)};
}

ReasoningDelta ReasoningParser::Push(std::string_view piece) {
  ReasoningDelta out;
  if (finished_) return out;
  std::string text = std::move(held_);
  held_.clear();
  text.append(piece);
  Consume(text, out);
  return out;
}

void ReasoningParser::Consume(std::string_view text, ReasoningDelta& out) {
  while (true) {
    switch (state_) {
      case State::kStart: {
        std::string_view rest = text.substr(SkipSpaces(text));
        if (rest.starts_with(kThinkOpen)) {
          saw_reasoning_ = true;
          state_ = State::kReasoning;
          text = rest.substr(kThinkOpen.size());
          continue;
        }
        if (kThinkOpen.starts_with(rest)) {  // only whitespace + a partial "<think"
          held_.assign(text);
          return;
        }
        // Decided: no opening tag. The whitespace belongs to the block or the
        // content, as in ParseFull.
        if (force_reasoning_) {
          saw_reasoning_ = true;
          state_ = State::kReasoning;
        } else {
          state_ = State::kContent;
        }
        continue;
      }
      case State::kReasoning: {
        size_t end = text.find(kThinkClose);
        if (end != std::string_view::npos) {
          out.reasoning_delta.append(text.substr(0, end));
          state_ = State::kAfterEnd;
          text = text.substr(end + kThinkClose.size());
          continue;
        }
        size_t hold = PartialTagSuffix(text, kThinkClose);
        out.reasoning_delta.append(text.substr(0, text.size() - hold));
        held_.assign(text.substr(text.size() - hold));
        return;
      }
      case State::kAfterEnd: {
        size_t skip = SkipNewlines(text);
        if (skip == text.size()) return;  // still only newlines
        state_ = State::kContent;
        text = text.substr(skip);
        continue;
      }
      case State::kContent:
        out.content_delta.append(text);
        return;
    }
  }
}

ReasoningDelta ReasoningParser::Finish() {
  ReasoningDelta out;
  if (finished_) return out;
  finished_ = true;
  switch (state_) {
    case State::kStart:
      // Whitespace and a partial "<think>" that never completed.
      if (force_reasoning_) {
        saw_reasoning_ = true;
        out.reasoning_delta = std::move(held_);
      } else {
        out.content_delta = std::move(held_);
      }
      break;
    case State::kReasoning:
      out.reasoning_delta = std::move(held_);  // a partial "</think>"
      break;
    case State::kAfterEnd:
    case State::kContent:
      break;
  }
  held_.clear();
  return out;
}

}  // namespace tessera::parsers
