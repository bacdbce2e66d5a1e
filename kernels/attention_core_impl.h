// Implementation of the attention kernels, compiled once per ISA: a TU defines
// ROBOLOOP_KERNELS_ISA (a namespace name) and its -m flags, then includes this file, which
// defines roboloop::kernels::ROBOLOOP_KERNELS_ISA::kAttentionKernels.
//
// Algorithm (FlashAttention-2 style, CPU tiles): a work item owns kRowTile rows of one
// (sequence, head) and sweeps the other side in tiles of kColumnTile, keeping only tile-sized
// buffers, so memory is linear in sequence length. The forward keeps an online softmax
// (running max m, running sum l, unnormalised output). Backward recomputes probabilities from
// the saved log-sum-exp in two passes: over query tiles for dq and over key tiles for dk, dv,
// so every output row has exactly one writer and no cross-thread reduction is needed.
// Tiles shrink to the sequence: a tile computes its present rows rounded up to 4 and its
// present columns rounded up to the vector width, so short sequences (a policy's 24 tokens)
// do not pay for 32 x 64 tiles. A sequence that fits in one row tile is finished by the query
// pass alone, which derives dk and dv from the same probabilities and score gradients; the
// key pass skips it.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "kernels/attention_core.h"
#include "kernels/simd.h"

#ifndef ROBOLOOP_KERNELS_ISA
#error "define ROBOLOOP_KERNELS_ISA before including attention_core_impl.h"
#endif

namespace roboloop::kernels::ROBOLOOP_KERNELS_ISA {
namespace {

// The tile of one item, with its sequence's geometry.
struct TileView {
  int64_t start;   // first token of the sequence in the packed tensors
  int64_t length;  // tokens of the sequence
  int64_t prefix;  // prefix length (UsesPrefix(mask) only)
  int64_t head;
  int64_t first_row;
  int64_t rows;  // rows of this tile actually present (<= kRowTile)
  int64_t padded_rows;  // rows rounded up to a multiple of 4 (Gemm's row block)
};

int64_t RoundUpToRowBlock(int64_t n) { return (n + 3) / 4 * 4; }

// Whether the query pass alone computes the whole backward of the tile's sequence.
bool FitsOneTile(const TileView& view) { return view.length <= kRowTile; }

TileView ViewOf(const AttentionShape& shape, const TileItem& item) {
  TileView view;
  view.start = shape.cu_seqlens[item.sequence];
  view.length = shape.cu_seqlens[item.sequence + 1] - view.start;
  view.prefix = UsesPrefix(shape.mask) ? shape.prefix_lengths[item.sequence] : 0;
  view.head = item.head;
  view.first_row = item.first_row;
  view.rows = std::min(kRowTile, view.length - item.first_row);
  view.padded_rows = RoundUpToRowBlock(view.rows);
  return view;
}

// Keys [0, limit) are visible to query `i`; the limit never decreases with i.
int64_t KeyLimit(MaskKind mask, const TileView& view, int64_t i) {
  switch (mask) {
    case MaskKind::kCausal: return i + 1;
    case MaskKind::kPrefixLm: return std::max(view.prefix, i + 1);
    case MaskKind::kPrefixBlock: return i < view.prefix ? view.prefix : view.length;
    case MaskKind::kBidirectional: break;
  }
  return view.length;
}

// Queries [first, length) see key `j`; the first never decreases with j.
int64_t FirstQuery(MaskKind mask, const TileView& view, int64_t j) {
  switch (mask) {
    case MaskKind::kCausal: return j;
    case MaskKind::kPrefixLm: return j < view.prefix ? 0 : j;
    case MaskKind::kPrefixBlock: return j < view.prefix ? 0 : view.prefix;
    case MaskKind::kBidirectional: break;
  }
  return 0;
}

// Keys [0, n) of a tile starting at key k0 that some row of the 4-row block at tile row r0
// sees: the limit of the block's last present row (limits never decrease with the row).
int64_t RowBlockKeys(MaskKind mask, const TileView& view, int64_t r0, int64_t k0,
                     int64_t keys) {
  const int64_t last = view.first_row + std::min(r0 + 3, view.rows - 1);
  return std::clamp<int64_t>(KeyLimit(mask, view, last) - k0, 0, keys);
}

// Queries [lo, queries) of a tile starting at query q0 that see some key of the 4-row block at
// tile row r0: the first query of the block's first key (first queries never decrease).
int64_t RowBlockFirstQuery(MaskKind mask, const TileView& view, int64_t r0, int64_t q0,
                           int64_t queries) {
  return std::clamp<int64_t>(FirstQuery(mask, view, view.first_row + r0) - q0, 0, queries);
}

// Query tiles, per 4-row block: scores[r][0, n) = a[r] . bt over the block's visible keys
// only (n = its key count rounded up to the vector width; later columns are left as they
// were, and the softmax passes mask them by selection).
void QueryBlockScores(MaskKind mask, const TileView& view, int64_t k0, int64_t keys,
                      int64_t columns, const float* a, int64_t dp, const float* bt,
                      float* scores) {
  for (int64_t r0 = 0; r0 < view.padded_rows; r0 += 4) {
    const int64_t n = RowBlockKeys(mask, view, r0, k0, keys);
    if (n == 0) continue;
    Gemm(4, RoundUpToLanes(n), dp, a + r0 * dp, dp, bt, columns, scores + r0 * kColumnTile,
         kColumnTile, false);
  }
}

// Query tiles, per 4-row block: acc[r] += p[r][0, n) . b_rows[0, n) over the block's visible
// keys only (p is zero beyond them, so the sum is the full one without its zero terms).
void QueryBlockAccumulate(MaskKind mask, const TileView& view, int64_t k0, int64_t keys,
                          const float* p, const float* b_rows, int64_t dp, float* acc) {
  for (int64_t r0 = 0; r0 < view.padded_rows; r0 += 4) {
    const int64_t n = RowBlockKeys(mask, view, r0, k0, keys);
    if (n == 0) continue;
    Gemm(4, dp, n, p + r0 * kColumnTile, kColumnTile, b_rows, dp, acc + r0 * dp, dp, true);
  }
}

// Key tiles, per 4-row block: scores[r][g, columns) = a[r] . bt from the vector group g that
// holds the block's first visible query (earlier columns are left as they were).
void KeyBlockScores(MaskKind mask, const TileView& view, int64_t q0, int64_t queries,
                    int64_t columns, const float* a, int64_t dp, const float* bt,
                    float* scores) {
  for (int64_t r0 = 0; r0 < view.padded_rows; r0 += 4) {
    const int64_t group = RowBlockFirstQuery(mask, view, r0, q0, queries) / kLanes * kLanes;
    if (group >= columns) continue;
    Gemm(4, columns - group, dp, a + r0 * dp, dp, bt + group, columns,
         scores + r0 * kColumnTile + group, kColumnTile, false);
  }
}

// Key tiles, per 4-row block: acc[r] += p[r][lo, queries) . b_rows[lo, queries) over the
// queries that see the block (p is zero before them).
void KeyBlockAccumulate(MaskKind mask, const TileView& view, int64_t q0, int64_t queries,
                        const float* p, const float* b_rows, int64_t dp, float* acc) {
  for (int64_t r0 = 0; r0 < view.padded_rows; r0 += 4) {
    const int64_t lo = RowBlockFirstQuery(mask, view, r0, q0, queries);
    if (lo >= queries) continue;
    Gemm(4, dp, queries - lo, p + r0 * kColumnTile + lo, kColumnTile, b_rows + lo * dp, dp,
         acc + r0 * dp, dp, true);
  }
}

// Copies `rows` rows of `d` floats (row stride `stride`) into dst[padded_rows][dp], zero-padded.
void GatherRows(const float* src, int64_t stride, int64_t rows, int64_t d, int64_t dp,
                int64_t padded_rows, float* dst) {
  for (int64_t r = 0; r < padded_rows; ++r) {
    float* row = dst + r * dp;
    int64_t copied = r < rows ? d : 0;
    if (copied > 0) std::copy(src + r * stride, src + r * stride + d, row);
    std::fill(row + copied, row + dp, 0.0f);
  }
}

// Copies the transpose of `rows` rows of `d` floats into dst[dp][padded_rows], zero-padded;
// padded_rows is a multiple of the vector width. Works in 16 x 16 blocks held in registers.
void GatherTransposed(const float* src, int64_t stride, int64_t rows, int64_t d, int64_t dp,
                      int64_t padded_rows, float* dst) {
  V16 block[kLanes];
  for (int64_t r0 = 0; r0 < padded_rows; r0 += kLanes) {
    for (int64_t c0 = 0; c0 < dp; c0 += kLanes) {
      const int64_t width = std::min(kLanes, d - c0);
      for (int64_t i = 0; i < kLanes; ++i) {
        const float* row = src + (r0 + i) * stride + c0;
        if (r0 + i >= rows) {
          block[i] = V16{};
        } else if (width == kLanes) {
          block[i] = Load(row);
        } else {
          float lanes[kLanes] = {};
          std::copy(row, row + width, lanes);
          block[i] = Load(lanes);
        }
      }
      Transpose16(block);
      for (int64_t l = 0; l < kLanes; ++l) Store(dst + (c0 + l) * padded_rows + r0, block[l]);
    }
  }
}

// Copies `rows` per-row statistics (stride `stride`) into dst[padded_rows], zero-padded.
void GatherStats(const float* src, int64_t stride, int64_t rows, int64_t padded_rows,
                 float* dst) {
  for (int64_t r = 0; r < padded_rows; ++r) dst[r] = r < rows ? src[r * stride] : 0.0f;
}

// Scratch layout shared by all passes: named slices of one caller-owned buffer.
struct Scratch {
  float* a;      // [tile][dp] row operand
  float* b;      // [tile][dp] row operand
  float* c;      // [tile][dp] row operand
  float* d;      // [tile][dp] row operand
  float* acc0;   // [tile][dp] accumulator
  float* acc1;   // [tile][dp] accumulator
  float* t0;     // [dp][tile] transposed operand
  float* t1;     // [dp][tile] transposed operand
  float* s0;     // [kRowTile][kColumnTile] scores / probabilities
  float* s1;     // [kRowTile][kColumnTile] score gradients
  float* stat0;  // [tile] per-row statistic
  float* stat1;  // [tile] per-row statistic
};

constexpr int64_t kMaxTile = kRowTile > kColumnTile ? kRowTile : kColumnTile;

size_t ScratchFloats(int64_t head_dim) {
  int64_t dp = RoundUpToLanes(head_dim);
  return static_cast<size_t>(8 * kMaxTile * dp + 2 * kRowTile * kColumnTile + 2 * kMaxTile);
}

Scratch SliceScratch(float* base, int64_t dp) {
  Scratch s;
  float** slices[] = {&s.a, &s.b, &s.c, &s.d, &s.acc0, &s.acc1, &s.t0, &s.t1};
  for (float** slice : slices) {
    *slice = base;
    base += kMaxTile * dp;
  }
  s.s0 = base;
  base += kRowTile * kColumnTile;
  s.s1 = base;
  base += kRowTile * kColumnTile;
  s.stat0 = base;
  s.stat1 = base + kMaxTile;
  return s;
}

// One query row's online-softmax step over the `columns` scores of a tile row: keys
// [0, visible) of the tile count. Replaces the scores by unnormalised probabilities (zero where
// masked), rescales the row's output accumulator when the running max grows, and updates the
// running max and sum.
void OnlineSoftmaxRow(float* scores, int64_t columns, int64_t visible, float scale,
                      float* running_max, float* running_sum, float* out_row, int64_t dp) {
  if (visible <= 0) {
    std::fill(scores, scores + columns, 0.0f);
    return;
  }
  V16 best = Splat(-std::numeric_limits<float>::infinity());
  for (int64_t j = 0; j < columns; j += kLanes) {
    V16 s = Load(scores + j) * scale;
    V16 masked = KeepRange(s, j, 0, visible, -std::numeric_limits<float>::infinity());
    best = masked > best ? masked : best;
    Store(scores + j, s);
  }
  float new_max = std::max(*running_max, MaxLanes(best));
  V16 sum = V16{};
  for (int64_t j = 0; j < columns; j += kLanes) {
    V16 p = KeepRange(Exp(Load(scores + j) - new_max), j, 0, visible);
    sum += p;
    Store(scores + j, p);
  }
  float alpha = *running_max == -std::numeric_limits<float>::infinity()
                    ? 0.0f
                    : std::exp(*running_max - new_max);
  if (alpha != 1.0f) {
    for (int64_t c = 0; c < dp; c += kLanes) Store(out_row + c, Load(out_row + c) * alpha);
  }
  *running_sum = *running_sum * alpha + SumLanes(sum);
  *running_max = new_max;
}

void ForwardTile(const ForwardArgs& args, const TileItem& item, const Scratch& s) {
  const AttentionShape& shape = args.shape;
  const TileView view = ViewOf(shape, item);
  const int64_t d = shape.head_dim, dp = RoundUpToLanes(d), rows = view.padded_rows;
  const int64_t stride = shape.input_row_stride, out_stride = shape.output_row_stride;
  const int64_t row0 = view.start + view.first_row;
  const int64_t base = row0 * stride + view.head * d;
  const int64_t out_base = row0 * out_stride + view.head * d;
  float* running_max = s.stat0;
  float* running_sum = s.stat1;
  GatherRows(args.q + base, stride, view.rows, d, dp, rows, s.a);
  std::fill(s.acc0, s.acc0 + rows * dp, 0.0f);
  std::fill(running_max, running_max + rows, -std::numeric_limits<float>::infinity());
  std::fill(running_sum, running_sum + rows, 0.0f);
  const int64_t key_end = KeyLimit(shape.mask, view, view.first_row + view.rows - 1);
  for (int64_t k0 = 0; k0 < key_end; k0 += kColumnTile) {
    const int64_t keys = std::min(kColumnTile, view.length - k0);
    const int64_t columns = RoundUpToLanes(keys);
    const int64_t key_base = (view.start + k0) * stride + view.head * d;
    GatherTransposed(args.k + key_base, stride, keys, d, dp, columns, s.t0);
    GatherRows(args.v + key_base, stride, keys, d, dp, columns, s.b);
    QueryBlockScores(shape.mask, view, k0, keys, columns, s.a, dp, s.t0, s.s0);
    for (int64_t r = 0; r < rows; ++r) {
      int64_t visible =
          r < view.rows
              ? std::min(KeyLimit(shape.mask, view, view.first_row + r) - k0, keys)
              : 0;
      OnlineSoftmaxRow(s.s0 + r * kColumnTile, columns, visible, shape.scale, running_max + r,
                       running_sum + r, s.acc0 + r * dp, dp);
    }
    QueryBlockAccumulate(shape.mask, view, k0, keys, s.s0, s.b, dp, s.acc0);
  }
  for (int64_t r = 0; r < view.rows; ++r) {
    float* out_row = args.out + out_base + r * out_stride;
    const float* acc_row = s.acc0 + r * dp;
    for (int64_t c = 0; c < d; ++c) out_row[c] = acc_row[c] / running_sum[r];
    int64_t token = view.start + view.first_row + r;
    args.lse[token * shape.heads + view.head] = running_max[r] + std::log(running_sum[r]);
  }
}

// Probabilities and score gradients of the `columns` entries of one tile row:
// p = exp(s*scale - lse) and ds = p * (dp - rowdot) for lanes [lo, hi), zero elsewhere (by
// selection, so entries outside [lo, hi) may hold anything). `lse` and
// `rowdot` are per lane when `per_lane` (key pass: columns are queries), else scalars at index
// 0 (query pass).
void ProbabilityAndGradRow(float* scores, float* grads, int64_t columns, const float* lse,
                           const float* rowdot, bool per_lane, float scale, int64_t lo,
                           int64_t hi) {
  for (int64_t j = 0; j < columns; j += kLanes) {
    V16 row_lse = per_lane ? Load(lse + j) : Splat(lse[0]);
    V16 row_dot = per_lane ? Load(rowdot + j) : Splat(rowdot[0]);
    V16 p = KeepRange(Exp(Load(scores + j) * scale - row_lse), j, lo, hi);
    Store(scores + j, p);
    Store(grads + j, KeepRange(p * (Load(grads + j) - row_dot), j, lo, hi));
  }
}

// Writes `rows` key rows from offset `base`: dk = dk_acc * scale, dv = dv_acc (both [rows][dp]).
void WriteKeyGradients(const BackwardArgs& args, int64_t base, int64_t rows, const float* dk_acc,
                       const float* dv_acc) {
  const int64_t d = args.shape.head_dim, dp = RoundUpToLanes(d);
  const int64_t stride = args.shape.input_row_stride;
  for (int64_t r = 0; r < rows; ++r) {
    float* dk_row = args.dk + base + r * stride;
    float* dv_row = args.dv + base + r * stride;
    for (int64_t c = 0; c < d; ++c) {
      dk_row[c] = dk_acc[r * dp + c] * args.shape.scale;
      dv_row[c] = dv_acc[r * dp + c];
    }
  }
}

// dk and dv of a sequence held by one tile, from its probabilities P (s.s0) and score gradients
// dS (s.s1), [rows][columns] with zeros outside the mask: dv = P^T dout, dk = dS^T q * scale.
// q rows are in s.a and dout rows in s.b, zero-padded to `rows`. P^T and dS^T are read in
// place as transposed GEMM operands.
void OneTileKeyGradients(const BackwardArgs& args, const TileView& view, const Scratch& s) {
  const AttentionShape& shape = args.shape;
  const int64_t d = shape.head_dim, dp = RoundUpToLanes(d), rows = view.padded_rows;
  const int64_t stride = shape.input_row_stride;
  const int64_t base = view.start * stride + view.head * d;
  for (int64_t j0 = 0; j0 < view.length; j0 += 4) {
    const int64_t lo = std::clamp<int64_t>(FirstQuery(shape.mask, view, j0), 0, rows);
    const int64_t first = lo * kColumnTile + j0;
    Gemm(4, dp, rows - lo, s.s0 + first, 1, s.b + lo * dp, dp, s.acc1 + j0 * dp, dp, false,
         kColumnTile);
    Gemm(4, dp, rows - lo, s.s1 + first, 1, s.a + lo * dp, dp, s.d + j0 * dp, dp, false,
         kColumnTile);
  }
  WriteKeyGradients(args, base, view.length, s.d, s.acc1);
}

void BackwardQueryTile(const BackwardArgs& args, const TileItem& item, const Scratch& s) {
  const AttentionShape& shape = args.shape;
  const TileView view = ViewOf(shape, item);
  const int64_t d = shape.head_dim, dp = RoundUpToLanes(d), rows = view.padded_rows;
  const int64_t stride = shape.input_row_stride, out_stride = shape.output_row_stride;
  const int64_t row0 = view.start + view.first_row;
  const int64_t base = row0 * stride + view.head * d;
  const int64_t stat_base = (view.start + view.first_row) * shape.heads + view.head;
  GatherRows(args.q + base, stride, view.rows, d, dp, rows, s.a);
  GatherRows(args.dout + row0 * out_stride + view.head * d, out_stride, view.rows, d, dp, rows,
             s.b);
  GatherStats(args.lse + stat_base, shape.heads, view.rows, rows, s.stat0);
  GatherStats(args.row_dots + stat_base, shape.heads, view.rows, rows, s.stat1);
  std::fill(s.acc0, s.acc0 + rows * dp, 0.0f);
  const int64_t key_end = KeyLimit(shape.mask, view, view.first_row + view.rows - 1);
  for (int64_t k0 = 0; k0 < key_end; k0 += kColumnTile) {
    const int64_t keys = std::min(kColumnTile, view.length - k0);
    const int64_t columns = RoundUpToLanes(keys);
    const int64_t key_base = (view.start + k0) * stride + view.head * d;
    GatherTransposed(args.k + key_base, stride, keys, d, dp, columns, s.t0);
    GatherTransposed(args.v + key_base, stride, keys, d, dp, columns, s.t1);
    GatherRows(args.k + key_base, stride, keys, d, dp, columns, s.c);
    QueryBlockScores(shape.mask, view, k0, keys, columns, s.a, dp, s.t0, s.s0);
    QueryBlockScores(shape.mask, view, k0, keys, columns, s.b, dp, s.t1, s.s1);
    for (int64_t r = 0; r < rows; ++r) {
      int64_t visible =
          r < view.rows
              ? std::min(KeyLimit(shape.mask, view, view.first_row + r) - k0, keys)
              : 0;
      ProbabilityAndGradRow(s.s0 + r * kColumnTile, s.s1 + r * kColumnTile, columns,
                            s.stat0 + r, s.stat1 + r, false, shape.scale, 0, visible);
    }
    QueryBlockAccumulate(shape.mask, view, k0, keys, s.s1, s.c, dp, s.acc0);
  }
  for (int64_t r = 0; r < view.rows; ++r) {
    float* dq_row = args.dq + base + r * stride;
    const float* acc_row = s.acc0 + r * dp;
    for (int64_t c = 0; c < d; ++c) dq_row[c] = acc_row[c] * shape.scale;
  }
  if (FitsOneTile(view)) OneTileKeyGradients(args, view, s);
}

void BackwardKeyTile(const BackwardArgs& args, const TileItem& item, const Scratch& s) {
  const AttentionShape& shape = args.shape;
  const TileView view = ViewOf(shape, item);
  if (FitsOneTile(view)) return;
  const int64_t d = shape.head_dim, dp = RoundUpToLanes(d), rows = view.padded_rows;
  const int64_t stride = shape.input_row_stride, out_stride = shape.output_row_stride;
  const int64_t base = (view.start + view.first_row) * stride + view.head * d;
  GatherRows(args.k + base, stride, view.rows, d, dp, rows, s.a);
  GatherRows(args.v + base, stride, view.rows, d, dp, rows, s.b);
  std::fill(s.acc0, s.acc0 + rows * dp, 0.0f);
  std::fill(s.acc1, s.acc1 + rows * dp, 0.0f);
  for (int64_t q0 = FirstQuery(shape.mask, view, view.first_row); q0 < view.length;
       q0 += kColumnTile) {
    const int64_t queries = std::min(kColumnTile, view.length - q0);
    const int64_t columns = RoundUpToLanes(queries);
    const int64_t query_base = (view.start + q0) * stride + view.head * d;
    const int64_t dout_base = (view.start + q0) * out_stride + view.head * d;
    const int64_t stat_base = (view.start + q0) * shape.heads + view.head;
    GatherTransposed(args.q + query_base, stride, queries, d, dp, columns, s.t0);
    GatherTransposed(args.dout + dout_base, out_stride, queries, d, dp, columns, s.t1);
    GatherRows(args.q + query_base, stride, queries, d, dp, columns, s.c);
    GatherRows(args.dout + dout_base, out_stride, queries, d, dp, columns, s.d);
    GatherStats(args.lse + stat_base, shape.heads, queries, columns, s.stat0);
    GatherStats(args.row_dots + stat_base, shape.heads, queries, columns, s.stat1);
    KeyBlockScores(shape.mask, view, q0, queries, columns, s.a, dp, s.t0, s.s0);
    KeyBlockScores(shape.mask, view, q0, queries, columns, s.b, dp, s.t1, s.s1);
    for (int64_t r = 0; r < rows; ++r) {
      int64_t lo = r < view.rows ? FirstQuery(shape.mask, view, view.first_row + r) - q0 : 0;
      int64_t hi = r < view.rows ? queries : 0;
      ProbabilityAndGradRow(s.s0 + r * kColumnTile, s.s1 + r * kColumnTile, columns, s.stat0,
                            s.stat1, true, shape.scale, lo, hi);
    }
    KeyBlockAccumulate(shape.mask, view, q0, queries, s.s0, s.d, dp, s.acc1);
    KeyBlockAccumulate(shape.mask, view, q0, queries, s.s1, s.c, dp, s.acc0);
  }
  WriteKeyGradients(args, base, view.rows, s.acc0, s.acc1);
}

void Forward(const ForwardArgs& args, const TileItem* items, int64_t begin, int64_t end,
             float* scratch) {
  Scratch s = SliceScratch(scratch, RoundUpToLanes(args.shape.head_dim));
  for (int64_t i = begin; i < end; ++i) ForwardTile(args, items[i], s);
}

void BackwardQueries(const BackwardArgs& args, const TileItem* items, int64_t begin,
                     int64_t end, float* scratch) {
  Scratch s = SliceScratch(scratch, RoundUpToLanes(args.shape.head_dim));
  for (int64_t i = begin; i < end; ++i) BackwardQueryTile(args, items[i], s);
}

void BackwardKeys(const BackwardArgs& args, const TileItem* items, int64_t begin, int64_t end,
                  float* scratch) {
  Scratch s = SliceScratch(scratch, RoundUpToLanes(args.shape.head_dim));
  for (int64_t i = begin; i < end; ++i) BackwardKeyTile(args, items[i], s);
}

void RowDots(const float* a, const float* b, int64_t d, int64_t begin, int64_t end,
             float* row_dots) {
  for (int64_t r = begin; r < end; ++r) {
    float sum = 0.0f;
    for (int64_t c = 0; c < d; ++c) sum += a[r * d + c] * b[r * d + c];
    row_dots[r] = sum;
  }
}

}  // namespace

extern const AttentionKernels kAttentionKernels;
const AttentionKernels kAttentionKernels = {
    ROBOLOOP_KERNELS_ISA_NAME, &ScratchFloats, &Forward, &BackwardQueries, &BackwardKeys, &RowDots,
};

}  // namespace roboloop::kernels::ROBOLOOP_KERNELS_ISA
