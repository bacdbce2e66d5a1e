#include "pipeline/references.h"

#include <regex>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/status.h"

namespace roboloop::pipeline {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;

const std::regex& ReferencePattern() {
  static const std::regex kReference(R"(\$\{([^}]*)\})");
  return kReference;
}

bool SkippedField(const FieldDescriptor* field) {
  if (field->message_type() != nullptr && field->message_type()->full_name() == "roboloop.v1.Stage") return true;
  return field->containing_type()->full_name() == "roboloop.v1.LoopStage" && field->name() == "until";
}

absl::Status VisitStringField(Message* message, const FieldDescriptor* field,
                              const std::function<absl::Status(std::string*)>& visit) {
  const auto* r = message->GetReflection();
  if (!field->is_repeated()) {
    std::string value = r->GetString(*message, field);
    ROBOLOOP_RETURN_IF_ERROR(visit(&value));
    r->SetString(message, field, value);
    return absl::OkStatus();
  }
  for (int i = 0; i < r->FieldSize(*message, field); ++i) {
    std::string value = r->GetRepeatedString(*message, field, i);
    ROBOLOOP_RETURN_IF_ERROR(visit(&value));
    r->SetRepeatedString(message, field, i, value);
  }
  return absl::OkStatus();
}

}  // namespace

std::vector<std::string> ReferencesIn(const std::string& text) {
  std::vector<std::string> refs;
  for (std::sregex_iterator it(text.begin(), text.end(), ReferencePattern()), end; it != end; ++it) {
    refs.push_back((*it)[1]);
  }
  return refs;
}

absl::StatusOr<std::string> Substitute(const std::string& text, const std::map<std::string, StageOutputs>& outputs,
                                       const std::map<std::string, std::string>& vars) {
  std::string result;
  auto last = text.cbegin();
  for (std::sregex_iterator it(text.begin(), text.end(), ReferencePattern()), end; it != end; ++it) {
    const std::string ref = (*it)[1];
    const size_t dot = ref.find('.');
    const std::string head = ref.substr(0, dot), tail = dot == std::string::npos ? "" : ref.substr(dot + 1);
    std::string value;
    if (head == "vars" && vars.count(tail)) {
      value = vars.at(tail);
    } else if (outputs.count(head) && outputs.at(head).count(tail)) {
      value = outputs.at(head).at(tail);
    } else {
      return absl::NotFoundError(absl::StrCat("${", ref, "} has no value (the stage did not produce it)"));
    }
    result.append(last, (*it)[0].first);
    result += value;
    last = (*it)[0].second;
  }
  result.append(last, text.cend());
  return result;
}

absl::Status VisitStageStrings(Message* message, const std::function<absl::Status(std::string*)>& visit) {
  const auto* r = message->GetReflection();
  std::vector<const FieldDescriptor*> fields;
  r->ListFields(*message, &fields);
  for (const FieldDescriptor* field : fields) {
    if (SkippedField(field)) continue;
    if (field->cpp_type() == FieldDescriptor::CPPTYPE_STRING) {
      ROBOLOOP_RETURN_IF_ERROR(VisitStringField(message, field, visit));
    } else if (field->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE && field->is_repeated()) {
      for (int i = 0; i < r->FieldSize(*message, field); ++i) {
        ROBOLOOP_RETURN_IF_ERROR(VisitStageStrings(r->MutableRepeatedMessage(message, field, i), visit));
      }
    } else if (field->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
      ROBOLOOP_RETURN_IF_ERROR(VisitStageStrings(r->MutableMessage(message, field), visit));
    }
  }
  return absl::OkStatus();
}

std::vector<std::string> ReferencesOfStage(const Message& stage) {
  std::unique_ptr<Message> copy(stage.New());
  copy->CopyFrom(stage);
  std::vector<std::string> refs;
  (void)VisitStageStrings(copy.get(), [&refs](std::string* text) {
    for (std::string& ref : ReferencesIn(*text)) refs.push_back(std::move(ref));
    return absl::OkStatus();
  });
  return refs;
}

absl::StatusOr<LoopCondition> ParseLoopCondition(const std::string& text) {
  static const std::regex kCondition(R"(\s*\$\{([^}]+)\}\s*(>=|<=|==|>|<)\s*(-?[0-9.]+(e-?[0-9]+)?)\s*)");
  std::smatch match;
  LoopCondition condition;
  if (!std::regex_match(text, match, kCondition) || !absl::SimpleAtod(match[3].str(), &condition.bound)) {
    return absl::InvalidArgumentError(absl::StrCat("'", text, "' is not of the form ${STAGE.OUTPUT} OP NUMBER"));
  }
  condition.reference = match[1];
  condition.op = match[2];
  return condition;
}

absl::StatusOr<bool> ConditionHolds(const LoopCondition& condition, const std::map<std::string, StageOutputs>& outputs,
                                    const std::map<std::string, std::string>& vars) {
  const std::string ref = absl::StrCat("${", condition.reference, "}");
  ROBOLOOP_ASSIGN_OR_RETURN(std::string text, Substitute(ref, outputs, vars));
  double value = 0;
  if (!absl::SimpleAtod(text, &value)) {
    return absl::InvalidArgumentError(absl::StrCat("loop condition ", ref, ": '", text, "' is not a number"));
  }
  const double bound = condition.bound;
  if (condition.op == ">=") return value >= bound;
  if (condition.op == "<=") return value <= bound;
  if (condition.op == ">") return value > bound;
  if (condition.op == "<") return value < bound;
  return value == bound;
}

}  // namespace roboloop::pipeline
