#include "kv/redis_storage.h"

#include <fmt/format.h>
#include <hiredis/hiredis.h>
#include <sys/time.h>

#include <charconv>
#include <cstring>

namespace tessera::kv {
namespace {

constexpr const char* kKeyPrefix = "tessera:kv:";

std::string RedisKey(const PageKey& key) { return kKeyPrefix + key.Hex(); }

struct ReplyDeleter {
  void operator()(redisReply* r) const {
    if (r != nullptr) freeReplyObject(r);
  }
};
using Reply = std::unique_ptr<redisReply, ReplyDeleter>;

bool ParseInt(std::string_view s, int& out) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size();
}

}  // namespace

StatusOr<RedisUrl> ParseRedisUrl(const std::string& url) {
  auto bad = [&url] {
    return InvalidArgumentError(fmt::format(
        "--hicache-storage-redis-url '{}' is not redis://HOST:PORT[/DB]", url));
  };
  constexpr std::string_view kScheme = "redis://";
  if (url.rfind(kScheme, 0) != 0) return bad();
  std::string_view rest = std::string_view(url).substr(kScheme.size());
  RedisUrl out;
  const size_t slash = rest.find('/');
  if (slash != std::string_view::npos) {
    if (!ParseInt(rest.substr(slash + 1), out.db) || out.db < 0) return bad();
    rest = rest.substr(0, slash);
  }
  const size_t colon = rest.rfind(':');
  if (colon != std::string_view::npos) {
    if (!ParseInt(rest.substr(colon + 1), out.port) || out.port <= 0 ||
        out.port > 65535) {
      return bad();
    }
    rest = rest.substr(0, colon);
  }
  if (rest.empty()) return bad();
  out.host = std::string(rest);
  return out;
}

StatusOr<std::unique_ptr<RedisKvStorage>> RedisKvStorage::Open(
    const std::string& url, int timeout_ms) {
  TSR_ASSIGN_OR_RETURN(RedisUrl parsed, ParseRedisUrl(url));
  std::unique_ptr<RedisKvStorage> s(
      new RedisKvStorage(url, std::move(parsed), timeout_ms));
  TSR_RETURN_IF_ERROR(s->Connect());
  return s;
}

RedisKvStorage::~RedisKvStorage() {
  if (ctx_ != nullptr) redisFree(ctx_);
}

Status RedisKvStorage::Broken(const std::string& what) {
  std::string why = ctx_ != nullptr && ctx_->err != 0 ? ctx_->errstr : "no reply";
  if (ctx_ != nullptr) redisFree(ctx_);
  ctx_ = nullptr;
  return UnavailableError(
      fmt::format("redis {} at {}: {}", what, url_, why));
}

Status RedisKvStorage::Connect() {
  if (ctx_ != nullptr) return OkStatus();
  const auto now = std::chrono::steady_clock::now();
  if (last_attempt_.time_since_epoch().count() != 0 &&
      now - last_attempt_ < std::chrono::seconds(1)) {
    return UnavailableError(
        fmt::format("redis at {} is unreachable (retrying each second)", url_));
  }
  last_attempt_ = now;
  timeval tv{timeout_ms_ / 1000, (timeout_ms_ % 1000) * 1000};
  ctx_ = redisConnectWithTimeout(parsed_.host.c_str(), parsed_.port, tv);
  if (ctx_ == nullptr || ctx_->err != 0) {
    Status s = Broken("connect");
    return UnavailableError(std::string(s.message()) +
                            "; start Redis there or fix "
                            "--hicache-storage-redis-url");
  }
  redisSetTimeout(ctx_, tv);
  if (parsed_.db != 0) {
    Reply r(static_cast<redisReply*>(
        redisCommand(ctx_, "SELECT %d", parsed_.db)));
    if (!r || r->type == REDIS_REPLY_ERROR) return Broken("SELECT");
  }
  return OkStatus();
}

Status RedisKvStorage::Put(const PageKey& key, std::span<const uint8_t> object) {
  TSR_RETURN_IF_ERROR(Connect());
  const std::string k = RedisKey(key);
  Reply r(static_cast<redisReply*>(redisCommand(
      ctx_, "SET %b %b", k.data(), k.size(), object.data(), object.size())));
  if (!r) return Broken("SET");
  if (r->type == REDIS_REPLY_ERROR) {
    return UnavailableError(fmt::format("redis SET at {}: {}", url_,
                                        std::string(r->str, r->len)));
  }
  return OkStatus();
}

StatusOr<std::vector<uint8_t>> RedisKvStorage::Get(const PageKey& key) {
  TSR_RETURN_IF_ERROR(Connect());
  const std::string k = RedisKey(key);
  Reply r(static_cast<redisReply*>(
      redisCommand(ctx_, "GET %b", k.data(), k.size())));
  if (!r) return Broken("GET");
  if (r->type == REDIS_REPLY_NIL) return NotFoundError("no such page");
  if (r->type != REDIS_REPLY_STRING) {
    return UnavailableError(fmt::format("redis GET at {}: unexpected reply", url_));
  }
  const uint8_t* p = reinterpret_cast<const uint8_t*>(r->str);
  return std::vector<uint8_t>(p, p + r->len);
}

StatusOr<size_t> RedisKvStorage::CountPresent(std::span<const PageKey> keys) {
  if (keys.empty()) return size_t{0};
  TSR_RETURN_IF_ERROR(Connect());
  // Pipelined EXISTS, one round trip.
  for (const PageKey& key : keys) {
    const std::string k = RedisKey(key);
    if (redisAppendCommand(ctx_, "EXISTS %b", k.data(), k.size()) != REDIS_OK) {
      return Broken("EXISTS");
    }
  }
  size_t present = 0;
  bool counting = true;
  for (size_t i = 0; i < keys.size(); ++i) {
    void* raw = nullptr;
    if (redisGetReply(ctx_, &raw) != REDIS_OK) return Broken("EXISTS");
    Reply r(static_cast<redisReply*>(raw));
    const bool exists = r && r->type == REDIS_REPLY_INTEGER && r->integer == 1;
    if (counting && exists) {
      ++present;
    } else {
      counting = false;
    }
  }
  return present;
}

Status RedisKvStorage::Clear() {
  TSR_RETURN_IF_ERROR(Connect());
  std::string cursor = "0";
  const std::string pattern = std::string(kKeyPrefix) + "*";
  do {
    Reply r(static_cast<redisReply*>(redisCommand(
        ctx_, "SCAN %s MATCH %s COUNT 1000", cursor.c_str(), pattern.c_str())));
    if (!r) return Broken("SCAN");
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 2) {
      return UnavailableError(fmt::format("redis SCAN at {}: unexpected reply", url_));
    }
    cursor.assign(r->element[0]->str, r->element[0]->len);
    const redisReply* keys = r->element[1];
    for (size_t i = 0; i < keys->elements; ++i) {
      Reply d(static_cast<redisReply*>(redisCommand(
          ctx_, "DEL %b", keys->element[i]->str, keys->element[i]->len)));
      if (!d) return Broken("DEL");
    }
  } while (cursor != "0");
  return OkStatus();
}

}  // namespace tessera::kv
