// The `roboloop data ...` tools through the real binary: output, exit codes 0 / 1 / 2.
#include <csignal>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <vector>

#include "common/sha256.h"
#include "data/dataset_reader.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/data/test_util.h"
#include "tests/util/subprocess.h"

namespace roboloop::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
using data::testing::TempDir;
using data::testing::WriteDataset;
using roboloop::testing::ProgramResult;
using roboloop::testing::RunRoboloop;

// The large merge of InterruptedMergeLeavesNoFileAndKeepsTheOldOne: demos of its input, and times it is merged.
constexpr int kLargeMergeDemos = 100;
constexpr int kLargeMergeInputs = 4;

TEST(DataCliTest, InfoPrintsTableAndJson) {
  TempDir dir;
  const std::string path = dir.File("d.hdf5");
  WriteDataset(path, {3, 4});
  const ProgramResult table = RunRoboloop({"data", "info", path});
  EXPECT_EQ(table.exit_code, 0) << table.err;
  EXPECT_THAT(table.out, HasSubstr("demos      2 (7 steps"));
  const ProgramResult json = RunRoboloop({"data", "info", path, "--format", "json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  EXPECT_EQ(nlohmann::json::parse(json.out)["total_steps"], 7);
}

TEST(DataCliTest, ErrorsAreOneLineNamingTheInput) {
  TempDir dir;
  const ProgramResult missing = RunRoboloop({"data", "info", dir.File("nope.hdf5")});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_EQ(missing.err, "roboloop: data info: " + dir.File("nope.hdf5") + ": no such file\n");
  EXPECT_TRUE(missing.out.empty());
}

TEST(DataCliTest, FoldersAndUnknownReferencesAreNamedAsSuch) {
  TempDir dir;
  const std::string folder = dir.File("adir");
  std::filesystem::create_directory(folder);
  for (const char* tool : {"info", "validate", "stats"}) {
    const ProgramResult run = RunRoboloop({"data", tool, folder});
    EXPECT_EQ(run.exit_code, 1) << tool;
    EXPECT_EQ(run.err, std::string("roboloop: data ") + tool + ": " + folder + ": is a folder, expected an HDF5 file\n");
  }
  std::filesystem::create_directories(folder + "/meta");
  std::ofstream(folder + "/meta/info.json") << "{}";
  const ProgramResult lerobot = RunRoboloop({"data", "info", folder});
  EXPECT_EQ(lerobot.exit_code, 1);
  EXPECT_THAT(lerobot.err, HasSubstr(folder + ": is a LeRobot dataset folder, expected an HDF5 file"));
  EXPECT_THAT(lerobot.err, HasSubstr("data import lerobot"));
  const ProgramResult unknown = RunRoboloop({"data", "info", "nosuch:v1", "--root", dir.File("store")});
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_THAT(unknown.err, HasSubstr("'nosuch:v1' is neither a file nor a dataset in the registry"));
}

TEST(DataCliTest, InfoValidateAndStatsFindAReferenceInTheStoreTheirFlagsName) {
  TempDir dir;
  const std::string path = dir.File("d.hdf5");
  WriteDataset(path, {3, 4});
  const std::string store = dir.File("other-store");
  ASSERT_EQ(RunRoboloop({"registry", "put", path, "--dataset", "cp", "--root", store}).exit_code, 0);
  const ProgramResult info = RunRoboloop({"data", "info", "cp:v1", "--root", store, "--format", "json"});
  ASSERT_EQ(info.exit_code, 0) << info.err;
  const nlohmann::json json = nlohmann::json::parse(info.out);
  EXPECT_EQ(json["total_steps"], 7);
  const ProgramResult validate = RunRoboloop({"data", "validate", "cp:v1", "--root", store});
  EXPECT_EQ(validate.exit_code, 0) << validate.err;
  EXPECT_THAT(validate.out, HasSubstr("cp:v1: valid (2 demos, 7 steps)"));
  const ProgramResult stats = RunRoboloop({"data", "stats", "cp:v1", "--root", store, "--format", "json"});
  ASSERT_EQ(stats.exit_code, 0) << stats.err;
  EXPECT_EQ(nlohmann::json::parse(stats.out)["actions"]["count"], 7);
  const ProgramResult write = RunRoboloop({"data", "stats", "cp:v1", "--root", store, "--write"});
  EXPECT_EQ(write.exit_code, 1);
  EXPECT_THAT(write.err, HasSubstr("cp:v1: --write needs a file; a registered dataset is never modified"));
  // A cached copy edited in place is noticed (its sha256 no longer matches) and fetched again.
  const std::string cached = json["path"];
  ASSERT_EQ(RunRoboloop({"data", "split", cached, "--valid", "0.5"}).exit_code, 0);
  const ProgramResult again = RunRoboloop({"data", "info", "cp:v1", "--root", store, "--format", "json"});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_TRUE(nlohmann::json::parse(again.out)["splits"].empty()) << again.out;
}

TEST(DataCliTest, RegisterLeavesTheFileAsItWasWhenRegistrationFails) {
  TempDir dir;
  const std::string path = dir.File("d.hdf5");
  WriteDataset(path, {3, 4});
  const std::string before = roboloop::testing::ReadWholeFile(path);
  const ProgramResult failed =
      RunRoboloop({"data", "register", path, "--name", "d", "--registry", "127.0.0.1:1", "--root", dir.File("store")});
  EXPECT_EQ(failed.exit_code, 1);
  EXPECT_EQ(roboloop::testing::ReadWholeFile(path), before);
  EXPECT_TRUE(data::testing::NamesStartingWith(dir.path(), "d.hdf5.partial").empty());
  // Once registered, the file holds the statistics and is the registered blob.
  const ProgramResult registered = RunRoboloop({"data", "register", path, "--name", "d", "--root", dir.File("store")});
  ASSERT_EQ(registered.exit_code, 0) << registered.err;
  const ProgramResult show = RunRoboloop({"registry", "show", "d:v1", "--root", dir.File("store")});
  EXPECT_THAT(show.out, HasSubstr("q99"));
  EXPECT_THAT(show.out, HasSubstr(*Sha256File(path)));
  EXPECT_TRUE(data::testing::NamesStartingWith(dir.path(), "d.hdf5.partial").empty());
}

TEST(DataCliTest, UsageErrorsExitTwo) {
  EXPECT_EQ(RunRoboloop({"data"}).exit_code, 2);
  EXPECT_EQ(RunRoboloop({"data", "info"}).exit_code, 2);
  EXPECT_EQ(RunRoboloop({"data", "info", "f", "--format", "yaml"}).exit_code, 2);
  EXPECT_EQ(RunRoboloop({"data", "merge", "only_one.hdf5", "-o", "x.hdf5"}).exit_code, 2);
  EXPECT_EQ(RunRoboloop({"data", "frobnicate"}).exit_code, 2);
  EXPECT_EQ(RunRoboloop({"data", "split", "f", "--valid", "abc"}).exit_code, 2);
  // --valid is required: a split replaces the file's masks and is never made with a default.
  EXPECT_EQ(RunRoboloop({"data", "split", "f"}).exit_code, 2);
  for (const char* fraction : {"1", "nan", "-0.5"}) {
    const ProgramResult split = RunRoboloop({"data", "split", "f", "--valid", fraction});
    EXPECT_EQ(split.exit_code, 2) << fraction;
    EXPECT_THAT(split.err, HasSubstr("expected a fraction in [0, 1)")) << fraction;
  }
  // A negative seed is refused, not wrapped round to 2^64 - 1.
  const ProgramResult negative_seed = RunRoboloop({"data", "split", "f", "--valid", "0.2", "--seed", "-1"});
  EXPECT_EQ(negative_seed.exit_code, 2);
  EXPECT_THAT(negative_seed.err, HasSubstr("--seed"));
  for (const char* fps : {"nan", "0", "inf", "-3"}) {
    const ProgramResult exported = RunRoboloop({"data", "export", "lerobot", "f.hdf5", "-o", "out", "--fps", fps});
    EXPECT_EQ(exported.exit_code, 2) << fps;
    EXPECT_THAT(exported.err, HasSubstr("--fps")) << fps;
    EXPECT_THAT(exported.err, HasSubstr("expected a positive, finite number")) << fps;
  }
  EXPECT_EQ(RunRoboloop({"data", "validate", "f", "--time-limit-s", "nan"}).exit_code, 2);
  EXPECT_EQ(RunRoboloop({"data", "import", "aloha", "d", "-o", "o.hdf5", "--env-args", "{bad"}).exit_code, 2);
  EXPECT_EQ(RunRoboloop({"data", "--help"}).exit_code, 0);
}

// The descriptions under "Subcommands:" in `help`, one per subcommand.
std::vector<std::string> SubcommandDescriptions(const std::string& help) {
  std::vector<std::string> descriptions;
  std::istringstream lines(help);
  bool in_section = false;
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line[0] != ' ') {
      in_section = line == "Subcommands:";
      continue;
    }
    const size_t name_end = line.find_first_not_of(' ');
    const size_t text = line.find_first_not_of(' ', line.find(' ', name_end));
    if (in_section && text != std::string::npos) descriptions.push_back(line.substr(text));
  }
  return descriptions;
}

// `data`'s help reads like every other command's: each subcommand's line starts with a capital.
TEST(DataCliTest, SubcommandHelpLinesStartWithACapital) {
  for (const std::vector<std::string>& command : {std::vector<std::string>{"--help"}, {"data", "--help"},
                                                  {"data", "import", "--help"}, {"data", "export", "--help"}}) {
    const ProgramResult help = RunRoboloop(command);
    ASSERT_EQ(help.exit_code, 0) << help.err;
    const std::vector<std::string> descriptions = SubcommandDescriptions(help.out);
    EXPECT_FALSE(descriptions.empty()) << help.out;
    for (const std::string& description : descriptions) {
      EXPECT_TRUE(std::isupper(static_cast<unsigned char>(description[0]))) << command[0] << ": " << description;
    }
  }
}

TEST(DataCliTest, ValidateIsLenientUnlessStrict) {
  TempDir dir;
  const std::string path = dir.File("d.hdf5");
  WriteDataset(path, {3});
  const ProgramResult ok = RunRoboloop({"data", "validate", path});
  EXPECT_EQ(ok.exit_code, 0);
  EXPECT_THAT(ok.out, HasSubstr("valid (1 demos, 3 steps)"));
  const ProgramResult strict = RunRoboloop({"data", "validate", path, "--strict", "--format", "json"});
  EXPECT_EQ(strict.exit_code, 0) << strict.err;
  EXPECT_EQ(nlohmann::json::parse(strict.out)["valid"], true);
}

// An episode whose obs/qpos holds one NaN (step 1).
data::Episode EpisodeWithANaN(int steps, int seed) {
  data::Episode episode = data::testing::MakeEpisode(steps, seed);
  std::vector<float> qpos(static_cast<size_t>(steps) * 3, 0.5f);
  qpos[4] = std::numeric_limits<float>::quiet_NaN();
  episode["obs/qpos"] = data::Array::From<float>({steps, 3}, qpos);
  return episode;
}

TEST(DataCliTest, ValidateStructureOnlyReadsNoValues) {
  TempDir dir;
  const std::string path = dir.File("nan.hdf5");
  WriteDataset(path, {3}, R"({"env_name": "Lift"})", EpisodeWithANaN);
  const ProgramResult strict = RunRoboloop({"data", "validate", path, "--strict"});
  EXPECT_EQ(strict.exit_code, 1);
  EXPECT_THAT(strict.err, HasSubstr("data/demo_0/obs/qpos: 1 NaN/Inf values"));
  const ProgramResult lenient = RunRoboloop({"data", "validate", path});
  EXPECT_EQ(lenient.exit_code, 0) << lenient.err;
  EXPECT_THAT(lenient.out, HasSubstr("warning: data/demo_0/obs/qpos: 1 NaN/Inf values"));
  const ProgramResult structure = RunRoboloop({"data", "validate", path, "--structure-only"});
  EXPECT_EQ(structure.exit_code, 0) << structure.err;
  EXPECT_EQ(structure.out, path + ": valid (1 demos, 3 steps)\n");
  EXPECT_EQ(RunRoboloop({"data", "validate", path, "--structure-only", "--strict"}).exit_code, 2);
}

// A file that makes libhdf5 loop forever (docs/RELIABILITY.md) is an error naming it once the
// time limit has passed; the command does not hang.
TEST(DataCliTest, ValidateStopsAFileThatHangsLibhdf5) {
  const std::string path = std::string(ROBOLOOP_THIRD_PARTY_FINDINGS) + "/hdf5_h5hg_read_hang.hdf5";
  const ProgramResult hung = RunRoboloop({"data", "validate", path, "--time-limit-s", "1"});
  EXPECT_EQ(hung.exit_code, 1);
  EXPECT_EQ(hung.err, "roboloop: data validate: " + path +
                          ": validation did not finish within 1s and was stopped; the file is likely corrupt "
                          "(libhdf5 can loop forever on one)\n");
  EXPECT_EQ(RunRoboloop({"data", "validate", path, "--time-limit-s", "-1"}).exit_code, 2);
}

// `data stats` leaves the file alone unless --write, and says which it did, naming the file.
TEST(DataCliTest, StatsSaysWhetherItWroteTheFile) {
  TempDir dir;
  const std::string path = dir.File("s.hdf5");
  WriteDataset(path, {3, 4});
  auto stored = [&] {
    const ProgramResult info = RunRoboloop({"data", "info", path, "--format", "json"});
    EXPECT_EQ(info.exit_code, 0) << info.err;
    return !nlohmann::json::parse(info.out)["stats"].is_null();
  };
  const ProgramResult printed = RunRoboloop({"data", "stats", path});
  ASSERT_EQ(printed.exit_code, 0) << printed.err;
  EXPECT_THAT(printed.out, HasSubstr(path + ": not modified (pass --write"));
  EXPECT_FALSE(stored());
  const ProgramResult written = RunRoboloop({"data", "stats", path, "--write"});
  ASSERT_EQ(written.exit_code, 0) << written.err;
  EXPECT_THAT(written.out, HasSubstr(path + ": statistics stored in the file's `stats` group"));
  EXPECT_TRUE(stored());
  const ProgramResult json = RunRoboloop({"data", "stats", path, "--format", "json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  EXPECT_EQ(nlohmann::json::parse(json.out)["actions"]["count"], 7);
  EXPECT_THAT(json.err, HasSubstr(path + ": not modified"));
}

TEST(DataCliTest, StatsMergeSplitAndImport) {
  TempDir dir;
  WriteDataset(dir.File("a.hdf5"), {3, 4});
  WriteDataset(dir.File("b.hdf5"), {5});
  const ProgramResult stats = RunRoboloop({"data", "stats", dir.File("a.hdf5"), "--format", "json"});
  ASSERT_EQ(stats.exit_code, 0) << stats.err;
  EXPECT_EQ(nlohmann::json::parse(stats.out)["actions"]["count"], 7);

  const ProgramResult merge =
      RunRoboloop({"data", "merge", dir.File("a.hdf5"), dir.File("b.hdf5"), "-o", dir.File("m.hdf5")});
  ASSERT_EQ(merge.exit_code, 0) << merge.err;
  EXPECT_THAT(merge.out, HasSubstr("merged 2 files, 3 demos, 12 steps"));
  const ProgramResult again =
      RunRoboloop({"data", "merge", dir.File("a.hdf5"), dir.File("b.hdf5"), "-o", dir.File("m.hdf5")});
  EXPECT_EQ(again.exit_code, 1);
  EXPECT_THAT(again.err, HasSubstr("already exists"));

  const ProgramResult split = RunRoboloop({"data", "split", dir.File("m.hdf5"), "--valid", "0.34", "--seed", "5"});
  ASSERT_EQ(split.exit_code, 0) << split.err;
  EXPECT_THAT(split.out, HasSubstr("mask/train 2 demos, mask/valid 1 demos"));

  const ProgramResult import = RunRoboloop({"data", "import", "aloha", dir.File("none"), "-o", dir.File("i.hdf5")});
  EXPECT_EQ(import.exit_code, 1);
  EXPECT_THAT(import.err, StartsWith("roboloop: data import aloha: " + dir.File("none")));
}

// QA: Ctrl-C during `data merge` left `<output>.partial-<uuid>` behind; now the merge stops, no partial file is left
// and an earlier file under the output name stays as it was.
TEST(DataCliTest, InterruptedMergeLeavesNoFileAndKeepsTheOldOne) {
  TempDir dir;
  WriteDataset(dir.File("a.hdf5"), {3, 4});
  const std::string out_dir = dir.File("out");
  std::filesystem::create_directory(out_dir);
  const std::string output = out_dir + "/m.hdf5";
  ASSERT_EQ(RunRoboloop({"data", "merge", dir.File("a.hdf5"), dir.File("a.hdf5"), "-o", output}).exit_code, 0);
  const std::string before = roboloop::testing::ReadWholeFile(output);
  // One input merged many times over: seconds of copying from a file written in a fraction of that.
  WriteDataset(dir.File("large.hdf5"), std::vector<int>(kLargeMergeDemos, 50), R"({"env_name": "Lift"})",
               data::testing::MakeImageEpisode);
  std::vector<std::string> merge = {roboloop::testing::RoboloopBinary(), "data", "merge", "-o", output, "--overwrite"};
  for (int i = 0; i < kLargeMergeInputs; ++i) merge.push_back(dir.File("large.hdf5"));
  for (int signal : {SIGINT, SIGTERM}) {
    const roboloop::testing::InterruptedProgram stopped =
        roboloop::testing::InterruptOncePartialAppears(merge, out_dir, signal);
    ASSERT_TRUE(stopped.partial_seen) << "no partial file appeared";
    EXPECT_EQ(stopped.result.exit_code, 130) << stopped.result.err;
    EXPECT_THAT(stopped.result.err, HasSubstr("roboloop: data merge: interrupted (received SIG"));
    EXPECT_THAT(stopped.result.err, HasSubstr("; " + output + " was not written\n"));
    EXPECT_THAT(roboloop::testing::DirectoryEntries(out_dir), ::testing::ElementsAre("m.hdf5"));
    EXPECT_EQ(roboloop::testing::ReadWholeFile(output), before);
  }
}

}  // namespace
}  // namespace roboloop::cli
