#include "bench/completion_stream.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <utility>

#include "base/bounded_json.h"

namespace tessera::bench {
namespace {

using Json = nlohmann::json;

// At most `n` bytes of `text`, for error messages.
std::string Clip(std::string_view text, size_t n = 200) {
  if (text.size() <= n) return std::string(text);
  return std::string(text.substr(0, n)) + "...";
}

int64_t IntField(const Json& object, const char* key) {
  if (!object.is_object()) return 0;
  const auto it = object.find(key);
  return it != object.end() && it->is_number_integer() ? it->get<int64_t>() : 0;
}

}  // namespace

CompletionStream::CompletionStream(int64_t input_len,
                                   int64_t requested_output_len) {
  result_.input_len = input_len;
  result_.requested_output_len = requested_output_len;
}

void CompletionStream::Fail(std::string message) {
  if (failed_) return;
  failed_ = true;
  result_.success = false;
  result_.error = std::move(message);
}

bool CompletionStream::OnEvent(std::string_view data, double t_s) {
  if (failed_) return false;
  if (done_) return true;  // nothing may follow [DONE]; ignore it if it does
  if (data == "[DONE]") {
    done_ = true;
    return true;
  }
  auto parsed = ParseBoundedJson(data);
  const Json event = parsed.ok() ? std::move(*parsed) : Json();
  if (!event.is_object()) {
    Fail(fmt::format("the server sent an event that is not a JSON object: {}",
                     Clip(data)));
    return false;
  }
  if (const auto error = event.find("error"); error != event.end()) {
    const bool has_message = error->is_object() && error->contains("message") &&
                             (*error)["message"].is_string();
    Fail(fmt::format("the server reported an error mid-stream: {}",
                     has_message ? (*error)["message"].get<std::string>()
                                 : Clip(error->dump())));
    return false;
  }
  if (const auto choices = event.find("choices");
      choices != event.end() && choices->is_array() && !choices->empty()) {
    if (result_.choice_events == 0) {
      result_.ttft_s = t_s;
    } else {
      result_.itl_s.push_back(t_s - last_choice_s_);
    }
    last_choice_s_ = t_s;
    ++result_.choice_events;
    for (const Json& choice : *choices) {
      if (choice.is_object() && choice.contains("finish_reason") &&
          choice["finish_reason"].is_string()) {
        result_.finish_reason = choice["finish_reason"].get<std::string>();
      }
    }
  }
  if (const auto usage = event.find("usage");
      usage != event.end() && usage->is_object()) {
    result_.usage_reported = true;
    result_.output_tokens = IntField(*usage, "completion_tokens");
    result_.prompt_tokens = IntField(*usage, "prompt_tokens");
    const auto details = usage->find("prompt_tokens_details");
    result_.cached_tokens =
        details != usage->end() ? IntField(*details, "cached_tokens") : 0;
  }
  return true;
}

void CompletionStream::OnEnd(double t_s, bool clean) {
  result_.e2e_s = t_s;
  if (failed_) return;
  if (!done_) {
    Fail(fmt::format(
        "the response ended before `data: [DONE]` (after {} token events{})",
        result_.choice_events, clean ? "" : ", inside an event"));
    return;
  }
  if (result_.choice_events == 0) {
    Fail("the stream carried no token (no chunk with a choice)");
    return;
  }
  if (!result_.usage_reported) {
    result_.output_tokens = result_.choice_events;
    result_.prompt_tokens = result_.input_len;
    result_.cached_tokens = 0;
  }
  result_.success = true;
}

}  // namespace tessera::bench
