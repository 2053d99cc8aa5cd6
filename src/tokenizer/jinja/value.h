// Value: the dynamic value of the Jinja engine, modelled on the Python
// objects Jinja templates see (None, bool, int, float, str, list, tuple, dict,
// Jinja's Undefined, functions/macros and namespaces).
//
// Strings, lists and dicts are immutable and shared by pointer, so copying a
// Value is cheap; a Namespace is the one mutable object (shared by every copy,
// as in Python). Dicts have string keys and keep insertion order (Python 3.7+),
// which `tojson` relies on. Values are thread-compatible; the immutable kinds
// may be read from several threads at once.
#ifndef TESSERA_TOKENIZER_JINJA_VALUE_H_
#define TESSERA_TOKENIZER_JINJA_VALUE_H_

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include "base/status.h"

namespace tessera::jinja {

class Value;
class ValueDict;
using ValueList = std::vector<Value>;

// Arguments of a call, with the template line of the call for error messages.
struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;
  int line = 0;
};

// A function callable from a template: a built-in, a bound method or a macro.
using NativeFunction = std::function<StatusOr<Value>(const CallArgs&)>;

struct Callable {
  std::string name;  // for messages: "range", "macro 'foo'", "str.split"
  NativeFunction fn;
};

struct Namespace;

class Value {
 public:
  enum class Kind {
    kUndefined,
    kNone,
    kBool,
    kInt,
    kFloat,
    kString,
    kList,  // a list or a tuple (see is_tuple)
    kDict,
    kCallable,
    kNamespace,
  };

  // An Undefined value; `hint` says why, for error messages
  // ("'x' is undefined", "'dict object' has no attribute 'y'").
  Value() = default;
  static Value Undefined(std::string hint);
  static Value None();
  Value(bool b) : data_(b) {}                           // NOLINT
  Value(int64_t i) : data_(i) {}                        // NOLINT
  Value(int i) : data_(static_cast<int64_t>(i)) {}      // NOLINT
  Value(double d) : data_(d) {}                         // NOLINT
  Value(std::string s);                                 // NOLINT
  Value(std::string_view s) : Value(std::string(s)) {}  // NOLINT
  Value(const char* s) : Value(std::string(s)) {}       // NOLINT
  static Value List(ValueList items);
  static Value Tuple(ValueList items);
  static Value Dict(ValueDict dict);
  static Value Function(std::string name, NativeFunction fn);
  static Value NewNamespace(ValueDict attrs, bool assignable,
                            std::string type_name);

  // Converts parsed JSON (objects keep their key order). Fails only for an
  // unsigned integer beyond int64 or binary data.
  static StatusOr<Value> FromJson(const nlohmann::ordered_json& json);

  Kind kind() const { return static_cast<Kind>(data_.index()); }
  bool is_undefined() const { return kind() == Kind::kUndefined; }
  bool is_none() const { return kind() == Kind::kNone; }
  bool is_bool() const { return kind() == Kind::kBool; }
  bool is_int() const { return kind() == Kind::kInt; }
  bool is_float() const { return kind() == Kind::kFloat; }
  // Python's numbers.Number: bool, int and float.
  bool is_number() const { return is_bool() || is_int() || is_float(); }
  // bool or int (Python's bool is an int).
  bool is_integral() const { return is_bool() || is_int(); }
  bool is_string() const { return kind() == Kind::kString; }
  bool is_list() const { return kind() == Kind::kList; }
  bool is_tuple() const;
  bool is_dict() const { return kind() == Kind::kDict; }
  bool is_callable() const { return kind() == Kind::kCallable; }
  bool is_namespace() const { return kind() == Kind::kNamespace; }

  bool bool_value() const { return std::get<bool>(data_); }
  // The int of a bool or int.
  int64_t int_value() const;
  // The double of a bool, int or float.
  double number_value() const;
  const std::string& str() const { return *std::get<StringPtr>(data_); }
  const ValueList& list() const { return std::get<ListPtr>(data_)->items; }
  const ValueDict& dict() const { return *std::get<DictPtr>(data_); }
  const Callable& callable() const { return *std::get<CallablePtr>(data_); }
  Namespace& ns() const { return *std::get<NamespacePtr>(data_); }
  const std::string& undefined_hint() const;

  // Python truthiness (Undefined is false).
  bool Truthy() const;
  // Python's type name: 'str', 'int', 'dict', 'NoneType', 'Undefined', ...
  std::string TypeName() const;
  // Python str(): Undefined prints as "", None as "None", lists as repr.
  std::string ToStr() const;
  // Python repr(): strings quoted.
  std::string Repr() const;
  // Identity for reference kinds, value equality for the others (Python's
  // `is` as far as templates can observe it).
  bool SameAs(const Value& other) const;

 private:
  struct UndefinedData {
    std::shared_ptr<const std::string> hint;
  };
  struct ListData {
    ValueList items;
    bool tuple = false;
  };
  using StringPtr = std::shared_ptr<const std::string>;
  using ListPtr = std::shared_ptr<const ListData>;
  using DictPtr = std::shared_ptr<const ValueDict>;
  using CallablePtr = std::shared_ptr<const Callable>;
  using NamespacePtr = std::shared_ptr<Namespace>;

  // The alternatives are in Kind order.
  std::variant<UndefinedData, std::monostate, bool, int64_t, double, StringPtr,
               ListPtr, DictPtr, CallablePtr, NamespacePtr>
      data_;
};

// An insertion-ordered map from string keys to Values (a Python dict).
class ValueDict {
 public:
  using Entry = std::pair<std::string, Value>;

  const Value* Find(std::string_view key) const;
  // Inserts at the end, or replaces the value in place when the key exists.
  void Set(std::string key, Value value);

  size_t size() const { return entries_.size(); }
  bool empty() const { return entries_.empty(); }
  std::vector<Entry>::const_iterator begin() const { return entries_.begin(); }
  std::vector<Entry>::const_iterator end() const { return entries_.end(); }

 private:
  static constexpr size_t kIndexThreshold = 16;
  std::vector<Entry> entries_;
  // key -> position in entries_; built once the dict outgrows a linear scan.
  std::unordered_map<std::string, size_t> index_;
};

// A mutable attribute bag: Jinja's namespace() object, and the loop variable.
struct Namespace {
  ValueDict attrs;
  bool assignable = true;  // false for `loop`
  std::string type_name;   // "Namespace" or "LoopContext"
};

}  // namespace tessera::jinja

#endif  // TESSERA_TOKENIZER_JINJA_VALUE_H_
