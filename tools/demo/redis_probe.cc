// The parent's hiredis connection and the INFO parsing (redis_probe.h).
#include "demo/redis_probe.h"

#include <hiredis/hiredis.h>
#include <sys/time.h>

#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "redis/endpoint.h"

namespace tokenlease::tools {

std::string InfoText(absl::string_view info, absl::string_view name) {
  const std::string key = absl::StrCat(name, ":");
  for (absl::string_view l : absl::StrSplit(info, "\r\n")) {
    if (absl::ConsumePrefix(&l, key)) return std::string(l);
  }
  return "";
}

int64_t InfoField(absl::string_view info, absl::string_view name) {
  int64_t v = 0;
  return absl::SimpleAtoi(InfoText(info, name), &v) ? v : -1;
}

int64_t ServerCpuUsec(absl::string_view info) {
  int64_t total = 0;
  for (absl::string_view name : {"used_cpu_user", "used_cpu_sys"}) {
    // "0.515652" (Redis 5 and later print 6 decimals): seconds and a
    // fraction, read as integers so that no rounding of a double enters the
    // difference of two readings.
    const std::string text = InfoText(info, name);
    const std::pair<absl::string_view, absl::string_view> parts =
        absl::StrSplit(text, absl::MaxSplits('.', 1));
    int64_t sec = 0, usec = 0;
    const std::string fraction =
        absl::StrCat(parts.second, std::string(6, '0')).substr(0, 6);
    if (parts.first.empty() ||
        parts.first.find_first_not_of("0123456789") !=
            absl::string_view::npos ||
        !absl::SimpleAtoi(parts.first, &sec) || parts.second.size() > 6 ||
        parts.second.find_first_not_of("0123456789") !=
            absl::string_view::npos ||
        !absl::SimpleAtoi(fraction, &usec)) {
      return -1;
    }
    total += sec * 1000000 + usec;
  }
  return total;
}

namespace {

// `field`= of cmdstat_<command> ("calls=1,usec=2,..."); 0 if absent.
int64_t CommandStat(absl::string_view info, absl::string_view command,
                    absl::string_view field) {
  const std::string stats = InfoText(info, absl::StrCat("cmdstat_", command));
  const std::string key = absl::StrCat(field, "=");
  for (absl::string_view part : absl::StrSplit(stats, ',')) {
    int64_t v = 0;
    if (absl::ConsumePrefix(&part, key) && absl::SimpleAtoi(part, &v)) {
      return v;
    }
  }
  return 0;
}

}  // namespace

int64_t CommandCalls(absl::string_view info, absl::string_view command) {
  return CommandStat(info, command, "calls");
}

int64_t CommandUsec(absl::string_view info, absl::string_view command) {
  return CommandStat(info, command, "usec");
}

void RedisProbe::Free::operator()(redisContext* c) const { redisFree(c); }

absl::StatusOr<RedisProbe> RedisProbe::Connect(absl::string_view url) {
  absl::StatusOr<internal::RedisEndpoint> ep = internal::ParseRedisUrl(url);
  if (!ep.ok()) return ep.status();
  const timeval tv{2, 0};
  redisContext* ctx =
      ep->socket_path.empty()
          ? redisConnectWithTimeout(ep->host.c_str(), ep->port, tv)
          : redisConnectUnixWithTimeout(ep->socket_path.c_str(), tv);
  if (ctx == nullptr) return absl::ResourceExhaustedError("redisConnect");
  if (ctx->err) {
    const std::string why = ctx->errstr;
    redisFree(ctx);
    return absl::UnavailableError(
        absl::StrCat("cannot connect to ", ep->Describe(), ": ", why));
  }
  return RedisProbe(ctx);
}

std::string RedisProbe::Command(const char* command) {
  auto* r = static_cast<redisReply*>(redisCommand(ctx_.get(), command));
  if (r == nullptr) return "";
  std::string s = r->type != REDIS_REPLY_ERROR && r->str != nullptr
                      ? std::string(r->str, r->len)
                      : "";
  freeReplyObject(r);
  return s;
}

int64_t RedisProbe::Integer(const char* command) {
  auto* r = static_cast<redisReply*>(redisCommand(ctx_.get(), command));
  if (r == nullptr) return -1;
  const int64_t v = r->type == REDIS_REPLY_INTEGER ? r->integer : -1;
  freeReplyObject(r);
  return v;
}

int64_t RedisProbe::Info(const char* section, absl::string_view name) {
  return InfoField(Command(absl::StrCat("INFO ", section).c_str()), name);
}

int64_t RedisProbe::ScriptCalls() {
  const std::string info = Command("INFO commandstats");
  return CommandCalls(info, "evalsha") + CommandCalls(info, "eval");
}

int64_t RedisProbe::ScriptUsec() {
  const std::string info = Command("INFO commandstats");
  return CommandUsec(info, "evalsha") + CommandUsec(info, "eval");
}

int64_t RedisProbe::CpuUsec() { return ServerCpuUsec(Command("INFO cpu")); }

}  // namespace tokenlease::tools
