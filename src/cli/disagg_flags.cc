#include "cli/disagg_flags.h"

#include <fmt/format.h>

#include <cstdlib>

#include "disagg/kv_layout.h"
#include "disagg/kv_receiver.h"
#include "disagg/kv_sender.h"

namespace tessera::cli {

Status DisaggFlags::Check() const {
  TSR_RETURN_IF_ERROR(engine::ParseDisaggMode(mode).status());
  if (transfer_backend != "ucx") {
    return InvalidArgumentError(fmt::format(
        "unknown --disaggregation-transfer-backend '{}'; this build has ucx "
        "(shared memory, TCP, RDMA through UCX)",
        transfer_backend));
  }
  if (bootstrap_port < 0 || bootstrap_port > 65535) {
    return InvalidArgumentError(
        "--disaggregation-bootstrap-port must be in [0, 65535]");
  }
  if (transfer_timeout_s <= 0) {
    return InvalidArgumentError(
        "--disaggregation-transfer-timeout must be positive (seconds)");
  }
  return OkStatus();
}

engine::DisaggMode DisaggFlags::Mode() const {
  auto m = engine::ParseDisaggMode(mode);
  return m.ok() ? *m : engine::DisaggMode::kNull;
}

StatusOr<DisaggSide> StartDisaggregation(const DisaggFlags& flags,
                                         const kv::KvPool& pool,
                                         const std::string& model_fingerprint,
                                         int tp_size, const std::string& host) {
  DisaggSide side;
  const engine::DisaggMode mode = flags.Mode();
  if (mode == engine::DisaggMode::kNull) return side;
  if (tp_size > 1) {
    return InvalidArgumentError(
        "--disaggregation-mode does not run with --tp-size > 1 yet (each "
        "rank's KV shard would need its own transfer); drop one of them");
  }
  if (!flags.ib_device.empty()) {
    // UCX reads its device list from the environment at initialisation.
    setenv("UCX_NET_DEVICES", flags.ib_device.c_str(), /*overwrite=*/0);
  }
  disagg::KvLayout layout = disagg::KvLayout::Of(pool, model_fingerprint);
  layout.tp_size = tp_size;
  if (mode == engine::DisaggMode::kPrefill) {
    TSR_ASSIGN_OR_RETURN(
        std::unique_ptr<disagg::UcxKvSender> sender,
        disagg::UcxKvSender::Create(pool, layout, host, flags.bootstrap_port,
                                    flags.transfer_timeout_s));
    side.bootstrap_port = sender->port();
    side.sender = std::move(sender);
  } else {
    TSR_ASSIGN_OR_RETURN(side.receiver,
                         disagg::UcxKvReceiver::Create(
                             pool, layout, flags.transfer_timeout_s));
  }
  return side;
}

void AddDisaggFlags(CLI::App* app, DisaggFlags* flags) {
  app->add_option("--disaggregation-mode", flags->mode,
                  "PD disaggregation role: null (aggregated), prefill or "
                  "decode")
      ->capture_default_str();
  app->add_option("--disaggregation-transfer-backend", flags->transfer_backend,
                  "KV transfer engine (ucx)")
      ->capture_default_str();
  app->add_option("--disaggregation-bootstrap-port", flags->bootstrap_port,
                  "prefill: port of the bootstrap service decode servers "
                  "register with (0: any free port)")
      ->capture_default_str();
  app->add_option("--disaggregation-ib-device", flags->ib_device,
                  "RDMA device(s) for UCX, e.g. mlx5_0:1 (sets "
                  "UCX_NET_DEVICES)");
  app->add_option("--disaggregation-transfer-timeout",
                  flags->transfer_timeout_s,
                  "seconds either side waits for the other before failing "
                  "the request and freeing its KV pages")
      ->capture_default_str();
}

}  // namespace tessera::cli
