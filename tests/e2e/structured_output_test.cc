// Structured output end to end: `tessera serve` on the real stories260k
// model (../shared) with regex, EBNF, JSON Schema and json_object
// constraints over /v1/completions, /v1/chat-free fields and /generate,
// streaming and not. Every output that ends with "stop" must match its
// regex (std::regex, independent of the grammar engine) or validate against
// its schema (Python's jsonschema, independent too); errors are 400s that
// name the field.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "testing/fixtures.h"
#include "testing/server_process.h"
#include "testing/subprocess.h"

namespace tessera {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;
using testing::RunShell;
using testing::ServerProcess;
using testing::ShellQuote;

constexpr const char* kBin = TSR_TESSERA_BIN;
constexpr const char* kValidator = TSR_VALIDATOR_PY;

// A Python with jsonschema, or "" (with the reason in `why`).
std::string PythonWithJsonschema(std::string* why) {
  for (const char* python : {"/usr/bin/python3", "python3"}) {
    if (RunShell(std::string(python) + " -c 'import jsonschema' 2>/dev/null")
            .exit_code == 0) {
      return python;
    }
  }
  *why = "no python3 with jsonschema (scripts/setup.sh installs Debian's "
         "python3-jsonschema)";
  return "";
}

class StructuredOutputTest : public ::testing::Test {
 protected:
  void Start(std::vector<std::string> extra = {}) {
    model_ = testing::SharedDir() + "/models/stories260k";
    if (!fs::exists(model_)) {
      if (testing::RunningUnderCi()) FAIL() << model_ << " missing (CI=true)";
      GTEST_SKIP() << model_ << " not found";
    }
    std::vector<std::string> args = {"--model-path", model_, "--log-interval",
                                     "0"};
    args.insert(args.end(), extra.begin(), extra.end());
    ASSERT_TRUE(server_.Start(kBin, args)) << server_.log();
  }

  // Start(), once Python's jsonschema is known to be there (else skip, or
  // fail under CI).
  void StartWithValidator() {
    std::string why;
    python_ = PythonWithJsonschema(&why);
    if (python_.empty()) {
      if (testing::RunningUnderCi()) FAIL() << why << " (CI=true)";
      GTEST_SKIP() << why;
    }
    Start();
  }

  // Runs structured_output/validate.py over `cases`; returns its output
  // ("ok" or "FAIL ..." per case) and expects it to pass.
  std::string Validate(const Json& cases) {
    const fs::path file =
        fs::temp_directory_path() /
        ("tessera_structured_cases_" + std::to_string(::getpid()) + ".json");
    std::ofstream(file) << cases.dump();
    const auto check = RunShell(python_ + " " + ShellQuote(kValidator) + " " +
                                ShellQuote(file.string()));
    EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
    fs::remove(file);
    return check.out;
  }

  Json Complete(Json body) {
    body["prompt"] = body.value("prompt", "Once upon a time");
    const auto res = server_.Post("/v1/completions", body.dump());
    EXPECT_EQ(res.status, 200) << res.body;
    return Json::parse(res.body, nullptr, false);
  }

  std::string model_;
  std::string python_;
  ServerProcess server_;
};

TEST_F(StructuredOutputTest, RegexOutputsMatchInFullAndStopThere) {
  Start();
  const std::vector<std::string> regexes = {
      "(yes|no)",
      "[0-9]{3}-[0-9]{4}",
      "The (cat|dog) (sat|ran) (up|down)\\.",
      "[A-Z][a-z]{2,5}( [a-z]{1,6}){2}!",
      "\\d+(\\.\\d{1,2})? (km|mi)",
  };
  for (const std::string& re : regexes) {
    for (int seed : {-1, 1, 2, 3}) {  // -1: greedy
      Json body = {{"regex", re}, {"max_tokens", 64}};
      if (seed < 0) {
        body["temperature"] = 0;
      } else {
        body["temperature"] = 1.0;
        body["seed"] = seed;
      }
      Json r = Complete(body);
      ASSERT_TRUE(r.contains("choices")) << r.dump();
      const std::string text = r["choices"][0]["text"];
      const std::string finish = r["choices"][0]["finish_reason"];
      EXPECT_EQ(finish, "stop") << re << " seed " << seed << ": " << text;
      EXPECT_TRUE(std::regex_match(text, std::regex(re)))
          << re << " seed " << seed << ": '" << text << "'";
    }
  }
  // Streaming: the deltas add up to a match as well.
  const auto stream = server_.PostStream(
      "/v1/completions",
      Json{{"prompt", "Once"}, {"regex", "[0-9]{3}-[0-9]{4}"},
           {"max_tokens", 32}, {"stream", true}, {"temperature", 0}}
          .dump());
  ASSERT_EQ(stream.status, 200) << stream.body;
  std::string joined;
  std::istringstream lines(stream.body);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("data: {", 0) != 0) continue;
    Json chunk = Json::parse(line.substr(6));
    joined += chunk["choices"][0]["text"].get<std::string>();
  }
  EXPECT_TRUE(std::regex_match(joined, std::regex("[0-9]{3}-[0-9]{4}")))
      << joined;
}

TEST_F(StructuredOutputTest, JsonSchemaOutputsValidateWithJsonschema) {
  StartWithValidator();
  if (python_.empty()) return;  // skipped
  const std::vector<Json> schemas = {
      Json::parse(R"({"type": "object", "properties": {
          "pet": {"enum": ["cat", "dog", "bird"]},
          "age": {"type": "integer", "minimum": 0, "maximum": 20}},
          "required": ["pet", "age"]})"),
      Json::parse(R"({"type": "array", "items": {"type": "boolean"},
          "minItems": 1, "maxItems": 3})"),
      Json::parse(R"({"type": "object", "properties": {
          "name": {"type": "string", "minLength": 1, "maxLength": 6},
          "tags": {"type": "array", "items": {"enum": ["a", "b"]},
                   "maxItems": 2},
          "when": {"type": "string", "format": "date"}},
          "required": ["name", "when"]})"),
      Json::parse(R"({"anyOf": [{"type": "null"},
          {"type": "integer", "minimum": -5, "maximum": 5},
          {"const": {"ok": true}}]})"),
      Json::parse(R"({"$defs": {"leaf": {"type": "object",
          "properties": {"id": {"type": "integer", "minimum": 1,
                                "maximum": 99}}, "required": ["id"]}},
          "type": "object",
          "properties": {"left": {"$ref": "#/$defs/leaf"},
                         "right": {"$ref": "#/$defs/leaf"}},
          "required": ["left"]})"),
      Json::parse(R"({"type": "object", "properties": {
          "code": {"type": "string", "pattern": "^[A-Z]{2}[0-9]{2}$"},
          "ok": {"type": "boolean"}}, "required": ["code", "ok"],
          "additionalProperties": false})"),
  };
  Json cases = Json::array();
  int stopped = 0, total = 0;
  for (size_t i = 0; i < schemas.size(); ++i) {
    for (int seed : {-1, 1, 2}) {
      // Both spellings: OpenAI's response_format and SGLang's json_schema.
      Json body = {{"max_tokens", 200}};
      if (seed % 2 == 0) {
        body["json_schema"] = schemas[i].dump();
      } else {
        body["response_format"] = {
            {"type", "json_schema"},
            {"json_schema", {{"name", "t"}, {"schema", schemas[i]},
                             {"strict", true}}}};
      }
      body["temperature"] = seed < 0 ? 0.0 : 1.0;
      if (seed >= 0) body["seed"] = seed;
      Json r = Complete(body);
      ASSERT_TRUE(r.contains("choices")) << r.dump();
      ++total;
      if (r["choices"][0]["finish_reason"] != "stop") continue;
      ++stopped;
      cases.push_back({{"schema", schemas[i]},
                       {"output", r["choices"][0]["text"]}});
    }
  }
  // The schemas are bounded: a grammar that ends stops the output there.
  EXPECT_GE(stopped, total * 3 / 4) << stopped << " of " << total;
  Validate(cases);
}

// Compliance over the real-world corpus (tests/grammar_corpus: ESLint's
// rule option schemas, draft-04): one sampled output per schema the server
// accepts; every output that ends must validate (jsonschema's Draft4
// validator). Prints the figures for the closing notes.
TEST_F(StructuredOutputTest, RealWorldCorpusOutputsValidate) {
  StartWithValidator();
  if (python_.empty()) return;  // skipped
  std::ifstream in(std::string(TSR_GRAMMAR_CORPUS_DIR) +
                   "/eslint_rule_schemas.json");
  ASSERT_TRUE(in);
  const Json corpus = Json::parse(in);
  Json cases = Json::array();
  int accepted = 0, refused = 0, stopped = 0, seed = 0;
  for (auto it = corpus.begin(); it != corpus.end(); ++it) {
    const Json body = {{"prompt", "Once upon a time"},
                       {"json_schema", it.value()},
                       {"max_tokens", 256},
                       {"temperature", 1.0},
                       {"seed", ++seed}};
    const auto res = server_.Post("/v1/completions", body.dump());
    if (res.status == 400) {
      ++refused;
      EXPECT_NE(res.body.find("JSON Schema"), std::string::npos) << res.body;
      continue;
    }
    ASSERT_EQ(res.status, 200) << it.key() << ": " << res.body;
    ++accepted;
    const Json r = Json::parse(res.body);
    if (r["choices"][0]["finish_reason"] != "stop") continue;
    ++stopped;
    cases.push_back({{"schema", it.value()},
                     {"output", r["choices"][0]["text"]},
                     {"draft", 4}});
  }
  std::cout << "corpus: " << accepted << " schemas accepted, " << refused
            << " refused by name; " << stopped
            << " outputs ended within 256 tokens\n";
  EXPECT_GE(accepted * 100, static_cast<int>(corpus.size()) * 80);
  EXPECT_GE(stopped * 100, accepted * 70) << "most outputs should end";
  int valid = 0;
  std::istringstream lines(Validate(cases));
  for (std::string line; std::getline(lines, line);) valid += line == "ok";
  std::cout << "corpus compliance: " << valid << " of " << stopped
            << " ended outputs validate\n";
}

TEST_F(StructuredOutputTest, JsonObjectEbnfOnGenerateAndClearErrors) {
  Start();
  // /generate with SGLang's ebnf in sampling_params.
  const auto gen = server_.Post(
      "/generate",
      Json{{"text", "Once"},
           {"sampling_params",
            {{"max_new_tokens", 40}, {"temperature", 0},
             {"ebnf", "root ::= \"Tom has \" [1-9] \" \" (\"cats\" | \"dogs\") \".\""}}}}
          .dump());
  ASSERT_EQ(gen.status, 200) << gen.body;
  const std::string text = Json::parse(gen.body)["text"];
  EXPECT_TRUE(std::regex_match(text, std::regex("Tom has [1-9] (cats|dogs)\\.")))
      << text;

  // json_object: whenever it stops, the text is one JSON object.
  for (int seed : {1, 2, 3, 4}) {
    Json r = Complete({{"response_format", {{"type", "json_object"}}},
                       {"max_tokens", 120}, {"temperature", 1.0}, {"seed", seed}});
    const std::string out = r["choices"][0]["text"];
    if (r["choices"][0]["finish_reason"] == "stop") {
      Json parsed = Json::parse(out, nullptr, false);
      EXPECT_TRUE(parsed.is_object()) << out;
    }
  }

  // Errors: 400 naming the field and what is wrong.
  auto post = [&](const Json& body) {
    Json b = body;
    b["prompt"] = "x";
    return server_.Post("/v1/completions", b.dump());
  };
  auto res = post({{"response_format",
                    {{"type", "json_schema"},
                     {"json_schema",
                      {{"name", "t"},
                       {"schema", {{"type", "object"},
                                   {"properties", {{"a", {{"not", Json::object()}}}}}}}}}}}});
  EXPECT_EQ(res.status, 400) << res.body;
  EXPECT_NE(res.body.find("unsupported JSON Schema keyword 'not'"),
            std::string::npos)
      << res.body;
  EXPECT_NE(res.body.find("response_format.json_schema.schema"),
            std::string::npos)
      << res.body;
  res = post({{"regex", "(a"}});
  EXPECT_EQ(res.status, 400);
  EXPECT_EQ(Json::parse(res.body)["error"]["param"], "regex");
  res = post({{"regex", "a"}, {"ebnf", "root ::= \"a\""}});
  EXPECT_EQ(res.status, 400);
  EXPECT_NE(res.body.find("one structured-output constraint"), std::string::npos);
  res = post({{"ebnf", "root ::= undefined_rule"}});
  EXPECT_EQ(res.status, 400);
  EXPECT_NE(res.body.find("never defined"), std::string::npos) << res.body;
  res = server_.Post("/generate", Json{{"text", "x"},
                                       {"sampling_params", {{"regex", "[z"}}}}
                                      .dump());
  EXPECT_EQ(res.status, 400);
  EXPECT_EQ(Json::parse(res.body)["error"]["param"], "sampling_params.regex");
  server_.Stop();

  // --grammar-backend none refuses constraints; xgrammar selects ours.
  ServerProcess off;
  ASSERT_TRUE(off.Start(kBin, {"--model-path", model_, "--grammar-backend",
                               "none"}))
      << off.log();
  res = off.Post("/v1/completions",
                 Json{{"prompt", "x"}, {"regex", "a"}}.dump());
  EXPECT_EQ(res.status, 400);
  EXPECT_NE(res.body.find("--grammar-backend none"), std::string::npos);
  off.Stop();
  ServerProcess alias;
  ASSERT_TRUE(alias.Start(kBin, {"--model-path", model_, "--grammar-backend",
                                 "xgrammar"}))
      << alias.log();
  res = alias.Post("/v1/completions",
                   Json{{"prompt", "x"}, {"regex", "ab"}, {"max_tokens", 5}}.dump());
  EXPECT_EQ(res.status, 200) << res.body;
  EXPECT_EQ(Json::parse(res.body)["choices"][0]["text"], "ab");
  EXPECT_NE(alias.log().find("own grammar engine"), std::string::npos);
}

// tool_choice "required" / named on a model that would not call on its
// own (the demo model: random weights, ChatML template): whenever the
// answer ends, it is exactly the forced call(s), arguments per the schema.
TEST(ForcedToolCallTest, RandomModelAnswersWithTheForcedCall) {
  ServerProcess server;
  ASSERT_TRUE(server.Start(kBin, {"--tool-call-parser", "qwen",
                                  "--log-interval", "0"}))
      << server.log();
  const Json tools = Json::parse(R"([
    {"type": "function", "function": {"name": "get_weather",
      "parameters": {"type": "object", "properties": {
        "city": {"enum": ["Paris", "Oslo"]},
        "days": {"type": "integer", "minimum": 1, "maximum": 7}},
        "required": ["city", "days"]}}},
    {"type": "function", "function": {"name": "get_time",
      "parameters": {"type": "object", "properties": {
        "zone": {"enum": ["UTC", "CET"]}}, "required": ["zone"]}}}])");
  int ended = 0;
  for (int seed = 1; seed <= 6; ++seed) {
    Json body = {{"messages", {{{"role", "user"}, {"content", "hi"}}}},
                 {"tools", tools}, {"max_tokens", 120}, {"temperature", 1.0},
                 {"seed", seed}, {"parallel_tool_calls", seed % 2 == 0}};
    body["tool_choice"] =
        seed <= 3 ? Json("required")
                  : Json{{"type", "function"},
                         {"function", {{"name", "get_time"}}}};
    const auto res = server.Post("/v1/chat/completions", body.dump());
    ASSERT_EQ(res.status, 200) << res.body;
    const Json choice = Json::parse(res.body)["choices"][0];
    if (choice["finish_reason"] != "tool_calls") {
      EXPECT_EQ(choice["finish_reason"], "length") << choice.dump();
      continue;
    }
    ++ended;
    EXPECT_TRUE(choice["message"]["content"].is_null()) << choice.dump();
    const Json& calls = choice["message"]["tool_calls"];
    ASSERT_GE(calls.size(), 1u) << choice.dump();
    if (seed % 2 == 1) EXPECT_EQ(calls.size(), 1u) << choice.dump();
    for (const Json& call : calls) {
      const std::string name = call["function"]["name"];
      const Json args = Json::parse(call["function"]["arguments"].get<std::string>());
      if (seed > 3) EXPECT_EQ(name, "get_time");
      if (name == "get_weather") {
        EXPECT_TRUE(args["city"] == "Paris" || args["city"] == "Oslo");
        EXPECT_GE(args["days"].get<int>(), 1);
        EXPECT_LE(args["days"].get<int>(), 7);
      } else {
        EXPECT_EQ(name, "get_time");
        EXPECT_TRUE(args["zone"] == "UTC" || args["zone"] == "CET");
      }
    }
  }
  EXPECT_GE(ended, 4) << "most forced calls should complete in 120 tokens";
}

}  // namespace
}  // namespace tessera
