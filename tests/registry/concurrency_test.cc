// Four processes register 200 checkpoints each of one model: versions must be exactly 1..800.
// Eight processes creating one fresh registry at the same instant must all open it.
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <set>
#include <string>

#include "registry/registry.h"
#include "tests/registry/test_util.h"

namespace roboloop::registry {
namespace {

using testing_util::MakeManifest;
using testing_util::ScopedDir;

constexpr int kProcesses = 4;
constexpr int kPerProcess = 200;
const char kWeights[] = "shared policy weights";

[[noreturn]] void RegisterMany(const std::string& root, int worker) {
  Registry::Options options;
  options.root = root;
  auto registry = Registry::Create(options);
  if (!registry.ok()) {
    std::fprintf(stderr, "worker %d: %s\n", worker, registry.status().ToString().c_str());
    _exit(2);
  }
  for (int i = 0; i < kPerProcess; ++i) {
    v1::RegisterCheckpointRequest request;
    request.set_manifest_json(
        MakeManifest("shared-model", {{"policy", kWeights}}, worker * 100000 + i).dump());
    auto registered = (*registry)->RegisterCheckpoint(request);
    if (!registered.ok()) {
      std::fprintf(stderr, "worker %d: %s\n", worker, registered.status().ToString().c_str());
      _exit(3);
    }
  }
  _exit(0);
}

TEST(Concurrency, FourProcessesGetContiguousUniqueVersions) {
  ScopedDir dir;
  {
    Registry::Options options;
    options.root = dir.path();
    auto registry = Registry::Create(options);
    ASSERT_TRUE(registry.ok()) << registry.status();
    ASSERT_TRUE((*registry)->PutBlob(kWeights).ok());
  }
  std::vector<pid_t> workers;
  for (int worker = 0; worker < kProcesses; ++worker) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) RegisterMany(dir.path(), worker);
    workers.push_back(pid);
  }
  for (pid_t pid : workers) {
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "worker failed: " << status;
  }

  Registry::Options options;
  options.root = dir.path();
  auto registry = Registry::Create(options);
  ASSERT_TRUE(registry.ok());
  v1::ListCheckpointsRequest list;
  list.set_model("shared-model");
  list.set_limit(kMaxListLimit);
  auto listed = (*registry)->ListCheckpoints(list);
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->checkpoints_size(), kProcesses * kPerProcess);
  std::set<int> versions;
  std::set<int64_t> steps;
  for (const v1::Checkpoint& checkpoint : listed->checkpoints()) {
    versions.insert(checkpoint.version());
    steps.insert(checkpoint.step());
  }
  EXPECT_EQ(versions.size(), static_cast<size_t>(kProcesses * kPerProcess)) << "duplicate versions";
  EXPECT_EQ(*versions.begin(), 1);
  EXPECT_EQ(*versions.rbegin(), kProcesses * kPerProcess) << "gaps in versions";
  EXPECT_EQ(steps.size(), static_cast<size_t>(kProcesses * kPerProcess));

  v1::AliasHistoryRequest history;
  history.set_model("shared-model");
  history.set_alias("latest");
  EXPECT_EQ((*registry)->AliasHistory(history)->events_size(), kProcesses * kPerProcess);
}

[[noreturn]] void OpenFreshRegistry(const std::string& root, int start_pipe) {
  char go = 0;
  if (read(start_pipe, &go, 1) != 1) _exit(4);
  Registry::Options options;
  options.root = root;
  auto registry = Registry::Create(options);
  if (!registry.ok()) {
    std::fprintf(stderr, "open: %s\n", registry.status().ToString().c_str());
    _exit(2);
  }
  _exit(0);
}

TEST(Concurrency, ManyProcessesCreatingOneFreshRegistryAllSucceed) {
  for (int round = 0; round < 5; ++round) {
    ScopedDir dir;
    int start[2];
    ASSERT_EQ(pipe(start), 0);
    std::vector<pid_t> openers;
    for (int i = 0; i < 8; ++i) {
      pid_t pid = fork();
      ASSERT_GE(pid, 0);
      if (pid == 0) {
        close(start[1]);
        OpenFreshRegistry(dir.path(), start[0]);
      }
      openers.push_back(pid);
    }
    close(start[0]);
    ASSERT_EQ(write(start[1], "gggggggg", 8), 8);
    close(start[1]);
    for (pid_t pid : openers) {
      int status = 0;
      ASSERT_EQ(waitpid(pid, &status, 0), pid);
      EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "round " << round << ": opener failed";
    }
  }
}

}  // namespace
}  // namespace roboloop::registry
