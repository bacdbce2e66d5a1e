// Torch-free row-wise kernels of the batch-invariant inference ops (issue 5, req 4).
// Every output row is computed from its input row alone, with a reduction order fixed by the
// row length: the same row gives the same bits whatever the batch size, the row's position,
// or how rows are split over threads. One implementation per ISA, chosen at run time.
#pragma once

#include <cstddef>
#include <cstdint>

namespace roboloop::kernels {

// Row-wise kernels of one ISA. All matrices are row-major and contiguous.
struct RowwiseKernels {
  const char* isa;  // "avx512", "avx2" or "portable"
  // y[rows][n] = x[rows][k] . w^T + bias, where `wt` is w transposed to [k][padded_n] with
  // zero columns up to padded_n = LinearPaddedColumns(n); `bias` may be null. `scratch` holds
  // LinearScratchFloats(k, n) floats owned by the calling thread.
  void (*linear)(const float* x, int64_t rows, int64_t k, const float* wt, int64_t n,
                 const float* bias, float* y, float* scratch);
  // y = (x - mean) / sqrt(var + eps) * gamma + beta per row of n; gamma/beta may be null.
  void (*layer_norm)(const float* x, int64_t rows, int64_t n, const float* gamma,
                     const float* beta, float eps, float* y);
  // y = exp(x - max) / sum(exp(x - max)) per row of n.
  void (*softmax)(const float* x, int64_t rows, int64_t n, float* y);
  // y[i] = gelu(x[i]) = x/2 (1 + erf(x/√2)) for i in [0, count), absolute error below 3e-7·|x|;
  // each element's bits depend on its own value alone (no tail path of its own).
  void (*gelu)(const float* x, int64_t count, float* y);
  // dx[i] = dy[i] * gelu'(x[i]) = dy[i] (Φ(x[i]) + x[i] φ(x[i])) for i in [0, count), with the
  // same erf approximation as `gelu`.
  void (*gelu_backward)(const float* x, const float* dy, int64_t count, float* dx);
  // Training layer norm: y as `layer_norm`'s formula (vectorised; its bits may differ from
  // `layer_norm`'s), plus each row's mean and rstd = 1/sqrt(var + eps) for the backward.
  void (*layer_norm_forward)(const float* x, int64_t rows, int64_t n, const float* gamma,
                             const float* beta, float eps, float* y, float* mean, float* rstd);
  // Its backward over rows: with x̂ = (x - mean) rstd and g = dy gamma,
  // dx = rstd (g - mean(g) - x̂ mean(g x̂)) per row; adds Σ dy x̂ to dgamma[n] and Σ dy to
  // dbeta[n] row by row in order. gamma null means ones; dgamma/dbeta may be null.
  void (*layer_norm_backward)(const float* x, const float* dy, const float* mean,
                              const float* rstd, int64_t rows, int64_t n, const float* gamma,
                              float* dx, float* dgamma, float* dbeta);
};

// Columns of the zero-padded transposed weight the linear kernel expects.
int64_t LinearPaddedColumns(int64_t n);

// Scratch floats the linear kernel needs for inner size k and n outputs.
size_t LinearScratchFloats(int64_t k, int64_t n);

// Rows the linear kernel processes together (callers split work at multiples of it).
inline constexpr int64_t kLinearRowBlock = 4;

// The AVX-512 kernels when the CPU (and the build) supports them, else the AVX2 + FMA ones
// when it supports those, else the portable ones.
const RowwiseKernels& SelectedRowwiseKernels();

}  // namespace roboloop::kernels
