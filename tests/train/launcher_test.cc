// The local launcher blames the rank whose failure came first on its own (train/launcher.h,
// train/rank_failure.h), not the first to exit: ranks are small shell scripts that write the
// failure records a training rank writes and exit in a chosen order.
#include "train/launcher.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "tests/util/subprocess.h"
#include "train/rank_failure.h"

namespace roboloop::train {
namespace {

using ::testing::HasSubstr;

// Launches 2 ranks of `script` (run by /bin/sh, $RANK set) and returns the launcher's status.
absl::Status LaunchTwo(const std::string& script) {
  LaunchOptions options;
  options.argv = {"/bin/sh", "-c", script};
  options.nproc = 2;
  options.grace_seconds = 10;
  return LaunchLocalRanks(options);
}

// Shell: writes this rank's failure record (`micros`, `consequence`, `message`).
std::string Record(int micros, bool consequence, const std::string& message) {
  return "printf '{\"unix_micros\":" + std::to_string(micros) + ",\"maybe_consequence\":" +
         (consequence ? "true" : "false") + ",\"message\":\"" + message +
         "\"}' > \"$ROBOLOOP_RANK_FAILURE_DIR/rank-$RANK.json\"";
}

TEST(LauncherTest, TheRankThatFailedOnItsOwnIsBlamedThoughItsPeerExitedFirst) {
  // Rank 1 fails first and lingers; rank 0's collective breaks and it exits at once.
  const std::string script = "if [ \"$RANK\" = 1 ]; then " + Record(1000, false, "chunk 3 is corrupt") +
                             "; sleep 1; exit 1; fi; " +
                             Record(2000, true, "step 0: training step: Connection closed by peer") + "; exit 1";
  const absl::Status status = LaunchTwo(script);
  EXPECT_TRUE(absl::IsAborted(status)) << status;
  EXPECT_EQ(std::string(status.message()),
            "training failed: rank 1 of 2 exited with code 1: chunk 3 is corrupt; then, as a consequence, rank 0 "
            "exited with code 1");
}

TEST(LauncherTest, OfOwnFailuresTheEarliestIsBlamed) {
  const std::string script = "if [ \"$RANK\" = 1 ]; then " + Record(1000, false, "first") + "; sleep 1; exit 3; fi; " +
                             Record(2000, false, "second") + "; exit 4";
  const absl::Status status = LaunchTwo(script);
  // QA: rank 0's own failure was reported as "then, as a consequence, rank 0 exited with code 4".
  EXPECT_THAT(status.message(), HasSubstr("rank 1 of 2 exited with code 3: first; rank 0 exited with code 4: second"));
}

// QA: both ranks refused the same bad dataset, and the launcher called rank 1's refusal a consequence of rank 0's.
TEST(LauncherTest, RanksThatFailedAlikeOnTheirOwnAreNoConsequence) {
  const std::string script = "if [ \"$RANK\" = 1 ]; then " + Record(2000, false, "d.hdf5: truncated") +
                             "; sleep 1; exit 1; fi; " + Record(1000, false, "d.hdf5: truncated") + "; exit 1";
  const absl::Status status = LaunchTwo(script);
  EXPECT_EQ(std::string(status.message()),
            "training failed: rank 0 of 2 exited with code 1: d.hdf5: truncated; rank 1 exited with code 1 with the "
            "same error");
}

TEST(LauncherTest, ARankKilledWithoutARecordIsBlamedBeforePeersThatLostIt) {
  const std::string script = "if [ \"$RANK\" = 1 ]; then sleep 1; kill -9 $$; fi; " +
                             Record(2000, true, "step 4: training step: peer lost") + "; exit 1";
  const absl::Status status = LaunchTwo(script);
  EXPECT_THAT(status.message(), HasSubstr("training failed: rank 1 of 2 was killed by signal 9; then, as a "
                                          "consequence, rank 0 exited with code 1"));
}

TEST(LauncherTest, WithoutRecordsTheFirstRankToExitIsBlamed) {
  const absl::Status status = LaunchTwo("if [ \"$RANK\" = 0 ]; then sleep 1; exit 5; fi; exit 6");
  EXPECT_EQ(std::string(status.message()),
            "training failed: rank 1 of 2 exited with code 6; then, as a consequence, rank 0 exited with code 5");
}

TEST(LauncherTest, RanksThatAllSucceedAreOk) { EXPECT_TRUE(LaunchTwo("exit 0").ok()); }

TEST(RankFailureTest, ARecordReadsBackAndARanksFirstRecordStays) {
  const std::string dir = testing::MakeTempDir("rank_failure");
  setenv(kRankFailureDirVariable, dir.c_str(), 1);
  RecordRankFailure(3, absl::DataLossError("chunk 7 of x.hdf5 is corrupt"), false);
  RecordRankFailure(3, absl::InternalError("step 2: training step: peer lost"), true);
  unsetenv(kRankFailureDirVariable);
  const std::optional<RankFailure> read = ReadRankFailure(dir, 3);
  ASSERT_TRUE(read.has_value());
  EXPECT_EQ(read->message, "chunk 7 of x.hdf5 is corrupt");
  EXPECT_FALSE(read->maybe_consequence);
  EXPECT_GT(read->unix_micros, 0);
  EXPECT_FALSE(ReadRankFailure(dir, 2).has_value());
}

}  // namespace
}  // namespace roboloop::train
