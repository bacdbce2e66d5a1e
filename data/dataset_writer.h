// Streaming writer of robomimic-layout HDF5 datasets, one episode at a time.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "data/array.h"
#include "data/lineage.h"
#include "data/spec.h"
#include "data/storage_options.h"

namespace roboloop::data {

namespace h5 {
class Handle;
}  // namespace h5

// Writes `data/demo_<i>` groups (attribute `num_samples`) holding `actions`, `obs/<key>`,
// optional `next_obs/<key>`, `rewards`, `dones`, `states`, then `data` attributes `total` and
// `env_args`, `mask/<split>` and the lineage attribute. Only the steps of the current Append
// are held in memory. The first episode fixes the spec; later episodes must match it. An
// episode's datasets are created by its first Append, chunked to hold that block whole
// (StorageOptions bounds), so WriteEpisode stores each feature of an episode in one chunk;
// image keys (IsImageKey) must be uint8 [T, H, W, 3] and are stored one frame per chunk,
// deflated (ImageStorage()), the frames of a block compressed in parallel (data/frame_chunks.h).
// The file is written as `<path>.partial-<uuid>` (PartialPathFor) and renamed to `path` by
// Close(); a writer destroyed without Close() removes the partial file. Not thread-safe: one
// thread at a time.
// OK when the folder the dataset `output` is to be written in exists (the working folder for a
// bare name); otherwise NotFound "writing OUTPUT: folder DIR does not exist", or FailedPrecondition
// "writing OUTPUT: DIR is not a folder", for commands to check before any work.
absl::Status CheckOutputFolder(const std::string& output);

class DatasetWriter {
 public:
  struct Options {
    std::string path;                  // output file
    std::string env_args_json = "{}";  // `data` attribute env_args: a JSON object
    Lineage lineage;                   // stored in the root attribute roboloop_lineage
    StorageOptions storage;            // chunking and compression of every non-image dataset
                                       // (image keys: ImageStorage(), one frame per chunk)
    bool overwrite = false;            // replace an existing file at `path`
    int frame_threads = 0;             // threads compressing the frames of image keys (0: one per
                                       // hardware thread, fewer for small blocks); the file's bytes
                                       // are the same whatever the count (data/frame_codec.h)
    // Optional: run by Close() on the complete, closed file under its temporary name (its
    // argument) before the file is fsynced and renamed to `path`, e.g. to store its statistics, so
    // that nothing appears under `path` before this has finished. Its error fails Close() (and the
    // temporary file is removed).
    std::function<absl::Status(const std::string& temporary_file)> before_publish;
  };

  // Starts a new file; fails when `path` exists (unless overwrite), its folder does not exist
  // (CheckOutputFolder) or env_args is not a JSON object.
  static absl::StatusOr<std::unique_ptr<DatasetWriter>> Create(const Options& options);
  ~DatasetWriter();
  DatasetWriter(const DatasetWriter&) = delete;
  DatasetWriter& operator=(const DatasetWriter&) = delete;

  // Opens the next demo (demo_<num_episodes()>). Fails while another episode is open.
  absl::Status BeginEpisode();

  // Appends a block of consecutive steps to the open episode: every feature of the spec
  // (features are named like "actions", "obs/qpos"), all with the same number of rows.
  absl::Status Append(const Episode& block);

  // Closes the open episode and returns its demo name; an episode without steps is an error.
  absl::StatusOr<std::string> EndEpisode();

  // Discards the open episode (its demo group is deleted); the next one reuses its name.
  absl::Status AbortEpisode();

  // BeginEpisode + Append(episode) + EndEpisode; on error the episode is aborted.
  absl::StatusOr<std::string> WriteEpisode(const Episode& episode);

  // Records split `split` (e.g. "train") as the given demo names, written by Close().
  absl::Status SetMask(const std::string& split, const std::vector<std::string>& demos);

  // Writes the dataset attributes and masks, closes the file, runs Options::before_publish,
  // fsyncs the file and renames it into place. On error (e.g. ResourceExhausted: no space left,
  // naming the partial file) nothing appears under `path` and the partial file is removed.
  absl::Status Close();

  // The spec fixed by the first Append (empty before).
  const DatasetSpec& spec() const { return spec_; }
  // Episodes completed so far.
  int64_t num_episodes() const { return num_episodes_; }
  // Steps in completed episodes.
  int64_t total_steps() const { return total_steps_; }

 private:
  explicit DatasetWriter(const Options& options);
  absl::Status CheckBlock(const Episode& block, int64_t* rows) const;
  // Closes the partial file, runs before_publish, fsyncs and renames it into place (the last step
  // of Close).
  absl::Status Publish();
  // The storage of `feature`: ImageStorage() for image keys, else options_.storage.
  StorageOptions StorageOf(const std::string& feature) const;
  // Creates the open episode's datasets, chunked for a first block of `first_rows` rows.
  absl::Status CreateEpisodeDatasets(const Episode& first_block, int64_t first_rows);
  absl::Status WriteMasks();
  void Abandon();

  Options options_;
  std::string partial_path_;
  std::unique_ptr<h5::Handle> file_;
  std::unique_ptr<h5::Handle> demo_group_;
  std::map<std::string, std::unique_ptr<h5::Handle>> open_datasets_;
  std::map<std::string, std::vector<std::string>> masks_;
  DatasetSpec spec_;
  bool episode_open_ = false;
  int64_t episode_steps_ = 0;
  int64_t num_episodes_ = 0;
  int64_t total_steps_ = 0;
};

// Checks that `name` is a feature name of the robomimic layout: "actions", "rewards",
// "dones", "states", "obs/<key>" or "next_obs/<key>".
absl::Status CheckFeatureName(const std::string& name);

}  // namespace roboloop::data
