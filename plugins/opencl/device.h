// The OpenCL devices the plugin exposes.
//
// FindPhysicalDevices() enumerates every device of every platform the ICD
// loader knows (probe uses it; nothing is created). OpenDevices() gives
// each exposed device a Device: the platform's shared context (one per
// platform, so events and buffers move between its devices), a queue for
// synchronous copies, and, on first use, the program with every kernel
// (kernels/*.cl, built through program_cache.h) and a cache of cl_kernel
// objects. A cl_kernel's arguments are shared state, so each KernelSlot
// carries the mutex that callers hold from clSetKernelArg to enqueue.
// Thread-safety: facts are immutable after OpenDevices; Program/Kernel are
// thread-safe.
#ifndef TESSERA_PLUGINS_OPENCL_DEVICE_H_
#define TESSERA_PLUGINS_OPENCL_DEVICE_H_

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "cl_headers.h"

namespace tessera::opencl {

struct PhysicalDevice {
  cl_platform_id platform = nullptr;
  cl_device_id device = nullptr;
  cl_device_type type = 0;
};

// Every device of every platform, in platform then device order. An absent
// ICD loader or no platform is an empty list, not an error.
std::vector<PhysicalDevice> FindPhysicalDevices();

// A string property of a device (CL_DEVICE_NAME, ...) without its trailing
// NULs; "" when the query fails.
std::string DeviceString(cl_device_id device, cl_device_info what);

struct KernelSlot {
  cl_kernel kernel = nullptr;
  size_t max_work_group = 1;
  std::mutex mu;  // held from the first clSetKernelArg to the enqueue
};

class Device {
 public:
  Device() = default;
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  // Facts (immutable after OpenDevices).
  int ordinal = 0;
  int physical_index = 0;
  cl_platform_id platform = nullptr;
  cl_device_id id = nullptr;
  cl_context context = nullptr;  // retained; shared with the platform's devices
  cl_device_type type = 0;
  std::string name, vendor, driver_version, version, platform_name, platform_version;
  uint64_t global_mem = 0;
  uint64_t max_alloc = 0;
  uint64_t alignment = 0;  // bytes (CL_DEVICE_MEM_BASE_ADDR_ALIGN / 8)
  uint32_t compute_units = 1;
  size_t max_work_group = 1;
  bool has_fp64 = false;
  std::string cache_dir;  // program binaries (empty: no cache)

  cl_command_queue sync_queue = nullptr;  // synchronous copies and memsets
  cl_mem sync_status = nullptr;           // an always-zero status record for it
  std::atomic<uint64_t> allocated{0};     // bytes of live buffers

  // The program, built (or loaded from cache_dir) on first use.
  Status Program(cl_program* out);
  // The kernel slot for `name` (created on first use).
  Status Kernel(const std::string& name, KernelSlot** out);

 private:
  std::mutex mu_;
  cl_program program_ = nullptr;           // guarded by mu_
  std::map<std::string, std::unique_ptr<KernelSlot>> kernels_;  // guarded by mu_
};

// Opens `visible` (indices into FindPhysicalDevices()) as ordinals 0..n-1.
Status OpenDevices(const std::vector<PhysicalDevice>& physical, const std::vector<int>& visible,
                   const std::string& cache_dir, std::vector<std::unique_ptr<Device>>* out);

// The full program source (kernels/*.cl concatenated, generated at build).
const std::string& ProgramSource();

}  // namespace tessera::opencl

#endif  // TESSERA_PLUGINS_OPENCL_DEVICE_H_
