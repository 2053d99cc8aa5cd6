// graphs (the optional graph table, TSR_CAP_GRAPHS): capture records work
// instead of running it; a replay runs it and reads its buffers' contents
// as they are at replay time (not at capture); an op replays bit-for-bit
// what an eager launch computes; calls that wait on or order against a
// capturing stream are refused; a graph replays on another stream of its
// device. A plugin without the table is skipped (the host runs eagerly).
#include <fmt/format.h>

#include <cstring>
#include <vector>

#include "conformance/checks.h"
#include "conformance/op_cases.h"
#include "conformance/op_harness.h"
#include "reference/op_contracts.h"

namespace tessera::conformance {
namespace {

// Owns a graph handle.
struct GraphHandle {
  const tsr_plugin_api* api = nullptr;
  tsr_graph graph = nullptr;
  ~GraphHandle() {
    if (graph != nullptr) (void)api->graph->destroy(graph);
  }
};

StatusOr<std::vector<uint8_t>> ReadAll(const PluginEnv& env, const Buffer& b,
                                       uint64_t size) {
  std::vector<uint8_t> out(size);
  TSR_RETURN_IF_ERROR(env.Download(b.get(), 0, out.data(), size));
  return out;
}

}  // namespace

void GraphChecks(CheckContext& ctx, PluginEnv& env) {
  const tsr_plugin_api& api = env.api();
  const bool has_graphs = api.graph != nullptr;
  auto skip_without = [&]() -> std::optional<Outcome> {
    if (has_graphs) return std::nullopt;
    return Skip("the plugin has no graph table (optional); the host runs "
                "every step eagerly");
  };

  // The manifest bit and the table agree.
  ctx.Run("graphs.capability", [&]() -> Outcome {
    const bool bit = (api.manifest->capabilities & TSR_CAP_GRAPHS) != 0;
    if (bit != has_graphs) {
      return Fail(fmt::format(
          "TSR_CAP_GRAPHS is {} but the graph table is {}; set the bit "
          "exactly when the table is there",
          bit ? "set" : "clear", has_graphs ? "present" : "NULL"));
    }
    if (!has_graphs) return Pass();
    const tsr_graph_api& g = *api.graph;
    if (g.begin_capture == nullptr || g.end_capture == nullptr ||
        g.launch == nullptr || g.destroy == nullptr) {
      return Fail("the graph table has NULL entries; all four are required");
    }
    return Pass();
  });

  // Capture copy x -> y; nothing may run at capture; each replay copies
  // x's contents as they are then.
  ctx.Run("graphs.replay_reads_current_contents", [&]() -> Outcome {
    if (auto s = skip_without()) return *s;
    const uint64_t size = 1 << 16;
    KIT_ASSIGN_OR_FAIL(Buffer x, env.Alloc(0, size));
    KIT_ASSIGN_OR_FAIL(Buffer y, env.Alloc(0, size));
    KIT_ASSIGN_OR_FAIL(Stream s, env.NewStream(0));
    KIT_CHECK_CALL(env, api.memset(nullptr, x.get(), 0, 1, size), "memset x = 1");
    KIT_CHECK_CALL(env, api.memset(nullptr, y.get(), 0, 0, size), "memset y = 0");
    GraphHandle g{&api};
    KIT_CHECK_CALL(env, api.graph->begin_capture(s.get()), "begin_capture");
    KIT_CHECK_CALL(env,
                   api.copy_device_to_device(s.get(), y.get(), 0, x.get(), 0, size),
                   "copy x -> y (captured)");
    KIT_CHECK_CALL(env, api.graph->end_capture(s.get(), &g.graph), "end_capture");
    KIT_CHECK_CALL(env, api.stream_synchronize(s.get()), "stream_synchronize");
    KIT_ASSIGN_OR_FAIL(std::vector<uint8_t> after_capture, ReadAll(env, y, size));
    if (after_capture[0] != 0 || after_capture[size - 1] != 0) {
      return Fail("the captured copy ran at capture time; between begin_capture "
                  "and end_capture work must be recorded, not run");
    }
    for (uint8_t value : {uint8_t{2}, uint8_t{3}}) {
      KIT_CHECK_CALL(env, api.memset(nullptr, x.get(), 0, value, size),
                     "memset x (new contents)");
      KIT_CHECK_CALL(env, api.graph->launch(g.graph, s.get()), "graph launch");
      KIT_CHECK_CALL(env, api.stream_synchronize(s.get()), "stream_synchronize");
      KIT_ASSIGN_OR_FAIL(std::vector<uint8_t> got, ReadAll(env, y, size));
      for (uint64_t i = 0; i < size; i += 997) {
        if (got[i] != value) {
          return Fail(fmt::format(
              "after a replay y[{}] = {} (want {}): a replay must run the "
              "captured copy on x's contents at replay time",
              i, got[i], value));
        }
      }
    }
    return Pass();
  });

  // An op captured and replayed gives exactly what an eager launch gives,
  // on the capture stream and on another stream of the device, and again
  // after its inputs change.
  ctx.Run("graphs.op_replay_equals_eager", [&]() -> Outcome {
    if (auto s = skip_without()) return *s;
    const tsr_op_signature* ops = nullptr;
    size_t n = 0;
    KIT_CHECK_CALL(env, api.list_ops(&ops, &n), "list_ops");
    const tsr_op_signature* sig = nullptr;
    for (size_t i = 0; i < n && sig == nullptr; ++i) {
      if (ops[i].op == TSR_OP_ADD && ops[i].version == reference::kOpVersion &&
          reference::ValidateSignature(ops[i]).ok()) {
        sig = &ops[i];
      }
    }
    if (sig == nullptr) return Skip("the plugin does not list add");
    std::vector<DType> dtypes(sig->dtypes, sig->dtypes + sig->num_args);
    OpCase c;
    for (const CaseDef& d : MakeOpCases(TSR_OP_ADD, dtypes)) {
      if (d.name == "basic") {
        CaseBuilder builder(HashName("graphs.op_replay_equals_eager"));
        c = d.build(builder);
      }
    }
    KIT_ASSIGN_OR_FAIL(CaseLayout layout, LayOut(c, 11));
    KIT_ASSIGN_OR_FAIL(DeviceCase dc, UploadCase(env, 0, c, layout));
    tsr_kernel kernel = nullptr;
    KIT_CHECK_CALL(env, api.resolve_op(0, sig, &kernel), "resolve_op");
    KIT_ASSIGN_OR_FAIL(Stream s, env.NewStream(0));
    KIT_ASSIGN_OR_FAIL(Stream other, env.NewStream(0));
    const size_t ni = c.num_inputs, no = c.args.size() - c.num_inputs;
    const int out_buffer = layout.buffer_of_arg[ni];
    const Buffer& out = dc.buffers[out_buffer];
    const uint64_t out_size = layout.buffer_sizes[out_buffer];
    auto eager = [&]() -> StatusOr<std::vector<uint8_t>> {
      TSR_RETURN_IF_ERROR(env.Check(api.memset(s.get(), out.get(), 0, 0, out_size),
                                    "memset out"));
      TSR_RETURN_IF_ERROR(env.Check(
          api.launch(kernel, s.get(), dc.tensors.data(), ni,
                     dc.tensors.data() + ni, no, nullptr, 0),
          "launch (eager)"));
      TSR_RETURN_IF_ERROR(env.Check(api.stream_synchronize(s.get()), "synchronize"));
      return ReadAll(env, out, out_size);
    };
    auto replay = [&](tsr_graph graph, const Stream& on) -> StatusOr<std::vector<uint8_t>> {
      TSR_RETURN_IF_ERROR(env.Check(api.memset(on.get(), out.get(), 0, 0, out_size),
                                    "memset out"));
      TSR_RETURN_IF_ERROR(env.Check(api.graph->launch(graph, on.get()), "graph launch"));
      TSR_RETURN_IF_ERROR(env.Check(api.stream_synchronize(on.get()), "synchronize"));
      return ReadAll(env, out, out_size);
    };
    KIT_ASSIGN_OR_FAIL(std::vector<uint8_t> want, eager());
    GraphHandle g{&api};
    KIT_CHECK_CALL(env, api.graph->begin_capture(s.get()), "begin_capture");
    KIT_CHECK_CALL(env,
                   api.launch(kernel, s.get(), dc.tensors.data(), ni,
                              dc.tensors.data() + ni, no, nullptr, 0),
                   "launch (captured)");
    KIT_CHECK_CALL(env, api.graph->end_capture(s.get(), &g.graph), "end_capture");
    for (const Stream* on : {&s, &other}) {
      KIT_ASSIGN_OR_FAIL(std::vector<uint8_t> got, replay(g.graph, *on));
      if (got != want) {
        return Fail(on == &s ? "the replayed add differs from the eager add"
                             : "the replay on another stream of the device "
                               "differs from the eager add");
      }
    }
    // New input contents: x := y (same shape), then replay vs eager again.
    const int x_buffer = layout.buffer_of_arg[0];
    const int y_buffer = layout.buffer_of_arg[1];
    if (x_buffer != y_buffer &&
        layout.buffer_sizes[x_buffer] == layout.buffer_sizes[y_buffer]) {
      KIT_CHECK_CALL(env,
                     api.copy_device_to_device(nullptr, dc.buffers[x_buffer].get(), 0,
                                               dc.buffers[y_buffer].get(), 0,
                                               layout.buffer_sizes[x_buffer]),
                     "copy y -> x (new inputs)");
      KIT_ASSIGN_OR_FAIL(std::vector<uint8_t> got, replay(g.graph, s));
      KIT_ASSIGN_OR_FAIL(std::vector<uint8_t> want2, eager());
      if (got != want2) {
        return Fail("after the inputs changed, the replayed add differs from "
                    "an eager add on the new inputs");
      }
      if (got == want) {
        return Fail("after the inputs changed the replay gave the old result: "
                    "a replay must read the inputs' current contents");
      }
    }
    return Pass();
  });

  // While a stream captures, synchronize / query / event_record /
  // stream_wait_event on it are refused; end_capture without begin, and a
  // second begin_capture, too.
  ctx.Run("graphs.illegal_calls_while_capturing", [&]() -> Outcome {
    if (auto s = skip_without()) return *s;
    KIT_ASSIGN_OR_FAIL(Stream s, env.NewStream(0));
    KIT_ASSIGN_OR_FAIL(Event e, env.NewEvent(0));
    tsr_graph none = nullptr;
    KIT_EXPECT_ERROR(env, "end_capture without begin_capture",
                     api.graph->end_capture(s.get(), &none),
                     TSR_ERR_INVALID_ARGUMENT);
    KIT_CHECK_CALL(env, api.graph->begin_capture(s.get()), "begin_capture");
    KIT_EXPECT_ERROR(env, "begin_capture twice", api.graph->begin_capture(s.get()),
                     TSR_ERR_INVALID_ARGUMENT);
    KIT_EXPECT_ERROR(env, "stream_synchronize while capturing",
                     api.stream_synchronize(s.get()), TSR_ERR_INVALID_ARGUMENT);
    KIT_EXPECT_ERROR(env, "stream_query while capturing", api.stream_query(s.get()),
                     TSR_ERR_INVALID_ARGUMENT);
    KIT_EXPECT_ERROR(env, "event_record while capturing",
                     api.event_record(e.get(), s.get()), TSR_ERR_INVALID_ARGUMENT);
    KIT_EXPECT_ERROR(env, "stream_wait_event while capturing",
                     api.stream_wait_event(s.get(), e.get()),
                     TSR_ERR_INVALID_ARGUMENT);
    GraphHandle g{&api};
    KIT_CHECK_CALL(env, api.graph->end_capture(s.get(), &g.graph),
                   "end_capture (an empty graph)");
    KIT_CHECK_CALL(env, api.graph->launch(g.graph, s.get()), "launch an empty graph");
    KIT_CHECK_CALL(env, api.stream_synchronize(s.get()),
                   "stream_synchronize after the capture ended");
    return Pass();
  });
}

}  // namespace tessera::conformance
