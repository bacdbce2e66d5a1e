#include "pipeline/stage_kind.h"

#include <google/protobuf/util/json_util.h>

#include "absl/strings/str_cat.h"

namespace roboloop::pipeline {

absl::Status StageContext::CheckCancelled() const {
  if (!common::IsCancelled(cancel)) return absl::OkStatus();
  return absl::CancelledError(absl::StrCat("the stage was cancelled: ", cancel->Reason()));
}

void StageContext::Report(double done, double total, const std::string& unit, const std::string& note) const {
  if (progress) progress(StageProgress{done, total, unit, note});
}

absl::Status StageContext::RecordResumePoint(const std::string& point) const {
  return record_resume_point ? record_resume_point(point) : absl::OkStatus();
}

absl::Status StageKindRegistry::Register(StageKind kind) {
  if (kind.name.empty()) return absl::InvalidArgumentError("a stage kind needs a name");
  if (kind.params == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("stage kind '", kind.name, "' needs a parameters message type"));
  }
  if (!kind.run && !kind.repeats_body) {
    return absl::InvalidArgumentError(absl::StrCat("stage kind '", kind.name, "' needs a run function"));
  }
  for (const std::string& output : kind.numeric_outputs) {
    if (kind.outputs.count(output) == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("stage kind '", kind.name, "' declares numeric output '", output, "' but not output '", output, "'"));
    }
  }
  if (Find(kind.name) != nullptr) {
    return absl::AlreadyExistsError(absl::StrCat("stage kind '", kind.name, "' is registered twice"));
  }
  kinds_.push_back(std::make_unique<StageKind>(std::move(kind)));
  return absl::OkStatus();
}

const StageKind* StageKindRegistry::Find(const std::string& name) const {
  for (const auto& kind : kinds_) {
    if (kind->name == name) return kind.get();
  }
  return nullptr;
}

std::vector<std::string> StageKindRegistry::Names() const {
  std::vector<std::string> names;
  for (const auto& kind : kinds_) names.push_back(kind->name);
  return names;
}

bool HasOwnStageField(const StageKind& kind) {
  const google::protobuf::FieldDescriptor* field = v1::Stage::descriptor()->FindFieldByName(kind.name);
  return field != nullptr && field->message_type() == kind.params;
}

absl::Status StageParams(const v1::Stage& stage, const StageKind& kind, google::protobuf::Message* params) {
  if (params->GetDescriptor() != kind.params) {
    return absl::InternalError(absl::StrCat("stage kind '", kind.name, "' has parameters of type ",
                                            kind.params->full_name(), ", not ", params->GetDescriptor()->full_name()));
  }
  if (HasOwnStageField(kind)) {
    params->CopyFrom(stage.GetReflection()->GetMessage(stage, v1::Stage::descriptor()->FindFieldByName(kind.name)));
    return absl::OkStatus();
  }
  std::string json;
  if (auto s = google::protobuf::util::MessageToJsonString(stage.params(), &json); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("stage '", stage.name(), "': params: ", s.ToString()));
  }
  if (auto s = google::protobuf::util::JsonStringToMessage(json, params); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("stage '", stage.name(), "': params are not a ",
                                                   kind.params->name(), ": ", s.ToString()));
  }
  return absl::OkStatus();
}

}  // namespace roboloop::pipeline
