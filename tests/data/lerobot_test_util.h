// Helpers of the LeRobot tests.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <vector>

namespace roboloop::data::testing {

// Mean absolute difference per byte (pixel channel, 0..255 levels) of two frame buffers, which
// must be of equal size.
inline double MeanAbsoluteError(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
  EXPECT_EQ(a.size(), b.size());
  double sum = 0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) sum += std::abs(int{a[i]} - int{b[i]});
  return a.empty() ? 0 : sum / static_cast<double>(a.size());
}

}  // namespace roboloop::data::testing
