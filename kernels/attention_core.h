// Torch-free core of packed variable-length attention (issue 5, req 1-2): raw-pointer kernels
// over work items, one ISA-specific implementation per CPU family, chosen at run time.
// Inputs are trusted: varlen_attention.cc validates them once at the boundary.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace roboloop::kernels {

// Which keys a query may attend to, within its own sequence.
enum class MaskKind : int32_t {
  kBidirectional = 0,  // every key of the sequence
  kCausal = 1,         // keys at or before the query
  kPrefixLm = 2,       // prefix bidirectional; suffix sees the prefix and earlier suffix keys
  kPrefixBlock = 3,    // pi0's blocks: prefix bidirectional and blind to the suffix; the suffix
                       // sees the prefix and the whole suffix
};

// Whether `mask` reads the per-sequence prefix lengths.
constexpr bool UsesPrefix(MaskKind mask) {
  return mask == MaskKind::kPrefixLm || mask == MaskKind::kPrefixBlock;
}

// Shape of one packed batch. Tensors are [total_tokens, heads, head_dim] fp32 with contiguous
// [heads, head_dim] rows, `input_row_stride` floats apart for q, k, v, dq, dk, dv (heads *
// head_dim when separate, 3 * heads * head_dim when they are views of one [tokens, 3, heads,
// head_dim] tensor) and `output_row_stride` apart for out and dout; per-row statistics (lse,
// row dots) are [total_tokens, heads].
struct AttentionShape {
  const int32_t* cu_seqlens = nullptr;      // batch + 1 offsets, from 0 to total_tokens
  const int32_t* prefix_lengths = nullptr;  // batch entries for UsesPrefix(mask), else unused
  int64_t batch = 0;                        // number of sequences
  int64_t heads = 0;                        // attention heads
  int64_t head_dim = 0;                     // features per head
  MaskKind mask = MaskKind::kBidirectional;  // mask of every sequence
  float scale = 1.0f;                       // multiplies q.k before the softmax
  int64_t input_row_stride = 0;             // floats between tokens of q, k, v, dq, dk, dv
  int64_t output_row_stride = 0;            // floats between tokens of out and dout
};

// One unit of parallel work: `rows` consecutive rows of one (sequence, head), starting at
// row `first_row` of the sequence. Rows are queries in the forward and dq passes, keys in the
// dk/dv pass.
struct TileItem {
  int32_t sequence = 0;
  int32_t head = 0;
  int32_t first_row = 0;
};

// Rows per work item, and columns per tile of the inner loop. A sequence of at most kRowTile
// tokens is one tile: its query pass also writes its dk and dv, and its key pass does nothing.
inline constexpr int64_t kRowTile = 32;
inline constexpr int64_t kColumnTile = 64;

// Every tile of every (sequence, head), in a fixed order that depends on the shape only.
std::vector<TileItem> EnumerateTiles(const AttentionShape& shape);

// Forward operands.
struct ForwardArgs {
  AttentionShape shape;
  const float* q = nullptr;
  const float* k = nullptr;
  const float* v = nullptr;
  float* out = nullptr;  // written: softmax(q k^T * scale + mask) v
  float* lse = nullptr;  // written: log-sum-exp of each query's scaled, masked scores
};

// Backward operands; `row_dots` is sum_c dout*out per (token, head), see ComputeRowDots.
struct BackwardArgs {
  AttentionShape shape;
  const float* q = nullptr;
  const float* k = nullptr;
  const float* v = nullptr;
  const float* dout = nullptr;
  const float* lse = nullptr;
  const float* row_dots = nullptr;
  float* dq = nullptr;  // written by the query pass
  float* dk = nullptr;  // written by the key pass (the query pass for one-tile sequences)
  float* dv = nullptr;  // written by the key pass (the query pass for one-tile sequences)
};

// Kernels of one ISA. Every function processes items [begin, end) of `items`, writes disjoint
// output rows, and uses `scratch` (ScratchFloats(head_dim) floats, owned by the calling
// thread) instead of allocating. Results depend on the inputs only, never on which thread
// ran which item.
struct AttentionKernels {
  const char* isa;  // "avx512", "avx2" or "portable"
  size_t (*scratch_floats)(int64_t head_dim);
  void (*forward)(const ForwardArgs& args, const TileItem* items, int64_t begin, int64_t end,
                  float* scratch);
  // dq of every item; dk and dv too for sequences of at most kRowTile tokens.
  void (*backward_queries)(const BackwardArgs& args, const TileItem* items, int64_t begin,
                           int64_t end, float* scratch);
  // dk and dv of sequences longer than kRowTile tokens.
  void (*backward_keys)(const BackwardArgs& args, const TileItem* items, int64_t begin,
                        int64_t end, float* scratch);
  // row_dots[r] = sum_c a[r*d + c] * b[r*d + c] for rows [begin, end), sequential over c.
  void (*row_dots)(const float* a, const float* b, int64_t d, int64_t begin, int64_t end,
                   float* row_dots);
};

// The AVX-512 kernels when the CPU (and the build) supports them, else the AVX2 + FMA ones
// when it supports those, else the portable ones.
const AttentionKernels& SelectedAttentionKernels();

// The portable kernels, always available (used by tests to cross-check the vector path).
const AttentionKernels& PortableAttentionKernels();

}  // namespace roboloop::kernels
