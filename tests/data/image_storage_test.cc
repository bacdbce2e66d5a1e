// Image keys (obs/<camera>_image, issue 23): names, on-disk storage (one frame per chunk,
// deflated when that halves them, else raw), reading frames back and validation errors naming
// the file, demo and key.
#include "data/dataset_reader.h"
#include "data/dataset_writer.h"
#include "data/hdf5_io.h"
#include "data/validation.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/data/test_util.h"

namespace roboloop::data {
namespace {

using ::testing::ElementsAre;
using testing::kImageKey;
using testing::MakeImageEpisode;
using testing::OpenOrDie;
using testing::TempDir;
using testing::WriteDataset;


// Chunk shape and filters (HDF5 filter id -> first parameter) of a dataset.
struct Storage {
  std::vector<hsize_t> chunk;
  std::map<int, unsigned> filters;
};

Storage StorageOf(const std::string& path, const std::string& dataset_path) {
  auto file = h5::OpenFile(path, /*writable=*/false);
  EXPECT_TRUE(file.ok()) << file.status();
  auto dataset = h5::OpenDataset(file->get(), dataset_path, dataset_path);
  EXPECT_TRUE(dataset.ok()) << dataset.status();
  h5::Handle options(H5Dget_create_plist(dataset->get()));
  Storage storage;
  storage.chunk.resize(8);
  storage.chunk.resize(H5Pget_chunk(options.get(), 8, storage.chunk.data()));
  for (int i = 0; i < H5Pget_nfilters(options.get()); ++i) {
    unsigned flags = 0;
    size_t count = 4;
    unsigned values[4] = {0, 0, 0, 0};
    unsigned config = 0;
    const H5Z_filter_t filter =
        H5Pget_filter2(options.get(), i, &flags, &count, values, 0, nullptr, &config);
    storage.filters[filter] = values[0];
  }
  return storage;
}

// Replaces the dataset at `dataset_path` of the file at `path` with `array`.
void ReplaceDataset(const std::string& path, const std::string& dataset_path, const Array& array) {
  auto file = h5::OpenFile(path, /*writable=*/true);
  ASSERT_TRUE(file.ok()) << file.status();
  ASSERT_TRUE(h5::DeleteIfExists(file->get(), dataset_path).ok());
  ASSERT_TRUE(h5::WriteArray(file->get(), dataset_path, array, StorageOptions()).ok());
}

std::string ValidationError(const std::string& path) {
  return std::string(ValidateFile(path, ValidationOptions()).status().message());
}

TEST(ImageKeyTest, NamesOfTheRobomimicLayout) {
  EXPECT_TRUE(IsImageKey("obs/agentview_image"));
  EXPECT_TRUE(IsImageKey("next_obs/robot0_eye_in_hand_image"));
  EXPECT_FALSE(IsImageKey("obs/_image"));
  EXPECT_FALSE(IsImageKey("obs/image"));
  EXPECT_FALSE(IsImageKey("obs/agentview_image_depth"));
  EXPECT_FALSE(IsImageKey("actions_image"));
  EXPECT_FALSE(IsImageKey("states/a_image"));
  EXPECT_FALSE(IsImageKey("obs/a/b_image"));
  const DatasetSpec spec = {{"actions", DType::kFloat32, {4}},
                            {"obs/agentview_image", DType::kUint8, {8, 8, 3}},
                            {"obs/qpos", DType::kFloat32, {3}},
                            {"obs/wrist_image", DType::kUint8, {4, 6, 3}}};
  const std::vector<FeatureSpec> images = ImageFeatures(spec);
  ASSERT_EQ(images.size(), 2u);
  EXPECT_EQ(images[0], spec[1]);
  EXPECT_EQ(images[1], spec[3]);
}

TEST(ImageKeyTest, CheckImageFeatureSaysWhatIsWrong) {
  EXPECT_TRUE(CheckImageFeature({kImageKey, DType::kUint8, {84, 84, 3}}).ok());
  EXPECT_TRUE(CheckImageFeature({kImageKey, DType::kUint8, {1, 2048, 3}}).ok());
  EXPECT_EQ(CheckImageFeature({kImageKey, DType::kFloat32, {8, 8, 3}}).message(),
            "float32 [T, 8, 8, 3], expected uint8 [T, H, W, 3] (RGB frames)");
  EXPECT_EQ(CheckImageFeature({kImageKey, DType::kUint8, {8, 8, 4}}).message(),
            "uint8 [T, 8, 8, 4], expected uint8 [T, H, W, 3] (RGB frames)");
  EXPECT_EQ(CheckImageFeature({kImageKey, DType::kUint8, {8, 8}}).message(),
            "uint8 [T, 8, 8], expected uint8 [T, H, W, 3] (RGB frames)");
  EXPECT_EQ(CheckImageFeature({kImageKey, DType::kUint8, {2049, 8, 3}}).message(),
            "uint8 [T, 2049, 8, 3]: height and width must lie in 1..2048");
  EXPECT_EQ(CheckImageFeature({kImageKey, DType::kUint8, {8, 0, 3}}).message(),
            "uint8 [T, 8, 0, 3]: height and width must lie in 1..2048");
}

// Writes one episode made by `make` with float features uncompressed (gzip level 0, chunks of
// whole episodes) and returns the file's path.
std::string WriteUncompressedOptions(const TempDir& dir, Episode (*make)(int, int)) {
  const std::string path = dir.File("images.hdf5");
  DatasetWriter::Options options;
  options.path = path;
  options.storage.gzip_level = 0;
  auto writer = DatasetWriter::Create(options);
  EXPECT_TRUE(writer.ok()) << writer.status();
  EXPECT_TRUE((*writer)->WriteEpisode(make(10, 0)).ok());
  EXPECT_TRUE((*writer)->Close().ok());
  return path;
}

TEST(ImageStorageTest, OneFramePerChunkDeflatedWhateverTheOptions) {
  TempDir dir;
  const std::string path = WriteUncompressedOptions(dir, testing::MakeBandedImageEpisode);
  const Storage image = StorageOf(path, FeaturePath("demo_0", kImageKey));
  EXPECT_THAT(image.chunk, ElementsAre(1, 16, 16, 3));
  EXPECT_EQ(image.filters, (std::map<int, unsigned>{{H5Z_FILTER_DEFLATE, kImageGzipLevel}}));
  const Storage actions = StorageOf(path, FeaturePath("demo_0", "actions"));
  EXPECT_THAT(actions.chunk, ElementsAre(64, 4));
  EXPECT_TRUE(actions.filters.empty());
}

TEST(ImageStorageTest, FramesThatDeflateDoesNotHalveAreStoredRawOneFramePerChunk) {
  TempDir dir;
  const Episode episode = MakeImageEpisode(10, 0);
  ASSERT_GT(h5::ShuffleDeflateRatio(episode.at(kImageKey).bytes, 1, kImageGzipLevel, 8 * 8 * 3),
            1 - kImageMinCompressionSaving);
  const std::string path = WriteUncompressedOptions(dir, MakeImageEpisode);
  const Storage image = StorageOf(path, FeaturePath("demo_0", kImageKey));
  EXPECT_THAT(image.chunk, ElementsAre(1, 8, 8, 3));
  EXPECT_TRUE(image.filters.empty());
  auto reader = OpenOrDie(path);
  auto frames = reader->ReadFeature("demo_0", kImageKey);
  ASSERT_TRUE(frames.ok()) << frames.status();
  EXPECT_EQ(frames->bytes, episode.at(kImageKey).bytes);
}

TEST(ImageStorageTest, FramesReadBackWholeAndByRows) {
  TempDir dir;
  const std::string path = dir.File("images.hdf5");
  const std::vector<Episode> episodes =
      WriteDataset(path, {6, 9}, R"({"env_name": "Lift"})", MakeImageEpisode);
  const auto reader = OpenOrDie(path);
  const FeatureSpec* spec = FindFeature(reader->layout().spec, kImageKey);
  ASSERT_NE(spec, nullptr);
  EXPECT_EQ(DescribeFeature(*spec), "uint8 [T, 8, 8, 3]");
  auto whole = reader->ReadFeature("demo_1", kImageKey);
  ASSERT_TRUE(whole.ok()) << whole.status();
  EXPECT_EQ(whole->bytes, episodes[1].at(kImageKey).bytes);

  constexpr int kFrame = 8 * 8 * 3;
  std::vector<uint8_t> frames(2 * kFrame);
  ASSERT_TRUE(reader->ReadFeatureRows("demo_1", kImageKey, 3, 2, frames.data()).ok());
  const std::vector<uint8_t>& stored = episodes[1].at(kImageKey).bytes;
  EXPECT_EQ(frames, std::vector<uint8_t>(stored.begin() + 3 * kFrame, stored.begin() + 5 * kFrame));
  EXPECT_EQ(reader->ReadFeatureRows("demo_1", kImageKey, 8, 2, frames.data()).message(),
            path + ": data/demo_1/obs/agentview_image: steps [8, 10) beyond its 9 steps");
}

TEST(ImageStorageTest, WriterRefusesFramesThatAreNotRgbBytes) {
  TempDir dir;
  DatasetWriter::Options options;
  options.path = dir.File("bad.hdf5");
  auto writer = DatasetWriter::Create(options);
  ASSERT_TRUE(writer.ok());
  Episode episode = testing::MakeEpisode(4, 0);
  episode[kImageKey] = Array::Zeros(DType::kFloat32, {4, 8, 8, 3});
  EXPECT_EQ((*writer)->WriteEpisode(episode).status().message(),
            options.path + ": demo_0/obs/agentview_image: float32 [T, 8, 8, 3], expected uint8 "
                           "[T, H, W, 3] (RGB frames)");
  episode[kImageKey] = Array::Zeros(DType::kUint8, {4, 8, 8, 1});
  EXPECT_EQ((*writer)->WriteEpisode(episode).status().message(),
            options.path + ": demo_0/obs/agentview_image: uint8 [T, 8, 8, 1], expected uint8 "
                           "[T, H, W, 3] (RGB frames)");
  episode[kImageKey] = Array::Zeros(DType::kUint8, {3, 8, 8, 3});
  EXPECT_EQ((*writer)->WriteEpisode(episode).status().message(),
            options.path + ": demo_0/obs/agentview_image: length 3, expected 4 (actions)");
}

TEST(ImageValidationTest, FramesThatDoNotMatchTheActionsNameFileDemoAndKey) {
  TempDir dir;
  const std::string path = dir.File("images.hdf5");
  WriteDataset(path, {6, 10}, R"({"env_name": "Lift"})", MakeImageEpisode);
  ASSERT_TRUE(ValidateFile(path, ValidationOptions()).ok());
  ReplaceDataset(path, FeaturePath("demo_1", kImageKey), Array::Zeros(DType::kUint8, {9, 8, 8, 3}));
  EXPECT_EQ(ValidationError(path),
            path + ": data/demo_1/obs/agentview_image: 9 frames, expected 10 (one per step of actions)");
  DatasetReader::Options options;
  options.path = path;
  EXPECT_EQ(DatasetReader::Open(options).status().message(), ValidationError(path));
}

TEST(ImageValidationTest, WrongDtypeOrShapeNamesFileDemoAndKey) {
  TempDir dir;
  const std::string path = dir.File("images.hdf5");
  WriteDataset(path, {6, 10}, R"({"env_name": "Lift"})", MakeImageEpisode);
  const std::string key = FeaturePath("demo_0", kImageKey);
  ReplaceDataset(path, key, Array::Zeros(DType::kFloat32, {6, 8, 8, 3}));
  EXPECT_EQ(ValidationError(path),
            path + ": " + key + ": float32 [T, 8, 8, 3], expected uint8 [T, H, W, 3] (RGB frames)");
  ReplaceDataset(path, key, Array::Zeros(DType::kUint8, {6, 2049, 1, 3}));
  EXPECT_EQ(ValidationError(path),
            path + ": " + key + ": uint8 [T, 2049, 1, 3]: height and width must lie in 1..2048");
  ReplaceDataset(path, key, Array::Zeros(DType::kUint8, {6, 8, 8}));
  EXPECT_EQ(ValidationError(path),
            path + ": " + key + ": uint8 [T, 8, 8], expected uint8 [T, H, W, 3] (RGB frames)");
  ReplaceDataset(path, key, Array::Zeros(DType::kUint8, {6, 4, 4, 3}));
  // demo_0 is the odd one out here: the message names both demos without calling either right.
  EXPECT_EQ(ValidationError(path), path + ": data/demo_1/obs/agentview_image: uint8 [T, 8, 8, 3], "
                                          "but data/demo_0/obs/agentview_image is uint8 [T, 4, 4, 3] "
                                          "(every demo must have the same dtype and shape)");
}

}  // namespace
}  // namespace roboloop::data
