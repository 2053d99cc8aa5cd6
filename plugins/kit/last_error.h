// The thread-local last_error of a plugin (rule 2 of the ABI).
//
// Every C entry returns through Report(): an OK status clears nothing (the
// message of the previous failure stays readable until the next failure, as
// the ABI allows), a failure stores its message for last_error() on the
// calling thread. The message lives in a fixed thread_local buffer so the
// library holds no thread-exit destructors (it may be dlclose'd while host
// threads live on). Thread-safe by construction.
#ifndef TESSERA_PLUGINS_KIT_LAST_ERROR_H_
#define TESSERA_PLUGINS_KIT_LAST_ERROR_H_

#include "status.h"

namespace tessera::plugin_kit {

// Stores `status`'s message (prefixed with `entry`) when it is an error and
// returns its code.
tsr_status Report(const char* entry, const Status& status);

// The calling thread's last message; never NULL.
const char* LastErrorMessage();

}  // namespace tessera::plugin_kit

#endif  // TESSERA_PLUGINS_KIT_LAST_ERROR_H_
