// Guard(): the wrapper every C entry of a kit-built plugin runs its body in.
// It turns the body's Status into a tsr_status, records the message for
// last_error, and catches any C++ exception (bad_alloc, system_error from
// thread creation) so nothing unwinds across the ABI.
#ifndef TESSERA_PLUGINS_KIT_ENTRY_GUARD_H_
#define TESSERA_PLUGINS_KIT_ENTRY_GUARD_H_

#include <exception>
#include <new>

#include "last_error.h"

namespace tessera::plugin_kit {

template <typename Fn>
tsr_status Guard(const char* entry, Fn&& fn) {
  try {
    return Report(entry, fn());
  } catch (const std::bad_alloc&) {
    return Report(entry, OutOfMemory("out of host memory; free buffers or use smaller sizes"));
  } catch (const std::exception& e) {
    return Report(entry, Internal("unexpected error: ", e.what()));
  } catch (...) {
    return Report(entry, Internal("unexpected error"));
  }
}

}  // namespace tessera::plugin_kit

#endif  // TESSERA_PLUGINS_KIT_ENTRY_GUARD_H_
