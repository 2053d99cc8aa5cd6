// libFuzzer harness: tokenizer.json (normalizers, pre-tokenizers, the BPE
// vocabulary and merges, added tokens, decoders) as Tokenizer loads it, then
// an encode and decode round with what loaded.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "tokenizer/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto tokenizer = tessera::Tokenizer::FromJsonText(text, "", "fuzz");
  if (!tokenizer.ok()) return 0;
  const std::vector<int32_t> ids =
      (*tokenizer)->Encode("Hello, world! 123 héllo\n\t<s>", true);
  (void)(*tokenizer)->Decode(ids, false);
  (void)(*tokenizer)->Decode(ids, true);
  return 0;
}
