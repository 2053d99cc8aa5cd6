// libFuzzer harness: the files of a checkpoint directory that are JSON —
// config.json, generation_config.json — and a safetensors file (8-byte
// header length, JSON header, data), written to a memory file and opened as
// the loader opens it. The input's first byte picks which.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "model/generation_config.h"
#include "model/model_config.h"
#include "model/safetensors.h"

namespace {

void OpenAsSafetensors(std::string_view bytes) {
  const int fd = memfd_create("fuzz.safetensors", 0);
  if (fd < 0) return;
  if (::write(fd, bytes.data(), bytes.size()) ==
      static_cast<ssize_t>(bytes.size())) {
    (void)tessera::model::SafetensorsFile::Open("/proc/self/fd/" +
                                                std::to_string(fd));
  }
  ::close(fd);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view rest(reinterpret_cast<const char*>(data) + 1,
                              size - 1);
  switch (data[0] % 3) {
    case 0:
      (void)tessera::model::ParseModelConfig(rest, "config.json");
      break;
    case 1:
      (void)tessera::model::ParseGenerationConfig(rest,
                                                  "generation_config.json");
      break;
    default:
      OpenAsSafetensors(rest);
      break;
  }
  return 0;
}
