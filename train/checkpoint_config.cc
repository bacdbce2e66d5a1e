// A resumed or fine-tuned run's config, checked against its checkpoint.
#include "train/checkpoint_config.h"

#include <google/protobuf/text_format.h>
#include <google/protobuf/util/json_util.h>

#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status.h"
#include "registry/checkpoint_manifest.h"
#include "train/policy_spec_options.h"

namespace roboloop::train {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;

// The flag that sets a config key, for messages ("" = the key has none).
std::string FlagOf(const std::string& key) {
  static const auto* const flags = new std::map<std::string, std::string>{
      {"model", "--model"},           {"batch_size", "--batch-size"},  {"policy.kind", "--policy"},
      {"policy.history", "--history"}, {"policy.chunk", "--chunk"},     {"policy.flow_matching", "--flow-matching"},
      {"no_packing", "--no-packing"}};
  auto it = flags->find(key);
  return it == flags->end() ? "" : it->second;
}

bool IsSet(const Message& message, const FieldDescriptor& field) {
  const auto& reflection = *message.GetReflection();
  return field.is_repeated() ? reflection.FieldSize(message, &field) > 0 : reflection.HasField(message, &field);
}

// `field` of `message` in text form ("[256, 256]" for a list).
std::string ValueText(const Message& message, const FieldDescriptor& field) {
  std::string text;
  if (!field.is_repeated()) {
    google::protobuf::TextFormat::PrintFieldValueToString(message, &field, -1, &text);
    return text;
  }
  std::vector<std::string> items;
  for (int i = 0; i < message.GetReflection()->FieldSize(message, &field); ++i) {
    google::protobuf::TextFormat::PrintFieldValueToString(message, &field, i, &text);
    items.push_back(text);
  }
  return absl::StrCat("[", absl::StrJoin(items, ", "), "]");
}

// One problem for each field of `names` set in `given` whose value differs from `fixed`'s.
void AddContradictions(const Message& given, const Message& fixed, const std::vector<std::string>& names,
                       const std::string& prefix, const std::string& ref, std::vector<std::string>* problems) {
  for (const std::string& name : names) {
    const FieldDescriptor* field = given.GetDescriptor()->FindFieldByName(name);
    if (field == nullptr || !IsSet(given, *field)) continue;
    const std::string mine = ValueText(given, *field);
    const std::string theirs = ValueText(fixed, *field);
    if (mine == theirs) continue;
    const std::string key = prefix + name;
    const std::string flag = FlagOf(key);
    problems->push_back(absl::StrCat(flag.empty() ? key : flag, " ", mine, " contradicts checkpoint ", ref, " (",
                                     key, " ", theirs, ")"));
  }
}

std::vector<std::string> FieldNames(const google::protobuf::Descriptor& descriptor) {
  std::vector<std::string> names;
  for (int i = 0; i < descriptor.field_count(); ++i) names.push_back(descriptor.field(i)->name());
  return names;
}

absl::StatusOr<v1::PolicySpec> CheckpointPolicy(const v1::Checkpoint& checkpoint, const std::string& ref) {
  absl::StatusOr<registry::CheckpointManifest> manifest = registry::CheckpointManifest::Parse(checkpoint.manifest_json());
  if (!manifest.ok()) return Annotate(manifest.status(), absl::StrCat("checkpoint ", ref));
  absl::StatusOr<nlohmann::json> options = manifest->CompleteOptions();
  if (!options.ok()) return Annotate(options.status(), absl::StrCat("checkpoint ", ref));
  return PolicySpecFromOptions(manifest->policy.kind, *options);
}

// The checkpoint's recorded run config (empty when it recorded none), with its model and policy.
absl::StatusOr<v1::TrainConfig> RecordedConfig(const v1::Checkpoint& checkpoint, const v1::PolicySpec& policy,
                                               const std::string& ref) {
  v1::TrainConfig recorded;
  if (!checkpoint.config_json().empty()) {
    google::protobuf::util::JsonParseOptions options;
    options.ignore_unknown_fields = true;
    const auto parsed = google::protobuf::util::JsonStringToMessage(checkpoint.config_json(), &recorded, options);
    if (!parsed.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("checkpoint ", ref, ": config_json: ", parsed.ToString()));
    }
  }
  recorded.set_model(checkpoint.model());
  *recorded.mutable_policy() = policy;
  recorded.clear_resume();
  recorded.clear_init_from();
  // Where the run executes belongs to this invocation, not to the run.
  for (const char* name : {"device", "threads", "data_cache_mb", "loader_workers", "prefetch", "rendezvous_timeout_s",
                           "cuda_graph"}) {
    recorded.GetReflection()->ClearField(&recorded, v1::TrainConfig::descriptor()->FindFieldByName(name));
  }
  return recorded;
}

bool HasTrainerState(const v1::Checkpoint& checkpoint) {
  for (const v1::BlobRef& blob : checkpoint.blobs()) {
    if (blob.role() == "trainer_state") return true;
  }
  return false;
}

}  // namespace

absl::StatusOr<v1::TrainConfig> ApplyCheckpointConfig(const v1::TrainConfig& given, const v1::Checkpoint& checkpoint) {
  const bool resume = !given.resume().empty();
  if (!resume && given.init_from().empty()) return given;
  const std::string& ref = resume ? given.resume() : given.init_from();
  if (resume && !HasTrainerState(checkpoint)) {
    return absl::InvalidArgumentError(absl::StrCat("checkpoint ", ref, " has no trainer_state to resume from (it "
                                                   "records no training run; fine-tune it with --init-from)"));
  }
  ROBOLOOP_ASSIGN_OR_RETURN(const v1::PolicySpec policy, CheckpointPolicy(checkpoint, ref));
  ROBOLOOP_ASSIGN_OR_RETURN(const v1::TrainConfig recorded, RecordedConfig(checkpoint, policy, ref));
  std::vector<std::string> problems;
  AddContradictions(given.policy(), policy, FieldNames(*v1::PolicySpec::descriptor()), "policy.", ref, &problems);
  if (resume) {
    AddContradictions(given, recorded, {"model", "batch_size", "action_feature", "obs_features", "no_packing"}, "",
                      ref, &problems);
  }
  if (!problems.empty()) return absl::InvalidArgumentError(absl::StrJoin(problems, "\n"));
  v1::TrainConfig result = resume ? recorded : given;
  *result.mutable_policy() = policy;
  if (!resume) return result;
  v1::TrainConfig on_top = given;  // what it fixes agrees with the checkpoint, so only the rest is merged
  on_top.clear_policy();
  on_top.clear_obs_features();
  const bool datasets_given = !on_top.dataset().empty() || on_top.datasets_size() > 0;
  if (datasets_given || !checkpoint.dataset_id().empty()) {
    result.clear_dataset();
    result.clear_datasets();
  }
  // Without datasets given, the run goes on with the data it trained on: its registered dataset (or set), not the
  // recorded paths, which may be relative to another folder, gone or rewritten since.
  if (!datasets_given && !checkpoint.dataset_id().empty()) result.set_dataset(checkpoint.dataset_id());
  result.MergeFrom(on_top);
  return result;
}

absl::Status CheckStepsLeft(const v1::TrainConfig& config, const v1::Checkpoint& checkpoint) {
  if (config.resume().empty() || checkpoint.step() < config.steps()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("checkpoint ", config.resume(), " is at step ", checkpoint.step(),
                                                 ", at or beyond steps (--steps) ", config.steps(),
                                                 ": nothing to train; give a larger --steps"));
}

}  // namespace roboloop::train
