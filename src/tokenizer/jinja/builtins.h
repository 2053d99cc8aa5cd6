// The built-ins of the Jinja engine: filters, tests, attribute and item
// access (with the str/dict methods templates call), and global functions,
// with the semantics of Jinja 3 inside Hugging Face's
// ImmutableSandboxedEnvironment.
//
// Anything outside the supported set is an error naming it and the template
// line, never a silent fallback. Stateless; thread-safe.
#ifndef TESSERA_TOKENIZER_JINJA_BUILTINS_H_
#define TESSERA_TOKENIZER_JINJA_BUILTINS_H_

#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "tokenizer/jinja/value.h"

namespace tessera::jinja {

// One parameter of a built-in; no default means required.
struct Param {
  std::string_view name;
  std::optional<Value> default_value;
};

// Binds positional and keyword arguments to `params` as Python would,
// returning one Value per parameter. `what` names the callee in errors
// ("filter 'indent'").
StatusOr<std::vector<Value>> BindArgs(std::string_view what,
                                      const CallArgs& args,
                                      std::initializer_list<Param> params);

// `input | name(args)`. Unknown names are UNIMPLEMENTED errors.
StatusOr<Value> ApplyFilter(std::string_view name, const Value& input,
                            const CallArgs& args);
bool HasFilter(std::string_view name);

// `input is name(args)`.
StatusOr<bool> ApplyTest(std::string_view name, const Value& input,
                         const CallArgs& args);
bool HasTest(std::string_view name);

// `object.name`: Python attribute first (str and dict methods, namespace
// attributes), then the item; missing gives Undefined. Reading an attribute
// of Undefined is an error, as in Jinja. Methods the sandbox forbids
// (list.append, dict.update, ...) are errors.
StatusOr<Value> GetAttr(const Value& object, const std::string& name, int line);

// `object[key]`: the item first, then (for string keys) the attribute.
StatusOr<Value> GetItem(const Value& object, const Value& key, int line);

// Global functions: range, namespace, dict, raise_exception, strftime_now.
const ValueDict& Globals();

}  // namespace tessera::jinja

#endif  // TESSERA_TOKENIZER_JINJA_BUILTINS_H_
