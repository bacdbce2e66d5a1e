#include "data/episode_store.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <unordered_map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/status.h"
#include "data/layout_scan.h"

namespace roboloop::data {
namespace {

int64_t HalfOfPhysicalMemory() {
  return static_cast<int64_t>(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGE_SIZE) / 2;
}

int64_t RowBytes(const FeatureSpec& feature) {
  int64_t bytes = DTypeSize(feature.dtype);
  for (int64_t dim : feature.step_shape) bytes *= dim;
  return bytes;
}

absl::StatusOr<std::vector<const DemoLayout*>> SelectDemos(const DatasetLayout& layout,
                                                           const EpisodeStore::Options& options) {
  std::vector<const DemoLayout*> demos;
  if (!options.demos.empty()) {
    if (!options.split.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          options.path, ": a split ('", options.split, "') and a list of demos exclude each other"));
    }
    for (const std::string& name : options.demos) {
      const DemoLayout* demo = layout.FindDemo(name);
      if (demo == nullptr) {
        return absl::NotFoundError(absl::StrCat(options.path, ": no demo named '", name, "'"));
      }
      demos.push_back(demo);
    }
    return demos;
  }
  if (options.split.empty()) {
    for (const DemoLayout& demo : layout.demos) demos.push_back(&demo);
    return demos;
  }
  auto mask = layout.masks.find(options.split);
  if (mask == layout.masks.end()) {
    std::vector<std::string> known;
    for (const auto& [name, unused] : layout.masks) known.push_back(name);
    const std::string masks = known.empty() ? "the file has no masks; `roboloop data split FILE --valid 0.1` writes "
                                              "mask/train and mask/valid"
                                            : absl::StrCat("known: ", absl::StrJoin(known, ", "));
    return absl::NotFoundError(absl::StrCat(options.path, ": no split '", options.split, "' (", masks, ")"));
  }
  for (const std::string& name : mask->second) demos.push_back(layout.FindDemo(name));
  return demos;
}

absl::StatusOr<std::vector<FeatureSpec>> SelectFeatures(const DatasetLayout& layout,
                                                        const EpisodeStore::Options& options) {
  if (options.features.empty()) return layout.spec;
  std::vector<FeatureSpec> features;
  for (const std::string& name : options.features) {
    const FeatureSpec* feature = FindFeature(layout.spec, name);
    if (feature == nullptr) {
      std::vector<std::string> known;
      for (const FeatureSpec& spec : layout.spec) known.push_back(spec.name);
      return absl::NotFoundError(absl::StrCat(options.path, ": no feature '", name,
                                              "' (known: ", absl::StrJoin(known, ", "), ")"));
    }
    features.push_back(*feature);
  }
  return features;
}

}  // namespace

absl::StatusOr<int64_t> EpisodeStore::EstimateBytes(const DatasetLayout& layout,
                                                    const Options& options) {
  ROBOLOOP_ASSIGN_OR_RETURN(std::vector<const DemoLayout*> demos, SelectDemos(layout, options));
  ROBOLOOP_ASSIGN_OR_RETURN(std::vector<FeatureSpec> features, SelectFeatures(layout, options));
  int64_t steps = 0;
  for (const DemoLayout* demo : demos) steps += demo->num_samples;
  int64_t bytes = 0;
  for (const FeatureSpec& feature : features) bytes += steps * RowBytes(feature);
  return bytes;
}

absl::StatusOr<std::vector<std::string>> EpisodeStore::SelectedDemos(const DatasetLayout& layout,
                                                                     const Options& options) {
  ROBOLOOP_ASSIGN_OR_RETURN(std::vector<const DemoLayout*> demos, SelectDemos(layout, options));
  std::vector<std::string> names;
  for (const DemoLayout* demo : demos) names.push_back(demo->name);
  return names;
}

absl::StatusOr<std::unique_ptr<EpisodeStore>> EpisodeStore::Load(const Options& options) {
  std::vector<std::unique_ptr<DatasetReader>> readers;
  std::vector<const DatasetReader*> views;
  std::vector<std::string> paths = {options.path};
  paths.insert(paths.end(), options.more_paths.begin(), options.more_paths.end());
  for (const std::string& path : paths) {
    DatasetReader::Options reader_options;
    reader_options.path = path;
    reader_options.validation = options.validation;
    reader_options.validation.scan_values = false;  // done by CheckValues on the loaded values
    ROBOLOOP_ASSIGN_OR_RETURN(std::unique_ptr<DatasetReader> reader, DatasetReader::Open(reader_options));
    views.push_back(reader.get());
    readers.push_back(std::move(reader));
  }
  return LoadFromReaders(views, options);
}

absl::StatusOr<std::unique_ptr<EpisodeStore>> EpisodeStore::LoadFromReader(
    const DatasetReader& reader, const Options& options) {
  ROBOLOOP_CHECK_MSG(options.more_paths.empty(), "LoadFromReader reads one file");
  return LoadFromReaders({&reader}, options);
}

absl::StatusOr<std::unique_ptr<EpisodeStore>> EpisodeStore::LoadFromReaders(
    const std::vector<const DatasetReader*>& readers, const Options& options) {
  if (readers.size() > 1 && !options.demos.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(options.path, ": a list of demos selects from one file, not from a dataset set"));
  }
  int64_t needed = 0;
  for (const DatasetReader* reader : readers) {
    ROBOLOOP_ASSIGN_OR_RETURN(int64_t bytes, EstimateBytes(reader->layout(), options.ForFile(reader->path())));
    needed += bytes;
  }
  const int64_t limit =
      options.memory_limit_bytes > 0 ? options.memory_limit_bytes : HalfOfPhysicalMemory();
  if (needed > limit) {
    return absl::ResourceExhaustedError(absl::StrCat(
        options.path, readers.size() > 1 ? " and the other files of its set" : "", ": loading needs ", needed,
        " bytes, over the memory limit of ", limit, " bytes (EpisodeStore::Options::memory_limit_bytes)"));
  }
  std::unique_ptr<EpisodeStore> store(new EpisodeStore());
  for (const DatasetReader* reader : readers) {
    store->paths_.push_back(reader->path());
    store->warnings_.insert(store->warnings_.end(), reader->warnings().begin(), reader->warnings().end());
  }
  ROBOLOOP_RETURN_IF_ERROR(store->LoadFrom(readers, options));
  if (options.validation.scan_values) {
    for (size_t file = 0; file < readers.size(); ++file) {
      ROBOLOOP_RETURN_IF_ERROR(store->CheckValues(*readers[file], static_cast<int>(file),
                                                  options.validation.nan_policy,
                                                  /*loaded_only=*/!options.demos.empty()));
    }
  }
  if (options.as_float32) ROBOLOOP_RETURN_IF_ERROR(store->ConvertToFloat32());
  return store;
}

absl::Status EpisodeStore::LoadFrom(const std::vector<const DatasetReader*>& readers, const Options& options) {
  const DatasetReader& first = *readers.front();
  ROBOLOOP_ASSIGN_OR_RETURN(std::vector<FeatureSpec> features,
                            SelectFeatures(first.layout(), options.ForFile(first.path())));
  std::vector<std::string> names;
  for (const FeatureSpec& spec : features) names.push_back(spec.name);
  for (size_t file = 0; file < readers.size(); ++file) {
    const DatasetReader& reader = *readers[file];
    // Every feature of the first file when none are named: the others must have the same.
    ROBOLOOP_RETURN_IF_ERROR(CheckSameFeatures(first.path(), first.layout().spec, reader.path(),
                                               reader.layout().spec, options.features));
    ROBOLOOP_ASSIGN_OR_RETURN(std::vector<const DemoLayout*> demos,
                              SelectDemos(reader.layout(), options.ForFile(reader.path())));
    for (const DemoLayout* demo : demos) {
      files_.push_back(static_cast<int>(file));
      demos_.push_back(demo->name);
      offsets_.push_back(total_steps_);
      lengths_.push_back(demo->num_samples);
      total_steps_ += demo->num_samples;
    }
  }
  for (const FeatureSpec& spec : features) {
    Feature& feature = features_[spec.name];
    feature.spec = spec;
    feature.row_bytes = RowBytes(spec);
    feature.bytes.resize(total_steps_ * feature.row_bytes);
    for (size_t i = 0; i < demos_.size(); ++i) {
      ROBOLOOP_RETURN_IF_ERROR(readers[files_[i]]->ReadFeatureInto(
          demos_[i], spec.name, feature.bytes.data() + offsets_[i] * feature.row_bytes));
    }
  }
  return absl::OkStatus();
}

absl::Status EpisodeStore::ConvertToFloat32() {
  for (auto& [name, feature] : features_) {
    if (feature.spec.dtype == DType::kFloat32 || IsImageKey(name)) continue;
    const int64_t count = static_cast<int64_t>(feature.bytes.size()) / DTypeSize(feature.spec.dtype);
    UninitializedBytes converted(count * sizeof(float));
    float* values = reinterpret_cast<float*>(converted.data());
    data::ConvertToFloat32(feature.spec.dtype, feature.bytes.data(), count, values);
    if (feature.spec.dtype == DType::kFloat64) {
      ROBOLOOP_RETURN_IF_ERROR(CheckFloat32Range(feature, values));
    }
    conversions_.push_back({name, feature.spec.dtype});
    feature.spec.dtype = DType::kFloat32;
    feature.row_bytes = RowBytes(feature.spec);
    feature.bytes = std::move(converted);
  }
  return absl::OkStatus();
}

absl::Status EpisodeStore::CheckFloat32Range(const Feature& feature, const float* converted) const {
  const absl::Span<const double> stored = feature.Values<double>();
  const int64_t per_step = feature.row_bytes / DTypeSize(DType::kFloat64);
  for (size_t i = 0; i < stored.size(); ++i) {
    if (!std::isinf(converted[i]) || !std::isfinite(stored[i])) continue;
    const int64_t row = static_cast<int64_t>(i) / per_step;
    const int64_t episode = std::upper_bound(offsets_.begin(), offsets_.end(), row) - offsets_.begin() - 1;
    return absl::OutOfRangeError(absl::StrCat(episode_path(episode), ": ", FeaturePath(demos_[episode], feature.spec.name), ": ",
                                              absl::StrFormat("%g", stored[i]), " at step ",
                                              row - offsets_[episode], " is beyond the float32 range"));
  }
  return absl::OkStatus();
}

absl::Status EpisodeStore::CheckValues(const DatasetReader& reader, int file, NanPolicy policy,
                                       bool loaded_only) {
  // Every demo of the file in file order (demos not loaded are read for the check), or only
  // the loaded ones in load order.
  std::vector<std::pair<std::string, int64_t>> checked;
  if (loaded_only) {
    for (size_t i = 0; i < demos_.size(); ++i) {
      if (files_[i] == file) checked.emplace_back(demos_[i], static_cast<int64_t>(i));
    }
  } else {
    std::unordered_map<std::string, int64_t> episode_of;
    for (size_t i = 0; i < demos_.size(); ++i) {
      if (files_[i] == file) episode_of[demos_[i]] = static_cast<int64_t>(i);
    }
    for (const DemoLayout& demo : reader.layout().demos) {
      const auto loaded = episode_of.find(demo.name);
      checked.emplace_back(demo.name, loaded == episode_of.end() ? -1 : loaded->second);
    }
  }
  for (const auto& [demo, episode] : checked) {
    for (const FeatureSpec& spec : reader.layout().spec) {
      if (!IsFloating(spec.dtype)) continue;
      if (loaded_only && features_.count(spec.name) == 0) continue;
      ROBOLOOP_ASSIGN_OR_RETURN(std::optional<ValidationIssue> issue,
                                FindValueIssue(reader, demo, episode, spec));
      if (!issue.has_value()) continue;
      ROBOLOOP_RETURN_IF_ERROR(
          internal::ApplyNanPolicy(reader.path(), policy, *std::move(issue), &warnings_));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::optional<ValidationIssue>> EpisodeStore::FindValueIssue(
    const DatasetReader& reader, const std::string& demo, int64_t episode,
    const FeatureSpec& spec) const {
  const std::string path = FeaturePath(demo, spec.name);
  const auto loaded = features_.find(spec.name);
  if (episode >= 0 && loaded != features_.end()) {
    const Feature& feature = loaded->second;
    const int64_t per_step = feature.row_bytes / DTypeSize(spec.dtype);
    return internal::FindNonFinite(spec.dtype,
                                   feature.bytes.data() + offsets_[episode] * feature.row_bytes,
                                   lengths_[episode] * per_step, per_step, path);
  }
  ROBOLOOP_ASSIGN_OR_RETURN(Array array, reader.ReadFeature(demo, spec.name));
  return internal::FindNonFinite(array.dtype, array.bytes.data(), array.NumElements(),
                                 array.ElementsPerStep(), path);
}

absl::StatusOr<const EpisodeStore::Feature*> EpisodeStore::feature(const std::string& name) const {
  auto found = features_.find(name);
  if (found != features_.end()) return &found->second;
  std::vector<std::string> known;
  for (const auto& [loaded, unused] : features_) known.push_back(loaded);
  return absl::NotFoundError(absl::StrCat("feature '", name, "' is not loaded (loaded: ",
                                          absl::StrJoin(known, ", "), ")"));
}

int64_t EpisodeStore::memory_bytes() const {
  int64_t bytes = 0;
  for (const auto& [name, feature] : features_) bytes += static_cast<int64_t>(feature.bytes.size());
  return bytes;
}

}  // namespace roboloop::data
