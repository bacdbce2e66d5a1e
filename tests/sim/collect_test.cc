// Collect and Relabel (issue 4, req 8): rollouts become robomimic datasets with full states,
// byte-identical for any envs/threads; relabelling restores states and asks the expert.
#include "sim/collect.h"

#include <memory>
#include <set>
#include <vector>

#include "common/fs.h"
#include "common/sha256.h"
#include "data/dataset_reader.h"
#include "data/dataset_writer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "sim/physics_state.h"
#include "sim/random_policy.h"
#include "sim/task_plugin.h"
#include "tests/sim/plugin_build.h"
#include "tests/sim/test_tasks.h"
#include "tests/util/subprocess.h"

namespace roboloop::sim {
namespace {

using ::testing::HasSubstr;

CollectOptions Options(const std::string& path, int64_t episodes, int max_steps) {
  CollectOptions options;
  options.output_path = path;
  options.rollout.base_seed = 5;
  options.rollout.first_episode = 2;
  options.rollout.num_episodes = episodes;
  options.rollout.max_steps = max_steps;
  options.policy_reference = "expert";
  return options;
}

RelabelOptions Paths(const std::string& input, const std::string& output) {
  RelabelOptions options;
  options.input_path = input;
  options.output_path = output;
  return options;
}

// Each step's cartpole observation row (position then velocity) of a dataset episode.
std::vector<std::vector<float>> CartpoleObsRows(const data::Episode& episode) {
  const auto position = episode.at("obs/position").Values<float>();
  const auto velocity = episode.at("obs/velocity").Values<float>();
  std::vector<std::vector<float>> rows(position.size() / 3);
  for (size_t t = 0; t < rows.size(); ++t) {
    rows[t] = {position[3 * t], position[3 * t + 1], position[3 * t + 2], velocity[2 * t],
               velocity[2 * t + 1]};
  }
  return rows;
}

std::unique_ptr<data::DatasetReader> Open(const std::string& path) {
  data::DatasetReader::Options options;
  options.path = path;
  auto reader = data::DatasetReader::Open(options);
  EXPECT_TRUE(reader.ok()) << reader.status();
  return reader.ok() ? std::move(reader).value() : nullptr;
}

TEST(CollectTest, WritesEveryStepWithStatesEnvArgsAndLineage) {
  auto task = testing::BuiltinTask("cartpole-balance");
  auto expert = task->MakeExpert();
  ASSERT_TRUE(expert.ok()) << expert.status();
  const std::string path = roboloop::testing::MakeTempDir("collect") + "/demos.hdf5";
  CollectOptions options = Options(path, 3, 40);
  auto summary = CollectDataset(*task, **expert, options);
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_EQ(summary->episodes_written, 3);
  EXPECT_EQ(summary->total_steps, 120);
  EXPECT_EQ(summary->sha256, *Sha256File(path));

  auto records = RunRollout(*task, **expert, options.rollout);
  ASSERT_TRUE(records.ok());
  auto reader = Open(path);
  ASSERT_NE(reader, nullptr);
  const data::DatasetLayout& layout = reader->layout();
  EXPECT_EQ(layout.lineage.operation, "collect");
  nlohmann::json env_args = nlohmann::json::parse(layout.env_args_json);
  EXPECT_EQ(env_args["env_name"], "cartpole-balance");
  EXPECT_EQ(env_args["env_kwargs"]["base_seed"], 5);
  EXPECT_EQ(env_args["env_kwargs"]["first_episode"], 2);
  EXPECT_EQ(env_args["env_kwargs"]["policy"], "expert");
  ASSERT_EQ(layout.demos.size(), 3u);
  const int state_size = PhysicsStateSize(task->model());
  auto data = MakeData(task->model());
  ASSERT_TRUE(data.ok());
  for (size_t d = 0; d < layout.demos.size(); ++d) {
    auto episode = reader->ReadEpisode(layout.demos[d].name);
    ASSERT_TRUE(episode.ok()) << episode.status();
    for (const char* feature : {"obs/position", "obs/velocity", "actions", "rewards", "dones", "states"}) {
      ASSERT_TRUE(episode->count(feature)) << feature;
    }
    const auto& states = episode->at("states");
    EXPECT_EQ(states.shape, (std::vector<int64_t>{40, state_size}));
    double total = 0;
    for (float r : episode->at("rewards").Values<float>()) total += r;
    EXPECT_NEAR(total, (*records)[d].episode_return, 1e-3);
    EXPECT_EQ(episode->at("dones").Values<uint8_t>()[39], 1);
    EXPECT_EQ(episode->at("dones").Values<uint8_t>()[0], 0);
    // Row 0's state restored gives row 0's observation.
    RestorePhysicsState(task->model(), states.Values<double>().data(), data->get());
    std::vector<float> obs(task->obs_spec().size());
    task->Observe(task->model(), data->get(), obs.data());
    EXPECT_EQ(CartpoleObsRows(*episode)[0], obs);
  }
}

TEST(CollectTest, SameBytesForAnyEnvsAndThreads) {
  // Random actions end cartpole-balance episodes at different steps, so episodes finish out
  // of index order when several envs run together.
  auto task = testing::BuiltinTask("cartpole-balance");
  RandomPolicy random(*task, 3);
  const std::string dir = roboloop::testing::MakeTempDir("collectdet");
  CollectOptions one = Options(dir + "/one.hdf5", 7, 100);
  one.policy_reference = "random";
  CollectOptions many = one;
  many.output_path = dir + "/many.hdf5";
  many.rollout.num_envs = 4;
  many.rollout.num_threads = 2;
  auto a = CollectDataset(*task, random, one);
  auto b = CollectDataset(*task, random, many);
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(a->sha256, b->sha256);
  auto records = RunRollout(*task, random, one.rollout);
  ASSERT_TRUE(records.ok());
  std::set<int> lengths;
  for (const EpisodeRecord& r : *records) lengths.insert(r.length);
  EXPECT_GT(lengths.size(), 1u) << "the episodes should end at different steps";
  CollectOptions other = one;
  other.output_path = dir + "/other.hdf5";
  other.rollout.base_seed = 6;
  auto c = CollectDataset(*task, random, other);
  ASSERT_TRUE(c.ok());
  EXPECT_NE(a->sha256, c->sha256);
}

TEST(CollectTest, SuccessOnlyKeepsTheSuccessfulEpisodesInOrder) {
  auto task = testing::BuiltinTask("cartpole-balance");
  RandomPolicy random(*task, 3);
  const std::string dir = roboloop::testing::MakeTempDir("collectsucc");
  CollectOptions options = Options(dir + "/ok.hdf5", 12, 25);
  options.success_only = true;
  options.rollout.num_envs = 5;
  auto records = RunRollout(*task, random, options.rollout);
  ASSERT_TRUE(records.ok());
  std::vector<int> successful_lengths;
  for (const EpisodeRecord& r : *records) {
    if (r.success) successful_lengths.push_back(r.length);
  }
  ASSERT_GT(successful_lengths.size(), 0u);
  ASSERT_LT(successful_lengths.size(), records->size()) << "need a mix of outcomes";
  auto summary = CollectDataset(*task, random, options);
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_EQ(summary->episodes_run, 12);
  EXPECT_EQ(summary->episodes_written, static_cast<int64_t>(successful_lengths.size()));
  EXPECT_EQ(summary->successes, summary->episodes_written);
  auto reader = Open(options.output_path);
  ASSERT_NE(reader, nullptr);
  std::vector<int> written_lengths;
  for (const data::DemoLayout& demo : reader->layout().demos) {
    written_lengths.push_back(static_cast<int>(demo.num_samples));
  }
  EXPECT_EQ(written_lengths, successful_lengths);

  options.output_path = dir + "/none.hdf5";
  options.rollout.max_steps = 400;
  options.rollout.num_episodes = 2;
  auto none = CollectDataset(*task, random, options);
  EXPECT_EQ(none.status().code(), absl::StatusCode::kFailedPrecondition) << none.status();
  EXPECT_FALSE(PathExists(options.output_path));
}

TEST(CollectTest, ATaskWithANanRewardWritesNoDataset) {
  const std::string plugin = testing::BuildTestPlugin("collect_nan_reward", "-DNAN_REWARD_AFTER=0.045");
  TaskRegistry registry;
  ASSERT_TRUE(LoadTaskPlugin(plugin, &registry).ok());
  auto task = registry.Create("test-plugin");
  ASSERT_TRUE(task.ok()) << task.status();
  RandomPolicy random(**task, 3);
  const std::string dir = roboloop::testing::MakeTempDir("collectnan");
  CollectOptions options = Options(dir + "/nan.hdf5", 3, 0);
  options.policy_reference = "random";
  auto summary = CollectDataset(**task, random, options);
  EXPECT_EQ(summary.status().code(), absl::StatusCode::kFailedPrecondition) << summary.status();
  EXPECT_THAT(summary.status().message(), HasSubstr("task test-plugin returned a non-finite reward in episode 2"));
  EXPECT_THAT(summary.status().message(), HasSubstr("the reward of step 4 is nan"));
  EXPECT_FALSE(PathExists(options.output_path));
  EXPECT_TRUE(ListDir(dir).value().empty()) << "no partial file is left behind";
}

// Relabelling an expert's own dataset gives back its actions bit for bit: every expert is a
// function of the observation only, and the observation is a function of the state.
TEST(RelabelTest, ReproducesEachExpertsActionsBitwise) {
  for (const char* name :
       {"cartpole-balance", "cartpole-swingup", "pendulum-swingup", "reacher", "push"}) {
    SCOPED_TRACE(name);
    auto task = testing::BuiltinTask(name);
    auto expert = task->MakeExpert();
    ASSERT_TRUE(expert.ok()) << expert.status();
    const std::string dir = roboloop::testing::MakeTempDir("relabel");
    auto collected = CollectDataset(*task, **expert, Options(dir + "/in.hdf5", 2, 120));
    ASSERT_TRUE(collected.ok()) << collected.status();
    auto relabelled = RelabelDataset(*task, **expert, Paths(dir + "/in.hdf5", dir + "/out.hdf5"));
    ASSERT_TRUE(relabelled.ok()) << relabelled.status();
    auto in = Open(dir + "/in.hdf5");
    auto out = Open(dir + "/out.hdf5");
    ASSERT_TRUE(in && out);
    ASSERT_EQ(out->layout().demos.size(), 2u);
    for (const data::DemoLayout& demo : in->layout().demos) {
      auto a = in->ReadEpisode(demo.name);
      auto b = out->ReadEpisode(demo.name);
      ASSERT_TRUE(a.ok() && b.ok());
      for (const auto& [feature, array] : *a) {
        EXPECT_EQ(array.bytes, b->at(feature).bytes) << demo.name << " " << feature;
      }
    }
    EXPECT_EQ(out->layout().lineage.operation, "relabel");
    ASSERT_EQ(out->layout().lineage.parents.size(), 1u);
    EXPECT_EQ(out->layout().lineage.parents[0],
              (data::ParentRef{"dataset", dir + "/in.hdf5", collected->sha256}));
  }
}

TEST(RelabelTest, RandomEpisodesGetTheExpertsActions) {
  auto task = testing::BuiltinTask("cartpole-swingup");
  RandomPolicy random(*task, 9);
  auto expert = task->MakeExpert();
  ASSERT_TRUE(expert.ok());
  const std::string dir = roboloop::testing::MakeTempDir("relabelrandom");
  ASSERT_TRUE(CollectDataset(*task, random, Options(dir + "/random.hdf5", 2, 50)).ok());
  auto relabelled = RelabelDataset(*task, **expert, Paths(dir + "/random.hdf5", dir + "/dagger.hdf5"));
  ASSERT_TRUE(relabelled.ok()) << relabelled.status();
  EXPECT_EQ(relabelled->total_steps, 100);
  auto in = Open(dir + "/random.hdf5");
  auto out = Open(dir + "/dagger.hdf5");
  ASSERT_TRUE(in && out);
  for (const data::DemoLayout& demo : in->layout().demos) {
    auto a = in->ReadEpisode(demo.name);
    auto b = out->ReadEpisode(demo.name);
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_EQ(a->at("states").bytes, b->at("states").bytes);
    EXPECT_EQ(a->at("obs/position").bytes, b->at("obs/position").bytes);
    EXPECT_NE(a->at("actions").bytes, b->at("actions").bytes);
    // Cartpole observations are exact functions of qpos/qvel, so the expert applied to the
    // stored observations must give the relabelled actions.
    std::vector<float> obs;
    for (const std::vector<float>& row : CartpoleObsRows(*a)) obs.insert(obs.end(), row.begin(), row.end());
    std::vector<float> expected(demo.num_samples);
    std::vector<int64_t> episode(demo.num_samples, demo.index);
    std::vector<int32_t> step(demo.num_samples, 0);
    PolicyBatch batch{obs.data(), episode.data(), step.data(), static_cast<int>(demo.num_samples)};
    ASSERT_TRUE((*expert)->Act(batch, expected.data()).ok());
    auto actual = b->at("actions").Values<float>();
    EXPECT_EQ(std::vector<float>(actual.begin(), actual.end()), expected);
  }
  nlohmann::json env_args = nlohmann::json::parse(out->layout().env_args_json);
  EXPECT_EQ(env_args["relabelled_by"], "cartpole-swingup-expert");
  EXPECT_EQ(env_args["env_kwargs"]["policy"], "expert");
}

TEST(RelabelTest, RefusesDatasetsWithoutMatchingStates) {
  const std::string dir = roboloop::testing::MakeTempDir("relabelbad");
  auto cartpole = testing::BuiltinTask("cartpole-balance");
  auto reacher = testing::BuiltinTask("reacher");
  auto expert = reacher->MakeExpert();
  ASSERT_TRUE(expert.ok());
  auto cartpole_expert = cartpole->MakeExpert();
  ASSERT_TRUE(CollectDataset(*cartpole, **cartpole_expert, Options(dir + "/cp.hdf5", 1, 10)).ok());
  auto wrong_task = RelabelDataset(*reacher, **expert, Paths(dir + "/cp.hdf5", dir + "/x.hdf5"));
  EXPECT_EQ(wrong_task.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(wrong_task.status().message(), HasSubstr("cp.hdf5: demo_0"));
  EXPECT_THAT(wrong_task.status().message(), HasSubstr("task reacher needs float64"));
  EXPECT_FALSE(PathExists(dir + "/x.hdf5"));

  data::DatasetWriter::Options options;
  options.path = dir + "/nostates.hdf5";
  options.env_args_json = R"({"env_name":"cartpole-balance"})";
  auto writer = data::DatasetWriter::Create(options);
  ASSERT_TRUE(writer.ok());
  data::Episode episode;
  episode["obs/position"] = data::Array::From<float>({2, 3}, std::vector<float>(6, 0.5f));
  episode["actions"] = data::Array::From<float>({2, 1}, std::vector<float>{0.1f, 0.2f});
  ASSERT_TRUE((*writer)->WriteEpisode(episode).ok());
  ASSERT_TRUE((*writer)->Close().ok());
  auto no_states = RelabelDataset(*cartpole, **cartpole_expert, Paths(dir + "/nostates.hdf5", dir + "/y.hdf5"));
  EXPECT_THAT(no_states.status().message(), HasSubstr("has no 'states'"));
  EXPECT_EQ(*DatasetTaskName(dir + "/nostates.hdf5"), "cartpole-balance");
  auto missing = RelabelDataset(*cartpole, **cartpole_expert, Paths(dir + "/missing.hdf5", dir + "/z.hdf5"));
  EXPECT_THAT(missing.status().message(), HasSubstr("missing.hdf5"));
}

}  // namespace
}  // namespace roboloop::sim
