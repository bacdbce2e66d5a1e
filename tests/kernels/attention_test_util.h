// Shared helpers of the attention tests: random packed inputs and the float64 reference.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "kernels/attention_core.h"

namespace roboloop::kernels::testing {

// Every mask kind, in enum order.
inline constexpr MaskKind kAllMasks[] = {MaskKind::kBidirectional, MaskKind::kCausal,
                                         MaskKind::kPrefixLm, MaskKind::kPrefixBlock};

// A packed batch and the options to run it with.
struct PackedCase {
  std::vector<int32_t> lengths;
  std::vector<int32_t> prefixes;  // per sequence, used by kPrefixLm and kPrefixBlock
  int64_t heads = 1;
  int64_t head_dim = 16;
  MaskKind mask = MaskKind::kBidirectional;
  torch::Tensor q, k, v, dout;  // float32 [total, heads, head_dim]
  torch::Tensor cu_seqlens;     // int32 [batch + 1]
  torch::Tensor prefix_lengths;  // int32 [batch]
};

// The seed every run takes unless ROBOLOOP_TEST_SEED chooses another.
inline constexpr uint64_t kDefaultTestSeed = 20261202;

// Seed of this test run: kDefaultTestSeed, so runs are deterministic; ROBOLOOP_TEST_SEED=N runs
// seed N and ROBOLOOP_TEST_SEED=random a fresh one (both printed), to explore other cases.
uint64_t RunSeed();

// Fills q, k, v, dout with standard normal values and builds cu_seqlens / prefix_lengths from
// the lengths and prefixes already set.
void FillRandom(PackedCase* c, std::mt19937_64* rng);

// A case with `batch` random lengths in [1, max_length], random prefixes, heads and head_dim
// as given.
PackedCase RandomCase(std::mt19937_64* rng, int64_t batch, int32_t max_length, int64_t heads,
                      int64_t head_dim, MaskKind mask);

// The kernels' shape over a case's contiguous tensors (cu_seqlens and prefix_lengths as
// built by FillRandom), scale 1/sqrt(head_dim). Valid while the case lives.
AttentionShape ShapeOf(const PackedCase& c);

// Float64 reference: per sequence plain matmul + mask + softmax + matmul, with autograd for
// the gradients of sum(out * dout).
struct Reference {
  torch::Tensor out, lse, dq, dk, dv;  // float64
};
Reference ComputeReference(const PackedCase& c, double scale);

// The mask of one sequence as a [length, length] bool matrix (true = visible).
torch::Tensor MaskMatrix(MaskKind mask, int64_t length, int64_t prefix);

// ||a - b|| / ||b|| in float64.
double RelativeError(const torch::Tensor& a, const torch::Tensor& b);

// One run of an attention implementation: the forward and the gradients of sum(out * dout),
// shaped like the case's tensors.
struct AttentionResult {
  torch::Tensor out, lse, dq, dk, dv;
};

// Cases over the grid of issue 5 (lengths 1..300, heads 1..8, head dims 16..128, every mask):
// its corners, then `random_cases` random samples per mask, all drawn from `seed`.
std::vector<PackedCase> GridCases(uint64_t seed, int random_cases);

// A one-line description of a case for failure messages.
std::string Describe(const PackedCase& c);

// Expects every tensor of `ours` within relative error `tolerance` of the float64 reference.
void ExpectMatchesFloat64(const PackedCase& c, const AttentionResult& ours, double tolerance);

}  // namespace roboloop::kernels::testing
