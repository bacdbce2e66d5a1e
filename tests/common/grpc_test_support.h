// Shared pieces of the gRPC builder tests: a real Echo service (tests/../proto/roboloop/testing),
// temporary directories, files, and self-signed certificates made with the openssl CLI.
#pragma once

#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "common/grpc_auth.h"
#include "gtest/gtest.h"
#include "roboloop/testing/echo.grpc.pb.h"

namespace roboloop_test {

// A temporary directory removed (with its content) at destruction.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "roboloop_rpc_XXXXXX").string();
    path_ = mkdtemp(pattern.data());
    EXPECT_FALSE(path_.empty());
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  // Returns `name` inside the directory.
  std::string File(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

// Writes `content` to `path`.
inline void WriteFile(const std::string& path, const std::string& content) {
  std::ofstream out(path, std::ios::binary);
  out << content;
  ASSERT_TRUE(out.good()) << path;
}

// A self-signed EC certificate for CN=localhost (SANs localhost and 127.0.0.1).
struct TestCertificate {
  std::string cert_file;
  std::string key_file;
};

// Creates a fresh self-signed certificate in `dir` under file names starting with `stem`.
inline TestCertificate MakeSelfSignedCertificate(const TempDir& dir, const std::string& stem) {
  TestCertificate cert{dir.File(stem + ".crt"), dir.File(stem + ".key")};
  const std::string command =
      "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 "
      "-subj /CN=localhost -addext subjectAltName=DNS:localhost,IP:127.0.0.1 -keyout '" +
      cert.key_file + "' -out '" + cert.cert_file + "' >/dev/null 2>&1";
  EXPECT_EQ(std::system(command.c_str()), 0) << command;
  return cert;
}

// Waits `ms` milliseconds unless the call is cancelled first; returns true if the wait ran out.
inline bool SleepUnlessCancelled(grpc::ServerContext* context, int ms) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  while (std::chrono::steady_clock::now() < end) {
    if (context->IsCancelled()) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

// The test service. Counts handler bodies that passed the auth check and calls that noticed
// their cancellation.
class EchoService final : public roboloop::testing::Echo::Service {
 public:
  grpc::Status Say(grpc::ServerContext* context, const roboloop::testing::EchoRequest* request,
                   roboloop::testing::EchoReply* reply) override {
    grpc::Status auth = roboloop::common::CheckCallAuthenticated(*context);
    if (!auth.ok()) {
      ++refused;
      return auth;
    }
    ++executed;
    if (!SleepUnlessCancelled(context, request->sleep_ms())) {
      ++noticed_cancel;
      return grpc::Status::CANCELLED;
    }
    reply->set_text(request->text());
    return grpc::Status::OK;
  }

  grpc::Status Count(grpc::ServerContext* context, const roboloop::testing::CountRequest* request,
                     grpc::ServerWriter<roboloop::testing::CountReply>* writer) override {
    grpc::Status auth = roboloop::common::CheckCallAuthenticated(*context);
    if (!auth.ok()) {
      ++refused;
      return auth;
    }
    ++executed;
    for (int i = 0; i < request->count(); ++i) {
      if (!SleepUnlessCancelled(context, request->sleep_ms())) {
        ++noticed_cancel;
        return grpc::Status::CANCELLED;
      }
      roboloop::testing::CountReply reply;
      reply.set_index(i);
      if (!writer->Write(reply)) return grpc::Status::CANCELLED;
    }
    return grpc::Status::OK;
  }

  // Waits up to 5 s for `refused` to reach `count` (a refused handler may still be running
  // after its client has seen UNAUTHENTICATED); returns whether it did.
  bool WaitForRefused(int count) const {
    for (int i = 0; i < 1000 && refused < count; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return refused >= count;
  }

  std::atomic<int> refused{0};
  std::atomic<int> executed{0};
  std::atomic<int> noticed_cancel{0};
};

}  // namespace roboloop_test
