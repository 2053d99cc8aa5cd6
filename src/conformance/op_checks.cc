// ops: the plugin's op table (list_ops) and every signature in it, resolved
// and run over the cases of op_cases.h against reference/. Ops a plugin
// does not list are not checked (a plugin may implement a subset); entries
// that are not a known (op, version) — the v1 ops, linear v2 since ABI
// 1.1, the fused decoder_layer since 1.2 — or break a contract's dtype
// rules fail op.list, as does a TSR_CAP_FUSED_OPS bit that disagrees with
// the table.
#include <fmt/format.h>

#include <set>
#include <tuple>

#include "conformance/checks.h"
#include "conformance/op_cases.h"
#include "conformance/op_harness.h"
#include "reference/op_contracts.h"

namespace tessera::conformance {
namespace {

// Problems with the table as a whole; "" when it is well-formed.
std::string ValidateOpTable(const tsr_op_signature* ops, size_t count,
                            std::vector<bool>* valid) {
  valid->assign(count, false);
  if (count > 0 && ops == nullptr) {
    return fmt::format("list_ops returned {} entries but a NULL array", count);
  }
  std::vector<std::string> problems;
  std::set<std::tuple<tsr_op_id, uint32_t, std::vector<DType>>> seen;
  for (size_t i = 0; i < count; ++i) {
    const tsr_op_signature& s = ops[i];
    if (s.struct_size < sizeof(tsr_op_signature)) {
      problems.push_back(fmt::format("entry {}: struct_size {} < {}", i,
                                     s.struct_size, sizeof(tsr_op_signature)));
      continue;
    }
    Status st = reference::ValidateSignature(s);
    if (!st.ok()) {
      problems.push_back(
          fmt::format("entry {} (op id {}): {}", i, s.op, st.message()));
      continue;
    }
    std::vector<DType> dtypes(s.dtypes, s.dtypes + s.num_args);
    if (!seen.insert({s.op, s.version, dtypes}).second) {
      problems.push_back(fmt::format("entry {} ({} {}) is listed twice", i,
                                     reference::OpName(s.op),
                                     reference::SignatureTag(s.op, dtypes)));
      continue;
    }
    (*valid)[i] = true;
  }
  return fmt::format("{}", fmt::join(problems, "; "));
}

}  // namespace

void OpChecks(CheckContext& ctx, PluginEnv& env) {
  const tsr_plugin_api& api = env.api();
  const tsr_op_signature* ops = nullptr;
  size_t count = 0;
  std::vector<bool> valid;

  ctx.Run("op.list", [&]() -> Outcome {
    KIT_CHECK_CALL(env, api.list_ops(&ops, &count), "list_ops");
    std::string problems = ValidateOpTable(ops, count, &valid);
    if (!problems.empty()) return Fail(problems);
    std::set<std::string> names;
    bool fused = false;
    for (size_t i = 0; i < count; ++i) {
      names.insert(std::string(reference::OpName(ops[i].op)));
      fused = fused || reference::IsFusedOp(ops[i].op);
    }
    if (fused != env.HasCap(TSR_CAP_FUSED_OPS)) {
      return Fail(fmt::format(
          "the manifest's TSR_CAP_FUSED_OPS is {} but the table {} fused ops "
          "(ids >= {}); set the bit exactly when it lists one",
          env.HasCap(TSR_CAP_FUSED_OPS) ? "set" : "clear",
          fused ? "lists" : "lists no", TSR_OP_FUSED_BASE));
    }
    return Pass(fmt::format("{} signatures of {} ops", count, names.size()));
  });
  if (ops == nullptr && count == 0) {
    // op.list was filtered out or failed: read the table anyway.
    if (api.list_ops(&ops, &count) != TSR_OK) return;
    ValidateOpTable(ops, count, &valid);
  }

  const int device = 0;
  Stream stream;
  for (size_t i = 0; i < count; ++i) {
    if (!valid[i]) continue;
    const tsr_op_signature sig = ops[i];
    const std::vector<DType> dtypes(sig.dtypes, sig.dtypes + sig.num_args);
    // "op.rms_norm.f32" for v1; later versions name theirs, since several
    // versions share a signature: "op.linear.f32_wi8.v2", "...v3".
    const std::string prefix =
        fmt::format("op.{}.{}{}", reference::OpName(sig.op),
                    reference::SignatureTag(sig.op, dtypes),
                    sig.version >= 2 ? fmt::format(".v{}", sig.version) : std::string());
    tsr_kernel kernel = nullptr;
    std::string resolve_error;
    bool resolved = false;
    auto resolve = [&]() {
      if (resolved) return;
      resolved = true;
      tsr_status s = api.resolve_op(device, &sig, &kernel);
      if (s != TSR_OK) {
        resolve_error =
            env.Check(s, "resolve_op of a listed signature").message();
      } else if (kernel == nullptr) {
        resolve_error = "resolve_op returned TSR_OK but a NULL kernel";
      }
    };
    ctx.Run(prefix + ".resolve", [&]() -> Outcome {
      resolve();
      return resolve_error.empty() ? Pass() : Fail(resolve_error);
    });
    for (const CaseDef& def : MakeOpCases(sig.op, dtypes, sig.version)) {
      const std::string name = prefix + "." + def.name;
      ctx.Run(name, [&]() -> Outcome {
        resolve();
        if (!resolve_error.empty()) return Fail(resolve_error);
        if (stream.get() == nullptr) {
          KIT_ASSIGN_OR_FAIL(stream, env.NewStream(device));
        }
        const uint64_t seed = HashName(name);
        CaseBuilder builder(seed);
        OpCase c = def.build(builder);
        c.name = name;
        bool broken = false;
        Outcome o = RunOpCase(env, device, kernel, stream.get(), sig.op, c,
                              seed ^ 0x5eedull, &broken);
        if (broken) stream.Reset();  // drop its sticky error
        return o;
      });
    }
    // With several devices, the basic case on the last one as well (kernels
    // are resolved per device).
    const int last = env.device_count() - 1;
    if (last > 0) {
      const std::string name = fmt::format("{}.device{}", prefix, last);
      ctx.Run(name, [&]() -> Outcome {
        tsr_kernel k = nullptr;
        KIT_CHECK_CALL(env, api.resolve_op(last, &sig, &k),
                       fmt::format("resolve_op on device {}", last));
        KIT_ASSIGN_OR_FAIL(Stream s, env.NewStream(last));
        // The op's representative case: "basic" where it has one.
        CaseList cases = MakeOpCases(sig.op, dtypes, sig.version);
        const CaseDef* pick = cases.empty() ? nullptr : &cases.front();
        for (const char* want : {"plain", "mixed", "neox.basic", "basic"}) {
          for (const CaseDef& def : cases) {
            if (def.name == want) pick = &def;
          }
        }
        if (pick == nullptr) return Skip("no case for this op");
        const uint64_t seed = HashName(name);
        CaseBuilder builder(seed);
        OpCase c = pick->build(builder);
        c.name = name;
        bool broken = false;
        return RunOpCase(env, last, k, s.get(), sig.op, c, seed, &broken);
      });
    }
  }
}

}  // namespace tessera::conformance
