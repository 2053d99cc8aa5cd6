#include "parsers/tool_call_parser.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <exception>
#include <nlohmann/json.hpp>

#include "base/bounded_json.h"
#include "base/logging.h"
#include "parsers/partial_tag.h"

namespace tessera::parsers {
namespace {

// ordered_json keeps the model's key order in the re-serialized arguments.
using Json = nlohmann::ordered_json;

constexpr std::string_view kOpen = ToolCallParser::kOpenTag;
constexpr std::string_view kClose = ToolCallParser::kCloseTag;

// All three names are the same <tool_call>{json}</tool_call> format.
constexpr std::array<std::string_view, 3> kFormatNames = {"hermes", "qwen",
                                                          "qwen25"};

// Position of the first kClose in `body` outside a JSON string, or npos.
// String state: '"' opens and closes, '\\' escapes the next byte, and a raw
// newline (never valid inside a JSON string) ends the string.
size_t FindCloseTag(std::string_view body) {
  bool in_string = false;
  bool escape = false;
  for (size_t i = 0; i < body.size(); ++i) {
    char c = body[i];
    if (in_string) {
      if (IsNewline(c)) {
        in_string = false;
        escape = false;
      } else if (escape) {
        escape = false;
      } else if (c == '\\') {
        escape = true;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '<' && body.substr(i).starts_with(kClose)) {
      return i;
    }
  }
  return std::string_view::npos;
}

std::string DumpCompact(const Json& j) {
  return j.dump(-1, ' ', /*ensure_ascii=*/false,
                nlohmann::detail::error_handler_t::replace);
}

// The call's arguments as compact JSON object text, or nullopt when
// "arguments" is not an object, a string holding one, null or absent.
std::optional<std::string> ArgumentsText(const Json& call) {
  auto it = call.find("arguments");
  if (it == call.end() || it->is_null()) return "{}";
  if (it->is_object()) return DumpCompact(*it);
  if (it->is_string()) {
    auto inner = ParseBoundedOrderedJson(it->get_ref<const std::string&>());
    if (inner.ok() && inner->is_object()) return DumpCompact(*inner);
  }
  return std::nullopt;
}

}  // namespace

std::vector<std::string> ToolCallParserNames() {
  return {kFormatNames.begin(), kFormatNames.end()};
}

StatusOr<std::unique_ptr<ToolCallParser>> ToolCallParser::Create(
    std::string_view name, std::vector<std::string> tool_names,
    std::optional<uint64_t> id_seed) {
  if (std::find(kFormatNames.begin(), kFormatNames.end(), name) ==
      kFormatNames.end()) {
    return InvalidArgumentError(
        fmt::format("unknown tool call parser '{}'; valid names are: {}", name,
                    fmt::join(kFormatNames, ", ")));
  }
  uint64_t seed;
  if (id_seed.has_value()) {
    seed = *id_seed;
  } else {
    std::random_device rd;
    seed = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  }
  return std::unique_ptr<ToolCallParser>(
      new ToolCallParser(std::move(tool_names), seed));
}

ToolCallParser::ToolCallParser(std::vector<std::string> tool_names,
                               uint64_t id_seed)
    : tool_names_(std::move(tool_names)), rng_(id_seed) {}

std::string ToolCallParser::NewCallId() {
  uint64_t hi = rng_();
  uint64_t lo = rng_() & 0xffffffffu;
  return fmt::format("call_{:016x}{:08x}", hi, lo);
}

std::optional<ParsedToolCall> ToolCallParser::MakeCall(
    std::string_view block_text, int index) {
  auto reject = [&](std::string_view why) -> std::optional<ParsedToolCall> {
    TSR_LOG_DEBUG("tool call block kept as text ({}): {:.200}", why,
                  block_text);
    return std::nullopt;
  };
  // nlohmann is used without exceptions (allow_exceptions=false, dump with
  // replacement); the catch only keeps an unexpected throw from leaving the
  // parser.
  try {
    auto parsed = ParseBoundedOrderedJson(block_text);
    if (!parsed.ok()) return reject("malformed JSON");
    Json j = std::move(*parsed);
    if (!j.is_object()) return reject("not a JSON object");
    auto name_it = j.find("name");
    if (name_it == j.end() || !name_it->is_string() ||
        name_it->get_ref<const std::string&>().empty()) {
      return reject("no \"name\" string");
    }
    const std::string& name = name_it->get_ref<const std::string&>();
    if (!tool_names_.empty() &&
        std::find(tool_names_.begin(), tool_names_.end(), name) ==
            tool_names_.end()) {
      return reject("function not among the request's tools");
    }
    std::optional<std::string> arguments = ArgumentsText(j);
    if (!arguments.has_value()) return reject("\"arguments\" not an object");
    has_calls_ = true;
    return ParsedToolCall{index, NewCallId(), name, std::move(*arguments)};
  } catch (const std::exception& e) {
    return reject(e.what());
  }
}

ToolCallParseResult ToolCallParser::ParseFull(std::string_view text) {
  ToolCallParseResult result;
  size_t pos = 0;
  bool drop_newlines = false;
  while (true) {
    if (drop_newlines) {
      while (pos < text.size() && IsNewline(text[pos])) ++pos;
      drop_newlines = false;
    }
    size_t open = text.find(kOpen, pos);
    if (open == std::string_view::npos) {
      result.normal_text.append(text.substr(pos));
      break;
    }
    result.normal_text.append(text.substr(pos, open - pos));
    size_t body = open + kOpen.size();
    size_t end = FindCloseTag(text.substr(body));
    if (end == std::string_view::npos) {  // unclosed: normal text
      result.normal_text.append(text.substr(open));
      break;
    }
    size_t next = body + end + kClose.size();
    std::optional<ParsedToolCall> call =
        MakeCall(text.substr(body, end), static_cast<int>(result.calls.size()));
    if (call.has_value()) {
      result.calls.push_back(std::move(*call));
      drop_newlines = true;
    } else {
      result.normal_text.append(text.substr(open, next - open));
    }
    pos = next;
  }
  return result;
}

ToolCallStreamResult ToolCallParser::Push(std::string_view piece) {
  ToolCallStreamResult out;
  if (finished_) return out;
  std::string text = std::move(held_);
  held_.clear();
  text.append(piece);
  Consume(text, out);
  return out;
}

void ToolCallParser::Consume(std::string_view text, ToolCallStreamResult& out) {
  std::string owned;  // text after a closed block; `text` may view it
  while (true) {
    if (state_ == State::kText) {
      if (drop_newlines_) {
        size_t skip = 0;
        while (skip < text.size() && IsNewline(text[skip])) ++skip;
        text.remove_prefix(skip);
        if (text.empty()) return;
        drop_newlines_ = false;
      }
      size_t open = text.find(kOpen);
      if (open != std::string_view::npos) {
        out.normal_text_delta.append(text.substr(0, open));
        state_ = State::kInBlock;
        block_.clear();
        scan_pos_ = 0;
        in_string_ = false;
        escape_ = false;
        text.remove_prefix(open + kOpen.size());
        continue;
      }
      size_t hold = PartialTagSuffix(text, kOpen);
      out.normal_text_delta.append(text.substr(0, text.size() - hold));
      held_.assign(text.substr(text.size() - hold));
      return;
    }

    // kInBlock: scan the new bytes for kClose outside a JSON string, with
    // the same rules as FindCloseTag.
    block_.append(text);
    bool closed = false;
    while (scan_pos_ < block_.size()) {
      char c = block_[scan_pos_];
      if (in_string_) {
        if (IsNewline(c)) {
          in_string_ = false;
          escape_ = false;
        } else if (escape_) {
          escape_ = false;
        } else if (c == '\\') {
          escape_ = true;
        } else if (c == '"') {
          in_string_ = false;
        }
      } else if (c == '"') {
        in_string_ = true;
      } else if (c == '<') {
        std::string_view tail = std::string_view(block_).substr(scan_pos_);
        if (tail.starts_with(kClose)) {
          closed = true;
          break;
        }
        if (kClose.starts_with(tail)) return;  // wait for the rest of the tag
      }
      ++scan_pos_;
    }
    if (!closed) return;

    std::string_view block_text = std::string_view(block_).substr(0, scan_pos_);
    std::optional<ParsedToolCall> call = MakeCall(block_text, next_index_);
    if (call.has_value()) {
      ++next_index_;
      out.deltas.push_back(ToolCallDelta{call->index, std::move(call->id),
                                         std::move(call->name),
                                         std::move(call->arguments)});
      drop_newlines_ = true;
    } else {
      out.normal_text_delta.append(kOpen);
      out.normal_text_delta.append(block_text);
      out.normal_text_delta.append(kClose);
    }
    owned = block_.substr(scan_pos_ + kClose.size());
    block_.clear();
    scan_pos_ = 0;
    state_ = State::kText;
    text = owned;
  }
}

ToolCallStreamResult ToolCallParser::Finish() {
  ToolCallStreamResult out;
  if (finished_) return out;
  finished_ = true;
  if (state_ == State::kText) {
    out.normal_text_delta = std::move(held_);
  } else {  // an unclosed block stays normal text
    out.normal_text_delta.append(kOpen);
    out.normal_text_delta.append(block_);
  }
  held_.clear();
  block_.clear();
  return out;
}

}  // namespace tessera::parsers
