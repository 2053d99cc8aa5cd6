#include "engine/stop_matcher.h"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

namespace tessera::engine {
namespace {

// Strict UTF-8 check (no overlongs, no surrogates, <= U+10FFFF).
bool IsValidUtf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto b = static_cast<unsigned char>(s[i]);
    size_t n;
    uint32_t cp;
    if (b < 0x80) {
      ++i;
      continue;
    } else if ((b & 0xE0) == 0xC0) {
      n = 2;
      cp = b & 0x1F;
    } else if ((b & 0xF0) == 0xE0) {
      n = 3;
      cp = b & 0x0F;
    } else if ((b & 0xF8) == 0xF0) {
      n = 4;
      cp = b & 0x07;
    } else {
      return false;
    }
    if (i + n > s.size()) return false;
    for (size_t k = 1; k < n; ++k) {
      const auto c = static_cast<unsigned char>(s[i + k]);
      if ((c & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (c & 0x3F);
    }
    static constexpr uint32_t kMin[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMin[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
      return false;
    }
    i += n;
  }
  return true;
}

}  // namespace

StatusOr<StopMatcher> StopMatcher::Create(std::vector<std::string> stops) {
  if (stops.size() > kMaxStopStrings) {
    return InvalidArgumentError(
        fmt::format("{} stop strings given, at most {} are allowed; drop some",
                    stops.size(), kMaxStopStrings));
  }
  for (size_t i = 0; i < stops.size(); ++i) {
    if (stops[i].empty()) {
      return InvalidArgumentError(fmt::format(
          "stop string {} is empty; remove it (an empty stop would end "
          "generation before any text)",
          i));
    }
    if (stops[i].size() > kMaxStopStringBytes) {
      return InvalidArgumentError(
          fmt::format("stop string {} is {} bytes, longer than the {}-byte "
                      "limit; shorten it",
                      i, stops[i].size(), kMaxStopStringBytes));
    }
    if (!IsValidUtf8(stops[i])) {
      return InvalidArgumentError(fmt::format(
          "stop string {} is not valid UTF-8; send it as UTF-8 text", i));
    }
  }
  return StopMatcher(std::move(stops));
}

StopMatcher::StopMatcher(std::vector<std::string> stops)
    : stops_(std::move(stops)) {
  for (const std::string& s : stops_) {
    max_stop_len_ = std::max(max_stop_len_, s.size());
  }
  held_.reserve(max_stop_len_);
}

size_t StopMatcher::HeldTailLength(std::string_view text) const {
  if (max_stop_len_ == 0) return 0;
  const size_t longest = std::min(text.size(), max_stop_len_ - 1);
  for (size_t k = longest; k > 0; --k) {
    const std::string_view tail = text.substr(text.size() - k);
    for (const std::string& s : stops_) {
      if (s.size() > k && std::string_view(s).substr(0, k) == tail) return k;
    }
  }
  return 0;
}

StopMatch StopMatcher::Add(std::string_view piece) {
  StopMatch result;
  if (finished_) return result;
  if (stops_.empty()) {
    result.text.assign(piece);
    return result;
  }
  // held_ holds no whole stop string and is the longest candidate tail, so
  // every stop occurrence not yet seen lies inside held_ + piece.
  std::string buffer = std::move(held_);
  held_.clear();
  buffer.append(piece);

  size_t best_end = std::string::npos;
  size_t best_start = std::string::npos;
  int best_index = -1;
  for (size_t i = 0; i < stops_.size(); ++i) {
    const size_t pos = buffer.find(stops_[i]);
    if (pos == std::string::npos) continue;
    const size_t end = pos + stops_[i].size();
    if (end < best_end || (end == best_end && pos < best_start)) {
      best_end = end;
      best_start = pos;
      best_index = static_cast<int>(i);
    }
  }
  if (best_index >= 0) {
    buffer.resize(best_start);
    result.text = std::move(buffer);
    result.stopped = true;
    result.stop_index = best_index;
    finished_ = true;
    return result;
  }
  const size_t keep = HeldTailLength(buffer);
  held_.assign(buffer, buffer.size() - keep, keep);
  buffer.resize(buffer.size() - keep);
  result.text = std::move(buffer);
  return result;
}

std::string StopMatcher::Flush() {
  if (finished_) return {};
  finished_ = true;
  return std::exchange(held_, std::string());
}

}  // namespace tessera::engine
