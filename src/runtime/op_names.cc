#include "runtime/op_names.h"

#include <fmt/format.h>

#include <array>
#include <utility>

#include "base/env.h"

namespace tessera::runtime {
namespace {

constexpr std::array<std::pair<tsr_op_id, std::string_view>, 13> kOps = {{
    {TSR_OP_EMBEDDING, "embedding"},
    {TSR_OP_RMS_NORM, "rms_norm"},
    {TSR_OP_ADD_RMS_NORM, "add_rms_norm"},
    {TSR_OP_LINEAR, "linear"},
    {TSR_OP_ROPE, "rope"},
    {TSR_OP_KV_STORE, "kv_store"},
    {TSR_OP_PAGED_ATTENTION, "paged_attention"},
    {TSR_OP_SILU_AND_MUL, "silu_and_mul"},
    {TSR_OP_ADD, "add"},
    {TSR_OP_CAST, "cast"},
    {TSR_OP_ARGMAX, "argmax"},
    {TSR_OP_SAMPLE, "sample"},
    {TSR_OP_LOGPROBS, "logprobs"},
}};
static_assert(kOps.size() + 1 == TSR_OP_COUNT_V1,
              "every v1 op needs a name here");

// The fused ops (ABI 1.2+).
constexpr std::array<std::pair<tsr_op_id, std::string_view>, 1> kFusedOps = {{
    {TSR_OP_DECODER_LAYER, "decoder_layer"},
}};

}  // namespace

const std::vector<tsr_op_id>& FusedOps() {
  static const std::vector<tsr_op_id> ops = [] {
    std::vector<tsr_op_id> v;
    for (const auto& [id, name] : kFusedOps) v.push_back(id);
    return v;
  }();
  return ops;
}

const std::vector<tsr_op_id>& AllOpsV1() {
  static const std::vector<tsr_op_id> ops = [] {
    std::vector<tsr_op_id> v;
    for (const auto& [id, name] : kOps) v.push_back(id);
    return v;
  }();
  return ops;
}

std::string OpName(tsr_op_id op) {
  for (const auto& [id, name] : kOps) {
    if (id == op) return std::string(name);
  }
  for (const auto& [id, name] : kFusedOps) {
    if (id == op) return std::string(name);
  }
  if (op >= TSR_OP_FUSED_BASE) return fmt::format("fused_{}", op);
  return fmt::format("op_{}", op);
}

std::optional<tsr_op_id> OpIdFromName(std::string_view name) {
  for (const auto& [id, op_name] : kOps) {
    if (op_name == name) return id;
  }
  for (const auto& [id, op_name] : kFusedOps) {
    if (op_name == name) return id;
  }
  return std::nullopt;
}

std::string ValidOpNames() {
  std::string out;
  for (const auto& [id, name] : kOps) {
    if (!out.empty()) out += ", ";
    out += name;
  }
  for (const auto& [id, name] : kFusedOps) out += fmt::format(", {}", name);
  return out;
}

StatusOr<std::set<tsr_op_id>> ParseOpNameList(const std::string& text,
                                              std::string_view source) {
  std::set<tsr_op_id> ops;
  for (const std::string& item : SplitList(text, ',')) {
    auto id = OpIdFromName(item);
    if (!id) {
      return InvalidArgumentError(
          fmt::format("{} names an unknown op '{}'; valid op names are: {}",
                      source, item, ValidOpNames()));
    }
    ops.insert(*id);
  }
  return ops;
}

}  // namespace tessera::runtime
