// What the CLI commands share for talking to people and scripts: exit
// codes, one-line error reports, --request arguments and JSON text in and
// out. Pure functions, thread-safe.
#ifndef TESSERA_CLI_CLI_IO_H_
#define TESSERA_CLI_CLI_IO_H_

#include <nlohmann/json.hpp>

#include <string>

#include "base/status.h"

namespace tessera::cli {

// Exit codes shared by tokenize, detokenize and generate.
inline constexpr int kExitOk = 0;
// The device or the model failed while running (a plugin error, out of
// device memory, an I/O error after the inputs were accepted).
inline constexpr int kExitRuntimeFailure = 1;
// What the command was given cannot be used: bad flags, a malformed or
// mistyped request, a missing model directory or tokenizer, a chat template
// that is absent or fails on the request, an unusable plugin choice.
inline constexpr int kExitBadInput = 2;

// Prints "error: <message>" as one line on stderr (newlines in the message
// become "; ") and returns `exit_code`.
int ReportError(const Status& status, int exit_code);

// A --request value: inline JSON text, "@path" for a file's contents or
// "@-" for stdin. Errors name the file.
StatusOr<std::string> ReadRequestArgument(const std::string& argument);

// Parses JSON text; the error gives the parser's position. `what` names the
// text in messages ("--request").
StatusOr<nlohmann::ordered_json> ParseJsonText(const std::string& text,
                                               const std::string& what);

// Serialises for output; invalid UTF-8 in strings (which a tokenizer never
// produces) is replaced rather than throwing.
std::string DumpJson(const nlohmann::ordered_json& value);

}  // namespace tessera::cli

#endif  // TESSERA_CLI_CLI_IO_H_
