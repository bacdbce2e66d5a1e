// Listen-address parsing, loopback classification and unix socket preparation.
#include "common/grpc_address.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/common/grpc_test_support.h"

namespace {

using ::roboloop::common::ListenAddress;
using ::roboloop::common::ParseListenAddress;
using ::roboloop::common::PrepareUnixSocketPath;
using ::testing::HasSubstr;

ListenAddress Parse(const std::string& text) {
  auto parsed = ParseListenAddress(text);
  EXPECT_TRUE(parsed.ok()) << text << ": " << parsed.status();
  return parsed.ok() ? *parsed : ListenAddress();
}

TEST(ListenAddressTest, ParsesTcpForms) {
  const ListenAddress v4 = Parse("127.0.0.1:50051");
  EXPECT_EQ(v4.kind, ListenAddress::Kind::kTcp);
  EXPECT_EQ(v4.host, "127.0.0.1");
  EXPECT_EQ(v4.port, 50051);
  EXPECT_EQ(v4.ToGrpcAddress(), "127.0.0.1:50051");
  const ListenAddress v6 = Parse("[::1]:0");
  EXPECT_EQ(v6.host, "::1");
  EXPECT_EQ(v6.ToGrpcAddress(), "[::1]:0");
  EXPECT_EQ(Parse(":80").host, "");
}

TEST(ListenAddressTest, ParsesUnixForms) {
  EXPECT_EQ(Parse("unix:/run/r.sock").socket_path, "/run/r.sock");
  EXPECT_EQ(Parse("unix:///run/r.sock").socket_path, "/run/r.sock");
  const ListenAddress relative = Parse("unix:.roboloop/registry.sock");
  EXPECT_EQ(relative.kind, ListenAddress::Kind::kUnix);
  EXPECT_EQ(relative.socket_path, ".roboloop/registry.sock");
  EXPECT_EQ(relative.ToGrpcAddress(), "unix:.roboloop/registry.sock");
}

TEST(ListenAddressTest, ClassifiesLoopback) {
  for (const char* address : {"127.0.0.1:1", "127.9.8.7:1", "localhost:1", "LocalHost:1",
                              "[::1]:1", "unix:/tmp/x.sock", "unix:x.sock"}) {
    EXPECT_TRUE(Parse(address).IsLoopback()) << address;
  }
  for (const char* address : {"0.0.0.0:1", ":1", "[::]:1", "10.0.0.1:1", "128.0.0.1:1",
                              "example.com:1", "[::ffff:127.0.0.1]:1"}) {
    EXPECT_FALSE(Parse(address).IsLoopback()) << address;
  }
}

TEST(ListenAddressTest, RejectsMalformedAddressesNamingThem) {
  for (const char* address : {"", "nohost", "host:", "host:port", "host:70000", "::1:5",
                              "[::1]5", "unix:"}) {
    auto parsed = ParseListenAddress(address);
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument) << address;
    EXPECT_THAT(parsed.status().message(), HasSubstr(std::string("'") + address + "'"));
  }
  EXPECT_FALSE(ParseListenAddress("unix:/" + std::string(200, 'a')).ok());
}

TEST(PrepareUnixSocketPathTest, CreatesParentsAndKeepsOtherFiles) {
  roboloop_test::TempDir dir;
  EXPECT_TRUE(PrepareUnixSocketPath(dir.File("x/y/s.sock")).ok());
  EXPECT_TRUE(std::filesystem::is_directory(dir.File("x/y")));
  roboloop_test::WriteFile(dir.File("file"), "keep me");
  EXPECT_EQ(PrepareUnixSocketPath(dir.File("file")).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(std::filesystem::exists(dir.File("file")));
}

TEST(PrepareUnixSocketPathTest, RemovesStaleSocketButNotListeningOne) {
  roboloop_test::TempDir dir;
  const std::string path = dir.File("s.sock");
  const int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(listen(fd, 1), 0);
  absl::Status live = PrepareUnixSocketPath(path);
  EXPECT_EQ(live.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(live.message(), HasSubstr("in use"));
  close(fd);
  EXPECT_TRUE(PrepareUnixSocketPath(path).ok());
  EXPECT_FALSE(std::filesystem::exists(path));
}

}  // namespace
