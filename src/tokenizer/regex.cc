#include "tokenizer/regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <fmt/format.h>
#include <pcre2.h>

#include "tokenizer/utf8.h"

namespace tessera::tok {

namespace {

pcre2_code* AsCode(void* p) { return static_cast<pcre2_code*>(p); }

struct MatchDataDeleter {
  void operator()(pcre2_match_data* md) const { pcre2_match_data_free(md); }
};

}  // namespace

StatusOr<std::unique_ptr<Regex>> Regex::Compile(std::string_view pattern) {
  int error_code = 0;
  PCRE2_SIZE error_offset = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()),
                                   pattern.size(), PCRE2_UTF | PCRE2_UCP,
                                   &error_code, &error_offset, nullptr);
  if (code == nullptr) {
    PCRE2_UCHAR buffer[256];
    pcre2_get_error_message(error_code, buffer, sizeof(buffer));
    return InvalidArgumentError(fmt::format(
        "regular expression /{}/ does not compile at offset {}: {}", pattern,
        error_offset, reinterpret_cast<const char*>(buffer)));
  }
  const bool jit = pcre2_jit_compile(code, PCRE2_JIT_COMPLETE) == 0;
  return std::unique_ptr<Regex>(new Regex(code, jit, std::string(pattern)));
}

StatusOr<std::unique_ptr<Regex>> Regex::CompileLiteral(
    std::string_view literal) {
  // \Q...\E quotes everything except a literal "\E", which is spliced in.
  std::string pattern = "\\Q";
  size_t pos = 0;
  while (true) {
    size_t hit = literal.find("\\E", pos);
    if (hit == std::string_view::npos) {
      pattern.append(literal.substr(pos));
      break;
    }
    pattern.append(literal.substr(pos, hit - pos));
    pattern.append("\\E\\\\E\\Q");
    pos = hit + 2;
  }
  pattern.append("\\E");
  return Compile(pattern);
}

Regex::~Regex() { pcre2_code_free(AsCode(code_)); }

std::vector<std::pair<size_t, size_t>> Regex::FindAll(
    std::string_view text) const {
  std::vector<std::pair<size_t, size_t>> matches;
  std::unique_ptr<pcre2_match_data, MatchDataDeleter> md(
      pcre2_match_data_create_from_pattern(AsCode(code_), nullptr));
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t offset = 0;
  while (offset <= text.size()) {
    int rc = PCRE2_ERROR_NOMATCH;
    if (jit_) {
      rc = pcre2_jit_match(AsCode(code_), subject, text.size(), offset, 0,
                           md.get(), nullptr);
    }
    if (!jit_ || (rc < 0 && rc != PCRE2_ERROR_NOMATCH)) {
      // The interpreter keeps its backtracking state on the heap, so it also
      // covers a JIT stack overflow on a pathological input.
      rc = pcre2_match(AsCode(code_), subject, text.size(), offset,
                       PCRE2_NO_UTF_CHECK, md.get(), nullptr);
    }
    // No match, or a resource limit: the rest of the text is one gap (no text
    // is lost; callers keep gaps).
    if (rc < 0) break;
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md.get());
    const size_t begin = ov[0], end = ov[1];
    if (end > begin) {
      matches.emplace_back(begin, end);
      offset = end;
    } else {
      // Empty match: step over one whole code point.
      if (begin >= text.size()) break;
      offset = begin + ReadUtf8(text, begin).length;
    }
  }
  return matches;
}

std::string RegexReplaceAll(const Regex& regex, std::string_view text,
                            std::string_view content) {
  std::string out;
  out.reserve(text.size());
  size_t prev = 0;
  for (auto [begin, end] : regex.FindAll(text)) {
    out.append(text.substr(prev, begin - prev));
    out.append(content);
    prev = end;
  }
  out.append(text.substr(prev));
  return out;
}

std::string LiteralReplaceAll(std::string_view text, std::string_view literal,
                              std::string_view content) {
  std::string out;
  out.reserve(text.size());
  size_t prev = 0;
  while (true) {
    const size_t hit = text.find(literal, prev);
    if (hit == std::string_view::npos) break;
    out.append(text.substr(prev, hit - prev));
    out.append(content);
    prev = hit + literal.size();
  }
  out.append(text.substr(prev));
  return out;
}

}  // namespace tessera::tok
