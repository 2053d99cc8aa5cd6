// errors.launch.*: launch must check tensors, counts, handles and params
// synchronously and return an error with a message, leaving the stream
// usable. Each check mutates one thing of an otherwise valid launch of a
// simple op the plugin lists.
#include <fmt/format.h>

#include <optional>

#include "conformance/checks.h"
#include "conformance/op_cases.h"
#include "conformance/op_harness.h"
#include "reference/op_contracts.h"

namespace tessera::conformance {
namespace {

// A valid launch of one listed op, on the device, ready to mutate.
struct PreparedLaunch {
  tsr_op_signature sig{};
  OpCase c;
  CaseLayout layout;
  DeviceCase dc;
  tsr_kernel kernel = nullptr;
  Stream stream;

  size_t num_inputs() const { return c.num_inputs; }
  size_t num_outputs() const { return c.args.size() - c.num_inputs; }
  const void* params() const {
    return c.params.empty() ? nullptr : c.params.data();
  }
};

// The first listed signature of `preferred` ops (by preference), if any.
std::optional<tsr_op_signature> FindListed(
    const PluginEnv& env, std::initializer_list<tsr_op_id> preferred) {
  const tsr_op_signature* ops = nullptr;
  size_t n = 0;
  if (env.api().list_ops(&ops, &n) != TSR_OK || ops == nullptr)
    return std::nullopt;
  for (tsr_op_id want : preferred) {
    for (size_t i = 0; i < n; ++i) {
      if (ops[i].op == want && ops[i].version == reference::kOpVersion &&
          reference::ValidateSignature(ops[i]).ok())
        return ops[i];
    }
  }
  return std::nullopt;
}

StatusOr<std::unique_ptr<PreparedLaunch>> Prepare(
    const PluginEnv& env, const tsr_op_signature& sig,
    const std::string& case_name) {
  auto p = std::make_unique<PreparedLaunch>();
  p->sig = sig;
  std::vector<DType> dtypes(sig.dtypes, sig.dtypes + sig.num_args);
  CaseList cases = MakeOpCases(sig.op, dtypes);
  const CaseDef* def = nullptr;
  for (const CaseDef& d : cases) {
    if (d.name == case_name) def = &d;
  }
  if (def == nullptr) return InternalError("no case " + case_name);
  CaseBuilder builder(HashName(case_name));
  p->c = def->build(builder);
  TSR_ASSIGN_OR_RETURN(p->layout, LayOut(p->c, 7));
  TSR_ASSIGN_OR_RETURN(p->dc, UploadCase(env, 0, p->c, p->layout));
  TSR_RETURN_IF_ERROR(
      env.Check(env.api().resolve_op(0, &p->sig, &p->kernel), "resolve_op"));
  TSR_ASSIGN_OR_RETURN(p->stream, env.NewStream(0));
  return p;
}

}  // namespace

void LaunchErrorChecks(CheckContext& ctx, PluginEnv& env) {
  const tsr_plugin_api& api = env.api();
  // Ops whose "basic" case has rank >= 1 tensors and an output last dim >= 2.
  std::optional<tsr_op_signature> sig =
      FindListed(env, {TSR_OP_ADD, TSR_OP_RMS_NORM, TSR_OP_SILU_AND_MUL,
                       TSR_OP_CAST, TSR_OP_EMBEDDING, TSR_OP_LINEAR});
  std::unique_ptr<PreparedLaunch> p;
  std::string prepare_error;
  bool prepared = false;
  auto prepare = [&]() -> bool {
    if (!prepared) {
      prepared = true;
      auto r = Prepare(env, *sig, "basic");
      if (r.ok()) {
        p = std::move(r).value();
      } else {
        prepare_error = r.status().message();
      }
    }
    return p != nullptr;
  };
  // Runs a launch with mutated tensors; `what` names the mutation.
  using Mutate = std::function<void(std::vector<tsr_tensor>&)>;
  auto expect_launch_error =
      [&](const std::string& what, const Mutate& mutate,
          std::initializer_list<tsr_status> allowed) -> Outcome {
    std::vector<tsr_tensor> t = p->dc.tensors;
    mutate(t);
    tsr_status s =
        api.launch(p->kernel, p->stream.get(), t.data(), p->num_inputs(),
                   t.data() + p->num_inputs(), p->num_outputs(), p->params(),
                   p->c.params.size());
    std::string msg = env.ExpectError(s, allowed, "launch with " + what);
    return msg.empty() ? Pass() : Fail(msg);
  };
  auto check = [&](const std::string& name,
                   const std::function<Outcome()>& body) {
    ctx.Run("errors.launch." + name, [&]() -> Outcome {
      if (!sig)
        return Skip(
            "the plugin lists none of add, rms_norm, silu_and_mul, "
            "cast, embedding, linear");
      if (!prepare())
        return Fail("could not prepare a valid launch: " + prepare_error);
      return body();
    });
  };
  const std::string op_label =
      sig ? fmt::format(
                "{} ({})", reference::OpName(sig->op),
                reference::SignatureTag(
                    sig->op, std::vector<DType>(sig->dtypes,
                                                sig->dtypes + sig->num_args)))
          : "";

  check("valid_baseline", [&]() -> Outcome {
    KIT_CHECK_CALL(
        env,
        api.launch(p->kernel, p->stream.get(), p->dc.tensors.data(),
                   p->num_inputs(), p->dc.tensors.data() + p->num_inputs(),
                   p->num_outputs(), p->params(), p->c.params.size()),
        "launch of a valid " + op_label);
    KIT_CHECK_CALL(env, api.stream_synchronize(p->stream.get()),
                   "stream_synchronize");
    return Pass(op_label);
  });
  check("wrong_dtype", [&]() -> Outcome {
    return expect_launch_error(
        "input 0 of another dtype than the kernel's signature",
        [](std::vector<tsr_tensor>& t) {
          t[0].dtype =
              t[0].dtype == TSR_DTYPE_F32 ? TSR_DTYPE_BF16 : TSR_DTYPE_F32;
        },
        {TSR_ERR_INVALID_ARGUMENT});
  });
  check("invalid_dtype", [&]() -> Outcome {
    return expect_launch_error(
        "dtype 99", [](std::vector<tsr_tensor>& t) { t[0].dtype = 99; },
        {TSR_ERR_INVALID_ARGUMENT});
  });
  check("wrong_shape", [&]() -> Outcome {
    const size_t o = p->num_inputs();
    return expect_launch_error(
        "an output whose last dim is one short",
        [o](std::vector<tsr_tensor>& t) { t[o].shape[t[o].ndim - 1] -= 1; },
        {TSR_ERR_INVALID_ARGUMENT});
  });
  check("out_of_bounds", [&]() -> Outcome {
    const size_t o = p->num_inputs();
    const uint64_t size = p->layout.buffer_sizes[p->layout.buffer_of_arg[o]];
    Outcome a = expect_launch_error(
        "an output that runs past the end of its buffer",
        [o, size](std::vector<tsr_tensor>& t) { t[o].offset = size - 2; },
        {TSR_ERR_INVALID_ARGUMENT});
    if (a.status != CheckStatus::kPass) return a;
    const uint64_t in_size = p->layout.buffer_sizes[p->layout.buffer_of_arg[0]];
    return expect_launch_error(
        "an input that runs past the end of its buffer",
        [in_size](std::vector<tsr_tensor>& t) { t[0].offset = in_size - 2; },
        {TSR_ERR_INVALID_ARGUMENT});
  });
  check("offset_overflow", [&]() -> Outcome {
    return expect_launch_error(
        "an input at offset 2^64 - 8 (the end overflows)",
        [](std::vector<tsr_tensor>& t) { t[0].offset = ~0ull - 7; },
        {TSR_ERR_INVALID_ARGUMENT});
  });
  check("stride_overflow", [&]() -> Outcome {
    return expect_launch_error("an input with a stride of 2^61 elements",
                               [](std::vector<tsr_tensor>& t) {
                                 t[0].shape[0] =
                                     std::max<int64_t>(t[0].shape[0], 2);
                                 t[0].strides[0] = int64_t{1} << 61;
                               },
                               {TSR_ERR_INVALID_ARGUMENT});
  });
  check("negative_stride", [&]() -> Outcome {
    return expect_launch_error(
        "an input with stride -1",
        [](std::vector<tsr_tensor>& t) { t[0].strides[t[0].ndim - 1] = -1; },
        {TSR_ERR_INVALID_ARGUMENT});
  });
  check("negative_shape", [&]() -> Outcome {
    const size_t o = p->num_inputs();
    return expect_launch_error(
        "an output with shape[0] = -1",
        [o](std::vector<tsr_tensor>& t) { t[o].shape[0] = -1; },
        {TSR_ERR_INVALID_ARGUMENT});
  });
  check("bad_ndim", [&]() -> Outcome {
    Outcome a = expect_launch_error(
        "ndim 7", [](std::vector<tsr_tensor>& t) { t[0].ndim = 7; },
        {TSR_ERR_INVALID_ARGUMENT});
    if (a.status != CheckStatus::kPass) return a;
    return expect_launch_error(
        "ndim -1", [](std::vector<tsr_tensor>& t) { t[0].ndim = -1; },
        {TSR_ERR_INVALID_ARGUMENT});
  });
  check("wrong_counts", [&]() -> Outcome {
    std::vector<tsr_tensor> t = p->dc.tensors;
    KIT_EXPECT_ERROR(
        env, "launch with one input too few",
        api.launch(p->kernel, p->stream.get(), t.data() + 1,
                   p->num_inputs() - 1, t.data() + p->num_inputs(),
                   p->num_outputs(), p->params(), p->c.params.size()),
        TSR_ERR_INVALID_ARGUMENT);
    KIT_EXPECT_ERROR(env, "launch with no outputs",
                     api.launch(p->kernel, p->stream.get(), t.data(),
                                p->num_inputs(), t.data() + p->num_inputs(), 0,
                                p->params(), p->c.params.size()),
                     TSR_ERR_INVALID_ARGUMENT);
    KIT_EXPECT_ERROR(
        env, "launch with NULL inputs",
        api.launch(p->kernel, p->stream.get(), nullptr, p->num_inputs(),
                   t.data() + p->num_inputs(), p->num_outputs(), p->params(),
                   p->c.params.size()),
        TSR_ERR_INVALID_ARGUMENT);
    KIT_EXPECT_ERROR(
        env, "launch with NULL outputs",
        api.launch(p->kernel, p->stream.get(), t.data(), p->num_inputs(),
                   nullptr, p->num_outputs(), p->params(), p->c.params.size()),
        TSR_ERR_INVALID_ARGUMENT);
    return Pass();
  });
  for (const char* kind : {"null", "freed", "bogus"}) {
    check(fmt::format("tensor_buffer_{}", kind), [&, kind]() -> Outcome {
      tsr_buffer bad = nullptr;
      std::string k = kind;
      if (k == "bogus")
        bad = reinterpret_cast<tsr_buffer>(static_cast<uintptr_t>(0x1234));
      if (k == "freed") {
        KIT_CHECK_CALL(env, api.buffer_alloc(0, TSR_MEM_DEVICE, 4096, 0, &bad),
                       "buffer_alloc");
        KIT_CHECK_CALL(env, api.buffer_free(bad), "buffer_free");
      }
      if (k == "null") {
        return expect_launch_error(
            "a NULL tensor buffer",
            [](std::vector<tsr_tensor>& t) { t[0].buffer = nullptr; },
            {TSR_ERR_INVALID_HANDLE, TSR_ERR_INVALID_ARGUMENT});
      }
      return expect_launch_error(
          fmt::format("a {} tensor buffer", k),
          [bad](std::vector<tsr_tensor>& t) { t[0].buffer = bad; },
          {TSR_ERR_INVALID_HANDLE});
    });
  }
  check("kernel_handles", [&]() -> Outcome {
    const auto& t = p->dc.tensors;
    KIT_EXPECT_ERROR(
        env, "launch of a NULL kernel",
        api.launch(nullptr, p->stream.get(), t.data(), p->num_inputs(),
                   t.data() + p->num_inputs(), p->num_outputs(), p->params(),
                   p->c.params.size()),
        TSR_ERR_INVALID_HANDLE, TSR_ERR_INVALID_ARGUMENT);
    KIT_EXPECT_ERROR(
        env, "launch of a made-up kernel (0x1234)",
        api.launch(reinterpret_cast<tsr_kernel>(static_cast<uintptr_t>(0x1234)),
                   p->stream.get(), t.data(), p->num_inputs(),
                   t.data() + p->num_inputs(), p->num_outputs(), p->params(),
                   p->c.params.size()),
        TSR_ERR_INVALID_HANDLE);
    return Pass();
  });
  check("stream_handles", [&]() -> Outcome {
    const auto& t = p->dc.tensors;
    tsr_stream freed = nullptr;
    KIT_CHECK_CALL(env, api.stream_create(0, &freed), "stream_create");
    KIT_CHECK_CALL(env, api.stream_destroy(freed), "stream_destroy");
    KIT_EXPECT_ERROR(env, "launch on a destroyed stream",
                     api.launch(p->kernel, freed, t.data(), p->num_inputs(),
                                t.data() + p->num_inputs(), p->num_outputs(),
                                p->params(), p->c.params.size()),
                     TSR_ERR_INVALID_HANDLE);
    KIT_EXPECT_ERROR(
        env, "launch on a made-up stream (0x1234)",
        api.launch(p->kernel,
                   reinterpret_cast<tsr_stream>(static_cast<uintptr_t>(0x1234)),
                   t.data(), p->num_inputs(), t.data() + p->num_inputs(),
                   p->num_outputs(), p->params(), p->c.params.size()),
        TSR_ERR_INVALID_HANDLE);
    return Pass();
  });

  // Params: an op that needs them, given none or too few bytes.
  std::optional<tsr_op_signature> with_params =
      FindListed(env, {TSR_OP_RMS_NORM});
  ctx.Run("errors.launch.missing_params", [&]() -> Outcome {
    if (!with_params) return Skip("the plugin does not list rms_norm");
    KIT_ASSIGN_OR_FAIL(auto q, Prepare(env, *with_params, "basic"));
    const auto& t = q->dc.tensors;
    KIT_EXPECT_ERROR(
        env, "rms_norm launch with NULL params",
        api.launch(q->kernel, q->stream.get(), t.data(), q->num_inputs(),
                   t.data() + q->num_inputs(), q->num_outputs(), nullptr, 0),
        TSR_ERR_INVALID_ARGUMENT);
    KIT_EXPECT_ERROR(env, "rms_norm launch with params_size 4 (no eps)",
                     api.launch(q->kernel, q->stream.get(), t.data(),
                                q->num_inputs(), t.data() + q->num_inputs(),
                                q->num_outputs(), q->params(), 4),
                     TSR_ERR_INVALID_ARGUMENT);
    return Pass();
  });

  std::optional<tsr_op_signature> linear = FindListed(env, {TSR_OP_LINEAR});
  ctx.Run("errors.launch.linear_w_not_unit_stride", [&]() -> Outcome {
    if (!linear) return Skip("the plugin does not list linear");
    KIT_ASSIGN_OR_FAIL(auto q, Prepare(env, *linear, "basic"));
    std::vector<tsr_tensor> t = q->dc.tensors;
    // w [N, K] as a transposed view: innermost stride N, not 1.
    t[1].strides[0] = 1;
    t[1].strides[1] = t[1].shape[0];
    KIT_EXPECT_ERROR(
        env, "linear launch whose w has a non-unit innermost stride",
        api.launch(q->kernel, q->stream.get(), t.data(), q->num_inputs(),
                   t.data() + q->num_inputs(), q->num_outputs(), q->params(),
                   q->c.params.size()),
        TSR_ERR_INVALID_ARGUMENT);
    return Pass();
  });

  check("stream_usable_after_errors", [&]() -> Outcome {
    KIT_CHECK_CALL(env,
                   api.stream_query(p->stream.get()) == TSR_ERR_NOT_READY
                       ? TSR_OK
                       : api.stream_query(p->stream.get()),
                   "stream_query after rejected launches");
    KIT_CHECK_CALL(
        env,
        api.launch(p->kernel, p->stream.get(), p->dc.tensors.data(),
                   p->num_inputs(), p->dc.tensors.data() + p->num_inputs(),
                   p->num_outputs(), p->params(), p->c.params.size()),
        "a valid launch after rejected ones");
    KIT_CHECK_CALL(env, api.stream_synchronize(p->stream.get()),
                   "stream_synchronize after rejected launches (a launch that "
                   "fails synchronously must not poison the stream)");
    return Pass();
  });
}

}  // namespace tessera::conformance
