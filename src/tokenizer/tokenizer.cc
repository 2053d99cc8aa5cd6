#include "tokenizer/tokenizer.h"

#include <algorithm>

#include "base/logging.h"
#include "tokenizer/utf8.h"

namespace tessera {

Status Tokenizer::Finalize() {
  std::vector<tok::AddedToken> raw, normalized;
  std::vector<std::string> raw_patterns, normalized_patterns;
  int32_t limit = model_->id_limit();
  for (size_t i = 0; i < added_tokens_.size(); ++i) {
    tok::AddedToken& token = added_tokens_[i];
    // Hugging Face gives an added token that is also in the vocabulary the
    // vocabulary's id, whatever the file says.
    if (auto vocab_id = model_->TokenToId(token.content);
        vocab_id && *vocab_id != token.id) {
      TSR_LOG_WARN(
          "added token \"{}\" has id {} but the vocabulary gives it {}; "
          "using {} as Hugging Face does",
          token.content, token.id, *vocab_id, *vocab_id);
      token.id = *vocab_id;
    }
    added_by_id_.emplace(token.id, i);
    added_by_content_.emplace(token.content, token.id);
    limit = std::max(limit, token.id + 1);
    // A normalized token is matched, and decoded, in its normalized form
    // (Hugging Face hands that form to the decoder so it can undo it).
    std::string form = token.normalized && normalizer_ != nullptr
                           ? normalizer_->Normalize(token.content)
                           : token.content;
    if (token.normalized) {
      normalized.push_back(token);
      normalized_patterns.push_back(form);
    } else {
      raw.push_back(token);
      raw_patterns.push_back(form);
    }
    added_by_content_.emplace(form, token.id);
    added_text_.push_back(std::move(form));
  }
  raw_matcher_ = tok::AddedTokenMatcher(raw, raw_patterns);
  normalized_matcher_ = tok::AddedTokenMatcher(normalized, normalized_patterns);
  vocab_size_ = limit;
  size_t longest = 4;  // an unknown character (at most 4 UTF-8 bytes)
  for (int32_t id = 0; id < model_->id_limit(); ++id) {
    if (const std::string* text = model_->IdToToken(id)) {
      longest = std::max(longest, text->size());
    }
  }
  for (const tok::AddedToken& token : added_tokens_) {
    longest = std::max(longest, token.content.size());
  }
  // Stored forms are never shorter than the input they stand for
  // (byte-level and metaspace alphabets only lengthen it); the factor
  // covers normalizers that shorten input (NFKC composition).
  max_input_bytes_per_token_ = 4 * longest;
  if (!bos_token_.empty()) bos_id_ = TokenToId(bos_token_);
  if (!eos_token_.empty()) eos_id_ = TokenToId(eos_token_);
  post_processor_->SetFallback(add_bos_ ? bos_id_ : std::nullopt,
                               add_eos_ ? eos_id_ : std::nullopt);
  return OkStatus();
}

std::vector<int32_t> Tokenizer::Encode(std::string_view text,
                                       bool add_special_tokens) const {
  std::string repaired;
  if (!tok::IsValidUtf8(text)) {
    repaired = tok::ToValidUtf8(text);
    text = repaired;
  }
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3 + 4);
  if (raw_matcher_.empty()) {
    EncodeStretch(text, true, &ids);
  } else {
    for (const auto& seg : raw_matcher_.Split(text)) {
      if (seg.id >= 0) {
        ids.push_back(seg.id);
      } else {
        EncodeStretch(text.substr(seg.begin, seg.end - seg.begin),
                      seg.begin == 0, &ids);
      }
    }
  }
  if (add_special_tokens) post_processor_->AddSpecialTokens(&ids);
  return ids;
}

void Tokenizer::EncodeStretch(std::string_view text, bool at_origin,
                              std::vector<int32_t>* ids) const {
  std::string normalized =
      normalizer_ != nullptr ? normalizer_->Normalize(text) : std::string(text);
  std::vector<std::string> words;
  auto encode_piece = [&](std::string_view piece, bool piece_at_origin) {
    if (pre_tokenizer_ == nullptr) {
      model_->Tokenize(piece, ids);
      return;
    }
    words.clear();
    pre_tokenizer_->PreTokenize(piece, piece_at_origin, &words);
    for (const std::string& word : words) model_->Tokenize(word, ids);
  };
  if (normalized_matcher_.empty()) {
    encode_piece(normalized, at_origin);
    return;
  }
  for (const auto& seg : normalized_matcher_.Split(normalized)) {
    if (seg.id >= 0) {
      ids->push_back(seg.id);
    } else {
      encode_piece(
          std::string_view(normalized).substr(seg.begin, seg.end - seg.begin),
          at_origin && seg.begin == 0);
    }
  }
}

std::string Tokenizer::Decode(std::span<const int32_t> ids,
                              bool skip_special_tokens) const {
  std::string out;
  tok::Decoder::Stream stream(*decoder_);
  for (int32_t id : ids) {
    if (skip_special_tokens && IsSpecial(id)) continue;
    if (auto token = IdToToken(id)) stream.Push(*token, &out);
  }
  stream.Finish(&out);
  return out;
}

std::optional<int32_t> Tokenizer::TokenToId(std::string_view token) const {
  if (!added_by_content_.empty()) {
    auto it = added_by_content_.find(std::string(token));
    if (it != added_by_content_.end()) return it->second;
  }
  return model_->TokenToId(token);
}

std::optional<std::string_view> Tokenizer::IdToToken(int32_t id) const {
  auto it = added_by_id_.find(id);
  if (it != added_by_id_.end()) return added_text_[it->second];
  if (const std::string* token = model_->IdToToken(id)) return *token;
  return std::nullopt;
}

bool Tokenizer::IsSpecial(int32_t id) const {
  auto it = added_by_id_.find(id);
  return it != added_by_id_.end() && added_tokens_[it->second].special;
}

}  // namespace tessera
