#include "server/embeddings_protocol.h"

#include <fmt/format.h>
#include <openssl/evp.h>

#include <cmath>
#include <cstring>

#include "server/json_fields.h"

namespace tessera::server {

MaybeApiError ParseEmbeddingRequest(const Json& body,
                                    const ProtocolLimits& limits,
                                    EmbeddingRequest* out) {
  if (!body.is_object()) {
    return BadRequest(fmt::format(
        "the request body must be a JSON object, not {}", JsonTypeName(body)));
  }
  EmbeddingRequest r;
  TSR_RETURN_IF_API_ERROR(ReadString(body, "model", &r.model));
  TSR_RETURN_IF_API_ERROR(ParsePromptList(body, "input", limits, &r.inputs));
  std::optional<std::string> format;
  TSR_RETURN_IF_API_ERROR(ReadString(body, "encoding_format", &format));
  if (format && *format != "float" && *format != "base64") {
    return BadRequest(fmt::format("'encoding_format' must be \"float\" or "
                                  "\"base64\", not \"{}\"",
                                  *format),
                      "encoding_format");
  }
  r.base64 = format && *format == "base64";
  TSR_RETURN_IF_API_ERROR(ReadInteger(body, "dimensions", &r.dimensions));
  if (r.dimensions && *r.dimensions < 1) {
    return BadRequest("'dimensions' must be at least 1", "dimensions");
  }
  std::optional<std::string> user;
  TSR_RETURN_IF_API_ERROR(ReadString(body, "user", &user));
  TSR_RETURN_IF_API_ERROR(RejectUnknownFields(
      body, {"model", "input", "encoding_format", "dimensions", "user"},
      "embeddings"));
  *out = std::move(r);
  return std::nullopt;
}

MaybeApiError ReduceDimensions(std::optional<int64_t> dimensions,
                               bool normalize, std::vector<float>* v) {
  if (!dimensions || *dimensions == static_cast<int64_t>(v->size())) {
    return std::nullopt;
  }
  if (*dimensions > static_cast<int64_t>(v->size())) {
    return BadRequest(
        fmt::format("'dimensions' is {} but this model's embeddings have {}; "
                    "ask for at most {}",
                    *dimensions, v->size(), v->size()),
        "dimensions");
  }
  v->resize(static_cast<size_t>(*dimensions));
  if (normalize) {
    double norm = 0;
    for (float x : *v) norm += static_cast<double>(x) * x;
    norm = std::sqrt(norm);
    if (norm > 0) {
      for (float& x : *v) x = static_cast<float>(x / norm);
    }
  }
  return std::nullopt;
}

std::string EmbeddingBase64(std::span<const float> v) {
  // x86 and every plugin host Tessera builds for are little-endian, the
  // byte order OpenAI's clients decode.
  const size_t bytes = v.size() * sizeof(float);
  std::string out(4 * ((bytes + 2) / 3) + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(v.data()),
                                static_cast<int>(bytes));
  out.resize(static_cast<size_t>(n));
  return out;
}

Json EmbeddingResponseJson(const std::string& model,
                           const std::vector<std::vector<float>>& vectors,
                           bool base64, int64_t prompt_tokens) {
  Json data = Json::array();
  for (size_t i = 0; i < vectors.size(); ++i) {
    Json item = {{"object", "embedding"}, {"index", i}};
    if (base64) {
      item["embedding"] = EmbeddingBase64(vectors[i]);
    } else {
      item["embedding"] = vectors[i];
    }
    data.push_back(std::move(item));
  }
  return Json{{"object", "list"},
              {"data", std::move(data)},
              {"model", model},
              {"usage",
               {{"prompt_tokens", prompt_tokens},
                {"total_tokens", prompt_tokens}}}};
}

}  // namespace tessera::server
