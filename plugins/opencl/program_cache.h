// Builds the plugin's OpenCL program for one device, through an on-disk
// cache of program binaries keyed by the device and the source.
//
// Key: a 64-bit FNV-1a hash of the platform version, device name and
// version, driver version, build options and the full program source, so a
// driver update or a changed kernel never loads a stale binary. A cache hit
// builds from the binary (clCreateProgramWithBinary); a miss or a binary the
// driver rejects builds from source and writes the binary (written to a
// temporary file and renamed, so concurrent processes never read half a
// file). An unwritable cache directory only costs the rebuild.
// Thread-compatible (the caller serialises builds per device).
#ifndef TESSERA_PLUGINS_OPENCL_PROGRAM_CACHE_H_
#define TESSERA_PLUGINS_OPENCL_PROGRAM_CACHE_H_

#include <string>

#include "cl_headers.h"

namespace tessera::opencl {

// The default cache directory: $TESSERA_OPENCL_CACHE_DIR, else
// $XDG_CACHE_HOME/tessera/opencl, else $HOME/.cache/tessera/opencl (empty:
// no cache).
std::string DefaultProgramCacheDir();

struct BuiltProgram {
  cl_program program = nullptr;
  bool from_cache = false;
  std::string cache_file;  // empty when caching is off
};

// Builds `source` with `options` for `device` in `context`.
Status BuildProgramCached(cl_context context, cl_device_id device, const std::string& source,
                          const std::string& options, const std::string& cache_dir,
                          BuiltProgram* out);

}  // namespace tessera::opencl

#endif  // TESSERA_PLUGINS_OPENCL_PROGRAM_CACHE_H_
