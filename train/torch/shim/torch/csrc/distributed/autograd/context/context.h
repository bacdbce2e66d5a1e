// Stand-in for a LibTorch header that Debian's libtorch-dev does not ship but
// c10d/reducer.hpp includes. The reducer only names DistAutogradContext through a
// std::shared_ptr member and the GradCallback type, so these two declarations (the same as
// LibTorch 1.13's) are all it needs; the real class lives in libtorch and is never touched
// from our code. Found only by roboloop_torch's include path.
#pragma once

#include <functional>
#include <memory>

#include <ATen/core/Tensor.h>

namespace torch::distributed::autograd {

// Declared as in LibTorch 1.13 (distributed autograd, unused by roboloop).
class DistAutogradContext {
 public:
  // Callback type on accumulated gradients, as in LibTorch 1.13.
  using GradCallback = std::function<bool(at::Tensor&)>;
};

// Handle type the reducer stores, as in LibTorch 1.13.
using ContextPtr = std::shared_ptr<DistAutogradContext>;

}  // namespace torch::distributed::autograd
