#include "tokenizer/jinja/value.h"

#include <fmt/format.h>

#include <limits>

#include "tokenizer/jinja/render_budget.h"
#include "tokenizer/jinja/text.h"

namespace tessera::jinja {

Value Value::Undefined(std::string hint) {
  Value v;
  v.data_ = UndefinedData{std::make_shared<const std::string>(std::move(hint))};
  return v;
}

Value Value::None() {
  Value v;
  v.data_ = std::monostate();
  return v;
}

Value::Value(std::string s) {
  if (RenderBudget* budget = RenderBudget::Current()) budget->Charge(s.size());
  data_ = std::make_shared<const std::string>(std::move(s));
}

Value Value::List(ValueList items) {
  Value v;
  v.data_ = std::make_shared<const ListData>(ListData{std::move(items), false});
  return v;
}

Value Value::Tuple(ValueList items) {
  Value v;
  v.data_ = std::make_shared<const ListData>(ListData{std::move(items), true});
  return v;
}

Value Value::Dict(ValueDict dict) {
  Value v;
  v.data_ = std::make_shared<const ValueDict>(std::move(dict));
  return v;
}

Value Value::Function(std::string name, NativeFunction fn) {
  Value v;
  v.data_ = std::make_shared<const Callable>(
      Callable{std::move(name), std::move(fn)});
  return v;
}

Value Value::NewNamespace(ValueDict attrs, bool assignable,
                          std::string type_name) {
  Value v;
  v.data_ = std::make_shared<Namespace>(
      Namespace{std::move(attrs), assignable, std::move(type_name)});
  return v;
}

StatusOr<Value> Value::FromJson(const nlohmann::ordered_json& json) {
  using Type = nlohmann::ordered_json::value_t;
  switch (json.type()) {
    case Type::null:
      return None();
    case Type::boolean:
      return Value(json.get<bool>());
    case Type::number_integer:
      return Value(json.get<int64_t>());
    case Type::number_unsigned: {
      const uint64_t u = json.get<uint64_t>();
      if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        return InvalidArgumentError(fmt::format(
            "integer {} is too large for the template engine (limit {})", u,
            std::numeric_limits<int64_t>::max()));
      }
      return Value(static_cast<int64_t>(u));
    }
    case Type::number_float:
      return Value(json.get<double>());
    case Type::string:
      return Value(json.get<std::string>());
    case Type::array: {
      ValueList items;
      items.reserve(json.size());
      for (const auto& item : json) {
        TSR_ASSIGN_OR_RETURN(Value v, FromJson(item));
        items.push_back(std::move(v));
      }
      return List(std::move(items));
    }
    case Type::object: {
      ValueDict dict;
      for (const auto& [key, item] : json.items()) {
        TSR_ASSIGN_OR_RETURN(Value v, FromJson(item));
        dict.Set(key, std::move(v));
      }
      return Dict(std::move(dict));
    }
    default:
      return InvalidArgumentError(
          "binary JSON values cannot be passed to a template");
  }
}

bool Value::is_tuple() const {
  return is_list() && std::get<ListPtr>(data_)->tuple;
}

int64_t Value::int_value() const {
  if (is_bool()) return bool_value() ? 1 : 0;
  return std::get<int64_t>(data_);
}

double Value::number_value() const {
  if (is_float()) return std::get<double>(data_);
  return static_cast<double>(int_value());
}

const std::string& Value::undefined_hint() const {
  static const std::string kEmpty;
  const auto& hint = std::get<UndefinedData>(data_).hint;
  return hint ? *hint : kEmpty;
}

bool Value::Truthy() const {
  switch (kind()) {
    case Kind::kUndefined:
    case Kind::kNone:
      return false;
    case Kind::kBool:
      return bool_value();
    case Kind::kInt:
      return int_value() != 0;
    case Kind::kFloat:
      return number_value() != 0.0;
    case Kind::kString:
      return !str().empty();
    case Kind::kList:
      return !list().empty();
    case Kind::kDict:
      return !dict().empty();
    case Kind::kCallable:
    case Kind::kNamespace:
      return true;
  }
  return false;
}

std::string Value::TypeName() const {
  switch (kind()) {
    case Kind::kUndefined:
      return "Undefined";
    case Kind::kNone:
      return "NoneType";
    case Kind::kBool:
      return "bool";
    case Kind::kInt:
      return "int";
    case Kind::kFloat:
      return "float";
    case Kind::kString:
      return "str";
    case Kind::kList:
      return is_tuple() ? "tuple" : "list";
    case Kind::kDict:
      return "dict";
    case Kind::kCallable:
      return "function";
    case Kind::kNamespace:
      return ns().type_name;
  }
  return "object";
}

std::string Value::ToStr() const {
  switch (kind()) {
    case Kind::kUndefined:
      return "";
    case Kind::kString:
      return str();
    default:
      return Repr();
  }
}

std::string Value::Repr() const {
  switch (kind()) {
    case Kind::kUndefined:
      return "";
    case Kind::kNone:
      return "None";
    case Kind::kBool:
      return bool_value() ? "True" : "False";
    case Kind::kInt:
      return std::to_string(int_value());
    case Kind::kFloat:
      return text::FormatFloat(number_value());
    case Kind::kString:
      return text::Repr(str());
    case Kind::kList: {
      std::string out = is_tuple() ? "(" : "[";
      const ValueList& items = list();
      for (size_t i = 0; i < items.size(); ++i) {
        if (i > 0) out += ", ";
        out += items[i].Repr();
      }
      if (is_tuple() && items.size() == 1) out += ",";
      out += is_tuple() ? ")" : "]";
      return out;
    }
    case Kind::kDict: {
      std::string out = "{";
      bool first = true;
      for (const auto& [key, value] : dict()) {
        if (!first) out += ", ";
        first = false;
        out += text::Repr(key) + ": " + value.Repr();
      }
      return out + "}";
    }
    case Kind::kCallable:
      return fmt::format("<function {}>", callable().name);
    case Kind::kNamespace: {
      std::string out = "<" + ns().type_name + " {";
      bool first = true;
      for (const auto& [key, value] : ns().attrs) {
        if (!first) out += ", ";
        first = false;
        out += text::Repr(key) + ": " + value.Repr();
      }
      return out + "}>";
    }
  }
  return "";
}

bool Value::SameAs(const Value& other) const {
  if (kind() != other.kind()) return false;
  switch (kind()) {
    case Kind::kUndefined:
    case Kind::kNone:
      return true;
    case Kind::kBool:
      return bool_value() == other.bool_value();
    case Kind::kInt:
      return int_value() == other.int_value();
    case Kind::kFloat:
      return number_value() == other.number_value();
    case Kind::kString:
      return std::get<StringPtr>(data_) == std::get<StringPtr>(other.data_) ||
             str() == other.str();
    case Kind::kList:
      return std::get<ListPtr>(data_) == std::get<ListPtr>(other.data_);
    case Kind::kDict:
      return std::get<DictPtr>(data_) == std::get<DictPtr>(other.data_);
    case Kind::kCallable:
      return std::get<CallablePtr>(data_) == std::get<CallablePtr>(other.data_);
    case Kind::kNamespace:
      return std::get<NamespacePtr>(data_) ==
             std::get<NamespacePtr>(other.data_);
  }
  return false;
}

const Value* ValueDict::Find(std::string_view key) const {
  if (!index_.empty()) {
    const auto it = index_.find(std::string(key));
    return it == index_.end() ? nullptr : &entries_[it->second].second;
  }
  for (const auto& entry : entries_) {
    if (entry.first == key) return &entry.second;
  }
  return nullptr;
}

void ValueDict::Set(std::string key, Value value) {
  if (const Value* existing = Find(key)) {
    *const_cast<Value*>(existing) = std::move(value);
    return;
  }
  entries_.emplace_back(std::move(key), std::move(value));
  if (!index_.empty()) {
    index_.emplace(entries_.back().first, entries_.size() - 1);
  } else if (entries_.size() > kIndexThreshold) {
    for (size_t i = 0; i < entries_.size(); ++i) {
      index_.emplace(entries_[i].first, i);
    }
  }
}

}  // namespace tessera::jinja
