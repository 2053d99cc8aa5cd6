// The op harness: lays an OpCase out in host byte images (one per buffer,
// random background bytes around every view), runs reference/ on a copy of
// the images, uploads them to a device, launches the plugin's kernel, and
// compares: every output element within tolerance, every byte outside the
// output views untouched (so writes past a view or into an input are
// caught).
//
// Thread-compatible; all state is per call.
#ifndef TESSERA_CONFORMANCE_OP_HARNESS_H_
#define TESSERA_CONFORMANCE_OP_HARNESS_H_

#include <cstdint>
#include <vector>

#include "base/status.h"
#include "conformance/check_context.h"
#include "conformance/op_cases.h"
#include "conformance/plugin_env.h"
#include "reference/host_tensor.h"

namespace tessera::conformance {

using Image = std::vector<uint8_t>;

// Where each argument of a case lives.
struct CaseLayout {
  std::vector<uint64_t> buffer_sizes;         // bytes, per buffer
  std::vector<int> buffer_of_arg;             // buffer index per argument
  std::vector<std::vector<int64_t>> strides;  // resolved, per argument
  std::vector<Image> initial;                 // the images before the op
};

// Resolves strides and buffers and fills the initial images (background
// bytes from `seed`, then every argument's values).
StatusOr<CaseLayout> LayOut(const OpCase& c, uint64_t seed);

// Host views of every argument into `images`.
std::vector<reference::HostTensor> HostViews(const OpCase& c,
                                             const CaseLayout& layout,
                                             std::vector<Image>& images);

// The case's buffers on a device, and the tsr_tensor of every argument.
struct DeviceCase {
  std::vector<Buffer> buffers;
  std::vector<tsr_tensor> tensors;  // inputs then outputs
};
StatusOr<DeviceCase> UploadCase(const PluginEnv& env, int device,
                                const OpCase& c, const CaseLayout& layout);

// Runs the reference on a copy of the initial images.
StatusOr<std::vector<Image>> RunReference(tsr_op_id op, const OpCase& c,
                                          const CaseLayout& layout);

// Compares downloaded images against the reference images.
Outcome CompareImages(tsr_op_id op, const OpCase& c, const CaseLayout& layout,
                      std::vector<Image>& reference, std::vector<Image>& got);

// The whole case: reference, upload, launch on `stream`, synchronize,
// download, compare. `*stream_broken` is set when the stream may now hold
// a sticky error (the caller should replace it).
Outcome RunOpCase(const PluginEnv& env, int device, tsr_kernel kernel,
                  tsr_stream stream, tsr_op_id op, const OpCase& c,
                  uint64_t seed, bool* stream_broken);

}  // namespace tessera::conformance

#endif  // TESSERA_CONFORMANCE_OP_HARNESS_H_
