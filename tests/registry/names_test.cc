#include "registry/names.h"

#include <gtest/gtest.h>

namespace roboloop::registry {
namespace {

TEST(Names, AcceptsTypicalNames) {
  for (const char* name : {"cartpole-mlp", "a", "v1.2_final", "0abc"}) {
    EXPECT_TRUE(ValidateName("model", name).ok()) << name;
  }
  EXPECT_TRUE(ValidateName("model", std::string(100, 'a')).ok());
}

TEST(Names, RejectsBadNamesWithTheKindAndName) {
  for (std::string name : {std::string(""), std::string("Upper"), std::string("-lead"),
                           std::string("a/b"), std::string(".."), std::string("a..b"),
                           std::string("../etc"), std::string("sp ace"), std::string("a\0b", 3),
                           std::string(101, 'a')}) {
    absl::Status status = ValidateName("dataset", name);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << name;
    EXPECT_NE(status.message().find("invalid dataset name"), std::string::npos);
  }
}

TEST(Names, UnicodeNamesAreShownAsWritten) {
  EXPECT_EQ(ValidateName("dataset", "ün").message(),
            "invalid dataset name \"ün\": must start with a lowercase letter or digit (names are 1-100 characters of "
            "a-z, 0-9, '.', '_', '-', starting with a letter or digit)");
  EXPECT_EQ(ValidateName("dataset", "aü").message(),
            "invalid dataset name \"aü\": non-ASCII characters are not allowed (names are 1-100 characters of a-z, "
            "0-9, '.', '_', '-', starting with a letter or digit)");
}

TEST(Names, EditDistanceAndCloseMatches) {
  EXPECT_EQ(EditDistance("kitten", "sitting"), 3);
  EXPECT_EQ(EditDistance("", "abc"), 3);
  EXPECT_EQ(EditDistance("same", "same"), 0);
  std::vector<std::string> known = {"cartpole-mlp", "cartpole-tf", "humanoid", "reacher"};
  std::vector<std::string> close = CloseMatches("cartpol-mlp", known);
  ASSERT_FALSE(close.empty());
  EXPECT_EQ(close.front(), "cartpole-mlp");
  EXPECT_TRUE(CloseMatches("zzzzzzzz", known).empty());
  EXPECT_EQ(CloseMatchesSuffix("humanod", known), "; close matches: humanoid");
}

}  // namespace
}  // namespace roboloop::registry
