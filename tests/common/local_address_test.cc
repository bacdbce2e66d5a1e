#include "common/local_address.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/status/status.h"

namespace roboloop {
namespace {

using ::testing::AnyOf;
using ::testing::HasSubstr;

TEST(LocalAddressTest, TowardALoopbackAddressItIsThatLoopback) {
  absl::StatusOr<std::string> local = LocalAddressToward("127.0.0.1", 29500);
  ASSERT_TRUE(local.ok()) << local.status();
  EXPECT_EQ(*local, "127.0.0.1");
  absl::StatusOr<std::string> other = LocalAddressToward("127.0.0.2", 29500);
  ASSERT_TRUE(other.ok()) << other.status();
  EXPECT_EQ(*other, "127.0.0.1");
}

TEST(LocalAddressTest, AHostNameResolvesBeforeTheRouteIsAsked) {
  absl::StatusOr<std::string> local = LocalAddressToward("localhost", 1);
  ASSERT_TRUE(local.ok()) << local.status();
  EXPECT_THAT(*local, AnyOf("127.0.0.1", "::1"));
}

TEST(LocalAddressTest, AHostThatDoesNotResolveIsNamed) {
  absl::StatusOr<std::string> local = LocalAddressToward("no-such-host.invalid", 29500);
  ASSERT_FALSE(local.ok());
  EXPECT_EQ(local.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(local.status().message(), HasSubstr("'no-such-host.invalid' does not resolve"));
}

}  // namespace
}  // namespace roboloop
