// Run-time choice of the GEMM kernel and its scratch size.
#include "kernels/gemm_core.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstring>

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

bool OpenBlasCoreIsAvx2Wide(const char* corename) {
  if (corename == nullptr) return false;
  for (const char* avx2_core : {"Haswell", "Zen"}) {
    if (std::strcmp(corename, avx2_core) == 0) return true;
  }
  return false;
}

#ifdef ROBOLOOP_KERNELS_HAVE_AVX2
namespace {

// The core name of the OpenBLAS that LibTorch loaded as libblas.so.3, or null when the BLAS
// is not OpenBLAS or not loaded.
const char* LoadedOpenBlasCore() {
  void* blas = dlopen("libblas.so.3", RTLD_LAZY | RTLD_NOLOAD);
  if (blas == nullptr) return nullptr;
  using CoreName = char* (*)();
  const auto corename = reinterpret_cast<CoreName>(dlsym(blas, "openblas_get_corename"));
  const char* name = corename == nullptr ? nullptr : corename();
  dlclose(blas);
  return name;
}

}  // namespace
#endif

GemmBlockKernel SelectedGemmKernel() {
#ifdef ROBOLOOP_KERNELS_HAVE_AVX2
  static const GemmBlockKernel selected =
      !__builtin_cpu_supports("avx512f") || OpenBlasCoreIsAvx2Wide(LoadedOpenBlasCore()) ? Avx2GemmKernel()
                                                                                         : nullptr;
  return selected;
#else
  return nullptr;
#endif
}

}  // namespace roboloop::kernels
