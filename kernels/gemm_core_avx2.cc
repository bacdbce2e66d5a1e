// The GEMM kernel compiled for AVX2 + FMA (this file alone gets -mavx2 -mfma): a 6 x 16 block
// of C held in twelve ymm accumulators, A broadcast element by element from its rows in place,
// B streamed from 16-column panels packed per reduction chunk.
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "kernels/gemm_core.h"
#include "kernels/gemm_tiles.h"

namespace roboloop::kernels::avx2 {
namespace {

constexpr int kRows = static_cast<int>(kGemmRowBlock);
constexpr int kColumns = static_cast<int>(kGemmPanelColumns);

// Bias of the tile's columns as two vectors (zero past `columns`, or everywhere without bias).
void LoadBias(const GemmTile& t, __m256& low, __m256& high) {
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
void MultiplyTile(int64_t chunk, const GemmTile& t) {
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

// kTiles[rows][1]: the tile for `rows` rows of C over one panel of B.
constexpr GemmTileFunction kTiles[kRows + 1][2] = {
    {nullptr, nullptr},         {nullptr, MultiplyTile<1>}, {nullptr, MultiplyTile<2>}, {nullptr, MultiplyTile<3>},
    {nullptr, MultiplyTile<4>}, {nullptr, MultiplyTile<5>}, {nullptr, MultiplyTile<6>}};

}  // namespace

// The GemmBlockKernel contract (kernels/gemm_core.h) over 6-row x 16-column tiles.
void GemmBlockAvx2(MatrixView a, MatrixView b, int64_t n, int64_t k, const float* bias, float* c, int64_t ldc,
                   GemmBlock block, float* scratch) {
  RunGemmTiles<1>(a, b, n, k, bias, c, ldc, block, scratch, kTiles);
}

}  // namespace roboloop::kernels::avx2
