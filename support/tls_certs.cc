#include "support/tls_certs.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <hiredis/read.h>
#include <netinet/in.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"

namespace tokenlease::support {
namespace {

struct FreeOpenSsl {
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
  void operator()(X509* p) const { X509_free(p); }
  void operator()(BIO* p) const { BIO_free(p); }
  void operator()(BIGNUM* p) const { BN_free(p); }
  void operator()(SSL_CTX* p) const { SSL_CTX_free(p); }
  void operator()(SSL* p) const { SSL_free(p); }
  void operator()(X509_EXTENSION* p) const { X509_EXTENSION_free(p); }
};
using KeyPtr = std::unique_ptr<EVP_PKEY, FreeOpenSsl>;
using CertPtr = std::unique_ptr<X509, FreeOpenSsl>;
using BioPtr = std::unique_ptr<BIO, FreeOpenSsl>;
using BignumPtr = std::unique_ptr<BIGNUM, FreeOpenSsl>;
using SslCtxPtr = std::unique_ptr<SSL_CTX, FreeOpenSsl>;
using SslPtr = std::unique_ptr<SSL, FreeOpenSsl>;
using ExtensionPtr = std::unique_ptr<X509_EXTENSION, FreeOpenSsl>;

// OpenSSL's queued errors, oldest first ("(no OpenSSL error)" if none);
// empties the queue.
std::string OpenSslReasons() {
  std::vector<std::string> reasons;
  while (const unsigned long e = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof(buf));
    reasons.emplace_back(buf);
  }
  return reasons.empty() ? "(no OpenSSL error)" : absl::StrJoin(reasons, "; ");
}

absl::Status OpenSslError(absl::string_view what) {
  return absl::InternalError(absl::StrCat(what, ": ", OpenSslReasons()));
}

constexpr long kHour = 3600;
constexpr long kDay = 24 * kHour;

// What one certificate is.
struct CertSpec {
  std::string common_name;
  // Offsets from now of notBefore and notAfter, in seconds.
  long not_before = -kHour;
  long not_after = kDay;
  bool ca = false;
  // subjectAltName and extendedKeyUsage values; "" for none.
  std::string alt_names{};
  std::string key_usage_ext{};
};

absl::StatusOr<KeyPtr> NewKey() {
  KeyPtr key(EVP_EC_gen("P-256"));
  if (key == nullptr) return OpenSslError("EVP_EC_gen(P-256)");
  return key;
}

absl::Status AddExtension(X509* cert, X509V3_CTX* ctx, int nid,
                          const std::string& value) {
  ExtensionPtr ext(X509V3_EXT_nconf_nid(nullptr, ctx, nid, value.c_str()));
  if (ext == nullptr || X509_add_ext(cert, ext.get(), -1) != 1) {
    return OpenSslError(
        absl::StrCat("certificate extension ", OBJ_nid2sn(nid), "=", value));
  }
  return absl::OkStatus();
}

// A certificate for `key` as `spec` says, signed by `issuer` with
// `issuer_key` (self-signed when `issuer` is null).
absl::StatusOr<CertPtr> NewCert(const CertSpec& spec, EVP_PKEY* key,
                                X509* issuer, EVP_PKEY* issuer_key) {
  const std::string what =
      absl::StrCat("certificate \"", spec.common_name, "\"");
  CertPtr cert(X509_new());
  if (cert == nullptr) return OpenSslError(what + ": X509_new");
  X509* x = cert.get();
  // A random positive 63-bit serial number (the top bit set: never 0).
  BignumPtr serial(BN_new());
  if (serial == nullptr ||
      BN_rand(serial.get(), 63, BN_RAND_TOP_ONE, BN_RAND_BOTTOM_ANY) != 1 ||
      BN_to_ASN1_INTEGER(serial.get(), X509_get_serialNumber(x)) == nullptr) {
    return OpenSslError(what + ": serial number");
  }
  X509_NAME* name = X509_get_subject_name(x);
  if (X509_set_version(x, X509_VERSION_3) != 1 ||
      X509_NAME_add_entry_by_txt(
          name, "O", MBSTRING_ASC,
          reinterpret_cast<const unsigned char*>("tokenlease tests"), -1, -1,
          0) != 1 ||
      X509_NAME_add_entry_by_txt(
          name, "CN", MBSTRING_ASC,
          reinterpret_cast<const unsigned char*>(spec.common_name.c_str()), -1,
          -1, 0) != 1 ||
      X509_set_issuer_name(
          x, issuer != nullptr ? X509_get_subject_name(issuer) : name) != 1 ||
      X509_gmtime_adj(X509_getm_notBefore(x), spec.not_before) == nullptr ||
      X509_gmtime_adj(X509_getm_notAfter(x), spec.not_after) == nullptr ||
      X509_set_pubkey(x, key) != 1) {
    return OpenSslError(what + ": name, validity or key");
  }
  X509V3_CTX ctx;
  X509V3_set_ctx(&ctx, issuer != nullptr ? issuer : x, x, nullptr, nullptr, 0);
  std::vector<std::pair<int, std::string>> extensions = {
      {NID_subject_key_identifier, "hash"}};
  if (spec.ca) {
    extensions.push_back({NID_basic_constraints, "critical,CA:TRUE"});
    extensions.push_back({NID_key_usage, "critical,keyCertSign,cRLSign"});
  } else {
    extensions.push_back({NID_authority_key_identifier, "keyid:always"});
    extensions.push_back({NID_basic_constraints, "critical,CA:FALSE"});
    extensions.push_back({NID_key_usage, "critical,digitalSignature"});
  }
  if (!spec.key_usage_ext.empty()) {
    extensions.push_back({NID_ext_key_usage, spec.key_usage_ext});
  }
  if (!spec.alt_names.empty()) {
    extensions.push_back({NID_subject_alt_name, spec.alt_names});
  }
  for (const auto& [nid, value] : extensions) {
    if (absl::Status s = AddExtension(x, &ctx, nid, value); !s.ok()) {
      return absl::Status(s.code(), absl::StrCat(what, ": ", s.message()));
    }
  }
  if (X509_sign(x, issuer_key != nullptr ? issuer_key : key, EVP_sha256()) ==
      0) {
    return OpenSslError(what + ": X509_sign");
  }
  return cert;
}

// Writes `data` to `path` with `mode` (also if the file existed with
// another).
absl::Status WriteFile(const std::string& path, absl::string_view data,
                       mode_t mode) {
  const int fd =
      open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) return absl::ErrnoToStatus(errno, absl::StrCat("open ", path));
  if (fchmod(fd, mode) != 0) {
    const int err = errno;
    close(fd);
    return absl::ErrnoToStatus(err, absl::StrCat("chmod ", path));
  }
  while (!data.empty()) {
    const ssize_t n = write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = errno;
      close(fd);
      return absl::ErrnoToStatus(err, absl::StrCat("write ", path));
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  if (close(fd) != 0) {
    return absl::ErrnoToStatus(errno, absl::StrCat("close ", path));
  }
  return absl::OkStatus();
}

// The PEM text `write` puts into a memory BIO.
template <typename Write>
absl::StatusOr<std::string> Pem(absl::string_view what, Write write) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (bio == nullptr || write(bio.get()) != 1) {
    return OpenSslError(absl::StrCat("PEM of ", what));
  }
  char* data = nullptr;
  const long len = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<size_t>(len));
}

absl::Status WriteCert(X509* cert, const std::string& path) {
  absl::StatusOr<std::string> pem =
      Pem(path, [cert](BIO* b) { return PEM_write_bio_X509(b, cert); });
  if (!pem.ok()) return pem.status();
  return WriteFile(path, *pem, 0644);
}

absl::Status WriteKey(EVP_PKEY* key, const std::string& path) {
  absl::StatusOr<std::string> pem = Pem(path, [key](BIO* b) {
    return PEM_write_bio_PrivateKey(b, key, nullptr, nullptr, 0, nullptr,
                                    nullptr);
  });
  if (!pem.ok()) return pem.status();
  return WriteFile(path, *pem, 0600);
}

// A key pair and its certificate.
struct Issued {
  KeyPtr key;
  CertPtr cert;
};

absl::StatusOr<Issued> Issue(const CertSpec& spec, const Issued* issuer) {
  absl::StatusOr<KeyPtr> key = NewKey();
  if (!key.ok()) return key.status();
  absl::StatusOr<CertPtr> cert = NewCert(
      spec, key->get(), issuer != nullptr ? issuer->cert.get() : nullptr,
      issuer != nullptr ? issuer->key.get() : nullptr);
  if (!cert.ok()) return cert.status();
  return Issued{*std::move(key), *std::move(cert)};
}

// Blocks SIGPIPE in this thread while it lives: a write to a connection the
// server closed (it refused our certificate) must fail with EPIPE, not end
// the process. A SIGPIPE raised meanwhile is consumed.
class ScopedNoSigpipe {
 public:
  ScopedNoSigpipe() {
    sigemptyset(&pipe_);
    sigaddset(&pipe_, SIGPIPE);
    sigset_t pending;
    sigpending(&pending);
    was_pending_ = sigismember(&pending, SIGPIPE) == 1;
    blocked_ = pthread_sigmask(SIG_BLOCK, &pipe_, &old_) == 0;
  }
  ~ScopedNoSigpipe() {
    if (!blocked_) return;
    if (!was_pending_) {
      const timespec zero{};
      while (sigtimedwait(&pipe_, nullptr, &zero) == SIGPIPE) {
      }
    }
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }
  ScopedNoSigpipe(const ScopedNoSigpipe&) = delete;
  ScopedNoSigpipe& operator=(const ScopedNoSigpipe&) = delete;

 private:
  sigset_t pipe_;
  sigset_t old_;
  bool was_pending_ = false;
  bool blocked_ = false;
};

// Sets the socket's send and receive timeouts to what is left until
// `deadline` (at least 1 ms).
void SetSocketTimeouts(int fd, absl::Time deadline) {
  const absl::Duration left =
      std::max(deadline - absl::Now(), absl::Milliseconds(1));
  const timeval tv = absl::ToTimeval(left);
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

// The status for an SSL call that returned `ret` <= 0 while doing `what`.
absl::Status SslFailure(SSL* ssl, int ret, absl::string_view what) {
  const int err = SSL_get_error(ssl, ret);
  const int saved_errno = errno;
  std::string reasons = OpenSslReasons();
  const long verify = SSL_get_verify_result(ssl);
  std::string verified;
  if (verify != X509_V_OK) {
    verified = absl::StrCat(" (certificate verification: ",
                            X509_verify_cert_error_string(verify), ")");
  }
  if ((err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE ||
       err == SSL_ERROR_SYSCALL) &&
      (saved_errno == EAGAIN || saved_errno == EWOULDBLOCK)) {
    return absl::DeadlineExceededError(
        absl::StrCat(what, ": timed out", verified));
  }
  if (err == SSL_ERROR_ZERO_RETURN ||
      (err == SSL_ERROR_SYSCALL && reasons == "(no OpenSSL error)")) {
    reasons = saved_errno != 0 && ret < 0
                  ? absl::StrCat("connection failed: ", strerror(saved_errno))
                  : "connection closed by the server";
  }
  return absl::UnavailableError(absl::StrCat(what, ": ", reasons, verified));
}

std::string Resp(const std::vector<std::string>& args) {
  std::string out = absl::StrCat("*", args.size(), "\r\n");
  for (const std::string& a : args) {
    absl::StrAppend(&out, "$", a.size(), "\r\n", a, "\r\n");
  }
  return out;
}

struct FreeReader {
  void operator()(redisReader* r) const { redisReaderFree(r); }
};

}  // namespace

absl::StatusOr<TlsFiles> MakeTlsFiles(const std::string& dir) {
  std::error_code ec;
  const bool existed = std::filesystem::is_directory(dir, ec);
  if (!existed) {
    std::filesystem::create_directories(dir, ec);
    if (ec) {
      return absl::ErrnoToStatus(ec.value(), absl::StrCat("mkdir ", dir));
    }
    std::filesystem::permissions(dir, std::filesystem::perms::owner_all,
                                 std::filesystem::perm_options::replace, ec);
  }
  ERR_clear_error();
  TlsFiles f;
  f.dir = dir;
  f.ca_file = dir + "/ca.crt";
  f.server_cert = dir + "/server.crt";
  f.server_key = dir + "/server.key";
  f.client_cert = dir + "/client.crt";
  f.client_key = dir + "/client.key";
  f.other_ca_file = dir + "/other-ca.crt";
  f.expired_server_cert = dir + "/expired-server.crt";
  f.expired_server_key = dir + "/expired-server.key";
  f.other_name_server_cert = dir + "/other-name-server.crt";
  f.other_name_server_key = dir + "/other-name-server.key";

  const std::string kServerNames = "IP:127.0.0.1,DNS:localhost";
  absl::StatusOr<Issued> ca =
      Issue({.common_name = "tokenlease test CA", .ca = true}, nullptr);
  if (!ca.ok()) return ca.status();
  absl::StatusOr<Issued> other_ca =
      Issue({.common_name = "tokenlease test other CA", .ca = true}, nullptr);
  if (!other_ca.ok()) return other_ca.status();
  absl::StatusOr<Issued> server =
      Issue({.common_name = "tokenlease test server",
             .alt_names = kServerNames,
             .key_usage_ext = "serverAuth"},
            &*ca);
  if (!server.ok()) return server.status();
  absl::StatusOr<Issued> client = Issue(
      {.common_name = "tokenlease test client", .key_usage_ext = "clientAuth"},
      &*ca);
  if (!client.ok()) return client.status();
  absl::StatusOr<Issued> expired =
      Issue({.common_name = "tokenlease test expired server",
             .not_before = -2 * kDay,
             .not_after = -kDay,
             .alt_names = kServerNames,
             .key_usage_ext = "serverAuth"},
            &*ca);
  if (!expired.ok()) return expired.status();
  absl::StatusOr<Issued> other_name = Issue({.common_name = "wrong.example",
                                             .alt_names = "DNS:wrong.example",
                                             .key_usage_ext = "serverAuth"},
                                            &*ca);
  if (!other_name.ok()) return other_name.status();

  struct Out {
    const Issued& issued;
    const std::string& cert;
    const std::string* key;
  };
  for (const Out& out :
       {Out{*ca, f.ca_file, nullptr}, Out{*other_ca, f.other_ca_file, nullptr},
        Out{*server, f.server_cert, &f.server_key},
        Out{*client, f.client_cert, &f.client_key},
        Out{*expired, f.expired_server_cert, &f.expired_server_key},
        Out{*other_name, f.other_name_server_cert, &f.other_name_server_key}}) {
    if (absl::Status s = WriteCert(out.issued.cert.get(), out.cert); !s.ok()) {
      return s;
    }
    if (out.key != nullptr) {
      if (absl::Status s = WriteKey(out.issued.key.get(), *out.key); !s.ok()) {
        return s;
      }
    }
  }
  return f;
}

absl::StatusOr<std::unique_ptr<TempTlsFiles>> TempTlsFiles::Make(
    const std::string& name) {
  const char* tmp = std::getenv("TMPDIR");
  std::string dir =
      absl::StrCat(tmp != nullptr && *tmp ? tmp : "/tmp", "/", name, ".XXXXXX");
  if (mkdtemp(dir.data()) == nullptr) {
    return absl::ErrnoToStatus(errno, absl::StrCat("mkdtemp ", dir));
  }
  absl::StatusOr<TlsFiles> files = MakeTlsFiles(dir);
  if (!files.ok()) {
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);
    return files.status();
  }
  return std::unique_ptr<TempTlsFiles>(new TempTlsFiles(*std::move(files)));
}

TempTlsFiles::~TempTlsFiles() {
  std::error_code ignored;
  std::filesystem::remove_all(files_.dir, ignored);
}

RedisTlsServerOptions TlsServerOptionsFor(const TlsFiles& files,
                                          bool require_client_cert) {
  return {.cert_file = files.server_cert,
          .key_file = files.server_key,
          .ca_file = files.ca_file,
          .require_client_cert = require_client_cert,
          .client_cert_file = files.client_cert,
          .client_key_file = files.client_key};
}

absl::StatusOr<std::vector<internal::RedisReply>> TlsCommands(
    int port, const std::vector<std::vector<std::string>>& commands,
    const TlsClientOptions& options) {
  if (commands.empty()) return absl::InvalidArgumentError("no command to send");
  for (const std::vector<std::string>& c : commands) {
    if (c.empty()) return absl::InvalidArgumentError("an empty command");
  }
  const std::string where = absl::StrCat("TLS to 127.0.0.1:", port);
  ScopedNoSigpipe no_sigpipe;
  ERR_clear_error();

  SslCtxPtr ctx(SSL_CTX_new(TLS_client_method()));
  if (ctx == nullptr ||
      SSL_CTX_set_min_proto_version(ctx.get(), TLS1_2_VERSION) != 1) {
    return OpenSslError(absl::StrCat(where, ": SSL_CTX_new"));
  }
  if (!options.ca_file.empty()) {
    if (SSL_CTX_load_verify_locations(ctx.get(), options.ca_file.c_str(),
                                      nullptr) != 1) {
      return OpenSslError(absl::StrCat(where, ": CA file ", options.ca_file));
    }
    SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_PEER, nullptr);
  }
  if (!options.cert_file.empty() &&
      (SSL_CTX_use_certificate_file(ctx.get(), options.cert_file.c_str(),
                                    SSL_FILETYPE_PEM) != 1 ||
       SSL_CTX_use_PrivateKey_file(ctx.get(), options.key_file.c_str(),
                                   SSL_FILETYPE_PEM) != 1 ||
       SSL_CTX_check_private_key(ctx.get()) != 1)) {
    return OpenSslError(absl::StrCat(where, ": client certificate ",
                                     options.cert_file, " with key ",
                                     options.key_file));
  }
  SslPtr ssl(SSL_new(ctx.get()));
  if (ssl == nullptr) return OpenSslError(absl::StrCat(where, ": SSL_new"));
  if (!options.ca_file.empty() && !options.host.empty()) {
    in6_addr ignored;
    const bool ip = inet_pton(AF_INET, options.host.c_str(), &ignored) == 1 ||
                    inet_pton(AF_INET6, options.host.c_str(), &ignored) == 1;
    const int set = ip ? X509_VERIFY_PARAM_set1_ip_asc(
                             SSL_get0_param(ssl.get()), options.host.c_str())
                       : SSL_set1_host(ssl.get(), options.host.c_str());
    if (set != 1) {
      return OpenSslError(
          absl::StrCat(where, ": the name to verify ", options.host));
    }
    if (!ip) SSL_set_tlsext_host_name(ssl.get(), options.host.c_str());
  }

  const absl::Time deadline = absl::Now() + options.timeout;
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::ErrnoToStatus(errno, "socket");
  struct CloseFd {
    int fd;
    ~CloseFd() { close(fd); }
  } close_fd{fd};
  SetSocketTimeouts(fd, deadline);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    const int err = errno;
    if (err == EINPROGRESS || err == EAGAIN) {
      return absl::DeadlineExceededError(
          absl::StrCat(where, ": connect timed out"));
    }
    return absl::UnavailableError(
        absl::StrCat(where, ": connect: ", strerror(err)));
  }
  if (SSL_set_fd(ssl.get(), fd) != 1) {
    return OpenSslError(absl::StrCat(where, ": SSL_set_fd"));
  }
  errno = 0;
  if (const int r = SSL_connect(ssl.get()); r != 1) {
    return SslFailure(ssl.get(), r, absl::StrCat(where, ": handshake"));
  }

  std::unique_ptr<redisReader, FreeReader> reader(redisReaderCreate());
  if (reader == nullptr) return absl::ResourceExhaustedError("redisReader");
  internal::LimitReplyArrays(reader.get());
  std::vector<internal::RedisReply> replies;
  for (const std::vector<std::string>& command : commands) {
    const std::string request = Resp(command);
    SetSocketTimeouts(fd, deadline);
    errno = 0;
    const int w =
        SSL_write(ssl.get(), request.data(), static_cast<int>(request.size()));
    if (w <= 0) {
      absl::Status failed = SslFailure(
          ssl.get(), w, absl::StrCat(where, ": sending ", command[0]));
      // A server that refused the client after the handshake (TLS 1.3:
      // its certificate, or its lack) sent an alert before it closed: its
      // reason says more than the write's broken pipe.
      char buf[256];
      SetSocketTimeouts(fd, absl::Now() + absl::Milliseconds(100));
      errno = 0;
      const int n = SSL_read(ssl.get(), buf, sizeof(buf));
      if (n <= 0 && SSL_get_error(ssl.get(), n) == SSL_ERROR_SSL) {
        return SslFailure(ssl.get(), n,
                          absl::StrCat(where, ": sending ", command[0]));
      }
      return failed;
    }
    const absl::Time reply_deadline = absl::Now() + options.timeout;
    void* reply = nullptr;
    while (reply == nullptr) {
      if (redisReaderGetReply(reader.get(), &reply) != REDIS_OK) {
        return absl::UnavailableError(absl::StrCat(
            where, ": unreadable reply to ", command[0], ": ", reader->errstr));
      }
      if (reply != nullptr) break;
      char buf[16384];
      SetSocketTimeouts(fd, reply_deadline);
      errno = 0;
      const int n = SSL_read(ssl.get(), buf, sizeof(buf));
      if (n <= 0) {
        return SslFailure(ssl.get(), n,
                          absl::StrCat(where, ": the reply to ", command[0]));
      }
      redisReaderFeed(reader.get(), buf, static_cast<size_t>(n));
    }
    replies.push_back(internal::CopyReply(reply));
    freeReplyObject(reply);
  }
  SSL_shutdown(ssl.get());
  ERR_clear_error();
  return replies;
}

absl::StatusOr<std::string> TlsPing(int port, const TlsFiles& files,
                                    bool with_client_cert) {
  TlsClientOptions options{.ca_file = files.ca_file};
  if (with_client_cert) {
    options.cert_file = files.client_cert;
    options.key_file = files.client_key;
  }
  absl::StatusOr<std::vector<internal::RedisReply>> replies =
      TlsCommands(port, {{"PING"}}, options);
  if (!replies.ok()) return replies.status();
  return replies->front().str;
}

}  // namespace tokenlease::support
