/* A plugin whose library constructor crashes (SIGSEGV) the moment it is
 * loaded, before Tessera can call anything. `tessera doctor` must survive
 * it: it loads every candidate in a child process first and reports this
 * one as rejected, naming the signal. */
#include <signal.h>

__attribute__((constructor)) static void CrashOnLoad(void) { raise(SIGSEGV); }
