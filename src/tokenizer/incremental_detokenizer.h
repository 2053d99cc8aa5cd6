// IncrementalDetokenizer: turns generated token ids into text one id at a
// time, for streaming responses.
//
// Invariant: for any ids, the concatenation of everything Add returns plus
// Flush equals Tokenizer::Decode(ids, skip_special_tokens) — both run the
// same Decoder stream. Emitted text is always whole UTF-8 characters: bytes
// of a character split across tokens are held back until it completes
// (byte-level BPE) and a run of <0xAB> byte-fallback tokens is held until a
// non-byte token ends it (Hugging Face turns a whole invalid run into
// U+FFFDs, so the run's text is only known then). SentencePiece's leading
// space is stripped exactly as the full decode strips it: only at the very
// start of the stream. To continue after a prompt without that stripping
// (so "▁there" yields " there"), Prime the stream with the prompt ids.
//
// Borrows the Tokenizer, which must outlive it. Not thread-safe: one
// instance per stream.
#ifndef TESSERA_TOKENIZER_INCREMENTAL_DETOKENIZER_H_
#define TESSERA_TOKENIZER_INCREMENTAL_DETOKENIZER_H_

#include <cstdint>
#include <span>
#include <string>

#include "tokenizer/decoder.h"
#include "tokenizer/tokenizer.h"

namespace tessera {

class IncrementalDetokenizer {
 public:
  IncrementalDetokenizer(const Tokenizer& tokenizer, bool skip_special_tokens);

  // Feeds context ids (e.g. the prompt) whose text is not returned; later
  // output decodes as the continuation of them. Text they leave pending (a
  // partial character) comes out with the next Add.
  void Prime(std::span<const int32_t> ids);

  // Feeds one id; returns the text it completes (often empty).
  std::string Add(int32_t id);

  // Ends the stream: returns what was held back (an unfinished character
  // decodes to U+FFFD, as in a full decode). Later calls return "".
  std::string Flush();

 private:
  void Push(int32_t id, std::string* out);

  const Tokenizer& tokenizer_;
  bool skip_special_tokens_;
  tok::Decoder::Stream stream_;
  bool finished_ = false;
};

}  // namespace tessera

#endif  // TESSERA_TOKENIZER_INCREMENTAL_DETOKENIZER_H_
