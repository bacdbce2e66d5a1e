// When a training step runs as a CUDA graph (train/cuda_graph_rule.h): auto, on and off against
// each condition of the setup.
#include "train/cuda_graph_rule.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace roboloop::train {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

// The small policy on one GPU: every condition holds.
CudaGraphSetup Capturable() {
  CudaGraphSetup setup;
  setup.cuda = true;
  setup.world_size = 1;
  setup.fused_adamw = true;
  return setup;
}

TEST(CudaGraphRuleTest, AutoAndOnCaptureAStaticSingleGpuStep) {
  EXPECT_EQ(UseCudaGraph(std::nullopt, Capturable()).value(), true);
  EXPECT_EQ(UseCudaGraph(true, Capturable()).value(), true);
}

TEST(CudaGraphRuleTest, OffNeverCaptures) {
  EXPECT_EQ(UseCudaGraph(false, Capturable()).value(), false);
  EXPECT_EQ(UseCudaGraph(false, CudaGraphSetup{}).value(), false);
}

TEST(CudaGraphRuleTest, EachFailedConditionTurnsAutoOffAndOnIntoAnErrorNamingIt) {
  struct Case {
    CudaGraphSetup setup;
    const char* named;
  };
  std::vector<Case> cases;
  cases.push_back({Capturable(), "the device is the CPU"});
  cases.back().setup.cuda = false;
  cases.push_back({Capturable(), "world_size is 2"});
  cases.back().setup.world_size = 2;
  cases.push_back({Capturable(), "packed: false"});
  cases.back().setup.packed_attention = true;
  cases.push_back({Capturable(), "cameras"});
  cases.back().setup.cameras = true;
  cases.push_back({Capturable(), "optimizer.fused is false"});
  cases.back().setup.fused_adamw = false;
  for (const Case& c : cases) {
    EXPECT_EQ(UseCudaGraph(std::nullopt, c.setup).value(), false) << c.named;
    const absl::StatusOr<bool> forced = UseCudaGraph(true, c.setup);
    EXPECT_EQ(forced.status().code(), absl::StatusCode::kInvalidArgument) << c.named;
    EXPECT_THAT(forced.status().message(), AllOf(HasSubstr("cuda_graph: on"), HasSubstr(c.named)));
  }
}

TEST(CudaGraphRuleTest, RunOptionMapsToTheTrainerOption) {
  EXPECT_EQ(ParseCudaGraphOption("").value(), std::nullopt);
  EXPECT_EQ(ParseCudaGraphOption("auto").value(), std::nullopt);
  EXPECT_EQ(ParseCudaGraphOption("on").value(), std::optional<bool>(true));
  EXPECT_EQ(ParseCudaGraphOption("off").value(), std::optional<bool>(false));
  const absl::StatusOr<std::optional<bool>> bad = ParseCudaGraphOption("yes");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), AllOf(HasSubstr("cuda_graph 'yes'"), HasSubstr("auto, on, off")));
}

}  // namespace
}  // namespace roboloop::train
