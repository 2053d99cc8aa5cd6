// Reading the shared fixtures' JSON-lines goldens (one object per line, as
// models/stories260k/golden_greedy.jsonl), and checking a greedy
// continuation against one: the ids must equal the golden's
// greedy_output_ids over its stable_prefix (the steps on which any correct
// implementation agrees; later ones may flip on near-ties).
#ifndef TESSERA_TESTS_TESTING_GOLDENS_H_
#define TESSERA_TESTS_TESTING_GOLDENS_H_

#include <gtest/gtest.h>

#include <cstddef>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace tessera::testing {

// Every non-empty line of `path`, parsed (as JsonT: nlohmann::json, or
// ordered_json to keep key order).
template <typename JsonT = nlohmann::json>
std::vector<JsonT> ReadJsonLines(const std::string& path) {
  std::vector<JsonT> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty()) out.push_back(JsonT::parse(line));
  }
  return out;
}

// Expects `ids` to hold the golden's greedy ids over its stable prefix;
// `label` names the request in a failure ("... step i").
inline void ExpectGoldenPrefix(const std::vector<int>& ids, const nlohmann::json& golden,
                               const std::string& label) {
  const auto expected = golden["greedy_output_ids"].get<std::vector<int>>();
  const size_t stable = golden["stable_prefix"].get<size_t>();
  for (size_t i = 0; i < stable && i < expected.size(); ++i) {
    ASSERT_LT(i, ids.size()) << label << ": stopped before step " << i;
    EXPECT_EQ(ids[i], expected[i]) << label << " step " << i;
  }
}

}  // namespace tessera::testing

#endif  // TESSERA_TESTS_TESTING_GOLDENS_H_
