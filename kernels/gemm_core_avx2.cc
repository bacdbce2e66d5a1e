// The GEMM kernel compiled for AVX2 + FMA (this file alone gets -mavx2 -mfma): a 6 x 16 block
// of C held in twelve ymm accumulators, A broadcast element by element from its rows in place,
// B streamed from 16-column panels packed per reduction chunk.
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "kernels/gemm_core.h"

namespace roboloop::kernels::avx2 {
namespace {

constexpr int kRows = static_cast<int>(kGemmRowBlock);
constexpr int kColumns = static_cast<int>(kGemmPanelColumns);

// Where one inner call reads and writes.
struct Tile {
  const float* a;        // A's element (first row, first reduction index of the chunk)
  int64_t a_row_stride;  // A's strides
  int64_t a_col_stride;
  const float* panel;  // the packed chunk x kColumns panel of B
  float* c;            // C's element (first row, first column)
  int64_t ldc;         // C's row stride
  int columns;         // columns of C to write (kColumns but at the right edge)
  const float* bias;   // kColumns (or `columns`) biases to add, or null
  bool accumulate;     // add to C's values (a later reduction chunk) instead of overwriting
};

// Bias of the tile's columns as two vectors (zero past `columns`, or everywhere without bias).
void LoadBias(const Tile& t, __m256& low, __m256& high) {
  if (t.bias == nullptr) {
    low = high = _mm256_setzero_ps();
    return;
  }
  alignas(32) float padded[kColumns] = {};
  std::memcpy(padded, t.bias, sizeof(float) * t.columns);
  low = _mm256_load_ps(padded);
  high = _mm256_load_ps(padded + 8);
}

// C[ROWS][columns] (+)= A[ROWS][chunk] panel[chunk][kColumns] + bias.
template <int ROWS>
void MultiplyTile(int64_t chunk, const Tile& t) {
  __m256 low[ROWS], high[ROWS];
  const float* a_row[ROWS];
  for (int r = 0; r < ROWS; ++r) {
    low[r] = high[r] = _mm256_setzero_ps();
    a_row[r] = t.a + r * t.a_row_stride;
  }
  const float* b = t.panel;
  for (int64_t kk = 0; kk < chunk; ++kk, b += kColumns) {
    const __m256 b_low = _mm256_load_ps(b), b_high = _mm256_load_ps(b + 8);
    for (int r = 0; r < ROWS; ++r) {
      const __m256 a = _mm256_broadcast_ss(a_row[r]);
      a_row[r] += t.a_col_stride;
      low[r] = _mm256_fmadd_ps(a, b_low, low[r]);
      high[r] = _mm256_fmadd_ps(a, b_high, high[r]);
    }
  }
  __m256 bias_low, bias_high;
  LoadBias(t, bias_low, bias_high);
  for (int r = 0; r < ROWS; ++r) {
    float* c = t.c + r * t.ldc;
    __m256 out_low = _mm256_add_ps(low[r], bias_low), out_high = _mm256_add_ps(high[r], bias_high);
    if (t.columns == kColumns) {
      if (t.accumulate) {
        out_low = _mm256_add_ps(out_low, _mm256_loadu_ps(c));
        out_high = _mm256_add_ps(out_high, _mm256_loadu_ps(c + 8));
      }
      _mm256_storeu_ps(c, out_low);
      _mm256_storeu_ps(c + 8, out_high);
      continue;
    }
    alignas(32) float row[kColumns];
    _mm256_store_ps(row, out_low);
    _mm256_store_ps(row + 8, out_high);
    for (int j = 0; j < t.columns; ++j) c[j] = t.accumulate ? c[j] + row[j] : row[j];
  }
}

using TileFunction = void (*)(int64_t, const Tile&);
constexpr TileFunction kTileByRows[kRows + 1] = {nullptr,         MultiplyTile<1>, MultiplyTile<2>,
                                                 MultiplyTile<3>, MultiplyTile<4>, MultiplyTile<5>,
                                                 MultiplyTile<6>};

}  // namespace

// The GemmBlockKernel contract (kernels/gemm_core.h): per reduction chunk, packs the block's
// panels of B, then runs every 6-row x 16-column tile of the block over the chunk.
void GemmBlockAvx2(MatrixView a, MatrixView b, int64_t n, int64_t k,
                   const float* bias, float* c, int64_t ldc, GemmBlock block, float* scratch) {
  const int64_t full_chunk = std::min(k, kGemmReductionChunk);
  float* packed = AlignedGemmPanels(scratch);
  for (int64_t k0 = 0; k0 < k; k0 += full_chunk) {
    const int64_t chunk = std::min(full_chunk, k - k0);
    PackGemmPanels(b, n, k0, chunk, block.panel_begin, block.panel_end, packed);
    const bool last_chunk = k0 + chunk == k;
    for (int64_t row = block.row_begin; row < block.row_end; row += kRows) {
      const int rows = static_cast<int>(std::min<int64_t>(kRows, block.row_end - row));
      for (int64_t panel = block.panel_begin; panel < block.panel_end; ++panel) {
        const int64_t first = panel * kColumns;
        Tile t;
        t.a = a.data + row * a.row_stride + k0 * a.col_stride;
        t.a_row_stride = a.row_stride;
        t.a_col_stride = a.col_stride;
        t.panel = packed + (panel - block.panel_begin) * chunk * kColumns;
        t.c = c + row * ldc + first;
        t.ldc = ldc;
        t.columns = static_cast<int>(std::min<int64_t>(kColumns, n - first));
        t.bias = last_chunk && bias != nullptr ? bias + first : nullptr;
        t.accumulate = k0 > 0;
        kTileByRows[rows](chunk, t);
      }
    }
  }
}

}  // namespace roboloop::kernels::avx2
