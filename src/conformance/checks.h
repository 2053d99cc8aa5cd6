// The conformance check groups of `tessera plugin-check`, one function per
// group, each in its own file. A group runs in a forked child (runner.h);
// every group but abi starts with the plugin initialised (init with the
// --options) and its devices loaded in `env`.
//
// Adding a check: pick the group whose concern it is, add a
//   ctx.Run("group.what_it_checks", [&]() -> Outcome { ...; return Pass(); });
// block (names are stable ids: people filter on them and CI greps them),
// use KIT_CHECK_CALL / KIT_EXPECT_ERROR (plugin_env.h) so failures quote the
// plugin's last_error(), and free what you create (Buffer/Stream/Event).
// Adding an op: see op_cases.h.
#ifndef TESSERA_CONFORMANCE_CHECKS_H_
#define TESSERA_CONFORMANCE_CHECKS_H_

#include <vector>

#include "conformance/check_context.h"
#include "conformance/plugin_env.h"
#include "conformance/runner.h"

namespace tessera::conformance {

void AbiChecks(CheckContext& ctx, PluginEnv& env);     // abi_checks.cc
void DeviceChecks(CheckContext& ctx, PluginEnv& env);  // device_checks.cc
void ErrorChecks(CheckContext& ctx, PluginEnv& env);   // error_checks.cc
void MemoryChecks(CheckContext& ctx, PluginEnv& env);  // memory_checks.cc
void CopyChecks(CheckContext& ctx, PluginEnv& env);    // copy_checks.cc
void StreamChecks(CheckContext& ctx, PluginEnv& env);  // stream_checks.cc
void OpChecks(CheckContext& ctx, PluginEnv& env);      // op_checks.cc
void CollectiveChecks(CheckContext& ctx,
                      PluginEnv& env);  // collective_checks.cc
void GraphChecks(CheckContext& ctx, PluginEnv& env);   // graph_checks.cc
// Forks its own rank processes, each initialising the plugin: the group
// runs without the usual init setup.
// collectives.decoder_layer_tp: decoder_layer v2 split over the two ranks
// of an in-process communicator (decoder_layer_tp_check.cc).
Outcome DecoderLayerTpCheck(const PluginEnv& env, const std::vector<tsr_comm>& comms,
                            const std::vector<tsr_stream>& streams);
void CollectiveMpChecks(CheckContext& ctx,
                        PluginEnv& env);  // collective_mp_checks.cc

// All groups in order, bound to `env` (which must outlive the run).
std::vector<GroupSpec> PluginCheckGroups(PluginEnv* env);

}  // namespace tessera::conformance

#endif  // TESSERA_CONFORMANCE_CHECKS_H_
