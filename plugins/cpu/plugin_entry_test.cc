// Manifest, init options, devices, memory, handle validation and launch
// validation of the cpu plugin, through its raw C table.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "cpu_plugin_test_util.h"

namespace tessera::cpu::testing {
namespace {

using ::testing::HasSubstr;

TEST_F(CpuPluginTest, ManifestAndProbeBeforeInit) {
  const tsr_plugin_manifest* m = api_->manifest;
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(std::string(m->name), "cpu");
  EXPECT_EQ(m->abi_major, TSR_PLUGIN_ABI_MAJOR);
  EXPECT_EQ(std::string(m->requirements), "none (x86-64 or any CPU; libc and pthreads)");
  EXPECT_EQ(m->capabilities,
            TSR_CAP_PINNED_HOST | TSR_CAP_HOST_VISIBLE_DEVICE_MEM | TSR_CAP_COLLECTIVES |
                TSR_CAP_FUSED_OPS | TSR_CAP_GRAPHS);
  EXPECT_EQ(api_->probe(), 10);
  EXPECT_NE(api_->comm, nullptr);
  ASSERT_NE(api_->graph, nullptr);
  EXPECT_NE(api_->graph->begin_capture, nullptr);
  int32_t count = 0;
  EXPECT_NE(api_->device_count(&count), TSR_OK);  // not initialised
  EXPECT_THAT(api_->last_error(), HasSubstr("init"));
}

TEST_F(CpuPluginTest, InitTwiceFailsAndShutdownAllowsInitAgain) {
  ASSERT_EQ(api_->init(nullptr), TSR_OK) << api_->last_error();
  initialised_ = true;
  int32_t count = 0;
  ASSERT_EQ(api_->device_count(&count), TSR_OK);
  EXPECT_EQ(count, 1);
  EXPECT_EQ(api_->init(nullptr), TSR_ERR_INVALID_ARGUMENT);
  EXPECT_THAT(api_->last_error(), HasSubstr("already"));
  tsr_buffer leaked;
  ASSERT_EQ(api_->buffer_alloc(0, TSR_MEM_DEVICE, 128, 0, &leaked), TSR_OK);
  tsr_stream s;
  ASSERT_EQ(api_->stream_create(0, &s), TSR_OK);
  ASSERT_EQ(api_->shutdown(), TSR_OK);  // releases what the host forgot
  initialised_ = false;
  EXPECT_NE(api_->shutdown(), TSR_OK);
  ASSERT_EQ(api_->init(nullptr), TSR_OK) << api_->last_error();
  initialised_ = true;
  EXPECT_EQ(api_->buffer_free(leaked), TSR_ERR_INVALID_HANDLE);
  EXPECT_EQ(api_->stream_synchronize(s), TSR_ERR_INVALID_HANDLE);
}

TEST_F(CpuPluginTest, ThreadsAndDevicesOptions) {
  ASSERT_EQ(InitWith({{"threads", "3"}, {"devices", "3"}}), TSR_OK) << api_->last_error();
  int32_t count = 0;
  ASSERT_EQ(api_->device_count(&count), TSR_OK);
  EXPECT_EQ(count, 3);
  tsr_device_properties props{};
  props.struct_size = sizeof(props);
  ASSERT_EQ(api_->device_properties(2, &props), TSR_OK);
  EXPECT_EQ(props.compute_units, 3u);
  EXPECT_EQ(props.physical_index, 2);
}

TEST_F(CpuPluginTest, CpusetsPinEachDeviceAndSizeItsThreads) {
  // Device 0 on CPU 0, device 1 on CPU 0 too (every machine has one).
  ASSERT_EQ(InitWith({{"devices", "2"}, {"cpusets", "0;0"}}), TSR_OK) << api_->last_error();
  tsr_device_properties props{};
  props.struct_size = sizeof(props);
  ASSERT_EQ(api_->device_properties(1, &props), TSR_OK);
  EXPECT_EQ(props.compute_units, 1u);  // threads default to the set's size
  // A stream of a pinned device gets a worker thread allowed on CPU 0 only.
  auto pinned_threads = [] {
    int n = 0;
    for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
      std::ifstream in(task.path() / "status");
      std::string line;
      while (std::getline(in, line)) {
        if (line.rfind("Cpus_allowed_list:", 0) == 0) {
          n += line.substr(line.find_first_not_of(" \t", 18)) == "0";
        }
      }
    }
    return n;
  };
  const int before = pinned_threads();
  tsr_stream stream = nullptr;
  ASSERT_EQ(api_->stream_create(1, &stream), TSR_OK);
  if (std::thread::hardware_concurrency() > 1) EXPECT_EQ(pinned_threads(), before + 1);
  EXPECT_EQ(api_->stream_synchronize(stream), TSR_OK);
  api_->stream_destroy(stream);
  Shutdown();
  EXPECT_EQ(InitWith({{"devices", "2"}, {"cpusets", "0-1"}}), TSR_ERR_INVALID_ARGUMENT);
  EXPECT_THAT(api_->last_error(), HasSubstr("one per device"));
  EXPECT_EQ(InitWith({{"cpusets", "3-1"}}), TSR_ERR_INVALID_ARGUMENT);
  EXPECT_THAT(api_->last_error(), HasSubstr("'3-1'"));
}

TEST_F(CpuPluginTest, UnknownOptionNamesKeyAndKnownOnes) {
  EXPECT_EQ(InitWith({{"thread", "2"}}), TSR_ERR_INVALID_ARGUMENT);
  std::string message = api_->last_error();
  EXPECT_THAT(message, HasSubstr("'thread'"));
  EXPECT_THAT(message, HasSubstr("threads"));
  EXPECT_THAT(message, HasSubstr("devices"));
}

TEST_F(CpuPluginTest, BadOptionValuesAreRejected) {
  for (const char* bad : {"0", "-2", "abc", "", "3x", "99999"}) {
    EXPECT_EQ(InitWith({{"threads", bad}}), TSR_ERR_INVALID_ARGUMENT) << bad;
    EXPECT_THAT(api_->last_error(), HasSubstr("threads")) << bad;
  }
  EXPECT_EQ(InitWith({{"devices", "0"}}), TSR_ERR_INVALID_ARGUMENT);
  EXPECT_THAT(api_->last_error(), HasSubstr("devices"));
  tsr_init_args args{};
  args.struct_size = 8;  // older than v1.0
  EXPECT_EQ(api_->init(&args), TSR_ERR_INVALID_ARGUMENT);
  EXPECT_THAT(api_->last_error(), HasSubstr("struct_size"));
}

TEST_F(CpuPluginTest, VisibleDevicesFilterAndOrder) {
  std::vector<int32_t> visible = {3, 1, 7, 3};  // 7 does not exist, 3 repeats
  ASSERT_EQ(InitWith({{"devices", "4"}}, &visible), TSR_OK) << api_->last_error();
  int32_t count = 0;
  ASSERT_EQ(api_->device_count(&count), TSR_OK);
  ASSERT_EQ(count, 2);
  tsr_device_properties props{};
  props.struct_size = sizeof(props);
  ASSERT_EQ(api_->device_properties(0, &props), TSR_OK);
  EXPECT_EQ(props.physical_index, 3);
  ASSERT_EQ(api_->device_properties(1, &props), TSR_OK);
  EXPECT_EQ(props.physical_index, 1);
  EXPECT_NE(api_->device_properties(2, &props), TSR_OK);
}

TEST_F(CpuPluginTest, EmptyVisibleListExposesNoDevice) {
  std::vector<int32_t> visible;
  ASSERT_EQ(InitWith({}, &visible), TSR_OK) << api_->last_error();
  int32_t count = -1;
  ASSERT_EQ(api_->device_count(&count), TSR_OK);
  EXPECT_EQ(count, 0);
  tsr_buffer b;
  EXPECT_EQ(api_->buffer_alloc(0, TSR_MEM_DEVICE, 16, 0, &b), TSR_ERR_NOT_FOUND);
}

TEST_F(CpuPluginTest, DeviceProperties) {
  Init();
  tsr_device_properties props{};
  props.struct_size = sizeof(props);
  ASSERT_EQ(api_->device_properties(0, &props), TSR_OK);
  EXPECT_GT(std::string(props.name).size(), 0u);
  EXPECT_EQ(props.type, TSR_DEVICE_CPU);
  EXPECT_EQ(props.alignment, 64u);
  EXPECT_GT(props.memory_total, 0u);
  EXPECT_LE(props.memory_free, props.memory_total);
  EXPECT_EQ(props.compute_units, 2u);
  for (tsr_dtype d : {TSR_DTYPE_F32, TSR_DTYPE_F16, TSR_DTYPE_BF16, TSR_DTYPE_I32,
                      TSR_DTYPE_I64, TSR_DTYPE_U8}) {
    EXPECT_TRUE(props.dtype_mask & (uint64_t{1} << d)) << d;
  }
  EXPECT_EQ(api_->device_properties(1, &props), TSR_ERR_NOT_FOUND);
  EXPECT_EQ(api_->device_properties(-1, &props), TSR_ERR_NOT_FOUND);
  EXPECT_EQ(api_->device_properties(0, nullptr), TSR_ERR_INVALID_ARGUMENT);
  props.struct_size = 4;
  EXPECT_EQ(api_->device_properties(0, &props), TSR_ERR_INVALID_ARGUMENT);
}

TEST_F(CpuPluginTest, BufferAllocAlignmentAndInfo) {
  Init();
  for (uint64_t align : {0ull, 1ull, 64ull, 4096ull}) {
    tsr_buffer b;
    ASSERT_EQ(api_->buffer_alloc(0, TSR_MEM_DEVICE, 100, align, &b), TSR_OK);
    tsr_buffer_info info{};
    info.struct_size = sizeof(info);
    ASSERT_EQ(api_->buffer_info(b, &info), TSR_OK);
    EXPECT_EQ(info.size, 100u);
    EXPECT_GE(info.reserved_size, 100u);
    EXPECT_EQ(info.kind, TSR_MEM_DEVICE);
    ASSERT_NE(info.host_pointer, nullptr);
    uint64_t want = align > 64 ? align : 64;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(info.host_pointer) % want, 0u);
    EXPECT_EQ(info.reserved_size % want, 0u);
    EXPECT_EQ(api_->buffer_free(b), TSR_OK);
  }
  tsr_buffer b;
  EXPECT_EQ(api_->buffer_alloc(0, TSR_MEM_DEVICE, 100, 3, &b), TSR_ERR_INVALID_ARGUMENT);
  EXPECT_THAT(api_->last_error(), HasSubstr("power of two"));
  EXPECT_EQ(api_->buffer_alloc(0, 7, 100, 0, &b), TSR_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(api_->buffer_alloc(0, TSR_MEM_DEVICE, 100, 0, nullptr), TSR_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(api_->buffer_alloc(3, TSR_MEM_DEVICE, 100, 0, &b), TSR_ERR_NOT_FOUND);

  tsr_buffer pinned;
  ASSERT_EQ(api_->buffer_alloc(0, TSR_MEM_PINNED_HOST, 10, 0, &pinned), TSR_OK);
  tsr_buffer_info info{};
  info.struct_size = sizeof(info);
  ASSERT_EQ(api_->buffer_info(pinned, &info), TSR_OK);
  EXPECT_EQ(info.kind, TSR_MEM_PINNED_HOST);
  EXPECT_NE(info.host_pointer, nullptr);
  info.struct_size = 4;
  EXPECT_EQ(api_->buffer_info(pinned, &info), TSR_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(api_->buffer_info(pinned, nullptr), TSR_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(api_->buffer_free(pinned), TSR_OK);

  tsr_buffer z1, z2;
  ASSERT_EQ(api_->buffer_alloc(0, TSR_MEM_DEVICE, 0, 0, &z1), TSR_OK);
  ASSERT_EQ(api_->buffer_alloc(0, TSR_MEM_DEVICE, 0, 0, &z2), TSR_OK);
  EXPECT_NE(z1, z2);
  EXPECT_EQ(api_->buffer_free(z1), TSR_OK);
  EXPECT_EQ(api_->buffer_free(z2), TSR_OK);
}

TEST_F(CpuPluginTest, ImpossibleAllocationIsOutOfMemory) {
  Init();
  tsr_buffer b = nullptr;
  EXPECT_EQ(api_->buffer_alloc(0, TSR_MEM_DEVICE, uint64_t{1} << 62, 0, &b),
            TSR_ERR_OUT_OF_MEMORY);
  EXPECT_THAT(api_->last_error(), HasSubstr("cannot allocate"));
  EXPECT_EQ(api_->buffer_alloc(0, TSR_MEM_DEVICE, UINT64_MAX, 0, &b), TSR_ERR_OUT_OF_MEMORY);
  EXPECT_EQ(api_->buffer_alloc(0, TSR_MEM_PINNED_HOST, UINT64_MAX - 10, 64, &b),
            TSR_ERR_OUT_OF_MEMORY);
}

TEST_F(CpuPluginTest, InvalidHandlesAreRejectedEverywhere) {
  Init();
  tsr_buffer freed_buffer;
  ASSERT_EQ(api_->buffer_alloc(0, TSR_MEM_DEVICE, 64, 0, &freed_buffer), TSR_OK);
  ASSERT_EQ(api_->buffer_free(freed_buffer), TSR_OK);
  tsr_stream freed_stream;
  ASSERT_EQ(api_->stream_create(0, &freed_stream), TSR_OK);
  ASSERT_EQ(api_->stream_destroy(freed_stream), TSR_OK);
  tsr_event freed_event;
  ASSERT_EQ(api_->event_create(0, &freed_event), TSR_OK);
  ASSERT_EQ(api_->event_destroy(freed_event), TSR_OK);
  tsr_buffer good;
  ASSERT_EQ(api_->buffer_alloc(0, TSR_MEM_DEVICE, 64, 0, &good), TSR_OK);
  tsr_event event;
  ASSERT_EQ(api_->event_create(0, &event), TSR_OK);

  std::vector<tsr_buffer> bad_buffers = {nullptr, reinterpret_cast<tsr_buffer>(0x1234),
                                         freed_buffer, reinterpret_cast<tsr_buffer>(stream_)};
  std::vector<tsr_stream> bad_streams = {reinterpret_cast<tsr_stream>(0x1234), freed_stream,
                                         reinterpret_cast<tsr_stream>(good)};
  std::vector<tsr_event> bad_events = {nullptr, reinterpret_cast<tsr_event>(0x1234),
                                       freed_event};
  char host[64] = {};
  tsr_buffer_info info{};
  info.struct_size = sizeof(info);
  for (tsr_buffer b : bad_buffers) {
    EXPECT_EQ(api_->buffer_free(b), TSR_ERR_INVALID_HANDLE);
    EXPECT_EQ(api_->buffer_info(b, &info), TSR_ERR_INVALID_HANDLE);
    EXPECT_EQ(api_->copy_host_to_device(nullptr, b, 0, host, 8), TSR_ERR_INVALID_HANDLE);
    EXPECT_EQ(api_->copy_device_to_host(stream_, host, b, 0, 8), TSR_ERR_INVALID_HANDLE);
    EXPECT_EQ(api_->copy_device_to_device(nullptr, good, 0, b, 0, 8), TSR_ERR_INVALID_HANDLE);
    EXPECT_EQ(api_->copy_device_to_device(nullptr, b, 0, good, 0, 8), TSR_ERR_INVALID_HANDLE);
    EXPECT_EQ(api_->memset(nullptr, b, 0, 0, 8), TSR_ERR_INVALID_HANDLE);
  }
  EXPECT_THAT(api_->last_error(), HasSubstr("not a live buffer"));
  for (tsr_stream s : bad_streams) {
    EXPECT_EQ(api_->stream_synchronize(s), TSR_ERR_INVALID_HANDLE);
    EXPECT_EQ(api_->stream_query(s), TSR_ERR_INVALID_HANDLE);
    EXPECT_EQ(api_->stream_destroy(s), TSR_ERR_INVALID_HANDLE);
    EXPECT_EQ(api_->event_record(event, s), TSR_ERR_INVALID_HANDLE);
    EXPECT_EQ(api_->stream_wait_event(s, event), TSR_ERR_INVALID_HANDLE);
    EXPECT_EQ(api_->copy_host_to_device(s, good, 0, host, 8), TSR_ERR_INVALID_HANDLE);
    EXPECT_EQ(api_->memset(s, good, 0, 0, 8), TSR_ERR_INVALID_HANDLE);
  }
  EXPECT_EQ(api_->stream_synchronize(nullptr), TSR_ERR_INVALID_HANDLE);
  for (tsr_event e : bad_events) {
    EXPECT_EQ(api_->event_destroy(e), TSR_ERR_INVALID_HANDLE);
    EXPECT_EQ(api_->event_record(e, stream_), TSR_ERR_INVALID_HANDLE);
    EXPECT_EQ(api_->stream_wait_event(stream_, e), TSR_ERR_INVALID_HANDLE);
    EXPECT_EQ(api_->event_synchronize(e), TSR_ERR_INVALID_HANDLE);
    EXPECT_EQ(api_->event_query(e), TSR_ERR_INVALID_HANDLE);
  }
  tsr_tensor t{};
  t.struct_size = sizeof(t);
  for (tsr_kernel k : {static_cast<tsr_kernel>(nullptr), reinterpret_cast<tsr_kernel>(0x1234),
                       reinterpret_cast<tsr_kernel>(good)}) {
    EXPECT_EQ(api_->launch(k, stream_, &t, 1, &t, 1, nullptr, 0), TSR_ERR_INVALID_HANDLE);
  }
  tsr_comm comm = reinterpret_cast<tsr_comm>(0x1234);
  EXPECT_EQ(api_->comm->comm_destroy(comm), TSR_ERR_INVALID_HANDLE);
  EXPECT_EQ(api_->comm->comm_destroy(nullptr), TSR_ERR_INVALID_HANDLE);
  EXPECT_EQ(api_->buffer_free(good), TSR_OK);
  EXPECT_EQ(api_->event_destroy(event), TSR_OK);
}

TEST_F(CpuPluginTest, NullOutPointersAreInvalidArguments) {
  Init();
  EXPECT_EQ(api_->device_count(nullptr), TSR_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(api_->stream_create(0, nullptr), TSR_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(api_->event_create(0, nullptr), TSR_ERR_INVALID_ARGUMENT);
  size_t count;
  const tsr_op_signature* ops;
  EXPECT_EQ(api_->list_ops(nullptr, &count), TSR_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(api_->list_ops(&ops, nullptr), TSR_ERR_INVALID_ARGUMENT);
  tsr_op_signature sig{};
  sig.struct_size = sizeof(sig);
  EXPECT_EQ(api_->resolve_op(0, &sig, nullptr), TSR_ERR_INVALID_ARGUMENT);
  tsr_kernel k;
  EXPECT_EQ(api_->resolve_op(0, nullptr, &k), TSR_ERR_INVALID_ARGUMENT);
  tsr_stream s;
  EXPECT_EQ(api_->stream_create(4, &s), TSR_ERR_NOT_FOUND);
}

TEST_F(CpuPluginTest, CopiesAreBoundsCheckedAndWorkAcrossDevices) {
  ASSERT_EQ(InitWith({{"devices", "2"}, {"threads", "1"}}), TSR_OK);
  ASSERT_EQ(api_->stream_create(1, &stream_), TSR_OK);
  tsr_buffer a, b;
  ASSERT_EQ(api_->buffer_alloc(0, TSR_MEM_DEVICE, 16, 0, &a), TSR_OK);
  ASSERT_EQ(api_->buffer_alloc(1, TSR_MEM_PINNED_HOST, 16, 0, &b), TSR_OK);
  uint8_t src[16];
  for (int i = 0; i < 16; ++i) src[i] = static_cast<uint8_t>(i + 1);
  EXPECT_EQ(api_->copy_host_to_device(nullptr, a, 8, src, 9), TSR_ERR_INVALID_ARGUMENT);
  EXPECT_THAT(api_->last_error(), HasSubstr("exceeds"));
  EXPECT_EQ(api_->copy_host_to_device(nullptr, a, UINT64_MAX, src, 2), TSR_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(api_->copy_host_to_device(nullptr, a, 0, nullptr, 2), TSR_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(api_->memset(nullptr, a, 10, 0, 7), TSR_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(api_->copy_device_to_device(nullptr, b, 0, a, 1, 16), TSR_ERR_INVALID_ARGUMENT);
  ASSERT_EQ(api_->copy_host_to_device(nullptr, a, 0, src, 16), TSR_OK);
  // Device 0 -> device 1 on a stream of device 1, then a memset and D2H.
  ASSERT_EQ(api_->copy_device_to_device(stream_, b, 0, a, 0, 16), TSR_OK);
  ASSERT_EQ(api_->memset(stream_, b, 4, 0xAB, 4), TSR_OK);
  uint8_t out[16] = {};
  ASSERT_EQ(api_->copy_device_to_host(stream_, out, b, 0, 16), TSR_OK);
  ASSERT_EQ(api_->stream_synchronize(stream_), TSR_OK);
  for (int i = 0; i < 16; ++i) {
    EXPECT_EQ(out[i], (i >= 4 && i < 8) ? 0xAB : i + 1) << i;
  }
  // Zero-size copies at the very end are fine.
  EXPECT_EQ(api_->copy_host_to_device(nullptr, a, 16, src, 0), TSR_OK);
  EXPECT_EQ(api_->buffer_free(a), TSR_OK);
  EXPECT_EQ(api_->buffer_free(b), TSR_OK);
}

// Reads `b` back whole (on `stream`, or synchronously) and expects the
// bytes of `want`, naming the first byte that differs.
void ExpectBufferHolds(const tsr_plugin_api* api, tsr_buffer b, tsr_stream stream,
                       tsr_stream sync, const std::vector<uint8_t>& want) {
  std::vector<uint8_t> out(want.size());
  ASSERT_EQ(api->copy_device_to_host(stream, out.data(), b, 0, out.size()), TSR_OK);
  ASSERT_EQ(api->stream_synchronize(sync), TSR_OK);
  if (out != want) {
    const auto bad = std::mismatch(out.begin(), out.end(), want.begin()).first;
    FAIL() << "byte " << (bad - out.begin()) << " differs";
  }
}

// Host-to-device copies of a few MiB and more run split over the device's
// threads, each part's destination pages populated first: every byte lands
// where it belongs for sizes around the split threshold and odd offsets,
// synchronous and on a stream, and bytes outside the range stay as they
// were.
TEST_F(CpuPluginTest, LargeHostToDeviceCopiesSplitOverThreads) {
  ASSERT_EQ(InitWith({{"threads", "3"}}), TSR_OK);
  ASSERT_EQ(api_->stream_create(0, &stream_), TSR_OK);
  constexpr uint64_t kMiB = uint64_t{1} << 20;
  const uint64_t capacity = 14 * kMiB;
  std::vector<uint8_t> src(capacity);
  for (uint64_t i = 0; i < capacity; ++i) src[i] = static_cast<uint8_t>(i * 2654435761u >> 13);
  for (uint64_t size : {4 * kMiB - 1, 4 * kMiB, 4 * kMiB + 4095, 6 * kMiB + 7, 13 * kMiB + 1}) {
    for (uint64_t offset : {uint64_t{0}, uint64_t{1}, uint64_t{4096 + 64}, kMiB - 3}) {
      for (bool on_stream : {false, true}) {
        SCOPED_TRACE(::testing::Message() << "size " << size << " offset " << offset
                                        << (on_stream ? " on a stream" : ""));
        tsr_buffer b;
        ASSERT_EQ(api_->buffer_alloc(0, TSR_MEM_DEVICE, capacity, 0, &b), TSR_OK);
        ASSERT_EQ(api_->memset(nullptr, b, 0, 0x5A, capacity), TSR_OK);
        ASSERT_EQ(api_->copy_host_to_device(on_stream ? stream_ : nullptr, b, offset,
                                            src.data(), size),
                  TSR_OK);
        std::vector<uint8_t> want(capacity, 0x5A);
        std::copy(src.begin(), src.begin() + static_cast<int64_t>(size),
                  want.begin() + static_cast<int64_t>(offset));
        ExpectBufferHolds(api_, b, on_stream ? stream_ : nullptr, stream_, want);
        EXPECT_EQ(api_->buffer_free(b), TSR_OK);
      }
    }
  }
}

// Large zero fills give their whole pages back to the kernel and memset the
// partial pages at the ends: the range reads as zeros, the bytes around it
// keep their values, and the buffer can be written and read again after.
TEST_F(CpuPluginTest, LargeZeroFillsReadAsZerosAndKeepTheirNeighbours) {
  ASSERT_EQ(InitWith({{"threads", "2"}}), TSR_OK);
  ASSERT_EQ(api_->stream_create(0, &stream_), TSR_OK);
  constexpr uint64_t kMiB = uint64_t{1} << 20;
  const uint64_t capacity = 12 * kMiB;
  std::vector<uint8_t> pattern(capacity);
  for (uint64_t i = 0; i < capacity; ++i) pattern[i] = static_cast<uint8_t>(1 + i % 251);
  for (uint64_t size : {4 * kMiB - 1, 4 * kMiB + 4097, 11 * kMiB}) {
    for (uint64_t offset : {uint64_t{0}, uint64_t{3}, uint64_t{4096}, kMiB - 5}) {
      for (bool on_stream : {false, true}) {
        SCOPED_TRACE(::testing::Message() << "size " << size << " offset " << offset
                                          << (on_stream ? " on a stream" : ""));
        tsr_buffer b;
        ASSERT_EQ(api_->buffer_alloc(0, TSR_MEM_DEVICE, capacity, 0, &b), TSR_OK);
        ASSERT_EQ(api_->copy_host_to_device(nullptr, b, 0, pattern.data(), capacity), TSR_OK);
        ASSERT_EQ(api_->memset(on_stream ? stream_ : nullptr, b, offset, 0, size), TSR_OK);
        std::vector<uint8_t> want = pattern;
        std::fill(want.begin() + static_cast<int64_t>(offset),
                  want.begin() + static_cast<int64_t>(offset + size), 0);
        ExpectBufferHolds(api_, b, on_stream ? stream_ : nullptr, stream_, want);
        // Written again after the discard: the new bytes stay.
        ASSERT_EQ(api_->copy_host_to_device(nullptr, b, 0, pattern.data(), capacity), TSR_OK);
        ExpectBufferHolds(api_, b, nullptr, stream_, pattern);
        EXPECT_EQ(api_->buffer_free(b), TSR_OK);
      }
    }
  }
}

// huge_pages=1 puts buffers of 2 MiB and more on 2 MiB boundaries (for
// transparent huge pages); the default leaves them at the device alignment;
// other values are refused by name.
TEST_F(CpuPluginTest, HugePagesOptionAlignsLargeBuffers) {
  EXPECT_EQ(InitWith({{"huge_pages", "2"}}), TSR_ERR_INVALID_ARGUMENT);
  EXPECT_THAT(api_->last_error(), HasSubstr("huge_pages"));
  ASSERT_EQ(InitWith({{"huge_pages", "1"}}), TSR_OK) << api_->last_error();
  constexpr uint64_t kTwoMiB = uint64_t{2} << 20;
  for (int i = 0; i < 4; ++i) {
    tsr_buffer b;
    ASSERT_EQ(api_->buffer_alloc(0, TSR_MEM_DEVICE, kTwoMiB + 64 * i, 0, &b), TSR_OK);
    tsr_buffer_info info{};
    info.struct_size = sizeof(info);
    ASSERT_EQ(api_->buffer_info(b, &info), TSR_OK);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(info.host_pointer) % kTwoMiB, 0u) << i;
    EXPECT_EQ(api_->buffer_free(b), TSR_OK);
  }
}

TEST_F(CpuPluginTest, ListOpsCoversEveryV1Op) {
  Init();
  const tsr_op_signature* ops = nullptr;
  size_t count = 0;
  ASSERT_EQ(api_->list_ops(&ops, &count), TSR_OK);
  std::set<std::pair<uint32_t, tsr_dtype>> seen;
  for (size_t i = 0; i < count; ++i) {
    EXPECT_EQ(ops[i].struct_size, sizeof(tsr_op_signature));
    // Version 1 everywhere, plus linear v2 (ABI 1.1; ops_linear_w8_test.cc),
    // embedding v2 (a vocabulary shard) and decoder_layer v2 (a
    // tensor-parallel rank), both ABI 1.4, linear / decoder_layer v3
    // (w8a8, ABI 1.5) and v4 (w4a8, ABI 1.6), linear v5 (w6a8, ABI 1.8).
    EXPECT_TRUE(ops[i].version == 1u ||
                (ops[i].version == 5u && ops[i].op == TSR_OP_LINEAR) ||
                (ops[i].version == 2u &&
                 (ops[i].op == TSR_OP_LINEAR || ops[i].op == TSR_OP_EMBEDDING ||
                  ops[i].op == TSR_OP_DECODER_LAYER)) ||
                ((ops[i].version == 3u || ops[i].version == 4u) &&
                 (ops[i].op == TSR_OP_LINEAR || ops[i].op == TSR_OP_DECODER_LAYER)))
        << "entry " << i;
    const uint32_t op = ops[i].op;
    // The dtype that names the variant: table / q / first argument.
    seen.insert({op, ops[i].dtypes[op == TSR_OP_EMBEDDING ? 1 : op == TSR_OP_ROPE ? 2 : 0]});
    tsr_kernel k = nullptr;
    EXPECT_EQ(api_->resolve_op(0, &ops[i], &k), TSR_OK) << api_->last_error();
    EXPECT_NE(k, nullptr);
  }
  for (uint32_t op = 1; op < TSR_OP_COUNT_V1; ++op) {
    EXPECT_TRUE(seen.count({op, TSR_DTYPE_F32})) << "op " << op;
    if (op != TSR_OP_SAMPLE && op != TSR_OP_LOGPROBS) {
      EXPECT_TRUE(seen.count({op, TSR_DTYPE_BF16})) << "op " << op;
    }
  }
  EXPECT_TRUE(seen.count({TSR_OP_EMBEDDING, TSR_DTYPE_F16}));
  tsr_op_signature sig = ops[0];  // embedding: it has no version 3
  sig.version = 3;
  tsr_kernel k;
  EXPECT_EQ(api_->resolve_op(0, &sig, &k), TSR_ERR_NOT_FOUND);
  sig = ops[0];
  sig.op = 999;
  EXPECT_EQ(api_->resolve_op(0, &sig, &k), TSR_ERR_NOT_FOUND);
  sig = ops[0];
  sig.dtypes[1] = TSR_DTYPE_I8;
  EXPECT_EQ(api_->resolve_op(0, &sig, &k), TSR_ERR_NOT_FOUND);
  EXPECT_THAT(api_->last_error(), HasSubstr("offers"));
  sig = ops[0];
  sig.struct_size = 4;
  EXPECT_EQ(api_->resolve_op(0, &sig, &k), TSR_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(api_->resolve_op(5, &ops[0], &k), TSR_ERR_NOT_FOUND);
}

TEST_F(CpuPluginTest, LaunchValidatesSynchronously) {
  Init();
  DeviceTensor x = Make(TSR_DTYPE_F32, {2, 4}, {1, 2, 3, 4, 5, 6, 7, 8});
  DeviceTensor w = Make(TSR_DTYPE_F32, {4}, {1, 1, 1, 1});
  DeviceTensor y = Zeros(TSR_DTYPE_F32, {2, 4});
  DeviceTensor w_bf16 = Make(TSR_DTYPE_BF16, {4}, {1, 1, 1, 1});
  tsr_rms_norm_params params{sizeof(params), 1e-6f};
  tsr_kernel k = Resolve(TSR_OP_RMS_NORM, {TSR_DTYPE_F32, TSR_DTYPE_F32, TSR_DTYPE_F32});
  tsr_tensor in[2] = {x.desc, w.desc};
  tsr_tensor out[1] = {y.desc};
  auto launch = [&](const void* p, size_t size) {
    return api_->launch(k, stream_, in, 2, out, 1, p, size);
  };
  EXPECT_EQ(launch(&params, sizeof(params)), TSR_OK) << api_->last_error();
  EXPECT_EQ(launch(nullptr, 0), TSR_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(launch(&params, 4), TSR_ERR_INVALID_ARGUMENT);
  tsr_rms_norm_params small{4, 1e-6f};
  EXPECT_EQ(launch(&small, sizeof(small)), TSR_ERR_INVALID_ARGUMENT);
  tsr_rms_norm_params neg{sizeof(params), -1.0f};
  EXPECT_EQ(launch(&neg, sizeof(neg)), TSR_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(api_->launch(k, stream_, in, 1, out, 1, &params, sizeof(params)),
            TSR_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(api_->launch(k, stream_, nullptr, 2, out, 1, &params, sizeof(params)),
            TSR_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(api_->launch(k, nullptr, in, 2, out, 1, &params, sizeof(params)),
            TSR_ERR_INVALID_HANDLE);
  in[1] = w_bf16.desc;  // dtype differs from the kernel's signature
  EXPECT_EQ(launch(&params, sizeof(params)), TSR_ERR_INVALID_ARGUMENT);
  EXPECT_THAT(api_->last_error(), HasSubstr("bf16"));
  in[1] = w.desc;
  in[1].shape[0] = 3;  // H mismatch
  EXPECT_EQ(launch(&params, sizeof(params)), TSR_ERR_INVALID_ARGUMENT);
  in[1] = w.desc;
  in[0].strides[0] = 5;  // extent beyond the buffer
  EXPECT_EQ(launch(&params, sizeof(params)), TSR_ERR_INVALID_ARGUMENT);
  EXPECT_THAT(api_->last_error(), HasSubstr("beyond"));
  in[0] = x.desc;
  in[0].struct_size = 8;
  EXPECT_EQ(launch(&params, sizeof(params)), TSR_ERR_INVALID_ARGUMENT);
  in[0] = x.desc;
  in[0].ndim = 7;
  EXPECT_EQ(launch(&params, sizeof(params)), TSR_ERR_INVALID_ARGUMENT);
  in[0] = x.desc;
  in[0].shape[1] = -4;
  EXPECT_EQ(launch(&params, sizeof(params)), TSR_ERR_INVALID_ARGUMENT);
  in[0] = x.desc;
  in[0].offset = 2;  // misaligned for f32
  EXPECT_EQ(launch(&params, sizeof(params)), TSR_ERR_INVALID_ARGUMENT);
  in[0] = x.desc;
  in[0].buffer = reinterpret_cast<tsr_buffer>(0x1234);
  EXPECT_EQ(launch(&params, sizeof(params)), TSR_ERR_INVALID_HANDLE);
  EXPECT_EQ(api_->stream_synchronize(stream_), TSR_OK);
}

TEST_F(CpuPluginTest, KernelAndStreamMustShareADevice) {
  ASSERT_EQ(InitWith({{"devices", "2"}, {"threads", "1"}}), TSR_OK);
  ASSERT_EQ(api_->stream_create(1, &stream_), TSR_OK);
  DeviceTensor a = Make(TSR_DTYPE_F32, {2}, {1, 2});
  DeviceTensor y = Zeros(TSR_DTYPE_F32, {2});
  tsr_kernel k0 = Resolve(TSR_OP_ADD, {TSR_DTYPE_F32, TSR_DTYPE_F32, TSR_DTYPE_F32}, 0);
  tsr_tensor in[2] = {a.desc, a.desc};
  EXPECT_EQ(api_->launch(k0, stream_, in, 2, &y.desc, 1, nullptr, 0), TSR_ERR_INVALID_ARGUMENT);
  tsr_kernel k1 = Resolve(TSR_OP_ADD, {TSR_DTYPE_F32, TSR_DTYPE_F32, TSR_DTYPE_F32}, 1);
  EXPECT_EQ(api_->launch(k1, stream_, in, 2, &y.desc, 1, nullptr, 0), TSR_OK);
  ASSERT_EQ(api_->stream_synchronize(stream_), TSR_OK);
  ExpectNear(Read(y), {2, 4}, 0);
}

}  // namespace
}  // namespace tessera::cpu::testing
