// The HTTP routes of `tessera serve`, one handler per endpoint, all taking
// the shared ServingContext. Registered by HttpServer (http_server.h).
//
// OpenAI:  POST /v1/completions, POST /v1/chat/completions,
//          POST /v1/embeddings, GET /v1/models, GET /v1/models/{id}
// Browser: GET / (the chat page)
// Native:  POST /generate, POST /tokenize, POST /detokenize, GET /health,
//          GET /health_generate, GET /server_info, POST|GET /flush_cache,
//          POST /abort_request, GET /metrics
// Every handler answers errors OpenAI-shaped (api_error.h) and is safe to
// call from many threads at once.
#ifndef TESSERA_SERVER_ROUTES_H_
#define TESSERA_SERVER_ROUTES_H_

#include "server/http_message.h"

#include "server/serving_context.h"

namespace tessera::server {

void HandleCompletions(ServingContext& ctx, const HttpRequest& req,
                       HttpResponse& res);
void HandleChatCompletions(ServingContext& ctx, const HttpRequest& req,
                           HttpResponse& res);
void HandleGenerate(ServingContext& ctx, const HttpRequest& req,
                    HttpResponse& res);
// POST /v1/embeddings (embedding servers, --is-embedding).
void HandleEmbeddings(ServingContext& ctx, const HttpRequest& req,
                      HttpResponse& res);

void HandleModels(ServingContext& ctx, const HttpRequest& req,
                  HttpResponse& res);
// GET /: the built-in chat page (src/server/chat_page.html, embedded).
void HandleChatPage(ServingContext& ctx, const HttpRequest& req,
                    HttpResponse& res);
// GET /v1/models/{id} (the id %-decoded): the card, or 404 model_not_found.
void HandleModel(ServingContext& ctx, const HttpRequest& req,
                 HttpResponse& res);
void HandleTokenize(ServingContext& ctx, const HttpRequest& req,
                    HttpResponse& res);
void HandleDetokenize(ServingContext& ctx, const HttpRequest& req,
                      HttpResponse& res);
void HandleHealth(ServingContext& ctx, const HttpRequest& req,
                  HttpResponse& res);
void HandleHealthGenerate(ServingContext& ctx, const HttpRequest& req,
                          HttpResponse& res);
void HandleServerInfo(ServingContext& ctx, const HttpRequest& req,
                      HttpResponse& res);
void HandleFlushCache(ServingContext& ctx, const HttpRequest& req,
                      HttpResponse& res);
void HandleAbortRequest(ServingContext& ctx, const HttpRequest& req,
                        HttpResponse& res);
void HandleMetrics(ServingContext& ctx, const HttpRequest& req,
                   HttpResponse& res);

}  // namespace tessera::server

#endif  // TESSERA_SERVER_ROUTES_H_
