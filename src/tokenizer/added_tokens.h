// Added tokens (special tokens such as <|im_start|> and other tokens added on
// top of the BPE vocabulary) and the matcher that cuts them out of the text
// before normalization and BPE.
//
// Matching is leftmost-longest over all token contents (a byte trie), then
// the token flags apply as in Hugging Face:
//   single_word  the match must not touch a word character on either side;
//   lstrip       whitespace before the match joins the token (is dropped);
//   rstrip       whitespace after the match joins the token;
//   normalized   the token is matched in the normalized text (with its own
//                content normalized) instead of the raw text.
// Immutable after construction; thread-safe. Text must be valid UTF-8.
#ifndef TESSERA_TOKENIZER_ADDED_TOKENS_H_
#define TESSERA_TOKENIZER_ADDED_TOKENS_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tessera::tok {

struct AddedToken {
  int32_t id = -1;
  std::string content;
  bool single_word = false;
  bool lstrip = false;
  bool rstrip = false;
  bool normalized = false;
  bool special = false;
};

class AddedTokenMatcher {
 public:
  // One stretch of the text: a matched token (id >= 0) or plain text
  // (id == -1). Byte range [begin, end) of the matched text.
  struct Segment {
    size_t begin;
    size_t end;
    int32_t id;
  };

  AddedTokenMatcher() = default;
  // `patterns[i]` is the text matched for `tokens[i]` (its content, or its
  // normalized content for a normalized token). Empty patterns are ignored.
  AddedTokenMatcher(const std::vector<AddedToken>& tokens,
                    const std::vector<std::string>& patterns);

  bool empty() const { return nodes_.size() <= 1; }

  // Cuts `text` into segments covering it in order. Plain-text segments are
  // never empty; stripped whitespace belongs to its token's segment.
  std::vector<Segment> Split(std::string_view text) const;

 private:
  struct Node {
    std::vector<std::pair<uint8_t, int32_t>> children;  // byte -> node
    int32_t token = -1;  // index into tokens_ when a pattern ends here
  };

  // Index of the longest pattern starting at text[pos] and its length.
  bool LongestAt(std::string_view text, size_t pos, int32_t* token,
                 size_t* length) const;

  std::vector<Node> nodes_{Node{}};
  std::vector<AddedToken> tokens_;
  std::array<bool, 256> first_byte_{};
};

}  // namespace tessera::tok

#endif  // TESSERA_TOKENIZER_ADDED_TOKENS_H_
