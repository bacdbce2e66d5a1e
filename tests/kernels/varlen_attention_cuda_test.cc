// The CUDA varlen attention (issue 5, req 6) on a GPU: the kernels of kernels/cuda/ against the
// float64 reference and the CPU kernels over the same grid as the CPU tests, determinism and
// batch invariance; and the LibTorch ops on CUDA tensors when LibTorch has CUDA. Built wherever
// nvcc is found; each test skips when this machine has no usable GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "kernels/cuda/attention_cuda.h"
#include "kernels/cuda/device_buffer.h"
#include "kernels/varlen_attention.h"
#include "tests/kernels/attention_test_util.h"

namespace roboloop::kernels::cuda {
namespace {

using testing::AttentionResult;
using testing::PackedCase;

constexpr double kTolerance = 1e-5;

#define SKIP_WITHOUT_GPU()                                                 \
  if (UsableDeviceCount() == 0) GTEST_SKIP() << "no usable CUDA device"

// A host tensor copied to a new device buffer.
std::unique_ptr<DeviceBuffer> Upload(const torch::Tensor& host) {
  torch::Tensor contiguous = host.contiguous();
  auto buffer = DeviceBuffer::Create(contiguous.nbytes(), contiguous.data_ptr());
  EXPECT_TRUE(buffer.ok()) << buffer.status();
  return buffer.ok() ? std::move(*buffer) : nullptr;
}

// An uninitialised device buffer with room for `like`.
std::unique_ptr<DeviceBuffer> Room(const torch::Tensor& like) {
  auto buffer = DeviceBuffer::Create(like.nbytes());
  EXPECT_TRUE(buffer.ok()) << buffer.status();
  return buffer.ok() ? std::move(*buffer) : nullptr;
}

void Download(const DeviceBuffer& buffer, torch::Tensor* host) {
  absl::Status status = buffer.CopyToHost(host->data_ptr());
  EXPECT_TRUE(status.ok()) << status;
}

// Forward and backward of a case through the CUDA kernels, results copied back.
AttentionResult RunOnGpu(const PackedCase& c) {
  const int64_t total = c.q.size(0);
  AttentionResult r{torch::empty_like(c.q), torch::empty({total, c.heads}),
                    torch::empty_like(c.q), torch::empty_like(c.q), torch::empty_like(c.q)};
  std::vector<std::unique_ptr<DeviceBuffer>> inputs;
  for (const torch::Tensor* t : {&c.q, &c.k, &c.v, &c.dout, &c.cu_seqlens, &c.prefix_lengths}) {
    inputs.push_back(Upload(*t));
  }
  std::unique_ptr<DeviceBuffer> out = Room(r.out), lse = Room(r.lse), dq = Room(r.dq),
                                dk = Room(r.dk), dv = Room(r.dv), row_dots = Room(r.lse);
  for (const auto& buffer : inputs) {
    if (!buffer) return {};
  }
  if (!out || !lse || !dq || !dk || !dv || !row_dots) return {};

  AttentionShape host_shape;
  host_shape.cu_seqlens = c.cu_seqlens.data_ptr<int32_t>();
  host_shape.batch = c.cu_seqlens.size(0) - 1;
  host_shape.heads = c.heads;
  const std::vector<TileItem> items = EnumerateTiles(host_shape);
  std::unique_ptr<DeviceBuffer> device_items =
      Upload(torch::from_blob(const_cast<TileItem*>(items.data()),
                              {static_cast<int64_t>(items.size() * sizeof(TileItem))},
                              torch::kUInt8));
  if (!device_items) return {};

  AttentionShape shape = host_shape;
  shape.cu_seqlens = inputs[4]->As<int32_t>();
  shape.prefix_lengths = inputs[5]->As<int32_t>();
  shape.head_dim = c.head_dim;
  shape.mask = c.mask;
  shape.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(c.head_dim)));
  shape.input_row_stride = shape.output_row_stride = c.heads * c.head_dim;
  const DeviceTiles tiles{device_items->As<TileItem>(), static_cast<int64_t>(items.size())};

  ForwardArgs forward{shape, inputs[0]->As<float>(), inputs[1]->As<float>(),
                      inputs[2]->As<float>(), out->As<float>(), lse->As<float>()};
  absl::Status status = CudaAttentionForward(forward, tiles, nullptr);
  EXPECT_TRUE(status.ok()) << status;
  BackwardArgs backward;
  backward.shape = shape;
  backward.q = forward.q;
  backward.k = forward.k;
  backward.v = forward.v;
  backward.dout = inputs[3]->As<float>();
  backward.lse = lse->As<float>();
  backward.dq = dq->As<float>();
  backward.dk = dk->As<float>();
  backward.dv = dv->As<float>();
  status = CudaAttentionBackward(backward, out->As<float>(), row_dots->As<float>(), total, tiles,
                                 nullptr);
  EXPECT_TRUE(status.ok()) << status;
  Download(*out, &r.out);
  Download(*lse, &r.lse);
  Download(*dq, &r.dq);
  Download(*dk, &r.dk);
  Download(*dv, &r.dv);
  return r;
}

TEST(VarlenAttentionCudaTest, KernelsMatchFloat64OverTheGrid) {
  SKIP_WITHOUT_GPU();
  for (const PackedCase& c : testing::GridCases(testing::RunSeed() + 500, 6)) {
    testing::ExpectMatchesFloat64(c, RunOnGpu(c), kTolerance);
  }
}

TEST(VarlenAttentionCudaTest, KernelsAgreeWithTheCpuKernels) {
  SKIP_WITHOUT_GPU();
  for (const PackedCase& c : testing::GridCases(testing::RunSeed() + 600, 2)) {
    SCOPED_TRACE(testing::Describe(c));
    AttentionResult gpu = RunOnGpu(c);
    VarlenAttentionOptions options;
    options.mask = c.mask;
    auto cpu = VarlenAttentionForward(c.q, c.k, c.v, c.cu_seqlens, c.prefix_lengths, options);
    ASSERT_TRUE(cpu.ok()) << cpu.status();
    auto grads = VarlenAttentionBackward(c.q, c.k, c.v, c.cu_seqlens, c.prefix_lengths,
                                         cpu->out, cpu->lse, c.dout, options);
    ASSERT_TRUE(grads.ok()) << grads.status();
    EXPECT_LE(testing::RelativeError(gpu.out, cpu->out), kTolerance);
    EXPECT_LE(testing::RelativeError(gpu.lse, cpu->lse), kTolerance);
    EXPECT_LE(testing::RelativeError(gpu.dq, grads->dq), kTolerance);
    EXPECT_LE(testing::RelativeError(gpu.dk, grads->dk), kTolerance);
    EXPECT_LE(testing::RelativeError(gpu.dv, grads->dv), kTolerance);
  }
}

// One writer per output row and fixed loop orders: two runs are bitwise equal, and a
// sequence gives the same bits alone as packed with others.
TEST(VarlenAttentionCudaTest, RunsAreDeterministicAndBatchInvariant) {
  SKIP_WITHOUT_GPU();
  std::mt19937_64 rng(testing::RunSeed() + 700);
  PackedCase batch = testing::RandomCase(&rng, 4, 300, 3, 64, MaskKind::kPrefixLm);
  AttentionResult first = RunOnGpu(batch), second = RunOnGpu(batch);
  for (auto member : {&AttentionResult::out, &AttentionResult::lse, &AttentionResult::dq,
                      &AttentionResult::dk, &AttentionResult::dv}) {
    EXPECT_TRUE(torch::equal(first.*member, second.*member));
  }
  const int64_t start = batch.lengths[0];
  const int64_t length = batch.lengths[1];
  auto slice = [&](const torch::Tensor& t) { return t.narrow(0, start, length).contiguous(); };
  PackedCase alone = batch;
  alone.lengths = {batch.lengths[1]};
  alone.prefixes = {batch.prefixes[1]};
  alone.q = slice(batch.q);
  alone.k = slice(batch.k);
  alone.v = slice(batch.v);
  alone.dout = slice(batch.dout);
  alone.cu_seqlens = torch::tensor({0, static_cast<int32_t>(length)}, torch::kInt);
  alone.prefix_lengths = torch::tensor({batch.prefixes[1]}, torch::kInt);
  AttentionResult single = RunOnGpu(alone);
  for (auto member : {&AttentionResult::out, &AttentionResult::lse, &AttentionResult::dq,
                      &AttentionResult::dk, &AttentionResult::dv}) {
    EXPECT_TRUE(torch::equal(single.*member, slice(first.*member)));
  }
}

TEST(VarlenAttentionCudaTest, HeadDimAboveTheLimitIsRejected) {
  SKIP_WITHOUT_GPU();
  ForwardArgs args;
  args.shape.head_dim = kCudaMaxHeadDim + 1;
  absl::Status status = CudaAttentionForward(args, DeviceTiles{}, nullptr);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("head_dim 257"), std::string::npos) << status;
}

// The LibTorch op on CUDA tensors (CUDA builds of LibTorch only), through autograd.
TEST(VarlenAttentionCudaTest, TorchOpOnCudaTensorsMatchesTheCpuOp) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "LibTorch has no CUDA device";
  std::mt19937_64 rng(testing::RunSeed() + 800);
  for (MaskKind mask : {MaskKind::kBidirectional, MaskKind::kCausal, MaskKind::kPrefixLm}) {
    PackedCase c = testing::RandomCase(&rng, 5, 300, 4, 64, mask);
    SCOPED_TRACE(testing::Describe(c));
    VarlenAttentionOptions options;
    options.mask = mask;
    auto run = [&](const torch::Device& device) {
      torch::Tensor q = c.q.to(device).requires_grad_();
      torch::Tensor k = c.k.to(device).requires_grad_();
      torch::Tensor v = c.v.to(device).requires_grad_();
      auto out = VarlenAttention(q, k, v, c.cu_seqlens, c.prefix_lengths, options);
      EXPECT_TRUE(out.ok()) << out.status();
      if (!out.ok()) return AttentionResult{};
      out->backward(c.dout.to(device));
      return AttentionResult{out->detach().cpu(), torch::Tensor(), q.grad().cpu(),
                             k.grad().cpu(), v.grad().cpu()};
    };
    AttentionResult cpu = run(torch::kCPU), gpu = run(torch::kCUDA);
    ASSERT_TRUE(gpu.out.defined());
    EXPECT_LE(testing::RelativeError(gpu.out, cpu.out), kTolerance);
    EXPECT_LE(testing::RelativeError(gpu.dq, cpu.dq), kTolerance);
    EXPECT_LE(testing::RelativeError(gpu.dk, cpu.dk), kTolerance);
    EXPECT_LE(testing::RelativeError(gpu.dv, cpu.dv), kTolerance);
  }
}

}  // namespace
}  // namespace roboloop::kernels::cuda
