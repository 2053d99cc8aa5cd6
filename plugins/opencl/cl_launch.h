// How an op's host side launches OpenCL kernels (see kernels/common.cl for
// the kernel-side conventions).
//
// An op is `Status Enqueue<Op>(const OpCall& call, LaunchContext& ctx)`
// (cl_ops.h): it picks kernels by name (KernelName("add", dtype) ->
// "add_f32"), collects their arguments in a KernelArgs (without the status
// record, which Enqueue prepends as argument 0) and enqueues them on the
// launch's stream with an NdRange. Enqueue never waits for the device.
// Scratch() hands out device memory private to the stream for the op's
// intermediate results (valid until the op's last kernel ran; the stream's
// in-order queue serialises its users).
//
// Thread-safety: a LaunchContext lives for one launch on one host thread.
#ifndef TESSERA_PLUGINS_OPENCL_CL_LAUNCH_H_
#define TESSERA_PLUGINS_OPENCL_CL_LAUNCH_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "cl_headers.h"

namespace tessera::opencl {

class Device;
class Stream;

// The layout of a tensor as kernels see it (tsr_layout in common.cl):
// offset, shape and strides in elements.
struct ClLayout {
  cl_long offset;
  cl_long ndim;
  cl_long shape[TSR_MAX_DIMS];
  cl_long strides[TSR_MAX_DIMS];
};
static_assert(sizeof(ClLayout) == 112, "ClLayout must match tsr_layout in common.cl");

ClLayout LayoutOf(const TensorView& view);
// The same tensor seen as [rows, cols] (the kernels' tsr_row_offset then
// costs one multiply instead of a div/mod per dim) when its leading dims
// collapse into one with a single stride; LayoutOf otherwise.
ClLayout RowsLayoutOf(const TensorView& view);
// The same tensor seen as one dim [numel] (tsr_elem_offset: one multiply)
// when all dims collapse into one stride; LayoutOf otherwise.
ClLayout FlatLayoutOf(const TensorView& view);
// The cl_mem behind a validated view.
cl_mem MemOf(const TensorView& view);

// "f32", "bf16", "f16", "i32" (the kernel name suffixes).
const char* DTypeSuffix(tsr_dtype dtype);
// KernelName("add", TSR_DTYPE_BF16) == "add_bf16".
std::string KernelName(const char* base, tsr_dtype dtype);

// The arguments of one kernel after the status record, in order.
class KernelArgs {
 public:
  // A tensor: its buffer, then its ClLayout (two kernel arguments).
  KernelArgs& Tensor(const TensorView& view);
  // The same with RowsLayoutOf / FlatLayoutOf, for kernels that address the
  // tensor only through tsr_row_offset/tsr_rows/tsr_cols (rows) or
  // tsr_elem_offset/tsr_numel (flat).
  KernelArgs& RowsTensor(const TensorView& view);
  KernelArgs& FlatTensor(const TensorView& view);
  KernelArgs& Mem(cl_mem mem);
  KernelArgs& Int(cl_int value);
  KernelArgs& Long(cl_long value);
  KernelArgs& ULong(cl_ulong value);
  KernelArgs& UChar(cl_uchar value);
  KernelArgs& Float(cl_float value);
  // A __local buffer of `bytes` bytes.
  KernelArgs& Local(size_t bytes);

  struct Arg {
    size_t size = 0;
    bool local = false;
    std::array<unsigned char, sizeof(ClLayout)> bytes{};
  };
  const std::vector<Arg>& args() const { return args_; }
  // The buffers among the arguments (Mem and the Tensor forms), in order.
  const std::vector<cl_mem>& mems() const { return mems_; }

 private:
  KernelArgs& Raw(const void* data, size_t size);
  std::vector<Arg> args_;
  std::vector<cl_mem> mems_;
};

// Work sizes. global[i] is rounded up to a multiple of local[i] when local
// is given (kernels must bounds-check); local 0 lets the runtime choose.
struct NdRange {
  cl_uint dims = 1;
  size_t global[3] = {1, 1, 1};
  size_t local[3] = {0, 0, 0};

  // n work-items in one dimension.
  static NdRange Linear(size_t n, size_t local = 0);
  // `groups` work-groups of `local` items each, one dimension.
  static NdRange Groups(size_t groups, size_t local);
  // A 2-D grid; local 0 = runtime's choice.
  static NdRange Grid2(size_t gx, size_t gy, size_t lx = 0, size_t ly = 0);
};

class LaunchContext {
 public:
  LaunchContext(Device& device, Stream& stream) : device_(device), stream_(stream) {}

  // Enqueues kernel `name` (status record prepended) over `range`.
  Status Enqueue(const std::string& name, const KernelArgs& args, const NdRange& range);

  // Device scratch memory of at least `bytes` bytes, private to this stream.
  // `slot` tells apart several scratch buffers used by one op (0..3).
  Status Scratch(size_t bytes, int slot, cl_mem* out);

  // The device's largest work-group size for kernel `name`.
  size_t MaxWorkGroupSize(const std::string& name);
  // Compute units of the device (for choosing how many groups to launch).
  size_t ComputeUnits() const;

 private:
  Device& device_;
  Stream& stream_;
};

}  // namespace tessera::opencl

#endif  // TESSERA_PLUGINS_OPENCL_CL_LAUNCH_H_
