// LeRobot folders through the real binary (issue 24, reqs 1, 2, 5): `data export lerobot`,
// `data import lerobot`, `data register DIR` and `train --dataset DIR`, which import a LeRobot
// folder once into the store's cache; bad input exits 1 naming it. Arrow and FFmpeg stay out of
// the binary: libroboloop_lerobot.so is loaded on demand.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "data/dataset_writer.h"
#include "tests/util/subprocess.h"

namespace roboloop {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;
using testing::ProgramResult;
using testing::RunRoboloop;

// The camera datasets of the interruption tests: demos of the one imported (its import takes over two seconds after the
// partial file appears), demos of the one exported with AV1 (seconds), and the steps of each demo.
constexpr int kImportedDemos = 128;
constexpr int kExportedDemos = 8;
constexpr int kCameraSteps = 100;

// A small robomimic file: `demos` demos of 12 steps, obs/qpos [12, 4], actions [12, 1].
void WriteDataset(const std::string& path, int demos) {
  data::DatasetWriter::Options options;
  options.path = path;
  auto writer = data::DatasetWriter::Create(options);
  ASSERT_TRUE(writer.ok()) << writer.status();
  for (int d = 0; d < demos; ++d) {
    std::vector<float> obs, actions;
    for (int t = 0; t < 12; ++t) {
      for (int k = 0; k < 4; ++k) obs.push_back(0.1f * d + 0.01f * t + k);
      actions.push_back(0.5f - 0.05f * t);
    }
    data::Episode episode;
    episode["obs/qpos"] = data::Array::From<float>({12, 4}, obs);
    episode["actions"] = data::Array::From<float>({12, 1}, actions);
    ASSERT_TRUE((*writer)->WriteEpisode(episode).ok());
  }
  ASSERT_TRUE((*writer)->Close().ok());
}

// `demos` demos of `steps` steps with a 64x64 camera obs/front_image (a still picture per demo, which H.264 encodes
// fast) besides obs/qpos and actions.
void WriteCameraDataset(const std::string& path, int demos, int steps) {
  data::DatasetWriter::Options options;
  options.path = path;
  auto writer = data::DatasetWriter::Create(options);
  ASSERT_TRUE(writer.ok()) << writer.status();
  for (int d = 0; d < demos; ++d) {
    std::vector<float> obs, actions;
    std::vector<uint8_t> pixels;
    for (int t = 0; t < steps; ++t) {
      for (int k = 0; k < 4; ++k) obs.push_back(0.1f * d + 0.01f * t + k);
      actions.push_back(0.5f - 0.05f * t);
      for (int p = 0; p < 64 * 64 * 3; ++p) {
        pixels.push_back(static_cast<uint8_t>((d * 53 + p / 192 * 29 + p % 3 * 7) % 256));
      }
    }
    data::Episode episode;
    episode["obs/qpos"] = data::Array::From<float>({steps, 4}, obs);
    episode["actions"] = data::Array::From<float>({steps, 1}, actions);
    episode["obs/front_image"] = data::Array::From<uint8_t>({steps, 64, 64, 3}, pixels);
    ASSERT_TRUE((*writer)->WriteEpisode(episode).ok());
  }
  ASSERT_TRUE((*writer)->Close().ok());
}

// Every file under `folder` (relative path -> bytes).
std::map<std::string, std::string> FolderContents(const std::string& folder) {
  std::map<std::string, std::string> contents;
  for (const auto& entry : fs::recursive_directory_iterator(folder)) {
    if (entry.is_regular_file()) {
      contents[fs::relative(entry.path(), folder).string()] = testing::ReadWholeFile(entry.path().string());
    }
  }
  return contents;
}

// The LeRobot imports in the store at `root` (lerobot-<digest>.hdf5, not the .lock files beside them).
std::vector<fs::path> CachedImports(const std::string& root) {
  std::vector<fs::path> imports;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(root + "/cache/datasets", error)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("lerobot-", 0) == 0 && entry.path().extension() == ".hdf5") imports.push_back(entry.path());
  }
  return imports;
}

class CliLeRobotTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::MakeTempDir("cli_lerobot");
    WriteDataset(dir_ + "/demos.hdf5", 3);
    const ProgramResult exported =
        RunRoboloop({"data", "export", "lerobot", dir_ + "/demos.hdf5", "-o", Folder(), "--fps", "20", "--task", "balance"});
    ASSERT_EQ(exported.exit_code, 0) << exported.err;
    EXPECT_THAT(exported.out, HasSubstr("exported 3 episodes, 36 frames"));
  }

  std::string Folder() const { return dir_ + "/lerobot"; }

  std::string dir_;
};

TEST_F(CliLeRobotTest, ExportThenImport) {
  const ProgramResult imported = RunRoboloop({"data", "import", "lerobot", Folder(), "-o", dir_ + "/back.hdf5"});
  ASSERT_EQ(imported.exit_code, 0) << imported.err;
  EXPECT_THAT(imported.out, HasSubstr("imported 3 episodes, 36 steps"));
  EXPECT_THAT(imported.out, HasSubstr("observation.qpos -> obs/qpos"));
  const ProgramResult info = RunRoboloop({"data", "info", dir_ + "/back.hdf5", "--format", "json"});
  ASSERT_EQ(info.exit_code, 0) << info.err;
  EXPECT_THAT(info.out, HasSubstr("\"total_steps\": 36"));
}

TEST_F(CliLeRobotTest, BadInputExitsOneNamingIt) {
  const ProgramResult no_folder = RunRoboloop({"data", "import", "lerobot", dir_ + "/none", "-o", dir_ + "/x.hdf5"});
  EXPECT_EQ(no_folder.exit_code, 1);
  EXPECT_THAT(no_folder.err, StartsWith("roboloop: data import lerobot: " + dir_ + "/none/meta/info.json"));
  const ProgramResult exists = RunRoboloop({"data", "export", "lerobot", dir_ + "/demos.hdf5", "-o", Folder(), "--fps", "20"});
  EXPECT_EQ(exists.exit_code, 1);
  EXPECT_THAT(exists.err, HasSubstr("already exists"));
  EXPECT_EQ(RunRoboloop({"data", "export", "lerobot", dir_ + "/demos.hdf5", "-o", dir_ + "/x", "--codec", "vp9"}).exit_code, 2);
}

// A file that records no frame rate exported without --fps: the setting is missing from the command line, a usage
// error (exit 2) saying so.
TEST_F(CliLeRobotTest, ExportWithoutARecordedFrameRateNeedsFps) {
  const ProgramResult no_fps = RunRoboloop({"data", "export", "lerobot", dir_ + "/demos.hdf5", "-o", dir_ + "/other"});
  EXPECT_EQ(no_fps.exit_code, 2);
  EXPECT_EQ(no_fps.err, "roboloop: data export lerobot: " + dir_ +
                            "/demos.hdf5: no frame rate recorded (env_args lerobot.fps); pass --fps\n");
  EXPECT_FALSE(fs::exists(dir_ + "/other"));
  // An import records the rate: its file needs no --fps.
  ASSERT_EQ(RunRoboloop({"data", "import", "lerobot", Folder(), "-o", dir_ + "/back.hdf5"}).exit_code, 0);
  const ProgramResult recorded = RunRoboloop({"data", "export", "lerobot", dir_ + "/back.hdf5", "-o", dir_ + "/other"});
  EXPECT_EQ(recorded.exit_code, 0) << recorded.err;
}

// QA: Ctrl-C or SIGTERM during `data import lerobot` left `<output>.partial-<uuid>` behind; now the import stops,
// no partial file is left and an earlier file under the output name stays as it was.
TEST_F(CliLeRobotTest, InterruptedImportLeavesNoFileAndKeepsTheOldOne) {
  const std::string out_dir = dir_ + "/out";
  fs::create_directory(out_dir);
  const std::string output = out_dir + "/back.hdf5";
  ASSERT_EQ(RunRoboloop({"data", "import", "lerobot", Folder(), "-o", output}).exit_code, 0);
  const std::string before = testing::ReadWholeFile(output);
  WriteCameraDataset(dir_ + "/camera.hdf5", kImportedDemos, kCameraSteps);
  const std::string camera_folder = dir_ + "/camera_lerobot";
  const ProgramResult exported =
      RunRoboloop({"data", "export", "lerobot", dir_ + "/camera.hdf5", "-o", camera_folder, "--fps", "20"});
  ASSERT_EQ(exported.exit_code, 0) << exported.err;
  for (int signal : {SIGINT, SIGTERM}) {
    const testing::InterruptedProgram stopped = testing::InterruptOncePartialAppears(
        {testing::RoboloopBinary(), "data", "import", "lerobot", camera_folder, "-o", output, "--overwrite"}, out_dir,
        signal);
    ASSERT_TRUE(stopped.partial_seen) << "no partial file appeared";
    EXPECT_EQ(stopped.result.exit_code, 130) << stopped.result.err;
    EXPECT_EQ(stopped.result.err, absl::StrCat("roboloop: data import lerobot: interrupted (received ",
                                               signal == SIGINT ? "SIGINT" : "SIGTERM", "); ", output,
                                               " was not written\n"));
    EXPECT_THAT(testing::DirectoryEntries(out_dir), ::testing::ElementsAre("back.hdf5"));
    EXPECT_EQ(testing::ReadWholeFile(output), before);
  }
}

// QA: Ctrl-C during `data export lerobot --codec av1` left `<output>.partial-<uuid>/` behind; now the export stops,
// no partial folder is left and an earlier export under the output name stays as it was.
TEST_F(CliLeRobotTest, InterruptedExportLeavesNoFolderAndKeepsTheOldOne) {
  const std::map<std::string, std::string> before = FolderContents(Folder());
  WriteCameraDataset(dir_ + "/camera.hdf5", kExportedDemos, kCameraSteps);
  const testing::InterruptedProgram stopped = testing::InterruptOncePartialAppears(
      {testing::RoboloopBinary(), "data", "export", "lerobot", dir_ + "/camera.hdf5", "-o", Folder(), "--fps", "20",
       "--codec", "av1", "--overwrite"},
      dir_, SIGINT);
  ASSERT_TRUE(stopped.partial_seen) << "no partial folder appeared";
  EXPECT_EQ(stopped.result.exit_code, 130) << stopped.result.err;
  EXPECT_EQ(stopped.result.err,
            "roboloop: data export lerobot: interrupted (received SIGINT); " + Folder() + " was not written\n");
  EXPECT_THAT(testing::DirectoryEntries(dir_), ::testing::ElementsAre("camera.hdf5", "demos.hdf5", "lerobot"));
  EXPECT_EQ(FolderContents(Folder()), before);
}

TEST_F(CliLeRobotTest, RegisterImportsTheFolderOnce) {
  const std::string root = dir_ + "/store";
  const ProgramResult first = RunRoboloop({"data", "register", Folder(), "--name", "lerobot-demos", "--root", root});
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_THAT(first.out, HasSubstr("imported LeRobot dataset " + Folder()));
  EXPECT_THAT(first.out, HasSubstr("registered dataset lerobot-demos:v1"));
  ASSERT_EQ(CachedImports(root).size(), 1u);
  const fs::file_time_type written = fs::last_write_time(CachedImports(root).front());
  const ProgramResult second = RunRoboloop({"data", "register", Folder(), "--name", "lerobot-demos", "--root", root});
  ASSERT_EQ(second.exit_code, 0) << second.err;
  EXPECT_EQ(fs::last_write_time(CachedImports(root).front()), written);
}

TEST_F(CliLeRobotTest, TrainTakesALeRobotFolder) {
  std::ofstream(dir_ + "/config.yaml") << "policy:\n  kind: mlp\n  history: 1\n  chunk: 2\nbatch_size: 4\nsteps: 3\nseed: 1\n";
  const std::string root = dir_ + "/train_store";
  const ProgramResult run = RunRoboloop({"train", dir_ + "/config.yaml", "--dataset", Folder(), "--root", root});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(CachedImports(root).size(), 1u);
}

TEST_F(CliLeRobotTest, MissingLeRobotLibraryIsAClearError) {
  const ProgramResult missing = testing::RunProgram(
      {testing::RoboloopBinary(), "data", "import", "lerobot", Folder(), "-o", dir_ + "/x.hdf5"},
      {"ROBOLOOP_LEROBOT_LIBRARY=/nonexistent/libroboloop_lerobot.so"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_THAT(missing.err, HasSubstr("/nonexistent/libroboloop_lerobot.so (absent)"));
}

TEST(CliLeRobotBoundaryTest, RoboloopBinaryLinksNeitherArrowNorFFmpeg) {
  const ProgramResult ldd = testing::RunProgram({"/usr/bin/ldd", testing::RoboloopBinary()});
  ASSERT_EQ(ldd.exit_code, 0);
  ASSERT_THAT(ldd.out, HasSubstr("libhdf5"));  // the listing is real
  for (const char* library : {"libarrow", "libparquet", "libavcodec", "libavformat", "libswscale"}) {
    EXPECT_THAT(ldd.out, Not(HasSubstr(library))) << library;
  }
}

}  // namespace
}  // namespace roboloop
