// Plugin wrapper and RAII handles, against the real minimal example plugin.
#include "runtime/plugin.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>
#include <vector>

#include "runtime/communicator.h"
#include "runtime/device.h"
#include "runtime/stream.h"
#include "runtime/test_util.h"

namespace tessera::runtime {
namespace {

std::unique_ptr<Plugin> LoadMinimal() {
  auto lib = PluginLibrary::Open(testing::MinimalPluginPath());
  EXPECT_TRUE(lib.ok()) << lib.status().ToString();
  if (!lib.ok()) return nullptr;
  return std::make_unique<Plugin>(std::move(lib).value());
}

// A plugin built against ABI 1.0 (the minimal plugin re-labelled 1.0, see
// abi_1_0_test_plugin.c) still loads, initialises and runs under the 1.1
// host: the floor is 1.0 and 1.1 only added an optional op version.
TEST(PluginWrapperTest, Abi10PluginStillLoads) {
  static_assert(TSR_PLUGIN_ABI_MINOR_FLOOR == 0);
  auto lib = PluginLibrary::Open(TSR_ABI10_PLUGIN_PATH);
  ASSERT_TRUE(lib.ok()) << lib.status().ToString();
  Plugin plugin(std::move(lib).value());
  EXPECT_EQ(plugin.AbiVersion(), "1.0");
  EXPECT_EQ(plugin.name(), "minimal");
  ASSERT_TRUE(plugin.Init({}).ok());
  auto count = plugin.DeviceCount();
  ASSERT_TRUE(count.ok()) << count.status().ToString();
  EXPECT_GE(*count, 1);
}

TEST(PluginWrapperTest, IdentityBeforeInit) {
  auto plugin = LoadMinimal();
  ASSERT_NE(plugin, nullptr);
  EXPECT_EQ(plugin->name(), "minimal");
  EXPECT_EQ(plugin->AbiVersion(), "1.8");  // built against the 1.8 header
  EXPECT_EQ(plugin->Probe(), 1);
  EXPECT_FALSE(plugin->initialized());
  EXPECT_TRUE(plugin->ops().empty());
  auto count = plugin->DeviceCount();
  ASSERT_FALSE(count.ok());
  EXPECT_EQ(count.status().code(), StatusCode::kFailedPrecondition);
}

TEST(PluginWrapperTest, InitAppliesOptionsAndVisibleDevices) {
  auto plugin = LoadMinimal();
  ASSERT_NE(plugin, nullptr);
  PluginInitArgs args;
  args.options = {{"devices", "3", "test"}};
  args.visible_devices = std::vector<int32_t>{2, 0, 7};  // 7 does not exist
  ASSERT_TRUE(plugin->Init(args).ok());
  auto count = plugin->DeviceCount();
  ASSERT_TRUE(count.ok());
  ASSERT_EQ(*count, 2);
  EXPECT_EQ(plugin->DeviceProperties(0)->physical_index, 2);
  EXPECT_EQ(plugin->DeviceProperties(1)->physical_index, 0);
  auto bad = plugin->DeviceProperties(2);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kNotFound);
  // The message names the plugin and the call, then the plugin's words.
  EXPECT_NE(bad.status().message().find("minimal plugin: device_properties"),
            std::string::npos)
      << bad.status().message();
  EXPECT_FALSE(plugin->Init(args).ok());  // init twice
}

TEST(PluginWrapperTest, InitErrorNamesTheOptionSource) {
  auto plugin = LoadMinimal();
  ASSERT_NE(plugin, nullptr);
  PluginInitArgs args;
  args.options = {{"threads", "4", "TESSERA_PLUGIN_OPTIONS"}};
  Status s = plugin->Init(args);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("unknown option 'threads'"), std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("TESSERA_PLUGIN_OPTIONS"), std::string::npos);
  EXPECT_FALSE(plugin->initialized());
}

TEST(PluginWrapperTest, OptionalEntriesHaveDefaults) {
  auto plugin = LoadMinimal();
  ASSERT_NE(plugin, nullptr);
  ASSERT_TRUE(plugin->Init({}).ok());
  EXPECT_FALSE(plugin->HasCollectives());
  EXPECT_FALSE(plugin->HasGraphs());
  std::vector<int32_t> devices = {0};
  auto comms = Communicator::CreateAll(*plugin, devices);
  ASSERT_FALSE(comms.ok());
  EXPECT_EQ(comms.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(comms.status().message().find("has no collectives"),
            std::string::npos);
  auto stream = Stream::Create(*plugin, 0);
  ASSERT_TRUE(stream.ok());
  Status s = plugin->BeginCapture((*stream)->handle());
  EXPECT_EQ(s.code(), StatusCode::kUnimplemented);
}

TEST(PluginWrapperTest, OpTableAndResolve) {
  auto plugin = LoadMinimal();
  ASSERT_NE(plugin, nullptr);
  ASSERT_TRUE(plugin->Init({}).ok());
  EXPECT_EQ(plugin->ops().size(), 3u);
  EXPECT_TRUE(plugin->ListsOp(TSR_OP_ADD));
  EXPECT_TRUE(plugin->ListsOp(TSR_OP_CAST));
  EXPECT_FALSE(plugin->ListsOp(TSR_OP_RMS_NORM));
  tsr_dtype f32x3[] = {TSR_DTYPE_F32, TSR_DTYPE_F32, TSR_DTYPE_F32};
  auto add = MakeSignature(TSR_OP_ADD, 1, f32x3);
  EXPECT_TRUE(plugin->ListsSignature(add));
  EXPECT_EQ(SignatureToString(add, 2), "add v1 (f32, f32 -> f32)");
  EXPECT_TRUE(plugin->ResolveOp(0, add).ok());
  auto norm = MakeSignature(TSR_OP_RMS_NORM, 1, f32x3);
  auto missing = plugin->ResolveOp(0, norm);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
}

TEST(RaiiHandlesTest, DestructorsReleasePluginHandles) {
  auto plugin = LoadMinimal();
  ASSERT_NE(plugin, nullptr);
  ASSERT_TRUE(plugin->Init({}).ok());
  auto device = Device::Open(*plugin, 0);
  ASSERT_TRUE(device.ok());
  tsr_stream raw_stream;
  tsr_event raw_event;
  tsr_buffer raw_buffer;
  {
    auto stream = (*device)->CreateStream();
    auto event = (*device)->CreateEvent();
    auto buffer = (*device)->AllocateUncached(1000);
    ASSERT_TRUE(stream.ok() && event.ok() && buffer.ok());
    raw_stream = (*stream)->handle();
    raw_event = (*event)->handle();
    raw_buffer = (*buffer)->handle();
    EXPECT_TRUE(plugin->SynchronizeStream(raw_stream).ok());
    EXPECT_TRUE((*event)->Record(**stream).ok());
    EXPECT_TRUE((*stream)->Wait(**event).ok());
    EXPECT_TRUE(*(*event)->IsComplete());
    EXPECT_EQ((*device)->memory_stats().live_buffers, 1u);
    EXPECT_EQ((*device)->memory_stats().requested_bytes, 1000u);
    EXPECT_GE((*device)->memory_stats().reserved_bytes, 1000u);
  }
  // The handles are gone: the plugin now calls them invalid.
  EXPECT_EQ(plugin->SynchronizeStream(raw_stream).code(),
            StatusCode::kInvalidArgument);
  EXPECT_FALSE(plugin->SynchronizeEvent(raw_event).ok());
  RawAllocation stale;
  stale.handle = raw_buffer;
  EXPECT_FALSE(plugin->Free(stale).ok());
  MemoryStats stats = (*device)->memory_stats();
  EXPECT_EQ(stats.live_buffers, 0u);
  EXPECT_EQ(stats.requested_bytes, 0u);
  EXPECT_EQ(stats.reserved_bytes, 0u);
  EXPECT_EQ(stats.requested_peak, 1000u);
  EXPECT_EQ(stats.plugin_allocations, 1u);
  EXPECT_EQ(stats.plugin_frees, 1u);
}

TEST(RaiiHandlesTest, CopiesRoundTripAndCheckRanges) {
  auto plugin = LoadMinimal();
  ASSERT_NE(plugin, nullptr);
  ASSERT_TRUE(plugin->Init({}).ok());
  auto device = Device::Open(*plugin, 0);
  ASSERT_TRUE(device.ok());
  auto stream = (*device)->CreateStream();
  auto a = (*device)->Allocate(64);
  auto b = (*device)->Allocate(64);
  ASSERT_TRUE(stream.ok() && a.ok() && b.ok());
  std::vector<uint8_t> in(64), out(64, 0);
  for (int i = 0; i < 64; ++i) in[i] = uint8_t(i * 3);
  ASSERT_TRUE((*stream)->CopyHostToDevice(**a, 0, in.data(), 64).ok());
  ASSERT_TRUE((*stream)->CopyDeviceToDevice(**b, 0, **a, 0, 64).ok());
  ASSERT_TRUE((*stream)->Memset(**b, 0, 0xee, 4).ok());
  ASSERT_TRUE((*stream)->CopyDeviceToHost(out.data(), **b, 0, 64).ok());
  ASSERT_TRUE((*stream)->Synchronize().ok());
  EXPECT_EQ(out[0], 0xee);
  EXPECT_EQ(out[3], 0xee);
  EXPECT_EQ(std::memcmp(out.data() + 4, in.data() + 4, 60), 0);
  // size() is 64 even though the pool block is larger: no copy past it.
  EXPECT_GT((*a)->capacity(), 64u);
  Status s = (*a)->CopyFromHost(60, in.data(), 8);
  EXPECT_EQ(s.code(), StatusCode::kOutOfRange);
  std::vector<uint8_t> back(64);
  ASSERT_TRUE((*b)->CopyToHost(back.data(), 0, 64).ok());
  EXPECT_EQ(back, out);
}

// --- tables a broken plugin returns (found by fuzz/plugin_table_fuzzer.cc) --

// The minimal plugin's table, copied so that a test can break one part.
struct TableCopy {
  std::unique_ptr<PluginLibrary> source;  // keeps the entries loaded
  tsr_plugin_api api{};
  tsr_plugin_manifest manifest{};
};

std::unique_ptr<TableCopy> CopyMinimalTable() {
  auto copy = std::make_unique<TableCopy>();
  auto lib = PluginLibrary::Open(testing::MinimalPluginPath());
  EXPECT_TRUE(lib.ok()) << lib.status().ToString();
  if (!lib.ok()) return nullptr;
  copy->source = std::move(lib).value();
  copy->api = copy->source->api();
  copy->manifest = *copy->api.manifest;
  copy->api.manifest = &copy->manifest;
  return copy;
}

void NeverCalled() { ADD_FAILURE() << "an entry the host must not call"; }
template <typename Fn>
Fn Dummy() {
  return reinterpret_cast<Fn>(reinterpret_cast<void*>(&NeverCalled));
}

TEST(PluginTableTest, AManifestSmallerThanV10IsRefusedNotReadPastItsEnd) {
  auto copy = CopyMinimalTable();
  ASSERT_NE(copy, nullptr);
  copy->manifest.struct_size = offsetof(tsr_plugin_manifest, requirements);
  auto lib = PluginLibrary::FromTable(&copy->api, "/p/libbroken.so");
  ASSERT_FALSE(lib.ok());
  EXPECT_NE(lib.status().message().find("manifest of"), std::string::npos)
      << lib.status().message();
}

// Plugin text reaches logs, doctor and error messages: a name outside the
// ABI's [a-z0-9_] is refused, shown escaped; other strings are made one
// printable line.
TEST(PluginTableTest, ManifestTextCannotForgeLogLines) {
  auto copy = CopyMinimalTable();
  ASSERT_NE(copy, nullptr);
  copy->manifest.name = "cpu\n[2026-01-01] [info] all good";
  auto lib = PluginLibrary::FromTable(&copy->api, "/p/libbad.so");
  ASSERT_FALSE(lib.ok());
  EXPECT_NE(lib.status().message().find("[a-z0-9_]"), std::string::npos);
  EXPECT_EQ(lib.status().message().find('\n'), std::string::npos)
      << lib.status().message();

  copy->manifest.name = "minimal";
  copy->manifest.description = "line one\nline\x1b[31m two";
  auto ok = PluginLibrary::FromTable(&copy->api, "/p/libok.so");
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  Plugin plugin(std::move(ok).value());
  EXPECT_EQ(plugin.Description(), "line one line?[31m two");
  EXPECT_EQ(PluginText(std::string(5000, 'x').c_str(), 10), "xxxxxxxxxx...");
}

// list_ops' entry 0 declares the stride; one far beyond any signature, or
// entries that disagree, fail init instead of reading off the array.
const tsr_op_signature* g_ops_answer = nullptr;
tsr_status ListTwoOps(const tsr_op_signature** ops, size_t* count) {
  *ops = g_ops_answer;
  *count = 2;
  return TSR_OK;
}

TEST(PluginTableTest, AnOpTableWithAGarbageStrideFailsInit) {
  auto copy = CopyMinimalTable();
  ASSERT_NE(copy, nullptr);
  copy->api.list_ops = &ListTwoOps;
  static tsr_op_signature ops[2] = {};
  g_ops_answer = ops;
  for (uint32_t first : {uint32_t{1} << 20, uint32_t{sizeof(tsr_op_signature)}}) {
    ops[0].struct_size = first;
    ops[1].struct_size = 8;  // disagrees with entry 0
    auto lib = PluginLibrary::FromTable(&copy->api, "/p/libbroken.so");
    ASSERT_TRUE(lib.ok()) << lib.status().ToString();
    Plugin plugin(std::move(lib).value());
    Status s = plugin.Init({});
    ASSERT_FALSE(s.ok());
    EXPECT_FALSE(plugin.initialized());
    EXPECT_NE(s.message().find(first == sizeof(tsr_op_signature)
                                   ? "every entry of the op table"
                                   : "the op table is corrupt"),
              std::string::npos)
        << s.message();
  }
}

TEST(PluginTableTest, CommEntriesBeyondTheTablesStructSizeAreAbsent) {
  auto copy = CopyMinimalTable();
  ASSERT_NE(copy, nullptr);
  tsr_comm_api comm{};
  comm.comm_init_all = Dummy<decltype(comm.comm_init_all)>();
  comm.comm_destroy = Dummy<decltype(comm.comm_destroy)>();
  comm.all_reduce = Dummy<decltype(comm.all_reduce)>();
  comm.all_gather = Dummy<decltype(comm.all_gather)>();
  comm.broadcast = Dummy<decltype(comm.broadcast)>();
  comm.send = Dummy<decltype(comm.send)>();
  comm.recv = Dummy<decltype(comm.recv)>();
  comm.comm_get_unique_id = Dummy<decltype(comm.comm_get_unique_id)>();
  comm.comm_init_rank = Dummy<decltype(comm.comm_init_rank)>();
  // Covers comm_get_unique_id but not comm_init_rank (garbage beyond).
  comm.struct_size = offsetof(tsr_comm_api, comm_init_rank);
  copy->api.comm = &comm;
  auto lib = PluginLibrary::FromTable(&copy->api, "/p/libcomm.so");
  ASSERT_TRUE(lib.ok()) << lib.status().ToString();
  Plugin plugin(std::move(lib).value());
  EXPECT_TRUE(plugin.HasCollectives());
  EXPECT_FALSE(plugin.HasCrossProcessCollectives());
}

TEST(PluginTableTest, IncompleteCommAndGraphTablesAreTurnedOff) {
  auto copy = CopyMinimalTable();
  ASSERT_NE(copy, nullptr);
  tsr_comm_api comm{};
  comm.struct_size = sizeof(comm);
  comm.comm_init_all = Dummy<decltype(comm.comm_init_all)>();
  comm.comm_destroy = Dummy<decltype(comm.comm_destroy)>();
  comm.all_reduce = Dummy<decltype(comm.all_reduce)>();  // all_gather NULL
  tsr_graph_api graph{};
  graph.struct_size = sizeof(graph);
  graph.begin_capture = Dummy<decltype(graph.begin_capture)>();
  graph.end_capture = Dummy<decltype(graph.end_capture)>();
  graph.launch = Dummy<decltype(graph.launch)>();  // destroy NULL
  copy->api.comm = &comm;
  copy->api.graph = &graph;
  auto lib = PluginLibrary::FromTable(&copy->api, "/p/libpartial.so");
  ASSERT_TRUE(lib.ok()) << lib.status().ToString();
  Plugin plugin(std::move(lib).value());
  EXPECT_FALSE(plugin.HasCollectives());
  EXPECT_FALSE(plugin.HasGraphs());
  EXPECT_TRUE(plugin.CommInitAll(std::vector<int32_t>{0}).status().code() ==
              StatusCode::kUnavailable);
}

}  // namespace
}  // namespace tessera::runtime
