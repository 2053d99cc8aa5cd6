// The post-processor stage of a tokenizer.json: adds special tokens around
// an encoded sequence when the caller asks for special tokens.
//
// Supported types (single-sequence use only; pair templates are parsed but
// not used):
//   TemplateProcessing  {single: [{SpecialToken: {id}} | {Sequence: {id}}]
//                        or "<s> $A" strings, special_tokens: {name: {ids}}}
//   RobertaProcessing / BertProcessing  {cls: [tok, id], sep: [tok, id]}:
//                        cls $A sep
//   ByteLevel           adds nothing (it only adjusts offsets)
//   Sequence            {processors: [...]}, applied in order
// With no post-processor (or one that adds nothing), `fallback_bos` and
// `fallback_eos` (from tokenizer_config.json's add_bos_token /
// add_eos_token) are added instead. Immutable; thread-safe.
#ifndef TESSERA_TOKENIZER_POST_PROCESSOR_H_
#define TESSERA_TOKENIZER_POST_PROCESSOR_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "tokenizer/json_util.h"

namespace tessera::tok {

class PostProcessor {
 public:
  // `config` is the "post_processor" object or nullptr.
  static StatusOr<std::unique_ptr<PostProcessor>> FromJson(
      const Json* config, std::string_view where);

  // Wraps `ids` (one encoded sequence) with the special tokens.
  void AddSpecialTokens(std::vector<int32_t>* ids) const;

  // Used only when the configured processors add no tokens themselves.
  void SetFallback(std::optional<int32_t> bos, std::optional<int32_t> eos);

  // Whether the tokenizer.json processors add any tokens.
  bool adds_tokens() const { return !template_.empty(); }

 private:
  // One element of the single-sequence template: the sequence itself
  // (is_sequence) or a list of special token ids.
  struct Item {
    bool is_sequence = false;
    std::vector<int32_t> ids;
  };

  static Status Parse(const Json& config, std::string_view where,
                      std::vector<Item>* items);
  static Status ParseTemplate(const Json& config, std::string_view where,
                              std::vector<Item>* items);

  std::vector<Item> template_;  // empty: nothing configured
  std::optional<int32_t> fallback_bos_, fallback_eos_;
};

}  // namespace tessera::tok

#endif  // TESSERA_TOKENIZER_POST_PROCESSOR_H_
