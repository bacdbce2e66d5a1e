// `roboloop data …` (with `data register` into the registry) and `roboloop sim …`, driven
// through the real binary.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <signal.h>

#include <cstdio>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "data/dataset_writer.h"
#include "tests/util/subprocess.h"

namespace roboloop {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing::ProgramResult;
using testing::RunRoboloop;

// Writes a small robomimic file of `demos` demos whose values depend on `seed`.
void WriteDataset(const std::string& path, int demos, float seed) {
  data::DatasetWriter::Options options;
  options.path = path;
  options.env_args_json = R"({"env_name":"cartpole-balance"})";
  auto writer = data::DatasetWriter::Create(options);
  ASSERT_TRUE(writer.ok()) << writer.status();
  for (int d = 0; d < demos; ++d) {
    std::vector<float> obs, actions;
    for (int t = 0; t < 10; ++t) {
      for (int k = 0; k < 4; ++k) obs.push_back(seed + 0.1f * d + 0.01f * t + k);
      actions.push_back(seed - 0.05f * t);
    }
    data::Episode episode;
    episode["obs/qpos"] = data::Array::From<float>({10, 4}, obs);
    episode["actions"] = data::Array::From<float>({10, 1}, actions);
    ASSERT_TRUE((*writer)->WriteEpisode(episode).ok());
  }
  ASSERT_TRUE((*writer)->Close().ok());
}

TEST(CliDataTest, RegisterRecordsStatsAndRegisteredParents) {
  std::string dir = testing::MakeTempDir("clidata");
  std::string root = dir + "/store";
  WriteDataset(dir + "/a.hdf5", 3, 1.0f);
  WriteDataset(dir + "/b.hdf5", 2, 2.0f);
  ProgramResult a = RunRoboloop({"data", "register", dir + "/a.hdf5", "--name", "demos", "--root", root});
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_THAT(a.out, HasSubstr("registered dataset demos:v1"));

  ProgramResult merged = RunRoboloop({"data", "merge", dir + "/a.hdf5", dir + "/b.hdf5", "-o", dir + "/ab.hdf5"});
  ASSERT_EQ(merged.exit_code, 0) << merged.err;
  ProgramResult ab = RunRoboloop({"data", "register", dir + "/ab.hdf5", "--name", "demos", "--root", root});
  ASSERT_EQ(ab.exit_code, 0) << ab.err;
  EXPECT_THAT(ab.out, HasSubstr("demos:v2"));
  EXPECT_THAT(ab.out, HasSubstr("(1 parents)"));  // a is registered, b is not

  ProgramResult show = RunRoboloop({"registry", "show", "demos:v2", "--root", root});
  ASSERT_EQ(show.exit_code, 0) << show.err;
  nlohmann::json dataset = nlohmann::json::parse(show.out);
  nlohmann::json metadata = nlohmann::json::parse(dataset["metadata_json"].get<std::string>());
  EXPECT_TRUE(metadata.dump().find("q99") != std::string::npos) << metadata.dump();
  ProgramResult lineage = RunRoboloop({"registry", "lineage", "demos:v2", "--root", root});
  EXPECT_THAT(lineage.out, ::testing::ContainsRegex("self +dataset +[0-9a-f]+ +demos:v2"));
  EXPECT_THAT(lineage.out, ::testing::ContainsRegex("made-from +dataset +[0-9a-f]+ +demos:v1"));
  ProgramResult descendants = RunRoboloop({"registry", "lineage", "demos:v1", "--root", root});
  ASSERT_EQ(descendants.exit_code, 0) << descendants.err;
  EXPECT_THAT(descendants.out, ::testing::ContainsRegex("made-into +dataset +[0-9a-f]+ +demos:v2"));
}

TEST(CliDataTest, InfoTakesARegistryReference) {
  std::string dir = testing::MakeTempDir("clidataref");
  WriteDataset(dir + "/a.hdf5", 3, 1.5f);
  ProgramResult put = testing::RunProgram({testing::RoboloopBinary(), "data", "register", dir + "/a.hdf5",
                                           "--name", "refdemo"},
                                          {}, dir);
  ASSERT_EQ(put.exit_code, 0) << put.err;
  ProgramResult info = testing::RunProgram(
      {testing::RoboloopBinary(), "data", "info", "refdemo@latest", "--format", "json"}, {}, dir);
  ASSERT_EQ(info.exit_code, 0) << info.err;
  EXPECT_THAT(info.out, HasSubstr("obs/qpos"));
  ProgramResult unknown = testing::RunProgram(
      {testing::RoboloopBinary(), "data", "info", "nodemo@latest"}, {}, dir);
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_THAT(unknown.err, HasSubstr("nodemo@latest"));
}

TEST(CliDataTest, ToolsRunFromTheMainBinaryWithExitCodes) {
  std::string dir = testing::MakeTempDir("clidata");
  WriteDataset(dir + "/a.hdf5", 2, 0.5f);
  ProgramResult info = RunRoboloop({"data", "info", dir + "/a.hdf5", "--format", "json"});
  ASSERT_EQ(info.exit_code, 0) << info.err;
  EXPECT_THAT(info.out, HasSubstr("obs/qpos"));
  ProgramResult missing = RunRoboloop({"data", "validate", dir + "/missing.hdf5"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_THAT(missing.err, HasSubstr("missing.hdf5"));
  ProgramResult usage = RunRoboloop({"data", "merge", dir + "/a.hdf5"});
  EXPECT_EQ(usage.exit_code, 2);
  ProgramResult bad_register = RunRoboloop({"data", "register", dir + "/missing.hdf5", "--name", "x",
                                         "--root", dir + "/store"});
  EXPECT_EQ(bad_register.exit_code, 1);
  EXPECT_THAT(bad_register.err, HasSubstr("missing.hdf5"));
}

// QA: `sim collect -o missing/x.hdf5` failed after setting up with HDF5's error about the
// internal x.hdf5.partial-<uuid>. Every command writing a dataset names the output asked for and
// its missing folder (or the file in the folder's place) before any work, exit 1.
TEST(CliDataTest, AnOutputInAMissingFolderIsNamedBeforeAnyWork) {
  const std::string dir = testing::MakeTempDir("cliout");
  WriteDataset(dir + "/a.hdf5", 2, 0.5f);
  for (const std::string& output : {dir + "/missing/x.hdf5", dir + "/a.hdf5/x.hdf5"}) {
    const std::string problem = output == dir + "/missing/x.hdf5" ? "folder " + dir + "/missing does not exist"
                                                                  : dir + "/a.hdf5 is not a folder";
    const std::vector<std::vector<std::string>> commands = {
        {"sim", "collect", "--task", "cartpole-swingup", "--policy", "random", "--episodes", "1", "-o", output},
        {"sim", "relabel", dir + "/a.hdf5", "--task", "cartpole-swingup", "-o", output},
        {"data", "merge", dir + "/a.hdf5", dir + "/a.hdf5", "-o", output},
        {"data", "import", "lerobot", dir, "-o", output},
        {"data", "import", "aloha", dir, "-o", output},
    };
    for (const std::vector<std::string>& command : commands) {
      const ProgramResult result = RunRoboloop(command);
      EXPECT_EQ(result.exit_code, 1) << command[1] << " " << result.err;
      EXPECT_THAT(result.err, HasSubstr("writing " + output + ": " + problem + "\n")) << command[1];
      EXPECT_THAT(result.err, Not(HasSubstr("partial"))) << command[1];
    }
  }
}

// QA: relabelling a dataset of a YAML task without --task-yaml said only "unknown task"; now a
// local sim command's unknown task names the flags that add tasks of YAML files and plug-ins.
TEST(CliSimTest, AnUnknownTaskNamesTheFlagsThatAddTasks) {
  const std::string dir = testing::MakeTempDir("clitaskhint");
  const std::string yaml = ROBOLOOP_SOURCE_DIR "/configs/tasks/point_reach.yaml";
  const ProgramResult collect = RunRoboloop({"sim", "collect", "--task", "yaml-point-reach", "--task-yaml", yaml,
                                             "--policy", "random", "--episodes", "1", "--max-steps", "3", "-o",
                                             dir + "/p.hdf5"});
  ASSERT_EQ(collect.exit_code, 0) << collect.err;
  const ProgramResult relabel = RunRoboloop({"sim", "relabel", dir + "/p.hdf5", "-o", dir + "/r.hdf5"});
  EXPECT_EQ(relabel.exit_code, 1) << relabel.err;
  EXPECT_THAT(relabel.err, HasSubstr("unknown task 'yaml-point-reach'"));
  EXPECT_THAT(relabel.err, HasSubstr("a task declared in a YAML file needs --task-yaml FILE, one a plug-in adds "
                                     "--task-plugin LIBRARY"));
  const ProgramResult rollout = RunRoboloop({"sim", "rollout", "--task", "nosuch", "--policy", "random", "--episodes", "1"});
  EXPECT_EQ(rollout.exit_code, 1) << rollout.err;
  EXPECT_THAT(rollout.err, HasSubstr("--task-yaml FILE"));
}

TEST(CliSimTest, TasksAndDeterministicRollouts) {
  ProgramResult tasks = RunRoboloop({"sim", "tasks", "--format", "json"});
  ASSERT_EQ(tasks.exit_code, 0) << tasks.err;
  EXPECT_THAT(tasks.out, HasSubstr("cartpole-swingup"));
  EXPECT_THAT(tasks.out, HasSubstr("reacher"));

  auto hashes = [](const std::string& jsonl) {
    std::vector<std::string> out;
    std::istringstream lines(jsonl);
    for (std::string line; std::getline(lines, line);) {
      nlohmann::json record = nlohmann::json::parse(line);
      out.push_back(record["final_state_hash"].dump() + record["episode_index"].dump());
    }
    return out;
  };
  ProgramResult one = RunRoboloop({"sim", "rollout", "--task", "reacher", "--policy", "expert", "--episodes",
                                "4", "--seed", "7", "--format", "json"});
  ASSERT_EQ(one.exit_code, 0) << one.err;
  ProgramResult many = RunRoboloop({"sim", "rollout", "--task", "reacher", "--policy", "expert", "--episodes",
                                 "4", "--seed", "7", "--envs", "3", "--threads", "2", "--format", "json"});
  ASSERT_EQ(many.exit_code, 0) << many.err;
  std::vector<std::string> a = hashes(one.out), b = hashes(many.out);
  ASSERT_EQ(a.size(), 4u);
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  EXPECT_EQ(a, b);

  ProgramResult table = RunRoboloop({"sim", "rollout", "--task", "cartpole-balance", "--policy", "expert",
                                  "--episodes", "2"});
  EXPECT_THAT(table.out, HasSubstr("success 2/2"));
  ProgramResult unknown = RunRoboloop({"sim", "rollout", "--task", "cartpole", "--policy", "expert",
                                    "--episodes", "1"});
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_THAT(unknown.err, HasSubstr("known tasks: cartpole-balance"));
  ProgramResult bad_plugin = RunRoboloop({"sim", "tasks", "--task-plugin", "/nonexistent/libtask.so"});
  EXPECT_EQ(bad_plugin.exit_code, 1);
  EXPECT_THAT(bad_plugin.err, HasSubstr("/nonexistent/libtask.so"));
}

// Bad flag values of the sim commands exit 2 naming the flag, and an unreachable --register
// registry exits 1, before any episode runs or any file is written.
TEST(CliSimTest, BadRolloutAndCollectFlagsAreUsageErrorsNamingTheFlag) {
  const std::string dir = testing::MakeTempDir("clisimflags");
  const std::vector<std::string> rollout = {"sim", "rollout", "--task", "reacher", "--policy", "random"};
  const std::vector<std::string> collect = {"sim", "collect", "--task", "reacher", "--policy", "random",
                                            "-o", dir + "/c.hdf5", "--root", dir + "/store"};
  struct Case {
    std::vector<std::string> command, flags;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {rollout, {"--episodes", "1", "--seed", "-1"}, "--seed"},
      {rollout, {"--episodes", "0"}, "--episodes"},
      {rollout, {"--episodes", "1", "--envs", "-3"}, "--envs: '-3' is not a whole number >= 1"},
      {collect, {"--episodes", "1", "--threads", "-1"}, "--threads: '-1' is not a whole number >= 1"},
      {rollout, {"--episodes", "1", "--chunk-execution", "bogus"}, "chunk execution 'bogus' must be"},
      {collect, {"--episodes", "1", "--max-steps", "0"}, "--max-steps"},
      {collect, {"--episodes", "1", "--register", "Bad Name"}, "--register: invalid dataset name"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args = c.command;
    args.insert(args.end(), c.flags.begin(), c.flags.end());
    ProgramResult result = RunRoboloop(args);
    EXPECT_EQ(result.exit_code, 2) << c.expected << ": " << result.err;
    EXPECT_THAT(result.err, HasSubstr(c.expected));
    EXPECT_FALSE(std::filesystem::exists(dir + "/c.hdf5")) << c.expected;
  }
  std::vector<std::string> unreachable = collect;
  unreachable.insert(unreachable.end(), {"--episodes", "1", "--register", "ok", "--registry", "127.0.0.1:1"});
  ProgramResult result = RunRoboloop(unreachable);
  EXPECT_EQ(result.exit_code, 1) << result.err;
  EXPECT_THAT(result.err, HasSubstr("--register: checking the registry before any work"));
  EXPECT_FALSE(std::filesystem::exists(dir + "/c.hdf5")) << "nothing is collected for an unreachable registry";
}

// `sim tasks` shows one line per task: a YAML task's folded description is cut to its first
// clause, with no trailing newline leaving a blank line in the table.
TEST(CliSimTest, TasksTableHasOneLinePerTask) {
  ProgramResult tasks = RunRoboloop({"sim", "tasks", "--task-yaml", ROBOLOOP_SOURCE_DIR "/configs/tasks/point_reach.yaml"});
  ASSERT_EQ(tasks.exit_code, 0) << tasks.err;
  ProgramResult json = RunRoboloop({"sim", "tasks", "--format", "json", "--task-yaml",
                                 ROBOLOOP_SOURCE_DIR "/configs/tasks/point_reach.yaml"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const size_t task_count = nlohmann::json::parse(json.out)["tasks"].size();
  std::vector<std::string> lines;
  std::istringstream text(tasks.out);
  for (std::string line; std::getline(text, line);) lines.push_back(line);
  EXPECT_EQ(lines.size(), task_count + 1) << tasks.out;  // the header and a line per task
  std::string yaml_row;
  for (const std::string& line : lines) {
    EXPECT_FALSE(line.find_first_not_of(' ') == std::string::npos) << "a blank line in\n" << tasks.out;
    if (line.rfind("yaml-point-reach", 0) == 0) yaml_row = line;
  }
  EXPECT_THAT(yaml_row, ::testing::EndsWith("Drive a puck to a target sampled in a 0.6 m square"));
}

// The value after `label` in `text` (up to the next space, comma or newline).
std::string WordAfter(const std::string& text, const std::string& label) {
  const size_t at = text.find(label);
  if (at == std::string::npos) return "";
  const size_t begin = at + label.size();
  return text.substr(begin, text.find_first_of(" ,\n", begin) - begin);
}

TEST(CliSimTest, CollectRegistersAndRelabelRecordsTheRegisteredParent) {
  const std::string dir = testing::MakeTempDir("clisimcollect");
  const std::string root = dir + "/store";
  ProgramResult collect = RunRoboloop({"sim", "collect", "--task", "pendulum-swingup", "--policy", "expert",
                                    "--episodes", "3", "--seed", "8", "--max-steps", "40", "--envs", "2",
                                    "-o", dir + "/demos.hdf5", "--register", "pend", "--root", root});
  ASSERT_EQ(collect.exit_code, 0) << collect.err;
  EXPECT_THAT(collect.out, HasSubstr("3 demos, 120 steps"));
  EXPECT_THAT(collect.out, HasSubstr("registered dataset pend:v1"));
  ProgramResult info = RunRoboloop({"data", "info", dir + "/demos.hdf5", "--format", "json"});
  ASSERT_EQ(info.exit_code, 0) << info.err;
  nlohmann::json json = nlohmann::json::parse(info.out);
  EXPECT_EQ(json["num_demos"], 3);
  EXPECT_EQ(json["lineage"]["operation"], "collect");
  EXPECT_THAT(json["env_args"].dump(), HasSubstr("pendulum-swingup"));

  ProgramResult relabel = RunRoboloop({"sim", "relabel", dir + "/demos.hdf5", "-o", dir + "/dagger.hdf5",
                                    "--register", "pend-dagger", "--root", root});
  ASSERT_EQ(relabel.exit_code, 0) << relabel.err;
  EXPECT_THAT(relabel.out, HasSubstr("(1 parents)"));
  ProgramResult lineage = RunRoboloop({"registry", "lineage", "pend-dagger:v1", "--root", root});
  EXPECT_THAT(lineage.out, HasSubstr("pend:v1"));

  ProgramResult again = RunRoboloop({"sim", "collect", "--task", "pendulum-swingup", "--policy", "expert",
                                  "--episodes", "1", "-o", dir + "/demos.hdf5"});
  EXPECT_EQ(again.exit_code, 1);
  EXPECT_THAT(again.err, HasSubstr("demos.hdf5"));
  ProgramResult missing = RunRoboloop({"sim", "relabel", dir + "/none.hdf5", "-o", dir + "/x.hdf5"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_THAT(missing.err, HasSubstr("none.hdf5"));

  // An input that crashes libhdf5 (docs/RELIABILITY.md) is an error naming it, checked before the relabel reads it.
  const std::string hostile = std::string(ROBOLOOP_THIRD_PARTY_FINDINGS) + "/hdf5_h5hg_read_memcpy_overlap.hdf5";
  ProgramResult crashing = RunRoboloop({"sim", "relabel", hostile, "-o", dir + "/y.hdf5"});
  EXPECT_EQ(crashing.exit_code, 1);
  EXPECT_THAT(crashing.err, HasSubstr(hostile + ": validation "));
  EXPECT_THAT(crashing.err, HasSubstr("the file is likely corrupt"));
  EXPECT_FALSE(std::filesystem::exists(dir + "/y.hdf5"));
}

TEST(CliSimTest, CollectGivesTheSameFileForAnyEnvs) {
  const std::string dir = testing::MakeTempDir("clisimdet");
  std::vector<std::string> hashes;
  for (const char* envs : {"1", "3"}) {
    ProgramResult collect = RunRoboloop({"sim", "collect", "--task", "cartpole-balance", "--policy", "random",
                                      "--episodes", "5", "--max-steps", "60", "--envs", envs, "--threads", "2",
                                      "-o", dir + "/envs" + envs + ".hdf5"});
    ASSERT_EQ(collect.exit_code, 0) << collect.err;
    hashes.push_back(WordAfter(collect.out, "sha256 "));
  }
  EXPECT_EQ(hashes[0].size(), 64u);
  EXPECT_EQ(hashes[0], hashes[1]);
}

// QA: Ctrl-C during `sim collect` left `<output>.partial-<uuid>` behind; now the rollout stops, no partial
// file is left and an earlier file under the output name stays as it was.
TEST(CliSimTest, InterruptedCollectLeavesNoFileAndKeepsTheOldOne) {
  const std::string dir = testing::MakeTempDir("clisimint");
  const std::string output = dir + "/demos.hdf5";
  const std::vector<std::string> collect = {testing::RoboloopBinary(), "sim", "collect", "--task", "cartpole-balance",
                                            "--policy", "random", "--max-steps", "60", "-o", output, "--overwrite",
                                            "--episodes"};
  std::vector<std::string> small = collect;
  small.push_back("2");
  ASSERT_EQ(testing::RunProgram(small).exit_code, 0);
  const std::string before = testing::ReadWholeFile(output);
  for (int signal : {SIGINT, SIGTERM}) {
    std::vector<std::string> large = collect;
    large.push_back("1000000");
    const testing::InterruptedProgram stopped = testing::InterruptOncePartialAppears(large, dir, signal);
    ASSERT_TRUE(stopped.partial_seen) << "no partial file appeared";
    EXPECT_EQ(stopped.result.exit_code, 130) << stopped.result.err;
    EXPECT_THAT(stopped.result.err, HasSubstr("collect cancelled; " + output + " was not written"));
    EXPECT_THAT(testing::DirectoryEntries(dir), ::testing::ElementsAre("demos.hdf5"));
    EXPECT_EQ(testing::ReadWholeFile(output), before);
  }
}

// The state hash chain of `sim rollout --format json`, pasted as it is into `sim replay --expect-hash`.
TEST(CliSimTest, ReplayVerifiesTheHashChainOfARolloutEpisode) {
  ProgramResult rollout = RunRoboloop({"sim", "rollout", "--task", "cartpole-swingup", "--policy", "expert",
                                    "--episodes", "2", "--seed", "3", "--max-steps", "80", "--format", "json"});
  ASSERT_EQ(rollout.exit_code, 0) << rollout.err;
  std::istringstream lines(rollout.out);
  std::string line;
  std::getline(lines, line);
  std::getline(lines, line);
  nlohmann::json record = nlohmann::json::parse(line);
  const std::string hex = record["state_hash_chain"].get<std::string>();  // pasted as the JSON gives it
  EXPECT_THAT(hex, ::testing::MatchesRegex("[0-9a-f]{16}"));
  ProgramResult table = RunRoboloop({"sim", "rollout", "--task", "cartpole-swingup", "--policy", "expert",
                                  "--episodes", "2", "--seed", "3", "--max-steps", "80"});
  EXPECT_THAT(table.out, HasSubstr(hex)) << "the table shows the hash as the JSON does";
  const std::string episode = record["episode_index"].get<std::string>();  // int64 is a JSON string
  ProgramResult ok = RunRoboloop({"sim", "replay", "--task", "cartpole-swingup", "--policy", "expert", "--seed", "3",
                               "--max-steps", "80", "--episode", episode, "--expect-hash", hex});
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_THAT(ok.out, HasSubstr("replayed bit for bit"));
  ProgramResult other_seed = RunRoboloop({"sim", "replay", "--task", "cartpole-swingup", "--policy", "expert",
                                       "--seed", "4", "--max-steps", "80", "--episode", episode,
                                       "--expect-hash", hex});
  EXPECT_EQ(other_seed.exit_code, 1);
  EXPECT_THAT(other_seed.err, HasSubstr(std::string("expected ") + hex));
  ProgramResult bad = RunRoboloop({"sim", "replay", "--task", "cartpole-swingup", "--policy", "expert",
                                "--episode", "0", "--expect-hash", "not-hex"});
  EXPECT_EQ(bad.exit_code, 2);
}

// The text of the first ```sh block of `markdown` that mentions `needle` ("" when none does).
std::string ShellBlockWith(const std::string& markdown, const std::string& needle) {
  for (size_t start = markdown.find("```sh\n"); start != std::string::npos; start = markdown.find("```sh\n", start + 1)) {
    const size_t body = start + 6;
    const std::string block = markdown.substr(body, markdown.find("```", body) - body);
    if (block.find(needle) != std::string::npos) return block;
  }
  return "";
}

// docs/adding-a-task.md's plug-in build, run as written in a copy of the files it uses (a git checkout): it lists
// the plug-in's task and leaves nothing in the checkout that git would show as untracked.
TEST(CliSimTest, TheDocumentedPluginBuildLeavesNothingUntracked) {
  const std::string block =
      ShellBlockWith(testing::ReadWholeFile(ROBOLOOP_SOURCE_DIR "/docs/adding-a-task.md"), "slider_reach_plugin.c");
  ASSERT_FALSE(block.empty()) << "docs/adding-a-task.md has no sh block building the example plug-in";
  const std::string checkout = testing::MakeTempDir("plugin-doc");
  for (const char* file : {".gitignore", "scripts/venv.sh", "sim/task_plugin_abi.h",
                           "sim/examples/task_plugin/slider_reach_plugin.c"}) {
    std::filesystem::create_directories(std::filesystem::path(checkout + "/" + file).parent_path());
    std::filesystem::copy_file(std::string(ROBOLOOP_SOURCE_DIR "/") + file, checkout + "/" + file);
  }
  const auto git = [&](const std::vector<std::string>& args) {
    std::vector<std::string> argv = {"/usr/bin/git", "-C", checkout};
    argv.insert(argv.end(), args.begin(), args.end());
    return testing::RunProgram(argv);
  };
  ASSERT_EQ(git({"init", "-q"}).exit_code, 0);
  ASSERT_EQ(git({"add", "-A"}).exit_code, 0);
  const std::string bin_dir = std::filesystem::path(testing::RoboloopBinary()).parent_path().string();
  const ProgramResult run =
      testing::RunProgram({"/bin/bash", "-euo", "pipefail", "-c", "export PATH=" + bin_dir + ":$PATH\n" + block}, {},
                          checkout);
  ASSERT_EQ(run.exit_code, 0) << block << run.err;
  EXPECT_THAT(run.out, HasSubstr("plugin-slider-reach"));
  const ProgramResult untracked = git({"ls-files", "--others", "--exclude-standard"});
  ASSERT_EQ(untracked.exit_code, 0) << untracked.err;
  EXPECT_EQ(untracked.out, "") << "the documented build leaves files git does not ignore";
}

}  // namespace
}  // namespace roboloop
