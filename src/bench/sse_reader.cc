#include "bench/sse_reader.h"

namespace tessera::bench {

std::vector<std::string> SseReader::Feed(std::string_view bytes) {
  std::vector<std::string> events;
  out_ = &events;
  for (const char c : bytes) {
    if (after_cr_) {
      after_cr_ = false;
      if (c == '\n') continue;  // the "\n" of a "\r\n" already ended
    }
    if (c == '\r') {
      after_cr_ = true;
      EndLine();
    } else if (c == '\n') {
      EndLine();
    } else {
      line_.push_back(c);
    }
  }
  out_ = nullptr;
  return events;
}

void SseReader::EndLine() {
  if (line_.empty()) {
    if (has_data_) out_->push_back(std::move(data_));
    data_.clear();
    has_data_ = false;
    return;
  }
  std::string_view line = line_;
  if (line.front() != ':') {
    const size_t colon = line.find(':');
    const std::string_view field = line.substr(0, colon);
    std::string_view value =
        colon == std::string_view::npos ? std::string_view() : line.substr(colon + 1);
    if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    if (field == "data") {
      if (has_data_) data_.push_back('\n');
      data_.append(value);
      has_data_ = true;
    }
  }
  line_.clear();
}

bool SseReader::Finish() const { return line_.empty() && !has_data_; }

}  // namespace tessera::bench
