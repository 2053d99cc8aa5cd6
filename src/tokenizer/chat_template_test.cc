#include "tokenizer/chat_template.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <unistd.h>

#include "testing/fixtures.h"

namespace tessera {
namespace {

using Json = nlohmann::ordered_json;

std::string ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string TestTemplate(const std::string& name) {
  return ReadText(std::string(TESSERA_CHAT_TEMPLATE_TESTDATA) + "/" + name);
}

// system + a three-turn conversation.
const Json& Conversation() {
  static const Json* c = new Json(Json::parse(R"([
    {"role": "system", "content": "You are concise."},
    {"role": "user", "content": "Hi!"},
    {"role": "assistant", "content": "Hello. How can I help?"},
    {"role": "user", "content": "Name a prime."}])"));
  return *c;
}

std::string Render(const ChatTemplate& t, const Json& messages,
                   const Json& tools = nullptr,
                   bool add_generation_prompt = true,
                   const Json& kwargs = nullptr) {
  auto r = t.Render(messages, tools, add_generation_prompt, kwargs);
  return r.ok() ? *r : "ERROR: " + r.status().ToString();
}

ChatTemplate Load(const std::string& file, const std::string& bos,
                  const std::string& eos) {
  auto t = ChatTemplate::FromString(TestTemplate(file), bos, eos);
  EXPECT_TRUE(t.ok()) << file << ": " << t.status().ToString();
  return std::move(t).value();
}

// A scratch directory removed at the end of the test.
class TempDir {
 public:
  TempDir() {
    path_ = std::filesystem::temp_directory_path() /
            ("tsr_chat_template_" + std::to_string(::getpid()) + "_" +
             std::to_string(counter_++));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string Write(const std::string& name, const std::string& text) {
    const auto p = path_ / name;
    std::ofstream(p, std::ios::binary) << text;
    return p.string();
  }

 private:
  static inline int counter_ = 0;
  std::filesystem::path path_;
};

TEST(ChatTemplateTest, Qwen3GoldensRenderExactly) {
  TSR_REQUIRE_SHARED_FIXTURE(dir, "tokenizers/qwen3");
  auto t = ChatTemplate::FromTokenizerConfig(dir + "/tokenizer_config.json");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  std::ifstream in(dir + "/golden_chat.jsonl");
  std::string line;
  int cases = 0;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    const Json c = Json::parse(line);
    Json kwargs = Json::object();
    if (c.contains("enable_thinking")) {
      kwargs["enable_thinking"] = c["enable_thinking"];
    }
    const bool add_generation_prompt = c.value("add_generation_prompt", true);
    const Json tools = c.contains("tools") ? c["tools"] : Json(nullptr);
    EXPECT_EQ(Render(*t, c["messages"], tools, add_generation_prompt, kwargs),
              c["rendered"].get<std::string>())
        << "case " << c["name"];
    ++cases;
  }
  EXPECT_GE(cases, 6);
}

TEST(ChatTemplateTest, Qwen3ToolCallsAndReasoning) {
  TSR_REQUIRE_SHARED_FIXTURE(dir, "tokenizers/qwen3");
  auto t = ChatTemplate::FromTokenizerConfig(dir + "/tokenizer_config.json");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  const Json tools = Json::parse(R"([{"type": "function", "function": {
      "name": "get_weather", "description": "Get the weather",
      "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                     "required": ["city"]}}}])");
  const std::string system_block =
      "<|im_start|>system\n# Tools\n\nYou may call one or more functions to "
      "assist with the user query.\n\nYou are provided with function "
      "signatures within <tools></tools> XML tags:\n<tools>\n"
      "{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", "
      "\"description\": \"Get the weather\", \"parameters\": {\"type\": "
      "\"object\", \"properties\": {\"city\": {\"type\": \"string\"}}, "
      "\"required\": [\"city\"]}}}\n</tools>\n\nFor each function call, return "
      "a json object with function name and arguments within "
      "<tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": "
      "<function-name>, \"arguments\": <args-json-object>}\n</tool_call>"
      "<|im_end|>\n";
  const std::string expected =
      system_block +
      "<|im_start|>user\nWeather in Paris?<|im_end|>\n"
      "<|im_start|>assistant\n<tool_call>\n{\"name\": \"get_weather\", "
      "\"arguments\": {\"city\": \"Paris\"}}\n</tool_call><|im_end|>\n"
      "<|im_start|>user\n<tool_response>\n18°C\n</tool_response><|im_end|>\n"
      "<|im_start|>assistant\n";
  // Arguments as an object (tojson) and as a JSON string (printed as is)
  // render the same.
  for (const Json& arguments :
       {Json::parse(R"({"city": "Paris"})"), Json("{\"city\": \"Paris\"}")}) {
    Json messages = Json::parse(R"([
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": "", "tool_calls": [
          {"type": "function", "function": {"name": "get_weather"}}]},
        {"role": "tool", "content": "18°C"}])");
    messages[1]["tool_calls"][0]["function"]["arguments"] = arguments;
    EXPECT_EQ(Render(*t, messages, tools), expected) << arguments.dump();
  }

  // The final assistant turn keeps its reasoning; earlier ones lose it.
  EXPECT_EQ(Render(*t, Json::parse(R"([{"role": "user", "content": "2+2?"},
                 {"role": "assistant", "content": "<think>\nadd\n</think>\n\n4"}])"),
                   nullptr, false),
            "<|im_start|>user\n2+2?<|im_end|>\n<|im_start|>assistant\n"
            "<think>\nadd\n</think>\n\n4<|im_end|>\n");
  EXPECT_EQ(
      Render(*t, Json::parse(R"([{"role": "user", "content": "a"},
                 {"role": "assistant", "content": "<think>\nr\n</think>\n\nb"},
                 {"role": "user", "content": "c"}])")),
      "<|im_start|>user\na<|im_end|>\n<|im_start|>assistant\nb<|im_end|>\n"
      "<|im_start|>user\nc<|im_end|>\n<|im_start|>assistant\n");
}

TEST(ChatTemplateTest, ChatMlStyle) {
  const ChatTemplate t = Load("chatml.jinja", "", "<|im_end|>");
  EXPECT_EQ(Render(t, Conversation()),
            "<|im_start|>system\nYou are concise.<|im_end|>\n"
            "<|im_start|>user\nHi!<|im_end|>\n"
            "<|im_start|>assistant\nHello. How can I help?<|im_end|>\n"
            "<|im_start|>user\nName a prime.<|im_end|>\n"
            "<|im_start|>assistant\n");
  EXPECT_EQ(Render(t, Json::parse(R"([{"role": "user", "content": "x"}])"),
                   nullptr, false),
            "<|im_start|>user\nx<|im_end|>\n");
}

TEST(ChatTemplateTest, Llama3Style) {
  const ChatTemplate t =
      Load("llama3.jinja", "<|begin_of_text|>", "<|eot_id|>");
  EXPECT_EQ(
      Render(t, Conversation()),
      "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\n"
      "Cutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n"
      "You are concise.<|eot_id|>"
      "<|start_header_id|>user<|end_header_id|>\n\nHi!<|eot_id|>"
      "<|start_header_id|>assistant<|end_header_id|>\n\n"
      "Hello. How can I help?<|eot_id|>"
      "<|start_header_id|>user<|end_header_id|>\n\nName a prime.<|eot_id|>"
      "<|start_header_id|>assistant<|end_header_id|>\n\n");
  // Tools are listed (indented JSON) in the first user turn; the date comes
  // from a kwarg.
  const Json tools = Json::parse(R"([{"type": "function", "function": {
      "name": "get_weather", "parameters": {"type": "object",
      "properties": {"city": {"type": "string"}}}}}])");
  EXPECT_EQ(
      Render(
          t,
          Json::parse(
              R"([{"role": "user", "content": " What's the weather in Paris? "}])"),
          tools, true, Json{{"date_string", "1 Jan 2025"}}),
      "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\n"
      "Environment: ipython\nCutting Knowledge Date: December 2023\n"
      "Today Date: 1 Jan 2025\n\n<|eot_id|>"
      "<|start_header_id|>user<|end_header_id|>\n\n"
      "These functions are available; answer with a JSON call when one "
      "helps.\n\n"
      "{\n    \"type\": \"function\",\n    \"function\": {\n"
      "        \"name\": \"get_weather\",\n        \"parameters\": {\n"
      "            \"type\": \"object\",\n            \"properties\": {\n"
      "                \"city\": {\n                    \"type\": \"string\"\n"
      "                }\n            }\n        }\n    }\n}\n\n"
      "What's the weather in Paris?<|eot_id|>"
      "<|start_header_id|>assistant<|end_header_id|>\n\n");
}

TEST(ChatTemplateTest, MistralStyle) {
  const ChatTemplate t = Load("mistral.jinja", "<s>", "</s>");
  EXPECT_EQ(Render(t, Conversation()),
            "<s> [INST] You are concise.\n\nHi! [/INST] Hello. How can I "
            "help?</s> [INST] Name a prime. [/INST]");
  auto bad = t.Render(Json::parse(R"([{"role": "user", "content": "a"},
                                      {"role": "user", "content": "b"}])"),
                      nullptr, true, nullptr);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "rendering chat template 'default': line 12: the chat template "
            "raised an error: Roles must alternate user, assistant, user, ... "
            "after an optional system message.");
}

TEST(ChatTemplateTest, GemmaStyle) {
  const ChatTemplate t = Load("gemma.jinja", "<bos>", "<eos>");
  EXPECT_EQ(Render(t, Conversation()),
            "<bos><start_of_turn>user\nYou are concise.\n\nHi!<end_of_turn>\n"
            "<start_of_turn>model\nHello. How can I help?<end_of_turn>\n"
            "<start_of_turn>user\nName a prime.<end_of_turn>\n"
            "<start_of_turn>model\n");
  // Content as a list of parts.
  EXPECT_EQ(Render(t, Json::parse(R"([{"role": "user", "content": [
                 {"type": "text", "text": "What is in this picture? "},
                 {"type": "image"}]}])")),
            "<bos><start_of_turn>user\nWhat is in this picture?<start_of_image>"
            "<end_of_turn>\n<start_of_turn>model\n");
}

TEST(ChatTemplateTest, DeepSeekStyle) {
  const ChatTemplate t = Load("deepseek.jinja", "<｜begin▁of▁sentence｜>",
                              "<｜end▁of▁sentence｜>");
  EXPECT_EQ(Render(t, Conversation()),
            "<｜begin▁of▁sentence｜>You are concise.<｜User｜>Hi!"
            "<｜Assistant｜>Hello. How can I help?<｜end▁of▁sentence｜>"
            "<｜User｜>Name a prime.<｜Assistant｜>");
  EXPECT_EQ(Render(t, Json::parse(R"([
                 {"role": "system", "content": "A."},
                 {"role": "system", "content": "B."},
                 {"role": "user", "content": "Is 2 prime?"},
                 {"role": "assistant", "content": "<think>\nhmm\n</think>\n\nYes."}])"),
                   nullptr, false),
            "<｜begin▁of▁sentence｜>A.\n\nB.<｜User｜>Is 2 prime?"
            "<｜Assistant｜>\n\nYes.<｜end▁of▁sentence｜>");
}

TEST(ChatTemplateTest, Qwen25Style) {
  const ChatTemplate t = Load("qwen25.jinja", "", "<|im_end|>");
  EXPECT_EQ(Render(t, Conversation()),
            "<|im_start|>system\nYou are concise.<|im_end|>\n"
            "<|im_start|>user\nHi!<|im_end|>\n"
            "<|im_start|>assistant\nHello. How can I help?<|im_end|>\n"
            "<|im_start|>user\nName a prime.<|im_end|>\n"
            "<|im_start|>assistant\n");
  const Json tools = Json::parse(R"([{"type": "function", "function": {
      "name": "get_weather", "description": "Current weather",
      "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                     "required": ["city"]}}}])");
  const Json messages = Json::parse(R"([
      {"role": "user", "content": "Weather in Paris?"},
      {"role": "assistant", "content": null, "tool_calls": [{"type": "function",
        "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]},
      {"role": "tool", "content": "18°C"},
      {"role": "tool", "content": "sunny"}])");
  EXPECT_EQ(Render(t, messages, tools),
            "<|im_start|>system\nYou are a helpful assistant.\n\n# Tools\n\n"
            "Function signatures, one per line, inside <tools></tools>:\n"
            "<tools>\n{\"type\": \"function\", \"function\": {\"name\": "
            "\"get_weather\", \"description\": \"Current weather\", "
            "\"parameters\": {\"type\": \"object\", \"properties\": {\"city\": "
            "{\"type\": \"string\"}}, \"required\": [\"city\"]}}}\n</tools>\n\n"
            "To call one, reply with <tool_call>{\"name\": ..., \"arguments\": "
            "{...}}</tool_call>.<|im_end|>\n"
            "<|im_start|>user\nWeather in Paris?<|im_end|>\n"
            "<|im_start|>assistant\n<tool_call>\n{\"name\": \"get_weather\", "
            "\"arguments\": {\"city\": \"Paris\"}}\n</tool_call><|im_end|>\n"
            "<|im_start|>user\n<tool_response>\n18°C\n</tool_response>\n"
            "<tool_response>\nsunny\n</tool_response><|im_end|>\n"
            "<|im_start|>assistant\n");
}

TEST(ChatTemplateTest, NamedTemplatesAndSpecialTokensFromConfig) {
  TempDir dir;
  const std::string path = dir.Write("tokenizer_config.json", R"({
    "bos_token": {"content": "<s>", "__type": "AddedToken"},
    "eos_token": "</s>",
    "pad_token": null,
    "additional_special_tokens": ["<x>", "<y>"],
    "chat_template": [
      {"name": "default", "template": "D{{ bos_token }}{{ eos_token }}{{ pad_token is defined }}{{ additional_special_tokens|join }}{{ tools }}"},
      {"name": "tool_use", "template": "T{{ tools|length }}"}]})");
  auto t = ChatTemplate::FromTokenizerConfig(path);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->names(), (std::vector<std::string>{"default", "tool_use"}));
  EXPECT_EQ(Render(*t, Json::array()), "D<s></s>False<x><y>None");
  EXPECT_EQ(Render(*t, Json::array(), Json::array({Json::object()})), "T1");
  // kwargs are variables and override special tokens.
  EXPECT_EQ(Render(*t, Json::array(), nullptr, true, Json{{"bos_token", "B"}}),
            "DB</s>False<x><y>None");
}

TEST(ChatTemplateTest, ChatTemplateJinjaFileReplacesTheConfigTemplate) {
  TempDir dir;
  const std::string path =
      dir.Write("tokenizer_config.json", R"({"chat_template": "from config"})");
  dir.Write("chat_template.jinja", "from file {{ messages|length }}\n");
  auto t = ChatTemplate::FromTokenizerConfig(path);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(Render(*t, Json::array({Json::object()})), "from file 1");
}

TEST(ChatTemplateTest, LoadErrorsAreActionable) {
  TempDir dir;
  auto missing = ChatTemplate::FromTokenizerConfig(
      dir.Write("tokenizer_config.json", R"({"eos_token": "</s>"})"));
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("has no chat_template"),
            std::string::npos);

  auto not_json = ChatTemplate::FromTokenizerConfig(dir.Write("bad.json", "{"));
  EXPECT_EQ(not_json.status().code(), StatusCode::kInvalidArgument);

  auto bad_template = ChatTemplate::FromTokenizerConfig(
      dir.Write("t.json", R"({"chat_template": "ok\n{% include 'x' %}"})"));
  EXPECT_EQ(bad_template.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(bad_template.status().message().find("chat template 'default' of "),
            std::string::npos);
  EXPECT_NE(bad_template.status().message().find("line 2: tag 'include'"),
            std::string::npos);

  auto no_default = ChatTemplate::FromTokenizerConfig(dir.Write(
      "n.json",
      R"({"chat_template": [{"name": "a", "template": "x"}, {"name": "b", "template": "y"}]})"));
  ASSERT_TRUE(no_default.ok());
  auto r = no_default->Render(Json::array(), nullptr, true, nullptr);
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("'a', 'b'"), std::string::npos);

  EXPECT_FALSE(
      ChatTemplate::FromTokenizerConfig(dir.Write("x.json", "{}") + ".absent")
          .ok());
}

TEST(ChatTemplateTest, RenderRejectsBadArguments) {
  auto t = ChatTemplate::FromString("{{ messages|length }}", "", "");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->Render(Json::object(), nullptr, true, nullptr).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(
      t->Render(Json::array(), Json::object(), true, nullptr).status().code(),
      StatusCode::kInvalidArgument);
  EXPECT_EQ(t->Render(Json::array(), nullptr, true, Json{{"messages", 1}})
                .status()
                .code(),
            StatusCode::kInvalidArgument);
  // bos/eos given as empty are undefined, as Hugging Face leaves absent tokens.
  auto u = ChatTemplate::FromString("{{ bos_token is defined }}", "", "</s>");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(Render(*u, Json::array()), "False");
}

}  // namespace
}  // namespace tessera
