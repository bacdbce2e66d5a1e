// Loading and validating pipeline specs.
#include "pipeline/spec.h"

#include <algorithm>
#include <filesystem>
#include <cmath>
#include <functional>
#include <optional>
#include <google/protobuf/struct.pb.h>
#include <regex>
#include <yaml-cpp/yaml.h>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/config.h"
#include "common/fs.h"
#include "common/status.h"
#include "eval/protocol.h"

namespace roboloop::pipeline {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

// The line of each stage entry, in the order of LoadedPipeline::stage_lines.
void CollectStageLines(const YAML::Node& stages, std::vector<int>* lines) {
  if (!stages || !stages.IsSequence()) return;
  for (const YAML::Node& stage : stages) {
    lines->push_back(stage.Mark().line + 1);
    if (stage.IsMap() && stage["loop"] && stage["loop"].IsMap()) CollectStageLines(stage["loop"]["stages"], lines);
  }
}

v1::Stage* FindStage(google::protobuf::RepeatedPtrField<v1::Stage>* stages, const std::string& name) {
  for (v1::Stage& stage : *stages) {
    if (stage.name() == name) return &stage;
    if (!stage.has_loop()) continue;
    if (v1::Stage* inner = FindStage(stage.mutable_loop()->mutable_stages(), name)) return inner;
  }
  return nullptr;
}

absl::Status SetScalar(Message* message, const FieldDescriptor* field, const std::string& value,
                       const std::string& what) {
  const Reflection* r = message->GetReflection();
  const auto bad = [&] {
    return absl::InvalidArgumentError(absl::StrCat(what, ": '", value, "' is not a ", field->type_name()));
  };
  if (field->is_repeated()) {
    if (field->cpp_type() != FieldDescriptor::CPPTYPE_STRING) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": only repeated strings can be set"));
    }
    r->ClearField(message, field);
    for (absl::string_view part : absl::StrSplit(value, ',')) r->AddString(message, field, std::string(part));
    return absl::OkStatus();
  }
  switch (field->cpp_type()) {
    case FieldDescriptor::CPPTYPE_STRING: r->SetString(message, field, value); break;
    case FieldDescriptor::CPPTYPE_BOOL: {
      if (value != "true" && value != "false") return bad();
      r->SetBool(message, field, value == "true");
      break;
    }
    case FieldDescriptor::CPPTYPE_INT32: {
      int32_t v;
      if (!absl::SimpleAtoi(value, &v)) return bad();
      r->SetInt32(message, field, v);
      break;
    }
    case FieldDescriptor::CPPTYPE_INT64: {
      int64_t v;
      if (!absl::SimpleAtoi(value, &v)) return bad();
      r->SetInt64(message, field, v);
      break;
    }
    case FieldDescriptor::CPPTYPE_UINT64: {
      uint64_t v;
      if (!absl::SimpleAtoi(value, &v)) return bad();
      r->SetUInt64(message, field, v);
      break;
    }
    case FieldDescriptor::CPPTYPE_DOUBLE: {
      double v;
      if (!absl::SimpleAtod(value, &v)) return bad();
      r->SetDouble(message, field, v);
      break;
    }
    default:
      return absl::InvalidArgumentError(absl::StrCat(what, ": fields of type ", field->type_name(),
                                                     " cannot be set from the command line"));
  }
  return absl::OkStatus();
}

// `--set STAGE.FIELD=VALUE` on a kind whose parameters are the generic `params:` mapping: the
// value is kept as YAML would read it (number, boolean or text) and typed by validation.
absl::Status SetGenericParam(const std::vector<std::string>& parts, const std::string& value, const std::string& what,
                             google::protobuf::Struct* params) {
  if (parts.size() != 2) return absl::InvalidArgumentError(absl::StrCat(what, ": expected STAGE.FIELD"));
  google::protobuf::Value& slot = (*params->mutable_fields())[parts[1]];
  double number = 0;
  if (absl::SimpleAtod(value, &number)) {
    slot.set_number_value(number);
  } else if (value == "true" || value == "false") {
    slot.set_bool_value(value == "true");
  } else {
    slot.set_string_value(value);
  }
  return absl::OkStatus();
}

// `--set vars.NAME=VALUE`: only a variable the pipeline declares.
absl::Status SetVariable(const std::string& name, const std::string& value, const std::string& what,
                         v1::Pipeline* pipeline) {
  auto it = pipeline->mutable_vars()->find(name);
  if (it != pipeline->mutable_vars()->end()) {
    it->second = value;
    return absl::OkStatus();
  }
  std::vector<std::string> known;
  for (const auto& [declared, unused] : pipeline->vars()) known.push_back(declared);
  std::sort(known.begin(), known.end());
  return absl::InvalidArgumentError(absl::StrCat(
      what, ": no pipeline variable '", name, "' ",
      known.empty() ? "(the pipeline declares no vars)" : absl::StrCat("(known: ", absl::StrJoin(known, ", "), ")")));
}

absl::Status ApplyOverride(const Override& o, v1::Pipeline* pipeline) {
  const std::string what = absl::StrCat("--set ", o.path, "=", o.value);
  const std::vector<std::string> parts = absl::StrSplit(o.path, '.');
  if (parts.size() < 2) return absl::InvalidArgumentError(absl::StrCat(what, ": expected STAGE.FIELD or vars.NAME"));
  if (parts[0] == "vars") return SetVariable(absl::StrJoin(parts.begin() + 1, parts.end(), "."), o.value, what, pipeline);
  v1::Stage* stage = FindStage(pipeline->mutable_stages(), parts[0]);
  if (stage == nullptr) return absl::InvalidArgumentError(absl::StrCat(what, ": no stage named '", parts[0], "'"));
  Message* message = stage;
  size_t next = 1;
  const FieldDescriptor* own = stage->GetDescriptor()->FindFieldByName(parts[1]);
  if (own == nullptr || own->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
    const FieldDescriptor* params = stage->GetDescriptor()->FindFieldByName(stage->kind());
    if (params == nullptr || params->cpp_type() != FieldDescriptor::CPPTYPE_MESSAGE) {
      return SetGenericParam(parts, o.value, what, stage->mutable_params());
    }
    message = stage->GetReflection()->MutableMessage(stage, params);
    if (parts[1] == stage->kind()) next = 2;  // "train.train.steps" names the same field
  }
  for (; next < parts.size(); ++next) {
    const FieldDescriptor* field = message->GetDescriptor()->FindFieldByName(parts[next]);
    if (field == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": ", message->GetDescriptor()->name(), " has no field '",
                                                     parts[next], "'"));
    }
    if (next + 1 == parts.size()) return SetScalar(message, field, o.value, what);
    if (field->cpp_type() != FieldDescriptor::CPPTYPE_MESSAGE || field->is_repeated()) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": '", parts[next], "' has no sub-fields"));
    }
    message = message->GetReflection()->MutableMessage(message, field);
  }
  return absl::InvalidArgumentError(absl::StrCat(what, ": names a message, not a value"));
}

// The paths (from `prefix`) of the float and double fields of `message` that hold NaN or an
// infinity; repeated fields (a loop's body stages: checked as stages of their own) left out.
std::vector<std::string> NonFiniteFields(const Message& message, const std::string& prefix) {
  std::vector<std::string> paths;
  const Reflection* r = message.GetReflection();
  std::vector<const FieldDescriptor*> fields;
  r->ListFields(message, &fields);
  for (const FieldDescriptor* field : fields) {
    const std::string path = prefix + field->name();
    if (field->is_repeated()) continue;
    if (field->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
      for (std::string& inner : NonFiniteFields(r->GetMessage(message, field), path + ".")) paths.push_back(std::move(inner));
    } else if (field->cpp_type() == FieldDescriptor::CPPTYPE_DOUBLE && !std::isfinite(r->GetDouble(message, field))) {
      paths.push_back(path);
    } else if (field->cpp_type() == FieldDescriptor::CPPTYPE_FLOAT && !std::isfinite(r->GetFloat(message, field))) {
      paths.push_back(path);
    }
  }
  return paths;
}

// Validation of one pipeline.
class Validator {
 public:
  Validator(const LoadedPipeline& loaded, const StageKindRegistry& kinds, const ValidationOptions& options)
      : loaded_(loaded), kinds_(kinds), options_(options) {}

  // Checks everything, noting every problem; InvalidArgument with one line per problem.
  absl::StatusOr<Plan> Run() {
    if (loaded_.pipeline.stages().empty()) {
      Note(absl::InvalidArgumentError(absl::StrCat(loaded_.source, ": the pipeline has no stages")));
    }
    size_t next_line = 0;
    MapLines(loaded_.pipeline.stages(), &next_line);
    IndexStages(loaded_.pipeline.stages(), nullptr);
    Plan plan;
    plan.kinds = &kinds_;
    CheckScope(loaded_.pipeline.stages(), nullptr, &plan);
    CheckSeeds();
    if (!problems_.empty()) return absl::InvalidArgumentError(absl::StrJoin(problems_, "\n"));
    ROBOLOOP_ASSIGN_OR_RETURN(plan.levels, Levels(loaded_.pipeline.stages(), plan));
    return plan;
  }

 private:
  struct Entry {
    const v1::Stage* stage = nullptr;
    const v1::Stage* loop = nullptr;  // enclosing loop stage, or null at top level
    const StageKind* kind = nullptr;  // its record
  };

  // The index entry of this very stage, or null when it is not indexed (a bad or duplicate name).
  const Entry* EntryOf(const v1::Stage& stage) const {
    auto it = stages_.find(stage.name());
    return it != stages_.end() && it->second.stage == &stage ? &it->second : nullptr;
  }

  // The entry of this very stage, indexed or not. Precondition: IndexStages visited it.
  const Entry& CheckedEntryOf(const v1::Stage& stage) const {
    const Entry* indexed = EntryOf(stage);
    return indexed != nullptr ? *indexed : unindexed_.at(&stage);
  }

  // True for a stage of a known kind that repeats its body (a loop), indexed or not.
  bool IsLoop(const v1::Stage& stage) const {
    const StageKind* kind = CheckedEntryOf(stage).kind;
    return kind != nullptr && kind->repeats_body;
  }

  // Keeps the problem `status` reports (if any); validation goes on to find the others.
  void Note(const absl::Status& status) {
    if (!status.ok()) problems_.emplace_back(status.message());
  }

  // The line of `stage`'s entry in the file (0 when unknown).
  int LineOf(const v1::Stage& stage) const {
    auto it = lines_.find(&stage);
    return it == lines_.end() ? 0 : it->second;
  }

  // "<file>:<line>: stage '<name>': <what>", each line of a `what` of several lines so.
  absl::Status Error(const v1::Stage& stage, const std::string& what) const {
    const std::string prefix = absl::StrCat(loaded_.source, ":", LineOf(stage), ": stage '", stage.name(), "': ");
    return absl::InvalidArgumentError(absl::StrCat(prefix, absl::StrJoin(absl::StrSplit(what, '\n'), "\n" + prefix)));
  }

  // Pairs each stage, loop bodies included, with the line of its entry (loaded_.stage_lines).
  void MapLines(const google::protobuf::RepeatedPtrField<v1::Stage>& stages, size_t* next) {
    for (const v1::Stage& stage : stages) {
      if (*next < loaded_.stage_lines.size()) lines_[&stage] = loaded_.stage_lines[*next];
      ++*next;
      MapLines(stage.loop().stages(), next);
    }
  }

  // Enters every stage, the bodies of loops included, with its kind (null when unknown), noting
  // what is wrong with its name, kind and parameters. Stages with a good, unique name are indexed
  // by it; the others are kept apart (unindexed_) and checked all the same, so that a user who
  // renames one meets no new errors.
  void IndexStages(const google::protobuf::RepeatedPtrField<v1::Stage>& stages, const v1::Stage* loop) {
    for (const v1::Stage& stage : stages) {
      const bool indexable = CheckName(stage);
      const Entry entry{&stage, loop, CheckKind(stage)};
      if (indexable) {
        stages_.emplace(stage.name(), entry);
      } else {
        unindexed_.emplace(&stage, entry);
        // Its seeds are no part of the run (CheckSeeds leaves it out), but its protocol must load.
        if (entry.kind != nullptr && entry.kind->seeds) ClaimedProtocol(stage, entry.kind->seeds(stage));
      }
      if (IsLoop(stage)) IndexStages(stage.loop().stages(), &stage);
    }
  }

  // True when `stage` has a good name no stage indexed so far has; else notes why not.
  bool CheckName(const v1::Stage& stage) {
    static const std::regex kName("[A-Za-z][A-Za-z0-9_-]*");
    if (!std::regex_match(stage.name(), kName)) {
      Note(Error(stage, stage.name().empty()
                            ? "has no name"
                            : "a stage name must start with a letter and hold letters, digits, '_' or '-'"));
      return false;
    }
    if (stage.name() == "vars") {
      Note(Error(stage, "'vars' is reserved for pipeline variables"));
      return false;
    }
    if (auto first = stages_.find(stage.name()); first != stages_.end()) {
      Note(Error(stage, absl::StrCat("is defined twice (first at line ", LineOf(*first->second.stage), ")")));
      return false;
    }
    return true;
  }

  // The stage's kind (null when unknown), noting what is wrong with its parameters and settings.
  const StageKind* CheckKind(const v1::Stage& stage) {
    const StageKind* kind = kinds_.Find(stage.kind());
    if (kind == nullptr) {
      Note(Error(stage, absl::StrCat("unknown kind '", stage.kind(), "' (known: ", absl::StrJoin(kinds_.Names(), ", "), ")")));
      return nullptr;
    }
    Note(CheckParamsPlacement(stage, *kind));
    std::unique_ptr<Message> params(google::protobuf::MessageFactory::generated_factory()->GetPrototype(kind->params)->New());
    if (absl::Status s = StageParams(stage, *kind, params.get()); !s.ok()) {
      Note(Error(stage, std::string(s.message())));
    } else if (kind->check_params) {
      if (absl::Status checked = kind->check_params(*params); !checked.ok()) {
        Note(Error(stage, std::string(checked.message())));
      }
    }
    if (kind->repeats_body && stage.loop().max_iterations() < 1) Note(Error(stage, "loop.max_iterations must be at least 1"));
    if (stage.retries() < 0 || stage.timeout_s() < 0 || stage.backoff_s() < 0) {
      Note(Error(stage, "retries, backoff_s and timeout_s must not be negative"));
    }
    if (stage.has_ranks() && !kind->spawns_ranks) {
      Note(Error(stage, absl::StrCat("a stage of kind ", kind->name, " takes no 'ranks'")));
    } else if (stage.has_ranks() && stage.ranks() < 1) {
      Note(Error(stage, absl::StrCat("ranks must be at least 1, not ", stage.ranks())));
    }
    // A kind that checks its own parameters reports their numbers itself.
    const std::string checked_by_kind = kind->check_params ? kind->name + "." : "";
    for (const std::string& field : NonFiniteFields(stage, "")) {
      if (checked_by_kind.empty() || !absl::StartsWith(field, checked_by_kind)) {
        Note(Error(stage, absl::StrCat(field, " must be a finite number")));
      }
    }
    return kind;
  }

  // A stage carries exactly its own kind's parameters: under the kind's name for ours, under
  // `params:` for others.
  absl::Status CheckParamsPlacement(const v1::Stage& stage, const StageKind& kind) const {
    const Reflection* r = stage.GetReflection();
    const bool own_field = HasOwnStageField(kind);
    if (own_field && !r->HasField(stage, stage.GetDescriptor()->FindFieldByName(kind.name))) {
      return Error(stage, absl::StrCat("kind ", kind.name, " needs its parameters under '", kind.name, ":'"));
    }
    for (const std::string& other : kinds_.Names()) {
      const FieldDescriptor* field = stage.GetDescriptor()->FindFieldByName(other);
      if (other != kind.name && field != nullptr && r->HasField(stage, field)) {
        return Error(stage, absl::StrCat("a stage of kind ", kind.name, " cannot have '", other, ":' parameters"));
      }
    }
    if (own_field && stage.has_params()) {
      return Error(stage, absl::StrCat("a stage of kind ", kind.name, " takes its parameters under '", kind.name,
                                              ":', not 'params:'"));
    }
    return absl::OkStatus();
  }

  // The stage a reference or a need names, checked to be visible from `scope`.
  absl::StatusOr<const Entry*> Visible(const v1::Stage& from, const std::string& name, const v1::Stage* scope) const {
    auto it = stages_.find(name);
    if (it == stages_.end()) return Error(from, absl::StrCat("refers to unknown stage '", name, "'"));
    for (const v1::Stage* s = scope;; s = CheckedEntryOf(*s).loop) {
      if (it->second.loop == s) return &it->second;
      if (s == nullptr) break;
    }
    return Error(from, absl::StrCat("cannot refer to '", name, "', which is inside loop '", it->second.loop->name(),
                                    "' (refer to the loop's outputs instead)"));
  }

  // Whether a stage of `loop`'s body produces `output` (a loop inside it: when its own body does); a stage of an
  // unknown kind may (its kind is noted).
  bool BodyProduces(const v1::Stage& loop, const std::string& output) const {
    for (const v1::Stage& inner : loop.loop().stages()) {
      const StageKind* kind = CheckedEntryOf(inner).kind;
      if (kind == nullptr) return true;
      if (kind->outputs.count(output) && (!kind->repeats_body || BodyProduces(inner, output))) return true;
    }
    return false;
  }

  // The stage of `target`'s scope chain that sits in `scope` (the dependency edge's end).
  const v1::Stage* InScope(const Entry* target, const v1::Stage* scope) const { return target->loop == scope ? target->stage : nullptr; }

  absl::Status CheckReference(const v1::Stage& stage, const std::string& ref, const v1::Stage* scope,
                              std::set<std::string>* deps) const {
    const std::vector<std::string> parts = absl::StrSplit(ref, absl::MaxSplits('.', 1));
    if (parts[0] == "vars") {
      if (parts.size() < 2 || loaded_.pipeline.vars().count(parts[1]) == 0) {
        return Error(stage, absl::StrCat("${", ref, "}: no such pipeline variable"));
      }
      return absl::OkStatus();
    }
    if (parts.size() < 2) return Error(stage, absl::StrCat("${", ref, "}: expected ${STAGE.OUTPUT}"));
    if (parts[0] == stage.name()) return Error(stage, absl::StrCat("${", ref, "}: a stage cannot use its own outputs"));
    ROBOLOOP_ASSIGN_OR_RETURN(const Entry* target, Visible(stage, parts[0], scope));
    if (target->kind == nullptr) return absl::OkStatus();  // its unknown kind is noted
    const std::set<std::string>& outputs = target->kind->outputs;
    if (outputs.count(parts[1]) == 0) {
      return Error(stage, absl::StrCat("${", ref, "}: a ", target->stage->kind(), " stage has no output '", parts[1],
                                              "' (outputs: ", absl::StrJoin(outputs, ", "), ")"));
    }
    if (target->kind->repeats_body && parts[1] != kLoopIterations && !BodyProduces(*target->stage, parts[1])) {
      return Error(stage, absl::StrCat("${", ref, "}: no stage of loop '", parts[0], "' has an output '", parts[1],
                                       "' (a loop's ", parts[1], " is the last one its stages produced)"));
    }
    if (const v1::Stage* dep = InScope(target, scope)) deps->insert(dep->name());
    return absl::OkStatus();
  }

  // Notes the problems of the needs, references, loops and cycles of one scope's stages (of
  // unindexed stages too, whose dependencies are no part of the plan).
  void CheckScope(const google::protobuf::RepeatedPtrField<v1::Stage>& stages, const v1::Stage* scope, Plan* plan) {
    for (const v1::Stage& stage : stages) {
      std::set<std::string>& planned = plan->depends_on[stage.name()];
      std::set<std::string> unplanned;
      std::set<std::string>& deps = EntryOf(stage) != nullptr ? planned : unplanned;
      for (const std::string& need : stage.needs()) {
        absl::StatusOr<const Entry*> target = Visible(stage, need, scope);
        if (!target.ok()) {
          Note(target.status());
        } else if (const v1::Stage* dep = InScope(*target, scope)) {
          deps.insert(dep->name());
        }
      }
      for (const std::string& ref : ReferencesOfStage(stage)) Note(CheckReference(stage, ref, scope, &deps));
      if (IsLoop(stage)) {
        CheckScope(stage.loop().stages(), &stage, plan);
        Note(CheckUntil(stage));
        CheckCarry(stage, scope);
        // Outer stages the loop's inner stages use are dependencies of the loop.
        for (const v1::Stage& inner : stage.loop().stages()) {
          for (const std::string& dep : OuterDeps(inner, &stage)) deps.insert(dep);
        }
      }
    }
    Note(FindCycle(stages, *plan));
  }

  // Stages outside `loop` (in loop's own scope) that `inner` uses.
  std::set<std::string> OuterDeps(const v1::Stage& inner, const v1::Stage* loop) const {
    std::set<std::string> deps;
    std::vector<std::string> names(inner.needs().begin(), inner.needs().end());
    for (const std::string& ref : ReferencesOfStage(inner)) names.push_back(ref.substr(0, ref.find('.')));
    const v1::Stage* outer = CheckedEntryOf(*loop).loop;
    for (const std::string& name : names) {
      auto it = stages_.find(name);
      if (it != stages_.end() && it->second.loop == outer) deps.insert(name);
    }
    if (IsLoop(inner)) {
      for (const v1::Stage& nested : inner.loop().stages()) {
        for (const std::string& dep : OuterDeps(nested, loop)) deps.insert(dep);
      }
    }
    return deps;
  }

  // Notes each `carry` entry that does not map a stage visible outside the loop to a stage of
  // the loop's own body that produces every output the outer one does (in the entries' order).
  void CheckCarry(const v1::Stage& loop, const v1::Stage* scope) {
    const std::map<std::string, std::string> carry(loop.loop().carry().begin(), loop.loop().carry().end());
    for (const auto& [outer, inner] : carry) Note(CheckCarryEntry(loop, outer, inner, scope));
  }

  absl::Status CheckCarryEntry(const v1::Stage& loop, const std::string& outer, const std::string& inner,
                               const v1::Stage* scope) const {
    ROBOLOOP_ASSIGN_OR_RETURN(const Entry* from, Visible(loop, outer, scope));
    auto to = stages_.find(inner);
    if (to == stages_.end() || to->second.loop != &loop) {
      return Error(loop, absl::StrCat("loop.carry ", outer, ": '", inner, "' is not a stage of this loop"));
    }
    if (from->kind == nullptr || to->second.kind == nullptr) return absl::OkStatus();  // their unknown kinds are noted
    for (const std::string& output : from->kind->outputs) {
      if (to->second.kind->outputs.count(output) == 0) {
        return Error(loop, absl::StrCat("loop.carry ", outer, ": ", inner, " (", to->second.stage->kind(),
                                        ") has no output '", output, "' that ", outer, " (", from->stage->kind(),
                                        ") has"));
      }
    }
    return absl::OkStatus();
  }

  absl::Status CheckUntil(const v1::Stage& loop) const {
    const std::string& until = loop.loop().until();
    if (until.empty()) return absl::OkStatus();
    absl::StatusOr<LoopCondition> condition = ParseLoopCondition(until);
    if (!condition.ok()) return Error(loop, absl::StrCat("loop.until ", condition.status().message()));
    const std::string& ref = condition->reference;
    const std::string target = ref.substr(0, ref.find('.'));
    auto it = stages_.find(target);
    if (it == stages_.end() || it->second.loop != &loop) {
      return Error(loop, absl::StrCat("loop.until must test an output of a stage inside the loop, not '", target, "'"));
    }
    std::set<std::string> ignored;
    ROBOLOOP_RETURN_IF_ERROR(CheckReference(loop, ref, &loop, &ignored));
    const StageKind* kind = it->second.kind;
    const std::string output = ref.substr(target.size() + 1);
    if (kind == nullptr || kind->numeric_outputs.count(output)) return absl::OkStatus();
    return Error(loop, absl::StrCat("loop.until tests ${", ref, "}, which is not a number (numeric outputs of kind ",
                                    kind->name, ": ",
                                    kind->numeric_outputs.empty() ? "none" : absl::StrJoin(kind->numeric_outputs, ", "),
                                    ")"));
  }

  absl::Status FindCycle(const google::protobuf::RepeatedPtrField<v1::Stage>& stages, const Plan& plan) const {
    std::map<std::string, int> state;  // 0 unvisited, 1 on the path, 2 done
    std::vector<std::string> path;
    std::function<absl::Status(const std::string&)> visit = [&](const std::string& name) -> absl::Status {
      state[name] = 1;
      path.push_back(name);
      for (const std::string& dep : plan.depends_on.at(name)) {
        if (state[dep] == 1) {
          std::vector<std::string> cycle(std::find(path.begin(), path.end(), dep), path.end());
          cycle.push_back(dep);
          return Error(*stages_.at(cycle.front()).stage, absl::StrCat("dependency cycle: ", absl::StrJoin(cycle, " -> ")));
        }
        if (state[dep] == 0) ROBOLOOP_RETURN_IF_ERROR(visit(dep));
      }
      path.pop_back();
      state[name] = 2;
      return absl::OkStatus();
    };
    for (const v1::Stage& stage : stages) {
      if (state[stage.name()] == 0) ROBOLOOP_RETURN_IF_ERROR(visit(stage.name()));
    }
    return absl::OkStatus();
  }

  absl::StatusOr<std::vector<std::vector<std::string>>> Levels(const google::protobuf::RepeatedPtrField<v1::Stage>& stages,
                                                               const Plan& plan) const {
    std::map<std::string, int> level;
    std::function<int(const std::string&)> depth = [&](const std::string& name) {
      auto it = level.find(name);
      if (it != level.end()) return it->second;
      int d = 0;
      for (const std::string& dep : plan.depends_on.at(name)) d = std::max(d, depth(dep) + 1);
      return level[name] = d;
    };
    std::vector<std::vector<std::string>> levels;
    for (const v1::Stage& stage : stages) {
      const int d = depth(stage.name());
      if (static_cast<int>(levels.size()) <= d) levels.resize(d + 1);
      levels[d].push_back(stage.name());
    }
    return levels;
  }

  // Gates (evaluations tested by a loop's `until`, promotions) must use seeds disjoint from
  // every collection and every other evaluation (feedback), whatever protocol a feedback
  // evaluation that keeps its failures for training names; notes each gate that does not, and
  // each protocol that does not load.
  void CheckSeeds() {
    std::vector<eval::SeedRange> used;
    std::set<std::string> gates;
    std::set<std::string> feeding_training;
    std::map<std::string, v1::Protocol> protocols;
    for (const auto& [name, entry] : stages_) {
      const v1::Stage& s = *entry.stage;
      if (entry.kind == nullptr) continue;
      const std::vector<std::string> tested = ReferencesIn(s.loop().until());
      if (entry.kind->repeats_body && !tested.empty()) gates.insert(tested.front().substr(0, tested.front().find('.')));
      if (!entry.kind->seeds) continue;
      SeedClaims claims = entry.kind->seeds(s);
      for (eval::SeedRange& range : claims.consumed) {
        range.label = absl::StrCat("stage ", name, " (", range.label, ")");
        used.push_back(range);
      }
      std::optional<v1::Protocol> loaded = ClaimedProtocol(s, claims);
      if (!loaded.has_value()) continue;
      protocols[name] = *std::move(loaded);
      if (claims.gate) gates.insert(name);
      if (claims.feeds_training) feeding_training.insert(name);
    }
    // An evaluation under a gate's own protocol is that gate's evaluation, not feedback, unless
    // its rollouts feed training.
    std::set<std::string> gate_protocols;
    for (const std::string& gate : gates) {
      if (protocols.count(gate)) gate_protocols.insert(protocols.at(gate).name());
    }
    for (const auto& [name, protocol] : protocols) {
      if (gates.count(name) == 0 && (feeding_training.count(name) || gate_protocols.count(protocol.name()) == 0)) {
        const eval::SeedRange seeds = eval::ProtocolSeeds(protocol);
        used.push_back({seeds.base_seed, seeds.start, seeds.count, absl::StrCat("stage ", name, " (feedback evaluation)")});
      }
    }
    for (const std::string& gate : gates) {
      auto it = protocols.find(gate);
      if (it == protocols.end()) continue;
      if (absl::Status s = eval::CheckSeedsDisjoint(it->second, used); !s.ok()) {
        Note(Error(*stages_.at(gate).stage, absl::StrCat("its protocol is a gate and must hold out its seeds: ", s.message())));
      }
    }
  }

  // The protocol `claims` names, loaded; none when it names none or a reference, or when it does
  // not load (noted). Settings an evaluation would refuse (eval::CheckProtocolSettings) are noted too.
  std::optional<v1::Protocol> ClaimedProtocol(const v1::Stage& stage, const SeedClaims& claims) {
    if (claims.protocol.empty() || !ReferencesIn(claims.protocol).empty()) return std::nullopt;
    absl::StatusOr<v1::Protocol> loaded = options_.load_protocol
                                              ? options_.load_protocol(claims.protocol)
                                              : eval::LoadProtocol(claims.protocol, options_.protocols_dir);
    if (!loaded.ok()) {
      Note(Error(stage, std::string(loaded.status().message())));
      return std::nullopt;
    }
    if (absl::Status settings = eval::CheckProtocolSettings(*loaded); !settings.ok()) {
      Note(Error(stage, std::string(settings.message())));
    }
    return *std::move(loaded);
  }

  const LoadedPipeline& loaded_;
  const StageKindRegistry& kinds_;
  const ValidationOptions& options_;
  std::map<const v1::Stage*, int> lines_;  // every stage -> the line of its entry
  std::map<std::string, Entry> stages_;
  std::map<const v1::Stage*, Entry> unindexed_;  // stages with a bad or duplicate name
  std::vector<std::string> problems_;  // one line each, in the order found
};

}  // namespace

absl::StatusOr<Override> ParseOverride(const std::string& text) {
  const size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0) {
    return absl::InvalidArgumentError(absl::StrCat("--set '", text, "': expected PATH=VALUE, e.g. train.steps=5000"));
  }
  return Override{text.substr(0, eq), text.substr(eq + 1)};
}

std::vector<std::string> OverridesOnTop(const std::vector<std::string>& earlier, const std::vector<std::string>& later) {
  const auto path_of = [](const std::string& set) { return set.substr(0, set.find('=')); };
  std::set<std::string> set_again;
  for (const std::string& set : later) set_again.insert(path_of(set));
  std::vector<std::string> merged;
  for (const std::string& set : earlier) {
    if (set_again.count(path_of(set)) == 0) merged.push_back(set);
  }
  merged.insert(merged.end(), later.begin(), later.end());
  return merged;
}

absl::StatusOr<LoadedPipeline> LoadPipeline(const std::string& path, const std::vector<Override>& overrides) {
  LoadedPipeline loaded;
  loaded.source = path;
  ROBOLOOP_ASSIGN_OR_RETURN(loaded.text, ReadFile(path));
  const std::string& text = loaded.text;
  ROBOLOOP_RETURN_IF_ERROR(ParseYamlToProto(text, path, &loaded.pipeline));
  try {
    const YAML::Node root = YAML::Load(text);
    CollectStageLines(root["stages"], &loaded.stage_lines);
    if (root.IsMap() && root["task_files"] && root["task_files"].IsSequence()) {
      for (const YAML::Node& entry : root["task_files"]) loaded.task_file_lines.push_back(entry.Mark().line + 1);
    }
  } catch (const YAML::Exception&) {
    // ParseYamlToProto accepted the text, so it is valid YAML; lines are best effort.
  }
  for (const Override& o : overrides) ROBOLOOP_RETURN_IF_ERROR(ApplyOverride(o, &loaded.pipeline));
  if (loaded.pipeline.name().empty()) loaded.pipeline.set_name(std::filesystem::path(path).stem().string());
  return loaded;
}

std::vector<std::string> TaskFiles(const LoadedPipeline& loaded) {
  std::vector<std::string> files;
  for (const std::string& task : loaded.pipeline.task_files()) {
    files.push_back(task.empty() || task.front() == '/' ? task : JoinPath(ParentDir(loaded.source), task));
  }
  return files;
}

absl::StatusOr<Plan> ValidatePipeline(const LoadedPipeline& loaded, const StageKindRegistry& kinds,
                                      const ValidationOptions& options) {
  return Validator(loaded, kinds, options).Run();
}

}  // namespace roboloop::pipeline
