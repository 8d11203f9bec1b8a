// TLS for the Redis connections (rediss:// endpoints): one OpenSSL context
// made from RedisTlsOptions, a session per connection handed to hiredis,
// and, when a handshake fails, the name of what failed.
//
// hiredis's own helpers (redisCreateSSLContextWithOptions) neither check
// the server's name (only SNI is sent) nor expose the session, so the
// context and sessions are ours and hiredis gets each session through
// redisInitiateSSL, right after the connect starts (hiredis #1002: later
// is too late for an async context).
#ifndef TOKENLEASE_SRC_REDIS_TLS_H_
#define TOKENLEASE_SRC_REDIS_TLS_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "tokenlease/redis.h"

struct redisContext;
struct ssl_ctx_st;
struct ssl_st;

namespace tokenlease::internal {

// The checks RedisOptions::Validate makes on RedisOptions::tls, for any
// client that takes one: InvalidArgument (messages naming "RedisOptions.tls"
// and its fields) if settings are given for a plain URL (`tls_url` false),
// a certificate comes without its key or the reverse, or server_name is not
// a host name.
absl::Status ValidateTlsOptions(const RedisTlsOptions& tls, bool tls_url);

// True if `c` failed because the server closed or reset the connection
// (not: refused it, or a timeout): HandshakeFailure's `peer_reset`.
bool PeerReset(const redisContext* c);

// Immutable after Create; Attach may run on any thread (OpenSSL contexts
// are thread-safe for creating sessions).
class TlsContext {
 public:
  // Reads the CA, certificate and key files. InvalidArgument naming the
  // RedisTlsOptions field, the file and OpenSSL's reason (never the key's
  // content) if one cannot be used.
  static absl::StatusOr<std::shared_ptr<const TlsContext>> Create(
      const RedisTlsOptions& options);
  ~TlsContext();
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;

  // Starts TLS on `c`, a context whose connect has just been started (or,
  // blocking, has finished), for the server at `host` (a numeric address
  // or a name; RedisTlsOptions::server_name replaces it). The session
  // then belongs to `c` (hiredis frees it with the context); the pointer
  // stays usable as long as `c` lives, for HandshakeFailure. An error
  // text if TLS cannot start.
  absl::StatusOr<ssl_st*> Attach(redisContext* c,
                                 const std::string& host) const;

  // Why a connection whose TLS session is `ssl` ended before it was
  // usable, for people: a certificate that is not trusted (and why), one
  // that does not name the server, one that has expired, a server that
  // does not speak TLS, a server that refused our certificate. Reads and
  // clears this thread's OpenSSL error queue. `fallback`: hiredis's own
  // text, used when OpenSSL says nothing more precise. `peer_reset`: the
  // server closed or reset the connection (without a client certificate
  // configured, that is what a server that requires one does when its
  // alert is lost in the reset: the text then says so).
  std::string HandshakeFailure(const ssl_st* ssl, absl::string_view fallback,
                               bool peer_reset = false) const;

  // True once the handshake of `ssl` has finished.
  static bool HandshakeDone(const ssl_st* ssl);

  // False when RedisTlsOptions::verify_peer is off.
  bool verify_peer() const { return verify_peer_; }

 private:
  TlsContext(ssl_ctx_st* ctx, const RedisTlsOptions& options);

  ssl_ctx_st* ctx_;
  std::string server_name_;
  bool verify_peer_;
  bool client_cert_;  // cert_file is set
};

}  // namespace tokenlease::internal

#endif  // TOKENLEASE_SRC_REDIS_TLS_H_
