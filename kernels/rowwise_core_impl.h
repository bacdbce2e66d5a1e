// Implementation of the row-wise kernels, compiled once per ISA: a TU defines
// ROBOLOOP_KERNELS_ISA (a namespace name) and ROBOLOOP_KERNELS_ISA_NAME, then includes this
// file, which defines roboloop::kernels::ROBOLOOP_KERNELS_ISA::kRowwiseKernels.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "kernels/rowwise_core.h"
#include "kernels/simd.h"

#ifndef ROBOLOOP_KERNELS_ISA
#error "define ROBOLOOP_KERNELS_ISA before including rowwise_core_impl.h"
#endif

namespace roboloop::kernels::ROBOLOOP_KERNELS_ISA {
namespace {

// Loads lanes [j, min(j+16, n)) of `row`, the rest `fill`, without reading past n.
V16 LoadTail(const float* row, int64_t j, int64_t n, float fill) {
  float lanes[kLanes];
  for (int64_t l = 0; l < kLanes; ++l) lanes[l] = j + l < n ? row[j + l] : fill;
  return Load(lanes);
}

// Sum of f(x) over a row: 16 lane-wise partial sums over the row in order, then the lanes.
template <typename F>
float BlockedSum(const float* row, int64_t n, const F& f) {
  V16 acc = V16{};
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes) acc += f(Load(row + j));
  if (j < n) acc += KeepRange(f(LoadTail(row, j, n, 0.0f)), j, 0, n);
  return SumLanes(acc);
}

void Linear(const float* x, int64_t rows, int64_t k, const float* wt, int64_t n,
            const float* bias, float* y, float* scratch) {
  const int64_t padded_n = LinearPaddedColumns(n);
  float* x_block = scratch;
  float* y_block = scratch + kLinearRowBlock * k;
  for (int64_t r0 = 0; r0 < rows; r0 += kLinearRowBlock) {
    const int64_t block = std::min(kLinearRowBlock, rows - r0);
    std::copy(x + r0 * k, x + (r0 + block) * k, x_block);
    std::fill(x_block + block * k, x_block + kLinearRowBlock * k, 0.0f);
    Gemm(kLinearRowBlock, padded_n, k, x_block, k, wt, padded_n, y_block, padded_n, false);
    for (int64_t r = 0; r < block; ++r) {
      float* out = y + (r0 + r) * n;
      const float* acc = y_block + r * padded_n;
      for (int64_t c = 0; c < n; ++c) out[c] = bias ? acc[c] + bias[c] : acc[c];
    }
  }
}

// A row's mean and 1/sqrt(var + eps), the variance from a second pass over the deviations.
void RowMoments(const float* row, int64_t n, float eps, float* mean, float* rstd) {
  const float m = BlockedSum(row, n, [](V16 v) { return v; }) / static_cast<float>(n);
  const float var =
      BlockedSum(row, n, [m](V16 v) { return (v - m) * (v - m); }) / static_cast<float>(n);
  *mean = m;
  *rstd = 1.0f / std::sqrt(var + eps);
}

void LayerNorm(const float* x, int64_t rows, int64_t n, const float* gamma, const float* beta,
               float eps, float* y) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = x + r * n;
    float mean = 0.0f, rstd = 0.0f;
    RowMoments(row, n, eps, &mean, &rstd);
    float* out = y + r * n;
    for (int64_t c = 0; c < n; ++c) {
      float normalized = (row[c] - mean) * rstd;
      if (gamma) normalized *= gamma[c];
      out[c] = beta ? normalized + beta[c] : normalized;
    }
  }
}

// Lanes [j, j+16) of an optional per-column vector: `fill` everywhere when it is null.
V16 LoadOptional(const float* v, int64_t j, float fill) { return v ? Load(v + j) : Splat(fill); }

void LayerNormForward(const float* x, int64_t rows, int64_t n, const float* gamma,
                      const float* beta, float eps, float* y, float* mean, float* rstd) {
  const int64_t full = n / kLanes * kLanes;
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = x + r * n;
    float m = 0.0f, rs = 0.0f;
    RowMoments(row, n, eps, &m, &rs);
    float* out = y + r * n;
    for (int64_t j = 0; j < full; j += kLanes) {
      Store(out + j, (Load(row + j) - m) * rs * LoadOptional(gamma, j, 1.0f) +
                         LoadOptional(beta, j, 0.0f));
    }
    for (int64_t c = full; c < n; ++c) {
      out[c] = (row[c] - m) * rs * (gamma ? gamma[c] : 1.0f) + (beta ? beta[c] : 0.0f);
    }
    mean[r] = m;
    rstd[r] = rs;
  }
}

// Row sums of g = dy gamma and of g x̂ (x̂ = (x - m) rs), in BlockedSum's order.
void RowGradientSums(const float* row, const float* dy, int64_t n, const float* gamma, float m,
                     float rs, float* sum_g, float* sum_gx) {
  const int64_t full = n / kLanes * kLanes;
  V16 g_acc = V16{}, gx_acc = V16{};
  for (int64_t j = 0; j < full; j += kLanes) {
    const V16 g = Load(dy + j) * LoadOptional(gamma, j, 1.0f);
    g_acc += g;
    gx_acc += g * ((Load(row + j) - m) * rs);
  }
  float tail_g = 0.0f, tail_gx = 0.0f;
  for (int64_t c = full; c < n; ++c) {
    const float g = dy[c] * (gamma ? gamma[c] : 1.0f);
    tail_g += g;
    tail_gx += g * ((row[c] - m) * rs);
  }
  *sum_g = SumLanes(g_acc) + tail_g;
  *sum_gx = SumLanes(gx_acc) + tail_gx;
}

void LayerNormBackward(const float* x, const float* dy, const float* mean, const float* rstd,
                       int64_t rows, int64_t n, const float* gamma, float* dx, float* dgamma,
                       float* dbeta) {
  const int64_t full = n / kLanes * kLanes;
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = x + r * n;
    const float* up = dy + r * n;
    float* out = dx + r * n;
    const float m = mean[r], rs = rstd[r];
    float sum_g = 0.0f, sum_gx = 0.0f;
    RowGradientSums(row, up, n, gamma, m, rs, &sum_g, &sum_gx);
    const float mean_g = sum_g / static_cast<float>(n), mean_gx = sum_gx / static_cast<float>(n);
    for (int64_t j = 0; j < full; j += kLanes) {
      const V16 xhat = (Load(row + j) - m) * rs;
      const V16 d = Load(up + j);
      Store(out + j, (d * LoadOptional(gamma, j, 1.0f) - mean_g - xhat * mean_gx) * rs);
      if (dgamma) Store(dgamma + j, Load(dgamma + j) + d * xhat);
      if (dbeta) Store(dbeta + j, Load(dbeta + j) + d);
    }
    for (int64_t c = full; c < n; ++c) {
      const float xhat = (row[c] - m) * rs;
      out[c] = (up[c] * (gamma ? gamma[c] : 1.0f) - mean_g - xhat * mean_gx) * rs;
      if (dgamma) dgamma[c] += up[c] * xhat;
      if (dbeta) dbeta[c] += up[c];
    }
  }
}

void Softmax(const float* x, int64_t rows, int64_t n, float* y) {
  const float lowest = -std::numeric_limits<float>::infinity();
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = x + r * n;
    float* out = y + r * n;
    V16 best = Splat(lowest);
    int64_t j = 0;
    for (; j + kLanes <= n; j += kLanes) {
      V16 v = Load(row + j);
      best = v > best ? v : best;
    }
    if (j < n) {
      V16 v = LoadTail(row, j, n, lowest);
      best = v > best ? v : best;
    }
    const float row_max = MaxLanes(best);
    for (j = 0; j + kLanes <= n; j += kLanes) Store(out + j, Exp(Load(row + j) - row_max));
    if (j < n) {
      float lanes[kLanes];
      Store(lanes, Exp(LoadTail(row, j, n, row_max) - row_max));
      std::copy(lanes, lanes + (n - j), out + j);
    }
    const float sum = BlockedSum(out, n, [](V16 v) { return v; });
    for (int64_t c = 0; c < n; ++c) out[c] /= sum;
  }
}

// The normal distribution at x lane by lane: with z = |x|/√2, gauss = exp(-z²) = exp(-x²/2)
// and q = erfc(z) from Abramowitz & Stegun 7.1.26 (|error| <= 1.5e-7); the cdf Φ(x) is
// 1 - q/2 for x >= 0 and q/2 for x < 0, so negative inputs lose nothing to cancellation.
struct NormalLanes {
  V16 cdf;    // Φ(x)
  V16 gauss;  // exp(-x²/2)
};

NormalLanes NormalOf(V16 x) {
  const V16 zero = Splat(0.0f);
  const V16 z = (x < zero ? -x : x) * static_cast<float>(M_SQRT1_2);
  const V16 t = Splat(1.0f) / (Splat(1.0f) + z * 0.3275911f);
  V16 poly = Splat(1.061405429f);
  poly = poly * t - 1.453152027f;
  poly = poly * t + 1.421413741f;
  poly = poly * t - 0.284496736f;
  poly = poly * t + 0.254829592f;
  const V16 gauss = Exp(-(z * z));
  const V16 q = poly * t * gauss;
  return {(x < zero ? q : Splat(2.0f) - q) * 0.5f, gauss};
}

// gelu(x) = x Φ(x) lane by lane.
V16 GeluLanes(V16 x) { return x * NormalOf(x).cdf; }

// dy · gelu'(x) = dy (Φ(x) + x φ(x)) lane by lane, φ(x) = exp(-x²/2) / √(2π).
V16 GeluGradLanes(V16 x, V16 dy) {
  const NormalLanes normal = NormalOf(x);
  constexpr float kInvSqrt2Pi = 0.3989422804014327f;
  return dy * (normal.cdf + x * normal.gauss * kInvSqrt2Pi);
}

// Every element, the tail's included, goes through GeluLanes.
void Gelu(const float* x, int64_t count, float* y) {
  int64_t j = 0;
  for (; j + kLanes <= count; j += kLanes) Store(y + j, GeluLanes(Load(x + j)));
  if (j < count) {
    float lanes[kLanes];
    Store(lanes, GeluLanes(LoadTail(x, j, count, 0.0f)));
    std::copy(lanes, lanes + (count - j), y + j);
  }
}

// Every element, the tail's included, goes through GeluGradLanes.
void GeluBackward(const float* x, const float* dy, int64_t count, float* dx) {
  int64_t j = 0;
  for (; j + kLanes <= count; j += kLanes) {
    Store(dx + j, GeluGradLanes(Load(x + j), Load(dy + j)));
  }
  if (j < count) {
    float lanes[kLanes];
    Store(lanes, GeluGradLanes(LoadTail(x, j, count, 0.0f), LoadTail(dy, j, count, 0.0f)));
    std::copy(lanes, lanes + (count - j), dx + j);
  }
}

}  // namespace

extern const RowwiseKernels kRowwiseKernels;
const RowwiseKernels kRowwiseKernels = {
    ROBOLOOP_KERNELS_ISA_NAME, &Linear,         &LayerNorm,        &Softmax,
    &Gelu,                     &GeluBackward,   &LayerNormForward, &LayerNormBackward};

}  // namespace roboloop::kernels::ROBOLOOP_KERNELS_ISA
