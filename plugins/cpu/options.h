// Init options of the cpu plugin (tsr_init_args.options):
//   threads=N   worker threads per device used inside ops, the stream's own
//               worker included (1..1024; default: the cores this process
//               may use)
//   devices=N   number of virtual devices (1..64; default 1); the host maps
//               TESSERA_CPU_DEVICES onto it
//   isa=NAME    kernel path: scalar, avx2, avx512 or avx512bf16 (default:
//               the TESSERA_CPU_ISA environment variable, else the best
//               path the CPU supports; see cpu_isa.h). Resolved by init.
//   bf16_gemm=auto|dpbf16|f32  the GEMM of prefill-sized bf16 x bf16
//               linear calls on the avx512bf16 path: vdpbf16ps panels, or
//               x widened to f32 and FMA panels; auto (default) measures
//               which is faster on this chip (bf16_gemm_choice.h).
//               Resolved by init.
//   cpusets=L0;L1;...  pins virtual device i's threads (its pool and its
//               streams' workers) to the CPUs of list Li ("0-3,8" or
//               "0-3+8": '+' also separates items); one
//               list per physical device; `threads` then defaults to the
//               size of each list (so ranks of different processes on
//               devices 0 and 1 do not share cores)
//   fabric_rings=L0;L1;...  a synthetic interconnect for tests: only the
//               physical devices of one list can form a communicator
//               across processes (like chips that route collectives only
//               within their row of a torus); comm_init_rank over devices
//               of two lists fails on every rank, naming them
//   huge_pages=0|1  whether buffers of 2 MiB and more ask for transparent
//               huge pages (default 0; memory.h says why)
//   comm_timeout_ms=N  how long a collective, send/recv or comm_init_rank
//               waits for a peer before failing (1..86400000; default
//               60000; ABI 1.3)
// Unknown keys and malformed values are TSR_ERR_INVALID_ARGUMENT with a
// message naming the key and the accepted values. Pure functions.
#ifndef TESSERA_PLUGINS_CPU_OPTIONS_H_
#define TESSERA_PLUGINS_CPU_OPTIONS_H_

#include <string>
#include <vector>

#include "kit_names.h"

namespace tessera::cpu {

struct Options {
  int threads = 0;  // 0 until parsed: then >= 1
  int devices = 1;
  std::string isa;  // as given; empty = not given
  std::string bf16_gemm;  // as given; empty = not given (auto)
  int comm_timeout_ms = 60000;
  bool huge_pages = false;
  // fabric_rings: the device lists (empty: every device reaches every one).
  std::vector<std::vector<int>> fabric_rings;
  // cpusets: per physical device, its CPUs (empty: not given).
  std::vector<std::vector<int>> cpusets;
  bool threads_given = false;
  // Physical indices to expose, in order (all when num_visible was -1).
  std::vector<int> visible;
};

// Parses `args` (may be NULL: defaults). `default_threads` >= 1.
Status ParseOptions(const tsr_init_args* args, int default_threads, Options* out);

}  // namespace tessera::cpu

#endif  // TESSERA_PLUGINS_CPU_OPTIONS_H_
