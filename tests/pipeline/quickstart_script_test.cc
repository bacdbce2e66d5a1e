// README command 1 as written: scripts/quickstart.sh installs (a no-op here), builds (nothing
// to do) and runs the default pipeline.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/util/subprocess.h"

namespace roboloop {
namespace {

using ::testing::HasSubstr;

TEST(QuickstartScriptTest, RunsTheDefaultPipeline) {
  std::string root = testing::MakeTempDir("quickstart") + "/store";
  testing::ProgramResult r = testing::RunProgram(
      {"/bin/bash", std::string(ROBOLOOP_SOURCE_DIR) + "/scripts/quickstart.sh", "--root", root},
      {std::string("ROBOLOOP_BUILD_DIR=") + ROBOLOOP_BINARY_DIR});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_THAT(r.out, HasSubstr("identical"));
  EXPECT_THAT(r.out, HasSubstr("no problems"));
}

}  // namespace
}  // namespace roboloop
