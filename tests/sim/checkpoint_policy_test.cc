// Checkpoint policies (issue 4, req 7): per-episode history and chunk execution on a scripted
// chunk model (exact values), manifest checks against the task, and a real trained checkpoint
// served by SimServiceHandler whose records do not depend on envs or threads.
#include "sim/checkpoint_policy.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "registry/registry_client.h"
#include "registry/registry_host.h"
#include "sim/builtin_tasks.h"
#include "sim/sim_service.h"
#include "sim/task_registry.h"
#include "tests/util/served_registry.h"
#include "tests/util/subprocess.h"
#include "tests/util/tiny_checkpoint.h"

namespace roboloop::sim {
namespace {

using ::testing::HasSubstr;

// Predicts action[c] = 1000 * history_length + 100 * c + (sum over history slots h of
// (h + 1) * obs[h][0]); one obs float, one action float. Records every query.
class ScriptedModel : public ChunkModel {
 public:
  ScriptedModel(int history, int chunk, std::vector<int>* rows_per_query)
      : history_(history), chunk_(chunk), rows_per_query_(rows_per_query) {}
  int history() const override { return history_; }
  int chunk() const override { return chunk_; }
  int obs_dim() const override { return 1; }
  int action_dim() const override { return 1; }
  const std::vector<CameraSpec>& cameras() const override { return cameras_; }
  absl::Status Predict(const float* obs, const int32_t* history_length, const uint8_t* images, int rows,
                       float* actions) override {
    EXPECT_EQ(images, nullptr);
    rows_per_query_->push_back(rows);
    for (int r = 0; r < rows; ++r) {
      float mix = 0;
      for (int h = 0; h < history_; ++h) mix += static_cast<float>(h + 1) * obs[r * history_ + h];
      for (int c = 0; c < chunk_; ++c) actions[r * chunk_ + c] = 1000.0f * history_length[r] + 100.0f * c + mix;
    }
    return absl::OkStatus();
  }

 private:
  int history_, chunk_;
  std::vector<int>* rows_per_query_;
  std::vector<CameraSpec> cameras_;
};

ObsSpec OneFloatObs() { return ObsSpec{{ArraySpec{"x", {1}}}, {}}; }
ActionSpec OneAction() { return ActionSpec{{-1e9f}, {1e9f}}; }

std::unique_ptr<Policy> Chunked(int history, int chunk, const std::string& execution, std::vector<int>* queries) {
  auto parsed = ParseChunkExecution(execution);
  EXPECT_TRUE(parsed.ok()) << parsed.status();
  auto policy = MakeChunkedPolicy(std::make_unique<ScriptedModel>(history, chunk, queries), *parsed, "scripted",
                                  OneFloatObs(), OneAction());
  EXPECT_TRUE(policy.ok()) << policy.status();
  return std::move(policy).value();
}

// Runs one episode of `steps` steps alone; obs at step t is t + 1.
std::vector<float> RunAlone(Policy& policy, int64_t episode, int steps) {
  std::vector<float> out;
  for (int32_t t = 0; t < steps; ++t) {
    const float obs = static_cast<float>(t + 1);
    float action = 0;
    PolicyBatch batch{&obs, &episode, &t, 1};
    EXPECT_TRUE(policy.Act(batch, &action).ok());
    out.push_back(action);
  }
  return out;
}

TEST(ChunkedPolicyTest, HistoryIsLeftPaddedWithTheFirstObservation) {
  std::vector<int> queries;
  auto policy = Chunked(3, 1, "full_chunk", &queries);
  // history slots (oldest first): t=0 [1,1,1] len 1; t=1 [1,1,2] len 2; t=2 [1,2,3] len 3; t=3 [2,3,4].
  EXPECT_THAT(RunAlone(*policy, 7, 4), ::testing::ElementsAre(1000 + 6, 2000 + 9, 3000 + 14, 3000 + 20));
}

TEST(ChunkedPolicyTest, FullChunkAndRecedingHorizonQueryEveryPeriod) {
  std::vector<int> queries;
  auto full = Chunked(1, 3, "full_chunk", &queries);
  // Queries at t = 0 (obs 1) and t = 3 (obs 4); the chunk's entry t - query step is executed.
  EXPECT_THAT(RunAlone(*full, 0, 5), ::testing::ElementsAre(1001, 1101, 1201, 1004, 1104));
  EXPECT_EQ(queries.size(), 2u);
  queries.clear();
  auto receding = Chunked(1, 3, "receding_horizon:2", &queries);
  EXPECT_THAT(RunAlone(*receding, 0, 5), ::testing::ElementsAre(1001, 1101, 1003, 1103, 1005));
  EXPECT_EQ(queries.size(), 3u);
}

TEST(ChunkedPolicyTest, TemporalEnsemblingWeightsTheOldestPredictionFirst) {
  std::vector<int> queries;
  const double m = 0.5;
  auto policy = Chunked(1, 3, "temporal_ensembling:0.5", &queries);
  std::vector<float> actions = RunAlone(*policy, 0, 4);
  // Step 2 is covered by the chunks queried at t = 0, 1, 2 (oldest first): entries 2, 1, 0.
  const double p0 = 1000 + 200 + 1, p1 = 1000 + 100 + 2, p2 = 1000 + 0 + 3;
  const double w0 = 1, w1 = std::exp(-m), w2 = std::exp(-2 * m);
  EXPECT_FLOAT_EQ(actions[2], static_cast<float>((w0 * p0 + w1 * p1 + w2 * p2) / (w0 + w1 + w2)));
  // Step 3: chunks from t = 1, 2, 3 (the one from t = 0 no longer covers it).
  const double q1 = 1000 + 200 + 2, q2 = 1000 + 100 + 3, q3 = 1000 + 4;
  EXPECT_FLOAT_EQ(actions[3], static_cast<float>((w0 * q1 + w1 * q2 + w2 * q3) / (w0 + w1 + w2)));
  EXPECT_EQ(queries.size(), 4u);
}

TEST(ChunkedPolicyTest, EachRowDependsOnlyOnItsEpisode) {
  std::vector<int> queries;
  auto alone = Chunked(2, 3, "temporal_ensembling:0.2", &queries);
  const std::vector<float> expected = RunAlone(*alone, 5, 6);
  // The same episode interleaved with another that starts two steps later.
  auto mixed = Chunked(2, 3, "temporal_ensembling:0.2", &queries);
  std::vector<float> got;
  for (int32_t t = 0; t < 6; ++t) {
    std::vector<float> obs = {static_cast<float>(t + 1)};
    std::vector<int64_t> episodes = {5};
    std::vector<int32_t> steps = {t};
    if (t >= 2) {
      obs.insert(obs.begin(), 50.0f + t);
      episodes.insert(episodes.begin(), 9);
      steps.insert(steps.begin(), t - 2);
    }
    std::vector<float> actions(obs.size());
    PolicyBatch batch{obs.data(), episodes.data(), steps.data(), static_cast<int>(obs.size())};
    ASSERT_TRUE(mixed->Act(batch, actions.data()).ok());
    got.push_back(actions.back());
  }
  EXPECT_EQ(got, expected);
}

TEST(ChunkedPolicyTest, AStepOutOfOrderIsRefused) {
  std::vector<int> queries;
  auto policy = Chunked(2, 2, "full_chunk", &queries);
  const float obs = 1;
  const int64_t episode = 3;
  const int32_t step = 4;
  float action = 0;
  absl::Status status = policy->Act(PolicyBatch{&obs, &episode, &step, 1}, &action);
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(), HasSubstr("episode 3"));
}

// Sees `cameras`; action = the row's obs; records the frames of every query row.
class SeeingModel : public ChunkModel {
 public:
  SeeingModel(std::vector<CameraSpec> cameras, std::vector<std::vector<uint8_t>>* seen)
      : cameras_(std::move(cameras)), seen_(seen) {}
  int history() const override { return 1; }
  int chunk() const override { return 1; }
  int obs_dim() const override { return 1; }
  int action_dim() const override { return 1; }
  const std::vector<CameraSpec>& cameras() const override { return cameras_; }
  absl::Status Predict(const float* obs, const int32_t*, const uint8_t* images, int rows, float* actions) override {
    int bytes = 0;
    for (const CameraSpec& camera : cameras_) bytes += camera.bytes();
    for (int r = 0; r < rows; ++r) {
      seen_->emplace_back(images + r * bytes, images + (r + 1) * bytes);
      actions[r] = obs[r];
    }
    return absl::OkStatus();
  }

 private:
  std::vector<CameraSpec> cameras_;
  std::vector<std::vector<uint8_t>>* seen_;
};

// One float and two cameras: "top" 2 wide x 1 high (6 bytes), then "side" 1x1 (3 bytes).
ObsSpec SeeingObs() {
  ObsSpec spec = OneFloatObs();
  spec.cameras = {CameraSpec{"top", "top_cam", 2, 1}, CameraSpec{"side", "", 1, 1}};
  return spec;
}

TEST(ChunkedPolicyTest, EachQueryRowGetsItsFramesInTheModelsCameraOrder) {
  std::vector<std::vector<uint8_t>> seen;
  // The model reads side first: its frames are gathered out of the task's layout.
  auto policy = MakeChunkedPolicy(std::make_unique<SeeingModel>(
                                      std::vector<CameraSpec>{{"side", "", 1, 1}, {"top", "", 2, 1}}, &seen),
                                  ChunkExecution(), "seeing", SeeingObs(), OneAction());
  ASSERT_TRUE(policy.ok()) << policy.status();
  const std::vector<float> obs = {1, 2};
  std::vector<uint8_t> images(2 * 9);
  for (size_t i = 0; i < images.size(); ++i) images[i] = static_cast<uint8_t>(10 + i);
  const std::vector<int64_t> episodes = {4, 5};
  const std::vector<int32_t> steps = {0, 0};
  std::vector<float> actions(2);
  ASSERT_TRUE((*policy)->Act(PolicyBatch{obs.data(), episodes.data(), steps.data(), 2, images.data()},
                             actions.data()).ok());
  EXPECT_EQ(actions, obs);
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0], (std::vector<uint8_t>{16, 17, 18, 10, 11, 12, 13, 14, 15}));
  EXPECT_EQ(seen[1], (std::vector<uint8_t>{25, 26, 27, 19, 20, 21, 22, 23, 24}));
  const std::vector<int32_t> next = {1, 1};
  const absl::Status blind = (*policy)->Act(PolicyBatch{obs.data(), episodes.data(), next.data(), 2},
                                            actions.data());
  EXPECT_EQ(blind.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(blind.message(), HasSubstr("seeing sees cameras, but the batch carries no images"));
}

TEST(ChunkedPolicyTest, AStateOnlyModelRunsOnATaskWithCameras) {
  std::vector<int> queries;
  auto policy = MakeChunkedPolicy(std::make_unique<ScriptedModel>(1, 1, &queries), ChunkExecution(), "blind",
                                  SeeingObs(), OneAction());
  ASSERT_TRUE(policy.ok()) << policy.status();
  const float obs = 2;
  const std::vector<uint8_t> images(9, 7);
  const int64_t episode = 1;
  const int32_t step = 0;
  float action = 0;
  ASSERT_TRUE((*policy)->Act(PolicyBatch{&obs, &episode, &step, 1, images.data()}, &action).ok());
  EXPECT_EQ(action, 1000 + 2);
}

TEST(ChunkedPolicyTest, AModelCameraTheTaskLacksOrSizesDifferentlyIsRefusedByName) {
  std::vector<std::vector<uint8_t>> seen;
  auto unknown = MakeChunkedPolicy(std::make_unique<SeeingModel>(std::vector<CameraSpec>{{"wrist", "", 1, 1}}, &seen),
                                   ChunkExecution(), "seeing", SeeingObs(), OneAction());
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(unknown.status().message(),
              HasSubstr("policy seeing does not fit the task: it sees camera 'wrist' 1x1 (width x height) but the "
                        "task has no camera of that name (task observation {x[1], top:rgb[1x2], side:rgb[1x1]})"));
  auto resized = MakeChunkedPolicy(std::make_unique<SeeingModel>(std::vector<CameraSpec>{{"top", "", 1, 2}}, &seen),
                                   ChunkExecution(), "seeing", SeeingObs(), OneAction());
  EXPECT_THAT(resized.status().message(), HasSubstr("camera 'top' 1x2 (width x height) but the task's is 2x1"));
}

TEST(ChunkExecutionTest, ParsesAndRefusesBadText) {
  auto receding = ParseChunkExecution("receding_horizon:3");
  ASSERT_TRUE(receding.ok());
  EXPECT_EQ(receding->receding_steps, 3);
  EXPECT_EQ(ChunkExecutionName(*receding), "receding_horizon:3");
  for (const char* bad : {"", "receding_horizon", "receding_horizon:0", "temporal_ensembling:-1", "chunky"}) {
    auto parsed = ParseChunkExecution(bad);
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
  std::vector<int> queries;
  auto too_long = MakeChunkedPolicy(std::make_unique<ScriptedModel>(1, 2, &queries), *receding, "scripted",
                                    OneFloatObs(), OneAction());
  EXPECT_EQ(too_long.status().code(), absl::StatusCode::kInvalidArgument);
}

nlohmann::json ManifestFor(const ObsSpec& obs, int action_dim) {
  nlohmann::json names = nlohmann::json::array(), shapes = nlohmann::json::array();
  for (const ArraySpec& key : obs.keys) {
    names.push_back(key.name);
    shapes.push_back(key.shape);
  }
  return {{"format_version", 1},
          {"model", "my-model"},
          {"policy", {{"kind", "mlp"}, {"options", {{"obs_dim", obs.size()}, {"action_dim", action_dim}}}}},
          {"obs_spec", {{"names", names}, {"shapes", shapes}}},
          {"action_spec", {{"names", {"action"}}, {"shapes", {{action_dim}}}}},
          {"normalization", nlohmann::json::object()},
          {"action_chunk", {{"horizon", 1}}},
          {"dataset_id", ""},
          {"parent_id", ""},
          {"step", 0},
          {"metrics", nlohmann::json::object()},
          {"blobs", {{"policy", {{"sha256", std::string(64, 'a')}, {"size", 1}}}}},
          {"provenance", nlohmann::json::object()}};
}

TEST(CheckManifestTest, RefusesTheFirstDifferenceNamingTheCheckpoint) {
  const ObsSpec task_obs{{ArraySpec{"position", {2}}, ArraySpec{"velocity", {2}}}, {}};
  const ActionSpec task_action{{-1, -1}, {1, 1}};
  ASSERT_TRUE(CheckManifestFitsTask(ManifestFor(task_obs, 2), "ck", task_obs, task_action).ok());
  ObsSpec with_camera = task_obs;
  with_camera.cameras = {CameraSpec{"agentview", "front", 8, 6}};
  auto state_only = CheckManifestFitsTask(ManifestFor(task_obs, 2), "ck", with_camera, task_action);
  ASSERT_TRUE(state_only.ok()) << state_only.status();
  EXPECT_TRUE(state_only->cameras.empty());
  struct Case {
    nlohmann::json manifest;
    std::string message;
  };
  std::vector<Case> cases;
  cases.push_back({ManifestFor(ObsSpec{{task_obs.keys[1], task_obs.keys[0]}, {}}, 2), "key 0 is 'velocity'"});
  cases.push_back({ManifestFor(ObsSpec{{task_obs.keys[0], ArraySpec{"velocity", {3}}}, {}}, 2), "'velocity' [3]"});
  cases.push_back({ManifestFor(ObsSpec{{task_obs.keys[0]}, {}}, 2), "key 1 is nothing"});
  cases.push_back({ManifestFor(task_obs, 3), "writes 3 action dims, the task takes 2"});
  nlohmann::json unknown_kind = ManifestFor(task_obs, 2);
  unknown_kind["policy"]["kind"] = "lstm";
  cases.push_back({unknown_kind, "unknown policy kind 'lstm'"});
  nlohmann::json bad_option = ManifestFor(task_obs, 2);
  bad_option["policy"]["options"]["hidden"] = "wide";
  cases.push_back({bad_option, "policy option 'hidden' of kind 'mlp'"});
  nlohmann::json wrong_dims = ManifestFor(task_obs, 2);
  wrong_dims["policy"]["options"]["obs_dim"] = 3;
  cases.push_back({wrong_dims, "its options say obs_dim 3"});
  nlohmann::json malformed = ManifestFor(task_obs, 2);
  malformed["obs_spec"]["names"][0] = 5;
  cases.push_back({malformed, "malformed manifest"});
  ObsSpec seeing_obs = task_obs;
  seeing_obs.cameras = {CameraSpec{"agentview", "front", 8, 6}};
  nlohmann::json unknown_camera = ManifestFor(task_obs, 2);
  unknown_camera["obs_spec"]["cameras"] = {{{"name", "wrist"}, {"camera", ""}, {"width", 8}, {"height", 6}}};
  cases.push_back({unknown_camera, "it sees camera 'wrist' 8x6 (width x height) but the task has no camera of that name"});
  nlohmann::json resized_camera = ManifestFor(task_obs, 2);
  resized_camera["obs_spec"]["cameras"] = {{{"name", "agentview"}, {"camera", "front"}, {"width", 6}, {"height", 6}}};
  cases.push_back({resized_camera, "it sees camera 'agentview' 6x6 (width x height) but the task's is 8x6 (task "
                                   "observation {position[2], velocity[2], agentview:rgb[6x8]})"});
  nlohmann::json blind_options = ManifestFor(task_obs, 2);
  blind_options["obs_spec"]["cameras"] = {{{"name", "agentview"}, {"camera", "front"}, {"width", 8}, {"height", 6}}};
  cases.push_back({blind_options, "manifest obs_spec.cameras [agentview 8x6] disagree with policy.options.cameras []"});
  for (const Case& c : cases) {
    auto checked = CheckManifestFitsTask(c.manifest, "my-model:v3", seeing_obs, task_action);
    EXPECT_EQ(checked.status().code(), absl::StatusCode::kInvalidArgument) << c.message;
    EXPECT_THAT(checked.status().message(), HasSubstr("my-model:v3"));
    EXPECT_THAT(checked.status().message(), HasSubstr(c.message));
  }
}

// A tiny transformer (history 2, chunk 4) trained on cartpole-swingup demos, served by a
// SimServiceHandler with a registry.
class CheckpointRolloutTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    root_ = new std::string(roboloop::testing::MakeTempDir("checkpoint-policy") + "/store");
    roboloop::testing::TinyCheckpointOptions options;
    options.root = *root_;
    checkpoint_ = new std::string(roboloop::testing::MakeTinyCheckpoint(options));
  }

  void SetUp() override {
    ASSERT_FALSE(checkpoint_->empty());
    BuiltinTaskOptions builtin;
    builtin.models_dir = ROBOLOOP_SOURCE_DIR "/configs/tasks/models";
    ASSERT_TRUE(RegisterBuiltins(&tasks_, builtin).ok());
    auto served = roboloop::testing::ServeRegistry(*root_);
    ASSERT_TRUE(served.ok()) << served.status();
    host_ = std::move(served->host);
    client_ = std::move(served->client);
    SimServiceHandler::Options options;
    options.registry = &tasks_;
    options.checkpoints = client_.get();
    options.checkpoint_cache_dir = roboloop::testing::MakeTempDir("checkpoint-cache");
    auto handler = SimServiceHandler::Create(options);
    ASSERT_TRUE(handler.ok()) << handler.status();
    handler_ = std::move(handler).value();
  }

  std::vector<v1::EpisodeRecord> Roll(v1::RolloutRequest request, int envs, int threads, absl::Status* status) {
    request.set_envs(envs);
    request.set_threads(threads);
    std::vector<v1::EpisodeRecord> records;
    *status = handler_->Rollout(request, [&](const v1::EpisodeRecord& r) {
      records.push_back(r);
      records.back().clear_wall_time_s();
      return absl::OkStatus();
    }, nullptr);
    std::sort(records.begin(), records.end(),
              [](const auto& a, const auto& b) { return a.episode_index() < b.episode_index(); });
    return records;
  }

  static v1::RolloutRequest Request(const std::string& task, const std::string& execution) {
    v1::RolloutRequest request;
    request.set_task(task);
    request.set_policy("tiny@latest");
    request.set_chunk_execution(execution);
    request.set_base_seed(11);
    request.set_first_episode(100);
    request.set_num_episodes(6);
    request.set_max_steps(25);
    return request;
  }

  static std::string* root_;
  static std::string* checkpoint_;
  TaskRegistry tasks_;
  std::unique_ptr<registry::RegistryHost> host_;
  std::unique_ptr<registry::RegistryClient> client_;
  std::unique_ptr<SimServiceHandler> handler_;
};

std::string* CheckpointRolloutTest::root_ = nullptr;
std::string* CheckpointRolloutTest::checkpoint_ = nullptr;

TEST_F(CheckpointRolloutTest, RecordsDoNotDependOnEnvsOrThreadsInEveryExecutionMode) {
  for (const char* execution : {"full_chunk", "receding_horizon:2", "temporal_ensembling:0.1"}) {
    absl::Status one_status, three_status;
    std::vector<v1::EpisodeRecord> one = Roll(Request("cartpole-swingup", execution), 1, 1, &one_status);
    std::vector<v1::EpisodeRecord> three = Roll(Request("cartpole-swingup", execution), 3, 2, &three_status);
    // Overlapped halves: each chunk executor sees only part of the running episodes per call.
    v1::RolloutRequest overlapped = Request("cartpole-swingup", execution);
    overlapped.set_overlap_inference(true);
    absl::Status halves_status;
    std::vector<v1::EpisodeRecord> halves = Roll(overlapped, 4, 2, &halves_status);
    ASSERT_TRUE(one_status.ok()) << one_status;
    ASSERT_TRUE(three_status.ok()) << three_status;
    ASSERT_TRUE(halves_status.ok()) << halves_status;
    ASSERT_EQ(one.size(), 6u);
    ASSERT_EQ(three.size(), 6u);
    ASSERT_EQ(halves.size(), 6u);
    for (size_t i = 0; i < one.size(); ++i) {
      EXPECT_EQ(one[i].SerializeAsString(), three[i].SerializeAsString()) << execution << " episode " << i;
      EXPECT_EQ(one[i].SerializeAsString(), halves[i].SerializeAsString()) << execution << " episode " << i;
    }
  }
}

TEST_F(CheckpointRolloutTest, ExecutionModesDriveDifferentTrajectories) {
  absl::Status a_status, b_status;
  auto full = Roll(Request("cartpole-swingup", "full_chunk"), 2, 1, &a_status);
  auto ensembled = Roll(Request("cartpole-swingup", "temporal_ensembling:0.1"), 2, 1, &b_status);
  ASSERT_TRUE(a_status.ok() && b_status.ok()) << a_status << b_status;
  EXPECT_NE(full[0].state_hash_chain(), ensembled[0].state_hash_chain());
}

TEST_F(CheckpointRolloutTest, ACheckpointForAnotherTaskIsRefusedBeforeAnyEpisode) {
  absl::Status status;
  auto records = Roll(Request("reacher", "full_chunk"), 1, 1, &status);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  EXPECT_THAT(status.message(), HasSubstr("tiny@latest"));
  EXPECT_THAT(status.message(), HasSubstr(*checkpoint_));
  EXPECT_TRUE(records.empty());
  auto too_long = Roll(Request("cartpole-swingup", "receding_horizon:5"), 1, 1, &status);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("N <= 4"));
  auto unknown = Request("cartpole-swingup", "full_chunk");
  unknown.set_policy("no-such-model@latest");
  Roll(unknown, 1, 1, &status);
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound) << status;
  EXPECT_THAT(status.message(), HasSubstr("no-such-model@latest"));
}

}  // namespace
}  // namespace roboloop::sim
