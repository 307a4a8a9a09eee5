#include "net/tls_files.h"

#include <openssl/asn1.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <memory>

#include "common/error.h"
#include "common/file_util.h"

namespace est::net {
namespace {

using Bio = std::unique_ptr<BIO, decltype(&BIO_free)>;
using Certificate = std::unique_ptr<X509, decltype(&X509_free)>;
using PrivateKey = std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)>;

std::string ReadPemFile(const std::string& path, const char* what) {
  try {
    return ReadFile(path);
  } catch (const IoError& error) {
    EST_THROW(ConfigError, "store TLS: cannot read the ", what, " '", path, "': ", error.what());
  }
}

Bio MemoryBio(const std::string& bytes) {
  Bio bio(BIO_new_mem_buf(bytes.data(), static_cast<int>(bytes.size())), &BIO_free);
  EST_ASSERT(bio != nullptr, "BIO_new_mem_buf failed");
  return bio;
}

// The next certificate of `bio`, or none at its end (OpenSSL's end-of-PEM error cleared).
Certificate NextCertificate(BIO* bio) {
  Certificate certificate(PEM_read_bio_X509(bio, nullptr, nullptr, nullptr), &X509_free);
  ERR_clear_error();
  return certificate;
}

// "Nov 29 00:00:00 2026 GMT": a certificate time as OpenSSL prints it.
std::string TimeText(const ASN1_TIME* time) {
  Bio out(BIO_new(BIO_s_mem()), &BIO_free);
  ASN1_TIME_print(out.get(), time);
  char* data = nullptr;
  const long length = BIO_get_mem_data(out.get(), &data);
  return std::string(data, static_cast<size_t>(length));
}

void CheckValidNow(const X509& certificate, const std::string& path, const char* what) {
  EST_CHECK(X509_cmp_current_time(X509_get0_notAfter(&certificate)) > 0, ConfigError, "store TLS: the ", what,
            " '", path, "' expired on ", TimeText(X509_get0_notAfter(&certificate)), ": renew it");
  EST_CHECK(X509_cmp_current_time(X509_get0_notBefore(&certificate)) < 0, ConfigError, "store TLS: the ", what,
            " '", path, "' is not valid before ", TimeText(X509_get0_notBefore(&certificate)),
            " (is this machine's clock right?)");
}

}  // namespace

void CheckCertificateFile(const std::string& path, const char* what) {
  const std::string pem = ReadPemFile(path, what);
  Bio bio = MemoryBio(pem);
  int count = 0;
  while (Certificate certificate = NextCertificate(bio.get())) {
    CheckValidNow(*certificate, path, what);
    ++count;
  }
  EST_CHECK(count > 0, ConfigError, "store TLS: the ", what, " '", path,
            "' holds no PEM certificate (expected \"-----BEGIN CERTIFICATE-----\" blocks)");
}

void CheckKeyOfCertificate(const std::string& key_path, const std::string& cert_path) {
  const std::string key_pem = ReadPemFile(key_path, "private key");
  Bio key_bio = MemoryBio(key_pem);
  PrivateKey key(PEM_read_bio_PrivateKey(key_bio.get(), nullptr, nullptr, nullptr), &EVP_PKEY_free);
  ERR_clear_error();
  EST_CHECK(key != nullptr, ConfigError, "store TLS: the private key '", key_path,
            "' holds no unencrypted PEM private key (expected a \"-----BEGIN PRIVATE KEY-----\" block)");
  const std::string cert_pem = ReadPemFile(cert_path, "certificate");
  Bio cert_bio = MemoryBio(cert_pem);
  const Certificate certificate = NextCertificate(cert_bio.get());
  EST_ASSERT(certificate != nullptr, "CheckCertificateFile runs first");
  const bool matches = X509_check_private_key(certificate.get(), key.get()) == 1;
  ERR_clear_error();
  EST_CHECK(matches, ConfigError, "store TLS: the private key '", key_path, "' is not the key of the certificate '",
            cert_path, "': give the key the certificate was issued for");
}

}  // namespace est::net
