// PD disaggregation's serve flags (SGLang's spelling):
//   --disaggregation-mode null|prefill|decode       the server's role
//   --disaggregation-transfer-backend ucx           the KV transfer engine
//   --disaggregation-bootstrap-port P               prefill: the bootstrap
//                                                   service's port (8998)
//   --disaggregation-ib-device DEV[,DEV]            RDMA devices for UCX
//                                                   (UCX_NET_DEVICES)
//   --disaggregation-transfer-timeout S             how long either side
//                                                   waits for the other
// Start builds the role's KV sender (prefill) or receiver (decode) over the
// engine's KV pool (src/disagg).
#ifndef TESSERA_CLI_DISAGG_FLAGS_H_
#define TESSERA_CLI_DISAGG_FLAGS_H_

#include <CLI/CLI.hpp>

#include <memory>
#include <string>

#include "base/status.h"
#include "engine/disagg.h"
#include "kv/kv_pool.h"

namespace tessera::cli {

struct DisaggFlags {
  std::string mode = "null";
  std::string transfer_backend = "ucx";
  int bootstrap_port = 8998;
  std::string ib_device;
  double transfer_timeout_s = 300;

  // InvalidArgument naming the flag for a bad value.
  Status Check() const;
  engine::DisaggMode Mode() const;
};

// The role's transfer side, alive as long as the engine that uses it.
struct DisaggSide {
  std::unique_ptr<engine::KvSender> sender;
  std::unique_ptr<engine::KvReceiver> receiver;
  int bootstrap_port = 0;  // prefill: where the bootstrap service listens
};

// `model_fingerprint`: what both sides must share besides the pool shape
// (architecture, sizes). `host`: the serve --host (the bootstrap service
// listens there).
StatusOr<DisaggSide> StartDisaggregation(const DisaggFlags& flags,
                                         const kv::KvPool& pool,
                                         const std::string& model_fingerprint,
                                         int tp_size, const std::string& host);

void AddDisaggFlags(CLI::App* app, DisaggFlags* flags);

}  // namespace tessera::cli

#endif  // TESSERA_CLI_DISAGG_FLAGS_H_
