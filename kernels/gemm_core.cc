// Run-time choice of the GEMM kernel and its scratch size.
#include "kernels/gemm_core.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace roboloop::kernels {

#ifdef ROBOLOOP_KERNELS_HAVE_AVX512
namespace avx512 {
// The GemmBlockKernel compiled for AVX-512F (gemm_core_avx512.cc).
void GemmBlockAvx512(MatrixView a, MatrixView b, int64_t n, int64_t k, const float* bias,
                     float* c, int64_t ldc, GemmBlock block, float* scratch);
}  // namespace avx512
#endif

#ifdef ROBOLOOP_KERNELS_HAVE_AVX2
namespace avx2 {
// The GemmBlockKernel compiled for AVX2 + FMA (gemm_core_avx2.cc).
void GemmBlockAvx2(MatrixView a, MatrixView b, int64_t n, int64_t k, const float* bias,
                   float* c, int64_t ldc, GemmBlock block, float* scratch);
}  // namespace avx2
#endif

size_t GemmScratchFloats(int64_t k, int64_t panels) {
  // Aligning the packed panels to 64 bytes takes up to 15 floats more.
  return static_cast<size_t>(std::min(k, kGemmReductionChunk) * panels * kGemmPanelColumns + 16);
}

float* AlignedGemmPanels(float* scratch) {
  return reinterpret_cast<float*>((reinterpret_cast<uintptr_t>(scratch) + 63) & ~uintptr_t{63});
}

namespace {

// One panel of a B whose columns are contiguous (row_stride 1: the transposed weight of a
// forward linear): each of its columns is read in order and written down the panel.
void PackColumnMajorPanel(MatrixView b, int64_t k0, int64_t chunk, int64_t first, int64_t columns, float* out) {
  for (int64_t j = 0; j < columns; ++j) {
    const float* column = b.data + k0 + (first + j) * b.col_stride;
    for (int64_t kk = 0; kk < chunk; ++kk) out[kk * kGemmPanelColumns + j] = column[kk];
  }
  for (int64_t j = columns; j < kGemmPanelColumns; ++j) {
    for (int64_t kk = 0; kk < chunk; ++kk) out[kk * kGemmPanelColumns + j] = 0.0f;
  }
}

}  // namespace

void PackGemmPanels(MatrixView b, int64_t n, int64_t k0, int64_t chunk, int64_t panel_begin,
                    int64_t panel_end, float* packed) {
  for (int64_t panel = panel_begin; panel < panel_end; ++panel) {
    const int64_t first = panel * kGemmPanelColumns;
    const int64_t columns = std::min<int64_t>(kGemmPanelColumns, n - first);
    float* out = packed + (panel - panel_begin) * chunk * kGemmPanelColumns;
    if (b.row_stride == 1 && b.col_stride != 1) {
      PackColumnMajorPanel(b, k0, chunk, first, columns, out);
      continue;
    }
    for (int64_t kk = 0; kk < chunk; ++kk) {
      const float* row = b.data + (k0 + kk) * b.row_stride + first * b.col_stride;
      float* dst = out + kk * kGemmPanelColumns;
      if (b.col_stride == 1 && columns == kGemmPanelColumns) {
        std::memcpy(dst, row, sizeof(float) * kGemmPanelColumns);
        continue;
      }
      for (int64_t j = 0; j < kGemmPanelColumns; ++j) dst[j] = j < columns ? row[j * b.col_stride] : 0.0f;
    }
  }
}

GemmBlockKernel Avx2GemmKernel() {
#ifdef ROBOLOOP_KERNELS_HAVE_AVX2
  static const bool has_avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  if (has_avx2) return avx2::GemmBlockAvx2;
#endif
  return nullptr;
}

GemmBlockKernel Avx512GemmKernel() {
#ifdef ROBOLOOP_KERNELS_HAVE_AVX512
  static const bool has_avx512 = __builtin_cpu_supports("avx512f");
  if (has_avx512) return avx512::GemmBlockAvx512;
#endif
  return nullptr;
}

GemmBlockKernel SelectedGemmKernel() {
  static const GemmBlockKernel selected = Avx512GemmKernel() != nullptr ? Avx512GemmKernel() : Avx2GemmKernel();
  return selected;
}

}  // namespace roboloop::kernels
