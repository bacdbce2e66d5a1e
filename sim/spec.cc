#include "sim/spec.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status.h"

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

bool CameraSpec::operator==(const CameraSpec& other) const {
  return name == other.name && camera == other.camera && width == other.width && height == other.height;
}

int ObsSpec::image_bytes() const {
  int n = 0;
  for (const CameraSpec& camera : cameras) n += camera.bytes();
  return n;
}

int ObsSpec::image_offset(const std::string& name) const {
  int offset = 0;
  for (const CameraSpec& camera : cameras) {
    if (camera.name == name) return offset;
    offset += camera.bytes();
  }
  return -1;
}

std::string CameraImageKey(const CameraSpec& camera) { return absl::StrCat(camera.name, "_image"); }

absl::Status CheckDatasetName(const std::string& name, const std::string& what) {
  const bool allowed = !name.empty() && name[0] != '.' && std::all_of(name.begin(), name.end(), [](char c) {
    return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.';
  });
  if (allowed) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      what, " '", name, "' cannot be a dataset key: use ASCII letters, digits, '_', '-' and '.' (not first)"));
}

absl::Status ValidateObsSpecNames(const ObsSpec& spec, const std::string& who) {
  for (const ArraySpec& key : spec.keys) {
    ROBOLOOP_RETURN_IF_ERROR(Annotate(CheckDatasetName(key.name, "observation"), who));
  }
  for (const CameraSpec& camera : spec.cameras) {
    ROBOLOOP_RETURN_IF_ERROR(Annotate(CheckDatasetName(camera.name, "camera"), who));
  }
  return absl::OkStatus();
}

absl::Status ValidateCameraSize(const CameraSpec& camera, const std::string& who) {
  if (camera.name.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(who, ": a camera observation has no name"));
  }
  for (auto [side, value] : {std::pair{"width", camera.width}, std::pair{"height", camera.height}}) {
    if (value < 1 || value > kMaxCameraSide) {
      return absl::InvalidArgumentError(absl::StrCat(who, ": camera '", camera.name, "' ", side, " ", value,
                                                     " is outside 1..", kMaxCameraSide));
    }
  }
  return absl::OkStatus();
}

bool ActionSpec::operator==(const ActionSpec& other) const {
  return low == other.low && high == other.high;
}

std::string DescribeObsSpec(const ObsSpec& spec) {
  std::vector<std::string> parts;
  for (const ArraySpec& key : spec.keys) {
    parts.push_back(absl::StrCat(key.name, "[", absl::StrJoin(key.shape, "x"), "]"));
  }
  for (const CameraSpec& camera : spec.cameras) {
    parts.push_back(absl::StrCat(camera.name, ":rgb[", camera.height, "x", camera.width, "]"));
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
