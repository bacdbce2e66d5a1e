// Reading and checking the PEM files behind the gRPC servers' and clients' TLS settings, so a
// bad file is reported by name before gRPC sees it.
#pragma once

#include <string>

#include "absl/status/statusor.h"

namespace roboloop::common {

// A server certificate chain and its private key, as PEM text.
struct TlsKeyPair {
  std::string cert_chain_pem;  // leaf certificate first
  std::string private_key_pem;  // key matching the leaf certificate
};

// Reads `cert_file` and `key_file`; errors name the file that is unreadable or not PEM, or
// say that the key does not match the certificate.
absl::StatusOr<TlsKeyPair> ReadTlsKeyPair(const std::string& cert_file,
                                          const std::string& key_file);

// Reads PEM certificates (trust roots) from `file`; errors name the file.
absl::StatusOr<std::string> ReadPemCertificates(const std::string& file);

}  // namespace roboloop::common
