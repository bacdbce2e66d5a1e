// Resolution of a run's `device` option against the visible CUDA devices (train/training_device.h).
#include "train/training_device.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"

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

std::string Placed(const std::string& spec, int ranks, int batch_size, int cuda_devices) {
  absl::StatusOr<RankPlacement> placed = PlaceLocalRanks(spec, ranks, batch_size, cuda_devices);
  return placed.ok() ? absl::StrCat(placed->ranks, "x", placed->batch_size) : "error";
}

TEST(TrainingDeviceTest, AutoWithoutAGpuRunsTheRanksAskedForOnTheCpu) {
  EXPECT_EQ(Placed("auto", 2, 128, 0), "2x128");
  EXPECT_EQ(PlaceLocalRanks("auto", 2, 128, 0)->note, "");
}

TEST(TrainingDeviceTest, AutoWithEnoughGpusRunsTheRanksAskedFor) {
  EXPECT_EQ(Placed("auto", 2, 128, 2), "2x128");
  EXPECT_EQ(Placed("auto", 2, 128, 8), "2x128");
  EXPECT_EQ(PlaceLocalRanks("auto", 2, 128, 8)->note, "");
}

TEST(TrainingDeviceTest, AutoWithFewerGpusThanRanksKeepsTheGlobalBatchOnOneRankPerGpu) {
  EXPECT_EQ(Placed("auto", 2, 128, 1), "1x256");
  EXPECT_EQ(Placed("auto", 4, 100, 2), "2x200");
  EXPECT_EQ(Placed("auto", 8, 3, 6), "6x4");
  EXPECT_THAT(PlaceLocalRanks("auto", 2, 128, 1)->note,
              AllOf(HasSubstr("device auto: 2 ranks asked, 1 GPU visible"), HasSubstr("1 rank of batch_size 256"),
                    HasSubstr("global batch 256 kept")));
}

TEST(TrainingDeviceTest, AutoWithAGlobalBatchTheGpusCannotShareIsAnErrorNamingTheCounts) {
  const absl::Status uneven = PlaceLocalRanks("auto", 4, 127, 3).status();
  EXPECT_EQ(uneven.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(uneven.message(), AllOf(HasSubstr("device auto"), HasSubstr("4 ranks x batch_size 127 = 508"),
                                      HasSubstr("3 GPUs"), HasSubstr("multiple of 3")));
}

TEST(TrainingDeviceTest, CudaWithFewerGpusThanRanksIsAnErrorNamingTheCounts) {
  EXPECT_EQ(Placed("cuda", 2, 128, 2), "2x128");
  for (const int gpus : {0, 1}) {
    const absl::Status status = PlaceLocalRanks("cuda", 2, 128, gpus).status();
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(status.message(), AllOf(HasSubstr("device cuda: 2 ranks need 2 GPUs"),
                                        HasSubstr("LibTorch sees " + std::to_string(gpus))));
  }
}

TEST(TrainingDeviceTest, OtherDevicesRunTheRanksAskedFor) {
  EXPECT_EQ(Placed("cpu", 4, 64, 1), "4x64");
  EXPECT_EQ(Placed("", 4, 64, 0), "4x64");
  EXPECT_EQ(Placed("cuda:0", 2, 64, 1), "2x64");
}

}  // namespace
}  // namespace roboloop::train
