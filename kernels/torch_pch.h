// Precompiled header of the kernels' torch translation units (and of their tests): LibTorch
// costs ~15 s per TU to parse on the build machines.
#pragma once

#include <torch/torch.h>
