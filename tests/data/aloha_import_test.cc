// ALOHA/ACT folder import: values, camera images, lineage and errors naming the source.
#include <cmath>
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
  EXPECT_TRUE(testing::NamesStartingWith(dir.path(), "out.hdf5").empty());

  AlohaEpisode ragged = MakeAlohaEpisode(5, 1);
  ragged.qpos = Array::From<double>({4, 14}, std::vector<double>(56, 0.0));
  WriteAlohaFile(input + "/episode_1.hdf5", ragged);
  EXPECT_EQ(ImportAloha(options).status().message(),
            input + "/episode_1.hdf5: /observations/qpos: length 4, expected 5 (/action)");

  options.input_dir = dir.File("empty");
  std::filesystem::create_directory(options.input_dir);
  EXPECT_THAT(ImportAloha(options).status().message(), HasSubstr("no episode_<i>.hdf5 files"));
}

TEST(AlohaImportTest, NonFiniteValuesAreRefusedAsByMerge) {
  TempDir dir;
  const std::string input = dir.File("aloha");
  std::filesystem::create_directory(input);
  AlohaEpisode episode = MakeAlohaEpisode(6, 0);
  episode.action.MutableValues<double>()[4 * 14 + 2] = std::nan("");
  WriteAlohaFile(input + "/episode_0.hdf5", episode);
  AlohaImportOptions options;
  options.input_dir = input;
  options.output_path = dir.File("out.hdf5");
  // Blocks of 3 rows (3 float64 features of 14 values and 4x5 RGB frames a row): the NaN is in the second block,
  // and its step is counted from the episode's start.
  options.max_block_bytes = 3 * (3 * 14 * 8 + 4 * 5 * 3);
  EXPECT_EQ(ImportAloha(options).status().message(),
            input + "/episode_0.hdf5: /action: 1 NaN/Inf values (first at step 4)");
  EXPECT_TRUE(testing::NamesStartingWith(dir.path(), "out.hdf5").empty());
}

// Frames of a camera: uint8 [steps, 6, 8, 3] (ALOHA's 480x640 scaled down), or float32 when `as_float`.
Array CameraFrames(int steps, int seed, bool as_float = false) {
  std::vector<uint8_t> pixels;
  for (int i = 0; i < steps * 6 * 8 * 3; ++i) pixels.push_back(static_cast<uint8_t>((seed * 17 + i * 3) % 256));
  if (!as_float) return Array::From<uint8_t>({steps, 6, 8, 3}, pixels);
  return Array::From<float>({steps, 6, 8, 3}, std::vector<float>(pixels.begin(), pixels.end()));
}

void AddCamera(const std::string& path, const std::string& camera, const Array& frames) {
  auto file = h5::OpenFile(path, /*writable=*/true);
  ASSERT_TRUE(file.ok()) << file.status();
  ASSERT_TRUE(h5::WriteArray(file->get(), "observations/images/" + camera, frames, StorageOptions()).ok());
}

TEST(AlohaImportTest, KeepsEveryCameraOneFramePerChunk) {
  TempDir dir;
  const std::string input = dir.File("aloha");
  std::filesystem::create_directory(input);
  const std::string source = input + "/episode_0.hdf5";
  WriteAlohaFile(source, MakeAlohaEpisode(5, 0));
  AddCamera(source, "left_wrist", CameraFrames(5, 1));
  AddCamera(source, "right_wrist", CameraFrames(5, 2));
  AlohaImportOptions options;
  options.input_dir = input;
  options.output_path = dir.File("out.hdf5");
  ASSERT_TRUE(ImportAloha(options).ok());
  DatasetReader::Options reader_options;
  reader_options.path = options.output_path;
  auto reader = DatasetReader::Open(reader_options);
  ASSERT_TRUE(reader.ok()) << reader.status();
  std::vector<std::string> cameras;
  for (const FeatureSpec& image : ImageFeatures((*reader)->layout().spec)) cameras.push_back(image.name);
  EXPECT_EQ(cameras, std::vector<std::string>({"obs/left_wrist_image", "obs/right_wrist_image", "obs/top_image"}));
  EXPECT_EQ((*reader)->ReadFeature("demo_0", "obs/right_wrist_image")->bytes, CameraFrames(5, 2).bytes);

  auto file = h5::OpenFile(options.output_path, /*writable=*/false);
  auto dataset = h5::OpenDataset(file->get(), "data/demo_0/obs/left_wrist_image", "left_wrist");
  ASSERT_TRUE(dataset.ok());
  h5::Handle create_options(H5Dget_create_plist(dataset->get()));
  hsize_t chunk[4] = {0, 0, 0, 0};
  ASSERT_EQ(H5Pget_chunk(create_options.get(), 4, chunk), 4);
  EXPECT_EQ(std::vector<hsize_t>(chunk, chunk + 4), std::vector<hsize_t>({1, 6, 8, 3}));
}

TEST(AlohaImportTest, CameraErrorsNameTheSourceFileAndCamera) {
  TempDir dir;
  const std::string input = dir.File("aloha");
  std::filesystem::create_directory(input);
  const std::string source = input + "/episode_0.hdf5";
  AlohaImportOptions options;
  options.input_dir = input;
  options.output_path = dir.File("out.hdf5");

  WriteAlohaFile(source, MakeAlohaEpisode(5, 0));
  AddCamera(source, "left_wrist", CameraFrames(4, 1));
  EXPECT_EQ(ImportAloha(options).status().message(),
            source + ": /observations/images/left_wrist: length 4, expected 5 (/action)");

  WriteAlohaFile(source, MakeAlohaEpisode(5, 0));
  AddCamera(source, "left_wrist", CameraFrames(5, 1, /*as_float=*/true));
  EXPECT_EQ(ImportAloha(options).status().message(),
            source + ": /observations/images/left_wrist: float32 [T, 6, 8, 3], expected uint8 [T, H, W, 3] "
                     "(RGB frames)");
  EXPECT_FALSE(std::filesystem::exists(options.output_path));
}

}  // namespace
}  // namespace roboloop::data
