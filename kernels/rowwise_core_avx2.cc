// The row-wise kernels compiled for AVX2 + FMA (this file alone gets -mavx2 -mfma): x86 CPUs
// without AVX-512 (AMD Zen 2/3, and hosts whose hypervisor hides AVX-512).
#define ROBOLOOP_KERNELS_ISA avx2
#define ROBOLOOP_KERNELS_ISA_NAME "avx2"
#include "kernels/rowwise_core_impl.h"
