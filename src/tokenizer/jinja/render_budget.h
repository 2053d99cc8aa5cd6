// RenderBudget: what one render of a template may spend, so that a template
// which never ends (three nested 100,000-item loops) or grows without bound
// (string doubling, replace and join bombs) fails with a clear error instead
// of hanging a server thread or exhausting the machine's memory.
//
// Three limits, each a TemplateError naming it when exceeded:
//   - kMaxRenderSteps: statements plus expressions evaluated in one render;
//   - kMaxStringBytes: the size of any one string a template builds, and of
//     the rendered output; operations that could build a larger one check
//     the size they would produce before allocating (CheckStringSize);
//   - kMaxCreatedBytes: the bytes of all strings created in one render
//     (counted as Values are made), which bounds memory however the strings
//     are kept (in lists, dicts, namespaces).
// Real chat templates spend a small fraction of each (Qwen3's, on a
// 100-message conversation with tools: tens of thousands of steps).
//
// Thread-safety: a budget belongs to the render on the thread that installed
// it (Scope); Current() is thread-local, so concurrent renders on other
// threads have their own.
#ifndef TESSERA_TOKENIZER_JINJA_RENDER_BUDGET_H_
#define TESSERA_TOKENIZER_JINJA_RENDER_BUDGET_H_

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "base/status.h"

namespace tessera::jinja {

inline constexpr int64_t kMaxRenderSteps = 10'000'000;
inline constexpr size_t kMaxStringBytes = size_t{64} << 20;
inline constexpr size_t kMaxCreatedBytes = size_t{512} << 20;

class RenderBudget {
 public:
  // Installs `budget` as this thread's current one for the Scope's life.
  class Scope {
   public:
    explicit Scope(RenderBudget* budget);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    RenderBudget* previous_;
  };

  // The budget of the render running on this thread; nullptr outside one.
  static RenderBudget* Current();

  // Counts one step; an error (at template line `line`) once the steps or
  // the created bytes are spent.
  Status Step(int line) { return Spend(1, line); }
  // Counts `steps` steps at once (work proportional to a size).
  Status Spend(int64_t steps, int line);
  // Records a string of `bytes` made by the render (checked at the next
  // Step: an operation that made it cannot fail where it stands).
  void Charge(size_t bytes) { created_bytes_ += bytes; }

  int64_t steps() const { return steps_; }
  size_t created_bytes() const { return created_bytes_; }

 private:
  int64_t steps_ = 0;
  size_t created_bytes_ = 0;
};

// A TemplateError when `what` (a string about to be built) would hold more
// than kMaxStringBytes bytes.
Status CheckStringSize(size_t bytes, int line, std::string_view what);

}  // namespace tessera::jinja

#endif  // TESSERA_TOKENIZER_JINJA_RENDER_BUDGET_H_
