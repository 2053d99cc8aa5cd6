// The OpenCL API as the plugin uses it: OpenCL 1.2 entry points through the
// ICD loader (libOpenCL.so.1, ocl-icd), never a vendor runtime, plus
// ClCheck() turning a cl_int error into a Status that names the call and
// the error. Pure.
#ifndef TESSERA_PLUGINS_OPENCL_CL_HEADERS_H_
#define TESSERA_PLUGINS_OPENCL_CL_HEADERS_H_

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#include <CL/cl.h>

#include "kit_names.h"

namespace tessera::opencl {

// "CL_OUT_OF_RESOURCES (-5)".
std::string ClErrorName(cl_int err);

// OK for CL_SUCCESS; otherwise TSR_ERR_DEVICE (TSR_ERR_OUT_OF_MEMORY for the
// allocation failures) with "<what> failed: CL_... (-n)".
Status ClCheck(cl_int err, const std::string& what);

}  // namespace tessera::opencl

#endif  // TESSERA_PLUGINS_OPENCL_CL_HEADERS_H_
