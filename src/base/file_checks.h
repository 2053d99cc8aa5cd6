// Checks made before reading a file named from outside (config.json,
// tokenizer.json, a chat template, a weights file): only regular files of
// bounded size are read. A FIFO would block open() for ever, /dev/zero never
// ends, and a multi-gigabyte "config" would be read whole before anything
// looked at it.
// Thread-safe: pure functions over the file system.
#ifndef TESSERA_BASE_FILE_CHECKS_H_
#define TESSERA_BASE_FILE_CHECKS_H_

#include <cstddef>
#include <string>
#include <string_view>

#include "base/status.h"

namespace tessera {

// The most a text or JSON input file (configs, tokenizers, templates) may
// hold; real ones are at most tens of MiB.
inline constexpr size_t kMaxTextFileBytes = size_t{256} << 20;

// OK when `path` is a regular file of at most `max_bytes` (symlinks
// followed), and also when it does not exist or is a directory, which
// callers report in their own words. InvalidArgument naming `what` for a
// FIFO, device or socket, or for a larger file. Never opens the file.
Status CheckRegularFile(const std::string& path, size_t max_bytes,
                        std::string_view what);

// Reads a whole text file named from outside (CheckRegularFile first).
// `what` names it in errors: InvalidArgument for a directory or an
// unreadable kind of file, NotFound when it cannot be opened.
StatusOr<std::string> ReadTextFile(const std::string& path,
                                   const std::string& what);

}  // namespace tessera

#endif  // TESSERA_BASE_FILE_CHECKS_H_
