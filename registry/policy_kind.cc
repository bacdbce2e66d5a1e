// The process-wide registry of policy kinds and the options schema checks.
#include "registry/policy_kind.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "registry/builtin_policy_kinds.h"

namespace roboloop::registry {
namespace {

// Registered kinds by name; the built-in ones are added on first use.
class KindTable {
 public:
  static KindTable& Get() {
    static KindTable* const table = new KindTable();  // never destroyed: registrations outlive exit
    return *table;
  }

  absl::Status Add(PolicyKind kind) {
    absl::MutexLock lock(&mutex_);
    if (kind.name.empty()) return absl::InvalidArgumentError("a policy kind needs a name");
    std::set<std::string> seen;
    for (const PolicyOption& option : kind.options) {
      if (!seen.insert(option.name).second) {
        return absl::InvalidArgumentError(absl::StrCat("policy kind '", kind.name, "' declares option '",
                                                       option.name, "' twice"));
      }
    }
    if (kinds_.count(kind.name) != 0) {
      return absl::AlreadyExistsError(absl::StrCat("policy kind '", kind.name, "' is already registered"));
    }
    const std::string name = kind.name;
    kinds_.emplace(name, std::make_unique<PolicyKind>(std::move(kind)));
    return absl::OkStatus();
  }

  const PolicyKind* Find(absl::string_view name) {
    absl::MutexLock lock(&mutex_);
    auto it = kinds_.find(std::string(name));
    return it == kinds_.end() ? nullptr : it->second.get();
  }

  std::vector<const PolicyKind*> All() {
    absl::MutexLock lock(&mutex_);
    std::vector<const PolicyKind*> all;
    for (const auto& [name, kind] : kinds_) all.push_back(kind.get());
    return all;
  }

 private:
  KindTable() {
    for (PolicyKind& kind : BuiltinPolicyKinds()) kinds_.emplace(kind.name, std::make_unique<PolicyKind>(kind));
  }

  absl::Mutex mutex_;
  std::map<std::string, std::unique_ptr<PolicyKind>> kinds_;
};

std::vector<std::string> NamesWhere(bool (*keep)(const PolicyKind&)) {
  std::vector<std::string> names;
  for (const PolicyKind* kind : KindTable::Get().All()) {
    if (keep(*kind)) names.push_back(kind->name);
  }
  return names;
}

absl::Status OptionError(const PolicyKind& kind, const std::string& option, absl::string_view problem) {
  return absl::InvalidArgumentError(
      absl::StrCat("policy option '", option, "' of kind '", kind.name, "': ", problem));
}

bool IsPositiveInteger(const nlohmann::json& value) {
  return value.is_number_integer() && value.get<int64_t>() > 0;
}

// The largest camera side the vision contract allows (docs/vision.md).
constexpr int64_t kMaxCameraSide = 2048;

bool IsCameraSide(const nlohmann::json& value) {
  return value.is_number_integer() && value.get<int64_t>() >= 1 && value.get<int64_t>() <= kMaxCameraSide;
}

bool IsCamera(const nlohmann::json& camera) {
  if (!camera.is_object() || camera.size() != 3) return false;
  return camera.contains("name") && camera["name"].is_string() && !camera["name"].get<std::string>().empty() &&
         camera.contains("width") && IsCameraSide(camera["width"]) && camera.contains("height") &&
         IsCameraSide(camera["height"]);
}

bool IsCameraList(const nlohmann::json& value) {
  if (!value.is_array() || !std::all_of(value.begin(), value.end(), IsCamera)) return false;
  std::set<std::string> names;
  for (const nlohmann::json& camera : value) {
    if (!names.insert(camera["name"].get<std::string>()).second) return false;
  }
  return true;
}

// Whether `value` has the option's type; `expected` says what it should be otherwise.
bool HasOptionType(const PolicyOption& option, const nlohmann::json& value, std::string& expected) {
  switch (option.type) {
    case PolicyOptionType::kPositiveInteger:
      expected = "a positive integer";
      return IsPositiveInteger(value);
    case PolicyOptionType::kPositiveIntegerList:
      expected = "an array of positive integers";
      return value.is_array() && std::all_of(value.begin(), value.end(), IsPositiveInteger);
    case PolicyOptionType::kCameraList:
      expected = "an array of {name, width, height} (unique non-empty names, sides in 1..2048)";
      return IsCameraList(value);
    case PolicyOptionType::kBoolean:
      expected = "a boolean";
      return value.is_boolean();
    case PolicyOptionType::kString:
      expected = option.choices.empty() ? "a string" : absl::StrCat("one of ", absl::StrJoin(option.choices, ", "));
      return value.is_string() &&
             (option.choices.empty() || std::count(option.choices.begin(), option.choices.end(),
                                                   value.get<std::string>()) != 0);
  }
  return false;
}

const PolicyOption* FindOption(const PolicyKind& kind, const std::string& name) {
  for (const PolicyOption& option : kind.options) {
    if (option.name == name) return &option;
  }
  return nullptr;
}

std::vector<std::string> OptionNames(const PolicyKind& kind) {
  std::vector<std::string> names;
  for (const PolicyOption& option : kind.options) names.push_back(option.name);
  return names;
}

}  // namespace

std::vector<PolicyOption> ChunkPolicyOptions() {
  return {
      {"obs_dim", PolicyOptionType::kPositiveInteger, std::nullopt, {}, "floats of one observation row"},
      {"action_dim", PolicyOptionType::kPositiveInteger, std::nullopt, {}, "floats of one action"},
      {"history", PolicyOptionType::kPositiveInteger, 1, {}, "observation steps the policy reads"},
      {"chunk", PolicyOptionType::kPositiveInteger, 1, {}, "future actions it predicts per query"},
  };
}

std::vector<PolicyOption> CameraPolicyOptions() {
  return {
      {"cameras", PolicyOptionType::kCameraList, nlohmann::json::array(), {},
       "cameras the policy sees, in the order of its image row (empty: state only)"},
      {"encoder_channels", PolicyOptionType::kPositiveInteger, 32, {}, "channels of every image-encoder convolution"},
      {"encoder_blocks", PolicyOptionType::kPositiveInteger, 2, {}, "residual blocks of the image encoder"},
      {"keypoints", PolicyOptionType::kPositiveInteger, 32, {}, "spatial-softmax keypoints per camera"},
  };
}

absl::Status RegisterPolicyKind(PolicyKind kind) { return KindTable::Get().Add(std::move(kind)); }

PolicyKindRegistration::PolicyKindRegistration(PolicyKind kind) {
  const absl::Status status = RegisterPolicyKind(std::move(kind));
  if (!status.ok()) {
    std::fprintf(stderr, "roboloop: cannot register policy kind: %s\n", status.ToString().c_str());
    std::abort();
  }
}

absl::StatusOr<const PolicyKind*> FindPolicyKind(absl::string_view name) {
  const PolicyKind* kind = KindTable::Get().Find(name);
  if (kind != nullptr) return kind;
  return absl::InvalidArgumentError(absl::StrCat("unknown policy kind '", name, "' (known: ",
                                                 absl::StrJoin(PolicyKindNames(), ", "), ")"));
}

std::vector<std::string> PolicyKindNames() {
  return NamesWhere([](const PolicyKind&) { return true; });
}

std::vector<std::string> TrainablePolicyKindNames() {
  return NamesWhere([](const PolicyKind& kind) { return kind.trainable; });
}

std::vector<std::string> ExportablePolicyKindNames() {
  return NamesWhere([](const PolicyKind& kind) { return kind.exportable; });
}

absl::Status CheckPolicyOptions(const PolicyKind& kind, const nlohmann::json& options) {
  if (!options.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat("options of policy kind '", kind.name,
                                                   "' must be a JSON object, got ", options.dump()));
  }
  for (const auto& [key, value] : options.items()) {
    if (key == "kind") {
      if (value != kind.name) return OptionError(kind, key, absl::StrCat("says ", value.dump()));
      continue;
    }
    const PolicyOption* option = FindOption(kind, key);
    if (option == nullptr) {
      return OptionError(kind, key, absl::StrCat("not an option of this kind (options: ",
                                                 absl::StrJoin(OptionNames(kind), ", "), ")"));
    }
    std::string expected;
    if (!HasOptionType(*option, value, expected)) {
      return OptionError(kind, key, absl::StrCat("expected ", expected, ", got ", value.dump()));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<nlohmann::json> CompletePolicyOptions(const PolicyKind& kind, const nlohmann::json& options) {
  absl::Status valid = CheckPolicyOptions(kind, options);
  if (!valid.ok()) return valid;
  nlohmann::json complete = options;
  complete["kind"] = kind.name;
  for (const PolicyOption& option : kind.options) {
    if (complete.contains(option.name)) continue;
    if (!option.default_value.has_value()) return OptionError(kind, option.name, "required");
    complete[option.name] = *option.default_value;
  }
  return complete;
}

}  // namespace roboloop::registry
