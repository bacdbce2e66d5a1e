// Inspecting runs as a user would (`runs`, `status`, `logs`): the real binary, exit code and
// message for a mistyped --root; the status table's rows.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "cli/table.h"
#include "common/fs.h"
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
