#include "common/status.h"

#include <gtest/gtest.h>

namespace roboloop {
namespace {

absl::StatusOr<int> Half(int x) {
  if (x % 2 != 0) return absl::InvalidArgumentError(absl::StrCat(x, " is odd"));
  return x / 2;
}

absl::Status QuarterInto(int x, int* out) {
  ROBOLOOP_ASSIGN_OR_RETURN(int half, Half(x));
  ROBOLOOP_ASSIGN_OR_RETURN(*out, Half(half));
  return absl::OkStatus();
}

absl::Status FailIfNegative(int x) {
  ROBOLOOP_RETURN_IF_ERROR(x < 0 ? absl::OutOfRangeError("negative") : absl::OkStatus());
  return absl::OkStatus();
}

TEST(StatusMacros, AssignOrReturnPassesValuesAndErrors) {
  int out = 0;
  ASSERT_TRUE(QuarterInto(8, &out).ok());
  EXPECT_EQ(out, 2);
  absl::Status odd = QuarterInto(6, &out);
  EXPECT_EQ(odd.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(odd.message(), "3 is odd");
}

TEST(StatusMacros, ReturnIfErrorStopsOnError) {
  EXPECT_TRUE(FailIfNegative(1).ok());
  EXPECT_EQ(FailIfNegative(-1).code(), absl::StatusCode::kOutOfRange);
}

TEST(StatusMacros, AnnotatePrefixesContext) {
  absl::Status s = Annotate(absl::NotFoundError("no such blob"), "store/ab/cd");
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(s.message(), "store/ab/cd: no such blob");
  EXPECT_TRUE(Annotate(absl::OkStatus(), "x").ok());
}

TEST(StatusMacros, ErrnoStatusNamesTheInput) {
  absl::Status s = ErrnoStatus(ENOENT, "/tmp/missing");
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(s.message(), "/tmp/missing: No such file or directory");
}

TEST(StatusMacrosDeathTest, CheckAbortsWithMessage) {
  EXPECT_DEATH(ROBOLOOP_CHECK_MSG(1 == 2, "math is ", "broken"), "math is broken");
}

}  // namespace
}  // namespace roboloop
