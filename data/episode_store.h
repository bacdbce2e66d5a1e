// In-memory episode store: selected features of all demos (or of one split) of one file, or of
// the files of a dataset set, loaded into one contiguous buffer per feature, episodes back to
// back, for training and relabelling.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "common/uninitialized_bytes.h"
#include "data/dataset_reader.h"
#include "data/spec.h"

namespace roboloop::data {

// Loaded once by one thread (HDF5 1.10 serialises reads under one lock, so reading from many
// threads buys nothing); immutable afterwards, so any number of threads may read it.
class EpisodeStore {
 public:
  struct Options {
    std::string path;                   // the HDF5 file
    // More files whose selected demos follow those of `path`, in this order (a dataset set,
    // docs/training.md): the same features and split are selected in each, and each selected
    // feature must have the dtype and step shape it has in `path`.
    std::vector<std::string> more_paths;
    std::vector<std::string> features;  // features to load, e.g. {"actions", "obs/qpos"}; empty = all
    std::string split;                  // mask name (e.g. "train"); empty = every demo
    // Load exactly these demos, in this order, instead of a split (the two exclude each other);
    // their values are then checked only in the loaded features (what streaming reads).
    std::vector<std::string> demos;
    int64_t memory_limit_bytes = 0;     // refuse to load more; 0 = half of physical memory
    ValidationOptions validation;       // checks of the file; values are checked as they load
    // Hold every loaded feature as float32: features stored in another numeric dtype (robomimic
    // files often store float64 observations) are converted after the value checks and listed
    // in conversions(); a finite float64 value beyond the float32 range is an OutOfRange error
    // naming the file, the dataset and the step. Image keys (IsImageKey) stay uint8.
    bool as_float32 = false;

    // These options for one file of the set: `file` as the path, no more_paths.
    Options ForFile(const std::string& file) const {
      Options one = *this;
      one.path = file;
      one.more_paths.clear();
      return one;
    }
  };

  // A feature Options::as_float32 converted.
  struct Conversion {
    std::string feature;  // e.g. "obs/object"
    DType stored;         // its dtype in the file
  };

  // One loaded feature: rows of all selected episodes, concatenated in episode order.
  struct Feature {
    FeatureSpec spec;            // name, dtype, per-step shape
    int64_t row_bytes = 0;       // bytes of one step
    UninitializedBytes bytes;    // total_steps() * row_bytes bytes

    // Typed view of all rows; the dtype must be DTypeOf<T>() (checked).
    template <typename T>
    absl::Span<const T> Values() const {
      ROBOLOOP_CHECK_MSG(spec.dtype == DTypeOf<T>(), spec.name, " is ", DTypeName(spec.dtype));
      return absl::Span<const T>(reinterpret_cast<const T*>(bytes.data()),
                                 bytes.size() / sizeof(T));
    }

    // Typed view of row `row` (0 <= row < total_steps(), e.g. episode_offset(e) + step): one
    // frame of an image key is Step<uint8_t>(row), H * W * 3 bytes. Dtype checked as Values.
    template <typename T>
    absl::Span<const T> Step(int64_t row) const {
      return Values<T>().subspan(row * (row_bytes / static_cast<int64_t>(sizeof(T))),
                                 row_bytes / sizeof(T));
    }
  };

  // Bytes Load would allocate for `options` (checks the features and split exist).
  static absl::StatusOr<int64_t> EstimateBytes(const DatasetLayout& layout,
                                               const Options& options);

  // Names of the demos `options` selects (Options::demos, else the split's, else every demo),
  // in load order. Errors: an unknown split (listing the known ones) or demo, or both given.
  static absl::StatusOr<std::vector<std::string>> SelectedDemos(const DatasetLayout& layout,
                                                                const Options& options);

  // Opens, validates and loads the file (then each of more_paths), reading it once: the structure is checked first
  // and the load fails before allocating when the estimate exceeds the memory limit; NaN/Inf
  // values are then looked for in the loaded buffers (features or demos not loaded are read
  // for the check), findings reported in the same order and words as ValidateFile.
  static absl::StatusOr<std::unique_ptr<EpisodeStore>> Load(const Options& options);

  // Load from a reader already open on options.path (its validation already done), so that
  // many small loads (one episode each, see episode_cache.h) do not re-read the file's
  // structure. Same checks and errors as Load; options.more_paths must be empty.
  static absl::StatusOr<std::unique_ptr<EpisodeStore>> LoadFromReader(const DatasetReader& reader,
                                                                      const Options& options);

  // The file the store was loaded from (of a set: its first file).
  const std::string& path() const { return paths_.front(); }
  // The file episode `episode` was loaded from.
  const std::string& episode_path(int64_t episode) const { return paths_[files_[episode]]; }
  // Features converted to float32 by Options::as_float32, in name order.
  const std::vector<Conversion>& conversions() const { return conversions_; }
  // Number of loaded episodes.
  int64_t num_episodes() const { return static_cast<int64_t>(demos_.size()); }
  // Steps over all loaded episodes.
  int64_t total_steps() const { return total_steps_; }
  // Demo name of episode `episode` (0-based, in file order; of a set, the files in order).
  const std::string& demo_name(int64_t episode) const { return demos_[episode]; }
  // Row of the first step of `episode` in every feature buffer.
  int64_t episode_offset(int64_t episode) const { return offsets_[episode]; }
  // Steps of `episode`.
  int64_t episode_length(int64_t episode) const { return lengths_[episode]; }
  // The loaded feature `name`, or NotFound listing the loaded ones.
  absl::StatusOr<const Feature*> feature(const std::string& name) const;
  // Bytes held by all feature buffers.
  int64_t memory_bytes() const;
  // Non-fatal findings of validation (missing attributes; NaN under NanPolicy::kLenient).
  const std::vector<ValidationIssue>& warnings() const { return warnings_; }

 private:
  EpisodeStore() = default;
  // Load from readers open on options.path, then on each of options.more_paths, in order.
  static absl::StatusOr<std::unique_ptr<EpisodeStore>> LoadFromReaders(
      const std::vector<const DatasetReader*>& readers, const Options& options);
  // Loads the selected demos of each reader, in order (readers[i] is file i of paths_).
  absl::Status LoadFrom(const std::vector<const DatasetReader*>& readers, const Options& options);
  // The values of file `file` (read through `reader`); with `loaded_only`, only the loaded
  // features of its loaded demos are checked.
  absl::Status CheckValues(const DatasetReader& reader, int file, NanPolicy policy, bool loaded_only);
  absl::Status ConvertToFloat32();
  // OutOfRange naming the file, demo, feature and step of the first finite float64 value of
  // `feature` whose float32 conversion in `converted` overflowed.
  absl::Status CheckFloat32Range(const Feature& feature, const float* converted) const;
  absl::StatusOr<std::optional<ValidationIssue>> FindValueIssue(const DatasetReader& reader,
                                                                const std::string& demo,
                                                                int64_t episode,
                                                                const FeatureSpec& spec) const;

  std::vector<std::string> paths_;
  std::vector<int> files_;  // index in paths_ of each episode's file
  std::vector<std::string> demos_;
  std::vector<int64_t> offsets_;
  std::vector<int64_t> lengths_;
  int64_t total_steps_ = 0;
  std::map<std::string, Feature> features_;
  std::vector<ValidationIssue> warnings_;
  std::vector<Conversion> conversions_;
};

}  // namespace roboloop::data
