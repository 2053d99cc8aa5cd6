// Errors: malformed templates, constructs outside the supported subset, and
// runtime failures all give a Status naming the construct and its line.
#include <gtest/gtest.h>

#include "tokenizer/jinja/test_util.h"

namespace tessera::jinja {
namespace {

using testing::Err;
using testing::Json;

struct ErrorCase {
  const char* source;
  StatusCode code;
  const char* message;  // the whole message, "line N: ..."
};

TEST(ErrorsTest, UnsupportedConstructsAreNamedWithTheirLine) {
  const ErrorCase cases[] = {
      {"ok\n{% foo %}", StatusCode::kInvalidArgument,
       "line 2: unknown tag 'foo' (Hugging Face's chat template environment "
       "does not define it)"},
      {"\n\n{% do x %}", StatusCode::kInvalidArgument,
       "line 3: unknown tag 'do' (Hugging Face's chat template environment "
       "does not define it)"},
      {"{% include 'other.jinja' %}", StatusCode::kUnimplemented,
       "line 1: tag 'include' is not supported: chat templates are a single "
       "file and load no other templates"},
      {"a\n{{ x|wordwrap(3) }}", StatusCode::kUnimplemented,
       "line 2: filter 'wordwrap' is not supported"},
      {"a\nb\n{% if x is prime %}{% endif %}", StatusCode::kUnimplemented,
       "line 3: test 'prime' is not supported"},
      {"{{ 'a'.zfill(3) }}", StatusCode::kUnimplemented,
       "line 1: string method 'zfill' is not supported"},
      {"{{ '%s' % 1 }}", StatusCode::kUnimplemented,
       "line 1: printf-style string formatting ('...' % args) is not "
       "supported; use '~' or str.format()"},
      {"{% for x in y recursive %}{% endfor %}", StatusCode::kUnimplemented,
       "line 1: recursive for loops are not supported"},
      {"{{ cycler(1, 2) }}", StatusCode::kUnimplemented,
       "line 1: global function 'cycler' is not supported"},
      {"{{ {1: 'a'} }}", StatusCode::kUnimplemented,
       "line 1: dict keys must be strings (got 'int')"},
  };
  for (const ErrorCase& c : cases) {
    const Status s = Err(c.source);
    EXPECT_EQ(s.code(), c.code) << c.source << " -> " << s.ToString();
    EXPECT_EQ(s.message(), c.message) << c.source;
  }
}

TEST(ErrorsTest, SyntaxErrors) {
  const ErrorCase cases[] = {
      {"{% if x %}\nopen", StatusCode::kInvalidArgument,
       "line 1: 'if' block is never closed with '{% endif %}'"},
      {"x\n{% endfor %}", StatusCode::kInvalidArgument,
       "line 2: unexpected 'endfor': no open block ends here"},
      {"{% for x in y %}\n{% endif %}", StatusCode::kInvalidArgument,
       "line 2: unexpected 'endif'; expected 'endfor'"},
      {"{{ 1 + }}", StatusCode::kInvalidArgument,
       "line 1: expected an expression, got '}}'"},
      {"{% set = 1 %}", StatusCode::kInvalidArgument,
       "line 1: expected a variable name, got '='"},
      {"\n{% break %}", StatusCode::kInvalidArgument,
       "line 2: 'break' outside of a loop"},
      {"{% for loop in x %}{% endfor %}", StatusCode::kInvalidArgument,
       "line 1: cannot assign to the special loop variable 'loop' in a for "
       "loop"},
      {"{% macro m(a=1, b) %}{% endmacro %}", StatusCode::kInvalidArgument,
       "line 1: non-default argument follows default argument"},
      {"{{ 'unterminated }}", StatusCode::kInvalidArgument,
       "line 1: unterminated string literal"},
  };
  for (const ErrorCase& c : cases) {
    const Status s = Err(c.source);
    EXPECT_EQ(s.code(), c.code) << c.source << " -> " << s.ToString();
    EXPECT_EQ(s.message(), c.message) << c.source;
  }
}

TEST(ErrorsTest, RuntimeErrorsFollowJinja) {
  const ErrorCase cases[] = {
      // Undefined prints as nothing, but using it further is an error.
      {"{{ x.y }}", StatusCode::kInvalidArgument,
       "line 1: 'x' is undefined (reading its attribute 'y')"},
      {"\n{{ m.a.b }}", StatusCode::kInvalidArgument,
       "line 2: 'dict object' has no attribute 'a' (reading its attribute "
       "'b')"},
      {"{{ x + 1 }}", StatusCode::kInvalidArgument, "line 1: 'x' is undefined"},
      {"{{ f() }}", StatusCode::kInvalidArgument,
       "line 1: 'f' is undefined (calling it)"},
      {"{{ x|tojson }}", StatusCode::kInvalidArgument,
       "line 1: tojson: Object of type Undefined is not JSON serializable"},
      {"{{ 'a' + 1 }}", StatusCode::kInvalidArgument,
       "line 1: unsupported operand type(s) for +: 'str' and 'int'"},
      {"{{ 1 < 'a' }}", StatusCode::kInvalidArgument,
       "line 1: '<' not supported between instances of 'int' and 'str'"},
      {"{{ 1 / 0 }}", StatusCode::kInvalidArgument, "line 1: division by zero"},
      {"{% for x in 3 %}{% endfor %}", StatusCode::kInvalidArgument,
       "line 1: 'int' object is not iterable"},
      {"{% for a, b in [[1, 2, 3]] %}{% endfor %}",
       StatusCode::kInvalidArgument,
       "line 1: too many values to unpack (expected 2)"},
      {"{% set x = {} %}{% set x.y = 1 %}", StatusCode::kInvalidArgument,
       "line 1: cannot assign attribute 'y' on 'x': it is not a namespace() "
       "object"},
      {"{% macro f(a) %}{% endmacro %}{{ f(1, 2) }}",
       StatusCode::kInvalidArgument,
       "line 1: macro 'f' takes not more than 1 argument(s)"},
      {"{{ [1, 'a']|sort }}", StatusCode::kInvalidArgument,
       "line 1: '<' not supported between instances of 'str' and 'int'"},
      {"{{ range(200000)|length }}", StatusCode::kInvalidArgument,
       "line 1: range too big: the sandbox allows at most 100000 items"},
      {"{{ 1 is defined(2) }}", StatusCode::kInvalidArgument,
       "line 1: test 'defined' takes at most 0 argument(s) (1 given)"},
      {"{{ 1 is eq }}", StatusCode::kInvalidArgument,
       "line 1: test '==' is missing required argument 'other'"},
      {"{{ 'x'|indent(bogus=1) }}", StatusCode::kInvalidArgument,
       "line 1: filter 'indent' got an unexpected keyword argument 'bogus'"},
      {"{% macro f(n) %}{{ f(n) }}{% endmacro %}{{ f(1) }}",
       StatusCode::kInvalidArgument,
       "line 1: macro 'f': recursion is deeper than 100 calls"},
  };
  for (const ErrorCase& c : cases) {
    const Status s = Err(c.source, Json{{"m", Json::object()}});
    EXPECT_EQ(s.code(), c.code) << c.source << " -> " << s.ToString();
    EXPECT_EQ(s.message(), c.message) << c.source;
  }
}

TEST(ErrorsTest, SandboxRefusesMutation) {
  for (const char* source :
       {"{% set l = [1] %}{{ l.append(2) }}",
        "{% set d = {} %}{{ d.update({'a': 1}) }}", "{{ messages.pop() }}"}) {
    const Status s = Err(source, Json{{"messages", Json::array()}});
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(s.message().find("is unsafe"), std::string::npos) << s.message();
  }
}

// Namespaces are the one mutable kind: storing one inside itself (the
// fuzzer's find: repr then recursed without end) or nesting without bound
// through one is refused, naming the assignment.
TEST(ErrorsTest, NamespaceCyclesAndUnboundedNestingAreRefused) {
  for (const char* source :
       {"{% set ns = namespace(n=0) %}{% set ns.n = ns %}{{ ns }}",
        "{% set ns = namespace(n=0) %}{% set ns.n = [1, {'a': ns}] %}",
        "{% set a = namespace(x=0) %}{% set b = namespace(y=a) %}"
        "{% set a.x = b %}{{ a }}",
        "{% set ns = namespace(n=0) %}{% for i in range(1000) %}"
        "{% set ns.n = [ns.n] %}{% endfor %}{{ ns.n }}"}) {
    const Status s = Err(source);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << source;
    EXPECT_NE(s.message().find("cannot assign"), std::string::npos)
        << s.message();
  }
  // A namespace holding another (no cycle) and moderate nesting still work.
  EXPECT_EQ(testing::R("{% set a = namespace(x=0) %}{% set b = namespace(y=a) %}"
                       "{% set ns = namespace(n=0) %}{% for i in range(3) %}"
                       "{% set ns.n = [ns.n] %}{% endfor %}{{ ns.n }}"),
            "[[[0]]]");
}

TEST(ErrorsTest, UnsupportedBranchNotTakenStillRenders) {
  // As in Jinja, a filter is looked up when it runs, so a template with an
  // unsupported filter in a branch it does not take still renders.
  auto r = testing::Render("{% if false %}{{ x|wordwrap }}{% endif %}ok");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, "ok");
}

}  // namespace
}  // namespace tessera::jinja
