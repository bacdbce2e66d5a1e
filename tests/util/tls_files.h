// Test helper: a self-signed certificate for localhost / 127.0.0.1, made at test time with
// the openssl command.
#pragma once

#include <string>

namespace roboloop::testing {

// PEM files written by MakeSelfSignedCert.
struct TlsFiles {
  std::string cert;  // certificate (also the trust root for clients)
  std::string key;   // private key
};

// Writes a fresh RSA-2048 self-signed certificate valid for DNS:localhost and IP:127.0.0.1
// into `dir` as <stem>.pem and <stem>.key. Fails the current test if openssl fails.
TlsFiles MakeSelfSignedCert(const std::string& dir, const std::string& stem = "cert");

// Writes a fresh RSA-2048 client certificate for CN=`common_name` signed by `ca` (a
// certificate MakeSelfSignedCert made) into `dir` as <stem>.pem and <stem>.key. Fails the
// current test if openssl fails.
TlsFiles MakeClientCertSignedBy(const TlsFiles& ca, const std::string& dir, const std::string& stem,
                                const std::string& common_name);

}  // namespace roboloop::testing
