// Inspecting runs as a user would (`runs`, `status`, `logs`): the real binary, exit code and
// message for a mistyped --root; the status table's rows; `run --resume` from another folder.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "cli/table.h"
#include "common/fs.h"
#include "pipeline/runner.h"
#include "tests/util/subprocess.h"

namespace roboloop {
namespace {

using ::testing::HasSubstr;
using testing::ProgramResult;

ProgramResult Roboloop(std::vector<std::string> args) {
  args.insert(args.begin(), testing::RoboloopBinary());
  return testing::RunProgram(args);
}

TEST(CliRunInspectTest, ARootWithoutARunStoreIsAnErrorAndStaysAbsent) {
  const std::string typo = testing::MakeTempDir("inspect") + "/typo";
  for (const std::vector<std::string>& command :
       {std::vector<std::string>{"runs"}, {"status"}, {"logs", "some-run"}}) {
    std::vector<std::string> args = command;
    args.insert(args.end(), {"--root", typo});
    const ProgramResult result = Roboloop(args);
    EXPECT_EQ(result.exit_code, 1) << command[0] << result.out << result.err;
    EXPECT_THAT(result.err, HasSubstr("--root " + typo + " holds no pipeline runs")) << command[0];
    EXPECT_FALSE(PathExists(typo)) << command[0] << " created the folder";
  }
}

// The id of the run `roboloop run` started, from its first line "run <id>: ...".
std::string StartedRunId(const ProgramResult& result) {
  const size_t start = result.out.find("run ");
  const size_t end = result.out.find(':', start);
  return start == std::string::npos || end == std::string::npos ? "" : result.out.substr(start + 4, end - start - 4);
}

TEST(CliRunInspectTest, AResumeFindsItsPipelineFileFromAnyFolder) {
  const std::string dir = testing::MakeTempDir("resume-folder");
  const std::string root = dir + "/store";
  const std::string elsewhere = dir + "/elsewhere";
  ASSERT_TRUE(MakeDirs(elsewhere).ok());
  ASSERT_TRUE(WriteFileAtomic(dir + "/p.yaml", "name: p\nstages:\n  - {name: demos, kind: collect, "
                                               "collect: {task: cartpole-swingup, policy: random, episodes: 2}}\n")
                  .ok());
  const std::string binary = testing::RoboloopBinary();
  const ProgramResult failed =
      testing::RunProgram({binary, "run", "p.yaml", "--root", root, "--set", "demos.task=nosuch"}, {}, dir);
  ASSERT_EQ(failed.exit_code, 1) << failed.out << failed.err;
  const std::string run = StartedRunId(failed);
  ASSERT_FALSE(run.empty()) << failed.out;

  const ProgramResult named =
      testing::RunProgram({binary, "run", "../p.yaml", "--resume", run, "--root", root}, {}, elsewhere);
  EXPECT_EQ(named.exit_code, 1) << named.out << named.err;
  EXPECT_THAT(named.err, HasSubstr("unknown task 'nosuch'")) << "the same file by another relative path is the run's own";
  const ProgramResult resumed = testing::RunProgram(
      {binary, "run", "--resume", run, "--root", root, "--set", "demos.task=cartpole-swingup"}, {}, elsewhere);
  EXPECT_EQ(resumed.exit_code, 0) << resumed.out << resumed.err;
  EXPECT_THAT(Roboloop({"runs", "--root", root}).out, HasSubstr(pipeline::RecordedPath(dir + "/p.yaml")));
}

TEST(CliRunInspectTest, ACellWithLineBreaksStaysOnItsRow) {
  cli::Table table({"STAGE", "OUTPUTS / ERROR"});
  table.AddRow({"train", "INTERNAL: first line\nsecond line\n"});
  table.AddRow({"eval", "ok"});
  EXPECT_EQ(table.Render(), "STAGE  OUTPUTS / ERROR\n"
                            "train  INTERNAL: first line | second line\n"
                            "eval   ok\n");
}

}  // namespace
}  // namespace roboloop
