#include "sim/spec.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace roboloop::sim {

int ArraySpec::size() const {
  int n = 1;
  for (int d : shape) n *= d;
  return n;
}

bool ArraySpec::operator==(const ArraySpec& other) const {
  return name == other.name && shape == other.shape;
}

int ObsSpec::size() const {
  int n = 0;
  for (const ArraySpec& key : keys) n += key.size();
  return n;
}

int ObsSpec::offset(const std::string& name) const {
  int offset = 0;
  for (const ArraySpec& key : keys) {
    if (key.name == name) return offset;
    offset += key.size();
  }
  return -1;
}

bool ActionSpec::operator==(const ActionSpec& other) const {
  return low == other.low && high == other.high;
}

std::string DescribeObsSpec(const ObsSpec& spec) {
  std::vector<std::string> parts;
  for (const ArraySpec& key : spec.keys) {
    parts.push_back(absl::StrCat(key.name, "[", absl::StrJoin(key.shape, "x"), "]"));
  }
  return absl::StrCat("{", absl::StrJoin(parts, ", "), "}");
}

absl::Status CheckObsSpecMatches(const ObsSpec& expected, const ObsSpec& actual,
                                 const std::string& who) {
  if (expected == actual) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(who, ": observation spec ",
                                                 DescribeObsSpec(actual), " does not match ",
                                                 DescribeObsSpec(expected)));
}

absl::Status CheckActionSpecMatches(const ActionSpec& expected, const ActionSpec& actual,
                                    const std::string& who) {
  if (expected.size() == actual.size()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(who, ": action size ", actual.size(),
                                                 " does not match the task's ", expected.size()));
}

}  // namespace roboloop::sim
