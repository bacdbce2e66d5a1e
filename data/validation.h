// Validation of robomimic-layout files: structure, lengths, specs across demos, masks and
// non-finite values. Every error names the file and the path inside it, e.g.
// `f.hdf5: data/demo_17/obs/qpos: length 199, expected 200 (actions)`. Image keys (IsImageKey)
// must be uint8 [T, H, W, 3] with 1 <= H, W <= kMaxImageSide and one frame per step of actions:
// `f.hdf5: data/demo_2/obs/agentview_image: 9 frames, expected 10 (one per step of actions)`.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "data/lineage.h"
#include "data/spec.h"

namespace roboloop::data {

// What to do with NaN/Inf values in float features.
enum class NanPolicy {
  kStrict,   // a non-finite value is an error
  kLenient,  // non-finite values are reported as warnings
};

// How a file is checked.
struct ValidationOptions {
  NanPolicy nan_policy = NanPolicy::kStrict;  // handling of NaN/Inf values
  // Read every float feature to look for NaN/Inf (reads the data once), and check the stored
  // `stats` group: values finite, one per element of its feature, std >= 0, min <= max.
  // ValidateFile also reads every other feature (integers, camera frames), so that a chunk that
  // does not decode is an error naming the file, dataset and frame; DatasetReader::Open does not.
  bool scan_values = true;
};

// A finding: a path inside the file and what is wrong there.
struct ValidationIssue {
  std::string path;     // e.g. "data/demo_3/obs/qpos"
  std::string message;  // e.g. "2 NaN/Inf values (first at step 5)"

  // "path: message".
  std::string ToString() const { return path + ": " + message; }
};

// One demo group as found in the file.
struct DemoLayout {
  std::string name;         // "demo_<index>"
  int64_t index = 0;        // the number in the name
  int64_t num_samples = 0;  // steps (length of actions and every other feature)
};

// The structure of a valid file.
struct DatasetLayout {
  std::vector<DemoLayout> demos;                              // sorted by index
  DatasetSpec spec;                                           // identical in every demo
  int64_t total_steps = 0;                                    // sum of num_samples
  std::string env_args_json = "{}";                           // `data` attribute env_args
  std::map<std::string, std::vector<std::string>> masks;      // split -> demo names
  Lineage lineage;                                            // "unknown" operation if absent
  bool has_stats = false;                                     // a `stats` group exists

  // The demo named `name`, or nullptr.
  const DemoLayout* FindDemo(const std::string& name) const;
};

// The outcome of validating a file that has no errors.
struct ValidationResult {
  DatasetLayout layout;                   // the file's structure
  std::vector<ValidationIssue> warnings;  // non-fatal findings (lenient NaN, missing attributes)
};

// Validates the file at `path`: the first error is returned as a status naming the file and
// the path inside it; otherwise the layout and warnings.
absl::StatusOr<ValidationResult> ValidateFile(const std::string& path,
                                              const ValidationOptions& options);

}  // namespace roboloop::data
