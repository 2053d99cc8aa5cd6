// `tessera detokenize --model-path DIR --request JSON`: token ids back to
// text with only the tokenizer files of DIR.
//
// The request is the server's /detokenize body
// {"tokens": [...], "skip_special_tokens": true} (prompt/prompt_tools.h),
// inline, as @file or @- (stdin); stdout gets one line {"text": "..."}, the
// server's answer.
// An id outside the tokenizer's vocabulary is an error, not skipped.
//
// Exit codes: 0 done; 2 bad input (malformed or mistyped request, an id
// outside the vocabulary, missing directory or tokenizer.json).
#include <fmt/format.h>

#include <cstdio>
#include <memory>
#include <string>

#include "cli/command.h"
#include "cli/cli_io.h"
#include "prompt/prompt_tools.h"

namespace tessera::cli {
namespace {

using Json = nlohmann::ordered_json;

struct DetokenizeOptions {
  std::string model_path;
  std::string request;
};

int RunDetokenize(const DetokenizeOptions& options) {
  auto text = ReadRequestArgument(options.request);
  if (!text.ok()) return ReportError(text.status(), kExitBadInput);
  auto body = ParseJsonText(*text, "--request");
  if (!body.ok()) return ReportError(body.status(), kExitBadInput);
  auto request = prompt::ParseDetokenizeRequest(*body);
  if (!request.ok()) return ReportError(request.status(), kExitBadInput);
  auto tools = prompt::PromptTools::Load(options.model_path, /*chat_template_file=*/"");
  if (!tools.ok()) return ReportError(tools.status(), kExitBadInput);
  if (Status ids = (*tools)->CheckTokenIds(request->tokens); !ids.ok()) {
    return ReportError(ids, kExitBadInput);
  }
  // POST /detokenize's answer.
  fmt::print("{}\n", DumpJson(prompt::DetokenizeResponseJson(
                         (*tools)->tokenizer().Decode(
                             request->tokens, request->skip_special_tokens))));
  std::fflush(stdout);
  return kExitOk;
}

}  // namespace

Command AddDetokenizeCommand(CLI::App& root) {
  auto options = std::make_shared<DetokenizeOptions>();
  Command command;
  command.app = root.add_subcommand(
      "detokenize",
      "Token ids to text with a model's tokenizer (only its tokenizer files "
      "are read). Prints {\"prompt\": \"...\"}. Exit 0: done; 2: bad request "
      "or model directory");
  command.app
      ->add_option("--model-path", options->model_path,
                   "folder holding tokenizer.json")
      ->required();
  command.app
      ->add_option("--request", options->request,
                   "the /detokenize body {\"tokens\": [...], "
                   "\"skip_special_tokens\": true}; inline JSON, @file or @- "
                   "(stdin)")
      ->required();
  command.run = [options] { return RunDetokenize(*options); };
  return command;
}

}  // namespace tessera::cli
