#include "common/grpc_tls.h"

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <cerrno>
#include <fstream>
#include <memory>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "common/status.h"

namespace roboloop::common {
namespace {

struct BioFree {
  void operator()(BIO* bio) const { BIO_free(bio); }
};
struct X509Free {
  void operator()(X509* cert) const { X509_free(cert); }
};
struct PkeyFree {
  void operator()(EVP_PKEY* key) const { EVP_PKEY_free(key); }
};
using BioPtr = std::unique_ptr<BIO, BioFree>;

// Passphrase callback that supplies none, so OpenSSL never prompts on the terminal.
int NoPassphrase(char* /*buf*/, int /*size*/, int /*rwflag*/, void* /*user*/) { return 0; }

absl::StatusOr<std::string> ReadWholeFile(const std::string& path, const std::string& role) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return ErrnoStatus(errno, absl::StrCat(role, " '", path, "'"));
  std::ostringstream content;
  content << in.rdbuf();
  return content.str();
}

BioPtr MemoryBio(const std::string& pem) {
  return BioPtr(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
}

absl::StatusOr<std::unique_ptr<X509, X509Free>> ParseFirstCertificate(const std::string& pem,
                                                                       const std::string& path,
                                                                       const std::string& role) {
  BioPtr bio = MemoryBio(pem);
  std::unique_ptr<X509, X509Free> cert(PEM_read_bio_X509(bio.get(), nullptr, NoPassphrase, nullptr));
  if (cert == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat(role, " '", path, "' holds no PEM certificate"));
  }
  return cert;
}

}  // namespace

absl::StatusOr<TlsKeyPair> ReadTlsKeyPair(const std::string& cert_file,
                                          const std::string& key_file) {
  TlsKeyPair pair;
  ROBOLOOP_ASSIGN_OR_RETURN(pair.cert_chain_pem, ReadWholeFile(cert_file, "TLS certificate"));
  ROBOLOOP_ASSIGN_OR_RETURN(pair.private_key_pem, ReadWholeFile(key_file, "TLS key"));
  ROBOLOOP_ASSIGN_OR_RETURN(auto cert,
                            ParseFirstCertificate(pair.cert_chain_pem, cert_file,
                                                  "TLS certificate"));
  BioPtr key_bio = MemoryBio(pair.private_key_pem);
  std::unique_ptr<EVP_PKEY, PkeyFree> key(
      PEM_read_bio_PrivateKey(key_bio.get(), nullptr, NoPassphrase, nullptr));
  if (key == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("TLS key '", key_file, "' holds no unencrypted PEM private key"));
  }
  if (X509_check_private_key(cert.get(), key.get()) != 1) {
    return absl::InvalidArgumentError(absl::StrCat("TLS key '", key_file,
                                                   "' does not match certificate '", cert_file,
                                                   "'"));
  }
  return pair;
}

absl::StatusOr<std::string> ReadPemCertificates(const std::string& file) {
  ROBOLOOP_ASSIGN_OR_RETURN(std::string pem, ReadWholeFile(file, "TLS root certificate"));
  ROBOLOOP_RETURN_IF_ERROR(ParseFirstCertificate(pem, file, "TLS root certificate").status());
  return pem;
}

}  // namespace roboloop::common
