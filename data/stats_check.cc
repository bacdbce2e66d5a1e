// The check of a file's stored `stats` group (layout_scan.h CheckStoredStats).
#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "data/hdf5_io.h"
#include "data/layout_scan.h"
#include "data/stats.h"

namespace roboloop::data::internal {
namespace {

absl::Status Invalid(const std::string& path, const std::string& message) {
  return absl::InvalidArgumentError(absl::StrCat(path, ": ", message));
}

bool IsStatField(const std::string& name) {
  return std::find(std::begin(kStatFieldNames), std::end(kStatFieldNames), name) != std::end(kStatFieldNames);
}

// Appends to `entries` the feature names of the statistics groups under `group` (at `path`, the
// feature prefix `prefix`): a group holding any statistic (mean, std, ...) is one feature's, any
// other group is searched further ("stats/obs" holds "stats/obs/qpos").
absl::Status ListStatEntries(hid_t group, const std::string& path, const std::string& prefix,
                             std::vector<std::string>* entries) {
  ROBOLOOP_ASSIGN_OR_RETURN(std::vector<std::string> children, h5::ListChildren(group, path));
  if (std::any_of(children.begin(), children.end(), IsStatField)) {
    if (prefix.empty()) return Invalid(path, "statistics outside a feature's group (expected stats/<feature>/mean, ...)");
    entries->push_back(prefix);
    return absl::OkStatus();
  }
  for (const std::string& child : children) {
    const std::string child_path = absl::StrCat(path, "/", child);
    if (h5::KindOf(group, child) != h5::ObjectKind::kGroup) {
      return Invalid(child_path, "not a group of statistics (expected stats/<feature>/mean, ...)");
    }
    ROBOLOOP_ASSIGN_OR_RETURN(h5::Handle subgroup, h5::OpenGroup(group, child, child_path));
    ROBOLOOP_RETURN_IF_ERROR(ListStatEntries(subgroup.get(), child_path, prefix.empty() ? child : prefix + "/" + child,
                                             entries));
  }
  return absl::OkStatus();
}

// The values per statistic of `feature`: one per element of a step, or per RGB channel of an image key.
int64_t StatWidth(const FeatureSpec& feature) {
  if (IsImageKey(feature.name)) return 3;
  int64_t width = 1;
  for (int64_t dim : feature.step_shape) width *= dim;
  return width;
}

// The statistic `field` of `feature` as doubles: a float dataset of shape [StatWidth], every value finite.
absl::StatusOr<std::vector<double>> ReadStatField(hid_t group, const std::string& group_path,
                                                  const FeatureSpec& feature, const std::string& field) {
  const std::string path = absl::StrCat(group_path, "/", field);
  if (h5::KindOf(group, field) != h5::ObjectKind::kDataset) return Invalid(path, "missing dataset");
  ROBOLOOP_ASSIGN_OR_RETURN(h5::Handle dataset, h5::OpenDataset(group, field, path));
  ROBOLOOP_ASSIGN_OR_RETURN(h5::DatasetShape shape, h5::Describe(dataset.get(), path));
  const int64_t width = StatWidth(feature);
  if (!IsFloating(shape.dtype) || shape.dims != std::vector<int64_t>{width}) {
    return Invalid(path, absl::StrCat(DTypeName(shape.dtype), " ", ShapeToString(shape.dims), ", expected float [",
                                      width, "] (one value per ", IsImageKey(feature.name) ? "RGB channel" : "element",
                                      " of ", feature.name, ", ", DescribeFeature(feature), ")"));
  }
  ROBOLOOP_ASSIGN_OR_RETURN(Array array, h5::ReadArray(dataset.get(), path));
  std::vector<double> values(width);
  ConvertToDouble(array.dtype, array.bytes.data(), width, values.data());
  for (int64_t i = 0; i < width; ++i) {
    if (!std::isfinite(values[i])) return Invalid(path, absl::StrCat("value ", values[i], " at element ", i));
  }
  return values;
}

absl::Status CheckFeatureStats(hid_t file, const DatasetLayout& layout, const std::string& name) {
  const std::string group_path = absl::StrCat(kStatsGroup, "/", name);
  const FeatureSpec* feature = FindFeature(layout.spec, name);
  if (feature == nullptr || (!IsImageKey(name) && feature->step_shape.size() > 1)) {
    return Invalid(group_path, absl::StrCat("statistics of ", name, ", which is not a vector, scalar or image "
                                            "feature of this file's demos"));
  }
  ROBOLOOP_ASSIGN_OR_RETURN(h5::Handle group, h5::OpenGroup(file, group_path, group_path));
  std::vector<std::vector<double>> fields;
  for (const char* field : kStatFieldNames) {
    ROBOLOOP_ASSIGN_OR_RETURN(std::vector<double> values, ReadStatField(group.get(), group_path, *feature, field));
    fields.push_back(std::move(values));
  }
  const std::vector<double>& std_values = fields[1];
  const std::vector<double>& min_values = fields[2];
  const std::vector<double>& max_values = fields[3];
  for (size_t i = 0; i < std_values.size(); ++i) {
    if (std_values[i] < 0) {
      return Invalid(group_path + "/std", absl::StrCat("negative value ", std_values[i], " at element ", i));
    }
    if (min_values[i] > max_values[i]) {
      return Invalid(group_path, absl::StrCat("min ", min_values[i], " > max ", max_values[i], " at element ", i));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckStatsGroup(hid_t file, const DatasetLayout& layout) {
  switch (h5::KindOf(file, kStatsGroup)) {
    case h5::ObjectKind::kMissing:
      return absl::OkStatus();
    case h5::ObjectKind::kGroup:
      break;
    default:
      return Invalid(kStatsGroup, "not a group");
  }
  ROBOLOOP_ASSIGN_OR_RETURN(h5::Handle group, h5::OpenGroup(file, kStatsGroup, kStatsGroup));
  std::vector<std::string> entries;
  ROBOLOOP_RETURN_IF_ERROR(ListStatEntries(group.get(), kStatsGroup, "", &entries));
  for (const std::string& name : entries) ROBOLOOP_RETURN_IF_ERROR(CheckFeatureStats(file, layout, name));
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckStoredStats(hid_t file, const std::string& file_name, const DatasetLayout& layout) {
  const absl::Status status = CheckStatsGroup(file, layout);
  if (status.ok()) return status;
  return absl::InvalidArgumentError(absl::StrCat(file_name, ": ", status.message(),
                                                 " (recompute the statistics with `roboloop data stats ", file_name,
                                                 " --write`)"));
}

}  // namespace roboloop::data::internal
