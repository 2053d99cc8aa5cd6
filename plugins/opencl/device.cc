#include "device.h"

#include "program_cache.h"

namespace tessera::opencl {

std::string DeviceString(cl_device_id device, cl_device_info what) {
  size_t size = 0;
  if (clGetDeviceInfo(device, what, 0, nullptr, &size) != CL_SUCCESS || size == 0) return "";
  std::string s(size, '\0');
  if (clGetDeviceInfo(device, what, size, s.data(), nullptr) != CL_SUCCESS) return "";
  while (!s.empty() && s.back() == '\0') s.pop_back();
  return s;
}

namespace {

std::string PlatformString(cl_platform_id platform, cl_platform_info what) {
  size_t size = 0;
  if (clGetPlatformInfo(platform, what, 0, nullptr, &size) != CL_SUCCESS || size == 0) return "";
  std::string s(size, '\0');
  if (clGetPlatformInfo(platform, what, size, s.data(), nullptr) != CL_SUCCESS) return "";
  while (!s.empty() && s.back() == '\0') s.pop_back();
  return s;
}

template <typename T>
T DeviceValue(cl_device_id device, cl_device_info what, T fallback) {
  T value{};
  if (clGetDeviceInfo(device, what, sizeof(value), &value, nullptr) != CL_SUCCESS) return fallback;
  return value;
}

}  // namespace

// Defined in the generated program_source.cc (kernels/*.cl).
extern "C" const char kTesseraOpenClProgramSource[];

const std::string& ProgramSource() {
  static const std::string source = kTesseraOpenClProgramSource;
  return source;
}

std::vector<PhysicalDevice> FindPhysicalDevices() {
  std::vector<PhysicalDevice> out;
  cl_uint num_platforms = 0;
  if (clGetPlatformIDs(0, nullptr, &num_platforms) != CL_SUCCESS || num_platforms == 0) {
    return out;
  }
  std::vector<cl_platform_id> platforms(num_platforms);
  if (clGetPlatformIDs(num_platforms, platforms.data(), nullptr) != CL_SUCCESS) return out;
  for (cl_platform_id platform : platforms) {
    cl_uint num_devices = 0;
    if (clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 0, nullptr, &num_devices) != CL_SUCCESS ||
        num_devices == 0) {
      continue;
    }
    std::vector<cl_device_id> devices(num_devices);
    if (clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, num_devices, devices.data(), nullptr) !=
        CL_SUCCESS) {
      continue;
    }
    for (cl_device_id device : devices) {
      if (!DeviceValue<cl_bool>(device, CL_DEVICE_AVAILABLE, CL_FALSE)) continue;
      out.push_back(PhysicalDevice{platform, device,
                                   DeviceValue<cl_device_type>(device, CL_DEVICE_TYPE, 0)});
    }
  }
  return out;
}

Device::~Device() {
  for (auto& [name, slot] : kernels_) clReleaseKernel(slot->kernel);
  if (program_ != nullptr) clReleaseProgram(program_);
  if (sync_status != nullptr) clReleaseMemObject(sync_status);
  if (sync_queue != nullptr) clReleaseCommandQueue(sync_queue);
  if (context != nullptr) clReleaseContext(context);
}

Status Device::Program(cl_program* out) {
  std::lock_guard<std::mutex> lock(mu_);
  if (program_ == nullptr) {
    BuiltProgram built;
    TSR_CL_RETURN_IF_ERROR(
        BuildProgramCached(context, id, ProgramSource(), "-cl-std=CL1.2", cache_dir, &built));
    program_ = built.program;
  }
  *out = program_;
  return OkStatus();
}

Status Device::Kernel(const std::string& name, KernelSlot** out) {
  cl_program program = nullptr;
  TSR_CL_RETURN_IF_ERROR(Program(&program));
  std::lock_guard<std::mutex> lock(mu_);
  auto it = kernels_.find(name);
  if (it == kernels_.end()) {
    cl_int err = CL_SUCCESS;
    cl_kernel kernel = clCreateKernel(program, name.c_str(), &err);
    if (err != CL_SUCCESS) {
      return Internal("the OpenCL program has no kernel '", name, "' (", ClErrorName(err),
                      "); this is a plugin bug");
    }
    auto slot = std::make_unique<KernelSlot>();
    slot->kernel = kernel;
    size_t wg = 1;
    if (clGetKernelWorkGroupInfo(kernel, id, CL_KERNEL_WORK_GROUP_SIZE, sizeof(wg), &wg,
                                 nullptr) == CL_SUCCESS) {
      slot->max_work_group = wg;
    }
    it = kernels_.emplace(name, std::move(slot)).first;
  }
  *out = it->second.get();
  return OkStatus();
}

Status OpenDevices(const std::vector<PhysicalDevice>& physical, const std::vector<int>& visible,
                   const std::string& cache_dir, std::vector<std::unique_ptr<Device>>* out) {
  std::map<cl_platform_id, cl_context> contexts;
  // One context per platform over all of its exposed devices.
  std::map<cl_platform_id, std::vector<cl_device_id>> by_platform;
  for (int index : visible) by_platform[physical[index].platform].push_back(physical[index].device);
  for (auto& [platform, devices] : by_platform) {
    cl_context_properties props[] = {CL_CONTEXT_PLATFORM,
                                     reinterpret_cast<cl_context_properties>(platform), 0};
    cl_int err = CL_SUCCESS;
    cl_context context = clCreateContext(props, static_cast<cl_uint>(devices.size()),
                                         devices.data(), nullptr, nullptr, &err);
    if (err != CL_SUCCESS) {
      for (auto& [p, c] : contexts) clReleaseContext(c);
      return ClCheck(err, StrCat("clCreateContext for platform '",
                                 PlatformString(platform, CL_PLATFORM_NAME), "'"));
    }
    contexts[platform] = context;
  }
  std::vector<std::unique_ptr<Device>> devices;
  Status status;
  for (size_t ordinal = 0; ordinal < visible.size() && status.ok(); ++ordinal) {
    const PhysicalDevice& p = physical[visible[ordinal]];
    auto d = std::make_unique<Device>();
    d->ordinal = static_cast<int>(ordinal);
    d->cache_dir = cache_dir;
    d->physical_index = visible[ordinal];
    d->platform = p.platform;
    d->id = p.device;
    d->context = contexts[p.platform];
    clRetainContext(d->context);
    d->type = p.type;
    d->name = DeviceString(p.device, CL_DEVICE_NAME);
    d->vendor = DeviceString(p.device, CL_DEVICE_VENDOR);
    d->driver_version = DeviceString(p.device, CL_DRIVER_VERSION);
    d->version = DeviceString(p.device, CL_DEVICE_VERSION);
    d->platform_name = PlatformString(p.platform, CL_PLATFORM_NAME);
    d->platform_version = PlatformString(p.platform, CL_PLATFORM_VERSION);
    d->global_mem = DeviceValue<cl_ulong>(p.device, CL_DEVICE_GLOBAL_MEM_SIZE, 0);
    d->max_alloc = DeviceValue<cl_ulong>(p.device, CL_DEVICE_MAX_MEM_ALLOC_SIZE, 0);
    cl_uint align_bits = DeviceValue<cl_uint>(p.device, CL_DEVICE_MEM_BASE_ADDR_ALIGN, 1024);
    d->alignment = align_bits / 8 < 16 ? 16 : align_bits / 8;
    d->compute_units = DeviceValue<cl_uint>(p.device, CL_DEVICE_MAX_COMPUTE_UNITS, 1);
    d->max_work_group = DeviceValue<size_t>(p.device, CL_DEVICE_MAX_WORK_GROUP_SIZE, 1);
    d->has_fp64 = DeviceString(p.device, CL_DEVICE_EXTENSIONS).find("cl_khr_fp64") !=
                  std::string::npos;
    cl_int err = CL_SUCCESS;
    d->sync_queue = clCreateCommandQueue(d->context, d->id, 0, &err);
    status = ClCheck(err, StrCat("clCreateCommandQueue on '", d->name, "'"));
    if (!status.ok()) break;
    d->sync_status = clCreateBuffer(d->context, CL_MEM_READ_WRITE, 8 * sizeof(cl_int), nullptr, &err);
    status = ClCheck(err, "clCreateBuffer (status record)");
    if (!status.ok()) break;
    const cl_int zero[8] = {};
    status = ClCheck(clEnqueueWriteBuffer(d->sync_queue, d->sync_status, CL_TRUE, 0, sizeof(zero),
                                          zero, 0, nullptr, nullptr),
                     "clEnqueueWriteBuffer (status record)");
    devices.push_back(std::move(d));
  }
  for (auto& [p, c] : contexts) clReleaseContext(c);  // devices hold their own references
  if (!status.ok()) return status;
  *out = std::move(devices);
  return OkStatus();
}

}  // namespace tessera::opencl
