// SimService over a real loopback socket (issue 4, req 9): ListTasks, streamed rollouts equal
// to local ones, trajectories, bad requests refused before stepping, bearer tokens, and a
// cancelled stream stopping the server's work promptly.
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/grpc_server.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/builtin_tasks.h"
#include "sim/collect.h"
#include "sim/random_policy.h"
#include "sim/sim_client.h"
#include "sim/sim_grpc_service.h"
#include "sim/sim_service.h"

namespace roboloop::sim {
namespace {

using ::testing::HasSubstr;

class SimServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    BuiltinTaskOptions builtin;
    builtin.models_dir = ROBOLOOP_SOURCE_DIR "/configs/tasks/models";
    ASSERT_TRUE(RegisterBuiltins(&registry_, builtin).ok());
    auto handler = SimServiceHandler::Create({&registry_});
    ASSERT_TRUE(handler.ok()) << handler.status();
    handler_ = std::move(handler).value();
    service_ = std::make_unique<SimGrpcService>(handler_.get(), SimGrpcService::Options());
  }

  // Starts the server (with `token_file` when non-empty) and connects a client with `token`.
  void Start(const std::string& token_file = "", const std::string& token = "") {
    common::GrpcServerOptions options;
    options.token_file = token_file;
    auto server = common::GrpcServer::Create(options, {service_.get()});
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(server).value();
    common::GrpcChannelOptions channel;
    channel.target = server_->target();
    channel.token = token;
    auto client = SimClient::Connect(channel);
    ASSERT_TRUE(client.ok()) << client.status();
    client_ = std::move(client).value();
  }

  std::vector<v1::EpisodeRecord> Roll(const v1::RolloutRequest& request, absl::Status* status) {
    std::vector<v1::EpisodeRecord> records;
    *status = client_->Rollout(request, [&](const v1::EpisodeRecord& record) {
      records.push_back(record);
      return absl::OkStatus();
    });
    return records;
  }

  TaskRegistry registry_;
  std::unique_ptr<SimServiceHandler> handler_;
  std::unique_ptr<SimGrpcService> service_;
  std::unique_ptr<common::GrpcServer> server_;
  std::unique_ptr<SimClient> client_;
};

v1::RolloutRequest Request(const std::string& task, const std::string& policy, int64_t episodes) {
  v1::RolloutRequest request;
  request.set_task(task);
  request.set_policy(policy);
  request.set_base_seed(21);
  request.set_first_episode(4);
  request.set_num_episodes(episodes);
  request.set_envs(3);
  request.set_threads(2);
  return request;
}

TEST_F(SimServiceTest, ListTasksDescribesEveryBuiltin) {
  Start();
  auto tasks = client_->ListTasks();
  ASSERT_TRUE(tasks.ok()) << tasks.status();
  std::vector<std::string> names;
  for (const v1::TaskInfo& info : tasks->tasks()) names.push_back(info.name());
  EXPECT_EQ(names, registry_.Names());
  for (const v1::TaskInfo& info : tasks->tasks()) {
    auto task = registry_.Create(info.name());
    ASSERT_TRUE(task.ok());
    EXPECT_EQ(info.action_low_size(), (*task)->action_spec().size()) << info.name();
    EXPECT_EQ(info.obs_keys_size(), static_cast<int>((*task)->obs_spec().keys.size()));
    EXPECT_EQ(info.max_steps(), (*task)->max_steps());
    EXPECT_EQ(info.has_expert(), info.name() != "humanoid-stand") << info.name();
    EXPECT_FALSE(info.description().empty());
  }
}

TEST_F(SimServiceTest, StreamedRolloutEqualsLocalRollout) {
  Start();
  absl::Status status;
  auto streamed = Roll(Request("cartpole-swingup", "random", 7), &status);
  ASSERT_TRUE(status.ok()) << status;
  ASSERT_EQ(streamed.size(), 7u);

  auto task = registry_.Create("cartpole-swingup");
  ASSERT_TRUE(task.ok());
  RandomPolicy policy(**task, 0);
  RolloutOptions options;
  options.base_seed = 21;
  options.first_episode = 4;
  options.num_episodes = 7;
  auto local = RunRollout(**task, policy, options);
  ASSERT_TRUE(local.ok()) << local.status();
  std::vector<bool> seen(7, false);
  for (const v1::EpisodeRecord& proto : streamed) {
    auto record = EpisodeRecordFromProto(proto);
    ASSERT_TRUE(record.ok()) << record.status();
    const int64_t slot = record->episode_index - 4;
    ASSERT_GE(slot, 0);
    ASSERT_LT(slot, 7);
    EXPECT_FALSE(seen[slot]) << "episode streamed twice";
    seen[slot] = true;
    EXPECT_TRUE(record->SameOutcome((*local)[slot])) << "episode " << record->episode_index;
    EXPECT_FALSE(proto.has_trajectory());
  }
}

TEST_F(SimServiceTest, ExpertRolloutSucceedsAndCarriesTrajectories) {
  Start();
  v1::RolloutRequest request = Request("pendulum-swingup", "expert", 3);
  request.set_record_trajectories(true);
  absl::Status status;
  auto records = Roll(request, &status);
  ASSERT_TRUE(status.ok()) << status;
  ASSERT_EQ(records.size(), 3u);
  auto task = registry_.Create("pendulum-swingup");
  ASSERT_TRUE(task.ok());
  const int obs_size = (*task)->obs_spec().size();
  for (const v1::EpisodeRecord& record : records) {
    EXPECT_TRUE(record.success()) << record.episode_index();
    EXPECT_EQ(record.end_reason(), "truncated");
    EXPECT_EQ(record.trajectory().obs_size(), record.length() * obs_size);
    EXPECT_EQ(record.trajectory().rewards_size(), record.length());
    EXPECT_EQ(record.trajectory().final_obs_size(), obs_size);
  }
}

TEST_F(SimServiceTest, BadRequestsAreRefusedBeforeAnyEpisode) {
  Start();
  struct Case {
    v1::RolloutRequest request;
    absl::StatusCode code;
    std::string message;
  };
  std::vector<Case> cases;
  cases.push_back({Request("no-such-task", "random", 2), absl::StatusCode::kNotFound, "cartpole-swingup"});
  cases.push_back({Request("reacher", "registry:ckpt-42", 2), absl::StatusCode::kFailedPrecondition,
                   "registry:ckpt-42"});
  cases.push_back({Request("reacher", "", 2), absl::StatusCode::kInvalidArgument, "policy"});
  cases.push_back({Request("humanoid-stand", "expert", 2), absl::StatusCode::kUnimplemented, ""});
  cases.push_back({Request("reacher", "random", 0), absl::StatusCode::kInvalidArgument, "num_episodes"});
  Case envs{Request("reacher", "random", 2), absl::StatusCode::kInvalidArgument, "envs"};
  envs.request.set_envs(100000);
  cases.push_back(envs);
  Case noise{Request("reacher", "random", 2), absl::StatusCode::kInvalidArgument, "no-such-key"};
  (*noise.request.mutable_robustness()->mutable_obs_noise_std())["no-such-key"] = 0.1;
  cases.push_back(noise);
  Case chunk{Request("reacher", "random", 2), absl::StatusCode::kInvalidArgument, "chunk execution 'bogus'"};
  chunk.request.set_chunk_execution("bogus");
  cases.push_back(chunk);
  for (const Case& c : cases) {
    absl::Status status;
    auto records = Roll(c.request, &status);
    EXPECT_EQ(status.code(), c.code) << c.request.ShortDebugString() << ": " << status;
    EXPECT_THAT(status.message(), HasSubstr(c.message));
    EXPECT_TRUE(records.empty());
  }
}

TEST_F(SimServiceTest, MissingTokenIsUnauthenticated) {
  std::string dir = ::testing::TempDir() + "/sim_service_token_XXXXXX";
  ASSERT_NE(mkdtemp(dir.data()), nullptr);
  const std::string token_file = dir + "/token";
  std::ofstream(token_file) << "s3cret-token\n";
  Start(token_file, "");
  absl::Status status;
  auto records = Roll(Request("reacher", "random", 2), &status);
  EXPECT_EQ(status.code(), absl::StatusCode::kUnauthenticated) << status;
  EXPECT_TRUE(records.empty());
  EXPECT_EQ(client_->ListTasks().status().code(), absl::StatusCode::kUnauthenticated);

  common::GrpcChannelOptions channel;
  channel.target = server_->target();
  channel.token = "s3cret-token";
  auto authorised = SimClient::Connect(channel);
  ASSERT_TRUE(authorised.ok());
  EXPECT_TRUE((*authorised)->ListTasks().ok());
}

bool WaitForNoActiveRollouts(const SimServiceHandler& handler, std::chrono::seconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (handler.active_rollouts() != 0) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

// 200000 humanoid episodes would take hours; the server must stop within a second of the
// client cancelling after the first record.
TEST_F(SimServiceTest, CancellingTheStreamStopsTheServerPromptly) {
  Start();
  v1::RolloutRequest request = Request("humanoid-stand", "random", 200000);
  request.set_envs(2);
  request.set_threads(1);
  request.set_max_steps(5);
  int received = 0;
  absl::Status status = client_->Rollout(request, [&](const v1::EpisodeRecord&) {
    ++received;
    return absl::CancelledError("enough after the first record");
  });
  const auto cancelled_at = std::chrono::steady_clock::now();
  EXPECT_EQ(status.code(), absl::StatusCode::kCancelled);
  EXPECT_THAT(status.message(), HasSubstr("enough after the first record"));
  EXPECT_EQ(received, 1);
  ASSERT_TRUE(WaitForNoActiveRollouts(*handler_, std::chrono::seconds(5)));
  EXPECT_LT(std::chrono::steady_clock::now() - cancelled_at, std::chrono::seconds(1));
}

// One humanoid episode of 10^6 env steps streams no record for minutes, so only the
// server's cancellation watcher (not a failed write) can stop it when the deadline passes.
TEST_F(SimServiceTest, ClientDeadlineStopsTheServerBetweenRecords) {
  Start();
  v1::RolloutRequest request = Request("humanoid-stand", "random", 1);
  request.set_envs(1);
  request.set_threads(1);
  request.set_max_steps(1000000);
  int received = 0;
  absl::Status status = client_->Rollout(
      request,
      [&](const v1::EpisodeRecord&) {
        ++received;
        return absl::OkStatus();
      },
      absl::Milliseconds(300));
  const auto expired_at = std::chrono::steady_clock::now();
  EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded) << status;
  EXPECT_EQ(received, 0);
  ASSERT_TRUE(WaitForNoActiveRollouts(*handler_, std::chrono::seconds(5)));
  EXPECT_LT(std::chrono::steady_clock::now() - expired_at, std::chrono::seconds(1));
}

TEST_F(SimServiceTest, CollectWritesTheLocalDatasetAndRelabelReadsIt) {
  Start();
  std::string pattern = ::testing::TempDir() + "/sim_service_collect_XXXXXX";
  ASSERT_NE(mkdtemp(pattern.data()), nullptr);
  const std::string dir = pattern;
  v1::CollectRequest request;
  *request.mutable_rollout() = Request("cartpole-swingup", "random", 3);
  request.mutable_rollout()->set_max_steps(30);
  request.set_output_path(dir + "/remote.hdf5");
  request.set_overwrite(true);
  auto written = client_->Collect(request);
  ASSERT_TRUE(written.ok()) << written.status();
  EXPECT_EQ(written->episodes_written(), 3);
  EXPECT_EQ(written->total_steps(), 90);

  auto task = registry_.Create("cartpole-swingup");
  ASSERT_TRUE(task.ok());
  RandomPolicy random(**task, 0);
  CollectOptions local;
  local.output_path = dir + "/local.hdf5";
  local.overwrite = true;
  local.rollout.base_seed = 21;
  local.rollout.first_episode = 4;
  local.rollout.num_episodes = 3;
  local.rollout.max_steps = 30;
  local.policy_reference = "random";
  auto summary = CollectDataset(**task, random, local);
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_EQ(written->sha256(), summary->sha256);

  v1::RelabelRequest relabel;
  relabel.set_input_path(dir + "/remote.hdf5");
  relabel.set_output_path(dir + "/dagger.hdf5");
  relabel.set_overwrite(true);
  auto relabelled = client_->Relabel(relabel);
  ASSERT_TRUE(relabelled.ok()) << relabelled.status();
  EXPECT_EQ(relabelled->episodes_written(), 3);
  EXPECT_NE(relabelled->sha256(), written->sha256());
  relabel.set_policy("random");
  EXPECT_EQ(client_->Relabel(relabel).status().code(), absl::StatusCode::kUnimplemented);
  request.mutable_rollout()->set_task("no-such-task");
  EXPECT_EQ(client_->Collect(request).status().code(), absl::StatusCode::kNotFound);
}

TEST(SimServiceHandlerTest, DatasetPathsStayInsideTheDatasetDir) {
  TaskRegistry registry;
  BuiltinTaskOptions builtin;
  builtin.models_dir = ROBOLOOP_SOURCE_DIR "/configs/tasks/models";
  ASSERT_TRUE(RegisterBuiltins(&registry, builtin).ok());
  SimServiceHandler::Options options;
  options.registry = &registry;
  options.dataset_dir = ::testing::TempDir();
  auto handler = SimServiceHandler::Create(options);
  ASSERT_TRUE(handler.ok());
  v1::CollectRequest request;
  *request.mutable_rollout() = Request("pendulum-swingup", "expert", 1);
  request.mutable_rollout()->set_max_steps(5);
  for (const char* path : {"/tmp/escape.hdf5", "../escape.hdf5", ""}) {
    request.set_output_path(path);
    auto written = (*handler)->Collect(request, nullptr);
    EXPECT_EQ(written.status().code(), absl::StatusCode::kInvalidArgument) << path;
  }
  request.set_output_path("inside_" + std::to_string(getpid()) + ".hdf5");
  request.set_overwrite(true);
  auto written = (*handler)->Collect(request, nullptr);
  ASSERT_TRUE(written.ok()) << written.status();
  EXPECT_EQ(written->path(), request.output_path());
  std::ifstream file(::testing::TempDir() + "/" + request.output_path());
  EXPECT_TRUE(file.good());
}

TEST(SimServiceHandlerTest, CancelFlagStopsARolloutWithoutTransport) {
  TaskRegistry registry;
  BuiltinTaskOptions builtin;
  builtin.models_dir = ROBOLOOP_SOURCE_DIR "/configs/tasks/models";
  ASSERT_TRUE(RegisterBuiltins(&registry, builtin).ok());
  auto handler = SimServiceHandler::Create({&registry});
  ASSERT_TRUE(handler.ok());
  v1::RolloutRequest request = Request("cartpole-swingup", "random", 100000);
  common::CancellationToken cancel;
  int received = 0;
  absl::Status status = (*handler)->Rollout(
      request,
      [&](const v1::EpisodeRecord&) {
        if (++received == 2) cancel.Cancel();
        return absl::OkStatus();
      },
      &cancel);
  EXPECT_EQ(status.code(), absl::StatusCode::kCancelled) << status;
  EXPECT_LT(received, 100000);
  EXPECT_EQ((*handler)->active_rollouts(), 0);
}

TEST(SimServiceHandlerTest, MissingRegistryIsRefused) {
  EXPECT_EQ(SimServiceHandler::Create({}).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace roboloop::sim
