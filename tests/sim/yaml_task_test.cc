// Declarative YAML tasks (issue 4, req 2c): the reference example loads, resolves its
// names, rolls out and can succeed; bad files are refused with the file, line and name.
#include <fstream>
#include <string>

#include "gtest/gtest.h"
#include "sim/env.h"
#include "sim/yaml_task.h"

namespace roboloop::sim {
namespace {

const std::string kExample = ROBOLOOP_SOURCE_DIR "/configs/tasks/point_reach.yaml";

// A proportional-derivative controller on the example's observations, to show success
// is reachable (obs: puck[3], x, y, velocity[3], target[3]).
void DriveToTarget(const float* obs, float* action) {
  for (int k = 0; k < 2; ++k) {
    const float value = 8.0f * (obs[8 + k] - obs[k]) - 1.0f * obs[5 + k];
    action[k] = value;
  }
}

TEST(YamlTaskTest, LoadsTheExampleAndItsSpecs) {
  auto task = LoadYamlTask(kExample);
  ASSERT_TRUE(task.ok()) << task.status();
  EXPECT_EQ((*task)->name(), "yaml-point-reach");
  EXPECT_EQ(DescribeObsSpec((*task)->obs_spec()),
            "{puck[3], x[1], y[1], velocity[3], target[3]}");
  EXPECT_EQ((*task)->action_spec().size(), 2);
  EXPECT_EQ((*task)->max_steps(), 100);
}

TEST(YamlTaskTest, ControllerSucceedsAndIdleFails) {
  auto task = LoadYamlTask(kExample);
  ASSERT_TRUE(task.ok()) << task.status();
  auto env = Env::Create(task->get(), EnvOptions());
  ASSERT_TRUE(env.ok());
  std::vector<float> obs((*task)->obs_spec().size());
  float action[2];
  for (bool drive : {true, false}) {
    ASSERT_TRUE((*env)->Reset(EpisodeSeed(3, 0), 0, obs.data()).ok());
    EXPECT_NE(obs[8], 0.0f);  // a goal was sampled
    while (!(*env)->done()) {
      if (drive) {
        DriveToTarget(obs.data(), action);
      } else {
        action[0] = action[1] = 0;
      }
      (*env)->Step(action, 2, obs.data());
    }
    EXPECT_EQ((*env)->success(), drive);
  }
}

std::string WriteTask(const std::string& name, const std::string& body) {
  const std::string path = ::testing::TempDir() + "/" + name + ".yaml";
  std::ofstream(path) << "name: broken\nmjcf: " ROBOLOOP_SOURCE_DIR
                         "/configs/tasks/models/point_reach.xml\ncontrol_substeps: 1\n"
                         "max_steps: 10\n" << body;
  return path;
}

TEST(YamlTaskTest, UnknownSiteIsRefusedWithFileAndLine) {
  const std::string path = WriteTask("unknown_site", R"(observations:
  - {name: hand, site_pos: hand}
success:
  condition: {type: alive_bonus, above: 0}
  rule: final_steps
  steps: 1
)");
  auto task = LoadYamlTask(path);
  ASSERT_FALSE(task.ok());
  EXPECT_NE(task.status().message().find(path + ":6"), std::string::npos) << task.status();
  EXPECT_NE(task.status().message().find("no site named 'hand'"), std::string::npos) << task.status();
}

TEST(YamlTaskTest, UnknownSensorBodyAndKeyAreRefused) {
  const std::string success = "success: {condition: {type: alive_bonus, above: 0}, rule: every_step}\n";
  auto sensor = LoadYamlTask(WriteTask("sensor", "observations: [{name: s, sensor: gyro}]\n" + success));
  EXPECT_NE(sensor.status().message().find("no sensor named 'gyro'"), std::string::npos) << sensor.status();
  auto body = LoadYamlTask(WriteTask("body", "observations: [{name: b, body_pos: torso}]\n" + success));
  EXPECT_NE(body.status().message().find("no body named 'torso'"), std::string::npos) << body.status();
  auto key = LoadYamlTask(WriteTask("key", "observations: [{name: b, body_pos: puck}]\nrewards: []\n" + success));
  EXPECT_NE(key.status().message().find("unknown key 'rewards'"), std::string::npos) << key.status();
}

TEST(YamlTaskTest, AMissingFileIsNamedWithTheReason) {
  auto task = LoadYamlTask(::testing::TempDir() + "/no_such_task.yaml");
  ASSERT_FALSE(task.ok());
  EXPECT_NE(task.status().message().find("no_such_task.yaml: No such file or directory"), std::string::npos)
      << task.status();
}

// A success window longer than the episode could never be met: every evaluation would score 0.
TEST(YamlTaskTest, ASuccessWindowLongerThanTheHorizonIsRefused) {
  const std::string observations = "observations: [{name: b, body_pos: puck}]\n";
  for (const std::string rule : {"held_for", "final_steps"}) {
    const std::string path = WriteTask("window_" + rule, observations + "success:\n  condition: {type: alive_bonus, "
                                                      "above: 0}\n  rule: " + rule + "\n  steps: 11\n");
    auto task = LoadYamlTask(path);
    ASSERT_FALSE(task.ok()) << rule;
    EXPECT_NE(task.status().message().find(path + ":9: success.steps: 11 steps exceed max_steps 10"), std::string::npos)
        << task.status();
  }
  auto fits = LoadYamlTask(WriteTask("window_fits", observations + "success: {condition: {type: alive_bonus, "
                                                                   "above: 0}, rule: held_for, steps: 10}\n"));
  EXPECT_TRUE(fits.ok()) << fits.status();
}

TEST(YamlTaskTest, AKeyGivenTwiceIsRefusedWithBothLines) {
  const std::string path = WriteTask("twice", "observations: [{name: b, body_pos: puck}]\nmax_steps: 20\n"
                                              "success: {condition: {type: alive_bonus, above: 0}, rule: every_step}\n");
  auto task = LoadYamlTask(path);
  EXPECT_NE(task.status().message().find(path + ":6: max_steps: duplicate key 'max_steps' (given at line 4)"),
            std::string::npos)
      << task.status();
}

TEST(YamlTaskTest, NonFiniteNumbersAreRefusedWithFileAndLine) {
  const std::string path = WriteTask("non_finite", R"(goals:
  - {name: target, mocap_body: target, low: [-0.2, .nan, 0], high: [0.2, 0.2, 0]}
observations:
  - {name: x, joint_qpos: x}
reward:
  - {type: site_goal_distance, site: tip, goal: target, weight: .nan}
  - {type: alive_bonus, weight: -.inf}
success:
  condition: {type: alive_bonus, above: .inf}
  rule: final_steps
  steps: 1
)");
  const absl::Status status = LoadYamlTask(path).status();
  ASSERT_FALSE(status.ok());
  const std::string finite = ": is not finite (NaN or infinity)";
  for (const std::string& line : {path + ":6: goals[0].low" + finite, path + ":10: reward[0].weight" + finite,
                                  path + ":11: reward[1].weight" + finite,
                                  path + ":13: success.condition.above" + finite}) {
    EXPECT_NE(status.message().find(line), std::string::npos) << line << "\n" << status;
  }
  EXPECT_EQ(status.message().find("low must not exceed high"), std::string::npos) << status;
}

TEST(YamlTaskTest, RegistersUnderItsName) {
  TaskRegistry registry;
  ASSERT_TRUE(RegisterYamlTask(kExample, &registry).ok());
  EXPECT_TRUE(registry.Create("yaml-point-reach").ok());
  const absl::Status again = RegisterYamlTask(kExample, &registry);
  EXPECT_EQ(again.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_NE(again.message().find("YAML task " + kExample + ": task 'yaml-point-reach' is already registered"),
            std::string::npos) << again;
}

TEST(YamlTaskTest, NamesThatCannotBeDatasetKeysAreRefusedWithFileAndLine) {
  const std::string path = ::testing::TempDir() + "/bad_names.yaml";
  std::ofstream(path) << "name: my/task\nmjcf: " ROBOLOOP_SOURCE_DIR "/configs/tasks/models/point_reach.xml\n"
                         "control_substeps: 1\nmax_steps: 10\nobservations:\n"
                         "  - {name: \"a/b\", joint_qpos: x}\n  - {name: c d, joint_qpos: y}\n"
                         "success: {condition: {type: alive_bonus, above: 0}, rule: every_step}\n";
  const absl::Status status = LoadYamlTask(path).status();
  ASSERT_FALSE(status.ok());
  for (const std::string& line : {path + ":1: name: task name 'my/task' cannot be a dataset key",
                                  path + ":6: observations[0].name: observation 'a/b' cannot be a dataset key",
                                  path + ":7: observations[1].name: observation 'c d' cannot be a dataset key"}) {
    EXPECT_NE(status.message().find(line), std::string::npos) << line << "\n" << status;
  }
}

TEST(YamlTaskTest, AModelWithoutActuatorsIsRefusedWithFileAndLine) {
  const std::string dir = ::testing::TempDir();
  std::ofstream(dir + "/unactuated.xml") << "<mujoco><worldbody><body name='puck'><joint name='x' type='slide'/>"
                                            "<geom size='0.1'/></body></worldbody></mujoco>";
  const std::string path = dir + "/unactuated.yaml";
  std::ofstream(path) << "name: unactuated\nmjcf: unactuated.xml\ncontrol_substeps: 1\nmax_steps: 10\n"
                         "observations: [{name: x, joint_qpos: x}]\n"
                         "success: {condition: {type: alive_bonus, above: 0}, rule: every_step}\n";
  const absl::Status status = LoadYamlTask(path).status();
  EXPECT_NE(status.message().find(path + ":2: mjcf: unactuated.xml: the model has no actuators"), std::string::npos)
      << status;
}

// A task over MJCF that MuJoCo 2 refuses (gravcomp, actdim, actearly; issue 21, req 4): it loads,
// gravity compensation holds the idle puck in place under gravity, and a controller reaches
// the target (obs: puck[3], velocity[3], target[3]).
TEST(YamlTaskTest, MujocoThreeModelLoadsHoversAndRollsOut) {
  auto task = LoadYamlTask(ROBOLOOP_SOURCE_DIR "/configs/tasks/hover_reach.yaml");
  ASSERT_TRUE(task.ok()) << task.status();
  EXPECT_EQ(DescribeObsSpec((*task)->obs_spec()), "{puck[3], velocity[3], target[3]}");
  ASSERT_EQ((*task)->model()->na, 3);
  EXPECT_EQ((*task)->model()->body_gravcomp[1], 1.0);
  auto env = Env::Create(task->get(), EnvOptions());
  ASSERT_TRUE(env.ok());
  std::vector<float> obs((*task)->obs_spec().size());
  float action[3];
  for (bool drive : {true, false}) {
    ASSERT_TRUE((*env)->Reset(EpisodeSeed(5, 0), 0, obs.data()).ok());
    const float start_z = obs[2];
    while (!(*env)->done()) {
      for (int k = 0; k < 3; ++k) {
        action[k] = drive ? 8.0f * (obs[6 + k] - obs[k]) - 1.0f * obs[3 + k] : 0.0f;
      }
      (*env)->Step(action, 3, obs.data());
    }
    EXPECT_EQ((*env)->success(), drive);
    if (!drive) {
      EXPECT_EQ(obs[2], start_z);  // gravity compensated: no fall
    }
  }
}

}  // namespace
}  // namespace roboloop::sim
