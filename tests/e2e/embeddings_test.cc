// POST /v1/embeddings end to end: `tessera serve --is-embedding` on a
// make-model --embedding checkpoint (Qwen3-Embedding's layout: base-model
// tensor names, no lm_head, last-token pooling, Normalize, a tokenizer that
// appends <|endoftext|>). Every vector is checked against an independent
// forward pass (the float64 reference of tests/model) on the same
// tokenization; base64 and `dimensions` as OpenAI defines them; many
// concurrent requests batch to the same vectors; the wrong route on either
// kind of server is a 400 saying which server to start; and the official
// OpenAI JavaScript client (npm `openai`) reads the vectors.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "model/checkpoint.h"
#include "model/make_model.h"
#include "model/reference_forward.h"
#include "testing/fixtures.h"
#include "testing/node_tools.h"
#include "testing/server_process.h"
#include "testing/subprocess.h"
#include "tokenizer/tokenizer.h"

namespace tessera {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;
using testing::ServerProcess;
using testing::ShellQuote;

constexpr const char* kBin = TSR_TESSERA_BIN;
constexpr const char* kRepoDir = TSR_REPO_DIR;

class EmbeddingsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(
        (fs::temp_directory_path() /
         ("tessera_embeddings_test_" + std::to_string(::getpid())))
            .string());
    fs::remove_all(*dir_);
    model::MakeModelOptions mo;
    mo.preset = "tiny";
    mo.arch = model::Architecture::kQwen3;
    mo.dtype = TSR_DTYPE_F32;
    mo.out_dir = *dir_;
    mo.embedding = true;
    auto made = model::MakeModel(mo);
    ASSERT_TRUE(made.ok()) << made.status().ToString();
    server_ = new ServerProcess();
    ASSERT_TRUE(server_->Start(kBin, {"--model-path", *dir_, "--is-embedding",
                                      "--log-interval", "0",
                                      "--chunked-prefill-size", "16"}))
        << server_->log();
  }
  static void TearDownTestSuite() {
    if (server_ != nullptr) {
      EXPECT_EQ(server_->Stop(), 0);
    }
    delete server_;
    fs::remove_all(*dir_);
    delete dir_;
  }

  // The reference's last-token vector, normalized, for `ids`.
  static std::vector<double> Reference(const std::vector<int32_t>& ids) {
    auto ckpt = model::Checkpoint::Open(*dir_);
    EXPECT_TRUE(ckpt.ok()) << ckpt.status().ToString();
    auto ref = tessera::testing::ReferenceModel::Load(**ckpt);
    EXPECT_TRUE(ref.ok()) << ref.status().ToString();
    auto cache = (*ref)->NewCache();
    std::vector<double> v = (*ref)->ForwardHidden(cache, ids).back();
    double n = 0;
    for (double x : v) n += x * x;
    for (double& x : v) x /= std::sqrt(n);
    return v;
  }

  static Json Embed(const Json& body) {
    auto res = server_->Post("/v1/embeddings", body.dump());
    EXPECT_EQ(res.status, 200) << res.body;
    return res.status == 200 ? Json::parse(res.body) : Json::object();
  }

  inline static std::string* dir_ = nullptr;
  inline static ServerProcess* server_ = nullptr;
};

TEST_F(EmbeddingsTest, VectorsMatchAnIndependentForwardPass) {
  auto tok = Tokenizer::Load(*dir_ + "/tokenizer.json");
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  const std::vector<std::string> texts = {
      "hello world",
      "The quick brown fox jumps over the lazy dog, again and again, until "
      "the prompt spans more than one chunk of sixteen tokens."};
  const std::vector<int32_t> ids = {5, 6, 7, 8};
  Json body = {{"model", *dir_}, {"input", {texts[0], texts[1], ids}}};
  Json got = Embed(body);
  ASSERT_EQ(got["object"], "list");
  ASSERT_EQ(got["data"].size(), 3u);
  int64_t tokens = 0;
  for (size_t i = 0; i < 3; ++i) {
    std::vector<int32_t> input = i < 2 ? (*tok)->Encode(texts[i], true) : ids;
    if (i < 2) {
      // The tokenizer's post-processor ends each text with <|endoftext|>.
      ASSERT_EQ((*tok)->IdToToken(input.back()).value_or(""), "<|endoftext|>");
    }
    tokens += static_cast<int64_t>(input.size());
    const Json& item = got["data"][i];
    EXPECT_EQ(item["index"], i);
    EXPECT_EQ(item["object"], "embedding");
    const std::vector<double> want = Reference(input);
    ASSERT_EQ(item["embedding"].size(), want.size());
    double norm = 0, err = 0;
    for (size_t k = 0; k < want.size(); ++k) {
      const double x = item["embedding"][k].get<double>();
      norm += x * x;
      err = std::max(err, std::abs(x - want[k]));
    }
    EXPECT_NEAR(norm, 1.0, 1e-5) << i;
    EXPECT_LE(err, 1e-5) << "input " << i;
  }
  EXPECT_EQ(got["usage"]["prompt_tokens"], tokens);
  EXPECT_EQ(got["usage"]["total_tokens"], tokens);
  EXPECT_EQ(got["model"], *dir_);
}

TEST_F(EmbeddingsTest, Base64AndDimensionsAsOpenAiDefinesThem) {
  Json floats = Embed({{"input", "a b c"}});
  Json b64 = Embed({{"input", "a b c"}, {"encoding_format", "base64"}});
  const std::string encoded = b64["data"][0]["embedding"].get<std::string>();
  // Decode with coreutils' base64 (an implementation other than ours).
  const auto decoded = testing::RunShell(
      "printf %s " + ShellQuote(encoded) + " | base64 -d | od -An -v -tx1");
  ASSERT_EQ(decoded.exit_code, 0);
  std::vector<uint8_t> bytes;
  std::istringstream hex(decoded.out);
  for (unsigned b; hex >> std::hex >> b;) bytes.push_back(static_cast<uint8_t>(b));
  const Json& want = floats["data"][0]["embedding"];
  ASSERT_EQ(bytes.size(), want.size() * 4);
  for (size_t k = 0; k < want.size(); ++k) {
    float x;
    std::memcpy(&x, bytes.data() + 4 * k, 4);
    EXPECT_EQ(x, want[k].get<float>()) << k;
  }
  Json small = Embed({{"input", "a b c"}, {"dimensions", 16}});
  const Json& v = small["data"][0]["embedding"];
  ASSERT_EQ(v.size(), 16u);
  double norm = 0;
  for (const Json& x : v) norm += x.get<double>() * x.get<double>();
  EXPECT_NEAR(norm, 1.0, 1e-5);
}

TEST_F(EmbeddingsTest, ConcurrentRequestsBatchToTheSameVectors) {
  const Json alone = Embed({{"input", "shared prefix, then one"}});
  constexpr int kClients = 12;
  std::vector<Json> got(kClients);
  std::vector<std::thread> threads;
  for (int c = 0; c < kClients; ++c) {
    threads.emplace_back([&got, c] {
      got[c] = Embed({{"input",
                       {"shared prefix, then one", "shared prefix, then two",
                        "unrelated " + std::to_string(c)}}});
    });
  }
  for (auto& t : threads) t.join();
  for (int c = 0; c < kClients; ++c) {
    ASSERT_EQ(got[c]["data"].size(), 3u) << c;
    const Json& v = got[c]["data"][0]["embedding"];
    for (size_t k = 0; k < v.size(); ++k) {
      EXPECT_NEAR(v[k].get<double>(),
                  alone["data"][0]["embedding"][k].get<double>(), 1e-5);
    }
  }
}

TEST_F(EmbeddingsTest, WrongRoutesAndBadFieldsAreClear400s) {
  auto chat = server_->Post("/v1/chat/completions",
                            R"({"messages": [{"role": "user", "content": "hi"}]})");
  EXPECT_EQ(chat.status, 400);
  EXPECT_NE(chat.body.find("/v1/embeddings"), std::string::npos) << chat.body;
  auto gen = server_->Post("/generate", R"({"text": "hi"})");
  EXPECT_EQ(gen.status, 400);
  auto unknown = server_->Post("/v1/embeddings", R"({"input": "a", "pooling": "mean"})");
  EXPECT_EQ(unknown.status, 400);
  EXPECT_NE(unknown.body.find("pooling"), std::string::npos) << unknown.body;
  auto wide = server_->Post("/v1/embeddings", R"({"input": "a", "dimensions": 100000})");
  EXPECT_EQ(wide.status, 400);
  EXPECT_NE(wide.body.find("dimensions"), std::string::npos) << wide.body;
  // Hostile nesting is refused at parse time and the server lives on.
  const std::string deep = R"({"input": )" + std::string(100000, '[') +
                           std::string(100000, ']') + "}";
  auto nested = server_->Post("/v1/embeddings", deep);
  EXPECT_EQ(nested.status, 400);
  EXPECT_NE(nested.body.find("nested deeper than 512"), std::string::npos)
      << nested.body.substr(0, 300);
  auto empty = server_->Post("/v1/embeddings", R"({"input": ""})");
  EXPECT_EQ(empty.status, 200) << empty.body;  // <|endoftext|> alone
  EXPECT_EQ(server_->Get("/health_generate").status, 200);
  // A generation server refuses embeddings, naming the flag.
  ServerProcess generator;
  ASSERT_TRUE(generator.Start(kBin, {"--log-interval", "0"})) << generator.log();
  auto refused = generator.Post("/v1/embeddings", R"({"input": "a"})");
  EXPECT_EQ(refused.status, 400);
  EXPECT_NE(refused.body.find("--is-embedding"), std::string::npos) << refused.body;
}

TEST_F(EmbeddingsTest, OfficialNodeClientReadsTheVectors) {
  const std::string missing = testing::MissingNodePackage(kRepoDir, "openai");
  if (!missing.empty()) {
    if (testing::RunningUnderCi()) FAIL() << missing << " (CI=true)";
    GTEST_SKIP() << missing;
  }
  const std::string script = (fs::path(kRepoDir) / "tests" / "e2e" /
                              "openai_client" / "embeddings_test.mjs")
                                 .string();
  const auto result = testing::RunShell(
      "TESSERA_BASE_URL=" + ShellQuote(server_->base_url()) +
          " TESSERA_MODEL=" + ShellQuote(*dir_) + " timeout 120 node " +
          ShellQuote(script) + " 2>&1",
      /*capture_stderr=*/false);
  std::cout << result.out;
  EXPECT_EQ(result.exit_code, 0) << result.out;
  EXPECT_NE(result.out.find("all checks passed"), std::string::npos);
}

}  // namespace
}  // namespace tessera
