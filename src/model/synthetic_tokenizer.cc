#include "model/synthetic_tokenizer.h"

#include <fmt/format.h>

#include <array>
#include <map>
#include <nlohmann/json.hpp>
#include <unordered_map>
#include <utility>
#include <vector>

namespace tessera::model {
namespace {

using OrderedJson = nlohmann::ordered_json;

// Qwen-style pre-tokenization: contractions, letters with one optional
// leading non-letter, single digits, punctuation runs, newlines, spaces.
constexpr std::string_view kSplitPattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

constexpr std::string_view kSpecialTokens[] = {"<|endoftext|>", "<|im_start|>",
                                               "<|im_end|>"};

// Letters appended by the synthetic merges, most frequent first.
constexpr std::string_view kFillLetters = "etaoinsrhldcumfpgwybvkxjqz";

// GPT-2's byte-level alphabet: printable Latin-1 bytes stand for
// themselves, the other bytes for U+0100 onwards in byte order.
const std::array<std::string, 256>& ByteAlphabet() {
  static const std::array<std::string, 256> table = [] {
    std::array<std::string, 256> t;
    uint32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) ||
                       (b >= 0xAE && b <= 0xFF);
      uint32_t cp = printable ? uint32_t(b) : next++;
      std::string s;
      if (cp < 0x80) {
        s.push_back(char(cp));
      } else {  // cp < 0x800: two bytes
        s.push_back(char(0xC0 | (cp >> 6)));
        s.push_back(char(0x80 | (cp & 0x3F)));
      }
      t[b] = s;
    }
    return t;
  }();
  return table;
}

std::string ToByteLevel(std::string_view raw) {
  const auto& alphabet = ByteAlphabet();
  std::string out;
  for (unsigned char c : raw) out += alphabet[c];
  return out;
}

bool IsLetter(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c >= 0x80;
}
bool IsDigit(unsigned char c) { return c >= '0' && c <= '9'; }
bool IsSpace(unsigned char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

// An ASCII approximation of kSplitPattern (bytes >= 0x80 count as letters),
// good enough to count word frequencies for training.
std::vector<std::string_view> TrainingWords(std::string_view text) {
  std::vector<std::string_view> words;
  size_t i = 0;
  const size_t n = text.size();
  auto at = [&](size_t k) -> unsigned char {
    return k < n ? static_cast<unsigned char>(text[k]) : 0;
  };
  while (i < n) {
    size_t start = i;
    unsigned char c = at(i);
    if (c == '\'') {
      for (std::string_view suffix : {"ll", "re", "ve", "s", "t", "m", "d"}) {
        if (text.substr(i + 1, suffix.size()) == suffix) {
          i += 1 + suffix.size();
          break;
        }
      }
      if (i != start) {
        words.push_back(text.substr(start, i - start));
        continue;
      }
    }
    if (IsLetter(c) ||
        (c != '\n' && c != '\r' && !IsDigit(c) && IsLetter(at(i + 1)))) {
      ++i;
      while (i < n && IsLetter(at(i))) ++i;
    } else if (IsDigit(c)) {
      ++i;
    } else if (!IsSpace(c) ||
               (c == ' ' && at(i + 1) != 0 && !IsSpace(at(i + 1)) &&
                !IsLetter(at(i + 1)) && !IsDigit(at(i + 1)))) {
      if (c == ' ') ++i;
      while (i < n && !IsSpace(at(i)) && !IsLetter(at(i)) && !IsDigit(at(i))) {
        ++i;
      }
      while (i < n && (at(i) == '\n' || at(i) == '\r')) ++i;
    } else {
      while (i < n && IsSpace(at(i))) ++i;
      // Leave one space to lead the next word, as \s+(?!\S) does.
      if (i < n && i - start > 1 && at(i - 1) == ' ') --i;
    }
    words.push_back(text.substr(start, i - start));
  }
  return words;
}

struct Vocab {
  std::vector<std::string> tokens;  // raw bytes, by id
  std::unordered_map<std::string, int32_t> ids;
  std::vector<std::pair<int32_t, int32_t>> merges;

  // Records the merge and returns true when it made a new token.
  bool Merge(int32_t left, int32_t right) {
    merges.emplace_back(left, right);
    std::string joined = tokens[left] + tokens[right];
    if (ids.count(joined) != 0) return false;
    ids.emplace(joined, int32_t(tokens.size()));
    tokens.push_back(std::move(joined));
    return true;
  }
};

// Learns merges from the sample text until `base_size` tokens exist or no
// adjacent pair occurs twice.
void LearnMerges(size_t base_size, Vocab* vocab) {
  std::map<std::string_view, int64_t> word_counts;
  for (std::string_view w : TrainingWords(BpeSampleText())) ++word_counts[w];
  std::vector<std::pair<std::vector<int32_t>, int64_t>> words;
  for (const auto& [w, count] : word_counts) {
    std::vector<int32_t> ids;
    for (unsigned char c : w) ids.push_back(c);
    words.emplace_back(std::move(ids), count);
  }
  while (vocab->tokens.size() < base_size) {
    std::unordered_map<uint64_t, int64_t> pair_counts;
    for (const auto& [ids, count] : words) {
      for (size_t k = 0; k + 1 < ids.size(); ++k) {
        pair_counts[(uint64_t(ids[k]) << 32) | uint32_t(ids[k + 1])] += count;
      }
    }
    uint64_t best = 0;
    int64_t best_count = 0;
    for (const auto& [key, count] : pair_counts) {
      if (count > best_count || (count == best_count && key < best)) {
        best = key;
        best_count = count;
      }
    }
    if (best_count < 2) break;
    const int32_t left = int32_t(best >> 32);
    const int32_t right = int32_t(best & 0xFFFFFFFFu);
    vocab->Merge(left, right);
    const int32_t merged =
        vocab->ids.at(vocab->tokens[left] + vocab->tokens[right]);
    for (auto& [ids, count] : words) {
      std::vector<int32_t> out;
      out.reserve(ids.size());
      for (size_t k = 0; k < ids.size(); ++k) {
        if (k + 1 < ids.size() && ids[k] == left && ids[k + 1] == right) {
          out.push_back(merged);
          ++k;
        } else {
          out.push_back(ids[k]);
        }
      }
      ids = std::move(out);
    }
  }
}

// Extends tokens by one letter, breadth first, until `base_size` tokens.
void FillMerges(size_t base_size, Vocab* vocab) {
  std::vector<int32_t> parents;
  parents.push_back(' ');
  for (char c : kFillLetters) parents.push_back(static_cast<unsigned char>(c));
  size_t cursor = 0;
  int32_t next_learned = 256;  // tokens made so far, then the new ones
  while (vocab->tokens.size() < base_size) {
    int32_t parent;
    if (cursor < parents.size()) {
      parent = parents[cursor++];
    } else if (size_t(next_learned) < vocab->tokens.size()) {
      parent = next_learned++;
    } else {
      return;  // nothing left to extend (cannot happen with 26 letters)
    }
    for (char c : kFillLetters) {
      if (vocab->tokens.size() >= base_size) break;
      int32_t letter = static_cast<unsigned char>(c);
      if (vocab->ids.count(vocab->tokens[parent] + c) == 0) {
        vocab->Merge(parent, letter);
      }
    }
  }
}

std::string Quote(std::string_view s) {
  return OrderedJson(std::string(s)).dump();
}

OrderedJson ByteLevelStep() {
  return {{"type", "ByteLevel"},
          {"add_prefix_space", false},
          {"trim_offsets", false},
          {"use_regex", false}};
}

OrderedJson AddedTokenJson(std::string_view content) {
  return {{"content", content}, {"single_word", false}, {"lstrip", false},
          {"rstrip", false},    {"normalized", false},  {"special", true}};
}

}  // namespace

// ChatML with tools, in the layout Qwen2.5/Qwen3 models are trained on:
// the tool signatures go into the system turn inside <tools></tools>, an
// assistant's calls are <tool_call>{"name", "arguments"}</tool_call> blocks
// (what --tool-call-parser qwen reads back), and tool results are
// <tool_response> blocks in a user turn. A null content renders as "".
std::string_view ChatMlTemplate() {
  return "{%- if tools %}"
         "{{- '<|im_start|>system\\n' }}"
         "{%- if messages[0]['role'] == 'system' %}"
         "{{- messages[0]['content'] + '\\n\\n' }}"
         "{%- endif %}"
         "{{- '# Tools\\n\\nThese functions are available; their signatures "
         "are inside <tools></tools>:\\n<tools>' }}"
         "{%- for tool in tools %}{{- '\\n' + (tool | tojson) }}{%- endfor %}"
         "{{- '\\n</tools>\\n\\nTo call functions, reply with one JSON object "
         "per call, each inside <tool_call></tool_call> tags:\\n<tool_call>\\n"
         "{\"name\": <function name>, \"arguments\": <arguments as a JSON "
         "object>}\\n</tool_call><|im_end|>\\n' }}"
         "{%- elif messages[0]['role'] == 'system' %}"
         "{{- '<|im_start|>system\\n' + messages[0]['content'] + "
         "'<|im_end|>\\n' }}"
         "{%- endif %}"
         "{%- for message in messages %}"
         "{%- if message['role'] == 'system' and loop.first %}"
         "{%- elif message['role'] == 'tool' %}"
         "{%- if loop.first or messages[loop.index0 - 1]['role'] != 'tool' %}"
         "{{- '<|im_start|>user' }}"
         "{%- endif %}"
         "{{- '\\n<tool_response>\\n' + (message['content'] or '') + "
         "'\\n</tool_response>' }}"
         "{%- if loop.last or messages[loop.index0 + 1]['role'] != 'tool' %}"
         "{{- '<|im_end|>\\n' }}"
         "{%- endif %}"
         "{%- else %}"
         "{{- '<|im_start|>' + message['role'] + '\\n' + "
         "(message['content'] or '') }}"
         "{%- if message['tool_calls'] is defined and message['tool_calls'] %}"
         "{%- for call in message['tool_calls'] %}"
         "{%- if (message['content'] or '') or not loop.first %}"
         "{{- '\\n' }}{%- endif %}"
         "{{- '<tool_call>\\n{\"name\": \"' + call['function']['name'] + "
         "'\", \"arguments\": ' }}"
         "{%- if call['function']['arguments'] is string %}"
         "{{- call['function']['arguments'] }}"
         "{%- else %}{{- call['function']['arguments'] | tojson }}{%- endif %}"
         "{{- '}\\n</tool_call>' }}"
         "{%- endfor %}"
         "{%- endif %}"
         "{{- '<|im_end|>\\n' }}"
         "{%- endif %}"
         "{%- endfor %}"
         "{%- if add_generation_prompt %}"
         "{{- '<|im_start|>assistant\\n' }}"
         "{%- endif %}";
}

StatusOr<SyntheticTokenizer> MakeSyntheticTokenizer(int64_t vocab_size,
                                                    int64_t model_max_length) {
  if (vocab_size < kMinSyntheticVocabSize || vocab_size > (int64_t(1) << 30)) {
    return InvalidArgumentError(fmt::format(
        "tokenizer vocab_size {} is out of range: it needs at least {} ids "
        "(256 bytes and 3 special tokens)",
        vocab_size, kMinSyntheticVocabSize));
  }
  const size_t base_size = size_t(vocab_size) - std::size(kSpecialTokens);
  Vocab vocab;
  vocab.tokens.reserve(base_size);
  for (int b = 0; b < 256; ++b) {
    vocab.tokens.push_back(std::string(1, char(b)));
    vocab.ids.emplace(vocab.tokens.back(), b);
  }
  LearnMerges(base_size, &vocab);
  const int64_t learned = int64_t(vocab.merges.size());
  FillMerges(base_size, &vocab);
  if (vocab.tokens.size() != base_size) {
    return InternalError(
        fmt::format("tokenizer generation made {} tokens instead of {}",
                    vocab.tokens.size(), base_size));
  }

  SyntheticTokenizer out;
  out.learned_merges = learned;
  out.synthetic_merges = int64_t(vocab.merges.size()) - learned;
  out.endoftext_id = int32_t(base_size);
  out.im_start_id = int32_t(base_size + 1);
  out.im_end_id = int32_t(base_size + 2);

  OrderedJson added = OrderedJson::array();
  for (size_t k = 0; k < std::size(kSpecialTokens); ++k) {
    OrderedJson t = {{"id", int64_t(base_size + k)}};
    t.update(AddedTokenJson(kSpecialTokens[k]));
    added.push_back(std::move(t));
  }
  OrderedJson pre_tokenizer = {{"type", "Sequence"},
                               {"pretokenizers",
                                {{{"type", "Split"},
                                  {"pattern", {{"Regex", kSplitPattern}}},
                                  {"behavior", "Isolated"},
                                  {"invert", false}},
                                 ByteLevelStep()}}};

  // The vocabulary and merges are written by hand: ordered_json inserts in
  // linear time per key, too slow for 150k entries.
  std::string json;
  json.reserve(vocab.tokens.size() * 40);
  json +=
      "{\n  \"version\": \"1.0\",\n  \"truncation\": null,\n"
      "  \"padding\": null,\n";
  json += "  \"added_tokens\": " + added.dump() + ",\n";
  json += "  \"normalizer\": null,\n";
  json += "  \"pre_tokenizer\": " + pre_tokenizer.dump() + ",\n";
  json += "  \"post_processor\": " + ByteLevelStep().dump() + ",\n";
  json += "  \"decoder\": " + ByteLevelStep().dump() + ",\n";
  json +=
      "  \"model\": {\n    \"type\": \"BPE\",\n    \"dropout\": null,\n"
      "    \"unk_token\": null,\n    \"continuing_subword_prefix\": \"\",\n"
      "    \"end_of_word_suffix\": \"\",\n    \"fuse_unk\": false,\n"
      "    \"byte_fallback\": false,\n    \"ignore_merges\": false,\n"
      "    \"vocab\": {";
  std::vector<std::string> spelled(vocab.tokens.size());
  for (size_t id = 0; id < vocab.tokens.size(); ++id) {
    spelled[id] = Quote(ToByteLevel(vocab.tokens[id]));
    json += id == 0 ? "\n      " : ",\n      ";
    json += spelled[id];
    json += ": ";
    json += std::to_string(id);
  }
  json += "\n    },\n    \"merges\": [";
  for (size_t k = 0; k < vocab.merges.size(); ++k) {
    json += k == 0 ? "\n      [" : ",\n      [";
    json += spelled[vocab.merges[k].first];
    json += ", ";
    json += spelled[vocab.merges[k].second];
    json += "]";
  }
  json += "\n    ]\n  }\n}\n";
  out.tokenizer_json = std::move(json);

  OrderedJson decoder = OrderedJson::object();
  for (size_t k = 0; k < std::size(kSpecialTokens); ++k) {
    OrderedJson t = AddedTokenJson(kSpecialTokens[k]);
    decoder[std::to_string(base_size + k)] = std::move(t);
  }
  OrderedJson config = {
      {"add_bos_token", false},
      {"add_prefix_space", false},
      {"added_tokens_decoder", decoder},
      {"additional_special_tokens", {"<|im_start|>", "<|im_end|>"}},
      {"bos_token", nullptr},
      {"chat_template", ChatMlTemplate()},
      {"clean_up_tokenization_spaces", false},
      {"eos_token", "<|im_end|>"},
      {"errors", "replace"},
      {"model_max_length", model_max_length},
      {"pad_token", "<|endoftext|>"},
      {"split_special_tokens", false},
      {"tokenizer_class", "Qwen2Tokenizer"},
      {"unk_token", nullptr}};
  out.tokenizer_config_json = config.dump(2) + "\n";
  return out;
}

}  // namespace tessera::model
