// The HTTP routes of `tessera serve`, one handler per endpoint, all taking
// the shared ServingContext. Registered by HttpServer (http_server.h).
//
// OpenAI:  POST /v1/completions, POST /v1/chat/completions, GET /v1/models
// Native:  POST /generate, POST /tokenize, POST /detokenize, GET /health,
//          GET /health_generate, GET /server_info, POST|GET /flush_cache,
//          POST /abort_request, GET /metrics
// Every handler answers errors OpenAI-shaped (api_error.h) and is safe to
// call from many threads at once.
#ifndef TESSERA_SERVER_ROUTES_H_
#define TESSERA_SERVER_ROUTES_H_

#include <httplib.h>

#include "server/serving_context.h"

namespace tessera::server {

void HandleCompletions(ServingContext& ctx, const httplib::Request& req,
                       httplib::Response& res);
void HandleChatCompletions(ServingContext& ctx, const httplib::Request& req,
                           httplib::Response& res);
void HandleGenerate(ServingContext& ctx, const httplib::Request& req,
                    httplib::Response& res);

void HandleModels(ServingContext& ctx, const httplib::Request& req,
                  httplib::Response& res);
void HandleTokenize(ServingContext& ctx, const httplib::Request& req,
                    httplib::Response& res);
void HandleDetokenize(ServingContext& ctx, const httplib::Request& req,
                      httplib::Response& res);
void HandleHealth(ServingContext& ctx, const httplib::Request& req,
                  httplib::Response& res);
void HandleHealthGenerate(ServingContext& ctx, const httplib::Request& req,
                          httplib::Response& res);
void HandleServerInfo(ServingContext& ctx, const httplib::Request& req,
                      httplib::Response& res);
void HandleFlushCache(ServingContext& ctx, const httplib::Request& req,
                      httplib::Response& res);
void HandleAbortRequest(ServingContext& ctx, const httplib::Request& req,
                        httplib::Response& res);
void HandleMetrics(ServingContext& ctx, const httplib::Request& req,
                   httplib::Response& res);

}  // namespace tessera::server

#endif  // TESSERA_SERVER_ROUTES_H_
