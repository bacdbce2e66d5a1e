// A writer process uploading and registering is killed with SIGKILL at random points; after each
// kill the store must reopen cleanly, show no partial blob under a final name, hold no
// checkpoint without its blobs, and verify.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <random>
#include <string>

#include "common/fs.h"
#include "common/sha256.h"
#include "common/status.h"
#include "registry/registry.h"
#include "tests/registry/test_util.h"

namespace roboloop::registry {
namespace {

using testing_util::MakeManifest;
using testing_util::ScopedDir;

constexpr int kKills = 20;
constexpr int64_t kChunk = 64 << 10;

std::string RandomBytes(std::mt19937_64& rng, size_t size) {
  std::string data(size, '\0');
  for (size_t i = 0; i < size; i += 8) {
    uint64_t word = rng();
    for (size_t b = 0; b < 8 && i + b < size; ++b) data[i + b] = static_cast<char>(word >> (8 * b));
  }
  return data;
}

// Uploads a blob in chunks, resuming from whatever the store holds.
absl::Status Upload(Registry& registry, const std::string& data) {
  std::string sha = Sha256Hex(data);
  int64_t size = static_cast<int64_t>(data.size());
  v1::UploadStatusRequest status_request;
  status_request.set_sha256(sha);
  ROBOLOOP_ASSIGN_OR_RETURN(v1::UploadStatusResponse status, registry.UploadStatus(status_request));
  if (status.complete()) return absl::OkStatus();
  for (int64_t offset = status.bytes_held(); offset < size; offset += kChunk) {
    ROBOLOOP_RETURN_IF_ERROR(
        registry.AppendUpload(sha, size, offset, absl::string_view(data).substr(offset, kChunk)));
  }
  return registry.FinishUpload(sha, size).status();
}

// The writer: registers checkpoints forever until killed. Never returns.
[[noreturn]] void WriterLoop(const std::string& root, uint64_t seed) {
  Registry::Options options;
  options.root = root;
  auto registry = Registry::Create(options);
  if (!registry.ok()) {
    std::fprintf(stderr, "writer: %s\n", registry.status().ToString().c_str());
    _exit(2);
  }
  std::mt19937_64 rng(seed);
  for (int64_t step = 0;; ++step) {
    std::string policy = RandomBytes(rng, 200000 + rng() % 1800000);
    std::string state = RandomBytes(rng, 1000 + rng() % 100000);
    absl::Status status = Upload(**registry, policy);
    if (status.ok()) status = Upload(**registry, state);
    if (status.ok()) {
      v1::RegisterCheckpointRequest request;
      request.set_manifest_json(MakeManifest("crash-model",
                                             {{"policy", policy}, {"trainer_state", state}},
                                             static_cast<int64_t>(seed) * 100000 + step)
                                    .dump());
      status = (*registry)->RegisterCheckpoint(request).status();
    }
    if (!status.ok()) {
      std::fprintf(stderr, "writer: %s\n", status.ToString().c_str());
      _exit(3);
    }
  }
}

void ExpectConsistent(const std::string& root, int kill_index, int64_t* checkpoints) {
  Registry::Options options;
  options.root = root;
  auto registry = Registry::Create(options);
  ASSERT_TRUE(registry.ok()) << "after kill " << kill_index << ": " << registry.status();
  EXPECT_TRUE(ListDir(JoinPath(root, "tmp"))->empty()) << "temp files survived reopen";

  auto verified = (*registry)->Verify({});
  ASSERT_TRUE(verified.ok()) << verified.status();
  for (const std::string& problem : verified->problems()) {
    ADD_FAILURE() << "after kill " << kill_index << ": " << problem;
  }
  auto partials = (*registry)->blobs().ListPartials();
  ASSERT_TRUE(partials.ok());
  for (const PartialUpload& partial : *partials) {
    if ((*registry)->blobs().Contains(partial.sha256)) {
      EXPECT_TRUE((*registry)->blobs().Verify(partial.sha256).ok());
    }
  }
  v1::ListCheckpointsRequest list;
  list.set_model("crash-model");
  list.set_order(v1::ORDER_OLDEST_FIRST);
  list.set_limit(kMaxListLimit);
  auto listed = (*registry)->ListCheckpoints(list);
  ASSERT_TRUE(listed.ok());
  for (int i = 0; i < listed->checkpoints_size(); ++i) {
    EXPECT_EQ(listed->checkpoints(i).version(), i + 1) << "versions must have no gaps";
  }
  *checkpoints = listed->checkpoints_size();
}

TEST(CrashSafety, SigkillAtRandomPointsNeverCorruptsTheStore) {
  ScopedDir dir;
  std::mt19937 rng(20240501);
  std::uniform_int_distribution<int> delay_ms(5, 250);
  int64_t checkpoints = 0;
  for (int kill_index = 0; kill_index < kKills; ++kill_index) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) WriterLoop(dir.path(), static_cast<uint64_t>(kill_index) + 1);
    usleep(static_cast<useconds_t>(delay_ms(rng)) * 1000);
    ASSERT_EQ(kill(pid, SIGKILL), 0);
    int wait_status = 0;
    ASSERT_EQ(waitpid(pid, &wait_status, 0), pid);
    ASSERT_TRUE(WIFSIGNALED(wait_status)) << "writer exited early with status "
                                          << WEXITSTATUS(wait_status);
    ExpectConsistent(dir.path(), kill_index, &checkpoints);
    if (HasFatalFailure()) return;
  }
  EXPECT_GT(checkpoints, 0) << "no writer ever got as far as a registration";
  std::printf("%lld checkpoints registered across %d kills\n",
              static_cast<long long>(checkpoints), kKills);
}

}  // namespace
}  // namespace roboloop::registry
