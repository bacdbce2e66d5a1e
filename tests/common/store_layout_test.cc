// The store layout's paths of embedded sockets and the removal of those left by dead processes.
#include "common/store_layout.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>

#include "absl/strings/str_cat.h"
#include "common/fs.h"
#include "tests/util/subprocess.h"

namespace roboloop {
namespace {

TEST(StoreLayout, EmbeddedSocketsAreNamedAfterTheirProcess) {
  const StoreLayout layout("/r");
  EXPECT_EQ(layout.EmbeddedSocket("registry"), absl::StrCat("unix:/r/run/registry-", getpid(), ".sock"));
}

TEST(StoreLayout, EmbeddedAddressesAreUnixSocketsUnderTheRootsSocketFolder) {
  const StoreLayout layout("/r");
  EXPECT_TRUE(layout.IsEmbeddedAddress(layout.EmbeddedSocket("registry")));
  EXPECT_TRUE(layout.IsEmbeddedAddress("unix:/r/run/registry-7.sock")) << "another process's";
  EXPECT_FALSE(layout.IsEmbeddedAddress("unix:/other/run/registry-7.sock"));
  EXPECT_FALSE(layout.IsEmbeddedAddress("unix:/r/registry.sock"));
  EXPECT_FALSE(layout.IsEmbeddedAddress("127.0.0.1:7000"));
  EXPECT_FALSE(layout.IsEmbeddedAddress("/r/run/registry-7.sock")) << "not an address";
}

TEST(StoreLayout, RemoveStaleSocketsRemovesOnlyThoseOfGoneProcesses) {
  const StoreLayout layout(testing::MakeTempDir("layout"));
  ASSERT_TRUE(MakeDirs(layout.Sockets()).ok());
  const pid_t child = fork();
  if (child == 0) _exit(0);
  int status = 0;
  waitpid(child, &status, 0);
  const std::string dead = JoinPath(layout.Sockets(), absl::StrCat("services-", child, ".sock"));
  const std::string live = layout.EmbeddedSocket("registry").substr(5);
  const std::string other = JoinPath(layout.Sockets(), "notes.txt");
  for (const std::string& path : {dead, live, other}) std::ofstream(path) << "x";
  EXPECT_EQ(layout.RemoveStaleSockets(), 1);
  EXPECT_FALSE(PathExists(dead));
  EXPECT_TRUE(PathExists(live));
  EXPECT_TRUE(PathExists(other));
}

}  // namespace
}  // namespace roboloop
