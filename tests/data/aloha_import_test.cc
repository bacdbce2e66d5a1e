// ALOHA/ACT folder import: values, camera images, lineage and errors naming the source.
#include <filesystem>
#include <fstream>

#include "data/aloha_import.h"
#include "data/dataset_reader.h"
#include "common/sha256.h"
#include "data/hdf5_io.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/data/test_util.h"

namespace roboloop::data {
namespace {

using ::testing::HasSubstr;
using testing::TempDir;
using testing::Wave;

struct AlohaEpisode {
  Array action, qpos, qvel, image;
};

AlohaEpisode MakeAlohaEpisode(int steps, int seed) {
  std::vector<double> action, qpos, qvel;
  std::vector<uint8_t> image;
  for (int t = 0; t < steps; ++t) {
    for (int e = 0; e < 14; ++e) {
      action.push_back(Wave(seed, t, e));
      qpos.push_back(Wave(seed, t, e + 20));
      qvel.push_back(Wave(seed, t, e + 40));
    }
    for (int p = 0; p < 4 * 5 * 3; ++p) image.push_back(static_cast<uint8_t>((seed * 31 + t * 7 + p) % 256));
  }
  return {Array::From<double>({steps, 14}, action), Array::From<double>({steps, 14}, qpos),
          Array::From<double>({steps, 14}, qvel), Array::From<uint8_t>({steps, 4, 5, 3}, image)};
}

void WriteAlohaFile(const std::string& path, const AlohaEpisode& episode, bool with_qvel = true) {
  auto file = h5::CreateFile(path);
  ASSERT_TRUE(file.ok());
  ASSERT_TRUE(h5::WriteArray(file->get(), "action", episode.action, StorageOptions()).ok());
  ASSERT_TRUE(h5::EnsureGroup(file->get(), "observations/images").ok());
  ASSERT_TRUE(h5::WriteArray(file->get(), "observations/qpos", episode.qpos, StorageOptions()).ok());
  if (with_qvel) {
    ASSERT_TRUE(h5::WriteArray(file->get(), "observations/qvel", episode.qvel, StorageOptions()).ok());
  }
  ASSERT_TRUE(
      h5::WriteArray(file->get(), "observations/images/top", episode.image, StorageOptions()).ok());
}

TEST(AlohaImportTest, ConvertsEpisodesInNumericOrder) {
  TempDir dir;
  const std::string input = dir.File("aloha");
  std::filesystem::create_directory(input);
  // episode_10 sorts after episode_2 numerically, not by name.
  const std::vector<std::pair<int, int>> files = {{0, 6}, {2, 9}, {10, 4}};
  std::vector<AlohaEpisode> episodes;
  for (const auto& [index, steps] : files) {
    episodes.push_back(MakeAlohaEpisode(steps, index));
    WriteAlohaFile(input + "/episode_" + std::to_string(index) + ".hdf5", episodes.back());
  }
  std::ofstream(input + "/notes.txt") << "ignored";
  AlohaImportOptions options;
  options.input_dir = input;
  options.output_path = dir.File("out.hdf5");
  options.max_block_bytes = 1000;  // several blocks per episode
  auto result = ImportAloha(options);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->num_episodes, 3);
  EXPECT_EQ(result->total_steps, 19);

  DatasetReader::Options reader_options;
  reader_options.path = options.output_path;
  auto reader = DatasetReader::Open(reader_options);
  ASSERT_TRUE(reader.ok()) << reader.status();
  for (size_t i = 0; i < episodes.size(); ++i) {
    auto episode = (*reader)->ReadEpisode(DemoName(i));
    ASSERT_TRUE(episode.ok()) << episode.status();
    EXPECT_EQ(episode->size(), 4u);
    EXPECT_EQ(episode->at("actions").bytes, episodes[i].action.bytes);
    EXPECT_EQ(episode->at("obs/qpos").bytes, episodes[i].qpos.bytes);
    EXPECT_EQ(episode->at("obs/qvel").bytes, episodes[i].qvel.bytes);
    EXPECT_EQ(episode->at("obs/top_image").bytes, episodes[i].image.bytes);
    EXPECT_EQ(episode->at("obs/top_image").dtype, DType::kUint8);
  }
  const Lineage& lineage = (*reader)->layout().lineage;
  EXPECT_EQ(lineage.operation, "import_aloha");
  ASSERT_EQ(lineage.parents.size(), 3u);
  EXPECT_EQ(lineage.parents[2].path, input + "/episode_10.hdf5");
  EXPECT_EQ(lineage.parents[2].sha256, *Sha256File(input + "/episode_10.hdf5"));
  EXPECT_EQ(lineage.parents[2].kind, "aloha_episode");
}

TEST(AlohaImportTest, ErrorsNameTheSourceAndLeaveNoOutput) {
  TempDir dir;
  const std::string input = dir.File("aloha");
  std::filesystem::create_directory(input);
  WriteAlohaFile(input + "/episode_0.hdf5", MakeAlohaEpisode(5, 0));
  WriteAlohaFile(input + "/episode_1.hdf5", MakeAlohaEpisode(5, 1), /*with_qvel=*/false);
  AlohaImportOptions options;
  options.input_dir = input;
  options.output_path = dir.File("out.hdf5");
  auto result = ImportAloha(options);
  EXPECT_EQ(result.status().message(),
            input + "/episode_1.hdf5: /observations/qvel: missing dataset");
  EXPECT_FALSE(std::filesystem::exists(options.output_path));
  EXPECT_FALSE(std::filesystem::exists(options.output_path + ".partial"));

  AlohaEpisode ragged = MakeAlohaEpisode(5, 1);
  ragged.qpos = Array::From<double>({4, 14}, std::vector<double>(56, 0.0));
  WriteAlohaFile(input + "/episode_1.hdf5", ragged);
  EXPECT_EQ(ImportAloha(options).status().message(),
            input + "/episode_1.hdf5: /observations/qpos: length 4, expected 5 (/action)");

  options.input_dir = dir.File("empty");
  std::filesystem::create_directory(options.input_dir);
  EXPECT_THAT(ImportAloha(options).status().message(), HasSubstr("no episode_<i>.hdf5 files"));
}

}  // namespace
}  // namespace roboloop::data
