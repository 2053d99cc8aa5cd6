// What the benchmark learns from the server before it sends any
// completion: that it is up and ready (GET /health), which models it
// serves and their context length (GET /v1/models), and its vocabulary
// size for random prompt ids (GET /server_info, Tessera's; optional, so
// other OpenAI-compatible servers work with --vocab-size).
//
// Stateless; thread-safe.
#ifndef TESSERA_BENCH_SERVER_PROBE_H_
#define TESSERA_BENCH_SERVER_PROBE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "bench/http_endpoint.h"

namespace tessera::bench {

struct ServedModel {
  std::string id;
  int64_t max_model_len = 0;  // 0: the server did not say
};

struct ServerInfo {
  std::vector<ServedModel> models;  // from /v1/models, in its order
  int64_t vocab_size = 0;           // from /server_info; 0: unknown
  std::string served_model_name;    // from /server_info; may be empty
};

// Unavailable, with what to do, when nothing answers at the endpoint
// ("start one with `tessera serve ...`") or /health is not 200;
// FailedPrecondition when /v1/models is missing or malformed. A missing
// /server_info is not an error (vocab_size stays 0).
StatusOr<ServerInfo> ProbeServer(const Endpoint& endpoint);

// The model to ask for: `requested`, which must be one the server lists
// (when it lists any), or else the first it lists. InvalidArgument naming
// the served models otherwise.
StatusOr<ServedModel> ChooseModel(const ServerInfo& info,
                                  const std::string& requested);

}  // namespace tessera::bench

#endif  // TESSERA_BENCH_SERVER_PROBE_H_
