#include "data/seed_ranges.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "common/status.h"

namespace roboloop::data {
namespace {

constexpr char kSeedRanges[] = "seed_ranges";

// The env_kwargs object of `env_args` (null when there is none).
nlohmann::json KwargsOf(const nlohmann::json& env_args) {
  return env_args.is_object() ? env_args.value("env_kwargs", nlohmann::json()) : nlohmann::json();
}

// The range the object `range` holds (base_seed and num_episodes required, first_episode 0 by default).
absl::StatusOr<CollectSeedRange> RangeOf(const nlohmann::json& range, const std::string& where) {
  try {
    CollectSeedRange parsed;
    parsed.base_seed = range.at("base_seed").get<uint64_t>();
    parsed.first_episode = range.value("first_episode", int64_t{0});
    parsed.num_episodes = range.at("num_episodes").get<int64_t>();
    return parsed;
  } catch (const nlohmann::json::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("env_args ", where, ": not a seed range: ", e.what()));
  }
}

nlohmann::json ToJson(const CollectSeedRange& range) {
  return {{"base_seed", range.base_seed}, {"first_episode", range.first_episode}, {"num_episodes", range.num_episodes}};
}

}  // namespace

absl::StatusOr<std::vector<CollectSeedRange>> RecordedSeedRanges(const std::string& env_args_json) {
  const nlohmann::json kwargs = KwargsOf(nlohmann::json::parse(env_args_json, nullptr, false));
  std::vector<CollectSeedRange> ranges;
  if (!kwargs.is_object()) return ranges;
  if (kwargs.contains("base_seed") && kwargs.contains("num_episodes")) {
    ROBOLOOP_ASSIGN_OR_RETURN(CollectSeedRange own, RangeOf(kwargs, "env_kwargs"));
    ranges.push_back(own);
  }
  const nlohmann::json listed = kwargs.value(kSeedRanges, nlohmann::json::array());
  if (!listed.is_array()) return absl::InvalidArgumentError("env_args env_kwargs.seed_ranges: not a list");
  for (size_t i = 0; i < listed.size(); ++i) {
    ROBOLOOP_ASSIGN_OR_RETURN(CollectSeedRange range,
                              RangeOf(listed[i], absl::StrCat("env_kwargs.seed_ranges[", i, "]")));
    ranges.push_back(range);
  }
  return ranges;
}

absl::StatusOr<std::string> MergedEnvArgs(const std::vector<std::string>& inputs) {
  if (inputs.empty()) return std::string();
  std::vector<CollectSeedRange> ranges;
  for (const std::string& input : inputs) {
    ROBOLOOP_ASSIGN_OR_RETURN(std::vector<CollectSeedRange> recorded, RecordedSeedRanges(input));
    for (const CollectSeedRange& range : recorded) {
      if (std::find(ranges.begin(), ranges.end(), range) == ranges.end()) ranges.push_back(range);
    }
  }
  nlohmann::json merged = nlohmann::json::parse(inputs.front(), nullptr, false);
  if (ranges.empty() || !merged.is_object()) return inputs.front();
  nlohmann::json& kwargs = merged["env_kwargs"];
  if (kwargs.is_null()) kwargs = nlohmann::json::object();
  if (!kwargs.is_object()) return absl::InvalidArgumentError("env_args env_kwargs: not an object");
  for (const char* key : {"base_seed", "first_episode", "num_episodes"}) kwargs.erase(key);
  kwargs[kSeedRanges] = nlohmann::json::array();
  for (const CollectSeedRange& range : ranges) kwargs[kSeedRanges].push_back(ToJson(range));
  return merged.dump();
}

}  // namespace roboloop::data
