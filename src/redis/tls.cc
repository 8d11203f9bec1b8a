#include "redis/tls.h"

#include <arpa/inet.h>
#include <hiredis/hiredis.h>
#include <hiredis/hiredis_ssl.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace tokenlease::internal {
namespace {

// OpenSSL's reason for the last error of this thread, and clears the
// queue; `none` if there is none.
std::string TakeOpenSslReason(absl::string_view none) {
  const unsigned long e = ERR_peek_last_error();
  ERR_clear_error();
  if (e == 0) return std::string(none);
  const char* reason = ERR_reason_error_string(e);
  if (reason != nullptr) return reason;
  char buf[256];
  ERR_error_string_n(e, buf, sizeof(buf));
  return buf;
}

// A file a field names must be readable: says which field, which file and
// why not, before OpenSSL's less precise "system lib".
absl::Status CheckReadable(const char* field, const std::string& path) {
  if (access(path.c_str(), R_OK) == 0) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("RedisOptions.tls.", field, " \"", path,
                   "\" cannot be read: ", std::strerror(errno)));
}

absl::Status FileError(const char* field, const std::string& path,
                       absl::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrCat("RedisOptions.tls.", field, " \"", path, "\": ", what, ": ",
                   TakeOpenSslReason("unknown OpenSSL error")));
}

// An encrypted key would make OpenSSL ask for its passphrase on the
// terminal; refuse it instead.
int NoPassphrase(char*, int, int, void*) { return -1; }

bool IsIpLiteral(const std::string& host) {
  unsigned char buf[sizeof(in6_addr)];
  return inet_pton(AF_INET, host.c_str(), buf) == 1 ||
         inet_pton(AF_INET6, host.c_str(), buf) == 1;
}

// OpenSSL reasons that mean the peer does not speak TLS: a plaintext
// Redis answers a ClientHello with "-ERR ..." or closes.
bool NotTls(int reason) {
  return reason == SSL_R_WRONG_VERSION_NUMBER ||
         reason == SSL_R_PACKET_LENGTH_TOO_LONG || reason == SSL_R_HTTP_REQUEST;
}

// Alerts a server sends when it refuses our certificate (or that there is
// none).
bool ClientCertRefused(int reason) {
  return reason == SSL_R_TLSV13_ALERT_CERTIFICATE_REQUIRED ||
         reason == SSL_R_SSLV3_ALERT_BAD_CERTIFICATE ||
         reason == SSL_R_TLSV1_ALERT_UNKNOWN_CA ||
         reason == SSL_R_SSLV3_ALERT_CERTIFICATE_UNKNOWN;
}

}  // namespace

bool PeerReset(const redisContext* c) {
  return c->err == REDIS_ERR_EOF ||
         (c->err == REDIS_ERR_IO &&
          absl::EndsWith(c->errstr, std::strerror(ECONNRESET)));
}

absl::Status ValidateTlsOptions(const RedisTlsOptions& tls, bool tls_url) {
  const bool any = !tls.ca_file.empty() || !tls.ca_dir.empty() ||
                   !tls.cert_file.empty() || !tls.key_file.empty() ||
                   !tls.server_name.empty() || !tls.verify_peer;
  if (any && !tls_url) {
    return absl::InvalidArgumentError(
        "RedisOptions.tls is set but RedisOptions.url is not a TLS URL: use "
        "rediss://, rediss+cluster:// or rediss+sentinel://");
  }
  if (tls.cert_file.empty() != tls.key_file.empty()) {
    return absl::InvalidArgumentError(
        "RedisOptions.tls: cert_file and key_file go together (a client "
        "certificate needs its private key)");
  }
  for (char c : tls.server_name) {
    if (!absl::ascii_isalnum(c) && c != '.' && c != '-' && c != '_' &&
        c != ':') {
      return absl::InvalidArgumentError(absl::StrCat(
          "RedisOptions.tls.server_name \"", tls.server_name,
          "\": a host name has only letters, digits, '.', '-', '_', ':'"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<const TlsContext>> TlsContext::Create(
    const RedisTlsOptions& options) {
  ERR_clear_error();
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  if (ctx == nullptr) {
    return absl::InternalError(
        absl::StrCat("OpenSSL cannot create a TLS context: ",
                     TakeOpenSslReason("out of memory")));
  }
  // Owned by the result from here on (its destructor frees ctx).
  std::shared_ptr<const TlsContext> result(new TlsContext(ctx, options));
  // Redis supports TLS 1.2 and 1.3; older versions are broken.
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  SSL_CTX_set_default_passwd_cb(ctx, &NoPassphrase);
  if (!options.ca_file.empty()) {
    if (absl::Status s = CheckReadable("ca_file", options.ca_file); !s.ok()) {
      return s;
    }
  }
  if (!options.ca_dir.empty()) {
    if (absl::Status s = CheckReadable("ca_dir", options.ca_dir); !s.ok()) {
      return s;
    }
  }
  if (!options.ca_file.empty() || !options.ca_dir.empty()) {
    if (SSL_CTX_load_verify_locations(
            ctx, options.ca_file.empty() ? nullptr : options.ca_file.c_str(),
            options.ca_dir.empty() ? nullptr : options.ca_dir.c_str()) != 1) {
      return options.ca_file.empty()
                 ? FileError("ca_dir", options.ca_dir, "no CA certificates")
                 : FileError("ca_file", options.ca_file,
                             "no PEM CA certificates");
    }
  } else if (SSL_CTX_set_default_verify_paths(ctx) != 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "RedisOptions.tls: the system's trust store cannot be loaded (",
        TakeOpenSslReason("unknown"), "); set ca_file or ca_dir"));
  }
  if (!options.cert_file.empty()) {
    if (absl::Status s = CheckReadable("cert_file", options.cert_file);
        !s.ok()) {
      return s;
    }
    if (absl::Status s = CheckReadable("key_file", options.key_file); !s.ok()) {
      return s;
    }
    if (SSL_CTX_use_certificate_chain_file(ctx, options.cert_file.c_str()) !=
        1) {
      return FileError("cert_file", options.cert_file, "not a PEM certificate");
    }
    if (SSL_CTX_use_PrivateKey_file(ctx, options.key_file.c_str(),
                                    SSL_FILETYPE_PEM) != 1) {
      const unsigned long e = ERR_peek_last_error();
      if (ERR_GET_LIB(e) == ERR_LIB_X509 &&
          ERR_GET_REASON(e) == X509_R_KEY_VALUES_MISMATCH) {
        return FileError("key_file", options.key_file,
                         "does not match cert_file");
      }
      return FileError("key_file", options.key_file,
                       "not an unencrypted PEM private key");
    }
    if (SSL_CTX_check_private_key(ctx) != 1) {
      return FileError("key_file", options.key_file,
                       "does not match cert_file");
    }
  }
  return result;
}

TlsContext::TlsContext(SSL_CTX* ctx, const RedisTlsOptions& options)
    : ctx_(ctx),
      server_name_(options.server_name),
      verify_peer_(options.verify_peer),
      client_cert_(!options.cert_file.empty()) {}

TlsContext::~TlsContext() { SSL_CTX_free(ctx_); }

absl::StatusOr<ssl_st*> TlsContext::Attach(redisContext* c,
                                           const std::string& host) const {
  ERR_clear_error();
  SSL* ssl = SSL_new(ctx_);
  if (ssl == nullptr) {
    return absl::InternalError(absl::StrCat(
        "TLS: cannot create a session: ", TakeOpenSslReason("out of memory")));
  }
  const std::string& name = server_name_.empty() ? host : server_name_;
  if (verify_peer_) {
    SSL_set_verify(ssl, SSL_VERIFY_PEER, nullptr);
    X509_VERIFY_PARAM* param = SSL_get0_param(ssl);
    // The certificate must name the server: its IP address, or its host
    // name (wildcards allowed, not partial ones).
    const int named =
        IsIpLiteral(name)
            ? X509_VERIFY_PARAM_set1_ip_asc(param, name.c_str())
            : (X509_VERIFY_PARAM_set_hostflags(
                   param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS),
               X509_VERIFY_PARAM_set1_host(param, name.c_str(), 0));
    if (named != 1) {
      SSL_free(ssl);
      return absl::InvalidArgumentError(
          absl::StrCat("TLS: \"", name, "\" cannot be checked as a name"));
    }
  } else {
    SSL_set_verify(ssl, SSL_VERIFY_NONE, nullptr);
  }
  // SNI carries host names only (RFC 6066), never an address.
  if (!IsIpLiteral(name) && SSL_set_tlsext_host_name(ssl, name.c_str()) != 1) {
    SSL_free(ssl);
    return absl::InvalidArgumentError(absl::StrCat(
        "TLS: \"", name, "\" cannot be sent as the server name (SNI)"));
  }
  if (redisInitiateSSL(c, ssl) != REDIS_OK) {
    // hiredis did not take the session. Its handshake may have got as far
    // as the server's certificate (a loopback connect completes at once).
    std::string why = HandshakeFailure(ssl, c->errstr, PeerReset(c));
    SSL_free(ssl);
    return absl::UnavailableError(why);
  }
  return ssl;
}

bool TlsContext::HandshakeDone(const ssl_st* ssl) {
  return ssl != nullptr && SSL_is_init_finished(ssl) == 1;
}

std::string TlsContext::HandshakeFailure(const ssl_st* ssl,
                                         absl::string_view fallback,
                                         bool peer_reset) const {
  const long verify = SSL_get_verify_result(ssl);
  if (verify != X509_V_OK) {
    ERR_clear_error();
    switch (verify) {
      case X509_V_ERR_HOSTNAME_MISMATCH:
      case X509_V_ERR_IP_ADDRESS_MISMATCH: {
        // The name Attach asked the certificate to hold.
        auto* param = const_cast<X509_VERIFY_PARAM*>(
            SSL_get0_param(const_cast<SSL*>(ssl)));
        std::string expected = "the server";
        if (const char* host = X509_VERIFY_PARAM_get0_host(param, 0)) {
          expected = host;
        } else if (char* ip = X509_VERIFY_PARAM_get1_ip_asc(param)) {
          expected = ip;
          OPENSSL_free(ip);
        }
        return absl::StrCat(
            "TLS: the server's certificate does not name ", expected,
            " (set RedisOptions::tls.server_name to a name it holds)");
      }
      case X509_V_ERR_CERT_HAS_EXPIRED:
        return "TLS: the server's certificate has expired";
      case X509_V_ERR_CERT_NOT_YET_VALID:
        return "TLS: the server's certificate is not valid yet (check the "
               "clocks)";
      default:
        return absl::StrCat(
            "TLS: the server's certificate is not trusted: ",
            X509_verify_cert_error_string(verify),
            " (RedisOptions::tls.ca_file names the CAs to trust)");
    }
  }
  const unsigned long e = ERR_peek_last_error();
  ERR_clear_error();
  if (e != 0 && ERR_GET_LIB(e) == ERR_LIB_SSL) {
    const int reason = ERR_GET_REASON(e);
    const char* text = ERR_reason_error_string(e);
    const std::string why = text != nullptr ? text : "unknown";
    if (NotTls(reason)) {
      return absl::StrCat("TLS: the server is not speaking TLS (", why,
                          "): a plaintext port? use redis://");
    }
    if (ClientCertRefused(reason)) {
      return absl::StrCat(
          "TLS: the server refused our client certificate (", why,
          "): set RedisOptions::tls.cert_file and key_file to one its CA "
          "signed");
    }
    return absl::StrCat("TLS handshake failed: ", why);
  }
  if (peer_reset && !client_cert_) {
    // TLS 1.3 finishes the client's side of the handshake before the
    // server checks for a certificate; a server that requires one then
    // sends an alert and closes, and the alert may be lost in the reset.
    return absl::StrCat(
        fallback,
        " during the TLS handshake or the login (a server that requires "
        "client certificates does this: set RedisOptions::tls.cert_file and "
        "key_file)");
  }
  if (!HandshakeDone(ssl)) {
    return absl::StrCat("TLS handshake failed: ", fallback);
  }
  return std::string(fallback);
}

}  // namespace tokenlease::internal
