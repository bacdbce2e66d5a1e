// A host emulator of the CUDA attention kernels: runs the tile schedules of attention_tiles.h
// for every thread of every block in turn, with host pointers, so the GPU algorithm is checked
// on machines without a GPU (tests/kernels/attention_tiles_test.cc, cuda_attention_check
// --emulate). Same contracts as CudaAttentionForward / CudaAttentionBackward, on host memory.
//
// Thread-safety: calls on distinct outputs may run concurrently.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "kernels/cuda/attention_tiles.h"

namespace roboloop::kernels::cuda {
namespace emulator_internal {

// One block's threads run by one host thread: each schedule step runs for every thread
// before the next, which is what the GPU's block barriers guarantee.
inline constexpr ThreadSpan kWholeBlock{0, static_cast<int>(kRowTile)};
struct NoBarrier {
  void operator()() const {}
};

template <int kMaxHeadDim>
void Forward(const ForwardArgs& args) {
  std::vector<float> shared(ForwardTile<kMaxHeadDim>::SharedFloats(args.shape.head_dim));
  std::vector<ForwardRow<kMaxHeadDim>> rows(kRowTile);
  for (const TileItem& item : EnumerateTiles(args.shape)) {
    RunQueryTile(ForwardTile<kMaxHeadDim>(args, item), shared.data(), kWholeBlock, rows.data(),
                 NoBarrier{});
  }
}

template <int kMaxHeadDim>
void Backward(const BackwardArgs& args) {
  const int64_t d = args.shape.head_dim;
  std::vector<float> shared(std::max(QueryGradTile<kMaxHeadDim>::SharedFloats(d),
                                     KeyGradTile<kMaxHeadDim>::SharedFloats(d)));
  std::vector<GradRow<kMaxHeadDim>> rows(kRowTile);
  const std::vector<TileItem> items = EnumerateTiles(args.shape);
  for (const TileItem& item : items) {
    RunQueryTile(QueryGradTile<kMaxHeadDim>(args, item), shared.data(), kWholeBlock,
                 rows.data(), NoBarrier{});
  }
  for (const TileItem& item : items) {
    RunKeyTile(KeyGradTile<kMaxHeadDim>(args, item), shared.data(), kWholeBlock, rows.data(),
               NoBarrier{});
  }
}

}  // namespace emulator_internal

// The forward of CudaAttentionForward on the host. head_dim <= kCudaMaxHeadDim.
inline void EmulateAttentionForward(const ForwardArgs& args) {
  WithHeadDimBound(args.shape.head_dim, [&](auto bound) {
    emulator_internal::Forward<decltype(bound)::value>(args);
  });
}

// The backward of CudaAttentionBackward on the host (row dots first, into `row_dots`).
inline void EmulateAttentionBackward(const BackwardArgs& args, const float* out,
                                     float* row_dots, int64_t total_tokens) {
  const int64_t d = args.shape.head_dim;
  for (int64_t r = 0; r < total_tokens * args.shape.heads; ++r) {
    row_dots[r] = RowDot(args.dout + r * d, out + r * d, d);
  }
  BackwardArgs with_dots = args;
  with_dots.row_dots = row_dots;
  WithHeadDimBound(d, [&](auto bound) {
    emulator_internal::Backward<decltype(bound)::value>(with_dots);
  });
}

}  // namespace roboloop::kernels::cuda
