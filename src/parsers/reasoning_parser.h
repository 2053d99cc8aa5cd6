// ReasoningParser: splits a reasoning model's output text into the reasoning
// ("thinking") part and the answer content, for the OpenAI-compatible chat
// endpoint (`reasoning_content` vs `content`).
//
// Format (Qwen3, DeepSeek-R1): the output may begin with "<think>" (leading
// whitespace before it is allowed and dropped). Everything after "<think>" up
// to the first "</think>" is reasoning, verbatim; the text after "</think>" is
// content, minus the newlines ('\n', '\r') that directly follow "</think>".
// If "</think>" never comes, everything after "<think>" is reasoning. If the
// output does not begin with "<think>" it is all content, and "<think>" or
// "</think>" later in it are ordinary text. E.g.
//   "<think>\nplan\n</think>\n\nHi" -> reasoning "\nplan\n", content "Hi".
//
// force_reasoning: for chat templates that put "<think>" into the prompt, so
// the output starts INSIDE the reasoning block. Then the output is reasoning
// up to "</think>" whether or not it begins with "<think>" (a leading
// "<think>", if the model writes one anyway, is dropped as above). The
// "deepseek-r1" format always forces reasoning (its template opens the block).
//
// Two ways to use it, which agree exactly:
//  - ParseFull(text) for a whole response (non-streaming).
//  - Push(piece) for each streamed piece, then Finish() once. The
//    concatenation of all reasoning_delta (content_delta) strings equals
//    ParseFull's reasoning.value_or("") (content), for ANY split of the text.
//    Text that could still be the start of "<think>" (at the very beginning,
//    with its leading whitespace) or of "</think>" (at the end of what has
//    arrived, inside reasoning) is HELD BACK until a later piece decides it;
//    nothing else is delayed. Finish releases what is held.
//
// UTF-8: the tags are ASCII and a held tail always starts at '<' or at a
// whitespace byte, so when the pieces are whole UTF-8 characters so are the
// deltas.
//
// Invariants: held_ is empty in the content states; in kReasoning it is a
// proper prefix of "</think>"; in kStart it is whitespace followed by a proper
// prefix of "<think>". After Finish the parser is finished and Push/Finish
// return empty results.
//
// Thread-safety: not thread-safe; one instance per response stream (per
// choice). ParseFull is const and does not touch the streaming state.
#ifndef TESSERA_PARSERS_REASONING_PARSER_H_
#define TESSERA_PARSERS_REASONING_PARSER_H_

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace tessera::parsers {

// Result of ParseFull.
struct ReasoningParseResult {
  // nullopt when the output had no reasoning block (did not begin with
  // "<think>" and reasoning was not forced); otherwise the block's text
  // (possibly empty).
  std::optional<std::string> reasoning;
  std::string content;
};

// Result of one Push or Finish: text to send now.
struct ReasoningDelta {
  std::string reasoning_delta;
  std::string content_delta;
};

// The format names Create accepts, e.g. {"deepseek-r1", "qwen3"}.
std::vector<std::string> ReasoningParserNames();

class ReasoningParser {
 public:
  // Errors: INVALID_ARGUMENT for an unknown `name` (the message lists the
  // valid names).
  static StatusOr<std::unique_ptr<ReasoningParser>> Create(
      std::string_view name, bool force_reasoning);

  // Parses a whole response. Does not change the streaming state.
  ReasoningParseResult ParseFull(std::string_view text) const;

  // Consumes the next streamed piece (may be empty).
  ReasoningDelta Push(std::string_view piece);

  // The response ended: returns what was held back. Later calls (and Push)
  // return empty deltas.
  ReasoningDelta Finish();

  // True once the parser knows the output has a reasoning block (it began
  // with "<think>", or reasoning is forced and the first byte was decided).
  bool saw_reasoning() const { return saw_reasoning_; }
  // True while streamed text goes to reasoning_delta.
  bool in_reasoning() const { return state_ == State::kReasoning; }
  bool finished() const { return finished_; }
  // Bytes currently held back (for tests).
  size_t held_bytes() const { return held_.size(); }
  bool force_reasoning() const { return force_reasoning_; }

 private:
  enum class State {
    kStart,      // deciding whether the output begins with "<think>"
    kReasoning,  // inside the reasoning block, looking for "</think>"
    kAfterEnd,   // right after "</think>": dropping newlines
    kContent,    // everything else is content
  };

  explicit ReasoningParser(bool force_reasoning);

  // Feeds `text` (held_ already prepended where needed) in the current state,
  // appending what may be emitted to `out`.
  void Consume(std::string_view text, ReasoningDelta& out);

  bool force_reasoning_;
  State state_ = State::kStart;
  std::string held_;
  bool saw_reasoning_ = false;
  bool finished_ = false;
};

}  // namespace tessera::parsers

#endif  // TESSERA_PARSERS_REASONING_PARSER_H_
