#include "support/sync_redis.h"

#include <hiredis/hiredis.h>
#include <sys/time.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "redis/tls.h"

namespace tokenlease::support {
namespace {

// True if a blocking step that began at `start` and failed with hiredis's
// `errstr` ran into the socket's timeout (SO_RCVTIMEO / SO_SNDTIMEO,
// `timeout`): hiredis says EAGAIN, or (OpenSSL's handshake reports a
// timed-out read as "want read") says nothing, after the whole timeout.
bool TimedOut(const char* errstr, absl::Time start, absl::Duration timeout) {
  return absl::StrContains(errstr, std::strerror(EAGAIN)) ||
         absl::Now() - start >= timeout * 0.9;
}

}  // namespace

void SyncRedis::Free::operator()(redisContext* c) const { redisFree(c); }

SyncRedis::SyncRedis(redisContext* ctx, std::string endpoint,
                     absl::Duration timeout)
    : ctx_(ctx), endpoint_(std::move(endpoint)), timeout_(timeout) {}

SyncRedis::SyncRedis(SyncRedis&&) noexcept = default;
SyncRedis& SyncRedis::operator=(SyncRedis&&) noexcept = default;
SyncRedis::~SyncRedis() = default;

absl::StatusOr<SyncRedis> SyncRedis::Connect(absl::string_view url,
                                             absl::Duration timeout,
                                             const RedisTlsOptions& tls) {
  absl::StatusOr<internal::RedisEndpoint> ep = internal::ParseRedisUrl(url);
  if (!ep.ok()) return ep.status();
  return Connect(*ep, timeout, tls);
}

absl::StatusOr<SyncRedis> SyncRedis::ConnectPort(int port,
                                                 absl::Duration timeout) {
  internal::RedisEndpoint ep;
  ep.host = "127.0.0.1";
  ep.port = port;
  return Connect(ep, timeout);
}

absl::StatusOr<SyncRedis> SyncRedis::Connect(const internal::RedisEndpoint& ep,
                                             absl::Duration timeout,
                                             const RedisTlsOptions& tls) {
  if (absl::Status s = internal::ValidateTlsOptions(tls, ep.tls); !s.ok()) {
    return s;
  }
  // The files are read before anything is connected: a bad one is the
  // caller's mistake, not the server's.
  std::shared_ptr<const internal::TlsContext> tls_context;
  if (ep.tls) {
    absl::StatusOr<std::shared_ptr<const internal::TlsContext>> made =
        internal::TlsContext::Create(tls);
    if (!made.ok()) return made.status();
    tls_context = *std::move(made);
  }
  const timeval tv = absl::ToTimeval(timeout);
  redisContext* ctx =
      ep.socket_path.empty()
          ? redisConnectWithTimeout(ep.host.c_str(), ep.port, tv)
          : redisConnectUnixWithTimeout(ep.socket_path.c_str(), tv);
  if (ctx == nullptr) {
    return absl::ResourceExhaustedError("out of memory for a connection");
  }
  SyncRedis redis(ctx, ep.Describe(), timeout);
  if (ctx->err != 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot connect to ", redis.endpoint_, ": ", ctx->errstr));
  }
  // Also bounds each read and write of the blocking TLS handshake.
  redisSetTimeout(ctx, tv);
  ssl_st* ssl = nullptr;
  if (tls_context != nullptr) {
    const absl::Time start = absl::Now();
    absl::StatusOr<ssl_st*> attached = tls_context->Attach(ctx, ep.host);
    if (!attached.ok()) {
      const std::string why =
          TimedOut(ctx->errstr, start, timeout)
              ? absl::StrCat("the TLS handshake did not finish within ",
                             absl::FormatDuration(timeout),
                             " (a server that is not speaking TLS, or a "
                             "frozen one)")
              : std::string(attached.status().message());
      return absl::Status(
          attached.status().code(),
          absl::StrCat("cannot connect to ", redis.endpoint_, ": ", why));
    }
    ssl = *attached;
  }
  // A reply announcing a huge array must not allocate it (redis/reply.h).
  internal::LimitReplyArrays(ctx->reader);
  std::vector<std::vector<std::string>> login;
  if (!ep.password.empty()) {
    login.push_back(
        ep.user.empty()
            ? std::vector<std::string>{"AUTH", ep.password}
            : std::vector<std::string>{"AUTH", ep.user, ep.password});
  }
  if (ep.db != 0) login.push_back({"SELECT", absl::StrCat(ep.db)});
  // Under TLS 1.3 a server that refuses the client's certificate (or its
  // lack) says so only after the client's side of the handshake is done:
  // one command makes Connect fail then, with the reason, rather than the
  // caller's first command.
  if (ssl != nullptr && login.empty()) login.push_back({"PING"});
  for (const std::vector<std::string>& cmd : login) {
    const absl::Time start = absl::Now();
    absl::StatusOr<internal::RedisReply> reply = redis.Run(cmd);
    if (!reply.ok()) {
      if (ssl == nullptr || TimedOut(ctx->errstr, start, timeout)) {
        return reply.status();
      }
      return absl::UnavailableError(
          absl::StrCat("cannot connect to ", redis.endpoint_, ": ",
                       tls_context->HandshakeFailure(
                           ssl, ctx->errstr, internal::PeerReset(ctx))));
    }
    // Any reply to the PING shows the session works (NOAUTH included: the
    // caller may log in itself).
    if (reply->is_error() && cmd[0] != "PING") {
      // The reply's text, never the command's arguments (the password).
      return absl::UnavailableError(
          absl::StrCat(redis.endpoint_, " refused ", cmd[0], ": ", reply->str));
    }
  }
  return redis;
}

absl::StatusOr<internal::RedisReply> SyncRedis::Run(
    const std::vector<std::string>& args) {
  if (args.empty()) return absl::InvalidArgumentError("no command to send");
  std::vector<const char*> argv;
  std::vector<size_t> lens;
  argv.reserve(args.size());
  lens.reserve(args.size());
  for (const std::string& a : args) {
    argv.push_back(a.data());
    lens.push_back(a.size());
  }
  void* raw = redisCommandArgv(ctx_.get(), static_cast<int>(argv.size()),
                               argv.data(), lens.data());
  if (raw == nullptr) {
    // Only the command's name: its arguments may be a password.
    return absl::UnavailableError(
        absl::StrFormat("%s did not answer %s (timeout %s): %s", endpoint_,
                        args[0], absl::FormatDuration(timeout_), ctx_->errstr));
  }
  internal::RedisReply reply = internal::CopyReply(raw);
  freeReplyObject(raw);
  return reply;
}

absl::StatusOr<internal::RedisReply> SyncRedis::Eval(
    std::string_view script, const std::vector<std::string>& args) {
  std::vector<std::string> cmd;
  cmd.reserve(args.size() + 2);
  cmd.push_back("EVAL");
  cmd.emplace_back(script);
  cmd.insert(cmd.end(), args.begin(), args.end());
  return Run(cmd);
}

absl::StatusOr<std::string> SyncRedis::Info(absl::string_view section) {
  std::vector<std::string> cmd = {"INFO"};
  if (!section.empty()) cmd.emplace_back(section);
  absl::StatusOr<internal::RedisReply> reply = Run(cmd);
  if (!reply.ok()) return reply.status();
  if (reply->type != internal::RedisReply::Type::kString) {
    return absl::FailedPreconditionError(
        absl::StrCat(endpoint_, " answered INFO with ", reply->DebugString()));
  }
  return std::move(reply->str);
}

}  // namespace tokenlease::support
