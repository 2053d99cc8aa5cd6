// decoder_layer v1 (fused, ABI 1.2), v2 (a tensor-parallel rank, ABI
// 1.4: the plan's two all_reduce steps run the rank's collective on this
// worker, in stream order) and v3 (ABI 1.5: its int8 projections as
// linear v3, w8a8) on the cpu plugin: the kit's plan of
// the layer (kit/decoder_layer_plan.h) run step by step with the plugin's
// own v1 kernels, inside one stream work item. What it saves against the
// unfused sequence is the per-op host work — ~14 launches per layer, each a
// dispatcher lookup, argument validation, an OpCall copy and a queue
// hand-off to the stream worker — which dominates small models.
//
// The intermediates live in a per-worker-thread arena that grows to the
// largest step seen and is then reused (no allocation per launch).
#include <cstdlib>
#include <memory>

#include "kit/decoder_layer_plan.h"
#include "collectives.h"
#include "ops.h"

namespace tessera::cpu {
namespace {

struct FreeDeleter {
  void operator()(char* p) const { std::free(p); }
};

// A 64-byte aligned arena that only grows.
class Arena {
 public:
  char* Reserve(size_t bytes) {
    if (bytes > size_) {
      size_t grown = (bytes + (1 << 20) - 1) & ~size_t{(1 << 20) - 1};
      data_.reset(static_cast<char*>(std::aligned_alloc(64, grown)));
      size_ = data_ != nullptr ? grown : 0;
    }
    return data_.get();
  }

 private:
  std::unique_ptr<char, FreeDeleter> data_;
  size_t size_ = 0;
};

}  // namespace

Status RunDecoderLayer(const OpCall& call, ExecContext& ctx) {
  thread_local plugin_kit::DecoderLayerPlan plan;
  thread_local Arena arena;
  TSR_CPU_RETURN_IF_ERROR(plugin_kit::PlanDecoderLayer(call, &plan));
  char* scratch = arena.Reserve(plan.scratch_bytes);
  if (scratch == nullptr && plan.scratch_bytes > 0) {
    return OutOfMemory("decoder_layer: cannot allocate ", plan.scratch_bytes,
                       " bytes of scratch for the layer's intermediates");
  }
  plan.Bind(scratch);
  for (const plugin_kit::PlanStep& step : plan.steps) {
    if (step.call.op == plugin_kit::kPlanAllReduce) {  // v2: a tensor-parallel rank
      Status s = RunLayerAllReduce(plan.comm, step.call.out[0], ctx);
      if (!s.ok()) {
        return Status(s.code(), StrCat("decoder_layer step ", step.what, ": ", s.message()));
      }
      continue;
    }
    OpRunFn run = FindOpRun(step.call.op, step.call.version);
    if (run == nullptr) {
      return Internal("decoder_layer: no kernel for step ", step.what);
    }
    Status s = run(step.call, ctx);
    if (!s.ok()) return Status(s.code(), StrCat("decoder_layer step ", step.what, ": ", s.message()));
  }
  return OkStatus();
}

}  // namespace tessera::cpu
