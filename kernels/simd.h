// Fixed-width vector helpers for the ISA-specific kernel translation units only.
// Everything here has internal linkage, so each TU compiled with its own -m flags gets its
// own copy and no inline function is shared between ISAs (no ODR clash). Never include this
// header from a torch TU or from a public header.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

namespace roboloop::kernels {
namespace {

// Sixteen floats; GCC lowers it to one zmm register with AVX-512 and to narrower registers
// on the portable path.
typedef float V16 __attribute__((vector_size(64)));
typedef float V16Unaligned __attribute__((vector_size(64), aligned(4), __may_alias__));
typedef int32_t I16 __attribute__((vector_size(64)));

constexpr int64_t kLanes = 16;

// Rounds `n` up to a multiple of the vector width.
inline int64_t RoundUpToLanes(int64_t n) { return (n + kLanes - 1) / kLanes * kLanes; }

inline V16 Load(const float* p) { return *reinterpret_cast<const V16Unaligned*>(p); }
inline void Store(float* p, V16 v) { *reinterpret_cast<V16Unaligned*>(p) = v; }
// Every lane x (a broadcast; `V16{} + x` would add 0.0f first, an extra instruction per call).
inline V16 Splat(float x) { return V16{x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x}; }

// Lane indices 0..15 as floats, for building tail masks.
inline V16 LaneIndex() {
  return V16{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
}

// Keeps lanes whose index `base + lane` lies in [lo, hi); sets the others to `fill`.
inline V16 KeepRange(V16 v, int64_t base, int64_t lo, int64_t hi, float fill = 0.0f) {
  V16 index = LaneIndex() + static_cast<float>(base);
  return (index >= static_cast<float>(lo) && index < static_cast<float>(hi)) ? v : Splat(fill);
}

// e^x for x in any range, relative error a few ulp: Cody-Waite reduction x = n ln2 + r and
// a degree-7 Taylor polynomial on |r| <= ln2/2. Inputs below -87.3 give ~1e-38, not zero.
inline V16 Exp(V16 x) {
  x = x < Splat(-87.3f) ? Splat(-87.3f) : x;
  x = x > Splat(88.3f) ? Splat(88.3f) : x;
  const V16 round_magic = Splat(12582912.0f);  // 1.5 * 2^23
  V16 n = (x * 1.44269504088896341f + round_magic) - round_magic;
  V16 r = x - n * 0.693145751953125f;
  r = r - n * 1.428606765330187045e-06f;
  V16 p = Splat(1.0f / 5040.0f);
  p = p * r + 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  I16 exponent = (__builtin_convertvector(n, I16) + 127) << 23;
  return p * reinterpret_cast<V16>(exponent);
}

// Sum of the 16 lanes in a fixed order.
inline float SumLanes(V16 v) {
  float lanes[kLanes];
  std::memcpy(lanes, &v, sizeof(lanes));
  float total = 0.0f;
  for (int i = 0; i < kLanes; ++i) total += lanes[i];
  return total;
}

// Maximum of the 16 lanes.
inline float MaxLanes(V16 v) {
  float lanes[kLanes];
  std::memcpy(lanes, &v, sizeof(lanes));
  float best = lanes[0];
  for (int i = 1; i < kLanes; ++i) best = lanes[i] > best ? lanes[i] : best;
  return best;
}

// Butterfly stage `b` of Transpose16 on one row pair: x keeps its low lane of every 2b-lane
// group and takes y's, y the high ones. __builtin_shufflevector (GCC >= 12 and Clang) needs
// literal lane lists.
inline void TransposeStage1(V16& x, V16& y) {
  const V16 low = __builtin_shufflevector(x, y, 0, 16, 2, 18, 4, 20, 6, 22, 8, 24, 10, 26, 12,
                                          28, 14, 30);
  y = __builtin_shufflevector(x, y, 1, 17, 3, 19, 5, 21, 7, 23, 9, 25, 11, 27, 13, 29, 15, 31);
  x = low;
}
inline void TransposeStage2(V16& x, V16& y) {
  const V16 low = __builtin_shufflevector(x, y, 0, 1, 16, 17, 4, 5, 20, 21, 8, 9, 24, 25, 12,
                                          13, 28, 29);
  y = __builtin_shufflevector(x, y, 2, 3, 18, 19, 6, 7, 22, 23, 10, 11, 26, 27, 14, 15, 30, 31);
  x = low;
}
inline void TransposeStage4(V16& x, V16& y) {
  const V16 low = __builtin_shufflevector(x, y, 0, 1, 2, 3, 16, 17, 18, 19, 8, 9, 10, 11, 24,
                                          25, 26, 27);
  y = __builtin_shufflevector(x, y, 4, 5, 6, 7, 20, 21, 22, 23, 12, 13, 14, 15, 28, 29, 30, 31);
  x = low;
}
inline void TransposeStage8(V16& x, V16& y) {
  const V16 low = __builtin_shufflevector(x, y, 0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21,
                                          22, 23);
  y = __builtin_shufflevector(x, y, 8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30,
                              31);
  x = low;
}

// Transposes the 16 x 16 block held in rows[0..15] in place: lane l of row i trades places
// with lane i of row l. Four butterfly stages; stage b swaps the off-diagonal b x b blocks of
// every 2b x 2b block.
inline void Transpose16(V16 rows[kLanes]) {
  for (int i = 0; i < kLanes; i += 2) TransposeStage1(rows[i], rows[i + 1]);
  for (int i = 0; i < kLanes; ++i) {
    if (!(i & 2)) TransposeStage2(rows[i], rows[i + 2]);
  }
  for (int i = 0; i < kLanes; ++i) {
    if (!(i & 4)) TransposeStage4(rows[i], rows[i + 4]);
  }
  for (int i = 0; i < 8; ++i) TransposeStage8(rows[i], rows[i + 8]);
}

// C[4 x 16*NV] (+)= A[4 x k] * B[k x 16*NV]; B and C row-major with the given leading dims,
// A's element (r, p) at a[r * lda + p * a_step] (a_step 1: row-major; lda 1: A transposed).
template <int NV>
inline void GemmBlock4(const float* a, int64_t lda, int64_t a_step, const float* b, int64_t ldb,
                       float* c, int64_t ldc, int64_t k, bool accumulate) {
  V16 acc[4][NV];
  for (int r = 0; r < 4; ++r) {
    for (int v = 0; v < NV; ++v) acc[r][v] = accumulate ? Load(c + r * ldc + v * kLanes) : V16{};
  }
  for (int64_t p = 0; p < k; ++p) {
    V16 bv[NV];
    for (int v = 0; v < NV; ++v) bv[v] = Load(b + p * ldb + v * kLanes);
    for (int r = 0; r < 4; ++r) {
      V16 ar = Splat(a[r * lda + p * a_step]);
      for (int v = 0; v < NV; ++v) acc[r][v] += ar * bv[v];
    }
  }
  for (int r = 0; r < 4; ++r) {
    for (int v = 0; v < NV; ++v) Store(c + r * ldc + v * kLanes, acc[r][v]);
  }
}

// Column vectors per GemmBlock4 call: its 4 x NV accumulators must stay in registers -- 32
// zmm registers hold 4 x 4 with AVX-512; AVX2's 16 ymm registers hold 4 x 1 (two ymm each).
#ifdef __AVX512F__
constexpr int kGemmColumnVectors = 4;
#else
constexpr int kGemmColumnVectors = 1;
#endif

// C[m x n] (+)= A[m x k] * B[k x n], row-major, A's element (i, p) at
// a[i * lda + p * a_step]. Requires m % 4 == 0 and n % 16 == 0 (callers pad with zeros). Each
// output element is a sequential sum over k in index order, whatever m, n, the strides and the
// element's position: the basis of batch invariance.
inline void Gemm(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b,
                 int64_t ldb, float* c, int64_t ldc, bool accumulate, int64_t a_step = 1) {
  for (int64_t i = 0; i < m; i += 4) {
    int64_t j = 0;
    for (; j + kGemmColumnVectors * kLanes <= n; j += kGemmColumnVectors * kLanes) {
      GemmBlock4<kGemmColumnVectors>(a + i * lda, lda, a_step, b + j, ldb, c + i * ldc + j, ldc,
                                     k, accumulate);
    }
    const float* a_rows = a + i * lda;
    float* c_rows = c + i * ldc + j;
    switch ((n - j) / kLanes) {
      case 3: GemmBlock4<3>(a_rows, lda, a_step, b + j, ldb, c_rows, ldc, k, accumulate); break;
      case 2: GemmBlock4<2>(a_rows, lda, a_step, b + j, ldb, c_rows, ldc, k, accumulate); break;
      case 1: GemmBlock4<1>(a_rows, lda, a_step, b + j, ldb, c_rows, ldc, k, accumulate); break;
      default: break;
    }
  }
}

}  // namespace
}  // namespace roboloop::kernels
