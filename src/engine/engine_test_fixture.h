// The engine test fixture: a make-model tiny Llama checkpoint (written once
// per test suite), the real cpu plugin, and helpers that submit greedy
// requests and collect their outputs. TearDown checks the KV pool is back
// at its baseline and CheckIntegrity is OK.
#ifndef TESSERA_ENGINE_ENGINE_TEST_FIXTURE_H_
#define TESSERA_ENGINE_ENGINE_TEST_FIXTURE_H_

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "model/runner_test_util.h"

namespace tessera::engine::testing {

struct Collected {
  std::vector<int32_t> ids;
  std::string text;
  RequestOutput last;
  int outputs = 0;
};

inline Collected Collect(RequestStream& stream) {
  Collected c;
  while (!stream.finished() || c.outputs == 0 || !c.last.finished) {
    for (RequestOutput& o : stream.Wait(std::chrono::milliseconds(200))) {
      ++c.outputs;
      c.ids.insert(c.ids.end(), o.token_ids.begin(), o.token_ids.end());
      c.text += o.text;
      c.last = std::move(o);
    }
  }
  return c;
}

class EngineTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ =
        new std::string((std::filesystem::temp_directory_path() /
                         ("tessera_engine_test_" + std::to_string(::getpid())))
                            .string());
    auto ck = model::testing::MakeCheckpoint(*dir_, model::Architecture::kLlama,
                                             TSR_DTYPE_F32);
    ASSERT_TRUE(ck.ok()) << ck.status().ToString();
    auto tok = Tokenizer::Load(*dir_ + "/tokenizer.json");
    ASSERT_TRUE(tok.ok()) << tok.status().ToString();
    checkpoint_ = ck->release();
    tokenizer_ = tok->release();
  }
  static void TearDownTestSuite() {
    delete checkpoint_;
    delete tokenizer_;
    std::filesystem::remove_all(*dir_);
    delete dir_;
  }

  void Start(EngineOptions options = {}, int64_t kv_tokens = 4096,
             int32_t page_size = 4) {
    engine_.reset();
    runner_.reset();
    runtime_.reset();
    auto rt = model::testing::CreateRuntime();
    ASSERT_TRUE(rt.ok()) << rt.status().ToString();
    runtime_ = std::move(*rt);
    model::ModelRunnerOptions ro;
    ro.kv_capacity_tokens = kv_tokens;
    ro.page_size = page_size;
    ro.show_progress = false;
    ro.embedding_only = options.pooling.has_value();
    auto runner = model::ModelRunner::Create(*runtime_, *checkpoint_, ro);
    ASSERT_TRUE(runner.ok()) << runner.status().ToString();
    runner_ = std::move(*runner);
    options.log_interval_s = 0;
    auto engine = Engine::Create(*runner_, *tokenizer_, options);
    ASSERT_TRUE(engine.ok()) << engine.status().ToString();
    engine_ = std::move(*engine);
  }

  void TearDown() override {
    if (engine_) {
      Status s = engine_->CheckIntegrity();
      EXPECT_TRUE(s.ok()) << s.ToString();
      EXPECT_EQ(engine_->Stats().kv_used_tokens, 0);
      engine_->Shutdown(0);
    }
    engine_.reset();
    runner_.reset();
    runtime_.reset();
  }

  static EngineRequest Greedy(std::vector<int32_t> prompt, int64_t max_new) {
    EngineRequest r;
    r.prompt_ids = std::move(prompt);
    r.max_new_tokens = max_new;
    r.ignore_eos = true;
    return r;
  }
  static std::vector<int32_t> Prompt(int n, int salt) {
    std::vector<int32_t> p(n);
    for (int i = 0; i < n; ++i) p[i] = (i * 37 + salt * 101 + 5) % 1000;
    return p;
  }
  Collected Run(EngineRequest r) {
    auto stream = engine_->Submit(std::move(r));
    EXPECT_TRUE(stream.ok()) << stream.status().ToString();
    return Collect(**stream);
  }

  inline static std::string* dir_ = nullptr;
  inline static model::Checkpoint* checkpoint_ = nullptr;
  inline static Tokenizer* tokenizer_ = nullptr;
  std::unique_ptr<runtime::Runtime> runtime_;
  std::unique_ptr<model::ModelRunner> runner_;
  std::unique_ptr<Engine> engine_;
};

}  // namespace tessera::engine::testing

#endif  // TESSERA_ENGINE_ENGINE_TEST_FIXTURE_H_
