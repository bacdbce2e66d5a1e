// LeRobot v3 import and export tested against LeRobot itself (issue 24, req 4): a dataset written by
// LeRobot's API imports with bitwise-equal values and frames within the codec's tolerance; roboloop's
// export loads in LeRobotDataset; damaged datasets give errors naming the file. Needs LeRobot's own
// environment (scripts/lerobot-venv.sh, run by scripts/install-deps.sh).
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "data/dataset_reader.h"
#include "data/lerobot_export.h"
#include "data/lerobot_import.h"
#include "nlohmann/json.hpp"
#include "tests/data/lerobot_test_util.h"
#include "tests/data/test_util.h"

namespace roboloop::data {
namespace {

using testing::MeanAbsoluteError;
using testing::TempDir;

const char kFixture[] = ROBOLOOP_SOURCE_DIR "/tests/data/lerobot_fixture.py";

// Runs the fixture script in LeRobot's environment; on failure its output's tail is printed.
bool RunFixture(const std::string& args) {
  TempDir log_dir;
  const std::string log = log_dir.File("fixture.log");
  const std::string command = std::string(ROBOLOOP_LEROBOT_PYTHON) + " " + kFixture + " " + args + " > " + log + " 2>&1";
  if (std::system(command.c_str()) == 0) return true;
  std::system(("tail -n 15 " + log).c_str());
  return false;
}

std::vector<uint8_t> ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

nlohmann::json ReadJson(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

// The rows of `feature` over every demo of `path`, as bytes.
std::vector<uint8_t> AllRows(const DatasetReader& reader, const std::string& feature) {
  std::vector<uint8_t> bytes;
  for (const DemoLayout& demo : reader.layout().demos) {
    absl::StatusOr<Array> array = reader.ReadFeature(demo.name, feature);
    EXPECT_TRUE(array.ok()) << array.status();
    if (array.ok()) bytes.insert(bytes.end(), array->bytes.begin(), array->bytes.end());
  }
  return bytes;
}

// The codec's tolerance: the mean absolute error per pixel channel (0..255 levels) between the
// pictures given to the encoder and the decoded frames. Measured on the fixture's 32x24 frames:
// 7.95 for LeRobot's AV1 (libsvtav1, crf 30), 2.96 for roboloop's H.264 (libx264, crf 18), 2.40 for
// roboloop's AV1 (libaom, crf 18, cpu-used 6).
constexpr double kMaxCodecError = 10.0;
// Two decoders of the same file (ours through FFmpeg, LeRobot's torchcodec) may round the colour
// conversion differently, nothing more.
constexpr double kMaxDecoderDifference = 1.0;

class LeRobotTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    written_ = RunFixture("write " + dir_->File("lerobot") + " " + dir_->File("truth"));
  }
  static void TearDownTestSuite() { delete dir_; }

  void SetUp() override {
    ASSERT_TRUE(written_) << "LeRobot could not write the fixture: is LeRobot's environment ("
                          << ROBOLOOP_LEROBOT_PYTHON << ") installed? Run scripts/install-deps.sh";
  }

  // A copy of the LeRobot-written dataset that a test may damage.
  std::string CopyOfDataset(const TempDir& into) const {
    const std::string copy = into.File("copy");
    std::filesystem::copy(dir_->File("lerobot"), copy, std::filesystem::copy_options::recursive);
    return copy;
  }

  static absl::StatusOr<LeRobotImportResult> Import(const std::string& dir, const std::string& out) {
    LeRobotImportOptions options;
    options.input_dir = dir;
    options.output_path = out;
    return ImportLeRobot(options);
  }

  static TempDir* dir_;
  static bool written_;
};

TempDir* LeRobotTest::dir_ = nullptr;
bool LeRobotTest::written_ = false;

TEST_F(LeRobotTest, ImportsALeRobotWrittenDatasetBitwiseWithFramesWithinTheCodecsTolerance) {
  TempDir out;
  absl::StatusOr<LeRobotImportResult> result = Import(dir_->File("lerobot"), out.File("imported.hdf5"));
  ASSERT_TRUE(result.ok()) << result.status();
  const nlohmann::json meta = ReadJson(dir_->File("truth/meta.json"));
  EXPECT_EQ(result->num_episodes, 3);
  EXPECT_EQ(result->total_steps, 20);
  EXPECT_EQ(result->frames_decoded, 20);

  std::unique_ptr<DatasetReader> reader = testing::OpenOrDie(out.File("imported.hdf5"));
  std::vector<int64_t> lengths;
  for (const DemoLayout& demo : reader->layout().demos) lengths.push_back(demo.num_samples);
  EXPECT_EQ(lengths, meta["lengths"].get<std::vector<int64_t>>());
  EXPECT_EQ(AllRows(*reader, "obs/state"), ReadBytes(dir_->File("truth/state.bin")));
  EXPECT_EQ(AllRows(*reader, "actions"), ReadBytes(dir_->File("truth/action.bin")));
  EXPECT_EQ(AllRows(*reader, "rewards"), ReadBytes(dir_->File("truth/reward.bin")));
  EXPECT_EQ(AllRows(*reader, "dones"), ReadBytes(dir_->File("truth/done.bin")));
  const double error = MeanAbsoluteError(AllRows(*reader, "obs/front_image"), ReadBytes(dir_->File("truth/frames.bin")));
  std::printf("import: mean absolute error per pixel channel %.3f against the pictures LeRobot encoded\n", error);
  EXPECT_LT(error, kMaxCodecError);
  ASSERT_TRUE(RunFixture("read " + dir_->File("lerobot") + " " + out.File("lerobot_read")));
  const double difference = MeanAbsoluteError(AllRows(*reader, "obs/front_image"),
                                              ReadBytes(out.File("lerobot_read/observation.images.front.frames.bin")));
  std::printf("import: mean absolute difference per pixel channel %.3f from LeRobot's own decoding\n", difference);
  EXPECT_LT(difference, kMaxDecoderDifference);
  EXPECT_EQ(AllRows(*reader, "obs/state"), ReadBytes(out.File("lerobot_read/state.bin")));

  const nlohmann::json env = nlohmann::json::parse(reader->layout().env_args_json);
  EXPECT_EQ(env["env_name"], "lerobot");
  EXPECT_EQ(env["env_kwargs"]["obs_keys"], nlohmann::json({"state"}));
  EXPECT_EQ(env["lerobot"]["tasks"], nlohmann::json({"pick the cube", "push the cube"}));
  EXPECT_EQ(env["lerobot"]["episodes"][1]["tasks"], nlohmann::json({"push the cube"}));
  EXPECT_EQ(reader->layout().lineage.operation, "import_lerobot");
}

// Exports the imported fixture with `encoder` and checks what LeRobotDataset yields from it.
void ExpectExportLoadsInLeRobotDataset(const std::string& fixture, const std::string& encoder) {
  TempDir out;
  LeRobotImportOptions import_options;
  import_options.input_dir = fixture;
  import_options.output_path = out.File("imported.hdf5");
  ASSERT_TRUE(ImportLeRobot(import_options).ok());
  LeRobotExportOptions options;
  options.input_path = out.File("imported.hdf5");
  options.output_dir = out.File("exported");
  options.encoder = encoder;
  absl::StatusOr<LeRobotExportResult> result = ExportLeRobot(options);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->total_frames, 20);
  ASSERT_TRUE(RunFixture("read " + out.File("exported") + " " + out.File("loaded"))) << "LeRobotDataset refused the export";

  std::unique_ptr<DatasetReader> reader = testing::OpenOrDie(out.File("imported.hdf5"));
  const nlohmann::json loaded = ReadJson(out.File("loaded/meta.json"));
  EXPECT_EQ(loaded["num_frames"], 20);
  EXPECT_EQ(loaded["num_episodes"], 3);
  EXPECT_EQ(loaded["camera_keys"], nlohmann::json({"observation.images.front"}));
  EXPECT_EQ(loaded["tasks"][0], "pick the cube");
  EXPECT_EQ(loaded["tasks"][6], "push the cube");
  EXPECT_EQ(ReadBytes(out.File("loaded/state.bin")), AllRows(*reader, "obs/state"));
  EXPECT_EQ(ReadBytes(out.File("loaded/action.bin")), AllRows(*reader, "actions"));
  const double error = MeanAbsoluteError(ReadBytes(out.File("loaded/observation.images.front.frames.bin")),
                                         AllRows(*reader, "obs/front_image"));
  std::printf("export (%s crf 18, decoded by LeRobot): mean absolute error per pixel channel %.3f\n", encoder.c_str(),
              error);
  EXPECT_LT(error, kMaxCodecError);
}

TEST_F(LeRobotTest, H264ExportLoadsInLeRobotDatasetWithTheSameValues) {
  ExpectExportLoadsInLeRobotDataset(dir_->File("lerobot"), "libx264");
}

TEST_F(LeRobotTest, Av1ExportLoadsInLeRobotDatasetWithTheSameValues) {
  ExpectExportLoadsInLeRobotDataset(dir_->File("lerobot"), "libaom-av1");
}

TEST_F(LeRobotTest, ACorruptParquetFileIsAnErrorNamingIt) {
  TempDir scratch;
  const std::string copy = CopyOfDataset(scratch);
  const std::string table = copy + "/data/chunk-000/file-000.parquet";
  std::ofstream(table, std::ios::trunc) << "this is not parquet";
  absl::StatusOr<LeRobotImportResult> result = Import(copy, scratch.File("out.hdf5"));
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.status().message().find(table), std::string::npos) << result.status();
  EXPECT_FALSE(std::filesystem::exists(scratch.File("out.hdf5")));
}

TEST_F(LeRobotTest, AMissingVideoIsAnErrorNamingIt) {
  TempDir scratch;
  const std::string copy = CopyOfDataset(scratch);
  const std::string video = copy + "/videos/observation.images.front/chunk-000/file-000.mp4";
  std::filesystem::remove(video);
  absl::StatusOr<LeRobotImportResult> result = Import(copy, scratch.File("out.hdf5"));
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.status().message().find(video), std::string::npos) << result.status();
}

TEST_F(LeRobotTest, AnEpisodePastItsTableIsAnErrorNamingTheTable) {
  TempDir scratch;
  const std::string copy = CopyOfDataset(scratch);
  ASSERT_TRUE(RunFixture("shift " + copy + " 100"));
  absl::StatusOr<LeRobotImportResult> result = Import(copy, scratch.File("out.hdf5"));
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), absl::StatusCode::kOutOfRange) << result.status();
  EXPECT_NE(result.status().message().find(copy + "/data/chunk-000/file-000.parquet"), std::string::npos)
      << result.status();
  EXPECT_NE(result.status().message().find("episode 2"), std::string::npos) << result.status();
}

TEST_F(LeRobotTest, AnImageFeatureIsRefusedByName) {
  TempDir scratch;
  const std::string copy = CopyOfDataset(scratch);
  const std::string info_path = copy + "/meta/info.json";
  nlohmann::json info = ReadJson(info_path);
  info["features"]["observation.images.wrist"] = {{"dtype", "image"}, {"shape", {24, 32, 3}}, {"names", nullptr}};
  std::ofstream(info_path, std::ios::trunc) << info.dump();
  absl::StatusOr<LeRobotImportResult> result = Import(copy, scratch.File("out.hdf5"));
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.status().message().find("observation.images.wrist"), std::string::npos) << result.status();
}

TEST_F(LeRobotTest, PathsLeavingTheDatasetFolderAreRefused) {
  TempDir scratch;
  const std::string copy = CopyOfDataset(scratch);
  const std::string info_path = copy + "/meta/info.json";
  const nlohmann::json original = ReadJson(info_path);
  for (const auto& [field, path] : std::vector<std::pair<std::string, std::string>>{
           {"data_path", "../outside/file-{file_index:03d}.parquet"},
           {"data_path", "/etc/passwd"},
           {"video_path", "videos/../../{video_key}.mp4"}}) {
    nlohmann::json info = original;
    info[field] = path;
    std::ofstream(info_path, std::ios::trunc) << info.dump();
    absl::StatusOr<LeRobotImportResult> result = Import(copy, scratch.File("out.hdf5"));
    ASSERT_FALSE(result.ok()) << path;
    const std::string message(result.status().message());
    EXPECT_NE(message.find(info_path + ": " + field + " gives '"), std::string::npos) << message;
    EXPECT_NE(message.find("which leaves the dataset folder"), std::string::npos) << message;
  }
  // A symbolic link out of the folder is refused the same way.
  std::ofstream(info_path, std::ios::trunc) << original.dump();
  std::filesystem::rename(copy + "/data", scratch.File("moved-data"));
  std::filesystem::create_directory_symlink(scratch.File("moved-data"), copy + "/data");
  absl::StatusOr<LeRobotImportResult> linked = Import(copy, scratch.File("out.hdf5"));
  ASSERT_FALSE(linked.ok());
  EXPECT_NE(linked.status().message().find("which leaves the dataset folder"), std::string::npos) << linked.status();
  EXPECT_FALSE(std::filesystem::exists(scratch.File("out.hdf5")));
}

}  // namespace
}  // namespace roboloop::data
