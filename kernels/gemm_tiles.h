// The loop the ISA-specific GEMM kernels share: per reduction chunk, pack the block's panels of
// B, then hand every tile of the block to the ISA's tile function. Included only by the kernel
// TUs (gemm_core_avx2.cc, gemm_core_avx512.cc), each compiled with its own ISA flags.
#pragma once

#include <algorithm>
#include <cstdint>

#include "kernels/gemm_core.h"

namespace roboloop::kernels {

// Where one tile call reads and writes.
struct GemmTile {
  const float* a;        // A's element (first row, first reduction index of the chunk)
  int64_t a_row_stride;  // A's strides
  int64_t a_col_stride;
  const float* panel;    // the first packed chunk x kGemmPanelColumns panel of B (64-byte aligned)
  int64_t panel_floats;  // floats from one packed panel to the next
  float* c;              // C's element (first row, first column)
  int64_t ldc;           // C's row stride
  int columns;           // columns of C to write: the tile's panels' columns but at C's right edge
  const float* bias;     // the tile's `columns` biases, or null
  bool accumulate;       // add to C's values (a later reduction chunk) instead of overwriting
};

// A tile function: C's rows and panels of `tile` over `chunk` reduction rows.
using GemmTileFunction = void (*)(int64_t chunk, const GemmTile& tile);

// Internal linkage: every kernel TU compiles its own copy with its own ISA flags, so no copy
// built for one ISA can stand in for another's at link time.
namespace {

// The GemmBlockKernel contract (kernels/gemm_core.h) over tiles of kGemmRowBlock rows and
// PANELS column panels: tiles[rows][panels] computes one (fewer rows and panels at the block's
// edges). Reduction chunks are summed into C in order, the bias added on the last one.
template <int PANELS>
void RunGemmTiles(MatrixView a, MatrixView b, int64_t n, int64_t k, const float* bias, float* c, int64_t ldc,
                  GemmBlock block, float* scratch, const GemmTileFunction (&tiles)[kGemmRowBlock + 1][PANELS + 1]) {
  const int64_t full_chunk = std::min(k, kGemmReductionChunk);
  float* packed = AlignedGemmPanels(scratch);
  for (int64_t k0 = 0; k0 < k; k0 += full_chunk) {
    const int64_t chunk = std::min(full_chunk, k - k0);
    PackGemmPanels(b, n, k0, chunk, block.panel_begin, block.panel_end, packed);
    const bool last_chunk = k0 + chunk == k;
    for (int64_t row = block.row_begin; row < block.row_end; row += kGemmRowBlock) {
      const int64_t rows = std::min(kGemmRowBlock, block.row_end - row);
      for (int64_t panel = block.panel_begin; panel < block.panel_end; panel += PANELS) {
        const int64_t panels = std::min<int64_t>(PANELS, block.panel_end - panel);
        const int64_t first = panel * kGemmPanelColumns;
        GemmTile t;
        t.a = a.data + row * a.row_stride + k0 * a.col_stride;
        t.a_row_stride = a.row_stride;
        t.a_col_stride = a.col_stride;
        t.panel = packed + (panel - block.panel_begin) * chunk * kGemmPanelColumns;
        t.panel_floats = chunk * kGemmPanelColumns;
        t.c = c + row * ldc + first;
        t.ldc = ldc;
        t.columns = static_cast<int>(std::min(panels * kGemmPanelColumns, n - first));
        t.bias = last_chunk && bias != nullptr ? bias + first : nullptr;
        t.accumulate = k0 > 0;
        tiles[rows][panels](chunk, t);
      }
    }
  }
}

}  // namespace
}  // namespace roboloop::kernels
