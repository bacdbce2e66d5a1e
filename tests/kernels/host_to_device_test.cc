// kernels::IndexTensorOn (kernels/host_to_device.h): the tensor owns its values in the asked
// dtype on the asked device, whatever happens to the vector after the call. The CUDA case (label
// gpu) checks the non-blocking copy through pinned memory; values compare exactly.
#include <gtest/gtest.h>

#include <torch/cuda.h>

#include "kernels/host_to_device.h"

namespace roboloop::kernels {
namespace {

void ExpectOwnsValuesAfterTheVectorChanges(const torch::Device& device) {
  std::vector<int32_t> values = {3, 1, 4, 1, 5, 9, 2, 6};
  const torch::Tensor as_long = IndexTensorOn(values, torch::kLong, device);
  const torch::Tensor as_int = IndexTensorOn(values, torch::kInt, device);
  const std::vector<int64_t> wide = {7, -2, 1LL << 40};
  const torch::Tensor from_wide = IndexTensorOn(wide, torch::kLong, device);
  std::fill(values.begin(), values.end(), -1);
  values.clear();
  values.shrink_to_fit();
  EXPECT_EQ(as_long.device(), device);
  EXPECT_EQ(as_long.scalar_type(), torch::kLong);
  EXPECT_EQ(as_int.scalar_type(), torch::kInt);
  EXPECT_TRUE(torch::equal(as_long.cpu(), torch::tensor({3, 1, 4, 1, 5, 9, 2, 6}, torch::kLong)));
  EXPECT_TRUE(torch::equal(as_int.cpu(), torch::tensor({3, 1, 4, 1, 5, 9, 2, 6}, torch::kInt)));
  EXPECT_TRUE(torch::equal(from_wide.cpu(), torch::tensor({int64_t{7}, int64_t{-2}, int64_t{1} << 40}, torch::kLong)));
}

TEST(HostToDeviceTest, TheCpuTensorOwnsItsValuesInTheAskedType) { ExpectOwnsValuesAfterTheVectorChanges(torch::kCPU); }

TEST(HostToDeviceTest, CudaTheNonBlockingCopyHoldsTheValuesOnceTheStreamRuns) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  ExpectOwnsValuesAfterTheVectorChanges(torch::Device(torch::kCUDA, 0));
}

}  // namespace
}  // namespace roboloop::kernels
