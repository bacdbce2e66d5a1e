// Many files as one dataset (issue 28, req 4): the dataset a training run names, expanded into
// its files, and the registry's record of a set ("dataset set", docs/manifest.md). Torch-free.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "registry/registry_client.h"
#include "roboloop/v1/registry.pb.h"
#include "roboloop/v1/train.pb.h"
#include "train/checkpoint_io.h"

namespace roboloop::train {

// The files of a run's dataset, in episode order, and the id its checkpoints record.
struct ResolvedDatasetSet {
  std::vector<ResolvedDataset> members;  // one or more, in the order given (folders and globs sorted)
  // The dataset id checkpoints record: the one member's id, or, for several, the id of the
  // set's record (DatasetSetBlob of the member ids; registered by ResolveDatasetSet).
  std::string id;

  // The members' local files, in order.
  std::vector<std::string> paths() const;
  // For messages: the first file, and how many more follow it.
  std::string Describe() const;
};

// True when `dataset`, an entry of TrainConfig.dataset or .datasets, names files (it holds a '/'
// or a glob character, or ends in .hdf5 or .h5) rather than a registry reference. The one rule
// of every dataset entry: a file without such a mark is named with a path, e.g. ./demos.
bool DatasetEntryIsPath(const std::string& dataset);

// The HDF5 files a path entry (DatasetEntryIsPath) names: the file, a folder's *.hdf5 files or a
// glob's matches, in name order. InvalidArgument for a folder without *.hdf5 files or a glob
// that matches nothing; a plain path is returned whether or not it exists.
absl::StatusOr<std::vector<std::string>> DatasetPathFiles(const std::string& entry);

// The files on this machine `config`'s dataset entries name (DatasetPathFiles of each path
// entry; entries naming nothing here are skipped), for the pipeline's cache key.
std::vector<std::string> LocalDatasetFiles(const v1::TrainConfig& config);

// Replaces each dataset entry of `config` (dataset when set, then every datasets entry) by what
// `map` makes of it; the first error is returned and leaves the remaining entries as they were.
absl::Status MapDatasetEntries(v1::TrainConfig* config,
                               const std::function<absl::StatusOr<std::string>(const std::string&)>& map);

// Replaces each dataset entry of `config` that names HDF5 files present here (DatasetEntryIsPath:
// a file, a folder of *.hdf5 files or a glob matching some; a LeRobot folder, which the train
// worker imports, is left as it is) by their registry id, registering the files (and, for
// several, their set) first as ResolveDatasetSet does. A pipeline runner sends these ids, so that
// a train service on another machine, or one confined to its dataset folder, reads the files
// from the registry. Other entries stay as they are. Errors name the entry.
absl::Status RegisterLocalDatasets(registry::RegistryClient& registry, const std::string& cache_dir,
                                   v1::TrainConfig* config);

// The content of a set's registry blob, whose sha256 is the set's id:
// {"dataset_set":1,"members":[id, ...]} (compact, keys sorted).
std::string DatasetSetBlob(const std::vector<std::string>& member_ids);

// True when `dataset` is the record of a dataset set (its metadata says "format":"dataset_set").
bool IsDatasetSet(const v1::Dataset& dataset);

// Expands `refs` (TrainConfig's dataset, then its datasets) into the set's members. A ref that
// is a path (DatasetEntryIsPath) is an HDF5 file, a folder (its *.hdf5 files in name order) or a
// glob pattern (its matches in name order), resolved by ResolveDatasetFile. Any other ref is a
// registry dataset reference, or the reference of a registered dataset set (its members in the
// set's order), resolved by ResolveRegistryDataset: it is never looked for as a file, so a
// served train worker reads no file a bare name happens to match. With `register`,
// each file and, for several members, the set itself are registered when missing: the set as
// dataset "<first member's name>-set" whose parents are the members. Errors name the ref: none
// given, a folder without *.hdf5 files, a glob that matches nothing, an unknown reference, a
// set blob that does not parse. Each member file is passed to `screen` (when set) before it is
// registered or read.
absl::StatusOr<ResolvedDatasetSet> ResolveDatasetSet(registry::RegistryClient& registry,
                                                     const std::vector<std::string>& refs,
                                                     const std::string& cache_dir, bool register_files,
                                                     const data::FileScreen& screen = nullptr);

// Registers each member of `set` not yet in the registry (RegisterDatasetFile) and, for several
// members, the set's record as ResolveDatasetSet does with `register_files`. Training calls it once
// the data has opened and been checked, so that a set it refuses is not registered.
absl::Status RegisterDatasetSet(registry::RegistryClient& registry, const ResolvedDatasetSet& set,
                                const std::string& cache_dir);

}  // namespace roboloop::train
