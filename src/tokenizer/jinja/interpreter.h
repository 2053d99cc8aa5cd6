// Interpreter of the Jinja engine: walks a parsed template and writes its
// output.
//
// Scoping follows Jinja: each for-loop iteration, macro call, `with` block
// and block `set` runs in a child scope, so a `{% set %}` inside a loop is
// gone after the iteration (templates carry state out through namespace()
// objects); `if` blocks share their enclosing scope. Each render has its own
// scopes, so one parsed template may be rendered from several threads at
// once.
#ifndef TESSERA_TOKENIZER_JINJA_INTERPRETER_H_
#define TESSERA_TOKENIZER_JINJA_INTERPRETER_H_

#include <string>

#include "base/status.h"
#include "tokenizer/jinja/ast.h"
#include "tokenizer/jinja/value.h"

namespace tessera::jinja {

// Renders `body` with `variables` visible on top of the globals.
StatusOr<std::string> RenderBody(const Body& body, const ValueDict& variables);

}  // namespace tessera::jinja

#endif  // TESSERA_TOKENIZER_JINJA_INTERPRETER_H_
