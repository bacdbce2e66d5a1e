// Observation and action specifications shared by tasks and policies.
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"

namespace roboloop::sim {

// One named, shaped float vector of an observation (e.g. "position" of shape {3}).
struct ArraySpec {
  std::string name;        // key, unique within an ObsSpec
  std::vector<int> shape;  // dimensions; the key holds their product of floats

  // Number of floats in this key.
  int size() const;
  bool operator==(const ArraySpec& other) const;
};

// A task's observation: keys laid out back to back in one flat float row, in order.
struct ObsSpec {
  std::vector<ArraySpec> keys;  // in layout order

  // Total floats in one observation row.
  int size() const;
  // Offset of key `name` within the row, or -1 if absent.
  int offset(const std::string& name) const;
  bool operator==(const ObsSpec& other) const { return keys == other.keys; }
};

// A task's action: a flat float vector with per-dimension bounds (actions are clipped).
struct ActionSpec {
  std::vector<float> low;   // lower bound per dimension
  std::vector<float> high;  // upper bound per dimension

  // Number of action dimensions.
  int size() const { return static_cast<int>(low.size()); }
  bool operator==(const ActionSpec& other) const;
};

// OK when `actual` equals `expected`; otherwise InvalidArgument naming `who` and the first
// difference (key name, shape or size).
absl::Status CheckObsSpecMatches(const ObsSpec& expected, const ObsSpec& actual,
                                 const std::string& who);

// OK when `actual` has `expected`'s dimension count, otherwise InvalidArgument naming `who`.
absl::Status CheckActionSpecMatches(const ActionSpec& expected, const ActionSpec& actual,
                                    const std::string& who);

// "name[3x2]" style text for messages.
std::string DescribeObsSpec(const ObsSpec& spec);

}  // namespace roboloop::sim
