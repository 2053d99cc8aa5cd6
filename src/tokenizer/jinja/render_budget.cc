#include "tokenizer/jinja/render_budget.h"

#include <fmt/format.h>

#include "tokenizer/jinja/operations.h"

namespace tessera::jinja {
namespace {

thread_local RenderBudget* current_budget = nullptr;

}  // namespace

RenderBudget::Scope::Scope(RenderBudget* budget) : previous_(current_budget) {
  current_budget = budget;
}

RenderBudget::Scope::~Scope() { current_budget = previous_; }

RenderBudget* RenderBudget::Current() { return current_budget; }

Status RenderBudget::Spend(int64_t steps, int line) {
  steps_ += steps;
  if (steps_ > kMaxRenderSteps) {
    return TemplateError(
        line, fmt::format("the template ran more than {} steps (the limit); "
                          "it probably never ends",
                          kMaxRenderSteps));
  }
  if (created_bytes_ > kMaxCreatedBytes) {
    return TemplateError(
        line, fmt::format("the template built more than {} MiB of strings "
                          "(the limit)",
                          kMaxCreatedBytes >> 20));
  }
  return OkStatus();
}

Status CheckStringSize(size_t bytes, int line, std::string_view what) {
  if (bytes <= kMaxStringBytes) return OkStatus();
  return TemplateError(
      line, fmt::format("{} would be {} bytes, more than the limit of {} MiB "
                        "for one string",
                        what, bytes, kMaxStringBytes >> 20));
}

}  // namespace tessera::jinja
