// Structured output on a reasoning model (EngineRequest::
// grammar_after_reasoning): the first token may open the reasoning block
// instead of following the grammar, nothing inside the block is
// constrained, and the grammar holds from the token after the block's end.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "engine/engine_test_fixture.h"
#include "engine/sequence.h"
#include "grammar/ebnf.h"
#include "grammar/token_mask.h"

namespace tessera::engine {
namespace {

using testing::EngineTest;

constexpr int32_t kA = 10, kB = 11, kX = 12, kStart = 20, kEnd = 21;

class GrammarReasoningTest : public EngineTest {
 protected:
  std::unique_ptr<Sequence> Make(bool opens) {
    EngineRequest r;
    r.prompt_ids = {1, 2, 3};
    auto grammar = grammar::ParseEbnf(R"(root ::= "ab")");
    EXPECT_TRUE(grammar.ok()) << grammar.status().ToString();
    r.grammar = *grammar;
    r.grammar_after_reasoning = EngineRequest::ReasoningTokens{kStart, kEnd, opens};
    auto stops = StopTokens::Create({}, {}, true, tokenizer_->vocab_size());
    auto matcher = StopMatcher::Create({});
    auto processor = LogitProcessor::Create({}, tokenizer_->vocab_size(), r.prompt_ids);
    EXPECT_TRUE(stops.ok() && matcher.ok() && processor.ok());
    auto s = std::make_unique<Sequence>(std::move(r), *tokenizer_, std::move(*stops),
                                        std::move(*matcher), std::move(*processor), 1, 16);
    std::vector<std::string> bytes(static_cast<size_t>(tokenizer_->vocab_size()));
    bytes[kA] = "a";
    bytes[kB] = "b";
    bytes[kX] = "x";
    s->grammar_vocab = grammar::TokenVocabulary::FromBytes(bytes);
    s->grammar_matcher = std::make_unique<grammar::GrammarMatcher>(s->request.grammar);
    s->grammar_phase = opens ? Sequence::GrammarPhase::kMayReason
                             : Sequence::GrammarPhase::kReasoning;
    s->stream = std::make_shared<RequestStream>("r");
    return s;
  }
  // The ids left finite after masking a row of zeros.
  std::vector<int32_t> Allowed(Sequence& s) {
    s.ComputeGrammarMask();
    std::vector<float> row(static_cast<size_t>(tokenizer_->vocab_size()), 0.0f);
    s.ApplyGrammarMask(row);
    std::vector<int32_t> out;
    for (size_t i = 0; i < row.size(); ++i) {
      if (std::isfinite(row[i])) out.push_back(static_cast<int32_t>(i));
    }
    return out;
  }
};

TEST_F(GrammarReasoningTest, FirstTokenMayOpenTheBlockThenTheGrammarHolds) {
  auto s = Make(/*opens=*/true);
  EXPECT_EQ(Allowed(*s), (std::vector<int32_t>{kA, kStart}));
  EXPECT_FALSE(s->AcceptToken(kStart, std::nullopt).finished);
  // Inside the block: nothing is masked, and a token the grammar would
  // refuse is taken.
  EXPECT_EQ(Allowed(*s).size(), static_cast<size_t>(tokenizer_->vocab_size()));
  EXPECT_FALSE(s->AcceptToken(kX, std::nullopt).finished);
  EXPECT_FALSE(s->AcceptToken(kEnd, std::nullopt).finished);
  // After the block: the grammar, from its start.
  EXPECT_EQ(Allowed(*s), (std::vector<int32_t>{kA}));
  EXPECT_FALSE(s->AcceptToken(kA, std::nullopt).finished);
  EXPECT_EQ(Allowed(*s), (std::vector<int32_t>{kB}));
  RequestOutput last = s->AcceptToken(kB, std::nullopt);
  EXPECT_TRUE(last.finished);
  EXPECT_EQ(last.finish.kind, FinishReason::Kind::kStop);
}

TEST_F(GrammarReasoningTest, WithoutTheBlockTheGrammarHoldsFromTheFirstToken) {
  auto s = Make(/*opens=*/true);
  EXPECT_FALSE(s->AcceptToken(kA, std::nullopt).finished);
  // The block's start is no longer special: only the grammar.
  EXPECT_EQ(Allowed(*s), (std::vector<int32_t>{kB}));
}

TEST_F(GrammarReasoningTest, ATemplateThatOpensTheBlockStartsInsideIt) {
  auto s = Make(/*opens=*/false);
  EXPECT_EQ(Allowed(*s).size(), static_cast<size_t>(tokenizer_->vocab_size()));
  EXPECT_FALSE(s->AcceptToken(kX, std::nullopt).finished);
  EXPECT_FALSE(s->AcceptToken(kEnd, std::nullopt).finished);
  EXPECT_EQ(Allowed(*s), (std::vector<int32_t>{kA}));
}

}  // namespace
}  // namespace tessera::engine
