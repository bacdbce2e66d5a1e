#include "data/dataset_reader.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "data/hdf5_io.h"
#include "data/layout_scan.h"

namespace roboloop::data {

DatasetReader::DatasetReader(std::string path, std::unique_ptr<h5::Handle> file,
                             DatasetLayout layout, std::vector<ValidationIssue> warnings)
    : path_(std::move(path)),
      file_(std::move(file)),
      layout_(std::move(layout)),
      warnings_(std::move(warnings)) {}

DatasetReader::~DatasetReader() = default;

absl::StatusOr<std::unique_ptr<DatasetReader>> DatasetReader::Open(const Options& options) {
  ROBOLOOP_ASSIGN_OR_RETURN(h5::Handle file, h5::OpenFile(options.path, /*writable=*/false));
  std::vector<ValidationIssue> warnings;
  ROBOLOOP_ASSIGN_OR_RETURN(DatasetLayout layout,
                            internal::ScanLayout(file.get(), options.path, &warnings));
  if (options.validation.scan_values) {
    ROBOLOOP_RETURN_IF_ERROR(internal::ScanValues(file.get(), options.path, layout,
                                                  options.validation.nan_policy, &warnings));
  }
  return std::unique_ptr<DatasetReader>(
      new DatasetReader(options.path, std::make_unique<h5::Handle>(std::move(file)),
                        std::move(layout), std::move(warnings)));
}

absl::Status DatasetReader::CheckKnown(const std::string& demo, const std::string& feature) const {
  if (layout_.FindDemo(demo) == nullptr) {
    return absl::NotFoundError(absl::StrCat(path_, ": no demo named '", demo, "'"));
  }
  if (FindFeature(layout_.spec, feature) == nullptr) {
    return absl::NotFoundError(
        absl::StrCat(path_, ": ", FeaturePath(demo, feature), ": no such feature"));
  }
  return absl::OkStatus();
}

absl::StatusOr<Array> DatasetReader::ReadFeature(const std::string& demo,
                                                 const std::string& feature) const {
  ROBOLOOP_RETURN_IF_ERROR(CheckKnown(demo, feature));
  const std::string path = FeaturePath(demo, feature);
  ROBOLOOP_ASSIGN_OR_RETURN(h5::Handle dataset, h5::OpenDataset(file_->get(), path, path));
  absl::StatusOr<Array> array = h5::ReadArray(dataset.get(), path);
  if (!array.ok()) return Annotate(array.status(), path_);
  return array;
}

absl::Status DatasetReader::ReadFeatureInto(const std::string& demo, const std::string& feature,
                                            void* out) const {
  ROBOLOOP_RETURN_IF_ERROR(CheckKnown(demo, feature));
  return ReadFeatureRows(demo, feature, 0, layout_.FindDemo(demo)->num_samples, out);
}

absl::Status DatasetReader::ReadFeatureRows(const std::string& demo, const std::string& feature,
                                            int64_t first, int64_t count, void* out) const {
  ROBOLOOP_RETURN_IF_ERROR(CheckKnown(demo, feature));
  const std::string path = FeaturePath(demo, feature);
  const int64_t steps = layout_.FindDemo(demo)->num_samples;
  if (first < 0 || count < 0 || first + count > steps) {
    return absl::OutOfRangeError(absl::StrCat(path_, ": ", path, ": steps [", first, ", ", first + count,
                                              ") beyond its ", steps, " steps"));
  }
  ROBOLOOP_ASSIGN_OR_RETURN(h5::Handle dataset, h5::OpenDataset(file_->get(), path, path));
  const FeatureSpec& spec = *FindFeature(layout_.spec, feature);
  return Annotate(h5::ReadRows(dataset.get(), spec.dtype, first, count, out, path), path_);
}

absl::StatusOr<Episode> DatasetReader::ReadEpisode(const std::string& demo) const {
  Episode episode;
  for (const FeatureSpec& feature : layout_.spec) {
    ROBOLOOP_ASSIGN_OR_RETURN(episode[feature.name], ReadFeature(demo, feature.name));
  }
  return episode;
}

}  // namespace roboloop::data
