// The test certificates (tls_certs.h), checked with OpenSSL's own chain
// verification, and the raw TLS client against a redis-server's TLS port.
#include "support/tls_certs.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "support/redis_server.h"

namespace tokenlease::support {
namespace {

using ::testing::HasSubstr;

struct FreeOpenSsl {
  void operator()(X509* p) const { X509_free(p); }
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
  void operator()(X509_STORE* p) const { X509_STORE_free(p); }
  void operator()(X509_STORE_CTX* p) const { X509_STORE_CTX_free(p); }
};
using CertPtr = std::unique_ptr<X509, FreeOpenSsl>;

CertPtr ReadCert(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "r");
  if (f == nullptr) return nullptr;
  CertPtr cert(PEM_read_X509(f, nullptr, nullptr, nullptr));
  std::fclose(f);
  return cert;
}

std::unique_ptr<EVP_PKEY, FreeOpenSsl> ReadKey(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "r");
  if (f == nullptr) return nullptr;
  std::unique_ptr<EVP_PKEY, FreeOpenSsl> key(
      PEM_read_PrivateKey(f, nullptr, nullptr, nullptr));
  std::fclose(f);
  return key;
}

// The result of verifying `cert_file` against `ca_file` (X509_V_OK or the
// error), for `purpose` (0: none) and, unless empty, the host name or IP
// `host`.
int Verify(const std::string& cert_file, const std::string& ca_file,
           int purpose = 0, const std::string& host = "") {
  CertPtr cert = ReadCert(cert_file);
  if (cert == nullptr) return -1;
  std::unique_ptr<X509_STORE, FreeOpenSsl> store(X509_STORE_new());
  if (X509_STORE_load_file(store.get(), ca_file.c_str()) != 1) return -2;
  std::unique_ptr<X509_STORE_CTX, FreeOpenSsl> ctx(X509_STORE_CTX_new());
  if (X509_STORE_CTX_init(ctx.get(), store.get(), cert.get(), nullptr) != 1) {
    return -3;
  }
  if (purpose != 0) X509_STORE_CTX_set_purpose(ctx.get(), purpose);
  X509_VERIFY_PARAM* param = X509_STORE_CTX_get0_param(ctx.get());
  if (host == "127.0.0.1") {
    X509_VERIFY_PARAM_set1_ip_asc(param, host.c_str());
  } else if (!host.empty()) {
    X509_VERIFY_PARAM_set1_host(param, host.c_str(), 0);
  }
  const int ok = X509_verify_cert(ctx.get());
  const int err = X509_STORE_CTX_get_error(ctx.get());
  ERR_clear_error();
  return ok == 1 ? X509_V_OK : err;
}

std::filesystem::perms Mode(const std::string& path) {
  return std::filesystem::status(path).permissions() &
         std::filesystem::perms::mask;
}

TEST(TlsCertsTest, MakeTlsFilesWritesCertificatesThatVerify) {
  const absl::Time start = absl::Now();
  absl::StatusOr<std::unique_ptr<TempTlsFiles>> temp = TempTlsFiles::Make();
  const absl::Duration took = absl::Now() - start;
  ASSERT_TRUE(temp.ok()) << temp.status();
  std::printf(
      "[ timing   ] MakeTlsFiles: %s\n",
      absl::FormatDuration(absl::Trunc(took, absl::Microseconds(1))).c_str());
  // A few ms; generous for a busy machine or a sanitizer build.
  EXPECT_LT(took, absl::Seconds(2));
  const TlsFiles& f = (*temp)->files();
  EXPECT_TRUE(std::filesystem::is_directory(f.dir));
  for (const std::string* key :
       {&f.server_key, &f.client_key, &f.expired_server_key,
        &f.other_name_server_key}) {
    EXPECT_EQ(Mode(*key), std::filesystem::perms::owner_read |
                              std::filesystem::perms::owner_write)
        << *key;
  }

  // The CA: self-signed, a CA, v3, ECDSA with SHA-256 on P-256.
  CertPtr ca = ReadCert(f.ca_file);
  ASSERT_NE(ca, nullptr);
  EXPECT_EQ(X509_check_ca(ca.get()), 1);
  EXPECT_EQ(X509_get_version(ca.get()), X509_VERSION_3);
  EXPECT_EQ(X509_get_signature_nid(ca.get()), NID_ecdsa_with_SHA256);
  EXPECT_EQ(Verify(f.ca_file, f.ca_file), X509_V_OK);

  // Each key matches its certificate.
  for (const auto& [cert_file, key_file] :
       {std::pair{f.server_cert, f.server_key},
        std::pair{f.client_cert, f.client_key},
        std::pair{f.expired_server_cert, f.expired_server_key},
        std::pair{f.other_name_server_cert, f.other_name_server_key}}) {
    CertPtr cert = ReadCert(cert_file);
    auto key = ReadKey(key_file);
    ASSERT_NE(cert, nullptr) << cert_file;
    ASSERT_NE(key, nullptr) << key_file;
    EXPECT_EQ(X509_check_private_key(cert.get(), key.get()), 1) << cert_file;
    EXPECT_EQ(X509_check_ca(cert.get()), 0) << cert_file;
    EXPECT_EQ(EVP_PKEY_get_bits(key.get()), 256) << key_file;
  }

  // The server's: for 127.0.0.1 and localhost, as a server only.
  EXPECT_EQ(Verify(f.server_cert, f.ca_file), X509_V_OK);
  EXPECT_EQ(
      Verify(f.server_cert, f.ca_file, X509_PURPOSE_SSL_SERVER, "127.0.0.1"),
      X509_V_OK);
  EXPECT_EQ(
      Verify(f.server_cert, f.ca_file, X509_PURPOSE_SSL_SERVER, "localhost"),
      X509_V_OK);
  EXPECT_EQ(Verify(f.server_cert, f.ca_file, X509_PURPOSE_SSL_CLIENT),
            X509_V_ERR_INVALID_PURPOSE);
  // The client's: as a client only.
  EXPECT_EQ(Verify(f.client_cert, f.ca_file, X509_PURPOSE_SSL_CLIENT),
            X509_V_OK);
  EXPECT_EQ(Verify(f.client_cert, f.ca_file, X509_PURPOSE_SSL_SERVER),
            X509_V_ERR_INVALID_PURPOSE);
  // The bad ones.
  EXPECT_EQ(Verify(f.server_cert, f.other_ca_file),
            X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY);
  EXPECT_EQ(Verify(f.other_ca_file, f.other_ca_file), X509_V_OK);
  EXPECT_EQ(Verify(f.expired_server_cert, f.ca_file),
            X509_V_ERR_CERT_HAS_EXPIRED);
  EXPECT_EQ(Verify(f.other_name_server_cert, f.ca_file), X509_V_OK);
  EXPECT_EQ(Verify(f.other_name_server_cert, f.ca_file, X509_PURPOSE_SSL_SERVER,
                   "wrong.example"),
            X509_V_OK);
  EXPECT_EQ(Verify(f.other_name_server_cert, f.ca_file, X509_PURPOSE_SSL_SERVER,
                   "localhost"),
            X509_V_ERR_HOSTNAME_MISMATCH);
  EXPECT_EQ(Verify(f.other_name_server_cert, f.ca_file, X509_PURPOSE_SSL_SERVER,
                   "127.0.0.1"),
            X509_V_ERR_IP_ADDRESS_MISMATCH);

  const std::string dir = f.dir;
  temp->reset();
  EXPECT_FALSE(std::filesystem::exists(dir));
}

TEST(TlsCertsTest, MakeTlsFilesCreatesTheDirectoryAndSaysWhatFailed) {
  absl::StatusOr<std::unique_ptr<TempTlsFiles>> temp = TempTlsFiles::Make();
  ASSERT_TRUE(temp.ok()) << temp.status();
  const std::string nested = (*temp)->files().dir + "/a/b";
  absl::StatusOr<TlsFiles> files = MakeTlsFiles(nested);
  ASSERT_TRUE(files.ok()) << files.status();
  EXPECT_EQ(files->dir, nested);
  EXPECT_EQ(files->ca_file, nested + "/ca.crt");
  EXPECT_EQ(Mode(nested), std::filesystem::perms::owner_all);
  EXPECT_EQ(Verify(files->server_cert, files->ca_file), X509_V_OK);
  // New keys each time: the first set's CA did not sign the second's.
  EXPECT_EQ(Verify(files->server_cert, (*temp)->files().ca_file),
            X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY);
  // Again into the same directory: replaced.
  files = MakeTlsFiles(nested);
  ASSERT_TRUE(files.ok()) << files.status();
  EXPECT_EQ(Verify(files->client_cert, files->ca_file), X509_V_OK);

  absl::StatusOr<TlsFiles> bad = MakeTlsFiles("/proc/tokenlease-no-such-dir");
  EXPECT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()),
              HasSubstr("/proc/tokenlease-no-such-dir"));
}

TEST(TlsCertsTest, TlsCommandsFailsWithoutAServer) {
  absl::StatusOr<std::unique_ptr<TempTlsFiles>> temp = TempTlsFiles::Make();
  ASSERT_TRUE(temp.ok()) << temp.status();
  // Port 1: nothing listens there (and we may not).
  absl::StatusOr<std::string> pong = TlsPing(1, (*temp)->files(), false);
  EXPECT_EQ(pong.status().code(), absl::StatusCode::kUnavailable)
      << pong.status();
  EXPECT_EQ(TlsCommands(1, {}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(TlsCommands(1, {{}}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// A TLS server, and what the raw client sees of each certificate.
TEST(TlsCertsTest, TlsClientAgainstServersWithEachCertificate) {
  absl::StatusOr<std::unique_ptr<TempTlsFiles>> temp = TempTlsFiles::Make();
  ASSERT_TRUE(temp.ok()) << temp.status();
  const TlsFiles& f = (*temp)->files();
  auto good = StartRedisServer({.tls = TlsServerOptionsFor(f)});
  ASSERT_TRUE(good.ok()) << good.status();
  const int port = (*good)->tls_port();
  EXPECT_EQ(*TlsPing(port, f, false), "PONG");
  EXPECT_EQ(*TlsPing(port, f, true), "PONG");
  // Several commands on one connection.
  absl::StatusOr<std::vector<internal::RedisReply>> replies = TlsCommands(
      port, {{"SET", "k", std::string("v\0\r\n", 4)}, {"GET", "k"}, {"NOPE"}},
      {.ca_file = f.ca_file});
  ASSERT_TRUE(replies.ok()) << replies.status();
  ASSERT_EQ(replies->size(), 3u);
  EXPECT_EQ((*replies)[0].str, "OK");
  EXPECT_EQ((*replies)[1].str, std::string("v\0\r\n", 4));
  EXPECT_TRUE((*replies)[2].is_error());
  // Verified for localhost too; refused for another name, and against
  // another CA.
  EXPECT_TRUE(
      TlsCommands(port, {{"PING"}}, {.ca_file = f.ca_file, .host = "localhost"})
          .ok());
  absl::StatusOr<std::vector<internal::RedisReply>> wrong = TlsCommands(
      port, {{"PING"}}, {.ca_file = f.ca_file, .host = "wrong.example"});
  EXPECT_EQ(wrong.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(wrong.status().message()),
              HasSubstr("certificate verif"));
  // (The server sends its CA along: OpenSSL says "self-signed certificate
  // in certificate chain".)
  wrong = TlsCommands(port, {{"PING"}}, {.ca_file = f.other_ca_file});
  EXPECT_EQ(wrong.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(wrong.status().message()),
              HasSubstr("certificate verify failed"));
  // Without verification, anything goes.
  EXPECT_TRUE(TlsCommands(port, {{"PING"}}, {}).ok());

  // A server with the expired certificate: refused, as expired.
  RedisTlsServerOptions expired_tls = TlsServerOptionsFor(f);
  expired_tls.cert_file = f.expired_server_cert;
  expired_tls.key_file = f.expired_server_key;
  auto expired = StartRedisServer({.tls = expired_tls});
  ASSERT_TRUE(expired.ok()) << expired.status();
  absl::StatusOr<std::string> pong = TlsPing((*expired)->tls_port(), f, false);
  EXPECT_EQ(pong.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(pong.status().message()),
              HasSubstr("certificate has expired"));

  // A server with the certificate for another name: refused for
  // 127.0.0.1, accepted for its name.
  RedisTlsServerOptions other_tls = TlsServerOptionsFor(f);
  other_tls.cert_file = f.other_name_server_cert;
  other_tls.key_file = f.other_name_server_key;
  auto other = StartRedisServer({.tls = other_tls});
  ASSERT_TRUE(other.ok()) << other.status();
  pong = TlsPing((*other)->tls_port(), f, false);
  EXPECT_EQ(pong.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(pong.status().message()),
              HasSubstr("IP address mismatch"));
  EXPECT_TRUE(TlsCommands((*other)->tls_port(), {{"PING"}},
                          {.ca_file = f.ca_file, .host = "wrong.example"})
                  .ok());
}

}  // namespace
}  // namespace tokenlease::support
