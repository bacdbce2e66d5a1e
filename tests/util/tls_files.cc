#include "tests/util/tls_files.h"

#include <gtest/gtest.h>

#include <fstream>

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

TlsFiles MakeClientCertSignedBy(const TlsFiles& ca, const std::string& dir, const std::string& stem,
                                const std::string& common_name) {
  TlsFiles files{dir + "/" + stem + ".pem", dir + "/" + stem + ".key"};
  const std::string request = dir + "/" + stem + ".csr";
  const std::string extensions = dir + "/" + stem + ".ext";
  std::ofstream(extensions) << "extendedKeyUsage=clientAuth\n";
  ProgramResult r = RunProgram({"/usr/bin/openssl", "req", "-newkey", "rsa:2048", "-nodes", "-keyout", files.key,
                                "-out", request, "-subj", "/CN=" + common_name});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  r = RunProgram({"/usr/bin/openssl", "x509", "-req", "-in", request, "-CA", ca.cert, "-CAkey", ca.key,
                  "-CAcreateserial", "-out", files.cert, "-days", "2", "-extfile", extensions});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return files;
}

}  // namespace roboloop::testing
