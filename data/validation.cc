#include "data/validation.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "data/hdf5_io.h"
#include "data/layout_scan.h"

namespace roboloop::data {
namespace {

// A demo's layout and spec as found, before comparing against the other demos.
struct DemoScan {
  DemoLayout demo;
  DatasetSpec spec;
};

absl::Status Invalid(const std::string& path, const std::string& message) {
  return absl::InvalidArgumentError(absl::StrCat(path, ": ", message));
}

std::string DemoPath(const std::string& demo) { return absl::StrCat(kDataGroup, "/", demo); }

absl::StatusOr<std::vector<std::string>> FeatureNames(hid_t demo_group, const std::string& demo) {
  ROBOLOOP_ASSIGN_OR_RETURN(std::vector<std::string> children,
                            h5::ListChildren(demo_group, DemoPath(demo)));
  static const std::set<std::string> kTopLevel = {"actions", "rewards", "dones", "states"};
  std::vector<std::string> names;
  for (const std::string& child : children) {
    if (kTopLevel.count(child) > 0) names.push_back(child);
    if (child != "obs" && child != "next_obs") continue;
    ROBOLOOP_ASSIGN_OR_RETURN(h5::Handle group,
                              h5::OpenGroup(demo_group, child, FeaturePath(demo, child)));
    ROBOLOOP_ASSIGN_OR_RETURN(std::vector<std::string> keys,
                              h5::ListChildren(group.get(), FeaturePath(demo, child)));
    if (child == "obs" && keys.empty()) return Invalid(FeaturePath(demo, "obs"), "no observations");
    for (const std::string& key : keys) names.push_back(child + "/" + key);
  }
  if (std::find(names.begin(), names.end(), kActions) == names.end()) {
    return Invalid(FeaturePath(demo, kActions), "missing dataset");
  }
  if (std::find(children.begin(), children.end(), "obs") == children.end()) {
    return Invalid(FeaturePath(demo, "obs"), "missing group");
  }
  std::sort(names.begin(), names.end());
  return names;
}

absl::StatusOr<FeatureSpec> ScanFeature(hid_t demo_group, const std::string& demo,
                                        const std::string& name, int64_t* length) {
  const std::string path = FeaturePath(demo, name);
  ROBOLOOP_ASSIGN_OR_RETURN(h5::Handle dataset, h5::OpenDataset(demo_group, name, path));
  ROBOLOOP_ASSIGN_OR_RETURN(h5::DatasetShape shape, h5::Describe(dataset.get(), path));
  if (shape.dims.empty()) return Invalid(path, "rank 0, expected [T, ...]");
  if ((name == "rewards" || name == "dones") && shape.dims.size() != 1) {
    return Invalid(path, absl::StrCat("shape ", ShapeToString(shape.dims), ", expected [T]"));
  }
  *length = shape.dims[0];
  FeatureSpec feature{name, shape.dtype, std::vector<int64_t>(shape.dims.begin() + 1, shape.dims.end())};
  if (IsImageKey(name)) ROBOLOOP_RETURN_IF_ERROR(Annotate(CheckImageFeature(feature), path));
  return feature;
}

// The error for feature `name` of `demo` holding `length` steps where actions has `expected`.
absl::Status LengthMismatch(const std::string& demo, const std::string& name, int64_t length,
                            int64_t expected) {
  if (IsImageKey(name)) {
    return Invalid(FeaturePath(demo, name),
                   absl::StrCat(length, " frames, expected ", expected, " (one per step of actions)"));
  }
  return Invalid(FeaturePath(demo, name), absl::StrCat("length ", length, ", expected ", expected, " (actions)"));
}

absl::Status CheckNumSamples(hid_t demo_group, const std::string& demo, int64_t steps) {
  ROBOLOOP_ASSIGN_OR_RETURN(std::optional<int64_t> num_samples,
                            h5::ReadInt64Attr(demo_group, "num_samples", DemoPath(demo)));
  if (!num_samples.has_value()) return Invalid(DemoPath(demo), "missing attribute num_samples");
  if (*num_samples != steps) {
    return Invalid(DemoPath(demo), absl::StrCat("attribute num_samples ", *num_samples,
                                                ", expected ", steps, " (actions)"));
  }
  return absl::OkStatus();
}

absl::StatusOr<DemoScan> ScanDemo(hid_t data_group, const std::string& demo, int64_t index) {
  ROBOLOOP_ASSIGN_OR_RETURN(h5::Handle group, h5::OpenGroup(data_group, demo, DemoPath(demo)));
  ROBOLOOP_ASSIGN_OR_RETURN(std::vector<std::string> names, FeatureNames(group.get(), demo));
  DemoScan scan;
  scan.demo = {demo, index, 0};
  // `names` is sorted, so actions (present, checked by FeatureNames) comes first and fixes
  // the length the others are compared with.
  for (const std::string& name : names) {
    int64_t length = 0;
    ROBOLOOP_ASSIGN_OR_RETURN(FeatureSpec feature, ScanFeature(group.get(), demo, name, &length));
    if (name == kActions) {
      scan.demo.num_samples = length;
      if (length == 0) return Invalid(DemoPath(demo), "empty demo (actions has 0 steps)");
    } else if (length != scan.demo.num_samples) {
      return LengthMismatch(demo, name, length, scan.demo.num_samples);
    }
    scan.spec.push_back(std::move(feature));
  }
  ROBOLOOP_RETURN_IF_ERROR(CheckNumSamples(group.get(), demo, scan.demo.num_samples));
  return scan;
}

absl::Status CompareSpecs(const DemoScan& reference, const DemoScan& scan) {
  const std::string as_in = absl::StrCat(" (as in ", DemoPath(reference.demo.name), ")");
  for (const FeatureSpec& expected : reference.spec) {
    const FeatureSpec* found = FindFeature(scan.spec, expected.name);
    const std::string path = FeaturePath(scan.demo.name, expected.name);
    if (found == nullptr) return Invalid(path, "missing" + as_in);
    if (*found != expected) {
      // Neither demo is judged right: with two demos nothing tells which one is the odd one out.
      return Invalid(path, absl::StrCat(DescribeFeature(*found), ", but ",
                                        FeaturePath(reference.demo.name, expected.name), " is ",
                                        DescribeFeature(expected), " (every demo must have the same dtype and shape)"));
    }
  }
  for (const FeatureSpec& feature : scan.spec) {
    if (FindFeature(reference.spec, feature.name) == nullptr) {
      return Invalid(FeaturePath(scan.demo.name, feature.name),
                     "not present in " + DemoPath(reference.demo.name));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::pair<int64_t, std::string>>> ListDemos(hid_t data_group) {
  ROBOLOOP_ASSIGN_OR_RETURN(std::vector<std::string> children,
                            h5::ListChildren(data_group, kDataGroup));
  std::vector<std::pair<int64_t, std::string>> demos;
  for (const std::string& child : children) {
    const std::optional<int64_t> index = ParseDemoIndex(child);
    if (!index.has_value()) {
      return Invalid(DemoPath(child), "not a demo (expected groups named demo_<i> only)");
    }
    demos.emplace_back(*index, child);
  }
  if (demos.empty()) return Invalid(kDataGroup, "no demos");
  std::sort(demos.begin(), demos.end());
  return demos;
}

absl::Status ScanDataAttributes(hid_t data_group, DatasetLayout* layout,
                                std::vector<ValidationIssue>* warnings) {
  ROBOLOOP_ASSIGN_OR_RETURN(std::optional<int64_t> total,
                            h5::ReadInt64Attr(data_group, "total", kDataGroup));
  if (!total.has_value()) {
    warnings->push_back({kDataGroup, "missing attribute total"});
  } else if (*total != layout->total_steps) {
    return Invalid(kDataGroup, absl::StrCat("attribute total ", *total, ", expected ",
                                            layout->total_steps, " (sum of num_samples)"));
  }
  ROBOLOOP_ASSIGN_OR_RETURN(std::optional<std::string> env_args,
                            h5::ReadStringAttr(data_group, "env_args", kDataGroup));
  if (!env_args.has_value()) {
    warnings->push_back({kDataGroup, "missing attribute env_args"});
    return absl::OkStatus();
  }
  if (!nlohmann::json::parse(*env_args, nullptr, false).is_object()) {
    return Invalid(kDataGroup, "attribute env_args is not a JSON object");
  }
  layout->env_args_json = *env_args;
  return absl::OkStatus();
}

// A held-out split ("valid", "20_percent_valid") shares no demo with its training split ("train",
// "20_percent_train"): a demo in both would leak into the validation numbers.
absl::Status CheckHeldOutSplits(const std::map<std::string, std::vector<std::string>>& masks) {
  constexpr absl::string_view kValid = "valid";
  for (const auto& [split, demos] : masks) {
    if (!absl::EndsWith(split, kValid)) continue;
    const std::string train_split = split.substr(0, split.size() - kValid.size()) + "train";
    auto train = masks.find(train_split);
    if (train == masks.end()) continue;
    const std::set<std::string> training(train->second.begin(), train->second.end());
    for (const std::string& demo : demos) {
      if (training.count(demo) > 0) {
        return Invalid(absl::StrCat(kMaskGroup, "/", split),
                       absl::StrCat(demo, " is also in ", kMaskGroup, "/", train_split));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status ScanMasks(hid_t file, DatasetLayout* layout) {
  if (h5::KindOf(file, kMaskGroup) == h5::ObjectKind::kMissing) return absl::OkStatus();
  ROBOLOOP_ASSIGN_OR_RETURN(h5::Handle group, h5::OpenGroup(file, kMaskGroup, kMaskGroup));
  ROBOLOOP_ASSIGN_OR_RETURN(std::vector<std::string> splits,
                            h5::ListChildren(group.get(), kMaskGroup));
  for (const std::string& split : splits) {
    const std::string path = absl::StrCat(kMaskGroup, "/", split);
    ROBOLOOP_ASSIGN_OR_RETURN(h5::Handle dataset, h5::OpenDataset(group.get(), split, path));
    ROBOLOOP_ASSIGN_OR_RETURN(std::vector<std::string> names,
                              h5::ReadStringArray(dataset.get(), path));
    std::set<std::string> seen;
    for (const std::string& name : names) {
      if (layout->FindDemo(name) == nullptr) return Invalid(path, "unknown demo " + name);
      if (!seen.insert(name).second) return Invalid(path, name + " listed twice");
    }
    layout->masks[split] = std::move(names);
  }
  return CheckHeldOutSplits(layout->masks);
}

absl::Status ScanLineage(hid_t file, DatasetLayout* layout) {
  ROBOLOOP_ASSIGN_OR_RETURN(std::optional<std::string> text,
                            h5::ReadStringAttr(file, kLineageAttr, "/"));
  if (!text.has_value()) {
    layout->lineage.operation = "unknown";
    return absl::OkStatus();
  }
  ROBOLOOP_ASSIGN_OR_RETURN(layout->lineage,
                            LineageFromJson(*text, absl::StrCat("/: attribute ", kLineageAttr)));
  return absl::OkStatus();
}

absl::StatusOr<DatasetLayout> ScanStructure(hid_t file, std::vector<ValidationIssue>* warnings) {
  ROBOLOOP_RETURN_IF_ERROR(h5::CheckNoExternalLinks(file));
  ROBOLOOP_ASSIGN_OR_RETURN(h5::Handle data_group, h5::OpenGroup(file, kDataGroup, kDataGroup));
  ROBOLOOP_ASSIGN_OR_RETURN(auto demos, ListDemos(data_group.get()));
  DatasetLayout layout;
  std::optional<DemoScan> reference;
  for (const auto& [index, name] : demos) {
    ROBOLOOP_ASSIGN_OR_RETURN(DemoScan scan, ScanDemo(data_group.get(), name, index));
    if (reference.has_value()) {
      ROBOLOOP_RETURN_IF_ERROR(CompareSpecs(*reference, scan));
    } else {
      reference = scan;
      layout.spec = scan.spec;
    }
    layout.total_steps += scan.demo.num_samples;
    layout.demos.push_back(scan.demo);
  }
  ROBOLOOP_RETURN_IF_ERROR(ScanDataAttributes(data_group.get(), &layout, warnings));
  ROBOLOOP_RETURN_IF_ERROR(ScanMasks(file, &layout));
  ROBOLOOP_RETURN_IF_ERROR(ScanLineage(file, &layout));
  layout.has_stats = h5::KindOf(file, kStatsGroup) == h5::ObjectKind::kGroup;
  return layout;
}

// Counts non-finite values; `first_step` gets the step of the first one.
template <typename T>
int64_t CountNonFinite(const T* values, int64_t elements, int64_t per_step, int64_t* first_step) {
  int64_t count = 0;
  for (int64_t i = 0; i < elements; ++i) {
    if (std::isfinite(values[i])) continue;
    if (count++ == 0) *first_step = i / per_step;
  }
  return count;
}

absl::StatusOr<std::optional<ValidationIssue>> ScanFeatureValues(hid_t file,
                                                                 const std::string& demo,
                                                                 const FeatureSpec& feature) {
  const std::string path = FeaturePath(demo, feature.name);
  ROBOLOOP_ASSIGN_OR_RETURN(h5::Handle dataset, h5::OpenDataset(file, path, path));
  ROBOLOOP_ASSIGN_OR_RETURN(Array array, h5::ReadArray(dataset.get(), path));
  return internal::FindNonFinite(array.dtype, array.bytes.data(), array.NumElements(),
                                 array.ElementsPerStep(), path);
}

// At most this many bytes of one feature are read at once by ReadThrough.
constexpr int64_t kReadThroughBlockBytes = int64_t{16} << 20;

// Reads every row of `feature` in `demo`, block by block, so that a chunk that does not decode
// (a damaged camera frame, say) is an error naming the dataset (and, for frames, the frame).
absl::Status ReadThrough(hid_t file, const DemoLayout& demo, const FeatureSpec& feature) {
  const std::string path = FeaturePath(demo.name, feature.name);
  ROBOLOOP_ASSIGN_OR_RETURN(h5::Handle dataset, h5::OpenDataset(file, path, path));
  int64_t row_bytes = DTypeSize(feature.dtype);
  for (int64_t side : feature.step_shape) row_bytes *= side;
  const int64_t block_rows = std::clamp<int64_t>(kReadThroughBlockBytes / std::max<int64_t>(row_bytes, 1), 1,
                                                 std::max<int64_t>(demo.num_samples, 1));
  std::vector<uint8_t> block(static_cast<size_t>(block_rows * row_bytes));
  for (int64_t first = 0; first < demo.num_samples; first += block_rows) {
    const int64_t rows = std::min(block_rows, demo.num_samples - first);
    ROBOLOOP_RETURN_IF_ERROR(h5::ReadRows(dataset.get(), feature.dtype, first, rows, block.data(), path));
  }
  return absl::OkStatus();
}

// Reads every feature ScanValues does not (integers, camera frames) so that each stored chunk of
// the file has been decoded once; the first that does not is an error prefixed with `file_name`.
absl::Status ReadNonFloatFeatures(hid_t file, const std::string& file_name, const DatasetLayout& layout) {
  for (const DemoLayout& demo : layout.demos) {
    for (const FeatureSpec& feature : layout.spec) {
      if (IsFloating(feature.dtype)) continue;
      const absl::Status read = ReadThrough(file, demo, feature);
      if (!read.ok()) return Annotate(read, file_name);
    }
  }
  return absl::OkStatus();
}

}  // namespace

const DemoLayout* DatasetLayout::FindDemo(const std::string& name) const {
  // demos are sorted by index: binary search, then a scan for names sharing one index
  // ("demo_7" and "demo_07").
  const std::optional<int64_t> index = ParseDemoIndex(name);
  if (!index.has_value()) return nullptr;
  auto demo = std::lower_bound(
      demos.begin(), demos.end(), *index,
      [](const DemoLayout& candidate, int64_t wanted) { return candidate.index < wanted; });
  for (; demo != demos.end() && demo->index == *index; ++demo) {
    if (demo->name == name) return &*demo;
  }
  return nullptr;
}

namespace internal {

absl::StatusOr<DatasetLayout> ScanLayout(hid_t file, const std::string& file_name,
                                         std::vector<ValidationIssue>* warnings) {
  absl::StatusOr<DatasetLayout> layout = ScanStructure(file, warnings);
  if (!layout.ok()) return Annotate(layout.status(), file_name);
  return layout;
}

absl::Status ScanValues(hid_t file, const std::string& file_name, const DatasetLayout& layout,
                        NanPolicy policy, std::vector<ValidationIssue>* warnings) {
  for (const DemoLayout& demo : layout.demos) {
    for (const FeatureSpec& feature : layout.spec) {
      if (!IsFloating(feature.dtype)) continue;
      absl::StatusOr<std::optional<ValidationIssue>> issue =
          ScanFeatureValues(file, demo.name, feature);
      if (!issue.ok()) return Annotate(issue.status(), file_name);
      if (!issue->has_value()) continue;
      ROBOLOOP_RETURN_IF_ERROR(ApplyNanPolicy(file_name, policy, **issue, warnings));
    }
  }
  return absl::OkStatus();
}

std::optional<ValidationIssue> FindNonFinite(DType dtype, const void* values, int64_t elements,
                                             int64_t per_step, const std::string& path, int64_t first_step) {
  per_step = std::max<int64_t>(per_step, 1);
  int64_t first_bad = 0;
  const int64_t count =
      dtype == DType::kFloat32
          ? CountNonFinite(static_cast<const float*>(values), elements, per_step, &first_bad)
          : CountNonFinite(static_cast<const double*>(values), elements, per_step, &first_bad);
  if (count == 0) return std::nullopt;
  return ValidationIssue{
      path, absl::StrCat(count, " NaN/Inf values (first at step ", first_step + first_bad, ")")};
}

absl::Status ApplyNanPolicy(const std::string& file_name, NanPolicy policy,
                            ValidationIssue issue, std::vector<ValidationIssue>* warnings) {
  if (policy == NanPolicy::kStrict) {
    return absl::InvalidArgumentError(absl::StrCat(file_name, ": ", issue.ToString()));
  }
  warnings->push_back(std::move(issue));
  return absl::OkStatus();
}

}  // namespace internal

absl::StatusOr<ValidationResult> ValidateFile(const std::string& path,
                                              const ValidationOptions& options) {
  ROBOLOOP_ASSIGN_OR_RETURN(h5::Handle file, h5::OpenFile(path, /*writable=*/false));
  ValidationResult result;
  ROBOLOOP_ASSIGN_OR_RETURN(result.layout,
                            internal::ScanLayout(file.get(), path, &result.warnings));
  if (options.scan_values) {
    ROBOLOOP_RETURN_IF_ERROR(internal::ScanValues(file.get(), path, result.layout,
                                                  options.nan_policy, &result.warnings));
    ROBOLOOP_RETURN_IF_ERROR(ReadNonFloatFeatures(file.get(), path, result.layout));
    ROBOLOOP_RETURN_IF_ERROR(internal::CheckStoredStats(file.get(), path, result.layout));
  }
  return result;
}

}  // namespace roboloop::data
