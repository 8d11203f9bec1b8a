// Certificates for the TLS tests, made at test time with OpenSSL's C API
// (no `openssl` program): a CA, a server and a client certificate it
// signed, and the bad cases a client must refuse (a certificate signed by
// another CA, an expired one, one for another name). EC P-256 keys, X.509
// v3, SHA-256; the good ones are valid from an hour ago to a day ahead.
//
//   absl::StatusOr<TlsFiles> files = MakeTlsFiles(dir);
//   if (!files.ok()) return files.status();
//   absl::StatusOr<std::unique_ptr<RedisServer>> server =
//       StartRedisServer({.tls = TlsServerOptionsFor(*files)});
//   // rediss://127.0.0.1:<(*server)->tls_port()>, verified with
//   // files->ca_file.
//
// And a raw OpenSSL client (TlsCommands, TlsPing) with which support's own
// tests check a TLS port without the library's client.
#ifndef TOKENLEASE_SUPPORT_TLS_CERTS_H_
#define TOKENLEASE_SUPPORT_TLS_CERTS_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "redis/reply.h"
#include "support/redis_server.h"

namespace tokenlease::support {

// The PEM files MakeTlsFiles wrote (absolute or as `dir` was given: each
// is `dir` + "/" + a fixed file name). Keys are unencrypted PKCS#8, mode
// 0600; certificates mode 0644.
struct TlsFiles {
  // The directory that holds them all.
  std::string dir;
  // The CA certificate (self-signed; basicConstraints CA:TRUE critical,
  // keyUsage keyCertSign, cRLSign) that signed every certificate below but
  // other_ca_file: the file clients and servers verify against.
  std::string ca_file;
  // The server's: subjectAltName IP:127.0.0.1 and DNS:localhost,
  // extendedKeyUsage serverAuth.
  std::string server_cert;
  std::string server_key;
  // A client's: extendedKeyUsage clientAuth, CN "tokenlease test client".
  std::string client_cert;
  std::string client_key;
  // Another self-signed CA that signed nothing of these: the "wrong CA" a
  // client verifies against to see the server refused.
  std::string other_ca_file;
  // Like server_cert, signed by the CA, but valid from 2 days ago to 1 day
  // ago: verification fails with X509_V_ERR_CERT_HAS_EXPIRED.
  std::string expired_server_cert;
  std::string expired_server_key;
  // Like server_cert, signed by the CA, valid, but for another name only
  // (subjectAltName DNS:wrong.example): a client that checks the host
  // (127.0.0.1 or localhost) refuses it.
  std::string other_name_server_cert;
  std::string other_name_server_key;
};

// Writes the files of TlsFiles into `dir`, created (mode 0700, with its
// parents) if missing; files already there are replaced. Every call makes
// new keys and certificates (random serial numbers). Takes a few
// milliseconds. Internal naming the step and OpenSSL's reason if OpenSSL
// fails; the errno status naming the path if a file cannot be written.
absl::StatusOr<TlsFiles> MakeTlsFiles(const std::string& dir);

// A temporary directory (under TMPDIR or /tmp) with MakeTlsFiles' files,
// removed with them by the destructor. Not copyable.
class TempTlsFiles {
 public:
  // Creates the directory ("<name>.XXXXXX") and the files; the errors of
  // mkdtemp and MakeTlsFiles (nothing is left behind on failure).
  static absl::StatusOr<std::unique_ptr<TempTlsFiles>> Make(
      const std::string& name = "tokenlease-tls");
  ~TempTlsFiles();
  TempTlsFiles(const TempTlsFiles&) = delete;
  TempTlsFiles& operator=(const TempTlsFiles&) = delete;

  // The files.
  const TlsFiles& files() const { return files_; }

 private:
  explicit TempTlsFiles(TlsFiles files) : files_(std::move(files)) {}
  TlsFiles files_;
};

// The TLS options of a server (RedisServerOptions::tls, and the cluster's
// and the sentinel set's) that presents files.server_cert, verifies peers
// against files.ca_file, requires clients to present a certificate if
// `require_client_cert`, and presents files.client_cert when it connects
// to another server itself (replication, cluster bus, sentinel links).
RedisTlsServerOptions TlsServerOptionsFor(const TlsFiles& files,
                                          bool require_client_cert = false);

// How TlsCommands connects.
struct TlsClientOptions {
  // The CA file the server's certificate is verified against; empty: the
  // server is not verified at all.
  std::string ca_file{};
  // The certificate and key the client presents; empty: none.
  std::string cert_file{};
  std::string key_file{};
  // The name the server's certificate must be for (an IP address is
  // checked against its IP subjectAltNames, anything else against its DNS
  // ones); empty: not checked. Only with ca_file.
  std::string host = "127.0.0.1";
  // What connecting, the handshake and each reply wait at most.
  absl::Duration timeout = absl::Seconds(2);
};

// Connects to 127.0.0.1:`port` over TLS (TLS 1.2 or later) with raw
// OpenSSL, sends `commands` one after another on that one connection and
// returns their replies (an error reply is a reply). InvalidArgument for no
// commands or an empty one; Unavailable, with OpenSSL's reason and the
// verification result, if the connection, the handshake or a reply fails
// (a server that refuses the client's certificate, or its lack, fails the
// first reply under TLS 1.3); DeadlineExceeded if a step outlasts the
// timeout.
absl::StatusOr<std::vector<internal::RedisReply>> TlsCommands(
    int port, const std::vector<std::vector<std::string>>& commands,
    const TlsClientOptions& options = {});

// PING over TLS to 127.0.0.1:`port`, verifying the server against
// files.ca_file for 127.0.0.1, presenting files.client_cert if
// `with_client_cert`: the reply's text ("PONG", or an error reply's text
// such as "NOAUTH ..."), or TlsCommands' errors.
absl::StatusOr<std::string> TlsPing(int port, const TlsFiles& files,
                                    bool with_client_cert);

}  // namespace tokenlease::support

#endif  // TOKENLEASE_SUPPORT_TLS_CERTS_H_
