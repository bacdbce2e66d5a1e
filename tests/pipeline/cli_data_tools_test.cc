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

struct CliRun {
  int code;
  std::string out;
  std::string err;
};

// The large merge of InterruptedMergeLeavesNoFileAndKeepsTheOldOne: demos of its input, and times it is merged.
constexpr int kLargeMergeDemos = 100;
constexpr int kLargeMergeInputs = 4;

CliRun RunCli(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {roboloop::testing::RoboloopBinary()};
  argv.insert(argv.end(), args.begin(), args.end());
  roboloop::testing::ProgramResult result = roboloop::testing::RunProgram(argv);
  return {result.exit_code, result.out, result.err};
}

TEST(DataCliTest, InfoPrintsTableAndJson) {
  TempDir dir;
  const std::string path = dir.File("d.hdf5");
  WriteDataset(path, {3, 4});
  const CliRun table = RunCli({"data", "info", path});
  EXPECT_EQ(table.code, 0) << table.err;
  EXPECT_THAT(table.out, HasSubstr("demos      2 (7 steps"));
  const CliRun json = RunCli({"data", "info", path, "--format", "json"});
  ASSERT_EQ(json.code, 0) << json.err;
  EXPECT_EQ(nlohmann::json::parse(json.out)["total_steps"], 7);
}

TEST(DataCliTest, ErrorsAreOneLineNamingTheInput) {
  TempDir dir;
  const CliRun missing = RunCli({"data", "info", dir.File("nope.hdf5")});
  EXPECT_EQ(missing.code, 1);
  EXPECT_EQ(missing.err, "roboloop: data info: " + dir.File("nope.hdf5") + ": no such file\n");
  EXPECT_TRUE(missing.out.empty());
}

TEST(DataCliTest, FoldersAndUnknownReferencesAreNamedAsSuch) {
  TempDir dir;
  const std::string folder = dir.File("adir");
  std::filesystem::create_directory(folder);
  for (const char* tool : {"info", "validate", "stats"}) {
    const CliRun run = RunCli({"data", tool, folder});
    EXPECT_EQ(run.code, 1) << tool;
    EXPECT_EQ(run.err, std::string("roboloop: data ") + tool + ": " + folder + ": is a folder, expected an HDF5 file\n");
  }
  std::filesystem::create_directories(folder + "/meta");
  std::ofstream(folder + "/meta/info.json") << "{}";
  const CliRun lerobot = RunCli({"data", "info", folder});
  EXPECT_EQ(lerobot.code, 1);
  EXPECT_THAT(lerobot.err, HasSubstr(folder + ": is a LeRobot dataset folder, expected an HDF5 file"));
  EXPECT_THAT(lerobot.err, HasSubstr("data import lerobot"));
  const CliRun unknown = RunCli({"data", "info", "nosuch:v1", "--root", dir.File("store")});
  EXPECT_EQ(unknown.code, 1);
  EXPECT_THAT(unknown.err, HasSubstr("'nosuch:v1' is neither a file nor a dataset in the registry"));
}

TEST(DataCliTest, InfoValidateAndStatsFindAReferenceInTheStoreTheirFlagsName) {
  TempDir dir;
  const std::string path = dir.File("d.hdf5");
  WriteDataset(path, {3, 4});
  const std::string store = dir.File("other-store");
  ASSERT_EQ(RunCli({"registry", "put", path, "--dataset", "cp", "--root", store}).code, 0);
  const CliRun info = RunCli({"data", "info", "cp:v1", "--root", store, "--format", "json"});
  ASSERT_EQ(info.code, 0) << info.err;
  const nlohmann::json json = nlohmann::json::parse(info.out);
  EXPECT_EQ(json["total_steps"], 7);
  const CliRun validate = RunCli({"data", "validate", "cp:v1", "--root", store});
  EXPECT_EQ(validate.code, 0) << validate.err;
  EXPECT_THAT(validate.out, HasSubstr("cp:v1: valid (2 demos, 7 steps)"));
  const CliRun stats = RunCli({"data", "stats", "cp:v1", "--root", store, "--format", "json"});
  ASSERT_EQ(stats.code, 0) << stats.err;
  EXPECT_EQ(nlohmann::json::parse(stats.out)["actions"]["count"], 7);
  const CliRun write = RunCli({"data", "stats", "cp:v1", "--root", store, "--write"});
  EXPECT_EQ(write.code, 1);
  EXPECT_THAT(write.err, HasSubstr("cp:v1: --write needs a file; a registered dataset is never modified"));
  // A cached copy edited in place is noticed (its sha256 no longer matches) and fetched again.
  const std::string cached = json["path"];
  ASSERT_EQ(RunCli({"data", "split", cached, "--valid", "0.5"}).code, 0);
  const CliRun again = RunCli({"data", "info", "cp:v1", "--root", store, "--format", "json"});
  ASSERT_EQ(again.code, 0) << again.err;
  EXPECT_TRUE(nlohmann::json::parse(again.out)["splits"].empty()) << again.out;
}

TEST(DataCliTest, RegisterLeavesTheFileAsItWasWhenRegistrationFails) {
  TempDir dir;
  const std::string path = dir.File("d.hdf5");
  WriteDataset(path, {3, 4});
  const std::string before = roboloop::testing::ReadWholeFile(path);
  const CliRun failed =
      RunCli({"data", "register", path, "--name", "d", "--registry", "127.0.0.1:1", "--root", dir.File("store")});
  EXPECT_EQ(failed.code, 1);
  EXPECT_EQ(roboloop::testing::ReadWholeFile(path), before);
  EXPECT_TRUE(data::testing::NamesStartingWith(dir.path(), "d.hdf5.partial").empty());
  // Once registered, the file holds the statistics and is the registered blob.
  const CliRun registered = RunCli({"data", "register", path, "--name", "d", "--root", dir.File("store")});
  ASSERT_EQ(registered.code, 0) << registered.err;
  const CliRun show = RunCli({"registry", "show", "d:v1", "--root", dir.File("store")});
  EXPECT_THAT(show.out, HasSubstr("q99"));
  EXPECT_THAT(show.out, HasSubstr(*Sha256File(path)));
  EXPECT_TRUE(data::testing::NamesStartingWith(dir.path(), "d.hdf5.partial").empty());
}

TEST(DataCliTest, UsageErrorsExitTwo) {
  EXPECT_EQ(RunCli({"data"}).code, 2);
  EXPECT_EQ(RunCli({"data", "info"}).code, 2);
  EXPECT_EQ(RunCli({"data", "info", "f", "--format", "yaml"}).code, 2);
  EXPECT_EQ(RunCli({"data", "merge", "only_one.hdf5", "-o", "x.hdf5"}).code, 2);
  EXPECT_EQ(RunCli({"data", "frobnicate"}).code, 2);
  EXPECT_EQ(RunCli({"data", "split", "f", "--valid", "abc"}).code, 2);
  // --valid is required: a split replaces the file's masks and is never made with a default.
  EXPECT_EQ(RunCli({"data", "split", "f"}).code, 2);
  for (const char* fraction : {"1", "nan", "-0.5"}) {
    const CliRun split = RunCli({"data", "split", "f", "--valid", fraction});
    EXPECT_EQ(split.code, 2) << fraction;
    EXPECT_THAT(split.err, HasSubstr("expected a fraction in [0, 1)")) << fraction;
  }
  // A negative seed is refused, not wrapped round to 2^64 - 1.
  const CliRun negative_seed = RunCli({"data", "split", "f", "--valid", "0.2", "--seed", "-1"});
  EXPECT_EQ(negative_seed.code, 2);
  EXPECT_THAT(negative_seed.err, HasSubstr("--seed"));
  for (const char* fps : {"nan", "0", "inf", "-3"}) {
    const CliRun exported = RunCli({"data", "export", "lerobot", "f.hdf5", "-o", "out", "--fps", fps});
    EXPECT_EQ(exported.code, 2) << fps;
    EXPECT_THAT(exported.err, HasSubstr("--fps")) << fps;
    EXPECT_THAT(exported.err, HasSubstr("expected a positive, finite number")) << fps;
  }
  EXPECT_EQ(RunCli({"data", "validate", "f", "--time-limit-s", "nan"}).code, 2);
  EXPECT_EQ(RunCli({"data", "import", "aloha", "d", "-o", "o.hdf5", "--env-args", "{bad"}).code, 2);
  EXPECT_EQ(RunCli({"data", "--help"}).code, 0);
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
    const CliRun help = RunCli(command);
    ASSERT_EQ(help.code, 0) << help.err;
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
  const CliRun ok = RunCli({"data", "validate", path});
  EXPECT_EQ(ok.code, 0);
  EXPECT_THAT(ok.out, HasSubstr("valid (1 demos, 3 steps)"));
  const CliRun strict = RunCli({"data", "validate", path, "--strict", "--format", "json"});
  EXPECT_EQ(strict.code, 0) << strict.err;
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
  const CliRun strict = RunCli({"data", "validate", path, "--strict"});
  EXPECT_EQ(strict.code, 1);
  EXPECT_THAT(strict.err, HasSubstr("data/demo_0/obs/qpos: 1 NaN/Inf values"));
  const CliRun lenient = RunCli({"data", "validate", path});
  EXPECT_EQ(lenient.code, 0) << lenient.err;
  EXPECT_THAT(lenient.out, HasSubstr("warning: data/demo_0/obs/qpos: 1 NaN/Inf values"));
  const CliRun structure = RunCli({"data", "validate", path, "--structure-only"});
  EXPECT_EQ(structure.code, 0) << structure.err;
  EXPECT_EQ(structure.out, path + ": valid (1 demos, 3 steps)\n");
  EXPECT_EQ(RunCli({"data", "validate", path, "--structure-only", "--strict"}).code, 2);
}

// A file that makes libhdf5 loop forever (docs/RELIABILITY.md) is an error naming it once the
// time limit has passed; the command does not hang.
TEST(DataCliTest, ValidateStopsAFileThatHangsLibhdf5) {
  const std::string path = std::string(ROBOLOOP_THIRD_PARTY_FINDINGS) + "/hdf5_h5hg_read_hang.hdf5";
  const CliRun hung = RunCli({"data", "validate", path, "--time-limit-s", "1"});
  EXPECT_EQ(hung.code, 1);
  EXPECT_EQ(hung.err, "roboloop: data validate: " + path +
                          ": validation did not finish within 1s and was stopped; the file is likely corrupt "
                          "(libhdf5 can loop forever on one)\n");
  EXPECT_EQ(RunCli({"data", "validate", path, "--time-limit-s", "-1"}).code, 2);
}

// `data stats` leaves the file alone unless --write, and says which it did, naming the file.
TEST(DataCliTest, StatsSaysWhetherItWroteTheFile) {
  TempDir dir;
  const std::string path = dir.File("s.hdf5");
  WriteDataset(path, {3, 4});
  auto stored = [&] {
    const CliRun info = RunCli({"data", "info", path, "--format", "json"});
    EXPECT_EQ(info.code, 0) << info.err;
    return !nlohmann::json::parse(info.out)["stats"].is_null();
  };
  const CliRun printed = RunCli({"data", "stats", path});
  ASSERT_EQ(printed.code, 0) << printed.err;
  EXPECT_THAT(printed.out, HasSubstr(path + ": not modified (pass --write"));
  EXPECT_FALSE(stored());
  const CliRun written = RunCli({"data", "stats", path, "--write"});
  ASSERT_EQ(written.code, 0) << written.err;
  EXPECT_THAT(written.out, HasSubstr(path + ": statistics stored in the file's `stats` group"));
  EXPECT_TRUE(stored());
  const CliRun json = RunCli({"data", "stats", path, "--format", "json"});
  ASSERT_EQ(json.code, 0) << json.err;
  EXPECT_EQ(nlohmann::json::parse(json.out)["actions"]["count"], 7);
  EXPECT_THAT(json.err, HasSubstr(path + ": not modified"));
}

TEST(DataCliTest, StatsMergeSplitAndImport) {
  TempDir dir;
  WriteDataset(dir.File("a.hdf5"), {3, 4});
  WriteDataset(dir.File("b.hdf5"), {5});
  const CliRun stats = RunCli({"data", "stats", dir.File("a.hdf5"), "--format", "json"});
  ASSERT_EQ(stats.code, 0) << stats.err;
  EXPECT_EQ(nlohmann::json::parse(stats.out)["actions"]["count"], 7);

  const CliRun merge =
      RunCli({"data", "merge", dir.File("a.hdf5"), dir.File("b.hdf5"), "-o", dir.File("m.hdf5")});
  ASSERT_EQ(merge.code, 0) << merge.err;
  EXPECT_THAT(merge.out, HasSubstr("merged 2 files, 3 demos, 12 steps"));
  const CliRun again =
      RunCli({"data", "merge", dir.File("a.hdf5"), dir.File("b.hdf5"), "-o", dir.File("m.hdf5")});
  EXPECT_EQ(again.code, 1);
  EXPECT_THAT(again.err, HasSubstr("already exists"));

  const CliRun split = RunCli({"data", "split", dir.File("m.hdf5"), "--valid", "0.34", "--seed", "5"});
  ASSERT_EQ(split.code, 0) << split.err;
  EXPECT_THAT(split.out, HasSubstr("mask/train 2 demos, mask/valid 1 demos"));

  const CliRun import = RunCli({"data", "import", "aloha", dir.File("none"), "-o", dir.File("i.hdf5")});
  EXPECT_EQ(import.code, 1);
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
  ASSERT_EQ(RunCli({"data", "merge", dir.File("a.hdf5"), dir.File("a.hdf5"), "-o", output}).code, 0);
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
