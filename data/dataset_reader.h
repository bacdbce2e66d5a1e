// Reader of robomimic-layout HDF5 datasets; the file is validated when opened.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "data/array.h"
#include "data/validation.h"

namespace roboloop::data {

namespace h5 {
class Handle;
}  // namespace h5

// Opens a dataset read-only, validates it (validation.h) and reads demos feature by feature.
// HDF5 here serialises every call under one global lock, so a reader is meant for one thread;
// it is not synchronised itself. Load what training needs with EpisodeStore instead of
// reading from many threads.
class DatasetReader {
 public:
  struct Options {
    std::string path;               // the HDF5 file
    ValidationOptions validation;   // checks run by Open
  };

  // Opens and validates `options.path`; the first validation error is returned.
  static absl::StatusOr<std::unique_ptr<DatasetReader>> Open(const Options& options);
  ~DatasetReader();
  DatasetReader(const DatasetReader&) = delete;
  DatasetReader& operator=(const DatasetReader&) = delete;

  // The file path given to Open.
  const std::string& path() const { return path_; }
  // Demos, spec, masks, lineage of the file.
  const DatasetLayout& layout() const { return layout_; }
  // Non-fatal findings of validation (e.g. NaN under NanPolicy::kLenient).
  const std::vector<ValidationIssue>& warnings() const { return warnings_; }

  // Reads feature `feature` (e.g. "obs/qpos") of demo `demo` in its stored dtype.
  absl::StatusOr<Array> ReadFeature(const std::string& demo, const std::string& feature) const;

  // Reads feature `feature` of `demo` into `out`, which must hold num_samples rows.
  absl::Status ReadFeatureInto(const std::string& demo, const std::string& feature,
                               void* out) const;

  // Reads steps [first, first + count) of feature `feature` of `demo` in its stored dtype into
  // `out`, which must hold `count` rows (e.g. a block of frames of an image key). Steps beyond
  // the demo are OutOfRange naming the file, the dataset and the demo's length.
  absl::Status ReadFeatureRows(const std::string& demo, const std::string& feature, int64_t first,
                               int64_t count, void* out) const;

  // Reads every feature of `demo`.
  absl::StatusOr<Episode> ReadEpisode(const std::string& demo) const;

 private:
  DatasetReader(std::string path, std::unique_ptr<h5::Handle> file, DatasetLayout layout,
                std::vector<ValidationIssue> warnings);
  absl::Status CheckKnown(const std::string& demo, const std::string& feature) const;

  std::string path_;
  std::unique_ptr<h5::Handle> file_;
  DatasetLayout layout_;
  std::vector<ValidationIssue> warnings_;
};

}  // namespace roboloop::data
