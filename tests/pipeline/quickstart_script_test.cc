// README command 1 as written: scripts/quickstart.sh installs (a no-op here), builds (nothing
// to do) and runs the quick-start pipeline — here at a reduced size through its --set
// arguments (the full size is measured in docs/BENCHMARKS.md).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/util/subprocess.h"

namespace roboloop {
namespace {

using ::testing::HasSubstr;

TEST(QuickstartScriptTest, RunsTheQuickstartPipeline) {
  std::string root = testing::MakeTempDir("quickstart") + "/store";
  testing::ProgramResult r = testing::RunProgram(
      {"/bin/bash", std::string(ROBOLOOP_SOURCE_DIR) + "/scripts/quickstart.sh", "--root", root, "--set",
       "demos.episodes=20", "--set", "train.steps=60", "--set", "finetune.steps=20", "--set", "improve.max_iterations=1",
       "--set", "improve.until=${gate.success.lower} >= 0.0"},
      {std::string("ROBOLOOP_BUILD_DIR=") + ROBOLOOP_BINARY_DIR});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("improve: 1 iteration(s)"));
  EXPECT_THAT(r.out, HasSubstr("champion of cartpole-quickstart"));
  EXPECT_THAT(r.out, HasSubstr("quickstart-report.html"));
}

}  // namespace
}  // namespace roboloop
