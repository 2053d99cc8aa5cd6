// The decoder stage of a tokenizer.json: token strings -> text, built as a
// stream so that whole-sequence decoding and incremental detokenization run
// the very same code (Decode(ids) == concatenation of the streamed pieces).
//
// Supported types: ByteLevel, Replace, ByteFallback, Fuse, Strip, Metaspace
// and Sequence of them; with no decoder, tokens are joined with " " (as
// Hugging Face does). Each step behaves as its Hugging Face counterpart:
//   ByteLevel    alphabet characters -> bytes (a token with a character
//                outside the alphabet contributes its raw UTF-8), then one
//                lossy UTF-8 string (invalid subparts -> U+FFFD);
//   ByteFallback a run of <0xAB> tokens -> its UTF-8 text, or one U+FFFD per
//                byte when the run is not valid UTF-8;
//   Fuse         all pieces -> one string;
//   Replace      per piece (or over the fused text), pattern -> content;
//   Strip        up to `start` leading / `stop` trailing `content` chars;
//   Metaspace    replacement -> ' ', dropped in the first piece unless
//                prepend_scheme is "never".
// After Fuse or ByteLevel the text is one growing string; a step there sees
// it in chunks and holds back what later text could still change (a partial
// Replace pattern, trailing chars Strip may remove). ByteFallback or
// ByteLevel after Fuse/ByteLevel, and a Regex Replace there, are rejected at
// load time.
//
// Decoder is immutable after FromJson and may be shared by threads; each
// Decoder::Stream is single-threaded state.
#ifndef TESSERA_TOKENIZER_DECODER_H_
#define TESSERA_TOKENIZER_DECODER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "tokenizer/json_util.h"
#include "tokenizer/regex.h"

namespace tessera::tok {

class Decoder {
 public:
  // `config` is the "decoder" object, or nullptr when tokenizer.json has
  // none (tokens joined with spaces).
  static StatusOr<std::unique_ptr<Decoder>> FromJson(const Json* config,
                                                     std::string_view where);

  // Incremental decoding state. Push tokens in order; text that is final is
  // appended to `out` (always whole UTF-8 characters); Finish flushes what
  // was held back. Borrows the Decoder, which must outlive it.
  class Stream {
   public:
    explicit Stream(const Decoder& decoder);
    void Push(std::string_view token, std::string* out);
    void Finish(std::string* out);

   private:
    struct State {
      int64_t pieces_seen = 0;  // Metaspace / join: pieces received
      std::string bytes;        // ByteFallback run / ByteLevel tail
      std::string held;         // text-mode Replace / Strip hold-back
      int64_t stripped = 0;     // Strip: leading chars removed so far
      bool start_done = false;  // Strip: leading stripping is over
      int64_t held_chars = 0;   // Strip: trailing content chars held
    };

    void Feed(size_t step, std::string_view piece, std::string* out);
    void FlushStep(size_t step, std::string* out);

    const Decoder& decoder_;
    std::vector<State> states_;
  };

 private:
  enum class Kind {
    kByteLevel,
    kReplace,
    kByteFallback,
    kFuse,
    kStrip,
    kMetaspace,
    kJoinWithSpace
  };
  struct Step {
    Kind kind;
    bool text_mode = false;  // input is one growing string, not pieces
    std::string pattern;     // Replace (literal) / Strip content / Metaspace
                             // replacement
    std::unique_ptr<Regex> regex;  // Replace with a Regex pattern
    std::string content;           // Replace
    int64_t start = 0, stop = 0;   // Strip
    bool drop_in_first = true;     // Metaspace: prepend_scheme != never
  };

  static Status Parse(const Json& config, std::string_view where,
                      std::vector<Step>* steps);

  std::vector<Step> steps_;
};

}  // namespace tessera::tok

#endif  // TESSERA_TOKENIZER_DECODER_H_
