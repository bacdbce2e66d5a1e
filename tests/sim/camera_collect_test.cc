// Camera frames in datasets (issue 23, req 3, the sim half): collect writes each camera as
// obs/<name>_image, uint8 [T, H, W, 3], the frames the policy saw; relabel renders the frames
// of the states it restores, which match the collected ones bitwise.
#include <memory>
#include <string>
#include <vector>

#include "data/dataset_reader.h"
#include "gtest/gtest.h"
#include "sim/collect.h"
#include "sim/random_policy.h"
#include "tests/sim/camera_task.h"
#include "tests/util/subprocess.h"

namespace roboloop::sim {
namespace {

data::Episode ReadDemo(const std::string& path, const std::string& demo) {
  data::DatasetReader::Options options;
  options.path = path;
  auto reader = data::DatasetReader::Open(options);
  EXPECT_TRUE(reader.ok()) << reader.status();
  if (!reader.ok()) return {};
  auto episode = (*reader)->ReadEpisode(demo);
  EXPECT_TRUE(episode.ok()) << episode.status();
  return episode.ok() ? *std::move(episode) : data::Episode();
}

TEST(CameraCollectTest, CollectWritesImageKeysAndRelabelRendersTheSameFrames) {
  auto task = testing::CameraTask();
  ASSERT_NE(task, nullptr);
  const std::string dir = roboloop::testing::MakeTempDir("cameracollect");
  RandomPolicy policy(*task, 3);
  CollectOptions collect;
  collect.output_path = dir + "/demos.hdf5";
  collect.rollout.num_episodes = 2;
  collect.rollout.num_envs = 2;
  collect.rollout.num_threads = 2;
  collect.policy_reference = "random";
  auto collected = CollectDataset(*task, policy, collect);
  ASSERT_TRUE(collected.ok()) << collected.status();
  const data::Episode demo = ReadDemo(collect.output_path, "demo_0");
  ASSERT_EQ(demo.count("obs/top_image"), 1u);
  ASSERT_EQ(demo.count("obs/view_image"), 1u);
  const data::Array& top = demo.at("obs/top_image");
  EXPECT_EQ(top.dtype, data::DType::kUint8);
  EXPECT_EQ(top.shape, (std::vector<int64_t>{12, 32, 32, 3}));
  EXPECT_EQ(demo.at("obs/view_image").shape, (std::vector<int64_t>{12, 16, 24, 3}));
  EXPECT_NE(std::vector<uint8_t>(top.bytes.begin(), top.bytes.begin() + 32 * 32 * 3),
            std::vector<uint8_t>(top.bytes.end() - 32 * 32 * 3, top.bytes.end()))
      << "the first and last frames differ";

  RelabelOptions relabel;
  relabel.input_path = collect.output_path;
  relabel.output_path = dir + "/relabelled.hdf5";
  RandomPolicy expert(*task, 4);
  auto relabelled = RelabelDataset(*task, expert, relabel);
  ASSERT_TRUE(relabelled.ok()) << relabelled.status();
  const data::Episode again = ReadDemo(relabel.output_path, "demo_0");
  ASSERT_EQ(again.count("obs/top_image"), 1u);
  EXPECT_EQ(again.at("obs/top_image").shape, top.shape);
  EXPECT_EQ(again.at("obs/top_image").bytes, top.bytes) << "restoring a state re-renders its frames";
  EXPECT_EQ(again.at("obs/view_image").bytes, demo.at("obs/view_image").bytes);
}

}  // namespace
}  // namespace roboloop::sim
