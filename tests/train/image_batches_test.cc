// Camera frames in training (issue 23, docs/vision.md): which features are images, the batch
// layout of their frames (in memory, streamed, and the ABI view), normalization without them,
// and datasets whose frames are refused.
#include <cstdint>
#include <utility>

#include "data/dataset_reader.h"
#include "data/dataset_writer.h"
#include "data/episode_cache.h"
#include "data/hdf5_io.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/data/test_util.h"
#include "tests/train/encoded_episodes.h"
#include "train/dataset_features.h"
#include "train/feature_rows.h"
#include "train/loader.h"
#include "train/normalization.h"

namespace roboloop::train {
namespace {

using ::testing::HasSubstr;

// The byte `i` of the frame of camera `camera` at (episode, t): distinct per camera, episode,
// step and position.
uint8_t FrameByte(int camera, int episode, int t, int i) {
  return static_cast<uint8_t>(camera * 101 + episode * 37 + t * 11 + i);
}

data::Array Frames(int camera, int episode, int steps, int height, int width) {
  const int bytes = height * width * 3;
  std::vector<uint8_t> values;
  for (int t = 0; t < steps; ++t) {
    for (int i = 0; i < bytes; ++i) values.push_back(FrameByte(camera, episode, t, i));
  }
  return data::Array::From<uint8_t>({steps, height, width, 3}, values);
}

// Camera 0 "cam" is 4x4, camera 1 "wrist" is 2 high and 3 wide.
constexpr int kCamBytes = 4 * 4 * 3;
constexpr int kWristBytes = 2 * 3 * 3;

class ImageBatchesTest : public ::testing::Test {
 protected:
  // Episode lengths 5, 7, 3: 15 windows.
  void SetUp() override { path_ = Write("d.hdf5", "{}"); }

  std::string Write(const std::string& name, const std::string& env_args) {
    data::DatasetWriter::Options options;
    options.path = dir_.File(name);
    options.env_args_json = env_args;
    auto writer = data::DatasetWriter::Create(options);
    EXPECT_TRUE(writer.ok()) << writer.status();
    for (size_t e = 0; e < lengths_.size(); ++e) {
      data::Episode episode = testing::EncodedEpisode(static_cast<int>(e), lengths_[e]);
      episode.erase("obs/wide");
      episode["obs/cam_image"] = Frames(0, static_cast<int>(e), lengths_[e], 4, 4);
      episode["obs/wrist_image"] = Frames(1, static_cast<int>(e), lengths_[e], 2, 3);
      EXPECT_TRUE((*writer)->WriteEpisode(episode).ok());
    }
    EXPECT_TRUE((*writer)->Close().ok());
    return options.path;
  }

  std::shared_ptr<const data::EpisodeStore> Load() const {
    data::EpisodeStore::Options options;
    options.path = path_;
    auto store = data::EpisodeStore::Load(options);
    EXPECT_TRUE(store.ok()) << store.status();
    return store.ok() ? std::shared_ptr<const data::EpisodeStore>(std::move(store).value()) : nullptr;
  }

  // Wrist camera first: the batch follows the given order, not the names'.
  static LoaderOptions Options() {
    LoaderOptions options;
    options.obs_features = {"obs/a", "obs/e"};
    options.image_features = {"obs/wrist_image", "obs/cam_image"};
    options.history = 2;
    options.chunk = 2;
    options.batch_size = 4;
    options.seed = 5;
    options.normalize = false;
    return options;
  }

  // Every sample's frames are those of its (episode, t), read from its last obs slot.
  static void ExpectFramesOfEachSample(const Batch& batch) {
    ASSERT_EQ(batch.image_bytes, kWristBytes + kCamBytes);
    ASSERT_EQ(batch.images.size(), static_cast<size_t>(batch.batch_size) * batch.image_bytes);
    for (int s = 0; s < batch.batch_size; ++s) {
      const float* last = &batch.obs[((s + 1) * batch.history - 1) * batch.obs_dim];
      const int episode = static_cast<int>(last[2]);
      const int t = static_cast<int>(last[0] - 1000.0f * last[2]);
      const uint8_t* row = &batch.images[static_cast<size_t>(s) * batch.image_bytes];
      for (int i = 0; i < kWristBytes; ++i) {
        ASSERT_EQ(row[i], FrameByte(1, episode, t, i)) << "sample " << s << " wrist byte " << i;
      }
      for (int i = 0; i < kCamBytes; ++i) {
        ASSERT_EQ(row[kWristBytes + i], FrameByte(0, episode, t, i)) << "sample " << s << " cam byte " << i;
      }
    }
  }

  v1::TrainConfig Config() const {
    v1::TrainConfig config;
    config.set_action_feature("actions");
    return config;
  }

  absl::StatusOr<DatasetFeatures> FeaturesOf(const std::string& path, const v1::TrainConfig& config) const {
    data::DatasetReader::Options options;
    options.path = path;
    auto reader = data::DatasetReader::Open(options);
    if (!reader.ok()) return reader.status();
    return ReadFeatures(path, (*reader)->layout(), config);
  }

  data::testing::TempDir dir_;
  std::vector<int> lengths_ = {5, 7, 3};
  std::string path_;
};

TEST_F(ImageBatchesTest, CamerasAreTheImageKeysUnderObs) {
  EXPECT_TRUE(IsObsImageKey("obs/cam_image"));
  EXPECT_FALSE(IsObsImageKey("obs/cam"));
  EXPECT_FALSE(IsObsImageKey("obs/_image"));
  EXPECT_FALSE(IsObsImageKey("next_obs/cam_image"));
  EXPECT_EQ(CameraNameOf("obs/agentview_image"), "agentview");
}

TEST_F(ImageBatchesTest, BatchesCarryEachSamplesLastFramesInCameraOrder) {
  auto loader = Loader::Create(Load(), {}, Options());
  ASSERT_TRUE(loader.ok()) << loader.status();
  for (const Batch& batch : testing::TakeBatches(**loader, 6)) {
    EXPECT_EQ(batch.obs_dim, 3) << "images are not part of the float row";
    ExpectFramesOfEachSample(batch);
    const RoboloopTrainBatch view = BatchView(batch);
    EXPECT_EQ(view.image_bytes, batch.image_bytes);
    EXPECT_EQ(view.images, batch.images.data());
    EXPECT_EQ(view.obs_dim, 3);
  }
}

TEST_F(ImageBatchesTest, StreamedBatchesCarryTheSameFrames) {
  data::EpisodeCache::Options cache_options;
  cache_options.episodes.path = path_;
  cache_options.episodes.features = {"obs/a", "obs/e", "obs/wrist_image", "obs/cam_image", "actions"};
  cache_options.capacity_bytes = 1 << 20;
  auto cache = data::EpisodeCache::Open(cache_options);
  ASSERT_TRUE(cache.ok()) << cache.status();
  auto loader = Loader::CreateStreaming(std::move(cache).value(), {}, Options(), /*block_windows=*/4);
  ASSERT_TRUE(loader.ok()) << loader.status();
  for (const Batch& batch : testing::TakeBatches(**loader, 6)) ExpectFramesOfEachSample(batch);
}

TEST_F(ImageBatchesTest, StateOnlyBatchesHaveNoFrames) {
  LoaderOptions options = Options();
  options.image_features.clear();
  auto loader = Loader::Create(Load(), {}, options);
  ASSERT_TRUE(loader.ok()) << loader.status();
  auto batch = (*loader)->Next();
  ASSERT_TRUE(batch.ok()) << batch.status();
  EXPECT_EQ(batch->image_bytes, 0);
  EXPECT_TRUE(batch->images.empty());
  EXPECT_EQ(BatchView(*batch).image_bytes, 0);
  EXPECT_EQ(BatchView(*batch).images, nullptr);
}

TEST_F(ImageBatchesTest, DatasetFeaturesSplitFloatsFromCamerasAndNormalizationSkipsThem) {
  auto features = FeaturesOf(path_, Config());
  ASSERT_TRUE(features.ok()) << features.status();
  EXPECT_EQ(features->obs, (std::vector<std::string>{"obs/a", "obs/e"}));
  EXPECT_EQ(features->obs_dim, 3);
  EXPECT_EQ(features->images, (std::vector<std::string>{"obs/cam_image", "obs/wrist_image"}));
  EXPECT_EQ(features->cameras,
            (std::vector<registry::ManifestCamera>{{"cam", "", 4, 4}, {"wrist", "", 3, 2}}));
  auto store = Load();
  auto norm = NormalizationFromStore(*store, features->obs, "actions");
  ASSERT_TRUE(norm.ok()) << norm.status();
  EXPECT_EQ(norm->obs_mean.size(), 3u);
  EXPECT_EQ(norm->obs_std.size(), 3u);
  // Obs/e is the episode index: over 5 + 7 + 3 steps its mean is (0*5 + 1*7 + 2*3) / 15.
  EXPECT_FLOAT_EQ(norm->obs_mean[2], 13.0f / 15.0f);
  auto with_images = NormalizationFromStore(*store, {"obs/a", "obs/e", "obs/cam_image"}, "actions");
  EXPECT_THAT(with_images.status().message(), HasSubstr("obs/cam_image"));
}

TEST_F(ImageBatchesTest, RecordedCamerasFixTheOrderAndTheirMjcfCamera) {
  const std::string path = Write(
      "collected.hdf5",
      R"({"env_kwargs": {"obs_keys": ["a"], "cameras": [{"name": "wrist", "camera": "hand", "width": 3, "height": 2},
                                                        {"name": "cam", "camera": "", "width": 4, "height": 4}]}})");
  auto features = FeaturesOf(path, Config());
  ASSERT_TRUE(features.ok()) << features.status();
  EXPECT_EQ(features->obs, (std::vector<std::string>{"obs/a"}));
  EXPECT_EQ(features->images, (std::vector<std::string>{"obs/wrist_image", "obs/cam_image"}));
  EXPECT_EQ(features->cameras,
            (std::vector<registry::ManifestCamera>{{"wrist", "hand", 3, 2}, {"cam", "", 4, 4}}));
  EXPECT_EQ(CamerasOption(*features), nlohmann::json::parse(R"([{"name": "wrist", "width": 3, "height": 2},
                                                                 {"name": "cam", "width": 4, "height": 4}])"));
}

TEST_F(ImageBatchesTest, AKindThatCannotSeeIsRefusedBeforeTraining) {
  auto features = FeaturesOf(path_, Config());
  ASSERT_TRUE(features.ok()) << features.status();
  // TorchScript modules take the obs row alone: the kind has no cameras option.
  auto options = WithCameras({{"kind", "torchscript"}}, *features);
  EXPECT_EQ(options.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(options.status().message(),
              HasSubstr("policy 'torchscript' on a dataset with cameras (image features [obs/cam_image, "
                        "obs/wrist_image]; list only float obs_features to train it state-only)"));
  EXPECT_THAT(options.status().message(), HasSubstr("cameras"));
}

TEST_F(ImageBatchesTest, ACheckpointMustSeeTheDatasetsCameras) {
  auto features = FeaturesOf(path_, Config());
  ASSERT_TRUE(features.ok()) << features.status();
  const nlohmann::json seeing = {{"obs_dim", 3}, {"cameras", CamerasOption(*features)}};
  EXPECT_TRUE(CheckOptionCameras(seeing, *features, "ck:v1").ok());
  const absl::Status blind = CheckOptionCameras({{"obs_dim", 3}, {"cameras", nlohmann::json::array()}}, *features,
                                                "ck:v1");
  EXPECT_EQ(blind.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(blind.message(), HasSubstr("checkpoint ck:v1 sees cameras [], but the dataset has [{"));
  EXPECT_THAT(blind.message(), HasSubstr("(image features [obs/cam_image, obs/wrist_image])"));
  DatasetFeatures state_only = *features;
  state_only.images.clear();
  state_only.cameras.clear();
  EXPECT_TRUE(CheckOptionCameras({{"obs_dim", 3}}, state_only, "ck:v1").ok());
  EXPECT_FALSE(CheckOptionCameras(seeing, state_only, "ck:v1").ok());
}

TEST_F(ImageBatchesTest, ConfiguredFeaturesChooseStateOnlyTraining) {
  v1::TrainConfig config = Config();
  config.add_obs_features("obs/a");
  auto features = FeaturesOf(path_, config);
  ASSERT_TRUE(features.ok()) << features.status();
  EXPECT_TRUE(features->images.empty());
  const nlohmann::json options = {{"kind", "torchscript"}, {"obs_dim", 1}};
  auto unchanged = WithCameras(options, *features);
  ASSERT_TRUE(unchanged.ok()) << unchanged.status();
  EXPECT_EQ(*unchanged, options);
  config.add_obs_features("obs/cam_image");
  features = FeaturesOf(path_, config);
  ASSERT_TRUE(features.ok()) << features.status();
  EXPECT_EQ(features->images, (std::vector<std::string>{"obs/cam_image"}));
}

TEST_F(ImageBatchesTest, ARecordedCameraMissingFromTheFileIsNamed) {
  const std::string path =
      Write("missing.hdf5", R"({"env_kwargs": {"obs_keys": ["a"], "cameras": [{"name": "top", "camera": "top"}]}})");
  auto features = FeaturesOf(path, Config());
  EXPECT_THAT(features.status().message(), HasSubstr(path + ": no feature obs/top_image for camera 'top'"));
}

TEST_F(ImageBatchesTest, FramesOfTheWrongDtypeOrChannelsAreRefusedNamingFileAndFeature) {
  // One channel instead of three, added to a good file (the data layer's writer refuses it).
  const std::string path = Write("gray.hdf5", "{}");
  {
    auto file = data::h5::OpenFile(path, /*writable=*/true);
    ASSERT_TRUE(file.ok()) << file.status();
    for (size_t e = 0; e < lengths_.size(); ++e) {
      const data::Array gray = data::Array::Zeros(data::DType::kUint8, {lengths_[e], 4, 4, 1});
      ASSERT_TRUE(data::h5::WriteArray(file->get(), data::FeaturePath(data::DemoName(e), "obs/gray_image"), gray,
                                       data::StorageOptions())
                      .ok());
    }
  }
  // Refused by ReadFeatures, or already by the data layer's validation: either names the file,
  // the key, its shape and the one expected.
  auto features = FeaturesOf(path, Config());
  EXPECT_EQ(features.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(features.status().message(), HasSubstr(path + ": "));
  EXPECT_THAT(features.status().message(), HasSubstr("obs/gray_image"));
  EXPECT_THAT(features.status().message(), HasSubstr("uint8 [T, 4, 4, 1]"));
  EXPECT_THAT(features.status().message(), HasSubstr("uint8 [T, H, W, 3]"));

  LoaderOptions options = Options();
  options.batch_size = 2;
  options.image_features = {"obs/a"};
  auto loader = Loader::Create(Load(), {}, options);
  EXPECT_THAT(loader.status().message(), HasSubstr(path_ + ": image feature 'obs/a'"));
  EXPECT_THAT(loader.status().message(), HasSubstr("float32 [T, 2], expected uint8 [T, H, W, 3]"));
  options.image_features = {"obs/top_image"};
  loader = Loader::Create(Load(), {}, options);
  EXPECT_THAT(loader.status().message(), HasSubstr("image feature 'obs/top_image'"));
}

TEST_F(ImageBatchesTest, FramesThatDoNotMatchTheActionsAreRefusedAtLoad) {
  {
    auto file = data::h5::OpenFile(path_, /*writable=*/true);
    ASSERT_TRUE(file.ok()) << file.status();
    ASSERT_TRUE(data::h5::DeleteIfExists(file->get(), "data/demo_1/obs/cam_image").ok());
    ASSERT_TRUE(data::h5::WriteArray(file->get(), "data/demo_1/obs/cam_image", Frames(0, 1, 6, 4, 4),
                                     data::StorageOptions())
                    .ok());
  }
  data::EpisodeStore::Options options;
  options.path = path_;
  auto store = data::EpisodeStore::Load(options);
  EXPECT_EQ(store.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(store.status().message(), HasSubstr(path_ + ": data/demo_1/obs/cam_image: "));
  EXPECT_THAT(store.status().message(), HasSubstr("expected 7"));
  auto features = FeaturesOf(path_, Config());
  EXPECT_THAT(features.status().message(), HasSubstr(path_ + ": data/demo_1/obs/cam_image: "));
}

}  // namespace
}  // namespace roboloop::train
