#include "program_cache.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <vector>

#include "device.h"

namespace tessera::opencl {
namespace {

std::string PlatformVersion(cl_device_id device) {
  cl_platform_id platform = nullptr;
  if (clGetDeviceInfo(device, CL_DEVICE_PLATFORM, sizeof(platform), &platform, nullptr) !=
      CL_SUCCESS) {
    return "";
  }
  size_t size = 0;
  if (clGetPlatformInfo(platform, CL_PLATFORM_VERSION, 0, nullptr, &size) != CL_SUCCESS) return "";
  std::string s(size, '\0');
  clGetPlatformInfo(platform, CL_PLATFORM_VERSION, size, s.data(), nullptr);
  while (!s.empty() && s.back() == '\0') s.pop_back();
  return s;
}

uint64_t Fnv1a(const std::string& data, uint64_t hash = 1469598103934665603ull) {
  for (unsigned char c : data) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  return hash;
}

// mkdir -p; false when it cannot be created.
bool MakeDirs(const std::string& path) {
  if (path.empty()) return false;
  std::string partial;
  std::stringstream parts(path);
  std::string part;
  if (path[0] == '/') partial = "/";
  while (std::getline(parts, part, '/')) {
    if (part.empty()) continue;
    partial += part + "/";
    if (mkdir(partial.c_str(), 0755) != 0 && errno != EEXIST) return false;
  }
  return true;
}

bool ReadFile(const std::string& path, std::vector<unsigned char>* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  out->assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return !out->empty();
}

void WriteFileAtomically(const std::string& path, const std::vector<unsigned char>& data) {
  std::string tmp = StrCat(path, ".tmp.", getpid());
  {
    std::ofstream out(tmp, std::ios::binary);
    if (!out) return;
    out.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
    if (!out) {
      std::remove(tmp.c_str());
      return;
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) std::remove(tmp.c_str());
}

std::string BuildLog(cl_program program, cl_device_id device) {
  size_t size = 0;
  clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, 0, nullptr, &size);
  std::string log(size, '\0');
  clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, size, log.data(), nullptr);
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
  if (log.size() > 3000) log = log.substr(0, 3000) + "\n...";
  return log;
}

Status BuildFromSource(cl_context context, cl_device_id device, const std::string& source,
                       const std::string& options, cl_program* out) {
  const char* text = source.c_str();
  size_t length = source.size();
  cl_int err = CL_SUCCESS;
  cl_program program = clCreateProgramWithSource(context, 1, &text, &length, &err);
  TSR_CL_RETURN_IF_ERROR(ClCheck(err, "clCreateProgramWithSource"));
  err = clBuildProgram(program, 1, &device, options.c_str(), nullptr, nullptr);
  if (err != CL_SUCCESS) {
    std::string log = BuildLog(program, device);
    clReleaseProgram(program);
    return Internal("building the OpenCL kernels failed (", ClErrorName(err),
                    "); this is a plugin bug or a driver that cannot compile OpenCL C 1.2. "
                    "Build log:\n", log);
  }
  *out = program;
  return OkStatus();
}

}  // namespace

std::string DefaultProgramCacheDir() {
  if (const char* dir = std::getenv("TESSERA_OPENCL_CACHE_DIR")) return dir;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && *xdg != '\0') {
    return StrCat(xdg, "/tessera/opencl");
  }
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
    return StrCat(home, "/.cache/tessera/opencl");
  }
  return "";
}

Status BuildProgramCached(cl_context context, cl_device_id device, const std::string& source,
                          const std::string& options, const std::string& cache_dir,
                          BuiltProgram* out) {
  *out = BuiltProgram{};
  std::string key_text = StrCat(PlatformVersion(device), "\n", DeviceString(device, CL_DEVICE_NAME),
                                "\n", DeviceString(device, CL_DEVICE_VERSION), "\n",
                                DeviceString(device, CL_DRIVER_VERSION), "\n", options, "\n");
  uint64_t key = Fnv1a(source, Fnv1a(key_text));
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(key));
  if (!cache_dir.empty()) out->cache_file = StrCat(cache_dir, "/program-", hex, ".bin");

  std::vector<unsigned char> binary;
  if (!out->cache_file.empty() && ReadFile(out->cache_file, &binary)) {
    const unsigned char* bytes = binary.data();
    size_t length = binary.size();
    cl_int binary_status = CL_SUCCESS, err = CL_SUCCESS;
    cl_program program =
        clCreateProgramWithBinary(context, 1, &device, &length, &bytes, &binary_status, &err);
    if (err == CL_SUCCESS && binary_status == CL_SUCCESS &&
        clBuildProgram(program, 1, &device, options.c_str(), nullptr, nullptr) == CL_SUCCESS) {
      out->program = program;
      out->from_cache = true;
      return OkStatus();
    }
    if (program != nullptr) clReleaseProgram(program);  // stale or foreign: rebuild below
  }

  TSR_CL_RETURN_IF_ERROR(BuildFromSource(context, device, source, options, &out->program));
  if (out->cache_file.empty() || !MakeDirs(cache_dir)) return OkStatus();
  size_t size = 0;
  if (clGetProgramInfo(out->program, CL_PROGRAM_BINARY_SIZES, sizeof(size), &size, nullptr) !=
          CL_SUCCESS ||
      size == 0) {
    return OkStatus();
  }
  binary.assign(size, 0);
  unsigned char* ptr = binary.data();
  if (clGetProgramInfo(out->program, CL_PROGRAM_BINARIES, sizeof(ptr), &ptr, nullptr) ==
      CL_SUCCESS) {
    WriteFileAtomically(out->cache_file, binary);
  }
  return OkStatus();
}

}  // namespace tessera::opencl
