// Small angle helpers shared by the built-in tasks and experts.
#pragma once

#include <cmath>

namespace roboloop::sim {

// `angle` wrapped into (-pi, pi].
inline double WrapAngle(double angle) { return std::atan2(std::sin(angle), std::cos(angle)); }

}  // namespace roboloop::sim
