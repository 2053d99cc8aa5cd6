#include "tokenizer/decoder.h"

#include <fmt/format.h>

#include "tokenizer/byte_level.h"
#include "tokenizer/utf8.h"

namespace tessera::tok {

namespace {

// Strip of one whole piece: up to `start` leading and `stop` trailing
// `content` characters.
std::string StripPiece(std::string_view piece, std::string_view content,
                       int64_t start, int64_t stop) {
  size_t begin = 0, end = piece.size();
  for (int64_t i = 0; i < start && piece.substr(begin).starts_with(content);
       ++i) {
    begin += content.size();
  }
  for (int64_t i = 0; i < stop && end >= begin + content.size() &&
                      piece.substr(0, end).ends_with(content);
       ++i) {
    end -= content.size();
  }
  return std::string(piece.substr(begin, end - begin));
}

std::string MetaspacePiece(std::string_view piece, std::string_view replacement,
                           bool drop) {
  std::string out;
  out.reserve(piece.size());
  size_t pos = 0;
  while (pos < piece.size()) {
    if (piece.substr(pos).starts_with(replacement)) {
      if (!drop) out.push_back(' ');
      pos += replacement.size();
    } else {
      out.push_back(piece[pos++]);
    }
  }
  return out;
}

StatusOr<std::string> OneCharString(const Json& config, std::string_view key,
                                    std::string_view where,
                                    std::string fallback) {
  TSR_ASSIGN_OR_RETURN(std::string s,
                       OptionalString(config, key, where, std::move(fallback)));
  if (s.empty() || ReadUtf8(s, 0).length != s.size()) {
    return InvalidArgumentError(
        fmt::format("{}: expected exactly one character, found \"{}\"",
                    FieldPath(where, key), s));
  }
  return s;
}

}  // namespace

StatusOr<std::unique_ptr<Decoder>> Decoder::FromJson(const Json* config,
                                                     std::string_view where) {
  auto decoder = std::unique_ptr<Decoder>(new Decoder());
  if (config == nullptr) {
    Step join;
    join.kind = Kind::kJoinWithSpace;
    decoder->steps_.push_back(std::move(join));
    return decoder;
  }
  TSR_RETURN_IF_ERROR(Parse(*config, where, &decoder->steps_));
  bool text_mode = false;
  for (Step& step : decoder->steps_) {
    step.text_mode = text_mode;
    if (text_mode && (step.kind == Kind::kByteFallback ||
                      step.kind == Kind::kByteLevel || step.regex != nullptr)) {
      const char* name = step.kind == Kind::kByteFallback ? "ByteFallback"
                         : step.kind == Kind::kByteLevel  ? "ByteLevel"
                                                          : "Replace (Regex)";
      return UnimplementedError(fmt::format(
          "{}: a {} decoder after Fuse or ByteLevel is not supported", where,
          name));
    }
    if (step.kind == Kind::kFuse || step.kind == Kind::kByteLevel) {
      text_mode = true;
    }
  }
  return decoder;
}

Status Decoder::Parse(const Json& config, std::string_view where,
                      std::vector<Step>* steps) {
  TSR_ASSIGN_OR_RETURN(std::string type, RequireType(config, where));
  Step step;
  if (type == "Sequence") {
    const Json* list = FindField(config, "decoders");
    if (list == nullptr || !list->is_array()) {
      return InvalidArgumentError(fmt::format(
          "{}: a Sequence decoder needs a \"decoders\" array", where));
    }
    for (size_t i = 0; i < list->size(); ++i) {
      TSR_RETURN_IF_ERROR(
          Parse((*list)[i], fmt::format("{}.decoders[{}]", where, i), steps));
    }
    return OkStatus();
  } else if (type == "ByteLevel") {
    step.kind = Kind::kByteLevel;
  } else if (type == "ByteFallback") {
    step.kind = Kind::kByteFallback;
  } else if (type == "Fuse") {
    step.kind = Kind::kFuse;
  } else if (type == "Replace") {
    step.kind = Kind::kReplace;
    TSR_ASSIGN_OR_RETURN(step.content, RequireString(config, "content", where));
    const Json* pattern = FindField(config, "pattern");
    const std::string pattern_path = FieldPath(where, "pattern");
    if (pattern != nullptr && FindField(*pattern, "String") != nullptr) {
      TSR_ASSIGN_OR_RETURN(step.pattern,
                           RequireString(*pattern, "String", pattern_path));
      if (step.pattern.empty()) {
        return InvalidArgumentError(
            fmt::format("{}.String: must not be empty", pattern_path));
      }
    } else if (pattern != nullptr && FindField(*pattern, "Regex") != nullptr) {
      TSR_ASSIGN_OR_RETURN(std::string re,
                           RequireString(*pattern, "Regex", pattern_path));
      auto compiled = Regex::Compile(re);
      if (!compiled.ok()) return compiled.status().WithContext(pattern_path);
      step.regex = std::move(compiled).value();
    } else {
      return InvalidArgumentError(
          fmt::format("{}: expected {{\"String\": ...}} or {{\"Regex\": ...}}",
                      pattern_path));
    }
  } else if (type == "Strip") {
    step.kind = Kind::kStrip;
    TSR_ASSIGN_OR_RETURN(step.pattern,
                         OneCharString(config, "content", where, " "));
    TSR_ASSIGN_OR_RETURN(step.start, OptionalInt(config, "start", where, 0));
    TSR_ASSIGN_OR_RETURN(step.stop, OptionalInt(config, "stop", where, 0));
    if (step.start < 0 || step.stop < 0) {
      return InvalidArgumentError(
          fmt::format("{}: Strip start and stop must not be negative", where));
    }
  } else if (type == "Metaspace") {
    step.kind = Kind::kMetaspace;
    TSR_ASSIGN_OR_RETURN(step.pattern, OneCharString(config, "replacement",
                                                     where, "\xE2\x96\x81"));
    TSR_ASSIGN_OR_RETURN(bool add_prefix_space,
                         OptionalBool(config, "add_prefix_space", where, true));
    TSR_ASSIGN_OR_RETURN(std::string scheme,
                         OptionalString(config, "prepend_scheme", where,
                                        add_prefix_space ? "always" : "never"));
    if (scheme != "always" && scheme != "first" && scheme != "never") {
      return InvalidArgumentError(fmt::format(
          "{}.prepend_scheme: unknown value \"{}\" (expected always, first or "
          "never)",
          where, scheme));
    }
    step.drop_in_first = scheme != "never";
  } else {
    return UnimplementedError(fmt::format(
        "{}: decoder type \"{}\" is not supported (supported: ByteLevel, "
        "Replace, ByteFallback, Fuse, Strip, Metaspace, Sequence)",
        where, type));
  }
  steps->push_back(std::move(step));
  return OkStatus();
}

Decoder::Stream::Stream(const Decoder& decoder)
    : decoder_(decoder), states_(decoder.steps_.size()) {}

void Decoder::Stream::Push(std::string_view token, std::string* out) {
  Feed(0, token, out);
}

void Decoder::Stream::Finish(std::string* out) {
  for (size_t i = 0; i < decoder_.steps_.size(); ++i) FlushStep(i, out);
}

void Decoder::Stream::Feed(size_t index, std::string_view piece,
                           std::string* out) {
  if (index == decoder_.steps_.size()) {
    out->append(piece);
    return;
  }
  const Step& step = decoder_.steps_[index];
  State& st = states_[index];
  const size_t next = index + 1;
  if (step.text_mode && piece.empty()) return;

  switch (step.kind) {
    case Kind::kJoinWithSpace:
      if (st.pieces_seen++ > 0) Feed(next, " ", out);
      Feed(next, piece, out);
      return;

    case Kind::kFuse:
      Feed(next, piece, out);
      return;

    case Kind::kByteFallback: {
      uint8_t byte;
      if (ParseByteToken(piece, &byte)) {
        st.bytes.push_back(static_cast<char>(byte));
        return;
      }
      FlushStep(index, out);
      Feed(next, piece, out);
      return;
    }

    case Kind::kByteLevel: {
      if (!ByteLevelDecodeToken(piece, &st.bytes)) st.bytes.append(piece);
      const size_t ready = st.bytes.size() - IncompleteUtf8TailLength(st.bytes);
      if (ready == 0) return;
      std::string text =
          ToValidUtf8(std::string_view(st.bytes).substr(0, ready));
      st.bytes.erase(0, ready);
      Feed(next, text, out);
      return;
    }

    case Kind::kMetaspace: {
      const bool first = step.text_mode || st.pieces_seen == 0;
      ++st.pieces_seen;
      Feed(next,
           MetaspacePiece(piece, step.pattern, first && step.drop_in_first),
           out);
      return;
    }

    case Kind::kReplace: {
      if (!step.text_mode) {
        Feed(next,
             step.regex != nullptr
                 ? RegexReplaceAll(*step.regex, piece, step.content)
                 : LiteralReplaceAll(piece, step.pattern, step.content),
             out);
        return;
      }
      // Over a growing text: replace what is complete, hold back a suffix
      // that may be the start of the pattern.
      std::string& buf = st.held;
      buf.append(piece);
      std::string result;
      size_t pos = 0, hit;
      while ((hit = buf.find(step.pattern, pos)) != std::string::npos) {
        result.append(buf, pos, hit - pos);
        result.append(step.content);
        pos = hit + step.pattern.size();
      }
      size_t keep = std::min(step.pattern.size() - 1, buf.size() - pos);
      while (keep > 0 &&
             buf.compare(buf.size() - keep, keep, step.pattern, 0, keep) != 0) {
        --keep;
      }
      result.append(buf, pos, buf.size() - keep - pos);
      buf.erase(0, buf.size() - keep);
      Feed(next, result, out);
      return;
    }

    case Kind::kStrip: {
      if (!step.text_mode) {
        Feed(next, StripPiece(piece, step.pattern, step.start, step.stop), out);
        return;
      }
      std::string result;
      ForEachCodePoint(piece, [&](uint32_t, size_t offset, size_t length) {
        std::string_view ch = piece.substr(offset, length);
        const bool is_content = ch == step.pattern;
        if (!st.start_done) {
          if (is_content && st.stripped < step.start) {
            ++st.stripped;
            return;
          }
          st.start_done = true;
        }
        if (step.stop > 0 && is_content) {
          st.held.append(ch);
          if (++st.held_chars > step.stop) {
            result.append(step.pattern);
            st.held.erase(0, step.pattern.size());
            --st.held_chars;
          }
          return;
        }
        result.append(st.held);
        st.held.clear();
        st.held_chars = 0;
        result.append(ch);
      });
      Feed(next, result, out);
      return;
    }
  }
}

void Decoder::Stream::FlushStep(size_t index, std::string* out) {
  const Step& step = decoder_.steps_[index];
  State& st = states_[index];
  const size_t next = index + 1;
  switch (step.kind) {
    case Kind::kByteFallback: {
      if (st.bytes.empty()) return;
      std::string run;
      run.swap(st.bytes);
      if (IsValidUtf8(run)) {
        Feed(next, run, out);
      } else {
        for (size_t i = 0; i < run.size(); ++i) {
          Feed(next, kReplacementChar, out);
        }
      }
      return;
    }
    case Kind::kByteLevel: {
      if (st.bytes.empty()) return;
      std::string text = ToValidUtf8(st.bytes);
      st.bytes.clear();
      Feed(next, text, out);
      return;
    }
    case Kind::kReplace: {
      std::string held;
      held.swap(st.held);
      Feed(next, held, out);
      return;
    }
    case Kind::kStrip:
      // Held characters are trailing `content`: the ones `stop` removes.
      st.held.clear();
      st.held_chars = 0;
      return;
    default:
      return;
  }
}

}  // namespace tessera::tok
