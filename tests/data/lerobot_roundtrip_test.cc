// LeRobot export then import without LeRobot (fast): what roboloop writes, roboloop reads back with
// the same values (frames within H.264's tolerance), and what has no LeRobot form is refused by name.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/fs.h"
#include "data/dataset_reader.h"
#include "data/dataset_writer.h"
#include "data/lerobot_export.h"
#include "data/lerobot_import.h"
#include "data/lerobot_format.h"
#include "data/lerobot_video.h"
#include "nlohmann/json.hpp"
#include "tests/data/lerobot_test_util.h"
#include "tests/data/test_util.h"

namespace roboloop::data {
namespace {

using ::testing::ContainsRegex;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::TempDir;

constexpr int kHeight = 16;
constexpr int kWidth = 24;

// MakeEpisode's features LeRobot can hold (no next_obs) and a smooth camera.
Episode CameraEpisode(int steps, int seed) {
  Episode episode = testing::MakeEpisode(steps, seed);
  episode.erase("next_obs/qpos");
  std::vector<uint8_t> pixels;
  for (int t = 0; t < steps; ++t) {
    for (int y = 0; y < kHeight; ++y) {
      for (int x = 0; x < kWidth; ++x) {
        pixels.push_back(static_cast<uint8_t>(8 * x + 3 * t));
        pixels.push_back(static_cast<uint8_t>(12 * y + 20 * seed));
        pixels.push_back(static_cast<uint8_t>(100 + 5 * t));
      }
    }
  }
  episode["obs/cam_image"] = Array::From<uint8_t>({steps, kHeight, kWidth, 3}, pixels);
  return episode;
}

void Write(const std::string& path, const std::vector<Episode>& episodes, const std::string& env_args_json = "{}") {
  DatasetWriter::Options options;
  options.path = path;
  options.env_args_json = env_args_json;
  auto writer = DatasetWriter::Create(options);
  ASSERT_TRUE(writer.ok()) << writer.status();
  for (const Episode& episode : episodes) ASSERT_TRUE((*writer)->WriteEpisode(episode).ok());
  ASSERT_TRUE((*writer)->Close().ok());
}

// Options exporting dir/in.hdf5 to dir/lerobot (frame rate and limits as the file and defaults
// give them).
LeRobotExportOptions InToLeRobot(const TempDir& dir) {
  LeRobotExportOptions options;
  options.input_path = dir.File("in.hdf5");
  options.output_dir = dir.File("lerobot");
  return options;
}

// Imports dir/lerobot into dir/back.hdf5 and expects `episodes` back: every numeric feature
// bitwise with its dtype, the last done set, frames within H.264's tolerance (mean absolute
// error below 6 of 255). Returns the imported file's reader.
std::unique_ptr<DatasetReader> ExpectImportedBack(const TempDir& dir, const std::vector<Episode>& episodes) {
  LeRobotImportOptions import_options;
  import_options.input_dir = dir.File("lerobot");
  import_options.output_path = dir.File("back.hdf5");
  absl::StatusOr<LeRobotImportResult> imported = ImportLeRobot(import_options);
  EXPECT_TRUE(imported.ok()) << imported.status();
  std::unique_ptr<DatasetReader> reader = testing::OpenOrDie(dir.File("back.hdf5"));
  if (reader == nullptr) return reader;
  EXPECT_EQ(reader->layout().demos.size(), episodes.size());
  for (size_t i = 0; i < episodes.size() && i < reader->layout().demos.size(); ++i) {
    absl::StatusOr<Episode> back = reader->ReadEpisode(reader->layout().demos[i].name);
    EXPECT_TRUE(back.ok()) << back.status();
    if (!back.ok()) continue;
    for (const char* feature : {"actions", "obs/qpos", "obs/qvel", "obs/count", "rewards", "states"}) {
      EXPECT_EQ(back->at(feature).bytes, episodes[i].at(feature).bytes) << i << " " << feature;
      EXPECT_EQ(back->at(feature).dtype, episodes[i].at(feature).dtype) << i << " " << feature;
    }
    EXPECT_EQ(back->at("dones").Values<uint8_t>().back(), 1) << i;
    EXPECT_LT(testing::MeanAbsoluteError(back->at("obs/cam_image").bytes, episodes[i].at("obs/cam_image").bytes), 6.0)
        << i;
  }
  return reader;
}

// Exports two camera episodes (7 and 4 steps) to dir/lerobot at 15 fps.
void ExportTwoCameraEpisodes(const TempDir& dir) {
  Write(dir.File("in.hdf5"), {CameraEpisode(7, 0), CameraEpisode(4, 1)});
  LeRobotExportOptions export_options = InToLeRobot(dir);
  export_options.fps = 15;
  ASSERT_TRUE(ExportLeRobot(export_options).ok());
}

TEST(LeRobotRoundTripTest, ExportThenImportKeepsValuesAndFrames) {
  TempDir dir;
  const std::vector<Episode> episodes = {CameraEpisode(7, 0), CameraEpisode(4, 1)};
  Write(dir.File("in.hdf5"), episodes);
  LeRobotExportOptions export_options = InToLeRobot(dir);
  export_options.fps = 15;
  export_options.task = "stack";
  absl::StatusOr<LeRobotExportResult> exported = ExportLeRobot(export_options);
  ASSERT_TRUE(exported.ok()) << exported.status();
  EXPECT_EQ(exported->num_episodes, 2);
  EXPECT_EQ(exported->frames_encoded, 11);

  std::unique_ptr<DatasetReader> reader = ExpectImportedBack(dir, episodes);
  ASSERT_NE(reader, nullptr);
  const nlohmann::json env = nlohmann::json::parse(reader->layout().env_args_json);
  EXPECT_EQ(env["lerobot"]["fps"], 15);
  EXPECT_EQ(env["lerobot"]["tasks"], nlohmann::json({"stack"}));
  EXPECT_EQ(env["env_kwargs"]["obs_keys"], nlohmann::json({"count", "qpos", "qvel"}));
}

// The env_args of a collection of task "reach-cam": its obs keys in the task's order, its camera.
nlohmann::json CollectedEnvArgs() {
  return {{"env_name", "reach-cam"},
          {"type", "roboloop"},
          {"env_kwargs",
           {{"task", "reach-cam"},
            {"policy", "expert"},
            {"obs_keys", {"qvel", "qpos", "count"}},
            {"cameras", {{{"name", "cam"}, {"camera", "top"}, {"width", kWidth}, {"height", kHeight}}}}}}};
}

// A dataset exported and imported back is still of its task: env_name and env_kwargs come back as they were
// (obs_keys in the task's order, not the features' name order), with the LeRobot record beside them.
TEST(LeRobotRoundTripTest, TheTaskAndItsEnvKwargsSurviveTheRoundTrip) {
  TempDir dir;
  const std::vector<Episode> episodes = {CameraEpisode(5, 0), CameraEpisode(3, 1)};
  Write(dir.File("in.hdf5"), episodes, CollectedEnvArgs().dump());
  LeRobotExportOptions export_options = InToLeRobot(dir);
  export_options.fps = 20;
  ASSERT_TRUE(ExportLeRobot(export_options).ok());
  const nlohmann::json info = nlohmann::json::parse(std::ifstream(dir.File("lerobot/meta/info.json")));
  EXPECT_EQ(info["roboloop_env_args"], CollectedEnvArgs());

  std::unique_ptr<DatasetReader> reader = ExpectImportedBack(dir, episodes);
  ASSERT_NE(reader, nullptr);
  nlohmann::json env = nlohmann::json::parse(reader->layout().env_args_json);
  EXPECT_EQ(env["lerobot"]["fps"], 20);
  env.erase("lerobot");
  EXPECT_EQ(env, CollectedEnvArgs());
}

// Kept env_args that name an observation the dataset does not hold (a feature removed by other tools) are an
// error naming info.json and the key; nothing is written.
TEST(LeRobotRoundTripTest, KeptObsKeysWithoutTheirFeatureAreRefused) {
  TempDir dir;
  Write(dir.File("in.hdf5"), {CameraEpisode(3, 0)}, CollectedEnvArgs().dump());
  LeRobotExportOptions export_options = InToLeRobot(dir);
  export_options.fps = 20;
  ASSERT_TRUE(ExportLeRobot(export_options).ok());
  const std::string info_path = dir.File("lerobot/meta/info.json");
  nlohmann::json info = nlohmann::json::parse(std::ifstream(info_path));
  info["roboloop_env_args"]["env_kwargs"]["obs_keys"].push_back("joint_torque");
  std::ofstream(info_path) << info.dump();
  LeRobotImportOptions options;
  options.input_dir = dir.File("lerobot");
  options.output_path = dir.File("back.hdf5");
  absl::StatusOr<LeRobotImportResult> result = ImportLeRobot(options);
  EXPECT_EQ(std::string(result.status().message()),
            info_path + ": roboloop_env_args env_kwargs.obs_keys names \"joint_torque\", but no feature imports as "
                        "obs/<that key>");
  EXPECT_FALSE(std::filesystem::exists(options.output_path));
}

// Size limits below one episode put every episode in files of its own, two files a chunk; the
// import finds each episode's rows and frames where the episodes table says.
TEST(LeRobotRoundTripTest, FilesRollOverAtTheSizeLimitsAndImportBack) {
  TempDir dir;
  const std::vector<Episode> episodes = {CameraEpisode(7, 0), CameraEpisode(4, 1), CameraEpisode(5, 2)};
  Write(dir.File("in.hdf5"), episodes);
  LeRobotExportOptions export_options = InToLeRobot(dir);
  export_options.fps = 15;
  export_options.data_file_mb = 1e-9;
  export_options.video_file_mb = 1e-9;
  export_options.files_per_chunk = 2;
  absl::StatusOr<LeRobotExportResult> exported = ExportLeRobot(export_options);
  ASSERT_TRUE(exported.ok()) << exported.status();
  for (const char* file : {"data/chunk-000/file-000.parquet", "data/chunk-000/file-001.parquet",
                           "data/chunk-001/file-000.parquet", "videos/observation.images.cam/chunk-000/file-000.mp4",
                           "videos/observation.images.cam/chunk-000/file-001.mp4",
                           "videos/observation.images.cam/chunk-001/file-000.mp4"}) {
    EXPECT_TRUE(std::filesystem::is_regular_file(dir.File("lerobot/" + std::string(file)))) << file;
  }
  EXPECT_FALSE(std::filesystem::exists(dir.File("lerobot/data/chunk-001/file-001.parquet")));
  const nlohmann::json info = nlohmann::json::parse(std::ifstream(dir.File("lerobot/meta/info.json")));
  EXPECT_EQ(info["chunks_size"], 2);
  EXPECT_EQ(info["data_files_size_in_mb"], 1e-9);

  ExpectImportedBack(dir, episodes);
}

TEST(LeRobotRoundTripTest, SizeLimitsThatAreNotPositiveAreRefusedByName) {
  TempDir dir;
  Write(dir.File("in.hdf5"), {CameraEpisode(3, 0)});
  LeRobotExportOptions options = InToLeRobot(dir);
  options.fps = 10;
  options.video_file_mb = 0;
  absl::StatusOr<LeRobotExportResult> result = ExportLeRobot(options);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(result.status().message().find("video_file_mb"), std::string::npos) << result.status();
  EXPECT_FALSE(std::filesystem::exists(dir.File("lerobot")));
}

TEST(LeRobotRoundTripTest, EpisodesReadInSeveralBlocksImportAsInOne) {
  TempDir dir;
  ASSERT_NO_FATAL_FAILURE(ExportTwoCameraEpisodes(dir));
  std::vector<std::unique_ptr<DatasetReader>> readers;
  for (const int64_t block_bytes : {int64_t{64} << 20, int64_t{3000}}) {  // whole episodes; 2 rows a block
    LeRobotImportOptions options;
    options.input_dir = dir.File("lerobot");
    options.output_path = dir.File("back_" + std::to_string(block_bytes) + ".hdf5");
    options.max_block_bytes = block_bytes;
    absl::StatusOr<LeRobotImportResult> imported = ImportLeRobot(options);
    ASSERT_TRUE(imported.ok()) << imported.status();
    EXPECT_EQ(imported->total_steps, 11);
    EXPECT_EQ(imported->frames_decoded, 11);
    readers.push_back(testing::OpenOrDie(options.output_path));
  }
  ASSERT_EQ(readers[1]->layout().demos.size(), 2u);
  for (const DemoLayout& demo : readers[0]->layout().demos) {
    absl::StatusOr<Episode> whole = readers[0]->ReadEpisode(demo.name);
    absl::StatusOr<Episode> blocks = readers[1]->ReadEpisode(demo.name);
    ASSERT_TRUE(whole.ok() && blocks.ok());
    ASSERT_EQ(whole->size(), blocks->size());
    for (const auto& [feature, array] : *whole) EXPECT_EQ(blocks->at(feature).bytes, array.bytes) << demo.name << " " << feature;
  }
}

// Zeroes the middle third of the mp4 at `path`'s media data (its mdat box), as a damaged disk or a
// broken copy may.
void ZeroMiddleOfMediaData(const std::string& path) {
  std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(file)), {});
  const size_t mdat = bytes.find("mdat");
  ASSERT_TRUE(mdat != std::string::npos && mdat >= 4) << path;
  const auto* size_bytes = reinterpret_cast<const uint8_t*>(bytes.data() + mdat - 4);
  const size_t size = (size_t{size_bytes[0]} << 24) | (size_t{size_bytes[1]} << 16) | (size_t{size_bytes[2]} << 8) |
                      size_bytes[3];
  ASSERT_GT(size, 30u) << path;
  file.seekp(static_cast<std::streamoff>(mdat + size / 3));
  file.write(std::string(size / 3, '\0').data(), static_cast<std::streamsize>(size / 3));
  ASSERT_TRUE(file.good()) << path;
}

// QA: a video with zeroed bytes printed FFmpeg's own lines ("[h264 @ 0x...] Invalid NAL unit size"),
// which name no file, and the error said only "decoding: Invalid data found when processing input".
// Now FFmpeg prints nothing and the error names the feature, episode, frame and file and ends in
// FFmpeg's messages.
TEST(LeRobotRoundTripTest, ADamagedVideoIsAnErrorNamingItsFrameWithFfmpegsMessagesWhichItDoesNotPrint) {
  TempDir dir;
  ASSERT_NO_FATAL_FAILURE(ExportTwoCameraEpisodes(dir));
  const std::string video = dir.File("lerobot/videos/observation.images.cam/chunk-000/file-000.mp4");
  ASSERT_NO_FATAL_FAILURE(ZeroMiddleOfMediaData(video));
  LeRobotImportOptions options;
  options.input_dir = dir.File("lerobot");
  options.output_path = dir.File("back.hdf5");
  ::testing::internal::CaptureStderr();
  const absl::StatusOr<LeRobotImportResult> imported = ImportLeRobot(options);
  const std::string printed = ::testing::internal::GetCapturedStderr();
  ASSERT_FALSE(imported.ok());
  const std::string message(imported.status().message());
  EXPECT_THAT(message, ContainsRegex("^observation\\.images\\.cam, episode [01], frame [0-9]+: "));
  EXPECT_THAT(message, HasSubstr(video + ": decoding"));
  EXPECT_THAT(message, HasSubstr("; FFmpeg said: h264: "));
  EXPECT_THAT(printed, Not(HasSubstr("h264")));
  EXPECT_FALSE(std::filesystem::exists(options.output_path));
}

// FFmpeg's messages go to the reader whose video they concern, whichever of FFmpeg's threads logs
// them: readers of the damaged video decoding at once each fail with their own messages, and a
// reader of an intact video beside them reads every frame.
TEST(LeRobotRoundTripTest, ReadersDecodingAtOnceKeepTheirOwnFfmpegMessages) {
  TempDir dir;
  ASSERT_NO_FATAL_FAILURE(ExportTwoCameraEpisodes(dir));
  const std::string intact = dir.File("intact.mp4");
  std::filesystem::copy_file(dir.File("lerobot/videos/observation.images.cam/chunk-000/file-000.mp4"), intact);
  const std::string damaged = dir.File("lerobot/videos/observation.images.cam/chunk-000/file-000.mp4");
  ASSERT_NO_FATAL_FAILURE(ZeroMiddleOfMediaData(damaged));
  constexpr int kReaders = 4;
  std::vector<absl::Status> results(kReaders + 1);
  std::vector<std::thread> threads;
  for (int i = 0; i <= kReaders; ++i) {
    threads.emplace_back([&, i] {
      absl::StatusOr<std::unique_ptr<lerobot::VideoReader>> reader = lerobot::VideoReader::Open(i < kReaders ? damaged
                                                                                                             : intact);
      if (!reader.ok()) {
        results[i] = reader.status();
        return;
      }
      std::vector<double> times;
      for (int frame = 0; frame < 11; ++frame) times.push_back(frame / 15.0);
      std::vector<uint8_t> frames(times.size() * (*reader)->width() * (*reader)->height() * 3);
      results[i] = (*reader)->ReadFrames(times, lerobot::kTimestampToleranceS, frames.data());
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int i = 0; i < kReaders; ++i) {
    EXPECT_THAT(std::string(results[i].message()), HasSubstr(damaged + ": decoding")) << i;
    EXPECT_THAT(std::string(results[i].message()), HasSubstr("; FFmpeg said: ")) << i;
    EXPECT_THAT(std::string(results[i].message()), HasSubstr("h264: ")) << i;  // the decoder's, from its threads
  }
  EXPECT_TRUE(results[kReaders].ok()) << results[kReaders];
}

// Every rank of a training job imports its LeRobot datasets into the shared cache, all at once:
// they import once and all get the one whole file.
TEST(LeRobotRoundTripTest, ConcurrentCachedImportsOfOneFolderShareOneFile) {
  TempDir dir;
  ASSERT_NO_FATAL_FAILURE(ExportTwoCameraEpisodes(dir));
  constexpr int kRanks = 3;
  std::vector<absl::StatusOr<std::string>> imported(kRanks, absl::UnknownError("not run"));
  std::vector<std::thread> ranks;
  for (int rank = 0; rank < kRanks; ++rank) {
    ranks.emplace_back([&, rank] { imported[rank] = ImportLeRobotCached(dir.File("lerobot"), dir.File("cache")); });
  }
  for (std::thread& rank : ranks) rank.join();
  for (const absl::StatusOr<std::string>& path : imported) {
    ASSERT_TRUE(path.ok()) << path.status();
    EXPECT_EQ(*path, *imported[0]);
  }
  std::set<std::string> cached;
  for (const auto& entry : std::filesystem::directory_iterator(dir.File("cache"))) {
    cached.insert(entry.path().string());
  }
  EXPECT_EQ(cached, (std::set<std::string>{*imported[0], *imported[0] + ".lock"}));
  EXPECT_EQ(testing::OpenOrDie(*imported[0])->layout().demos.size(), 2u);
}

// The permission bits of the file at `path`.
mode_t Mode(const std::string& path) {
  struct stat info;
  EXPECT_EQ(stat(path.c_str(), &info), 0) << path;
  return info.st_mode & 07777;
}

// Later runs read the cached import: it is read-only (one an older version left writable becomes so
// when reused); deleted, it is imported again, and a changed folder is imported anew beside it.
TEST(LeRobotRoundTripTest, CachedImportsAreReadOnlyAndImportedAgain) {
  TempDir dir;
  ASSERT_NO_FATAL_FAILURE(ExportTwoCameraEpisodes(dir));
  const std::string folder = dir.File("lerobot");
  const absl::StatusOr<std::string> cached = ImportLeRobotCached(folder, dir.File("cache"));
  ASSERT_TRUE(cached.ok()) << cached.status();
  EXPECT_EQ(Mode(*cached), 0444);
  if (geteuid() != 0) {
    EXPECT_LT(open(cached->c_str(), O_WRONLY), 0) << "a user cannot write into it";
  }

  ASSERT_EQ(chmod(cached->c_str(), 0644), 0);
  ASSERT_EQ(ImportLeRobotCached(folder, dir.File("cache")).value_or(""), *cached);
  EXPECT_EQ(Mode(*cached), 0444) << "an older writable import";

  ASSERT_EQ(std::remove(cached->c_str()), 0);
  ASSERT_EQ(ImportLeRobotCached(folder, dir.File("cache")).value_or(""), *cached);
  EXPECT_EQ(Mode(*cached), 0444);
  EXPECT_EQ(testing::OpenOrDie(*cached)->layout().demos.size(), 2u);

  std::ofstream(JoinPath(folder, "README.md")) << "changed\n";
  const absl::StatusOr<std::string> changed = ImportLeRobotCached(folder, dir.File("cache"));
  ASSERT_TRUE(changed.ok()) << changed.status();
  EXPECT_NE(*changed, *cached);
  EXPECT_EQ(Mode(*changed), 0444);
  EXPECT_EQ(testing::OpenOrDie(*changed)->layout().demos.size(), 2u);
}

TEST(LeRobotRoundTripTest, NextObsIsRefusedByName) {
  TempDir dir;
  Write(dir.File("in.hdf5"), {testing::MakeEpisode(3, 0)});
  LeRobotExportOptions options = InToLeRobot(dir);
  options.fps = 10;
  absl::StatusOr<LeRobotExportResult> result = ExportLeRobot(options);
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.status().message().find("next_obs/qpos"), std::string::npos) << result.status();
  EXPECT_TRUE(testing::NamesStartingWith(dir.path(), "lerobot").empty());
}

// --overwrite replaces an earlier export only: another folder, a folder holding the input or the working directory
// are refused and kept; a user's own "<out>.partial" is never touched.
TEST(LeRobotRoundTripTest, OverwriteReplacesOnlyAnEarlierExport) {
  TempDir dir;
  Write(dir.File("in.hdf5"), {CameraEpisode(3, 0)});
  LeRobotExportOptions options = InToLeRobot(dir);
  options.fps = 10;
  options.overwrite = true;
  std::filesystem::create_directory(dir.File("lerobot.partial"));
  std::ofstream(dir.File("lerobot.partial/notes.txt")) << "mine";
  ASSERT_TRUE(ExportLeRobot(options).ok());
  options.task = "again";
  ASSERT_TRUE(ExportLeRobot(options).ok()) << "an earlier export is replaced";
  LeRobotImportOptions import_options;
  import_options.input_dir = dir.File("lerobot");
  import_options.output_path = dir.File("back.hdf5");
  ASSERT_TRUE(ImportLeRobot(import_options).ok());
  const nlohmann::json env = nlohmann::json::parse(testing::OpenOrDie(dir.File("back.hdf5"))->layout().env_args_json);
  EXPECT_EQ(env["lerobot"]["tasks"], nlohmann::json({"again"}));
  EXPECT_TRUE(std::filesystem::exists(dir.File("lerobot.partial/notes.txt")));

  std::filesystem::create_directory(dir.File("results"));
  std::ofstream(dir.File("results/a.txt")) << "keep";
  options.output_dir = dir.File("results/a.txt/deeper/lerobot");
  absl::StatusOr<LeRobotExportResult> below_a_file = ExportLeRobot(options);
  EXPECT_EQ(below_a_file.status().message(),
            "writing " + options.output_dir + ": " + dir.File("results/a.txt") + " is not a folder");
  options.output_dir = dir.File("results");
  absl::StatusOr<LeRobotExportResult> other = ExportLeRobot(options);
  EXPECT_EQ(other.status().message(), dir.File("results") + ": exists and is not a LeRobot dataset folder (no "
                                      "meta/info.json); --overwrite replaces only an earlier export");
  EXPECT_TRUE(std::filesystem::exists(dir.File("results/a.txt")));

  options.output_dir = options.input_path;
  EXPECT_FALSE(ExportLeRobot(options).ok());
  EXPECT_TRUE(std::filesystem::is_regular_file(options.input_path));

  std::filesystem::copy_file(options.input_path, dir.File("lerobot/in.hdf5"));
  options.input_path = dir.File("lerobot/in.hdf5");
  options.output_dir = dir.File("lerobot");
  absl::StatusOr<LeRobotExportResult> holding = ExportLeRobot(options);
  EXPECT_EQ(holding.status().message(), dir.File("lerobot") + ": holds the input " + options.input_path +
                                            "; --overwrite would delete it");
  const std::filesystem::path was = std::filesystem::current_path();
  std::filesystem::current_path(dir.File("lerobot/meta"));
  options.input_path = dir.File("in.hdf5");
  options.output_dir = "..";
  absl::StatusOr<LeRobotExportResult> cwd = ExportLeRobot(options);
  std::filesystem::current_path(was);
  EXPECT_EQ(cwd.status().message(), "..: holds the working directory; --overwrite would delete it");
  EXPECT_TRUE(std::filesystem::exists(dir.File("lerobot/meta/info.json")));
}

// A cancelled export or import (as Ctrl-C cancels the commands) returns Cancelled, leaves nothing under a temporary
// name and keeps the earlier output as it was.
TEST(LeRobotRoundTripTest, CancelledExportAndImportLeaveNoOutputAndKeepTheOldOne) {
  TempDir dir;
  ExportTwoCameraEpisodes(dir);
  LeRobotImportOptions import_options;
  import_options.input_dir = dir.File("lerobot");
  import_options.output_path = dir.File("back.hdf5");
  ASSERT_TRUE(ImportLeRobot(import_options).ok());
  const std::set<std::string> before = {"back.hdf5", "in.hdf5", "lerobot"};
  const std::string info_before = ReadFile(dir.File("lerobot/meta/info.json")).value_or("");
  const std::string back_before = ReadFile(dir.File("back.hdf5")).value_or("");
  common::CancellationToken cancel;
  cancel.Cancel("received SIGINT");

  LeRobotExportOptions export_options = InToLeRobot(dir);
  export_options.fps = 30;
  export_options.overwrite = true;
  export_options.cancel = &cancel;
  absl::StatusOr<LeRobotExportResult> exported = ExportLeRobot(export_options);
  EXPECT_EQ(exported.status().code(), absl::StatusCode::kCancelled) << exported.status();
  EXPECT_EQ(exported.status().message(), "export of " + dir.File("in.hdf5") + " cancelled (received SIGINT)");
  import_options.overwrite = true;
  import_options.cancel = &cancel;
  absl::StatusOr<LeRobotImportResult> imported = ImportLeRobot(import_options);
  EXPECT_EQ(imported.status().code(), absl::StatusCode::kCancelled) << imported.status();
  EXPECT_EQ(imported.status().message(), "import of " + dir.File("lerobot") + " cancelled (received SIGINT)");

  std::set<std::string> after;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) after.insert(entry.path().filename());
  EXPECT_EQ(after, before);
  EXPECT_EQ(ReadFile(dir.File("lerobot/meta/info.json")).value_or(""), info_before);
  EXPECT_EQ(ReadFile(dir.File("back.hdf5")).value_or(""), back_before);
}

TEST(LeRobotRoundTripTest, AFileWithoutAFrameRateNeedsTheFlag) {
  TempDir dir;
  Write(dir.File("in.hdf5"), {CameraEpisode(3, 0)});
  LeRobotExportOptions options = InToLeRobot(dir);
  absl::StatusOr<LeRobotExportResult> result = ExportLeRobot(options);
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.status().message().find("--fps"), std::string::npos) << result.status();
}

TEST(LeRobotRoundTripTest, AFolderWithoutInfoJsonIsAnErrorNamingIt) {
  TempDir dir;
  LeRobotImportOptions options;
  options.input_dir = dir.path();
  options.output_path = dir.File("out.hdf5");
  absl::StatusOr<LeRobotImportResult> result = ImportLeRobot(options);
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.status().message().find(dir.File("meta/info.json")), std::string::npos) << result.status();
}

}  // namespace
}  // namespace roboloop::data
