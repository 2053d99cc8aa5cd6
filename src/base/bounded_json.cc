#include "base/bounded_json.h"

#include <fmt/format.h>

#include <string>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

namespace tessera {
namespace {

// Objects up to this size find duplicate keys by scanning; larger ones get
// a hash index (built once, when they reach it).
constexpr size_t kIndexFrom = 16;

// A SAX consumer building a J (nlohmann::json or ordered_json) under limits.
template <class J>
class BoundedBuilder {
 public:
  using number_integer_t = typename J::number_integer_t;
  using number_unsigned_t = typename J::number_unsigned_t;
  using number_float_t = typename J::number_float_t;
  using string_t = typename J::string_t;
  using binary_t = typename J::binary_t;

  explicit BoundedBuilder(const JsonLimits& limits) : limits_(limits) {}

  bool null() { return Put(J(nullptr)) != nullptr; }
  bool boolean(bool v) { return Put(J(v)) != nullptr; }
  bool number_integer(number_integer_t v) { return Put(J(v)) != nullptr; }
  bool number_unsigned(number_unsigned_t v) { return Put(J(v)) != nullptr; }
  bool number_float(number_float_t v, const string_t& /*text*/) {
    return Put(J(v)) != nullptr;
  }
  bool string(string_t& v) { return Put(J(std::move(v))) != nullptr; }
  bool binary(binary_t& v) { return Put(J::binary(std::move(v))) != nullptr; }

  bool start_object(std::size_t /*unknown*/) { return Open(J::object()); }
  bool key(string_t& k) {
    pending_key_ = std::move(k);
    return true;
  }
  bool end_object() { return Close(); }
  bool start_array(std::size_t /*unknown*/) { return Open(J::array()); }
  bool end_array() { return Close(); }

  bool parse_error(std::size_t position, const std::string& /*last_token*/,
                   const nlohmann::detail::exception& e) {
    Fail(JsonParseError::Kind::kSyntax, position, e.what());
    return false;
  }

  J TakeRoot() { return std::move(root_); }
  const Status& status() const { return status_; }
  const JsonParseError& error() const { return error_; }

 private:
  struct Frame {
    J* container;
    // For ordered objects past kIndexFrom members: key -> member position.
    std::unordered_map<std::string, size_t> index;
  };

  void Fail(JsonParseError::Kind kind, size_t byte, std::string message) {
    error_ = JsonParseError{kind, byte};
    status_ = InvalidArgumentError(std::move(message));
  }

  bool Open(J value) {
    if (stack_.size() >= limits_.max_depth) {
      Fail(JsonParseError::Kind::kTooDeep, 0,
           fmt::format("JSON nested deeper than {} levels (the limit); "
                       "flatten the document",
                       limits_.max_depth));
      return false;
    }
    J* slot = Put(std::move(value));
    if (slot == nullptr) return false;
    stack_.push_back(Frame{slot, {}});
    return true;
  }

  bool Close() {
    stack_.pop_back();
    return true;
  }

  // Places `value` where the parser is (root, array element or object
  // member under pending_key_); returns where it now lives, or nullptr
  // after a failure.
  J* Put(J value) {
    if (stack_.empty()) {
      root_ = std::move(value);
      return &root_;
    }
    Frame& top = stack_.back();
    if (top.container->is_array()) {
      top.container->push_back(std::move(value));
      return &top.container->back();
    }
    return PutMember(top, std::move(value));
  }

  J* PutMember(Frame& top, J value) {
    auto* object = top.container->template get_ptr<typename J::object_t*>();
    // ordered_json's object_t derives from a vector of members.
    constexpr bool kOrdered =
        std::is_base_of_v<std::vector<std::pair<const std::string, J>>,
                          typename J::object_t>;
    if constexpr (kOrdered) {
      // The vector under ordered_map: append without its linear search.
      auto& members =
          static_cast<std::vector<std::pair<const std::string, J>>&>(*object);
      size_t existing = members.size();
      if (members.size() < kIndexFrom) {
        for (size_t i = 0; i < members.size(); ++i) {
          if (members[i].first == pending_key_) {
            existing = i;
            break;
          }
        }
      } else {
        if (top.index.empty()) {
          top.index.reserve(members.size() * 2);
          for (size_t i = 0; i < members.size(); ++i) {
            top.index.emplace(members[i].first, i);
          }
        }
        auto it = top.index.find(pending_key_);
        if (it != top.index.end()) existing = it->second;
      }
      if (existing < members.size()) {
        if (!Duplicate()) return nullptr;
        members[existing].second = std::move(value);
        return &members[existing].second;
      }
      if (!RoomForMember(members.size())) return nullptr;
      if (!top.index.empty()) top.index.emplace(pending_key_, members.size());
      members.emplace_back(pending_key_, std::move(value));
      return &members.back().second;
    } else {
      auto it = object->find(pending_key_);
      if (it != object->end()) {
        if (!Duplicate()) return nullptr;
        it->second = std::move(value);
        return &it->second;
      }
      if (!RoomForMember(object->size())) return nullptr;
      return &object->emplace(pending_key_, std::move(value)).first->second;
    }
  }

  bool Duplicate() {
    if (!limits_.reject_duplicate_keys) return true;
    Fail(JsonParseError::Kind::kDuplicateKey, 0,
         fmt::format("key \"{}\" appears twice in one object", pending_key_));
    return false;
  }

  bool RoomForMember(size_t size) {
    if (size < limits_.max_object_keys) return true;
    Fail(JsonParseError::Kind::kTooManyKeys, 0,
         fmt::format("a JSON object has more than {} keys (the limit)",
                     limits_.max_object_keys));
    return false;
  }

  const JsonLimits& limits_;
  J root_;
  std::vector<Frame> stack_;
  string_t pending_key_;
  Status status_;
  JsonParseError error_;
};

template <class J>
StatusOr<J> Parse(std::string_view text, const JsonLimits& limits,
                  JsonParseError* error) {
  BoundedBuilder<J> builder(limits);
  bool ok = false;
  try {
    ok = J::sax_parse(text.begin(), text.end(), &builder);
  } catch (const std::exception& e) {
    // sax_parse reports through parse_error; this is for allocation failure.
    if (error != nullptr) *error = JsonParseError{};
    return InvalidArgumentError(
        fmt::format("JSON could not be read: {}", e.what()));
  }
  if (!ok) {
    if (error != nullptr) *error = builder.error();
    if (builder.status().ok()) {
      return InvalidArgumentError("JSON could not be parsed");
    }
    return builder.status();
  }
  return builder.TakeRoot();
}

}  // namespace

StatusOr<nlohmann::json> ParseBoundedJson(std::string_view text,
                                          const JsonLimits& limits,
                                          JsonParseError* error) {
  return Parse<nlohmann::json>(text, limits, error);
}

StatusOr<nlohmann::ordered_json> ParseBoundedOrderedJson(
    std::string_view text, const JsonLimits& limits, JsonParseError* error) {
  return Parse<nlohmann::ordered_json>(text, limits, error);
}

}  // namespace tessera
