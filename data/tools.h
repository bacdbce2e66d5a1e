// Library side of the dataset tools (`roboloop data info|validate|stats|merge|split|import`)
// and of `roboloop data register`: everything except the upload itself.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/cancellation.h"
#include "nlohmann/json.hpp"
#include "data/stats.h"
#include "data/storage_options.h"
#include "data/validation.h"

namespace roboloop::data {

// What `data info` shows about a file.
struct DatasetInfo {
  std::string path;                       // the file
  int64_t file_bytes = 0;                 // its size
  DatasetLayout layout;                   // demos, lengths, spec, masks, lineage, env_args
  std::optional<DatasetStats> stats;      // stored statistics, if any
  std::vector<ValidationIssue> warnings;  // non-fatal validation findings
};

// Validates `path` structurally (values are not scanned) and gathers its info.
absl::StatusOr<DatasetInfo> GetInfo(const std::string& path);

// The info as JSON: path, file_bytes, num_demos, total_steps, demos [{name, num_samples}],
// features, env_args, splits {name: [demo, ...]}, lineage, stats (null if absent), warnings.
nlohmann::json InfoToJson(const DatasetInfo& info);

// The info as an aligned, human-readable table.
std::string InfoToTable(const DatasetInfo& info);

// Inputs of a merge.
struct MergeOptions {
  std::vector<std::string> inputs;  // files to merge, in order (at least one)
  std::string output;               // file to write
  bool overwrite = false;           // replace an existing output file
  StorageOptions storage;           // chunking and compression of the output
  bool compute_stats = true;        // compute and store statistics of the merged file
  // Once cancelled (may be null), the merge stops between demos (or statistics features) with Cancelled.
  const common::CancellationToken* cancel = nullptr;
};

// Writes every demo of every input, in order, to `output` as demo_0, demo_1, ...; all inputs
// must have the same spec and the same task (env_args env_name; InvalidArgument naming both files
// and tasks otherwise); env_args are taken from the first. Masks are carried over (demo
// names renamed) when every input has the same split names, otherwise none are written.
// The lineage lists each input with its sha256. The file, statistics included, is put in place only once complete:
// on error or cancellation no file is left and an earlier `output` stays as it was. An error writing names
// `output` ("writing <output>: " before the writer's error about its temporary file), one reading names the input.
// Returns the merged file's layout.
absl::StatusOr<DatasetLayout> MergeDatasets(const MergeOptions& options);

// The frame rate a LeRobot import recorded in a file's `env_args_json` (env_args lerobot.fps, a positive
// number); InvalidArgument naming `path` and saying to pass --fps where it records none.
absl::StatusOr<double> RecordedFramesPerSecond(const std::string& path, const std::string& env_args_json);

// A split of a dataset's demos into training and held-out ones.
struct SplitAssignment {
  std::vector<std::string> train;  // demos for training
  std::vector<std::string> valid;  // demos held out
};

// Assigns `round(valid_fraction * n)` of `demos` to valid and the rest to train, chosen by a
// Fisher-Yates shuffle driven by std::mt19937_64(seed) (the same on every platform). Both
// lists keep the order of `demos`. valid_fraction must lie in [0, 1), and the split it gives must
// leave at least one training demo and, when valid_fraction > 0, at least one valid demo
// (InvalidArgument naming both counts otherwise).
absl::StatusOr<SplitAssignment> AssignSplit(const std::vector<std::string>& demos,
                                            double valid_fraction, uint64_t seed);

// Writes mask/train and mask/valid into the file at `path` (replacing them; other masks stay).
absl::StatusOr<SplitAssignment> SplitDataset(const std::string& path, double valid_fraction,
                                             uint64_t seed);

// What `data register` needs besides the file's bytes.
struct RegistrationMetadata {
  nlohmann::json metadata;              // format, counts, env_args, features, stats, splits, lineage
  std::vector<std::string> parent_ids;  // sha256 of parent datasets (registry ids)
  std::string upload_path;              // the file to upload: the input, or the scratch copy with statistics
};

// Validates `path` strictly (its stored statistics included) and returns the registry metadata.
// `path` is never modified: a file without statistics is copied to `scratch_path` (replaced if it
// exists), which gets them and becomes upload_path, so that the registered blob carries them. The
// caller removes `scratch_path` afterwards. Errors: validation's, and a failed copy naming both paths.
absl::StatusOr<RegistrationMetadata> PrepareRegistration(const std::string& path, const std::string& scratch_path,
                                                         const StatsOptions& options);

}  // namespace roboloop::data
