// `tessera tokenize` and `tessera detokenize` end to end: the built binary
// against the real Qwen3 tokenizer (a tokenizer-only folder) and its Hugging
// Face goldens — every golden_encode.jsonl text and every golden_chat.jsonl
// conversation (messages, tools, enable_thinking, add_generation_prompt) —
// plus round trips and the documented errors and exit codes (2: bad input).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "testing/fixtures.h"
#include "testing/goldens.h"
#include "testing/subprocess.h"

namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

using tessera::testing::ReadFile;
using tessera::testing::ShellQuote;
using Result = tessera::testing::CommandResult;

// A scratch folder removed at the end of the test.
class ScratchDir {
 public:
  ScratchDir() {
    path_ = fs::temp_directory_path() /
            ("tessera_cli_tokenize_" + std::to_string(::getpid()) + "_" +
             std::to_string(counter_++));
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~ScratchDir() { fs::remove_all(path_); }
  std::string File(const std::string& name, const std::string& contents) {
    const std::string p = (path_ / name).string();
    std::ofstream(p, std::ios::binary) << contents;
    return p;
  }
  std::string path() const { return path_.string(); }

 private:
  static inline int counter_ = 0;
  fs::path path_;
};

// Runs `tessera <args>` (args already quoted), capturing stdout and stderr.
Result Tessera(const std::string& args) {
  return tessera::testing::RunShell(std::string(TSR_TESSERA_BIN) + " " + args);
}

// One JSON object per stdout line.
std::vector<Json> JsonLines(const std::string& out) {
  std::vector<Json> lines;
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line)) {
    auto parsed = Json::parse(line, nullptr, /*allow_exceptions=*/false);
    EXPECT_FALSE(parsed.is_discarded()) << "not JSON: " << line;
    lines.push_back(std::move(parsed));
  }
  return lines;
}

// A one-line "error: ..." message on stderr.
void ExpectOneLineError(const Result& r, const std::string& needle) {
  EXPECT_EQ(r.err.rfind("error: ", 0), 0u) << r.err;
  ASSERT_FALSE(r.err.empty());
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << r.err;
  EXPECT_NE(r.err.find(needle), std::string::npos)
      << "expected '" << needle << "' in: " << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
}

std::string Tokenize(const std::string& dir, const std::string& request,
                     const std::string& extra = "") {
  return "tokenize --model-path " + ShellQuote(dir) + " --request " +
         ShellQuote(request) + extra;
}

TEST(CliTokenizeTest, EveryGoldenEncodeCaseIsExact) {
  TSR_REQUIRE_SHARED_FIXTURE(dir, "tokenizers/qwen3");
  TSR_REQUIRE_SHARED_FIXTURE(golden, "tokenizers/qwen3/golden_encode.jsonl");
  const std::vector<Json> cases = tessera::testing::ReadJsonLines<Json>(golden);
  ASSERT_FALSE(cases.empty());
  // The goldens were encoded with add_special_tokens false; Qwen3's
  // post-processor adds nothing, so the default (true) must agree.
  ScratchDir scratch;
  std::string explicit_false, by_default;
  for (const Json& c : cases) {
    explicit_false +=
        Json{{"prompt", c["text"]}, {"add_special_tokens", false}}.dump() +
        "\n";
    by_default += Json{{"prompt", c["text"]}}.dump() + "\n";
  }
  for (const std::string& requests : {explicit_false, by_default}) {
    const Result r = Tessera(
        "tokenize --model-path " + ShellQuote(dir) + " --requests-jsonl " +
        ShellQuote(scratch.File("requests.jsonl", requests)));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const std::vector<Json> lines = JsonLines(r.out);
    ASSERT_EQ(lines.size(), cases.size()) << r.out;
    for (size_t i = 0; i < cases.size(); ++i) {
      EXPECT_EQ(lines[i]["tokens"], cases[i]["ids"])
          << "case " << i << ": " << cases[i]["text"];
      EXPECT_EQ(lines[i]["prompt"], cases[i]["text"]) << "case " << i;
      // POST /tokenize's shape: tokens, count, prompt.
      EXPECT_EQ(lines[i]["count"], cases[i]["ids"].size());
      EXPECT_EQ(lines[i].size(), 3u) << lines[i].dump();
    }
  }
}

// golden_chat.jsonl row -> the /tokenize request it describes.
Json ChatRequest(const Json& c) {
  Json request = {{"messages", c["messages"]}};
  if (c.contains("tools")) request["tools"] = c["tools"];
  if (c.contains("add_generation_prompt")) {
    request["add_generation_prompt"] = c["add_generation_prompt"];
  }
  if (c.contains("enable_thinking")) {
    request["chat_template_kwargs"] = {
        {"enable_thinking", c["enable_thinking"]}};
  }
  return request;
}

TEST(CliTokenizeTest, EveryGoldenChatCaseRendersAndEncodesExactly) {
  TSR_REQUIRE_SHARED_FIXTURE(dir, "tokenizers/qwen3");
  TSR_REQUIRE_SHARED_FIXTURE(golden, "tokenizers/qwen3/golden_chat.jsonl");
  const std::vector<Json> cases = tessera::testing::ReadJsonLines<Json>(golden);
  ASSERT_FALSE(cases.empty());
  ScratchDir scratch;
  std::string requests;
  for (const Json& c : cases) requests += ChatRequest(c).dump() + "\n";
  const Result r = Tessera("tokenize --model-path " + ShellQuote(dir) +
                           " --requests-jsonl " +
                           ShellQuote(scratch.File("chat.jsonl", requests)));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<Json> lines = JsonLines(r.out);
  ASSERT_EQ(lines.size(), cases.size()) << r.out;
  for (size_t i = 0; i < cases.size(); ++i) {
    EXPECT_EQ(lines[i]["prompt"], cases[i]["rendered"]) << cases[i]["name"];
    EXPECT_EQ(lines[i]["tokens"], cases[i]["ids"]) << cases[i]["name"];
  }
}

TEST(CliTokenizeTest, SingleRequestInlineAndFromFile) {
  TSR_REQUIRE_SHARED_FIXTURE(dir, "tokenizers/qwen3");
  TSR_REQUIRE_SHARED_FIXTURE(golden, "tokenizers/qwen3/golden_chat.jsonl");
  const Json chat = tessera::testing::ReadJsonLines<Json>(golden).front();
  ScratchDir scratch;
  const Result from_file = Tessera(
      Tokenize(dir, "@" + scratch.File("req.json", ChatRequest(chat).dump())));
  ASSERT_EQ(from_file.exit_code, 0) << from_file.err;
  const Json out = Json::parse(from_file.out);
  EXPECT_EQ(out["prompt"], chat["rendered"]);
  EXPECT_EQ(out["tokens"], chat["ids"]);

  const Result inline_prompt =
      Tessera(Tokenize(dir, R"({"prompt": "Hello, world!"})"));
  ASSERT_EQ(inline_prompt.exit_code, 0) << inline_prompt.err;
  EXPECT_EQ(
      Json::parse(inline_prompt.out),
      (Json{{"tokens", {9707, 11, 1879, 0}}, {"count", 4}, {"prompt", "Hello, world!"}}));
}

TEST(CliTokenizeTest, PromptAddsSpecialTokensByDefaultMessagesDoNot) {
  // stories260k's tokenizer adds BOS (id 1) for add_special_tokens.
  TSR_REQUIRE_SHARED_FIXTURE(dir, "models/stories260k");
  const Result with =
      Tessera(Tokenize(dir, R"({"prompt": "Once upon a time"})"));
  ASSERT_EQ(with.exit_code, 0) << with.err;
  EXPECT_EQ(Json::parse(with.out)["tokens"],
            Json::parse("[1, 403, 407, 261, 378]"));
  const Result without = Tessera(Tokenize(
      dir, R"({"prompt": "Once upon a time", "add_special_tokens": false})"));
  ASSERT_EQ(without.exit_code, 0) << without.err;
  EXPECT_EQ(Json::parse(without.out)["tokens"],
            Json::parse("[403, 407, 261, 378]"));

  // A chat through an override template: no BOS unless asked.
  ScratchDir scratch;
  const std::string tmpl =
      scratch.File("t.jinja",
                   "{% for m in messages %}{{ m['content'] }}{% endfor %}"
                   "{% if add_generation_prompt %} time{% endif %}");
  const std::string chat =
      R"({"messages": [{"role": "user", "content": "Once upon a"}]})";
  const Result rendered =
      Tessera(Tokenize(dir, chat, " --chat-template " + ShellQuote(tmpl)));
  ASSERT_EQ(rendered.exit_code, 0) << rendered.err;
  EXPECT_EQ(Json::parse(rendered.out), (Json{{"tokens", {403, 407, 261, 378}},
                                             {"count", 4},
                                             {"prompt", "Once upon a time"}}));
  const Result bos = Tessera(Tokenize(
      dir,
      R"({"messages": [{"role": "user", "content": "Once upon a"}],)"
      R"( "add_generation_prompt": false, "add_special_tokens": true})",
      " --chat-template " + ShellQuote(tmpl)));
  ASSERT_EQ(bos.exit_code, 0) << bos.err;
  EXPECT_EQ(Json::parse(bos.out),
            (Json{{"tokens", {1, 403, 407, 261}}, {"count", 4}, {"prompt", "Once upon a"}}));
}

TEST(CliDetokenizeTest, RoundTripsGoldenIds) {
  TSR_REQUIRE_SHARED_FIXTURE(dir, "tokenizers/qwen3");
  TSR_REQUIRE_SHARED_FIXTURE(golden, "tokenizers/qwen3/golden_encode.jsonl");
  const std::vector<Json> cases = tessera::testing::ReadJsonLines<Json>(golden);
  // Plain text, CJK, and special tokens (kept with skip_special_tokens
  // false, dropped by default).
  for (size_t i : {size_t(2), size_t(7), size_t(11)}) {
    ASSERT_LT(i, cases.size());
    const Json request = {{"tokens", cases[i]["ids"]},
                          {"skip_special_tokens", false}};
    const Result r = Tessera("detokenize --model-path " + ShellQuote(dir) +
                             " --request " + ShellQuote(request.dump()));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(Json::parse(r.out), (Json{{"text", cases[i]["text"]}}));
  }
  const Result skipped =
      Tessera("detokenize --model-path " + ShellQuote(dir) + " --request " +
              ShellQuote(Json{{"tokens", cases[11]["ids"]}}.dump()));
  ASSERT_EQ(skipped.exit_code, 0) << skipped.err;
  EXPECT_EQ(Json::parse(skipped.out)["text"], "user\nhi\nassistant\n");
}

TEST(CliDetokenizeTest, TokenizeThenDetokenizeIsTheIdentity) {
  TSR_REQUIRE_SHARED_FIXTURE(dir, "models/stories260k");
  const std::string text = "Lily and Tom saw a big red ball in the park.";
  const Result tok = Tessera(Tokenize(dir, Json{{"prompt", text}}.dump()));
  ASSERT_EQ(tok.exit_code, 0) << tok.err;
  const Json ids = Json::parse(tok.out)["tokens"];
  const Result detok =
      Tessera("detokenize --model-path " + ShellQuote(dir) + " --request " +
              ShellQuote(Json{{"tokens", ids}}.dump()));
  ASSERT_EQ(detok.exit_code, 0) << detok.err;
  EXPECT_EQ(Json::parse(detok.out)["text"], text);
}

TEST(CliTokenizeTest, BadRequestsAreOneLineErrorsWithExit2) {
  TSR_REQUIRE_SHARED_FIXTURE(dir, "models/stories260k");
  struct Case {
    std::string request;
    std::string message;
  };
  const std::vector<Case> cases = {
      {R"({"prompt": )", "is not valid JSON"},
      {R"([1, 2])", "must be a JSON object"},
      {R"({"prompt": 5})", "\"prompt\" must be a string"},
      {R"({"messages": "hi"})", "\"messages\" must be an array"},
      {R"({"messages": [{"content": "hi"}]})", "needs a string \"role\""},
      {R"({"messages": [], "tools": {}})", "\"tools\" must be an array"},
      {R"({"prompt": "a", "add_special_tokens": "yes"})",
       "\"add_special_tokens\" must be true or false"},
      {R"({"prompt": "a", "messages": []})", "give exactly one"},
      {R"({})", "needs \"prompt\""},
      {R"({"promt": "a"})", "unknown field \"promt\""},
      {R"({"prompt": "a", "tools": []})", "only applies to \"messages\""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.request);
    const Result r = Tessera(Tokenize(dir, c.request));
    EXPECT_EQ(r.exit_code, 2);
    ExpectOneLineError(r, c.message);
  }
}

TEST(CliTokenizeTest, MissingDirectoryFileAndTemplateAreExit2) {
  TSR_REQUIRE_SHARED_FIXTURE(dir, "models/stories260k");
  const std::string prompt = R"({"prompt": "hi"})";
  Result r = Tessera(Tokenize("/nonexistent/tessera-model", prompt));
  EXPECT_EQ(r.exit_code, 2);
  ExpectOneLineError(r, "does not exist");

  ScratchDir empty;
  r = Tessera(Tokenize(empty.path(), prompt));
  EXPECT_EQ(r.exit_code, 2);
  ExpectOneLineError(r, "has no tokenizer.json");

  r = Tessera(Tokenize(dir, "@/nonexistent/request.json"));
  EXPECT_EQ(r.exit_code, 2);
  ExpectOneLineError(r, "cannot open request file");

  // stories260k is a base model: its tokenizer_config.json has no template.
  const std::string chat =
      R"({"messages": [{"role": "user", "content": "hi"}]})";
  r = Tessera(Tokenize(dir, chat));
  EXPECT_EQ(r.exit_code, 2);
  ExpectOneLineError(r, "no chat_template");

  // A template that does not parse, and one that fails while rendering.
  ScratchDir scratch;
  r = Tessera(Tokenize(
      dir, chat,
      " --chat-template " + ShellQuote(scratch.File("bad.jinja", "{% if %}"))));
  EXPECT_EQ(r.exit_code, 2);
  ExpectOneLineError(r, "bad.jinja");
  r = Tessera(Tokenize(
      dir, chat,
      " --chat-template " +
          ShellQuote(scratch.File(
              "raise.jinja", "{{ raise_exception('only system roles') }}"))));
  EXPECT_EQ(r.exit_code, 2);
  ExpectOneLineError(r, "only system roles");
}

TEST(CliDetokenizeTest, BadRequestsAreOneLineErrorsWithExit2) {
  TSR_REQUIRE_SHARED_FIXTURE(dir, "models/stories260k");
  struct Case {
    std::string request;
    std::string message;
  };
  const std::vector<Case> cases = {
      {R"({"tokens": [1, 2)", "is not valid JSON"},
      {R"({"tokens": "1 2"})", "\"tokens\" must be an array of integers"},
      {R"({"tokens": [1, "x"]})", "tokens[1] must be an integer"},
      {R"({"tokens": [1, 2.5]})", "tokens[1] must be an integer"},
      {R"({"tokens": [-1]})", "is not a token id"},
      {R"({"tokens": [100000]})", "outside the tokenizer's vocabulary"},
      {R"({"tokens": [1], "skip_special_tokens": 1})",
       "\"skip_special_tokens\" must be true or false"},
      {R"({"ids": [1]})", "unknown field \"ids\""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.request);
    const Result r = Tessera("detokenize --model-path " + ShellQuote(dir) +
                             " --request " + ShellQuote(c.request));
    EXPECT_EQ(r.exit_code, 2);
    ExpectOneLineError(r, c.message);
  }
  const Result missing = Tessera(
      "detokenize --model-path /nonexistent/tessera-model --request "
      "'{\"tokens\": [1]}'");
  EXPECT_EQ(missing.exit_code, 2);
  ExpectOneLineError(missing, "does not exist");
}

}  // namespace
