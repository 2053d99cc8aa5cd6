#include "server/engine_bridge.h"

#include <fmt/format.h>

#include <mutex>
#include <random>
#include <thread>

#include "tokenizer/byte_level.h"

namespace tessera::server {

std::vector<engine::EngineRequest> BuildEngineRequests(
    const SamplingOptions& s, const std::vector<int32_t>& prompt_ids,
    int32_t top_logprobs, const std::string& rid_prefix,
    int32_t prompt_logprobs) {
  std::vector<engine::EngineRequest> out;
  for (int32_t i = 0; i < s.n; ++i) {
    engine::EngineRequest r;
    r.rid = s.n == 1 ? rid_prefix : fmt::format("{}-{}", rid_prefix, i);
    r.prompt_ids = prompt_ids;
    r.sampling.temperature = static_cast<float>(s.temperature);
    r.sampling.top_p = static_cast<float>(s.top_p);
    r.sampling.top_k = s.top_k > 0 ? s.top_k : 0;
    r.sampling.min_p = static_cast<float>(s.min_p);
    if (s.seed) r.seed = static_cast<uint64_t>(*s.seed) + i;
    r.logit.repetition_penalty = static_cast<float>(s.repetition_penalty);
    r.logit.presence_penalty = static_cast<float>(s.presence_penalty);
    r.logit.frequency_penalty = static_cast<float>(s.frequency_penalty);
    for (const auto& [id, bias] : s.logit_bias) {
      r.logit.logit_bias.emplace_back(id, bias);
    }
    r.logit.min_tokens = s.min_tokens;
    r.skip_special_tokens = s.skip_special_tokens;
    r.no_stop_trim = s.no_stop_trim;
    r.grammar = s.grammar;
    r.stop = s.stop;
    r.stop_token_ids = s.stop_token_ids;
    r.ignore_eos = s.ignore_eos;
    r.max_new_tokens = s.max_tokens;
    r.top_logprobs = top_logprobs;
    r.prompt_logprobs = prompt_logprobs;
    if (s.bootstrap) {
      r.bootstrap = engine::BootstrapInfo{s.bootstrap->host, s.bootstrap->port,
                                          s.bootstrap->room};
    }
    out.push_back(std::move(r));
  }
  return out;
}

namespace {

constexpr std::string_view kReplacementChar = "\xEF\xBF\xBD";

// The raw bytes behind a token whose decoded text holds U+FFFD because it
// is part of a UTF-8 character: a byte-fallback token <0xAB>, or a
// byte-level token. Empty when the text is whole.
std::string RawTokenBytes(const Tokenizer& tokenizer, int32_t id,
                          const std::string& text) {
  if (text.find(kReplacementChar) == std::string::npos) return "";
  auto token = tokenizer.IdToToken(id);
  if (!token) return "";
  if (uint8_t byte = 0; tok::ParseByteToken(*token, &byte)) {
    return std::string(1, static_cast<char>(byte));
  }
  std::string raw;
  if (tok::ByteLevelDecodeToken(*token, &raw)) return raw;
  return "";
}

}  // namespace

TokenLogprob ToTokenLogprob(const engine::TokenLogprobs& lp,
                            const Tokenizer& tokenizer) {
  auto text = [&](int32_t id) {
    return tokenizer.Decode(std::span<const int32_t>(&id, 1), false);
  };
  TokenLogprob out;
  out.token = text(lp.id);
  out.bytes = RawTokenBytes(tokenizer, lp.id, out.token);
  out.logprob = lp.logprob;
  for (const auto& [id, logprob] : lp.top) {
    out.top.emplace_back(text(id), logprob);
    out.top_bytes.push_back(RawTokenBytes(tokenizer, id, out.top.back().first));
  }
  return out;
}

std::vector<TokenLogprob> PromptTokenLogprobs(
    const std::vector<int32_t>& prompt_ids,
    const std::vector<engine::TokenLogprobs>& scored,
    const Tokenizer& tokenizer) {
  std::vector<TokenLogprob> out;
  if (prompt_ids.empty()) return out;
  engine::TokenLogprobs first;
  first.id = prompt_ids[0];
  out.push_back(ToTokenLogprob(first, tokenizer));
  out.back().has_logprob = false;
  for (const engine::TokenLogprobs& lp : scored) {
    out.push_back(ToTokenLogprob(lp, tokenizer));
  }
  return out;
}

std::string NewResponseId(const std::string& prefix) {
  static std::mutex mu;
  static std::mt19937_64 gen{std::random_device{}()};
  std::lock_guard<std::mutex> lock(mu);
  return fmt::format("{}{:012x}{:012x}", prefix, gen() & 0xffffffffffffull,
                     gen() & 0xffffffffffffull);
}

void StreamSet::Add(std::shared_ptr<engine::RequestStream> stream) {
  streams_.push_back(std::move(stream));
  done_.push_back(false);
}

bool StreamSet::all_finished() const {
  for (bool d : done_) {
    if (!d) return false;
  }
  return true;
}

std::vector<StreamSet::Event> StreamSet::TakeReady() {
  std::vector<Event> events;
  for (size_t i = 0; i < streams_.size(); ++i) {
    if (done_[i]) continue;
    for (auto& o : streams_[i]->Wait(std::chrono::milliseconds(0))) {
      if (o.finished) done_[i] = true;
      events.push_back({i, std::move(o)});
    }
  }
  return events;
}

void StreamSet::SetListener(const std::function<void()>& listener) {
  for (auto& stream : streams_) stream->SetListener(listener);
}

void StreamSet::CancelAll(engine::AbortCause cause, const std::string& why) {
  for (size_t i = 0; i < streams_.size(); ++i) {
    if (!done_[i]) streams_[i]->Cancel(cause, why);
  }
}

MaybeApiError SubmitAll(
    engine::Engine& engine,
    const std::vector<std::vector<engine::EngineRequest>>& groups,
    StreamSet* out) {
  for (const auto& group : groups) {
    auto streams = engine.SubmitGroup(group);
    if (!streams.ok()) {
      out->CancelAll(engine::AbortCause::kError,
                     "another prompt of the request was rejected");
      return ApiErrorFromStatus(streams.status());
    }
    for (auto& s : *streams) out->Add(std::move(s));
  }
  return std::nullopt;
}

}  // namespace tessera::server
