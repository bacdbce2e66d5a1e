// Declarative YAML tasks over foreign models without hand edits (issue 26, item 4): a goal
// moved by slide joints, body-to-body distances, body position components in conditions,
// every problem of a file reported at once, and MJCF compile errors naming the YAML task.
#include <cmath>
#include <fstream>
#include <string>

#include "gtest/gtest.h"
#include "sim/env.h"
#include "sim/mujoco_guard.h"
#include "sim/yaml_task.h"

namespace roboloop::sim {
namespace {

const std::string kTestdata = ROBOLOOP_SOURCE_DIR "/tests/testdata/yaml_task";
const std::string kSlideGoal = kTestdata + "/slide_goal.yaml";

// A task with one mjData, reset with episode seed `seed` and forwarded.
struct Episode {
  std::unique_ptr<Task> task;
  DataPtr data;

  explicit Episode(uint64_t seed) {
    auto loaded = LoadYamlTask(kSlideGoal);
    EXPECT_TRUE(loaded.ok()) << loaded.status();
    if (!loaded.ok()) return;
    task = std::move(*loaded);
    data.reset(mj_makeData(task->model()));
    Rng rng(seed);
    task->Reset(task->model(), data.get(), rng);
    mj_forward(task->model(), data.get());
  }
  const mjtNum* BodyPos(const char* name) const {
    return &data->xpos[3 * mj_name2id(task->model(), mjOBJ_BODY, name)];
  }
  std::vector<float> Observe() const {
    std::vector<float> obs(task->obs_spec().size());
    task->Observe(task->model(), data.get(), obs.data());
    return obs;
  }
};

TEST(YamlTaskForeignModelTest, SlideJointGoalIsPlacedThroughItsJoints) {
  Episode a(11), b(12);
  ASSERT_TRUE(a.task && b.task);
  const mjtNum* target = a.BodyPos("target");
  EXPECT_NE(target[0], b.BodyPos("target")[0]);  // sampled per episode
  EXPECT_GE(target[0], -0.3);
  EXPECT_LE(target[0], 0.3);
  EXPECT_GE(target[1], -0.2);
  EXPECT_LE(target[1], 0.2);
  EXPECT_NEAR(target[2], 0.05, 1e-12);
  const std::vector<float> obs = a.Observe();  // torso[3], target[3]
  for (int k = 0; k < 3; ++k) EXPECT_NEAR(obs[3 + k], target[k], 1e-6) << "axis " << k;
}

TEST(YamlTaskForeignModelTest, BodyToBodyDistanceRewardMatchesMjData) {
  Episode episode(21);
  ASSERT_TRUE(episode.task);
  const mjModel* m = episode.task->model();
  episode.data->qpos[m->jnt_qposadr[mj_name2id(m, mjOBJ_JOINT, "torso_x")]] = 0.25;
  episode.data->qpos[m->jnt_qposadr[mj_name2id(m, mjOBJ_JOINT, "torso_y")]] = -0.1;
  mj_forward(m, episode.data.get());
  const mjtNum* torso = episode.BodyPos("torso");
  const mjtNum* target = episode.BodyPos("target");
  const double distance = std::hypot(torso[0] - target[0], torso[1] - target[1], torso[2] - target[2]);
  EXPECT_GT(distance, 0.05);
  EXPECT_NEAR(episode.task->Reward(m, episode.data.get()), -distance, 1e-12);
}

TEST(YamlTaskForeignModelTest, SucceedsAtTheSlideGoalAndTerminatesOnTorsoX) {
  Episode episode(31);
  ASSERT_TRUE(episode.task);
  const mjModel* m = episode.task->model();
  mjData* d = episode.data.get();
  const int x = m->jnt_qposadr[mj_name2id(m, mjOBJ_JOINT, "torso_x")];
  const int y = m->jnt_qposadr[mj_name2id(m, mjOBJ_JOINT, "torso_y")];
  EXPECT_FALSE(episode.task->SuccessCondition(m, d));
  d->qpos[x] = episode.BodyPos("target")[0];
  d->qpos[y] = episode.BodyPos("target")[1];
  mj_forward(m, d);
  EXPECT_TRUE(episode.task->SuccessCondition(m, d));  // torso_site is 0.02 above the target
  EXPECT_FALSE(episode.task->Terminated(m, d));
  d->qpos[x] = 1.01;
  mj_forward(m, d);
  EXPECT_TRUE(episode.task->Terminated(m, d));
}

// Through an Env (reset, physics steps, success rule): a proportional controller on the
// observations (torso[3], target[3]) reaches the slide-joint goal; an idle torso does not.
TEST(YamlTaskForeignModelTest, ControllerReachesTheSlideGoalInAnEnv) {
  auto task = LoadYamlTask(kSlideGoal);
  ASSERT_TRUE(task.ok()) << task.status();
  auto env = Env::Create(task->get(), EnvOptions());
  ASSERT_TRUE(env.ok()) << env.status();
  std::vector<float> obs((*task)->obs_spec().size());
  float action[2];
  for (bool drive : {true, false}) {
    ASSERT_TRUE((*env)->Reset(EpisodeSeed(7, 0), 0, obs.data()).ok());
    while (!(*env)->done()) {
      for (int k = 0; k < 2; ++k) action[k] = drive ? 4.0f * (obs[3 + k] - obs[k]) : 0.0f;
      (*env)->Step(action, 2, obs.data());
    }
    EXPECT_EQ((*env)->success(), drive);
  }
}

std::string WriteFile(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path) << text;
  return path;
}

// Gymnasium's reacher.xml, unmodified: its target moves by slide joints (with a `ref`), and
// the fingertip is a body without a site.
TEST(YamlTaskForeignModelTest, UnmodifiedGymnasiumReacherTargetIsAGoal) {
  const std::string path = WriteFile("gym_reacher.yaml", R"(name: gym-reacher
mjcf: )" ROBOLOOP_GYMNASIUM_ASSETS R"(/reacher.xml
control_substeps: 2
max_steps: 50
goals: [{name: target, body: target, low: [-0.2, -0.2, 0.01], high: [0.2, 0.2, 0.01]}]
observations: [{name: target, goal: target}]
reward: [{type: distance, from: {body: fingertip}, to: {goal: target}, weight: -1}]
success: {condition: {type: distance, from: {body: fingertip}, to: {body: target}, below: 0.01}, rule: every_step}
)");
  auto task = LoadYamlTask(path);
  ASSERT_TRUE(task.ok()) << task.status();
  const mjModel* m = (*task)->model();
  DataPtr d(mj_makeData(m));
  Rng rng(5);
  (*task)->Reset(m, d.get(), rng);
  mj_forward(m, d.get());
  const mjtNum* target = &d->xpos[3 * mj_name2id(m, mjOBJ_BODY, "target")];
  const mjtNum* fingertip = &d->xpos[3 * mj_name2id(m, mjOBJ_BODY, "fingertip")];
  float obs[3];
  (*task)->Observe(m, d.get(), obs);
  for (int k = 0; k < 3; ++k) EXPECT_NEAR(obs[k], target[k], 1e-6) << "axis " << k;
  EXPECT_NE(target[0], 0.1);  // moved from the model's rest position
  EXPECT_LE(std::abs(target[0]), 0.2);
  EXPECT_LE(std::abs(target[1]), 0.2);
  const double distance = std::hypot(fingertip[0] - target[0], fingertip[1] - target[1], fingertip[2] - target[2]);
  EXPECT_NEAR((*task)->Reward(m, d.get()), -distance, 1e-9);
}

// Gymnasium's hopper.xml, unmodified: "x of the torso above 1" ends the episode.
TEST(YamlTaskForeignModelTest, UnmodifiedGymnasiumHopperTerminatesOnTorsoX) {
  const std::string path = WriteFile("gym_hopper.yaml", R"(name: gym-hopper
mjcf: )" ROBOLOOP_GYMNASIUM_ASSETS R"(/hopper.xml
control_substeps: 4
max_steps: 100
observations: [{name: torso, body_pos: torso}]
success: {condition: {type: body_position, body: torso, component: z, above: 0.8}, rule: every_step}
termination: [{type: body_position, body: torso, component: x, above: 1.0}]
)");
  auto task = LoadYamlTask(path);
  ASSERT_TRUE(task.ok()) << task.status();
  const mjModel* m = (*task)->model();
  DataPtr d(mj_makeData(m));
  const int rootx = m->jnt_qposadr[mj_name2id(m, mjOBJ_JOINT, "rootx")];
  for (double x : {0.9, 1.1}) {
    d->qpos[rootx] = x;
    mj_forward(m, d.get());
    const int torso = mj_name2id(m, mjOBJ_BODY, "torso");
    EXPECT_EQ((*task)->Terminated(m, d.get()), x > 1.0) << "torso x " << d->xpos[3 * torso];
  }
  EXPECT_TRUE((*task)->SuccessCondition(m, d.get()));
}

void ExpectMentions(const absl::Status& status, const std::string& text) {
  EXPECT_NE(status.message().find(text), std::string::npos) << "no '" << text << "' in:\n" << status;
}

TEST(YamlTaskForeignModelTest, ReportsEveryProblemOfAFileAtOnce) {
  const std::string path = WriteFile("many_problems.yaml", "name: many\nmjcf: " + kTestdata + R"(/slide_goal.xml
control_substeps: fast
max_steps: 10
goals:
  - {name: target, body: target, low: [0, 0, 0.05], high: [0.1, 0.1, 0.05], color: red}
observations:
  - {name: hand, site_pos: hand}
reward:
  - {type: distance, from: {body: torso}, to: {body: arm}, weight: -1}
success:
  condition: {type: body_position, body: torso, component: w, above: 1}
  rule: final_steps
)");
  auto task = LoadYamlTask(path);
  ASSERT_FALSE(task.ok());
  const absl::Status& status = task.status();
  ExpectMentions(status, "YAML task " + path + " (task many): 6 problems:");
  ExpectMentions(status, path + ":3: control_substeps: has the wrong type; expected an integer");
  ExpectMentions(status, path + ":6: goals[0].color: unknown key 'color'");
  ExpectMentions(status, path + ":8: observations[0].site_pos: the model has no site named 'hand'");
  ExpectMentions(status, path + ":10: reward[0].to.body: the model has no body named 'arm'");
  ExpectMentions(status, path + ":12: success.condition.component: unknown component 'w'");
  ExpectMentions(status, path + ":12: success: missing key 'steps'");
}

TEST(YamlTaskForeignModelTest, SlideGoalWithoutAJointAlongARandomisedAxisIsRefused) {
  const std::string path = WriteFile("goal_axes.yaml", "name: axes\nmjcf: " + kTestdata + R"(/slide_goal.xml
control_substeps: 1
max_steps: 10
goals:
  - {name: target, body: target, low: [0, 0, 0], high: [0.1, 0.1, 0.1]}
  - {name: fixed, body: world, low: [0, 0, 0], high: [0, 0, 0]}
  - {name: mocap, mocap_body: target, low: [0, 0, 0], high: [0, 0, 0]}
observations:
  - {name: target, goal: target}
success: {condition: {type: alive_bonus, above: 0}, rule: every_step}
)");
  auto task = LoadYamlTask(path);
  ASSERT_FALSE(task.ok());
  ExpectMentions(task.status(), "(task axes): 3 problems");
  ExpectMentions(task.status(),
                 "goals[0]: goal 'target': the goal is randomised along z but body 'target' has no slide "
                 "joint along z");
  ExpectMentions(task.status(),
                 "goals[1]: goal 'fixed': body 'world' is neither a mocap body nor moved by slide joints");
  ExpectMentions(task.status(), "goals[2]: goal 'mocap': body 'target' is not a mocap body");
}

TEST(YamlTaskForeignModelTest, HingedGoalBodyIsRefusedNamingBodyAndJoint) {
  const std::string xml = WriteFile("hinged_goal.xml", R"(<mujoco>
  <worldbody>
    <body name="target"><joint name="spin" type="hinge"/><geom size="0.1"/></body>
  </worldbody>
</mujoco>
)");
  const std::string path = WriteFile("hinged_goal.yaml", "name: hinged\nmjcf: " + xml + R"(
control_substeps: 1
max_steps: 10
goals: [{name: target, body: target, low: [0, 0, 0], high: [0, 0, 0]}]
observations: [{name: target, goal: target}]
success: {condition: {type: alive_bonus, above: 0}, rule: every_step}
)");
  auto task = LoadYamlTask(path);
  ASSERT_FALSE(task.ok());
  ExpectMentions(task.status(), "(task hinged)");
  ExpectMentions(task.status(), "body 'target' has joint 'spin' that is not a slide joint");
}

TEST(YamlTaskForeignModelTest, BrokenMjcfErrorNamesTheYamlTask) {
  const std::string xml = WriteFile("broken.xml",
                                    "<mujoco>\n  <worldbody>\n    <body name=\"a\">\n"
                                    "  </worldbody>\n</mujoco>\n");
  const std::string path = WriteFile("broken_mjcf.yaml", "name: broken-mjcf\nmjcf: " + xml + R"(
control_substeps: 1
max_steps: 10
observations: [{name: a, body_pos: a}]
success: {condition: {type: alive_bonus, above: 0}, rule: every_step}
)");
  auto task = LoadYamlTask(path);
  ASSERT_FALSE(task.ok());
  ExpectMentions(task.status(), "YAML task " + path + " (task broken-mjcf): 1 problem:");
  ExpectMentions(task.status(), path + ":2: mjcf: MJCF " + xml + " failed to compile");
  ExpectMentions(task.status(), "Line number=3: XMLElement name=body");  // MuJoCo's XML line, on the same line
}

}  // namespace
}  // namespace roboloop::sim
