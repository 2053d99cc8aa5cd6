// Test fixture for a plugin's unit tests (the cpu and opencl plugins):
// opens the built .so named by PluginPath() through PluginLibrary (the same
// loader the runtime uses), initialises it with options, and offers helpers
// to move tensors (any dtype, any strides) in and out and to launch ops
// synchronously through the raw C table.
#ifndef TESSERA_TESTS_TESTING_PLUGIN_TEST_UTIL_H_
#define TESSERA_TESTS_TESTING_PLUGIN_TEST_UTIL_H_

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/dtype.h"
#include "runtime/plugin_library.h"

namespace tessera::testing {

// A tensor on the plugin plus what the test needs to read it back.
struct DeviceTensor {
  tsr_buffer buffer = nullptr;
  tsr_tensor desc{};
  uint64_t bytes = 0;
};

inline std::vector<int64_t> ContiguousStrides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (int i = static_cast<int>(shape.size()) - 2; i >= 0; --i) {
    strides[i] = strides[i + 1] * shape[i + 1];
  }
  return strides;
}

inline int64_t NumElements(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

// Element offset of logical (row-major) index `linear` under `strides`.
inline int64_t StridedOffset(const tsr_tensor& t, int64_t linear) {
  int64_t offset = 0;
  for (int i = t.ndim - 1; i >= 0; --i) {
    offset += (linear % t.shape[i]) * t.strides[i];
    linear /= t.shape[i];
  }
  return offset;
}

// Rounds `v` to what a tensor of `dtype` stores.
inline float RoundTo(tsr_dtype dtype, float v) {
  if (dtype == TSR_DTYPE_BF16) return Bf16ToFloat(FloatToBf16(v));
  if (dtype == TSR_DTYPE_F16) return F16ToFloat(FloatToF16(v));
  return v;
}

class PluginTest : public ::testing::Test {
 protected:
  using Options = std::vector<std::pair<std::string, std::string>>;

  // The plugin .so under test.
  virtual std::string PluginPath() const = 0;

  void SetUp() override {
    auto lib = runtime::PluginLibrary::Open(PluginPath());
    ASSERT_TRUE(lib.ok()) << lib.status().ToString();
    lib_ = std::move(*lib);
    api_ = &lib_->api();
  }

  void TearDown() override {
    if (initialised_) Shutdown();
  }

  // Frees the test's tensors, destroys stream_ and shuts the plugin down;
  // a later InitWith starts afresh.
  void Shutdown() {
    for (DeviceTensor& t : owned_) api_->buffer_free(t.buffer);
    owned_.clear();
    if (stream_ != nullptr) api_->stream_destroy(stream_);
    stream_ = nullptr;
    EXPECT_EQ(api_->shutdown(), TSR_OK) << api_->last_error();
    initialised_ = false;
  }

  // Initialises with `options`; creates stream_ on device 0.
  tsr_status InitWith(const Options& options, const std::vector<int32_t>* visible = nullptr) {
    std::vector<tsr_option> opts;
    for (const auto& [k, v] : options) opts.push_back(tsr_option{k.c_str(), v.c_str()});
    tsr_init_args args{};
    args.struct_size = sizeof(args);
    args.options = opts.data();
    args.num_options = opts.size();
    args.visible_devices = visible ? visible->data() : nullptr;
    args.num_visible_devices = visible ? static_cast<int32_t>(visible->size()) : -1;
    tsr_status status = api_->init(&args);
    if (status == TSR_OK) initialised_ = true;
    return status;
  }

  void Init(const Options& options = {{"threads", "2"}}) {
    ASSERT_EQ(InitWith(options), TSR_OK) << api_->last_error();
    ASSERT_EQ(api_->stream_create(0, &stream_), TSR_OK) << api_->last_error();
  }

  // Uploads `values` (logical row-major order) into a new tensor of `dtype`
  // with `strides` (contiguous when empty) at byte `offset`; unused bytes of
  // the buffer hold a 0x7f pattern.
  DeviceTensor Make(tsr_dtype dtype, std::vector<int64_t> shape, const std::vector<double>& values,
                    std::vector<int64_t> strides = {}, uint64_t offset = 0, int device = 0) {
    if (strides.empty()) strides = ContiguousStrides(shape);
    DeviceTensor t;
    t.desc.struct_size = sizeof(tsr_tensor);
    t.desc.dtype = dtype;
    t.desc.offset = offset;
    t.desc.ndim = static_cast<int32_t>(shape.size());
    int64_t extent = 1;
    bool empty = false;
    for (size_t i = 0; i < shape.size(); ++i) {
      t.desc.shape[i] = shape[i];
      t.desc.strides[i] = strides[i];
      if (shape[i] == 0) empty = true;
      extent += shape[i] > 0 ? (shape[i] - 1) * strides[i] : 0;
    }
    const size_t esize = DTypeSize(dtype);
    t.bytes = offset + (empty ? 0 : extent * esize);
    std::vector<char> host(t.bytes, 0x7f);
    const int64_t n = NumElements(shape);
    EXPECT_TRUE(values.empty() || static_cast<int64_t>(values.size()) == n);
    for (int64_t i = 0; i < n && !values.empty(); ++i) {
      StoreFromDouble(host.data() + offset, dtype, StridedOffset(t.desc, i), values[i]);
    }
    EXPECT_EQ(api_->buffer_alloc(device, TSR_MEM_DEVICE, t.bytes, 0, &t.buffer), TSR_OK)
        << api_->last_error();
    t.desc.buffer = t.buffer;
    if (t.bytes > 0) {
      EXPECT_EQ(api_->copy_host_to_device(nullptr, t.buffer, 0, host.data(), t.bytes), TSR_OK)
          << api_->last_error();
    }
    owned_.push_back(t);
    return t;
  }

  // A tensor of `dtype` filled with `fill` (outputs).
  DeviceTensor Zeros(tsr_dtype dtype, std::vector<int64_t> shape, std::vector<int64_t> strides = {},
                     double fill = 0.0) {
    std::vector<double> values(NumElements(shape), fill);
    return Make(dtype, std::move(shape), values, std::move(strides));
  }

  // Reads a tensor back in logical row-major order.
  std::vector<double> Read(const DeviceTensor& t) {
    std::vector<char> host(t.bytes);
    if (t.bytes > 0) {
      EXPECT_EQ(api_->copy_device_to_host(nullptr, host.data(), t.buffer, 0, t.bytes), TSR_OK)
          << api_->last_error();
    }
    int64_t n = 1;
    for (int i = 0; i < t.desc.ndim; ++i) n *= t.desc.shape[i];
    std::vector<double> out(n);
    for (int64_t i = 0; i < n; ++i) {
      out[i] = LoadAsDouble(host.data() + t.desc.offset, t.desc.dtype, StridedOffset(t.desc, i));
    }
    return out;
  }

  tsr_kernel Resolve(tsr_op_id op, std::vector<tsr_dtype> dtypes, int device = 0) {
    tsr_op_signature sig{};
    sig.struct_size = sizeof(sig);
    sig.op = op;
    sig.version = 1;
    sig.num_args = static_cast<uint32_t>(dtypes.size());
    for (size_t i = 0; i < dtypes.size(); ++i) sig.dtypes[i] = dtypes[i];
    tsr_kernel kernel = nullptr;
    EXPECT_EQ(api_->resolve_op(device, &sig, &kernel), TSR_OK) << api_->last_error();
    return kernel;
  }

  // Resolves from the tensors' dtypes, launches on stream_, synchronises.
  tsr_status Run(tsr_op_id op, const std::vector<DeviceTensor>& in,
                 const std::vector<DeviceTensor>& out, const void* params = nullptr,
                 size_t params_size = 0) {
    std::vector<tsr_dtype> dtypes;
    std::vector<tsr_tensor> ins, outs;
    for (const auto& t : in) {
      dtypes.push_back(t.desc.dtype);
      ins.push_back(t.desc);
    }
    for (const auto& t : out) {
      dtypes.push_back(t.desc.dtype);
      outs.push_back(t.desc);
    }
    tsr_kernel kernel = Resolve(op, dtypes);
    tsr_status status = api_->launch(kernel, stream_, ins.data(), ins.size(), outs.data(),
                                     outs.size(), params, params_size);
    if (status != TSR_OK) return status;
    return api_->stream_synchronize(stream_);
  }

  std::unique_ptr<runtime::PluginLibrary> lib_;
  const tsr_plugin_api* api_ = nullptr;
  bool initialised_ = false;
  tsr_stream stream_ = nullptr;
  std::vector<DeviceTensor> owned_;
};

// Expects `actual` to match `expected` within abs + rel * |expected|.
inline void ExpectNear(const std::vector<double>& actual, const std::vector<double>& expected,
                       double abs_tol, double rel_tol = 0.0) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < actual.size(); ++i) {
    EXPECT_NEAR(actual[i], expected[i], abs_tol + rel_tol * std::fabs(expected[i]))
        << "at element " << i;
  }
}

}  // namespace tessera::testing

#endif  // TESSERA_TESTS_TESTING_PLUGIN_TEST_UTIL_H_
