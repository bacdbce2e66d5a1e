#include "train/feature_rows.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/status.h"

namespace roboloop::train {

void ConcatRows::CopyRow(int64_t row, float* out) const {
  for (const FloatRows& part : parts) {
    const absl::Span<const float> values = part.Row(row);
    out = std::copy(values.begin(), values.end(), out);
  }
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
