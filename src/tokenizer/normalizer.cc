#include "tokenizer/normalizer.h"

#include <fmt/format.h>
#include <utf8proc.h>

#include <cstdlib>

#include "tokenizer/utf8.h"

namespace tessera::tok {

namespace {

bool IsAscii(std::string_view s) {
  for (char c : s) {
    if (static_cast<unsigned char>(c) >= 0x80) return false;
  }
  return true;
}

std::string UnicodeNormalize(const std::string& text, int options) {
  // ASCII is invariant under every normalization form.
  if (IsAscii(text)) return text;
  utf8proc_uint8_t* dst = nullptr;
  const utf8proc_ssize_t n =
      utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(text.data()),
                   static_cast<utf8proc_ssize_t>(text.size()), &dst,
                   static_cast<utf8proc_option_t>(options | UTF8PROC_STABLE));
  if (n < 0) return text;  // only for invalid UTF-8, which callers exclude
  std::string out(reinterpret_cast<const char*>(dst), static_cast<size_t>(n));
  std::free(dst);
  return out;
}

std::string Lowercase(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  ForEachCodePoint(text, [&](uint32_t cp, size_t, size_t) {
    // The one unconditional multi-character lowercase mapping (Unicode
    // SpecialCasing): U+0130 -> "i" + U+0307.
    if (cp == 0x130) {
      out.append("i\xCC\x87");
      return;
    }
    AppendUtf8(static_cast<uint32_t>(
                   utf8proc_tolower(static_cast<utf8proc_int32_t>(cp))),
               &out);
  });
  return out;
}

std::string StripWhitespace(const std::string& text, bool left, bool right) {
  size_t begin = 0, end = text.size();
  if (left) {
    while (begin < end) {
      Utf8Sequence seq = ReadUtf8(text, begin);
      if (!IsUnicodeWhitespace(seq.code_point)) break;
      begin += seq.length;
    }
  }
  if (right) {
    while (end > begin) {
      size_t start = end - 1;
      while (start > begin &&
             (static_cast<uint8_t>(text[start]) & 0xC0) == 0x80)
        --start;
      Utf8Sequence seq = ReadUtf8(text, start);
      if (!IsUnicodeWhitespace(seq.code_point)) break;
      end = start;
    }
  }
  return text.substr(begin, end - begin);
}

}  // namespace

StatusOr<std::unique_ptr<Normalizer>> Normalizer::FromJson(
    const Json& config, std::string_view where) {
  auto normalizer = std::unique_ptr<Normalizer>(new Normalizer());
  TSR_RETURN_IF_ERROR(Parse(config, where, &normalizer->steps_));
  return normalizer;
}

Status Normalizer::Parse(const Json& config, std::string_view where,
                         std::vector<Step>* steps) {
  TSR_ASSIGN_OR_RETURN(std::string type, RequireType(config, where));
  Step step;
  if (type == "Sequence") {
    const Json* list = FindField(config, "normalizers");
    if (list == nullptr || !list->is_array()) {
      return InvalidArgumentError(fmt::format(
          "{}: a Sequence normalizer needs a \"normalizers\" array", where));
    }
    for (size_t i = 0; i < list->size(); ++i) {
      TSR_RETURN_IF_ERROR(Parse(
          (*list)[i], fmt::format("{}.normalizers[{}]", where, i), steps));
    }
    return OkStatus();
  } else if (type == "NFC") {
    step.kind = Kind::kNfc;
  } else if (type == "NFD") {
    step.kind = Kind::kNfd;
  } else if (type == "NFKC") {
    step.kind = Kind::kNfkc;
  } else if (type == "NFKD") {
    step.kind = Kind::kNfkd;
  } else if (type == "Lowercase") {
    step.kind = Kind::kLowercase;
  } else if (type == "Prepend") {
    step.kind = Kind::kPrepend;
    TSR_ASSIGN_OR_RETURN(step.text, RequireString(config, "prepend", where));
  } else if (type == "Replace") {
    step.kind = Kind::kReplace;
    TSR_ASSIGN_OR_RETURN(step.text, RequireString(config, "content", where));
    const Json* pattern = FindField(config, "pattern");
    if (pattern != nullptr && FindField(*pattern, "String") != nullptr) {
      TSR_ASSIGN_OR_RETURN(
          step.literal,
          RequireString(*pattern, "String", FieldPath(where, "pattern")));
      if (step.literal.empty()) {
        return InvalidArgumentError(
            fmt::format("{}.pattern.String: must not be empty", where));
      }
    } else if (pattern != nullptr && FindField(*pattern, "Regex") != nullptr) {
      TSR_ASSIGN_OR_RETURN(
          std::string re,
          RequireString(*pattern, "Regex", FieldPath(where, "pattern")));
      auto compiled = Regex::Compile(re);
      if (!compiled.ok()) return compiled.status().WithContext(where);
      step.pattern = std::move(compiled).value();
    } else {
      return InvalidArgumentError(fmt::format(
          "{}.pattern: expected {{\"String\": ...}} or {{\"Regex\": ...}}",
          where));
    }
  } else if (type == "Strip") {
    step.kind = Kind::kStrip;
    TSR_ASSIGN_OR_RETURN(step.strip_left,
                         OptionalBool(config, "strip_left", where, true));
    TSR_ASSIGN_OR_RETURN(step.strip_right,
                         OptionalBool(config, "strip_right", where, true));
  } else {
    return UnimplementedError(fmt::format(
        "{}: normalizer type \"{}\" is not supported (supported: NFC, NFD, "
        "NFKC, NFKD, Lowercase, Prepend, Replace, Strip, Sequence)",
        where, type));
  }
  steps->push_back(std::move(step));
  return OkStatus();
}

std::string Normalizer::Apply(const Step& step, std::string text) {
  switch (step.kind) {
    case Kind::kNfc:
      return UnicodeNormalize(text, UTF8PROC_COMPOSE);
    case Kind::kNfd:
      return UnicodeNormalize(text, UTF8PROC_DECOMPOSE);
    case Kind::kNfkc:
      return UnicodeNormalize(text, UTF8PROC_COMPOSE | UTF8PROC_COMPAT);
    case Kind::kNfkd:
      return UnicodeNormalize(text, UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT);
    case Kind::kLowercase:
      return Lowercase(text);
    case Kind::kPrepend:
      // Hugging Face prepends only to non-empty text.
      return text.empty() ? text : step.text + text;
    case Kind::kReplace:
      return step.pattern != nullptr
                 ? RegexReplaceAll(*step.pattern, text, step.text)
                 : LiteralReplaceAll(text, step.literal, step.text);
    case Kind::kStrip:
      return StripWhitespace(text, step.strip_left, step.strip_right);
  }
  return text;
}

std::string Normalizer::Normalize(std::string_view text) const {
  std::string out(text);
  for (const Step& step : steps_) out = Apply(step, std::move(out));
  return out;
}

}  // namespace tessera::tok
