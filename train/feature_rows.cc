#include "train/feature_rows.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/status.h"

namespace roboloop::train {

void ConcatRows::CopyRow(int64_t row, float* out) const {
  for (const FloatRows& part : parts) {
    const absl::Span<const float> values = part.Row(row);
    out = std::copy(values.begin(), values.end(), out);
  }
}

void ConcatImages::CopyRow(int64_t row, uint8_t* out) const {
  for (const ImageRows& part : parts) {
    const absl::Span<const uint8_t> frame = part.Row(row);
    out = std::copy(frame.begin(), frame.end(), out);
  }
}

bool IsObsImageKey(const std::string& name) { return absl::StartsWith(name, "obs/") && data::IsImageKey(name); }

std::string CameraNameOf(const std::string& feature) {
  std::string name = feature;
  if (absl::StartsWith(name, "obs/")) name.erase(0, 4);
  if (absl::EndsWith(name, data::kImageSuffix)) name.resize(name.size() - (sizeof(data::kImageSuffix) - 1));
  return name;
}

absl::StatusOr<ConcatImages> ConcatImageFeatures(const data::EpisodeStore& store,
                                                 const std::vector<std::string>& names) {
  ConcatImages images;
  for (const std::string& name : names) {
    auto feature = store.feature(name);
    if (!feature.ok()) return Annotate(feature.status(), absl::StrCat(store.path(), ": image feature '", name, "'"));
    const data::FeatureSpec& spec = (*feature)->spec;
    if (absl::Status frames = data::CheckImageFeature(spec); !frames.ok()) {
      return Annotate(frames, absl::StrCat(store.path(), ": image feature '", name, "'"));
    }
    ImageRows rows;
    rows.name = name;
    rows.frame_bytes = spec.step_shape[0] * spec.step_shape[1] * spec.step_shape[2];
    rows.values = (*feature)->Values<uint8_t>();
    images.bytes += rows.frame_bytes;
    images.parts.push_back(std::move(rows));
  }
  return images;
}

absl::StatusOr<FloatRows> FloatFeature(const data::EpisodeStore& store, const std::string& name,
                                       const std::string& role) {
  auto feature = store.feature(name);
  if (!feature.ok()) return Annotate(feature.status(), absl::StrCat(role, " '", name, "'"));
  const data::FeatureSpec& spec = (*feature)->spec;
  if (spec.dtype != data::DType::kFloat32) {
    return absl::InvalidArgumentError(absl::StrCat(
        store.path(), ": ", role, " '", name, "' is ", data::DescribeFeature(spec),
        "; only float32 features can be used (load the store with as_float32)"));
  }
  FloatRows rows;
  rows.name = name;
  rows.width = 1;
  for (int64_t extent : spec.step_shape) rows.width *= extent;
  rows.values = (*feature)->Values<float>();
  return rows;
}

absl::StatusOr<ConcatRows> ConcatFeatures(const data::EpisodeStore& store,
                                          const std::vector<std::string>& names,
                                          const std::string& role) {
  if (names.empty()) return absl::InvalidArgumentError(absl::StrCat("no ", role, "s given"));
  ConcatRows rows;
  for (const std::string& name : names) {
    ROBOLOOP_ASSIGN_OR_RETURN(FloatRows part, FloatFeature(store, name, role));
    rows.width += part.width;
    rows.parts.push_back(std::move(part));
  }
  return rows;
}

}  // namespace roboloop::train
