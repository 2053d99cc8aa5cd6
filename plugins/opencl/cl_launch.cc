#include "cl_launch.h"

#include <cstring>

#include "device.h"
#include "memory.h"
#include "stream.h"

namespace tessera::opencl {

ClLayout LayoutOf(const TensorView& view) {
  ClLayout l{};
  l.offset = static_cast<cl_long>(view.offset / DTypeSize(view.dtype));
  l.ndim = view.ndim;
  for (int i = 0; i < view.ndim; ++i) {
    l.shape[i] = view.shape[i];
    l.strides[i] = view.strides[i];
  }
  return l;
}

namespace {

// Collapses dims [0, end) of `view` into one dim when they share a single
// stride chain (size-1 dims ignored). On success `count` and `stride` hold
// the collapsed dim.
bool Collapse(const TensorView& view, int end, cl_long* count, cl_long* stride) {
  cl_long n = 1, s = 0;
  for (int i = end - 1; i >= 0; --i) {
    if (view.shape[i] > 1) {
      s = view.strides[i];
      break;
    }
  }
  cl_long expected = s;
  for (int i = end - 1; i >= 0; --i) {
    if (view.shape[i] > 1 && view.strides[i] != expected) return false;
    expected *= view.shape[i];
    n *= view.shape[i];
  }
  *count = n;
  *stride = s;
  return true;
}

}  // namespace

ClLayout RowsLayoutOf(const TensorView& view) {
  ClLayout l = LayoutOf(view);
  cl_long rows = 0, row_stride = 0;
  if (view.ndim <= 2 || !Collapse(view, view.ndim - 1, &rows, &row_stride)) return l;
  l.ndim = 2;
  l.shape[0] = rows;
  l.strides[0] = row_stride;
  l.shape[1] = view.shape[view.ndim - 1];
  l.strides[1] = view.strides[view.ndim - 1];
  for (int i = 2; i < TSR_MAX_DIMS; ++i) l.shape[i] = l.strides[i] = 0;
  return l;
}

ClLayout FlatLayoutOf(const TensorView& view) {
  ClLayout l = LayoutOf(view);
  cl_long count = 0, stride = 0;
  if (view.ndim == 1 || !Collapse(view, view.ndim, &count, &stride)) return l;
  l.ndim = 1;
  l.shape[0] = count;
  l.strides[0] = stride;
  for (int i = 1; i < TSR_MAX_DIMS; ++i) l.shape[i] = l.strides[i] = 0;
  return l;
}

cl_mem MemOf(const TensorView& view) { return static_cast<const Buffer*>(view.buffer)->mem; }

const char* DTypeSuffix(tsr_dtype dtype) {
  switch (dtype) {
    case TSR_DTYPE_F32: return "f32";
    case TSR_DTYPE_BF16: return "bf16";
    case TSR_DTYPE_F16: return "f16";
    case TSR_DTYPE_I32: return "i32";
    default: return "invalid";
  }
}

std::string KernelName(const char* base, tsr_dtype dtype) {
  return StrCat(base, "_", DTypeSuffix(dtype));
}

KernelArgs& KernelArgs::Raw(const void* data, size_t size) {
  Arg arg;
  arg.size = size;
  std::memcpy(arg.bytes.data(), data, size);
  args_.push_back(arg);
  return *this;
}

KernelArgs& KernelArgs::Tensor(const TensorView& view) {
  Mem(MemOf(view));
  ClLayout layout = LayoutOf(view);
  return Raw(&layout, sizeof(layout));
}
KernelArgs& KernelArgs::RowsTensor(const TensorView& view) {
  Mem(MemOf(view));
  ClLayout layout = RowsLayoutOf(view);
  return Raw(&layout, sizeof(layout));
}
KernelArgs& KernelArgs::FlatTensor(const TensorView& view) {
  Mem(MemOf(view));
  ClLayout layout = FlatLayoutOf(view);
  return Raw(&layout, sizeof(layout));
}
KernelArgs& KernelArgs::Mem(cl_mem mem) {
  mems_.push_back(mem);
  return Raw(&mem, sizeof(mem));
}
KernelArgs& KernelArgs::Int(cl_int value) { return Raw(&value, sizeof(value)); }
KernelArgs& KernelArgs::Long(cl_long value) { return Raw(&value, sizeof(value)); }
KernelArgs& KernelArgs::ULong(cl_ulong value) { return Raw(&value, sizeof(value)); }
KernelArgs& KernelArgs::UChar(cl_uchar value) { return Raw(&value, sizeof(value)); }
KernelArgs& KernelArgs::Float(cl_float value) { return Raw(&value, sizeof(value)); }
KernelArgs& KernelArgs::Local(size_t bytes) {
  Arg arg;
  arg.size = bytes;
  arg.local = true;
  args_.push_back(arg);
  return *this;
}

NdRange NdRange::Linear(size_t n, size_t local) {
  NdRange r;
  r.global[0] = n;
  r.local[0] = local;
  return r;
}

NdRange NdRange::Groups(size_t groups, size_t local) {
  NdRange r;
  r.global[0] = groups * local;
  r.local[0] = local;
  return r;
}

NdRange NdRange::Grid2(size_t gx, size_t gy, size_t lx, size_t ly) {
  NdRange r;
  r.dims = 2;
  r.global[0] = gx;
  r.global[1] = gy;
  r.local[0] = lx;
  r.local[1] = ly;
  return r;
}

Status LaunchContext::Enqueue(const std::string& name, const KernelArgs& args,
                              const NdRange& range) {
  KernelSlot* slot = nullptr;
  TSR_CL_RETURN_IF_ERROR(device_.Kernel(name, &slot));
  return stream_.EnqueueKernel(*slot, args, range, name);
}

Status LaunchContext::Scratch(size_t bytes, int slot, cl_mem* out) {
  return stream_.Scratch(bytes, slot, out);
}

size_t LaunchContext::MaxWorkGroupSize(const std::string& name) {
  KernelSlot* slot = nullptr;
  if (!device_.Kernel(name, &slot).ok()) return 1;
  return slot->max_work_group;
}

size_t LaunchContext::ComputeUnits() const { return device_.compute_units; }

}  // namespace tessera::opencl
