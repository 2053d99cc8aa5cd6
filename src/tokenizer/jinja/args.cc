#include <fmt/format.h>

#include "tokenizer/jinja/builtins.h"
#include "tokenizer/jinja/operations.h"

namespace tessera::jinja {

StatusOr<std::vector<Value>> BindArgs(std::string_view what,
                                      const CallArgs& args,
                                      std::initializer_list<Param> params) {
  std::vector<Value> out(params.size());
  std::vector<bool> bound(params.size(), false);
  if (args.positional.size() > params.size()) {
    return TemplateError(
        args.line, fmt::format("{} takes at most {} argument(s) ({} given)",
                               what, params.size(), args.positional.size()));
  }
  for (size_t i = 0; i < args.positional.size(); ++i) {
    out[i] = args.positional[i];
    bound[i] = true;
  }
  for (const auto& [name, value] : args.keyword) {
    size_t i = 0;
    for (const Param& p : params) {
      if (p.name == name) break;
      ++i;
    }
    if (i == params.size()) {
      return TemplateError(args.line,
                           fmt::format("{} got an unexpected keyword argument "
                                       "'{}'",
                                       what, name));
    }
    if (bound[i]) {
      return TemplateError(
          args.line,
          fmt::format("{} got multiple values for argument '{}'", what, name));
    }
    out[i] = value;
    bound[i] = true;
  }
  size_t i = 0;
  for (const Param& p : params) {
    if (!bound[i]) {
      if (!p.default_value) {
        return TemplateError(
            args.line,
            fmt::format("{} is missing required argument '{}'", what, p.name));
      }
      out[i] = *p.default_value;
    }
    ++i;
  }
  return out;
}

}  // namespace tessera::jinja
