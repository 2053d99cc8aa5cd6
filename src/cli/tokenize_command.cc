// `tessera tokenize --model-path DIR --request JSON [--chat-template FILE]`:
// text or a chat (rendered through the model's chat template) to token ids,
// with only the tokenizer files of DIR (no config.json or weights needed).
//
// The request is the server's /tokenize body (see cli/generate_prompt.h),
// inline or as @file; stdout gets one line {"tokens": [...], "count": N,
// "prompt": "..."} (POST /tokenize's answer)
// where "prompt" is the text tokenized (the rendered chat for "messages").
// With --requests-jsonl FILE, each line of FILE is one request and stdout
// gets one result line per request, in order; a line that fails stops the
// run with its line number.
//
// Exit codes: 0 done; 2 bad input (malformed or mistyped request, missing
// directory or tokenizer.json, no or failing chat template); 1 an I/O
// failure while running.
#include <fmt/format.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <string>

#include "cli/command.h"
#include "cli/cli_io.h"
#include "prompt/prompt_tools.h"

namespace tessera::cli {
namespace {

using Json = nlohmann::ordered_json;

struct TokenizeOptions {
  std::string model_path;
  std::string request;
  std::string requests_jsonl;
  std::string chat_template;
};

StatusOr<std::string> TokenizeOne(prompt::PromptTools& tools, const Json& body) {
  TSR_ASSIGN_OR_RETURN(prompt::TokenizeRequest request, prompt::ParseTokenizeRequest(body));
  TSR_ASSIGN_OR_RETURN(prompt::PreparedPrompt prompt, tools.Prepare(request));
  return DumpJson(prompt::TokenizeResponseJson(prompt.ids, prompt.text));
}

int RunTokenize(const TokenizeOptions& options) {
  if (options.request.empty() == options.requests_jsonl.empty()) {
    return ReportError(
        InvalidArgumentError("give exactly one of --request JSON and "
                             "--requests-jsonl FILE"),
        kExitBadInput);
  }
  std::string single;
  if (!options.request.empty()) {
    // Read the request before loading the tokenizer: a malformed request
    // fails fast.
    auto text = ReadRequestArgument(options.request);
    if (!text.ok()) return ReportError(text.status(), kExitBadInput);
    single = std::move(text).value();
  }
  auto tools = prompt::PromptTools::Load(options.model_path, options.chat_template);
  if (!tools.ok()) return ReportError(tools.status(), kExitBadInput);

  if (!options.request.empty()) {
    auto body = ParseJsonText(single, "--request");
    if (!body.ok()) return ReportError(body.status(), kExitBadInput);
    auto line = TokenizeOne(**tools, *body);
    if (!line.ok()) return ReportError(line.status(), kExitBadInput);
    fmt::print("{}\n", *line);
    std::fflush(stdout);
    return kExitOk;
  }

  std::ifstream in(options.requests_jsonl, std::ios::binary);
  if (!in) {
    return ReportError(
        NotFoundError(fmt::format("cannot open --requests-jsonl file {}",
                                  options.requests_jsonl)),
        kExitBadInput);
  }
  std::string text;
  for (int line_no = 1; std::getline(in, text); ++line_no) {
    if (text.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where =
        fmt::format("{} line {}", options.requests_jsonl, line_no);
    auto body = ParseJsonText(text, where);
    if (!body.ok()) return ReportError(body.status(), kExitBadInput);
    auto line = TokenizeOne(**tools, *body);
    if (!line.ok()) {
      return ReportError(line.status().WithContext(where), kExitBadInput);
    }
    fmt::print("{}\n", *line);
  }
  if (in.bad()) {
    return ReportError(
        InternalError(fmt::format("error reading {}", options.requests_jsonl)),
        kExitRuntimeFailure);
  }
  std::fflush(stdout);
  return kExitOk;
}

}  // namespace

Command AddTokenizeCommand(CLI::App& root) {
  auto options = std::make_shared<TokenizeOptions>();
  Command command;
  command.app = root.add_subcommand(
      "tokenize",
      "Text or a chat to token ids with a model's tokenizer (only its "
      "tokenizer files are read). Prints {\"tokens\": [...], \"prompt\": "
      "\"...\"}. Exit 0: done; 2: bad request, model directory or chat "
      "template; 1: failure while running");
  command.app
      ->add_option("--model-path", options->model_path,
                   "folder holding tokenizer.json (and tokenizer_config.json "
                   "for chats)")
      ->required();
  command.app->add_option(
      "--request", options->request,
      "the /tokenize body: {\"prompt\": \"text\"} or {\"messages\": [...], "
      "\"tools\": [...], \"add_generation_prompt\": true, "
      "\"chat_template_kwargs\": {...}}, optional \"add_special_tokens\" "
      "(default true for prompt, false for messages); inline JSON, @file or "
      "@- (stdin)");
  command.app->add_option(
      "--requests-jsonl", options->requests_jsonl,
      "a file with one request per line; prints one result per line");
  command.app->add_option(
      "--chat-template", options->chat_template,
      "use this chat template (a Jinja file, or a tokenizer_config.json-like "
      ".json file) instead of the model's");
  command.run = [options] { return RunTokenize(*options); };
  return command;
}

}  // namespace tessera::cli
