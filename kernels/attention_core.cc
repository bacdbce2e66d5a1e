// Tile enumeration and run-time choice of the attention kernels' ISA.
#include "kernels/attention_core.h"

namespace roboloop::kernels {

namespace portable {
extern const AttentionKernels kAttentionKernels;
}  // namespace portable
#ifdef ROBOLOOP_KERNELS_HAVE_AVX512
namespace avx512 {
extern const AttentionKernels kAttentionKernels;
}  // namespace avx512
#endif
#ifdef ROBOLOOP_KERNELS_HAVE_AVX2
namespace avx2 {
extern const AttentionKernels kAttentionKernels;
}  // namespace avx2
#endif

std::vector<TileItem> EnumerateTiles(const AttentionShape& shape) {
  std::vector<TileItem> items;
  for (int64_t b = 0; b < shape.batch; ++b) {
    int64_t length = shape.cu_seqlens[b + 1] - shape.cu_seqlens[b];
    for (int64_t h = 0; h < shape.heads; ++h) {
      for (int64_t row = 0; row < length; row += kRowTile) {
        items.push_back({static_cast<int32_t>(b), static_cast<int32_t>(h),
                         static_cast<int32_t>(row)});
      }
    }
  }
  return items;
}

const AttentionKernels& SelectedAttentionKernels() {
#ifdef ROBOLOOP_KERNELS_HAVE_AVX512
  static const bool has_avx512 =
      __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("fma");
  if (has_avx512) return avx512::kAttentionKernels;
#endif
#ifdef ROBOLOOP_KERNELS_HAVE_AVX2
  static const bool has_avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  if (has_avx2) return avx2::kAttentionKernels;
#endif
  return portable::kAttentionKernels;
}

const AttentionKernels& PortableAttentionKernels() { return portable::kAttentionKernels; }

}  // namespace roboloop::kernels
