// PolicySpec fields <-> policy options, by name through protobuf reflection.
#include "train/policy_spec_options.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/reflection.h"
#include "common/status.h"
#include "registry/policy_kind.h"

namespace roboloop::train {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Reflection;

const FieldDescriptor* SpecField(const std::string& option) {
  return v1::PolicySpec::descriptor()->FindFieldByName(option);
}

bool IsUnset(const v1::PolicySpec& spec, const FieldDescriptor& field) {
  const Reflection& reflection = *spec.GetReflection();
  return field.is_repeated() ? reflection.FieldSize(spec, &field) == 0 : !reflection.HasField(spec, &field);
}

// The spec's value of `field` as JSON.
nlohmann::json FieldValue(const v1::PolicySpec& spec, const FieldDescriptor& field) {
  const Reflection& reflection = *spec.GetReflection();
  if (field.is_repeated()) {
    nlohmann::json values = nlohmann::json::array();
    for (int i = 0; i < reflection.FieldSize(spec, &field); ++i) {
      values.push_back(reflection.GetRepeatedInt64(spec, &field, i));
    }
    return values;
  }
  switch (field.cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32: return reflection.GetInt32(spec, &field);
    case FieldDescriptor::CPPTYPE_INT64: return reflection.GetInt64(spec, &field);
    case FieldDescriptor::CPPTYPE_BOOL: return reflection.GetBool(spec, &field);
    default: return reflection.GetString(spec, &field);
  }
}

// Sets `field` of `spec` to `value` (of the option's JSON type).
void SetField(v1::PolicySpec& spec, const FieldDescriptor& field, const nlohmann::json& value) {
  const Reflection& reflection = *spec.GetReflection();
  if (field.is_repeated()) {
    for (const nlohmann::json& item : value) reflection.AddInt64(&spec, &field, item.get<int64_t>());
    return;
  }
  switch (field.cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32: reflection.SetInt32(&spec, &field, value.get<int32_t>()); break;
    case FieldDescriptor::CPPTYPE_INT64: reflection.SetInt64(&spec, &field, value.get<int64_t>()); break;
    case FieldDescriptor::CPPTYPE_BOOL: reflection.SetBool(&spec, &field, value.get<bool>()); break;
    default: reflection.SetString(&spec, &field, value.get<std::string>()); break;
  }
}

// InvalidArgument naming each field set in `spec` that is no option of `kind` (e.g. flow_matching of an mlp).
absl::Status CheckFieldsApply(const v1::PolicySpec& spec, const registry::PolicyKind& kind) {
  std::vector<std::string> options;
  for (const registry::PolicyOption& option : kind.options) options.push_back(option.name);
  std::vector<std::string> strays;
  for (int i = 0; i < v1::PolicySpec::descriptor()->field_count(); ++i) {
    const FieldDescriptor& field = *v1::PolicySpec::descriptor()->field(i);
    if (field.name() == "kind" || IsUnset(spec, field)) continue;
    if (std::find(options.begin(), options.end(), field.name()) == options.end()) strays.push_back(field.name());
  }
  if (strays.empty()) return absl::OkStatus();
  const bool one = strays.size() == 1;
  return absl::InvalidArgumentError(absl::StrCat(one ? "policy field " : "policy fields ", absl::StrJoin(strays, ", "),
                                                 one ? " is" : " are", " no option of policy '", spec.kind(),
                                                 "' (its options: ", absl::StrJoin(options, ", "), ")"));
}

}  // namespace

void FillPolicySpecDefaults(v1::PolicySpec& spec) {
  if (spec.kind().empty()) spec.set_kind(registry::DefaultPolicyKindName());
  absl::StatusOr<const registry::PolicyKind*> kind = registry::FindPolicyKind(spec.kind());
  if (!kind.ok()) return;
  for (const registry::PolicyOption& option : (*kind)->options) {
    const FieldDescriptor* field = SpecField(option.name);
    if (field != nullptr && option.default_value.has_value() && IsUnset(spec, *field)) {
      SetField(spec, *field, *option.default_value);
    }
  }
}

absl::StatusOr<nlohmann::json> PolicyOptionsFromSpec(const v1::PolicySpec& spec, int64_t obs_dim,
                                                     int64_t action_dim) {
  const absl::StatusOr<const registry::PolicyKind*> kind = registry::FindPolicyKind(spec.kind());
  if (!kind.ok() || !(*kind)->trainable) {
    return absl::InvalidArgumentError(absl::StrCat("unknown policy '", spec.kind(), "' (known: ",
                                                   absl::StrJoin(registry::TrainablePolicyKindNames(), ", "), ")"));
  }
  ROBOLOOP_RETURN_IF_ERROR(CheckFieldsApply(spec, **kind));
  nlohmann::json options = {{"obs_dim", obs_dim}, {"action_dim", action_dim}};
  for (const registry::PolicyOption& option : (*kind)->options) {
    const FieldDescriptor* field = SpecField(option.name);
    if (field != nullptr && !IsUnset(spec, *field)) options[option.name] = FieldValue(spec, *field);
  }
  return registry::CompletePolicyOptions(**kind, options);
}

v1::PolicySpec PolicySpecFromOptions(const std::string& kind, const nlohmann::json& options) {
  v1::PolicySpec spec;
  spec.set_kind(kind);
  for (const auto& [name, value] : options.items()) {
    const FieldDescriptor* field = SpecField(name);
    if (field != nullptr && field->name() != "kind") SetField(spec, *field, value);
  }
  return spec;
}

}  // namespace roboloop::train
