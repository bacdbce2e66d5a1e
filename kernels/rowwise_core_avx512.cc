// The row-wise kernels compiled for AVX-512 (this file alone gets -mavx512f -mfma).
#define ROBOLOOP_KERNELS_ISA avx512
#define ROBOLOOP_KERNELS_ISA_NAME "avx512"
#include "kernels/rowwise_core_impl.h"
