// libFuzzer harness: a GGUF file (llama.cpp's format), written to a memory
// file and opened as `--model-path FILE.gguf` opens it: the reader's
// validation, the tokenizer rebuilt from its metadata, the checkpoint
// (config from metadata, tensor names) and, when that opens, every tensor's
// first and last rows decoded (block layouts, interleaved q/k rows).
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "gguf/gguf_reader.h"
#include "gguf/gguf_tokenizer.h"
#include "model/checkpoint.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const int fd = memfd_create("fuzz.gguf", 0);
  if (fd < 0) return 0;
  if (::write(fd, data, size) == static_cast<ssize_t>(size)) {
    const std::string path = "/proc/self/fd/" + std::to_string(fd);
    if (auto file = tessera::gguf::GgufFile::Open(path); file.ok()) {
      (void)tessera::gguf::TokenizerFilesFromGguf(**file);
    }
    if (auto ckpt = tessera::model::Checkpoint::OpenGguf(path); ckpt.ok()) {
      for (const tessera::model::TensorRef& t : (*ckpt)->tensors()) {
        const int64_t rows = t.shape().empty() ? 1 : t.shape()[0];
        const int64_t width = t.num_elements() / rows;
        if (width > (int64_t{1} << 20)) continue;
        std::vector<float> row(static_cast<size_t>(width));
        t.ReadRows(0, 1, 0, width, TSR_DTYPE_F32, row.data());
        t.ReadRows(rows - 1, 1, 0, width, TSR_DTYPE_F32, row.data());
      }
    }
  }
  ::close(fd);
  return 0;
}
