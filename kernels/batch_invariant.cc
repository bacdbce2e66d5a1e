// Dispatch between LibTorch's default ops and the row-wise batch-invariant kernels.
#include "kernels/batch_invariant.h"

#include <ATen/Parallel.h>

#include <c10/util/intrusive_ptr.h>

#include <cmath>
#include <vector>

#include "kernels/dense.h"
#include "kernels/gelu.h"
#include "kernels/layer_norm.h"
#include "kernels/rowwise_core.h"

namespace roboloop::kernels {
namespace {

thread_local bool batch_invariant_mode = false;

// Rows per parallel chunk of the row-wise kernels; a multiple of kLinearRowBlock.
constexpr int64_t kRowsPerTask = 16;

// x as a contiguous float32 matrix [rows, last dim], after checking it is one.
torch::Tensor RowMatrix(const char* op, const torch::Tensor& x) {
  TORCH_CHECK(x.defined(), op, ": input is undefined");
  TORCH_CHECK(x.device().is_cpu(), op, ": input must be on the CPU in batch-invariant mode, got ",
              x.device());
  TORCH_CHECK(x.scalar_type() == torch::kFloat, op,
              ": input must be float32 in batch-invariant mode, got ", x.scalar_type());
  TORCH_CHECK(x.dim() >= 1, op, ": input must have at least one dim");
  return x.contiguous().reshape({-1, x.size(-1)});
}

// A float32 vector of n entries, contiguous, or undefined when `t` is.
torch::Tensor OptionalVector(const char* op, const char* name, const torch::Tensor& t,
                             int64_t n) {
  if (!t.defined()) return t;
  TORCH_CHECK(t.dim() == 1 && t.size(0) == n && t.scalar_type() == torch::kFloat &&
                  t.device().is_cpu(),
              op, ": ", name, " must be a CPU float32 vector of ", n, " entries, got ",
              t.scalar_type(), " ", t.sizes());
  return t.contiguous();
}

const float* DataOrNull(const torch::Tensor& t) {
  return t.defined() ? t.data_ptr<float>() : nullptr;
}

// A weight transposed and zero-padded to [k, LinearPaddedColumns(n)], the layout the row-wise
// linear kernel reads, with what identifies the weight it was made from. The weak pointer
// keeps the weight's TensorImpl address from being reused while the entry exists.
struct PackedWeight {
  c10::weak_intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl> source;
  const void* data = nullptr;
  int64_t version = 0;
  torch::Tensor packed;

  bool Packs(const torch::Tensor& weight) const {
    return !source.expired() && source._unsafe_get_target() == weight.unsafeGetTensorImpl() &&
           data == weight.data_ptr() && version == weight._version();
  }
};

constexpr size_t kMaxPackedWeights = 64;

// The packed form of `weight` [n, k], made once per weight and reused until the weight is
// freed or changed (every in-place change bumps its version). One cache per thread.
const torch::Tensor& PackedWeightFor(const torch::Tensor& weight, int64_t k, int64_t n) {
  thread_local std::vector<PackedWeight> cache;
  for (const PackedWeight& entry : cache) {
    if (entry.Packs(weight)) return entry.packed;
  }
  if (cache.size() >= kMaxPackedWeights) cache.clear();
  torch::Tensor packed = torch::zeros({k, LinearPaddedColumns(n)}, torch::kFloat);
  packed.narrow(1, 0, n).copy_(weight.t());
  cache.push_back({c10::weak_intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl>(
                       weight.getIntrusivePtr()),
                   weight.data_ptr(), weight._version(), std::move(packed)});
  return cache.back().packed;
}

torch::Tensor InvariantLinear(const torch::Tensor& x, const torch::Tensor& weight,
                              const torch::Tensor& bias) {
  torch::Tensor rows = RowMatrix("Linear", x);
  TORCH_CHECK(weight.defined() && weight.dim() == 2 && weight.scalar_type() == torch::kFloat &&
                  weight.device().is_cpu() && weight.size(1) == rows.size(1),
              "Linear: weight must be a CPU float32 [out, ", rows.size(1), "] matrix, got ",
              weight.defined() ? c10::toString(weight.scalar_type()) : "undefined", " ",
              weight.defined() ? weight.sizes() : torch::IntArrayRef{});
  const int64_t k = rows.size(1), n = weight.size(0);
  torch::Tensor b = OptionalVector("Linear", "bias", bias, n);
  const torch::Tensor& wt = PackedWeightFor(weight, k, n);
  torch::Tensor y = torch::empty({rows.size(0), n}, torch::kFloat);
  const RowwiseKernels& kernels = SelectedRowwiseKernels();
  at::parallel_for(0, rows.size(0), kRowsPerTask, [&](int64_t begin, int64_t end) {
    std::vector<float> scratch(LinearScratchFloats(k, n));
    kernels.linear(rows.data_ptr<float>() + begin * k, end - begin, k, wt.data_ptr<float>(), n,
                   DataOrNull(b), y.data_ptr<float>() + begin * n, scratch.data());
  });
  std::vector<int64_t> shape = x.sizes().vec();
  shape.back() = n;
  return y.reshape(shape);
}

torch::Tensor InvariantLayerNorm(const torch::Tensor& x, const torch::Tensor& weight,
                                 const torch::Tensor& bias, double eps) {
  torch::Tensor rows = RowMatrix("LayerNorm", x);
  const int64_t n = rows.size(1);
  torch::Tensor gamma = OptionalVector("LayerNorm", "weight", weight, n);
  torch::Tensor beta = OptionalVector("LayerNorm", "bias", bias, n);
  torch::Tensor y = torch::empty_like(rows);
  const RowwiseKernels& kernels = SelectedRowwiseKernels();
  at::parallel_for(0, rows.size(0), kRowsPerTask, [&](int64_t begin, int64_t end) {
    kernels.layer_norm(rows.data_ptr<float>() + begin * n, end - begin, n, DataOrNull(gamma),
                       DataOrNull(beta), static_cast<float>(eps), y.data_ptr<float>() + begin * n);
  });
  return y.reshape(x.sizes());
}

torch::Tensor InvariantSoftmax(const torch::Tensor& x) {
  torch::Tensor rows = RowMatrix("Softmax", x);
  const int64_t n = rows.size(1);
  torch::Tensor y = torch::empty_like(rows);
  const RowwiseKernels& kernels = SelectedRowwiseKernels();
  at::parallel_for(0, rows.size(0), kRowsPerTask, [&](int64_t begin, int64_t end) {
    kernels.softmax(rows.data_ptr<float>() + begin * n, end - begin, n,
                    y.data_ptr<float>() + begin * n);
  });
  return y.reshape(x.sizes());
}

float Relu(float x) { return x > 0.0f ? x : 0.0f; }
float Silu(float x) { return x / (1.0f + std::exp(-x)); }
float Tanh(float x) { return std::tanh(x); }

// out[i] = fn(in[i]) for every element, over torch's intra-op threads.
template <float (*fn)(float)>
void ApplyElementwise(const float* in, float* out, int64_t count) {
  at::parallel_for(0, count, 4096, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) out[i] = fn(in[i]);
  });
}

// Each element's result depends on that element alone, through the same function whatever its
// position (relu vectorises, and a vector max equals the scalar one bitwise; gelu is the
// row-wise kernels' lane-wise one).
torch::Tensor InvariantActivate(Activation activation, const torch::Tensor& x) {
  torch::Tensor input = RowMatrix("Activate", x);
  torch::Tensor y = torch::empty_like(input);
  const float* in = input.data_ptr<float>();
  float* out = y.data_ptr<float>();
  const int64_t count = input.numel();
  switch (activation) {
    case Activation::kRelu: ApplyElementwise<Relu>(in, out, count); break;
    case Activation::kGelu: {
      const RowwiseKernels& kernels = SelectedRowwiseKernels();
      at::parallel_for(0, count, 4096, [&](int64_t begin, int64_t end) {
        kernels.gelu(in + begin, end - begin, out + begin);
      });
      break;
    }
    case Activation::kSilu: ApplyElementwise<Silu>(in, out, count); break;
    case Activation::kTanh: ApplyElementwise<Tanh>(in, out, count); break;
  }
  return y.reshape(x.sizes());
}

torch::Tensor DefaultActivate(Activation activation, const torch::Tensor& x) {
  switch (activation) {
    case Activation::kRelu: return torch::relu(x);
    case Activation::kGelu: return Gelu(x);
    case Activation::kSilu: return torch::silu(x);
    case Activation::kTanh: return torch::tanh(x);
  }
  TORCH_CHECK(false, "Activate: unknown activation ", static_cast<int>(activation));
}

}  // namespace

bool BatchInvariantModeEnabled() { return batch_invariant_mode; }

BatchInvariantScope::BatchInvariantScope(bool enabled) : previous_(batch_invariant_mode) {
  batch_invariant_mode = enabled;
}

BatchInvariantScope::~BatchInvariantScope() { batch_invariant_mode = previous_; }

torch::Tensor Linear(const torch::Tensor& x, const torch::Tensor& weight,
                     const torch::Tensor& bias) {
  if (!batch_invariant_mode) return Dense(x, weight, bias);
  return InvariantLinear(x, weight, bias);
}

torch::Tensor LayerNorm(const torch::Tensor& x, const torch::Tensor& weight,
                        const torch::Tensor& bias, double eps) {
  if (!batch_invariant_mode) {
    return DifferentiableLayerNorm(x, weight, bias, eps);
  }
  return InvariantLayerNorm(x, weight, bias, eps);
}

torch::Tensor Softmax(const torch::Tensor& x) {
  if (!batch_invariant_mode) return torch::softmax(x, -1);
  return InvariantSoftmax(x);
}

torch::Tensor Activate(Activation activation, const torch::Tensor& x) {
  if (!batch_invariant_mode) return DefaultActivate(activation, x);
  return InvariantActivate(activation, x);
}

}  // namespace roboloop::kernels
