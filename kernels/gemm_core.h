// Torch-free single-precision GEMM for the training linears (issue 6, req 10a): C = A B (+ a
// bias per column), A read in place through its strides (no packing), B packed by the kernel
// into panels of kGemmPanelColumns columns, C written once with the bias added in registers.
// LibTorch's BLAS packs A and zeroes C on every call: with d_model = 128 those copies were a
// fifth of the GEMMs' time in the transformer's step.
#pragma once

#include <cstddef>
#include <cstdint>

namespace roboloop::kernels {

// Element (r, c) of a float matrix is data[r * row_stride + c * col_stride].
struct MatrixView {
  const float* data;
  int64_t row_stride;
  int64_t col_stride;
};

// Columns of one packed panel of B (and of C's column blocks).
inline constexpr int64_t kGemmPanelColumns = 16;
// Rows of C one inner kernel call computes (callers split rows at multiples of it).
inline constexpr int64_t kGemmRowBlock = 6;
// Rows of B packed at a time (the reduction is summed in chunks of this length, in order).
inline constexpr int64_t kGemmReductionChunk = 256;

// The part of C one call computes: rows [row_begin, row_end), column panels
// [panel_begin, panel_end) (columns panel * kGemmPanelColumns onwards, clipped to n).
struct GemmBlock {
  int64_t row_begin, row_end;
  int64_t panel_begin, panel_end;
};

// C = A B + bias over the rows and column panels of `block`: C has n contiguous columns and row
// stride ldc, A has k columns, B is [k][n], bias is [n] or null. `scratch` holds GemmScratchFloats(k, panels of the block) floats owned by
// the calling thread. Each element sums its k products in a fixed order (chunks of
// kGemmReductionChunk, in order), so its bits do not depend on how C is split into blocks.
using GemmBlockKernel = void (*)(MatrixView a, MatrixView b, int64_t n, int64_t k,
                                 const float* bias, float* c, int64_t ldc, GemmBlock block,
                                 float* scratch);

// Scratch floats a block of `panels` column panels needs for inner size k.
size_t GemmScratchFloats(int64_t k, int64_t panels);

// The first 64-byte aligned float of a kernel's `scratch` (GemmScratchFloats leaves room for it):
// where the kernel packs its panels.
float* AlignedGemmPanels(float* scratch);

// Packs rows [k0, k0 + chunk) of B's panels [panel_begin, panel_end) into `packed`, panel after
// panel, each chunk x kGemmPanelColumns row-major; columns past n are zero.
void PackGemmPanels(MatrixView b, int64_t n, int64_t k0, int64_t chunk, int64_t panel_begin,
                    int64_t panel_end, float* packed);

// The AVX2 + FMA kernel when this build has it and the CPU supports AVX2 and FMA, else null.
GemmBlockKernel Avx2GemmKernel();

// The AVX-512 kernel when this build has it and the CPU supports AVX-512F, else null. It gives
// the AVX2 kernel's bits (same products, same order, same roundings), with twice the columns
// per instruction.
GemmBlockKernel Avx512GemmKernel();

// The kernel the linears use, else null (callers then use LibTorch's GEMM): the AVX-512 one
// where the CPU has it, else the AVX2 one where the CPU has AVX2 and FMA. LibTorch 2.11's wheel
// calls MKL's sgemm, which runs 256-bit code on AMD CPUs (docs/BENCHMARKS.md, gemm_bench).
GemmBlockKernel SelectedGemmKernel();

}  // namespace roboloop::kernels
