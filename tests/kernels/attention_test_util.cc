#include "tests/kernels/attention_test_util.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace roboloop::kernels::testing {

uint64_t RunSeed() {
  static const uint64_t seed = [] {
    const char* chosen = std::getenv("ROBOLOOP_TEST_SEED");
    if (chosen == nullptr) return kDefaultTestSeed;
    const std::string text = chosen;
    const uint64_t s = text == "random"
                           ? static_cast<uint64_t>(std::random_device{}()) << 32 | std::random_device{}()
                           : std::stoull(text);
    std::printf("attention test seed: %llu (replay with ROBOLOOP_TEST_SEED=%llu)\n",
                static_cast<unsigned long long>(s), static_cast<unsigned long long>(s));
    return s;
  }();
  return seed;
}

void FillRandom(PackedCase* c, std::mt19937_64* rng) {
  std::vector<int32_t> offsets = {0};
  for (int32_t length : c->lengths) offsets.push_back(offsets.back() + length);
  const int64_t total = offsets.back();
  torch::Generator gen = at::detail::createCPUGenerator((*rng)());
  auto random = [&] {
    return at::normal(0.0, 1.0, {total, c->heads, c->head_dim}, gen).to(torch::kFloat);
  };
  c->q = random();
  c->k = random();
  c->v = random();
  c->dout = random();
  c->cu_seqlens = torch::tensor(offsets, torch::kInt);
  c->prefix_lengths = torch::tensor(c->prefixes, torch::kInt);
}

PackedCase RandomCase(std::mt19937_64* rng, int64_t batch, int32_t max_length, int64_t heads,
                      int64_t head_dim, MaskKind mask) {
  PackedCase c;
  c.heads = heads;
  c.head_dim = head_dim;
  c.mask = mask;
  for (int64_t b = 0; b < batch; ++b) {
    int32_t length = std::uniform_int_distribution<int32_t>(1, max_length)(*rng);
    c.lengths.push_back(length);
    c.prefixes.push_back(std::uniform_int_distribution<int32_t>(0, length)(*rng));
  }
  FillRandom(&c, rng);
  return c;
}

AttentionShape ShapeOf(const PackedCase& c) {
  AttentionShape shape;
  shape.cu_seqlens = c.cu_seqlens.data_ptr<int32_t>();
  shape.prefix_lengths = c.prefix_lengths.data_ptr<int32_t>();
  shape.batch = c.cu_seqlens.size(0) - 1;
  shape.heads = c.heads;
  shape.head_dim = c.head_dim;
  shape.mask = c.mask;
  shape.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(c.head_dim)));
  shape.input_row_stride = shape.output_row_stride = c.heads * c.head_dim;
  return shape;
}

torch::Tensor MaskMatrix(MaskKind mask, int64_t length, int64_t prefix) {
  torch::Tensor i = torch::arange(length, torch::kLong).unsqueeze(1);
  torch::Tensor j = torch::arange(length, torch::kLong).unsqueeze(0);
  switch (mask) {
    case MaskKind::kCausal: return j <= i;
    case MaskKind::kPrefixLm: return (j <= i) | (j < prefix);
    case MaskKind::kPrefixBlock: return (j < prefix) | (i >= prefix);
    case MaskKind::kBidirectional: break;
  }
  return torch::ones({length, length}, torch::kBool);
}

Reference ComputeReference(const PackedCase& c, double scale) {
  torch::Tensor q = c.q.to(torch::kDouble).requires_grad_();
  torch::Tensor k = c.k.to(torch::kDouble).requires_grad_();
  torch::Tensor v = c.v.to(torch::kDouble).requires_grad_();
  std::vector<torch::Tensor> outs, lses;
  int64_t start = 0;
  for (size_t b = 0; b < c.lengths.size(); ++b) {
    const int64_t length = c.lengths[b];
    auto slice = [&](const torch::Tensor& t) {
      return t.narrow(0, start, length).transpose(0, 1);  // [heads, length, dim]
    };
    torch::Tensor scores = torch::matmul(slice(q), slice(k).transpose(1, 2)) * scale;
    torch::Tensor visible = MaskMatrix(c.mask, length, c.prefixes[b]);
    scores = scores.masked_fill(visible.logical_not(), -std::numeric_limits<double>::infinity());
    lses.push_back(torch::logsumexp(scores, -1).transpose(0, 1));
    outs.push_back(torch::matmul(torch::softmax(scores, -1), slice(v)).transpose(0, 1));
    start += length;
  }
  Reference r;
  r.out = torch::cat(outs, 0);
  r.lse = torch::cat(lses, 0).detach();
  (r.out * c.dout.to(torch::kDouble)).sum().backward();
  r.out = r.out.detach();
  r.dq = q.grad();
  r.dk = k.grad();
  r.dv = v.grad();
  return r;
}

double RelativeError(const torch::Tensor& a, const torch::Tensor& b) {
  torch::Tensor a64 = a.to(torch::kDouble), b64 = b.to(torch::kDouble);
  double denominator = b64.norm().item<double>();
  double numerator = (a64 - b64).norm().item<double>();
  return denominator > 0 ? numerator / denominator : numerator;
}

std::vector<PackedCase> GridCases(uint64_t seed, int random_cases) {
  std::mt19937_64 rng(seed);
  std::vector<PackedCase> cases;
  const int64_t corners[][2] = {{1, 16}, {8, 128}, {3, 17}, {2, 64}};
  for (MaskKind mask : kAllMasks) {
    for (const auto& corner : corners) {
      PackedCase c;
      c.heads = corner[0];
      c.head_dim = corner[1];
      c.mask = mask;
      c.lengths = {1, 300, 64, 65, 2};
      c.prefixes = {1, 150, 0, 65, 1};
      FillRandom(&c, &rng);
      cases.push_back(std::move(c));
    }
    for (int trial = 0; trial < random_cases; ++trial) {
      int64_t heads = std::uniform_int_distribution<int64_t>(1, 8)(rng);
      int64_t head_dim = std::uniform_int_distribution<int64_t>(16, 128)(rng);
      int64_t batch = std::uniform_int_distribution<int64_t>(1, 4)(rng);
      cases.push_back(RandomCase(&rng, batch, 300, heads, head_dim, mask));
    }
  }
  return cases;
}

std::string Describe(const PackedCase& c) {
  std::string text = "mask " + std::to_string(static_cast<int>(c.mask)) + " heads " +
                     std::to_string(c.heads) + " dim " + std::to_string(c.head_dim) + " lengths";
  for (size_t b = 0; b < c.lengths.size(); ++b) {
    text += " " + std::to_string(c.lengths[b]) + "/p" + std::to_string(c.prefixes[b]);
  }
  return text;
}

void ExpectMatchesFloat64(const PackedCase& c, const AttentionResult& ours, double tolerance) {
  SCOPED_TRACE(Describe(c));
  Reference ref = ComputeReference(c, 1.0 / std::sqrt(static_cast<double>(c.head_dim)));
  ASSERT_TRUE(ours.out.defined() && ours.lse.defined() && ours.dq.defined() &&
              ours.dk.defined() && ours.dv.defined());
  EXPECT_LE(RelativeError(ours.out, ref.out), tolerance);
  EXPECT_LE(RelativeError(ours.lse, ref.lse), tolerance);
  EXPECT_LE(RelativeError(ours.dq, ref.dq), tolerance);
  EXPECT_LE(RelativeError(ours.dk, ref.dk), tolerance);
  EXPECT_LE(RelativeError(ours.dv, ref.dv), tolerance);
}

}  // namespace roboloop::kernels::testing
