// The GEMM kernel compiled for AVX-512F (this file alone gets -mavx512f -mfma): a 6 x 32 block
// of C held in twelve zmm accumulators over two adjacent 16-column panels of B (one at the
// right edge), A broadcast element by element from its rows in place. Each element of C is
// computed with the AVX2 kernel's operations in the AVX2 kernel's order (one FMA per product
// over the chunk, then + bias, then + C's earlier chunks), so the two kernels give equal bits.
#include <immintrin.h>

#include <cstdint>

#include "kernels/gemm_core.h"
#include "kernels/gemm_tiles.h"

namespace roboloop::kernels::avx512 {
namespace {

constexpr int kRows = static_cast<int>(kGemmRowBlock);
constexpr int kLanes = static_cast<int>(kGemmPanelColumns);  // one panel's row is one zmm
constexpr int kPanelsPerTile = 2;

// Lanes [0, columns) of a panel's row, columns clipped to [0, kLanes].
__mmask16 LanesBelow(int columns) {
  if (columns >= kLanes) return static_cast<__mmask16>(0xFFFF);
  return columns <= 0 ? 0 : static_cast<__mmask16>((1u << columns) - 1);
}

// Writes panel `p`'s row of the tile from its accumulator: + bias (zero without one), then
// + C's value for a later chunk; lanes past the tile's columns are neither read nor written.
void StoreRow(const GemmTile& t, float* c, int p, __m512 sum) {
  const __mmask16 lanes = LanesBelow(t.columns - p * kLanes);
  const __m512 bias = t.bias == nullptr ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(lanes, t.bias + p * kLanes);
  __m512 out = _mm512_add_ps(sum, bias);
  if (t.accumulate) out = _mm512_add_ps(out, _mm512_maskz_loadu_ps(lanes, c + p * kLanes));
  _mm512_mask_storeu_ps(c + p * kLanes, lanes, out);
}

// C[ROWS][columns] (+)= A[ROWS][chunk] panels[chunk][PANELS * kLanes] + bias.
template <int ROWS, int PANELS>
void MultiplyTile(int64_t chunk, const GemmTile& t) {
  __m512 sum[ROWS][PANELS];
  const float* a_row[ROWS];
  for (int r = 0; r < ROWS; ++r) {
    for (int p = 0; p < PANELS; ++p) sum[r][p] = _mm512_setzero_ps();
    a_row[r] = t.a + r * t.a_row_stride;
  }
  const float* b = t.panel;
  for (int64_t kk = 0; kk < chunk; ++kk, b += kLanes) {
    __m512 b_row[PANELS];
    for (int p = 0; p < PANELS; ++p) b_row[p] = _mm512_load_ps(b + p * t.panel_floats);
    for (int r = 0; r < ROWS; ++r) {
      const __m512 a = _mm512_set1_ps(*a_row[r]);
      a_row[r] += t.a_col_stride;
      for (int p = 0; p < PANELS; ++p) sum[r][p] = _mm512_fmadd_ps(a, b_row[p], sum[r][p]);
    }
  }
  for (int r = 0; r < ROWS; ++r) {
    for (int p = 0; p < PANELS; ++p) StoreRow(t, t.c + r * t.ldc, p, sum[r][p]);
  }
}

// kTiles[rows][panels]: the tile for `rows` rows of C over `panels` panels of B.
constexpr GemmTileFunction kTiles[kRows + 1][kPanelsPerTile + 1] = {
    {nullptr, nullptr, nullptr},
    {nullptr, MultiplyTile<1, 1>, MultiplyTile<1, 2>},
    {nullptr, MultiplyTile<2, 1>, MultiplyTile<2, 2>},
    {nullptr, MultiplyTile<3, 1>, MultiplyTile<3, 2>},
    {nullptr, MultiplyTile<4, 1>, MultiplyTile<4, 2>},
    {nullptr, MultiplyTile<5, 1>, MultiplyTile<5, 2>},
    {nullptr, MultiplyTile<6, 1>, MultiplyTile<6, 2>}};

}  // namespace

// The GemmBlockKernel contract (kernels/gemm_core.h) over 6-row x 32-column tiles.
void GemmBlockAvx512(MatrixView a, MatrixView b, int64_t n, int64_t k, const float* bias, float* c,
                     int64_t ldc, GemmBlock block, float* scratch) {
  RunGemmTiles<kPanelsPerTile>(a, b, n, k, bias, c, ldc, block, scratch, kTiles);
}

}  // namespace roboloop::kernels::avx512
