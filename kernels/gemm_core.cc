// Run-time choice of the GEMM kernel and its scratch size.
#include "kernels/gemm_core.h"

#include <algorithm>

namespace roboloop::kernels {

#ifdef ROBOLOOP_KERNELS_HAVE_AVX2
namespace avx2 {
// The GemmBlockKernel compiled for AVX2 + FMA (gemm_core_avx2.cc).
void GemmBlockAvx2(MatrixView a, MatrixView b, int64_t n, int64_t k, const float* bias,
                   float* c, int64_t ldc, GemmBlock block, float* scratch);
}  // namespace avx2
#endif

size_t GemmScratchFloats(int64_t k, int64_t panels) {
  // Aligning the packed panels to 32 bytes takes up to 7 floats more.
  return static_cast<size_t>(std::min(k, kGemmReductionChunk) * panels * kGemmPanelColumns + 8);
}

GemmBlockKernel Avx2GemmKernel() {
#ifdef ROBOLOOP_KERNELS_HAVE_AVX2
  static const bool has_avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  if (has_avx2) return avx2::GemmBlockAvx2;
#endif
  return nullptr;
}

GemmBlockKernel SelectedGemmKernel() { return Avx2GemmKernel(); }

}  // namespace roboloop::kernels
