// A tokenizer loaded once per test process and kept (the Qwen3 file is
// 11 MB; several tests read the same fixture).
#ifndef TESSERA_TESTS_TESTING_CACHED_TOKENIZER_H_
#define TESSERA_TESTS_TESTING_CACHED_TOKENIZER_H_

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>

#include "tokenizer/tokenizer.h"

namespace tessera::testing {

// The tokenizer of the folder `path` (tokenizer.json and its config); a
// load failure is a test failure and the call then dereferences null, so
// call it only where the fixture is known to exist.
inline const Tokenizer& CachedTokenizer(const std::string& path) {
  static auto* cache = new std::map<std::string, std::unique_ptr<Tokenizer>>();
  auto& slot = (*cache)[path];
  if (!slot) {
    auto loaded = Tokenizer::Load(path);
    EXPECT_TRUE(loaded.ok()) << loaded.status().ToString();
    if (loaded.ok()) slot = std::move(loaded).value();
  }
  return *slot;
}

}  // namespace tessera::testing

#endif  // TESSERA_TESTS_TESTING_CACHED_TOKENIZER_H_
