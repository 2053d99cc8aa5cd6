// libFuzzer harness: the benchmark client's Server-Sent Events reader, fed
// a server's bytes in pieces whose sizes the input chooses (its first byte),
// and each event's data through the completion-stream JSON reader.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/bounded_json.h"
#include "bench/sse_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const size_t piece = 1 + data[0] % 64;
  std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  tessera::bench::SseReader reader;
  while (!rest.empty()) {
    const size_t n = std::min(piece, rest.size());
    for (const std::string& event : reader.Feed(rest.substr(0, n))) {
      (void)tessera::ParseBoundedJson(event);
    }
    rest.remove_prefix(n);
  }
  (void)reader.Finish();
  return 0;
}
