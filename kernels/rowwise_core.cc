// Run-time choice of the row-wise kernels' ISA and their size helpers.
#include "kernels/rowwise_core.h"

namespace roboloop::kernels {

namespace portable {
extern const RowwiseKernels kRowwiseKernels;
}  // namespace portable
#ifdef ROBOLOOP_KERNELS_HAVE_AVX512
namespace avx512 {
extern const RowwiseKernels kRowwiseKernels;
}  // namespace avx512
#endif
#ifdef ROBOLOOP_KERNELS_HAVE_AVX2
namespace avx2 {
extern const RowwiseKernels kRowwiseKernels;
}  // namespace avx2
#endif

int64_t LinearPaddedColumns(int64_t n) { return (n + 15) / 16 * 16; }

size_t LinearScratchFloats(int64_t k, int64_t n) {
  return static_cast<size_t>(kLinearRowBlock * (k + LinearPaddedColumns(n)));
}

const RowwiseKernels& SelectedRowwiseKernels() {
#ifdef ROBOLOOP_KERNELS_HAVE_AVX512
  static const bool has_avx512 =
      __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("fma");
  if (has_avx512) return avx512::kRowwiseKernels;
#endif
#ifdef ROBOLOOP_KERNELS_HAVE_AVX2
  static const bool has_avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  if (has_avx2) return avx2::kRowwiseKernels;
#endif
  return portable::kRowwiseKernels;
}

}  // namespace roboloop::kernels
