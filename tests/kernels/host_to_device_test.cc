// kernels/host_to_device.h: IndexTensorOn's tensor owns its values in the asked dtype on the
// asked device, whatever happens to the vector after the call; OnDeviceWithoutWaiting returns a
// tensor already there as it is. The CUDA case (label gpu) checks the non-blocking copies
// through pinned memory; values compare exactly.
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

TEST(HostToDeviceTest, ATensorAlreadyOnTheDeviceIsReturnedAsItIs) {
  const torch::Tensor t = torch::arange(6, torch::kFloat);
  EXPECT_TRUE(OnDeviceWithoutWaiting(t, torch::kCPU).is_same(t));
}

TEST(HostToDeviceTest, CudaTheNonBlockingCopyHoldsTheValuesOnceTheStreamRuns) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  const torch::Device cuda(torch::kCUDA, 0);
  ExpectOwnsValuesAfterTheVectorChanges(cuda);
  const torch::Tensor host = torch::randn({3, 5});
  const torch::Tensor moved = OnDeviceWithoutWaiting(host, cuda);
  EXPECT_EQ(moved.device(), cuda);
  EXPECT_TRUE(torch::equal(moved.cpu(), host));
  EXPECT_TRUE(OnDeviceWithoutWaiting(moved, cuda).is_same(moved));
}

}  // namespace
}  // namespace roboloop::kernels
