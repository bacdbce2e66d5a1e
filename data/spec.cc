#include "data/spec.h"

#include <cctype>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace roboloop::data {

std::string DemoName(int64_t index) { return absl::StrCat("demo_", index); }

std::optional<int64_t> ParseDemoIndex(const std::string& name) {
  constexpr char kPrefix[] = "demo_";
  if (name.rfind(kPrefix, 0) != 0) return std::nullopt;
  const std::string digits = name.substr(sizeof(kPrefix) - 1);
  if (digits.empty()) return std::nullopt;
  for (char c : digits) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return std::nullopt;
  }
  int64_t index = 0;
  if (!absl::SimpleAtoi(digits, &index)) return std::nullopt;
  return index;
}

std::string FeaturePath(const std::string& demo, const std::string& feature) {
  return absl::StrCat(kDataGroup, "/", demo, "/", feature);
}

bool IsImageKey(const std::string& name) {
  for (const std::string prefix : {"obs/", "next_obs/"}) {
    if (name.rfind(prefix, 0) != 0) continue;
    const std::string key = name.substr(prefix.size());
    const size_t suffix = sizeof(kImageSuffix) - 1;
    return key.size() > suffix && key.find('/') == std::string::npos &&
           key.compare(key.size() - suffix, suffix, kImageSuffix) == 0;
  }
  return false;
}

absl::Status CheckImageFeature(const FeatureSpec& feature) {
  const std::vector<int64_t>& shape = feature.step_shape;
  if (feature.dtype != DType::kUint8 || shape.size() != 3 || shape[2] != 3) {
    return absl::InvalidArgumentError(
        absl::StrCat(DescribeFeature(feature), ", expected uint8 [T, H, W, 3] (RGB frames)"));
  }
  for (int64_t side : {shape[0], shape[1]}) {
    if (side < 1 || side > kMaxImageSide) {
      return absl::InvalidArgumentError(absl::StrCat(DescribeFeature(feature), ": height and width must lie in 1..",
                                                     kMaxImageSide));
    }
  }
  return absl::OkStatus();
}

std::vector<FeatureSpec> ImageFeatures(const DatasetSpec& spec) {
  std::vector<FeatureSpec> images;
  for (const FeatureSpec& feature : spec) {
    if (IsImageKey(feature.name)) images.push_back(feature);
  }
  return images;
}

const FeatureSpec* FindFeature(const DatasetSpec& spec, const std::string& name) {
  for (const FeatureSpec& feature : spec) {
    if (feature.name == name) return &feature;
  }
  return nullptr;
}

std::string DescribeFeature(const FeatureSpec& feature) {
  std::string shape = "[T";
  for (int64_t dim : feature.step_shape) absl::StrAppend(&shape, ", ", dim);
  return absl::StrCat(DTypeName(feature.dtype), " ", shape, "]");
}

absl::Status CheckSameFeatures(const std::string& expected_path, const DatasetSpec& expected,
                               const std::string& found_path, const DatasetSpec& found,
                               const std::vector<std::string>& names) {
  std::vector<std::string> checked = names;
  if (checked.empty()) {
    for (const FeatureSpec& feature : expected) checked.push_back(feature.name);
  }
  for (const std::string& name : checked) {
    const FeatureSpec* want = FindFeature(expected, name);
    const FeatureSpec* match = FindFeature(found, name);
    if (want == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(expected_path, ": has no feature ", name));
    }
    if (match == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat(found_path, ": has no feature ", name, " (", expected_path, " has it)"));
    }
    if (*match != *want) {
      return absl::InvalidArgumentError(absl::StrCat(found_path, ": ", name, " is ", DescribeFeature(*match),
                                                     ", expected ", DescribeFeature(*want), " (as in ",
                                                     expected_path, ")"));
    }
  }
  if (names.empty() && found.size() != expected.size()) {
    return absl::InvalidArgumentError(absl::StrCat(found_path, ": has features ", expected_path, " lacks"));
  }
  return absl::OkStatus();
}

nlohmann::json SpecToJson(const DatasetSpec& spec) {
  nlohmann::json features = nlohmann::json::array();
  for (const FeatureSpec& feature : spec) {
    features.push_back({{"name", feature.name},
                        {"dtype", DTypeName(feature.dtype)},
                        {"shape", feature.step_shape},
                        {"image", IsImageKey(feature.name)}});
  }
  return features;
}

}  // namespace roboloop::data
