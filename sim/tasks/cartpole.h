// cartpole-balance and cartpole-swingup (issue 4, req 3), on configs/tasks/models/cartpole.xml.
//   observation: position = [x, cos θ, sin θ], velocity = [ẋ, θ̇] (θ = 0 upright)
//   action: cart force in [-1, 1] (×10 N); 50 Hz (2 substeps of 10 ms); 500 steps
//   balance: starts with θ uniform in ±0.1 rad; success = |θ| < 0.2 and |x| < 2 at every
//            step; terminates as soon as that fails (success is then impossible).
//   swingup: starts hanging, θ = π ± 0.05; success = |θ| < 0.2 and |x| < 2 at each of the
//            final 100 steps; no termination.
//   reward: upright · centred − 0.01·u², upright = (1 + cos θ)/2, centred = (1 + e^{−x²})/2.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "sim/task.h"

namespace roboloop::sim {

// Which cartpole task.
enum class CartpoleMode { kBalance, kSwingup };

// Builds the cartpole task in `mode` from the MJCF at `model_path`.
absl::StatusOr<std::unique_ptr<Task>> MakeCartpoleTask(CartpoleMode mode,
                                                       const std::string& model_path);

}  // namespace roboloop::sim
