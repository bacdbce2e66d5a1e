// The attention kernels compiled for the baseline ISA of the build (no extra -m flags).
#define ROBOLOOP_KERNELS_ISA portable
#define ROBOLOOP_KERNELS_ISA_NAME "portable"
#include "kernels/attention_core_impl.h"
