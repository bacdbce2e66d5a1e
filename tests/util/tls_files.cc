#include "tests/util/tls_files.h"

#include <gtest/gtest.h>

#include "tests/util/subprocess.h"

namespace roboloop::testing {

TlsFiles MakeSelfSignedCert(const std::string& dir, const std::string& stem) {
  TlsFiles files{dir + "/" + stem + ".pem", dir + "/" + stem + ".key"};
  ProgramResult r = RunProgram({"/usr/bin/openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes",
                                "-keyout", files.key, "-out", files.cert, "-days", "2", "-subj",
                                "/CN=localhost", "-addext",
                                "subjectAltName=DNS:localhost,IP:127.0.0.1"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return files;
}

}  // namespace roboloop::testing
