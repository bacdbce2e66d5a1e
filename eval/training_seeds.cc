#include "eval/training_seeds.h"

#include <optional>
#include <set>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "common/fs.h"
#include "common/status.h"
#include "data/tools.h"

namespace roboloop::eval {
namespace {

// The collect seed range in a dataset file's env_args, if it has one.
absl::StatusOr<std::optional<SeedRange>> CollectedRange(const std::string& path, const std::string& label) {
  ROBOLOOP_ASSIGN_OR_RETURN(data::DatasetInfo info, data::GetInfo(path));
  const nlohmann::json env_args = nlohmann::json::parse(info.layout.env_args_json, nullptr, false);
  const nlohmann::json kwargs =
      env_args.is_object() ? env_args.value("env_kwargs", nlohmann::json()) : nlohmann::json();
  if (!kwargs.is_object() || !kwargs.contains("base_seed") || !kwargs.contains("num_episodes")) return std::nullopt;
  try {
    SeedRange range;
    range.base_seed = kwargs["base_seed"].get<uint64_t>();
    range.start = kwargs.value("first_episode", int64_t{0});
    range.count = kwargs["num_episodes"].get<int64_t>();
    range.label = label;
    return range;
  } catch (const nlohmann::json::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(label, ": env_args env_kwargs seed range is malformed: ", e.what()));
  }
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
  absl::StatusOr<std::optional<SeedRange>> range = CollectedRange(*path, label);
  if (!range.ok()) return Annotate(range.status(), label);
  if (range->has_value()) ranges->push_back(**range);
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
