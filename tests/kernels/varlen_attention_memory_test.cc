// One 8192-token sequence (head dim 64): forward + backward stay within 4x the bytes of
// q + k + v + out plus 64 MiB of peak resident memory, so no score matrix is materialised
// (issue 5, req 2 and 5). The peak is the kernel's VmHWM after resetting it via clear_refs.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "kernels/varlen_attention.h"

namespace roboloop::kernels {
namespace {

// A "VmRSS:"/"VmHWM:" figure of /proc/self/status in bytes, or -1.
int64_t StatusBytes(const std::string& field) {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind(field, 0) == 0) return std::stoll(line.substr(field.size())) * 1024;
  }
  return -1;
}

// Resets VmHWM to the current RSS (Linux >= 4.0). False when not permitted.
bool ResetPeak() {
  std::ofstream clear("/proc/self/clear_refs");
  clear << "5";
  clear.flush();
  return clear.good();
}

// Forward + backward of one sequence through autograd; returns the sum of the outputs.
double RunOnce(int64_t tokens, int64_t heads, int64_t head_dim, MaskKind mask) {
  torch::manual_seed(1);
  torch::Tensor q = torch::randn({tokens, heads, head_dim}).requires_grad_();
  torch::Tensor k = torch::randn({tokens, heads, head_dim}).requires_grad_();
  torch::Tensor v = torch::randn({tokens, heads, head_dim}).requires_grad_();
  torch::Tensor cu = torch::tensor({0, static_cast<int32_t>(tokens)}, torch::kInt);
  VarlenAttentionOptions options;
  options.mask = mask;
  absl::StatusOr<torch::Tensor> out = VarlenAttention(q, k, v, cu, torch::Tensor(), options);
  EXPECT_TRUE(out.ok()) << out.status();
  if (!out.ok()) return 0;
  out->sum().backward();
  return out->sum().item<double>() + q.grad().sum().item<double>();
}

TEST(VarlenAttentionMemoryTest, LongSequencePeakMemoryIsLinear) {
  constexpr int64_t kTokens = 8192, kHeads = 1, kHeadDim = 64;
  RunOnce(256, kHeads, kHeadDim, MaskKind::kCausal);  // warm up threads and allocator
  ASSERT_TRUE(ResetPeak()) << "cannot reset VmHWM through /proc/self/clear_refs";
  const int64_t baseline = StatusBytes("VmRSS:");
  ASSERT_GT(baseline, 0);
  double checksum = RunOnce(kTokens, kHeads, kHeadDim, MaskKind::kCausal);
  const int64_t peak = StatusBytes("VmHWM:");
  const int64_t tensor_bytes = kTokens * kHeads * kHeadDim * 4;
  const int64_t bound = 4 * (4 * tensor_bytes) + (64LL << 20);
  const int64_t score_matrix_bytes = kTokens * kTokens * 4;
  std::printf("peak growth %lld bytes, bound %lld, one score matrix %lld\n",
              static_cast<long long>(peak - baseline), static_cast<long long>(bound),
              static_cast<long long>(score_matrix_bytes));
  EXPECT_TRUE(std::isfinite(checksum));
  EXPECT_LT(peak - baseline, bound);
  ASSERT_GT(score_matrix_bytes, bound);  // the bound would catch a materialised score matrix
}

}  // namespace
}  // namespace roboloop::kernels
