#include "eval/training_seeds.h"

#include <set>

#include "absl/strings/str_cat.h"
#include "common/fs.h"
#include "common/status.h"
#include "data/seed_ranges.h"
#include "data/tools.h"

namespace roboloop::eval {
namespace {

// The collect seed ranges a dataset file's env_args record (data/seed_ranges.h), labelled.
absl::StatusOr<std::vector<SeedRange>> CollectedRanges(const std::string& path, const std::string& label) {
  ROBOLOOP_ASSIGN_OR_RETURN(data::DatasetInfo info, data::GetInfo(path));
  absl::StatusOr<std::vector<data::CollectSeedRange>> recorded = data::RecordedSeedRanges(info.layout.env_args_json);
  if (!recorded.ok()) return Annotate(recorded.status(), label);
  std::vector<SeedRange> ranges;
  for (const data::CollectSeedRange& range : *recorded) {
    SeedRange labelled;
    labelled.base_seed = range.base_seed;
    labelled.start = range.first_episode;
    labelled.count = range.num_episodes;
    labelled.label = label;
    ranges.push_back(labelled);
  }
  return ranges;
}

// Adds the ranges of dataset `id` and of its parents not visited yet.
absl::Status AddDatasetRanges(registry::RegistryClient& registry, const std::string& id, const std::string& cache_dir,
                              std::set<std::string>* visited, std::vector<SeedRange>* ranges) {
  if (id.empty() || !visited->insert(id).second) return absl::OkStatus();
  absl::StatusOr<v1::Dataset> dataset = registry.GetDataset(id);
  if (!dataset.ok()) return Annotate(dataset.status(), absl::StrCat("training dataset ", id));
  const std::string label = absl::StrCat("dataset ", dataset->name(), ":v", dataset->version());
  absl::StatusOr<std::string> path = registry.CachedCopy(dataset->blob().sha256(), cache_dir, ".hdf5");
  if (!path.ok()) return Annotate(path.status(), label);
  ROBOLOOP_ASSIGN_OR_RETURN(std::vector<SeedRange> collected, CollectedRanges(*path, label));
  ranges->insert(ranges->end(), collected.begin(), collected.end());
  for (const std::string& parent : dataset->parent_ids()) {
    ROBOLOOP_RETURN_IF_ERROR(AddDatasetRanges(registry, parent, cache_dir, visited, ranges));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<SeedRange>> TrainingSeedRanges(registry::RegistryClient& registry, const std::string& ref,
                                                          const std::string& cache_dir) {
  std::vector<SeedRange> ranges;
  std::set<std::string> datasets, checkpoints;
  std::string next = ref;
  while (!next.empty() && checkpoints.insert(next).second) {
    absl::StatusOr<v1::Checkpoint> checkpoint = registry.GetCheckpoint(next);
    if (!checkpoint.ok()) return Annotate(checkpoint.status(), absl::StrCat("checkpoint ", next));
    ROBOLOOP_RETURN_IF_ERROR(AddDatasetRanges(registry, checkpoint->dataset_id(), cache_dir, &datasets, &ranges));
    next = checkpoint->parent_id();
  }
  return ranges;
}

}  // namespace roboloop::eval
