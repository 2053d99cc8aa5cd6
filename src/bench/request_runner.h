// One benchmark request: a streamed POST /v1/completions with the prompt
// as token ids, read incrementally (SseReader) and timed
// (CompletionStream), on its own connection.
//
// The body: {"model", "prompt": [ids], "max_tokens": output_len,
// "temperature": 0, "ignore_eos": true, "stream": true,
// "stream_options": {"include_usage": true}}, so the output length is
// exact. Timestamps are taken as the response bytes arrive; the clock
// starts just before the request is written.
//
// Thread-safe: each call owns its client; run one per thread.
#ifndef TESSERA_BENCH_REQUEST_RUNNER_H_
#define TESSERA_BENCH_REQUEST_RUNNER_H_

#include <string>

#include <nlohmann/json.hpp>

#include "bench/completion_stream.h"
#include "bench/datasets.h"
#include "bench/http_endpoint.h"

namespace tessera::bench {

// The request body above, with `extra`'s members added (replacing any of
// the same name: SGLang's --extra-request-body).
nlohmann::ordered_json CompletionRequestJson(
    const std::string& model, const BenchRequest& request,
    const nlohmann::ordered_json& extra = nlohmann::ordered_json::object());

// Sends `request` and measures it. Never throws; every failure (no
// connection, an HTTP error status with the server's message, an error
// event, a truncated stream) is a RequestResult with success = false and
// a message naming it.
RequestResult RunRequest(
    const Endpoint& endpoint, const std::string& model,
    const BenchRequest& request,
    const nlohmann::ordered_json& extra = nlohmann::ordered_json::object());

}  // namespace tessera::bench

#endif  // TESSERA_BENCH_REQUEST_RUNNER_H_
