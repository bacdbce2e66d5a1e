// The task definition hash that evaluation protocols pin: stable for one definition, different
// for different tasks and for an edited YAML task.
#include "sim/task_definition_hash.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "sim/builtin_tasks.h"
#include "sim/task_registry.h"
#include "sim/yaml_task.h"

namespace roboloop::sim {
namespace {

const std::string kExample = ROBOLOOP_SOURCE_DIR "/configs/tasks/point_reach.yaml";

TEST(TaskDefinitionHashTest, StableForOneDefinitionAndDistinctAcrossTasks) {
  TaskRegistry registry;
  BuiltinTaskOptions builtin;
  builtin.models_dir = ROBOLOOP_SOURCE_DIR "/configs/tasks/models";
  ASSERT_TRUE(RegisterBuiltins(&registry, builtin).ok());
  auto swingup = registry.Create("cartpole-swingup");
  auto again = registry.Create("cartpole-swingup");
  auto balance = registry.Create("cartpole-balance");
  ASSERT_TRUE(swingup.ok() && again.ok() && balance.ok());
  const std::string hash = TaskDefinitionHash(**swingup, "s");
  EXPECT_EQ(hash.size(), 64u);
  EXPECT_EQ(hash, TaskDefinitionHash(**again, "s"));
  EXPECT_NE(hash, TaskDefinitionHash(**balance, "s"));
  EXPECT_NE(hash, TaskDefinitionHash(**swingup, "other summary"));
}

TEST(TaskDefinitionHashTest, AnEditedYamlTaskHashesDifferently) {
  std::ifstream in(kExample);
  std::stringstream text;
  text << in.rdbuf();
  // The same task outside the source tree, its model named by absolute path; then a copy
  // whose text differs by a comment only.
  std::string same = text.str();
  const std::string relative = "mjcf: models/point_reach.xml";
  ASSERT_NE(same.find(relative), std::string::npos);
  same.replace(same.find(relative), relative.size(),
               "mjcf: " ROBOLOOP_SOURCE_DIR "/configs/tasks/models/point_reach.xml");
  const std::string plain = ::testing::TempDir() + "/point_reach_plain.yaml";
  const std::string commented = ::testing::TempDir() + "/point_reach_commented.yaml";
  std::ofstream(plain) << same;
  std::ofstream(commented) << same << "\n# an edit of the file only\n";
  auto original = LoadYamlTask(plain);
  auto again = LoadYamlTask(plain);
  auto edited = LoadYamlTask(commented);
  ASSERT_TRUE(original.ok()) << original.status();
  ASSERT_TRUE(edited.ok()) << edited.status();
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(TaskDefinitionHash(**original, ""), TaskDefinitionHash(**again, ""));
  EXPECT_NE(TaskDefinitionHash(**original, ""), TaskDefinitionHash(**edited, ""));
}

}  // namespace
}  // namespace roboloop::sim
