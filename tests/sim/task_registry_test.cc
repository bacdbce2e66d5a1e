// The task registry (issue 4, req 1): builtins register, duplicates are rejected, an
// unknown name lists the known ones, names that cannot be dataset keys are refused, and every
// built-in builds with consistent specs.
#include <memory>

#include "gtest/gtest.h"
#include "sim/builtin_tasks.h"
#include "tests/sim/test_tasks.h"

namespace roboloop::sim {
namespace {

TEST(TaskRegistryTest, RegistersTheBuiltinsAndRejectsDuplicates) {
  TaskRegistry registry;
  ASSERT_TRUE(RegisterBuiltins(&registry).ok());
  EXPECT_EQ(registry.Names(), (std::vector<std::string>{"cartpole-balance", "cartpole-swingup",
                                                       "humanoid-stand", "pendulum-swingup",
                                                       "push", "reach-vision", "reacher"}));
  EXPECT_EQ(RegisterBuiltins(&registry).code(), absl::StatusCode::kAlreadyExists);
}

TEST(TaskRegistryTest, UnknownNameListsKnownTasks) {
  TaskRegistry registry;
  ASSERT_TRUE(RegisterBuiltins(&registry).ok());
  auto task = registry.Create("cartpole-juggle");
  EXPECT_EQ(task.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(task.status().message().find("cartpole-juggle"), std::string::npos);
  EXPECT_NE(task.status().message().find("pendulum-swingup"), std::string::npos);
}

TEST(TaskRegistryTest, MissingModelFileIsAClearError) {
  TaskRegistry registry;
  BuiltinTaskOptions options;
  options.models_dir = "/nonexistent/models";
  ASSERT_TRUE(RegisterBuiltins(&registry, options).ok());
  auto task = registry.Create("reacher");
  ASSERT_FALSE(task.ok());
  EXPECT_NE(task.status().message().find("/nonexistent/models/reacher.xml"), std::string::npos)
      << task.status();
}

// A do-nothing task whose observation key is `key`, for the registry's name checks.
class KeyedTask : public Task {
 public:
  explicit KeyedTask(const std::string& key) : Task(Definition(key)) {}
  void Reset(const mjModel*, mjData*, Rng&) const override {}
  void Observe(const mjModel*, const mjData*, float* obs) const override { obs[0] = 0; }
  double Reward(const mjModel*, const mjData*) const override { return 0; }
  bool SuccessCondition(const mjModel*, const mjData*) const override { return false; }

 private:
  static TaskDefinition Definition(const std::string& key) {
    TaskDefinition def;
    def.name = "keyed";
    def.model = LoadModelFromString("keyed", "<mujoco/>").value();
    def.obs_spec.keys.push_back({key, {1}});
    return def;
  }
};

TEST(TaskRegistryTest, NamesThatCannotBeDatasetKeysAreRefused) {
  TaskRegistry registry;
  auto keyed = [](const std::string& key) {
    return [key]() -> absl::StatusOr<std::unique_ptr<Task>> { return std::make_unique<KeyedTask>(key); };
  };
  const absl::Status slash = registry.Register("my/task", "", keyed("x"));
  EXPECT_EQ(slash.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(slash.message().find("task name 'my/task' cannot be a dataset key"), std::string::npos) << slash;
  ASSERT_TRUE(registry.Register("keyed", "", keyed("a b")).ok());
  const absl::Status key = registry.Create("keyed").status();
  EXPECT_EQ(key.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(key.message().find("task keyed: observation 'a b' cannot be a dataset key"), std::string::npos) << key;
  for (const std::string good : {"cartpole-swingup", "v1.2_final", "0a"}) {
    EXPECT_TRUE(CheckDatasetName(good, "task name").ok()) << good;
  }
  for (const std::string bad : {"", ".hidden", "a/b", "a b", "caf\xc3\xa9", "a:b"}) {
    EXPECT_FALSE(CheckDatasetName(bad, "task name").ok()) << bad;
  }
}

class BuiltinSpecTest : public ::testing::TestWithParam<std::string> {};

TEST_P(BuiltinSpecTest, SpecsMatchTheModel) {
  auto task = testing::BuiltinTask(GetParam());
  ASSERT_NE(task, nullptr);
  EXPECT_EQ(task->name(), GetParam());
  EXPECT_EQ(task->action_spec().size(), task->model()->nu);
  EXPECT_GT(task->obs_spec().size(), 0);
  // 50 Hz, but the humanoid runs at Gymnasium's rate (timestep 0.003 s, frame skip 5) and
  // reach-vision at 20 Hz.
  const double dt = GetParam() == "humanoid-stand" ? 0.015 : GetParam() == "reach-vision" ? 0.05 : 0.02;
  EXPECT_NEAR(task->control_dt(), dt, 1e-12);
  EXPECT_FALSE(task->description().empty());
}

INSTANTIATE_TEST_SUITE_P(Builtins, BuiltinSpecTest,
                         ::testing::Values("cartpole-balance", "cartpole-swingup",
                                           "pendulum-swingup", "reacher", "push",
                                           "reach-vision", "humanoid-stand"));

}  // namespace
}  // namespace roboloop::sim
