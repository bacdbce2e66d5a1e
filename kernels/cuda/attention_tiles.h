// The per-tile algorithm of the CUDA varlen attention (issue 5, req 6), written once for two
// compilers: nvcc builds it into the kernels of attention_cuda.cu (one thread block per work
// item, one thread per row), and the host compiler builds the same code into an emulator
// (RunTileEmulated below) that the CPU test suite checks against the CPU kernels, so the
// indexing, masking and online softmax of the GPU path are tested on every machine.
//
// Algorithm (FlashAttention-2 order, fp32 on CUDA cores): a block owns kRowTile rows of one
// (sequence, head) -- the work items of EnumerateTiles -- and sweeps the other side in tiles
// of kCudaColumnTile rows staged in shared memory, so memory stays linear in sequence length.
// Forward keeps an online softmax per query row. Backward recomputes probabilities from the
// saved log-sum-exp in two passes, over query tiles for dq and over key tiles for dk and dv,
// so every output row has exactly one writer: results are deterministic and a sequence's
// result does not depend on the sequences packed with it.
//
// Thread-safety: the functions are pure; concurrent tiles write disjoint rows.
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "kernels/attention_core.h"
#include "kernels/cuda/attention_cuda.h"

#if defined(__CUDACC__)
#define ROBOLOOP_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define ROBOLOOP_HOST_DEVICE inline
#endif

namespace roboloop::kernels::cuda {

// Rows staged in shared memory per inner tile (keys in the query passes, queries in the key
// pass); a block's own rows are kRowTile, one per thread.
inline constexpr int kCudaColumnTile = 32;

// Floats between consecutive rows of a shared-memory tile: one more than head_dim, so threads
// reading the same column of different rows hit different banks.
ROBOLOOP_HOST_DEVICE int SharedRowStride(int64_t head_dim) {
  return static_cast<int>(head_dim) + 1;
}

// Keys [0, limit) of the sequence are visible to query i (never decreasing with i).
ROBOLOOP_HOST_DEVICE int64_t VisibleKeyLimit(MaskKind mask, int64_t length, int64_t prefix,
                                             int64_t i) {
  if (mask == MaskKind::kCausal) return i + 1;
  if (mask == MaskKind::kPrefixLm) return prefix > i + 1 ? prefix : i + 1;
  if (mask == MaskKind::kPrefixBlock) return i < prefix ? prefix : length;
  return length;
}

// Queries [first, length) of the sequence see key j (first never decreasing with j).
ROBOLOOP_HOST_DEVICE int64_t FirstSeeingQuery(MaskKind mask, int64_t prefix, int64_t j) {
  if (mask == MaskKind::kCausal) return j;
  if (mask == MaskKind::kPrefixLm) return j < prefix ? 0 : j;
  if (mask == MaskKind::kPrefixBlock) return j < prefix ? 0 : prefix;
  return 0;
}

ROBOLOOP_HOST_DEVICE int64_t MinOf(int64_t a, int64_t b) { return a < b ? a : b; }

// One (sequence, head, row tile) and where its rows live.
struct TileGeometry {
  int64_t start;      // first token of the sequence in the packed tensors
  int64_t length;     // tokens of the sequence
  int64_t prefix;     // prefix length (UsesPrefix(mask) only)
  int64_t head;       // attention head
  int64_t first_row;  // first row of the tile within the sequence
  int64_t rows;       // rows of the tile that exist (<= kRowTile)

  ROBOLOOP_HOST_DEVICE TileGeometry(const AttentionShape& shape, const TileItem& item)
      : start(shape.cu_seqlens[item.sequence]),
        length(shape.cu_seqlens[item.sequence + 1] - start),
        prefix(UsesPrefix(shape.mask) ? shape.prefix_lengths[item.sequence] : 0),
        head(item.head),
        first_row(item.first_row),
        rows(MinOf(kRowTile, length - first_row)) {}

  // Offset of feature 0 of (sequence row `row`, this head) in a tensor of `row_stride`.
  ROBOLOOP_HOST_DEVICE int64_t Offset(int64_t row, int64_t row_stride, int64_t head_dim) const {
    return (start + row) * row_stride + head * head_dim;
  }
};

// Copies rows [first, first + count) of one head of `source` into a shared tile, the
// block's threads taking consecutive features (coalesced global reads).
ROBOLOOP_HOST_DEVICE void StageRows(const float* source, const TileGeometry& tile, int64_t first,
                                    int64_t count, int64_t row_stride, int64_t head_dim,
                                    float* shared, int thread, int threads) {
  const int stride = SharedRowStride(head_dim);
  for (int64_t index = thread; index < count * head_dim; index += threads) {
    const int64_t r = index / head_dim;
    const int64_t c = index - r * head_dim;
    shared[r * stride + c] = source[tile.Offset(first + r, row_stride, head_dim) + c];
  }
}

// Sum over features of a[c] * b[c], sequential over c (a fixed reduction order).
ROBOLOOP_HOST_DEVICE float RowDot(const float* a, const float* b, int64_t head_dim) {
  float sum = 0.0f;
  for (int64_t c = 0; c < head_dim; ++c) sum += a[c] * b[c];
  return sum;
}

// Keys [0, end) are seen by some query row of a query tile.
ROBOLOOP_HOST_DEVICE int64_t QueryTileKeyEnd(const AttentionShape& shape,
                                             const TileGeometry& tile) {
  return MinOf(tile.length, VisibleKeyLimit(shape.mask, tile.length, tile.prefix,
                                            tile.first_row + tile.rows - 1));
}

// Stages keys and values [k0, k0 + kCudaColumnTile) below key_end into shared tiles.
ROBOLOOP_HOST_DEVICE void StageKeysAndValues(const float* k, const float* v,
                                             const AttentionShape& shape,
                                             const TileGeometry& tile, int64_t k0,
                                             int64_t key_end, float* keys, float* values,
                                             int thread, int threads) {
  const int64_t count = MinOf(kCudaColumnTile, key_end - k0);
  StageRows(k, tile, k0, count, shape.input_row_stride, shape.head_dim, keys, thread, threads);
  StageRows(v, tile, k0, count, shape.input_row_stride, shape.head_dim, values, thread, threads);
}

// Running state of one query row in the forward pass.
template <int kMaxHeadDim>
struct ForwardRow {
  float out[kMaxHeadDim];  // unnormalised output
  float max;               // running max of the scores
  float sum;               // running sum of exp(score - max)
};

// Forward of one tile: thread t owns query row first_row + t. Shared memory holds the
// queries, then one key tile and one value tile.
template <int kMaxHeadDim>
struct ForwardTile {
  const ForwardArgs& args;
  TileGeometry tile;
  int64_t key_end;  // keys any row of the tile sees

  ROBOLOOP_HOST_DEVICE ForwardTile(const ForwardArgs& a, const TileItem& item)
      : args(a),
        tile(a.shape, item),
        key_end(QueryTileKeyEnd(a.shape, tile)) {}

  // Floats of shared memory the tile needs.
  ROBOLOOP_HOST_DEVICE static int64_t SharedFloats(int64_t head_dim) {
    return (kRowTile + 2 * kCudaColumnTile) * SharedRowStride(head_dim);
  }
  ROBOLOOP_HOST_DEVICE float* Queries(float* shared) const { return shared; }
  ROBOLOOP_HOST_DEVICE float* Keys(float* shared) const {
    return shared + kRowTile * SharedRowStride(args.shape.head_dim);
  }
  ROBOLOOP_HOST_DEVICE float* Values(float* shared) const {
    return Keys(shared) + kCudaColumnTile * SharedRowStride(args.shape.head_dim);
  }

  ROBOLOOP_HOST_DEVICE void StageQueries(float* shared, int thread, int threads) const {
    StageRows(args.q, tile, tile.first_row, tile.rows, args.shape.input_row_stride,
              args.shape.head_dim, Queries(shared), thread, threads);
  }

  ROBOLOOP_HOST_DEVICE void StageKeyTile(int64_t k0, float* shared, int thread,
                                         int threads) const {
    StageKeysAndValues(args.k, args.v, args.shape, tile, k0, key_end, Keys(shared),
                       Values(shared), thread, threads);
  }

  ROBOLOOP_HOST_DEVICE void Begin(ForwardRow<kMaxHeadDim>& row) const {
    for (int c = 0; c < kMaxHeadDim; ++c) row.out[c] = 0.0f;
    row.max = -INFINITY;
    row.sum = 0.0f;
  }

  // Folds keys [k0, k0 + tile) into the row of `thread`: one rescale per tile.
  ROBOLOOP_HOST_DEVICE void Accumulate(ForwardRow<kMaxHeadDim>& row, int64_t k0,
                                       float* shared, int thread) const {
    if (thread >= tile.rows) return;
    const int64_t d = args.shape.head_dim;
    const int stride = SharedRowStride(d);
    const int64_t i = tile.first_row + thread;
    const int64_t limit = MinOf(VisibleKeyLimit(args.shape.mask, tile.length, tile.prefix, i),
                                MinOf(key_end, k0 + kCudaColumnTile));
    const int64_t keys = limit - k0;
    if (keys <= 0) return;
    const float* q = Queries(shared) + thread * stride;
    const float* k = Keys(shared);
    const float* v = Values(shared);
    float scores[kCudaColumnTile];
    float tile_max = -INFINITY;
    for (int64_t j = 0; j < keys; ++j) {
      scores[j] = args.shape.scale * RowDot(q, k + j * stride, d);
      tile_max = scores[j] > tile_max ? scores[j] : tile_max;
    }
    const float new_max = tile_max > row.max ? tile_max : row.max;
    const float correction = expf(row.max - new_max);
    row.sum *= correction;
    for (int c = 0; c < kMaxHeadDim; ++c) row.out[c] *= correction;
    for (int64_t j = 0; j < keys; ++j) {
      const float p = expf(scores[j] - new_max);
      row.sum += p;
      const float* value = v + j * stride;
      for (int c = 0; c < kMaxHeadDim; ++c) {
        if (c < d) row.out[c] += p * value[c];
      }
    }
    row.max = new_max;
  }

  ROBOLOOP_HOST_DEVICE void Finish(const ForwardRow<kMaxHeadDim>& row, int thread) const {
    if (thread >= tile.rows) return;
    const int64_t d = args.shape.head_dim;
    const int64_t i = tile.first_row + thread;
    float* out = args.out + tile.Offset(i, args.shape.output_row_stride, d);
    const float inverse = 1.0f / row.sum;
    for (int c = 0; c < kMaxHeadDim; ++c) {
      if (c < d) out[c] = row.out[c] * inverse;
    }
    args.lse[(tile.start + i) * args.shape.heads + tile.head] = row.max + logf(row.sum);
  }
};

// Accumulator of one row's gradient in a backward pass (dq; or dk and dv).
template <int kMaxHeadDim>
struct GradRow {
  float first[kMaxHeadDim];   // dq in the query pass, dk in the key pass
  float second[kMaxHeadDim];  // dv in the key pass, unused in the query pass
};

// dq of one query tile: thread t owns query row first_row + t. Shared memory holds the
// queries and their output gradients, then one key tile and one value tile.
template <int kMaxHeadDim>
struct QueryGradTile {
  const BackwardArgs& args;
  TileGeometry tile;
  int64_t key_end;

  ROBOLOOP_HOST_DEVICE QueryGradTile(const BackwardArgs& a, const TileItem& item)
      : args(a),
        tile(a.shape, item),
        key_end(QueryTileKeyEnd(a.shape, tile)) {}

  ROBOLOOP_HOST_DEVICE static int64_t SharedFloats(int64_t head_dim) {
    return 2 * (kRowTile + kCudaColumnTile) * SharedRowStride(head_dim);
  }
  ROBOLOOP_HOST_DEVICE int RowStride() const { return SharedRowStride(args.shape.head_dim); }
  ROBOLOOP_HOST_DEVICE float* Queries(float* shared) const { return shared; }
  ROBOLOOP_HOST_DEVICE float* OutGrads(float* shared) const {
    return shared + kRowTile * RowStride();
  }
  ROBOLOOP_HOST_DEVICE float* Keys(float* shared) const {
    return shared + 2 * kRowTile * RowStride();
  }
  ROBOLOOP_HOST_DEVICE float* Values(float* shared) const {
    return Keys(shared) + kCudaColumnTile * RowStride();
  }

  ROBOLOOP_HOST_DEVICE void StageQueries(float* shared, int thread, int threads) const {
    const int64_t d = args.shape.head_dim;
    StageRows(args.q, tile, tile.first_row, tile.rows, args.shape.input_row_stride, d,
              Queries(shared), thread, threads);
    StageRows(args.dout, tile, tile.first_row, tile.rows, args.shape.output_row_stride, d,
              OutGrads(shared), thread, threads);
  }

  ROBOLOOP_HOST_DEVICE void StageKeyTile(int64_t k0, float* shared, int thread,
                                         int threads) const {
    StageKeysAndValues(args.k, args.v, args.shape, tile, k0, key_end, Keys(shared),
                       Values(shared), thread, threads);
  }

  ROBOLOOP_HOST_DEVICE void Begin(GradRow<kMaxHeadDim>& row) const {
    for (int c = 0; c < kMaxHeadDim; ++c) row.first[c] = 0.0f;
  }

  // dq += dS k over the visible keys of [k0, k0 + tile), dS = P (dP - rowdot).
  ROBOLOOP_HOST_DEVICE void Accumulate(GradRow<kMaxHeadDim>& row, int64_t k0,
                                       float* shared, int thread) const {
    if (thread >= tile.rows) return;
    const int64_t d = args.shape.head_dim;
    const int stride = RowStride();
    const int64_t i = tile.first_row + thread;
    const int64_t limit = MinOf(VisibleKeyLimit(args.shape.mask, tile.length, tile.prefix, i),
                                MinOf(key_end, k0 + kCudaColumnTile));
    const float* q = Queries(shared) + thread * stride;
    const float* dout = OutGrads(shared) + thread * stride;
    const int64_t stat = (tile.start + i) * args.shape.heads + tile.head;
    const float lse = args.lse[stat], row_dot = args.row_dots[stat];
    for (int64_t j = 0; j < limit - k0; ++j) {
      const float* key = Keys(shared) + j * stride;
      const float p = expf(args.shape.scale * RowDot(q, key, d) - lse);
      const float ds = p * (RowDot(dout, Values(shared) + j * stride, d) - row_dot);
      for (int c = 0; c < kMaxHeadDim; ++c) {
        if (c < d) row.first[c] += ds * key[c];
      }
    }
  }

  ROBOLOOP_HOST_DEVICE void Finish(const GradRow<kMaxHeadDim>& row, int thread) const {
    if (thread >= tile.rows) return;
    const int64_t d = args.shape.head_dim;
    float* dq = args.dq + tile.Offset(tile.first_row + thread, args.shape.input_row_stride, d);
    for (int c = 0; c < kMaxHeadDim; ++c) {
      if (c < d) dq[c] = row.first[c] * args.shape.scale;
    }
  }
};

// dk and dv of one key tile: thread t owns key row first_row + t. Shared memory holds the
// keys and values, then one tile of queries, output gradients, log-sum-exps and row dots.
template <int kMaxHeadDim>
struct KeyGradTile {
  const BackwardArgs& args;
  TileGeometry tile;
  int64_t query_begin;  // first query that sees any key of the tile

  ROBOLOOP_HOST_DEVICE KeyGradTile(const BackwardArgs& a, const TileItem& item)
      : args(a),
        tile(a.shape, item),
        query_begin(FirstSeeingQuery(a.shape.mask, tile.prefix, tile.first_row)) {}

  ROBOLOOP_HOST_DEVICE static int64_t SharedFloats(int64_t head_dim) {
    return 2 * (kRowTile + kCudaColumnTile) * SharedRowStride(head_dim) + 2 * kCudaColumnTile;
  }
  ROBOLOOP_HOST_DEVICE int RowStride() const { return SharedRowStride(args.shape.head_dim); }
  ROBOLOOP_HOST_DEVICE float* Keys(float* shared) const { return shared; }
  ROBOLOOP_HOST_DEVICE float* Values(float* shared) const {
    return shared + kRowTile * RowStride();
  }
  ROBOLOOP_HOST_DEVICE float* Queries(float* shared) const {
    return shared + 2 * kRowTile * RowStride();
  }
  ROBOLOOP_HOST_DEVICE float* OutGrads(float* shared) const {
    return Queries(shared) + kCudaColumnTile * RowStride();
  }
  ROBOLOOP_HOST_DEVICE float* LogSumExps(float* shared) const {
    return OutGrads(shared) + kCudaColumnTile * RowStride();
  }
  ROBOLOOP_HOST_DEVICE float* RowDots(float* shared) const {
    return LogSumExps(shared) + kCudaColumnTile;
  }

  ROBOLOOP_HOST_DEVICE void StageKeys(float* shared, int thread, int threads) const {
    const int64_t stride = args.shape.input_row_stride, d = args.shape.head_dim;
    StageRows(args.k, tile, tile.first_row, tile.rows, stride, d, Keys(shared), thread, threads);
    StageRows(args.v, tile, tile.first_row, tile.rows, stride, d, Values(shared), thread,
              threads);
  }

  ROBOLOOP_HOST_DEVICE void StageQueryTile(int64_t q0, float* shared, int thread,
                                           int threads) const {
    const int64_t count = MinOf(kCudaColumnTile, tile.length - q0);
    const int64_t d = args.shape.head_dim;
    StageRows(args.q, tile, q0, count, args.shape.input_row_stride, d, Queries(shared), thread,
              threads);
    StageRows(args.dout, tile, q0, count, args.shape.output_row_stride, d, OutGrads(shared),
              thread, threads);
    for (int64_t r = thread; r < count; r += threads) {
      const int64_t stat = (tile.start + q0 + r) * args.shape.heads + tile.head;
      LogSumExps(shared)[r] = args.lse[stat];
      RowDots(shared)[r] = args.row_dots[stat];
    }
  }

  ROBOLOOP_HOST_DEVICE void Begin(GradRow<kMaxHeadDim>& row) const {
    for (int c = 0; c < kMaxHeadDim; ++c) row.first[c] = row.second[c] = 0.0f;
  }

  // dv += P^T dout and dk += dS^T q over the queries of [q0, q0 + tile) that see the key.
  ROBOLOOP_HOST_DEVICE void Accumulate(GradRow<kMaxHeadDim>& row, int64_t q0,
                                       float* shared, int thread) const {
    if (thread >= tile.rows) return;
    const int64_t d = args.shape.head_dim;
    const int stride = RowStride();
    const int64_t j = tile.first_row + thread;
    const int64_t first = FirstSeeingQuery(args.shape.mask, tile.prefix, j);
    const int64_t end = MinOf(tile.length, q0 + kCudaColumnTile);
    const float* key = Keys(shared) + thread * stride;
    const float* value = Values(shared) + thread * stride;
    for (int64_t i = (first > q0 ? first : q0); i < end; ++i) {
      const int64_t r = i - q0;
      const float* q = Queries(shared) + r * stride;
      const float* dout = OutGrads(shared) + r * stride;
      const float p = expf(args.shape.scale * RowDot(q, key, d) - LogSumExps(shared)[r]);
      const float ds = p * (RowDot(dout, value, d) - RowDots(shared)[r]);
      for (int c = 0; c < kMaxHeadDim; ++c) {
        if (c < d) {
          row.second[c] += p * dout[c];
          row.first[c] += ds * q[c];
        }
      }
    }
  }

  ROBOLOOP_HOST_DEVICE void Finish(const GradRow<kMaxHeadDim>& row, int thread) const {
    if (thread >= tile.rows) return;
    const int64_t d = args.shape.head_dim;
    const int64_t offset = tile.Offset(tile.first_row + thread, args.shape.input_row_stride, d);
    for (int c = 0; c < kMaxHeadDim; ++c) {
      if (c < d) {
        args.dk[offset + c] = row.first[c] * args.shape.scale;
        args.dv[offset + c] = row.second[c];
      }
    }
  }
};

// The threads of one block as one executor sees them: on the GPU each thread runs the
// schedule for itself ([threadIdx.x, threadIdx.x + 1)) and Sync is __syncthreads; the host
// emulator runs every thread's step in turn ([0, kRowTile)) and needs no barrier.
struct ThreadSpan {
  int first;  // first thread this executor runs
  int last;   // one past the last
};

// Runs a forward-shaped tile (ForwardTile or QueryGradTile): stage the tile's own rows, then
// per inner tile stage, barrier, accumulate, barrier; then write. `rows` holds the state of
// threads [span.first, span.last).
template <typename Tile, typename Row, typename Sync>
ROBOLOOP_HOST_DEVICE void RunQueryTile(const Tile& tile, float* shared, ThreadSpan span,
                                       Row* rows, const Sync& sync) {
  for (int t = span.first; t < span.last; ++t) {
    tile.StageQueries(shared, t, kRowTile);
    tile.Begin(rows[t - span.first]);
  }
  sync();
  for (int64_t k0 = 0; k0 < tile.key_end; k0 += kCudaColumnTile) {
    for (int t = span.first; t < span.last; ++t) tile.StageKeyTile(k0, shared, t, kRowTile);
    sync();
    for (int t = span.first; t < span.last; ++t) {
      tile.Accumulate(rows[t - span.first], k0, shared, t);
    }
    sync();
  }
  for (int t = span.first; t < span.last; ++t) tile.Finish(rows[t - span.first], t);
}

// Runs a KeyGradTile with the same staging discipline as RunQueryTile.
template <int kMaxHeadDim, typename Sync>
ROBOLOOP_HOST_DEVICE void RunKeyTile(const KeyGradTile<kMaxHeadDim>& tile, float* shared,
                                     ThreadSpan span, GradRow<kMaxHeadDim>* rows,
                                     const Sync& sync) {
  for (int t = span.first; t < span.last; ++t) {
    tile.StageKeys(shared, t, kRowTile);
    tile.Begin(rows[t - span.first]);
  }
  sync();
  for (int64_t q0 = tile.query_begin; q0 < tile.tile.length; q0 += kCudaColumnTile) {
    for (int t = span.first; t < span.last; ++t) tile.StageQueryTile(q0, shared, t, kRowTile);
    sync();
    for (int t = span.first; t < span.last; ++t) {
      tile.Accumulate(rows[t - span.first], q0, shared, t);
    }
    sync();
  }
  for (int t = span.first; t < span.last; ++t) tile.Finish(rows[t - span.first], t);
}

// Calls f(std::integral_constant<int, kBound>{}) with the smallest compiled head_dim bound in
// {32, 64, 128, kCudaMaxHeadDim} that holds `head_dim` (<= kCudaMaxHeadDim, checked by callers).
template <typename F>
auto WithHeadDimBound(int64_t head_dim, const F& f) {
  if (head_dim <= 32) return f(std::integral_constant<int, 32>{});
  if (head_dim <= 64) return f(std::integral_constant<int, 64>{});
  if (head_dim <= 128) return f(std::integral_constant<int, 128>{});
  return f(std::integral_constant<int, kCudaMaxHeadDim>{});
}

}  // namespace roboloop::kernels::cuda
