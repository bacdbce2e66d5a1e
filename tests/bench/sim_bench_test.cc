// `roboloop bench sim --part b` at a tiny size: both tasks' figures, the inference share and
// the settings are printed; bad options are refused.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/util/subprocess.h"

namespace roboloop {
namespace {

using ::testing::HasSubstr;

TEST(SimBenchTest, PolicyPartPrintsBothTasksAndTheInferenceShare) {
  testing::ProgramResult r = testing::RunProgram({testing::RoboloopBinary(), "bench", "sim", "--part", "b", "--runs",
                                                  "1", "--policy-envs", "8", "--policy-max-steps", "20"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("cartpole-swingup:"));
  EXPECT_THAT(r.out, HasSubstr("reacher:"));
  EXPECT_THAT(r.out, HasSubstr("ratio ours/mujoco.rollout"));
  EXPECT_THAT(r.out, HasSubstr("inference share of wall time"));
  EXPECT_THAT(r.out, HasSubstr("online cores"));
}

TEST(SimBenchTest, BadOptionsAreRefused) {
  testing::ProgramResult r = testing::RunProgram(
      {testing::RoboloopBinary(), "bench", "sim", "--part", "b", "--policy-envs", "0"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("must be >= 1"));
  testing::ProgramResult part = testing::RunProgram({testing::RoboloopBinary(), "bench", "sim", "--part", "c"});
  EXPECT_EQ(part.exit_code, 2);
}

}  // namespace
}  // namespace roboloop
