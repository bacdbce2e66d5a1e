// Resolution of a run's `device` option against the visible CUDA devices (train/training_device.h).
#include "train/training_device.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace roboloop::train {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

std::string Resolved(const std::string& spec, int local_rank, int cuda_devices) {
  absl::StatusOr<TrainingDevice> device = ResolveTrainingDevice(spec, local_rank, cuda_devices);
  return device.ok() ? device->Name() + "/" + device->Backend() : "error";
}

TEST(TrainingDeviceTest, CpuIsTheDefaultAndNeedsNoGpu) {
  EXPECT_EQ(Resolved("", 3, 0), "cpu/gloo");
  EXPECT_EQ(Resolved("cpu", 0, 0), "cpu/gloo");
  EXPECT_EQ(Resolved("cpu", 1, 8), "cpu/gloo");
}

TEST(TrainingDeviceTest, CudaGivesEachLocalRankItsOwnGpuWithNccl) {
  EXPECT_EQ(Resolved("cuda", 0, 1), "cuda:0/nccl");
  EXPECT_EQ(Resolved("cuda", 3, 4), "cuda:3/nccl");
  EXPECT_EQ(Resolved("cuda:2", 0, 4), "cuda:2/nccl");
  EXPECT_EQ(Resolved("cuda:0", 5, 1), "cuda:0/nccl");
}

TEST(TrainingDeviceTest, AutoPicksTheLocalRanksGpuWhenAnyIsVisible) {
  EXPECT_EQ(Resolved("auto", 0, 0), "cpu/gloo");
  EXPECT_EQ(Resolved("auto", 1, 0), "cpu/gloo");
  EXPECT_EQ(Resolved("auto", 1, 2), "cuda:1/nccl");
  EXPECT_EQ(Resolved("auto", 2, 2), "error");
}

TEST(TrainingDeviceTest, AGpuThatIsNotVisibleIsAnErrorNamingTheCount) {
  const absl::Status none = ResolveTrainingDevice("cuda", 0, 0).status();
  EXPECT_EQ(none.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(none.message(), AllOf(HasSubstr("device cuda"), HasSubstr("needs CUDA device 0"),
                                    HasSubstr("sees 0"), HasSubstr("use device cpu")));
  const absl::Status too_many_ranks = ResolveTrainingDevice("cuda", 2, 2).status();
  EXPECT_THAT(too_many_ranks.message(), AllOf(HasSubstr("needs CUDA device 2"), HasSubstr("sees 2"),
                                              HasSubstr("one GPU per local rank")));
  EXPECT_THAT(ResolveTrainingDevice("cuda:7", 0, 4).status().message(),
              AllOf(HasSubstr("device cuda:7"), HasSubstr("needs CUDA device 7")));
}

TEST(TrainingDeviceTest, MalformedSpecsListTheAcceptedForms) {
  for (const std::string spec : {"tpu", "CUDA", "cuda:", "cuda:-1", "cuda: 1", "cuda:1x", "gpu:0", " cpu"}) {
    const absl::Status status = ResolveTrainingDevice(spec, 0, 8).status();
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << spec;
    EXPECT_THAT(status.message(), AllOf(HasSubstr("'" + spec + "'"), HasSubstr("cpu, cuda, cuda:N, auto")))
        << spec;
  }
}

}  // namespace
}  // namespace roboloop::train
