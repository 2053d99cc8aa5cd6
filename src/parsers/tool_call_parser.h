// ToolCallParser: finds the function calls in a model's output text and turns
// them into OpenAI `tool_calls`, for the OpenAI-compatible chat endpoint.
//
// Format ("qwen", alias "qwen25", "hermes"; the Qwen2.5/Qwen3 chat template):
// zero or more blocks
//   <tool_call>\n{"name": "fn", "arguments": {...}}\n</tool_call>
// with ordinary text before, between and after them. A block runs from
// "<tool_call>" to the first "</tool_call>" that is not inside a JSON string
// (so arguments may contain "}" or even "</tool_call>" in strings; a raw
// newline ends a string, as JSON forbids one there, so a stray quote cannot
// swallow the rest of the output). A block is a CALL when its text is one
// JSON object with a non-empty string "name" (one of tool_names, when
// tool_names is non-empty) and "arguments" that is an object, a string
// holding a JSON object, null or absent ("{}"). Otherwise the whole block,
// tags included, stays in the normal text verbatim (logged at debug), and so
// does a block that never closes. The newlines ('\n', '\r') directly after a
// call's "</tool_call>" are dropped (the template's separators); all other
// text outside calls is normal text, verbatim.
//
// A call's `arguments` is its arguments object re-serialized compactly
// (nlohmann dump, key order kept, UTF-8 kept). Its `id` is "call_" + 24
// random hex digits; calls are numbered (`index`) 0, 1, ... in order.
//
// Two ways to use it, which agree exactly (ids aside):
//  - ParseFull(text) for a whole response (non-streaming).
//  - Push(piece) for each streamed piece, then Finish() once. The normal text
//    deltas concatenate to ParseFull's normal_text, and the ToolCallDeltas
//    assemble (OpenAI's way: by index, id and name from the first delta,
//    arguments concatenated) to ParseFull's calls, for ANY split of the text.
//    Text that could be the start of "<tool_call>" is HELD BACK until a later
//    piece decides it; so is an open block, until "</tool_call>" closes it.
//
// Streaming shape: each call is emitted as ONE ToolCallDelta carrying index,
// id, name and the complete arguments, in the Push that closes its block.
// Emitting the name or arguments earlier cannot be made exact: until
// "</tool_call>" arrives, the block may still turn out malformed or unclosed,
// and then it is normal text, which a client cannot be told after the fact.
//
// Invariants: in kText, held_ is a proper prefix of "<tool_call>"; in
// kInBlock, block_ holds the block text after "<tool_call>", and block_[0,
// scan_pos_) has been scanned (no closing tag outside a string in it). After
// Finish the parser is finished and Push/Finish return empty results.
//
// Thread-safety: not thread-safe; one instance per response stream (per
// choice).
#ifndef TESSERA_PARSERS_TOOL_CALL_PARSER_H_
#define TESSERA_PARSERS_TOOL_CALL_PARSER_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace tessera::parsers {

// One complete function call (non-streaming).
struct ParsedToolCall {
  int index = 0;          // 0, 1, ... in order of appearance
  std::string id;         // "call_" + 24 hex digits
  std::string name;       // function name
  std::string arguments;  // JSON object text, compact
};

struct ToolCallParseResult {
  std::string normal_text;  // text outside calls (see the format above)
  std::vector<ParsedToolCall> calls;
};

// One streaming update of call `index`, in OpenAI's
// `choices[].delta.tool_calls[]` shape: the first delta of a call carries id
// and name; arguments_delta strings concatenate to the call's arguments.
struct ToolCallDelta {
  int index = 0;
  std::optional<std::string> id;
  std::optional<std::string> name;
  std::string arguments_delta;
};

// Result of one Push or Finish: what to send now.
struct ToolCallStreamResult {
  std::string normal_text_delta;
  std::vector<ToolCallDelta> deltas;
};

// The format names Create accepts, e.g. {"hermes", "qwen", "qwen25"}.
std::vector<std::string> ToolCallParserNames();

class ToolCallParser {
 public:
  static constexpr std::string_view kOpenTag = "<tool_call>";
  static constexpr std::string_view kCloseTag = "</tool_call>";

  // `tool_names`: the request's function names; a call naming another
  // function stays normal text. Empty accepts any name. `id_seed` makes the
  // call ids reproducible (tests); by default they come from
  // std::random_device. Errors: INVALID_ARGUMENT for an unknown `name` (the
  // message lists the valid names).
  static StatusOr<std::unique_ptr<ToolCallParser>> Create(
      std::string_view name, std::vector<std::string> tool_names,
      std::optional<uint64_t> id_seed = std::nullopt);

  // Parses a whole response. Does not change the streaming state (beyond
  // drawing ids and setting has_calls).
  ToolCallParseResult ParseFull(std::string_view text);

  // Consumes the next streamed piece (may be empty).
  ToolCallStreamResult Push(std::string_view piece);

  // The response ended: returns what was held back (a partial "<tool_call>"
  // or an unclosed block, as normal text). Later calls (and Push) return
  // empty results.
  ToolCallStreamResult Finish();

  // True once any call was returned (by Push/Finish or ParseFull): the
  // response's finish_reason becomes "tool_calls".
  bool has_calls() const { return has_calls_; }
  bool finished() const { return finished_; }
  // Bytes currently held back (for tests).
  size_t held_bytes() const { return held_.size() + block_.size(); }

 private:
  enum class State {
    kText,     // normal text, looking for "<tool_call>"
    kInBlock,  // inside a block, looking for "</tool_call>"
  };

  ToolCallParser(std::vector<std::string> tool_names, uint64_t id_seed);

  // Decides a closed block (`block_text`: between the tags): returns the
  // call, numbered `index` and with a fresh id, or nullopt when the block
  // must stay normal text.
  std::optional<ParsedToolCall> MakeCall(std::string_view block_text,
                                         int index);
  std::string NewCallId();

  // Feeds `text` in the current state, appending what may be sent to `out`.
  void Consume(std::string_view text, ToolCallStreamResult& out);

  std::vector<std::string> tool_names_;
  std::mt19937_64 rng_;
  bool has_calls_ = false;
  int next_index_ = 0;  // index of the next streamed call

  State state_ = State::kText;
  std::string held_;   // kText: a partial "<tool_call>"
  std::string block_;  // kInBlock: block text after "<tool_call>"
  // kInBlock scanner: bytes of block_ scanned, and the JSON string state
  // after them.
  size_t scan_pos_ = 0;
  bool in_string_ = false;
  bool escape_ = false;
  // After a call's "</tool_call>": newlines are dropped until other text.
  bool drop_newlines_ = false;
  bool finished_ = false;
};

}  // namespace tessera::parsers

#endif  // TESSERA_PARSERS_TOOL_CALL_PARSER_H_
