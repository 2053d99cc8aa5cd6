// The normalizer stage of a tokenizer.json: text -> normalized text, applied
// to each stretch of input between added tokens, before pre-tokenization.
//
// Supported types: NFC, NFD, NFKC, NFKD (utf8proc), Lowercase, Prepend,
// Replace (String or Regex pattern), Strip, Sequence. Anything else fails to
// load with an Unimplemented error naming the type. Immutable after
// FromJson; thread-safe. Input and output are valid UTF-8.
#ifndef TESSERA_TOKENIZER_NORMALIZER_H_
#define TESSERA_TOKENIZER_NORMALIZER_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "tokenizer/json_util.h"
#include "tokenizer/regex.h"

namespace tessera::tok {

class Normalizer {
 public:
  // `config` is the "normalizer" object; `where` its JSON path for errors.
  static StatusOr<std::unique_ptr<Normalizer>> FromJson(const Json& config,
                                                        std::string_view where);

  std::string Normalize(std::string_view text) const;

 private:
  enum class Kind {
    kNfc,
    kNfd,
    kNfkc,
    kNfkd,
    kLowercase,
    kPrepend,
    kReplace,
    kStrip
  };
  struct Step {
    Kind kind;
    std::string text;                // Prepend: prefix; Replace: content
    std::string literal;             // Replace with a String pattern
    std::unique_ptr<Regex> pattern;  // Replace with a Regex pattern
    bool strip_left = false, strip_right = false;  // Strip
  };

  static Status Parse(const Json& config, std::string_view where,
                      std::vector<Step>* steps);
  static std::string Apply(const Step& step, std::string text);

  std::vector<Step> steps_;
};

}  // namespace tessera::tok

#endif  // TESSERA_TOKENIZER_NORMALIZER_H_
