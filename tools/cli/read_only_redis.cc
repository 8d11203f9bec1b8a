#include "cli/read_only_redis.h"

#include <hiredis/hiredis.h>
#include <sys/time.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "redis/endpoint.h"

namespace tokenlease::cli {
namespace {

constexpr absl::string_view kReads[] = {"GET",    "TYPE",  "PTTL", "TIME",
                                        "ZRANGE", "ZCARD", "SCAN", "INFO",
                                        "PING",   "MULTI", "EXEC", "DISCARD"};

}  // namespace

bool IsReadOnlyCommand(absl::string_view command) {
  const std::string upper = absl::AsciiStrToUpper(command);
  for (absl::string_view r : kReads) {
    if (upper == r) return true;
  }
  return false;
}

absl::StatusOr<std::unique_ptr<ReadOnlyRedis>> ReadOnlyRedis::Connect(
    absl::string_view url, absl::Duration timeout) {
  absl::StatusOr<internal::RedisEndpoint> ep = internal::ParseRedisUrl(url);
  if (!ep.ok()) return ep.status();
  const timeval tv = absl::ToTimeval(timeout);
  redisContext* ctx =
      ep->socket_path.empty()
          ? redisConnectWithTimeout(ep->host.c_str(), ep->port, tv)
          : redisConnectUnixWithTimeout(ep->socket_path.c_str(), tv);
  if (ctx == nullptr) {
    return absl::ResourceExhaustedError("out of memory for a connection");
  }
  std::unique_ptr<ReadOnlyRedis> r(new ReadOnlyRedis(ctx, ep->Describe()));
  if (ctx->err != 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot connect to ", r->endpoint_, ": ", ctx->errstr));
  }
  redisSetTimeout(ctx, tv);
  // A reply announcing a huge array must not allocate it (redis/reply.h).
  internal::LimitReplyArrays(ctx->reader);
  std::vector<std::vector<std::string>> login;
  if (!ep->password.empty()) {
    login.push_back(
        ep->user.empty()
            ? std::vector<std::string>{"AUTH", ep->password}
            : std::vector<std::string>{"AUTH", ep->user, ep->password});
  }
  if (ep->db != 0) login.push_back({"SELECT", absl::StrCat(ep->db)});
  for (const std::vector<std::string>& cmd : login) {
    absl::StatusOr<internal::RedisReply> reply = r->Send(cmd);
    if (!reply.ok()) return reply.status();
    if (reply->is_error()) {
      // The reply's text, never the command's arguments (the password).
      return absl::UnavailableError(
          absl::StrCat(r->endpoint_, " refused ", cmd[0], ": ", reply->str));
    }
  }
  return r;
}

ReadOnlyRedis::~ReadOnlyRedis() { redisFree(ctx_); }

absl::StatusOr<internal::RedisReply> ReadOnlyRedis::Run(
    const std::vector<std::string>& args) {
  if (args.empty() || !IsReadOnlyCommand(args[0])) {
    return absl::PermissionDeniedError(
        absl::StrCat("refusing to send ", args.empty() ? "nothing" : args[0],
                     ": this connection only reads"));
  }
  return Send(args);
}

absl::StatusOr<internal::RedisReply> ReadOnlyRedis::Send(
    const std::vector<std::string>& args) {
  std::vector<const char*> argv;
  std::vector<size_t> lens;
  for (const std::string& a : args) {
    argv.push_back(a.data());
    lens.push_back(a.size());
  }
  void* raw = redisCommandArgv(ctx_, static_cast<int>(argv.size()), argv.data(),
                               lens.data());
  if (raw == nullptr) {
    return absl::UnavailableError(absl::StrCat(endpoint_, " did not answer ",
                                               args[0], ": ", ctx_->errstr));
  }
  internal::RedisReply reply = internal::CopyReply(raw);
  freeReplyObject(raw);
  return reply;
}

}  // namespace tokenlease::cli
