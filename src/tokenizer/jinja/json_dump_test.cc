#include "tokenizer/jinja/json_dump.h"

#include <gtest/gtest.h>

#include "tokenizer/jinja/test_util.h"

namespace tessera::jinja {
namespace {

using testing::Json;
using testing::R;

std::string Dump(const Json& json, const JsonDumpOptions& options = {}) {
  auto v = Value::FromJson(json);
  if (!v.ok()) return "ERROR: " + v.status().ToString();
  auto s = JsonDumps(*v, options, 1);
  return s.ok() ? *s : "ERROR: " + s.status().ToString();
}

TEST(JsonDumpTest, KeepsInsertionOrderAndPythonSeparators) {
  const Json j = Json::parse(
      R"({"type": "function", "function": {"name": "f", "b": 1, "a": [1, 2.0, true, null]}})");
  EXPECT_EQ(
      Dump(j),
      R"({"type": "function", "function": {"name": "f", "b": 1, "a": [1, 2.0, true, null]}})");
}

TEST(JsonDumpTest, IndentUsesCommaOnlyItemSeparator) {
  JsonDumpOptions options;
  options.indent = "  ";
  options.item_separator = ",";
  EXPECT_EQ(Dump(Json::parse(R"({"a": [1, {"b": []}], "c": {}})"), options),
            "{\n  \"a\": [\n    1,\n    {\n      \"b\": []\n    }\n  ],\n"
            "  \"c\": {}\n}");
}

TEST(JsonDumpTest, EscapingWithAndWithoutEnsureAscii) {
  const Json j = "é😀\x01\n\t\"\\</x>\x7f";
  EXPECT_EQ(Dump(j), "\"é😀\\u0001\\n\\t\\\"\\\\</x>\x7f\"");
  JsonDumpOptions ascii;
  ascii.ensure_ascii = true;
  EXPECT_EQ(Dump(j, ascii),
            "\"\\u00e9\\ud83d\\ude00\\u0001\\n\\t\\\"\\\\</x>\\u007f\"");
}

TEST(JsonDumpTest, FloatsPrintAsPythonRepr) {
  EXPECT_EQ(Dump(Json::parse("[1.0, 0.1, 1e-7, 1e16, -0.0, 3]")),
            "[1.0, 0.1, 1e-07, 1e+16, -0.0, 3]");
}

TEST(JsonDumpTest, SortKeysAndCustomSeparators) {
  JsonDumpOptions options;
  options.sort_keys = true;
  options.item_separator = ",";
  options.key_separator = ":";
  EXPECT_EQ(Dump(Json::parse(R"({"b": 1, "a": {"d": 1, "c": 2}})"), options),
            R"({"a":{"c":2,"d":1},"b":1})");
}

TEST(JsonDumpTest, UndefinedIsNotSerializable) {
  auto s = JsonDumps(Value(), {}, 7);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("line 7"), std::string::npos);
  EXPECT_NE(s.status().message().find("not JSON serializable"),
            std::string::npos);
}

TEST(JsonDumpTest, ToJsonFilterOptions) {
  const Json vars = Json::parse(R"({"x": {"b": 1, "a": [1, "é"]}})");
  EXPECT_EQ(R("{{ x|tojson }}", vars), R"({"b": 1, "a": [1, "é"]})");
  EXPECT_EQ(R("{{ x|tojson(indent=2) }}", vars),
            "{\n  \"b\": 1,\n  \"a\": [\n    1,\n    \"é\"\n  ]\n}");
  EXPECT_EQ(R("{{ x|tojson(ensure_ascii=true) }}", vars),
            R"({"b": 1, "a": [1, "\u00e9"]})");
  EXPECT_EQ(R("{{ x|tojson(separators=(',', ':'), sort_keys=true) }}", vars),
            R"({"a":[1,"é"],"b":1})");
  EXPECT_EQ(R("{{ 'a<b>&c'|tojson }}"), "\"a<b>&c\"");  // no HTML escaping
  EXPECT_EQ(R("{{ (1, 'x')|tojson }}"), "[1, \"x\"]");
}

}  // namespace
}  // namespace tessera::jinja
