// The plugin kit (plugins/kit) as the OpenCL plugin uses it: its headers
// and the names used unqualified here. Header-only.
#ifndef TESSERA_PLUGINS_OPENCL_KIT_NAMES_H_
#define TESSERA_PLUGINS_OPENCL_KIT_NAMES_H_

#include "kit/entry_guard.h"
#include "kit/half.h"
#include "kit/last_error.h"
#include "kit/launch_args.h"
#include "kit/op_checks.h"
#include "kit/op_table.h"
#include "kit/registry.h"
#include "kit/status.h"
#include "kit/tensor.h"

#define TSR_CL_RETURN_IF_ERROR(expr) TSR_KIT_RETURN_IF_ERROR(expr)

namespace tessera::opencl {

using plugin_kit::BufferResolver;
using plugin_kit::BuildOpCall;
using plugin_kit::DTypeName;
using plugin_kit::DTypeSize;
using plugin_kit::FindSignatureForResolve;
using plugin_kit::Guard;
using plugin_kit::HandleRegistry;
using plugin_kit::Internal;
using plugin_kit::InvalidArgument;
using plugin_kit::InvalidHandle;
using plugin_kit::LastErrorMessage;
using plugin_kit::NotFound;
using plugin_kit::NumOpSignatures;
using plugin_kit::OkStatus;
using plugin_kit::OpCall;
using plugin_kit::OpDef;
using plugin_kit::OpSignatureInfos;
using plugin_kit::OpSignatures;
using plugin_kit::OutOfMemory;
using plugin_kit::Report;
using plugin_kit::ResolvedBuffer;
using plugin_kit::ShapeString;
using plugin_kit::Status;
using plugin_kit::StrCat;
using plugin_kit::TensorView;
using plugin_kit::ToHandle;
using plugin_kit::UnknownBufferHandle;
using plugin_kit::Unsupported;

}  // namespace tessera::opencl

#endif  // TESSERA_PLUGINS_OPENCL_KIT_NAMES_H_
