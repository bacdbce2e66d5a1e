// A stage kind added from this file alone (issue 27, req 1): its record, one registration line,
// and a pipeline that uses it — validated, overridden from the command line, run by the
// product's executor and by the runner API over embedded services; the protocols it names that the
// eval service loads by name key its cached results by their hash.
#include "pipeline/stage_kind.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <google/protobuf/wrappers.pb.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/grpc_server.h"
#include "common/store_layout.h"
#include "eval/protocol.h"
#include "pipeline/run_store.h"
#include "pipeline/runner.h"
#include "pipeline/scheduler.h"
#include "pipeline/spec.h"
#include "pipeline/stage_executor.h"
#include "pipeline/stage_kinds/builtin.h"
#include "roboloop/v1/eval.grpc.pb.h"
#include "tests/util/subprocess.h"
#include "wiring/services.h"

namespace roboloop::pipeline {
namespace {

using ::testing::HasSubstr;

// `shout`: upper-cases its parameter's text; its output `text` may feed other stages.
StageKind ShoutStageKind() {
  StageKind kind;
  kind.name = "shout";
  kind.params = google::protobuf::StringValue::descriptor();
  kind.outputs = {"text"};
  kind.run = [](const v1::Stage& stage, const StageContext& context, StageServices&) -> absl::StatusOr<StageOutputs> {
    absl::StatusOr<google::protobuf::StringValue> params =
        StageParamsAs<google::protobuf::StringValue>(stage, *context.kind);
    if (!params.ok()) return params.status();
    std::string text = params->value();
    for (char& c : text) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return StageOutputs{{"text", text}};
  };
  return kind;
}

class StageKindTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(RegisterBuiltinStageKinds(&kinds_).ok());
    ASSERT_TRUE(kinds_.Register(ShoutStageKind()).ok());
  }

  absl::StatusOr<LoadedPipeline> Load(const std::string& yaml, const std::vector<Override>& overrides = {}) {
    const std::string path = testing::MakeTempDir("kind") + "/p.yaml";
    std::ofstream(path) << yaml;
    return LoadPipeline(path, overrides);
  }

  StageKindRegistry kinds_;
};

constexpr char kTwoShouts[] = R"(name: p
vars: {who: world}
stages:
  - {name: hello, kind: shout, params: {value: "hello ${vars.who}"}}
  - {name: again, kind: shout, params: {value: "${hello.text}!"}}
)";

// QA: a compare of 177 vs 0 paired successes (p ≈ 1e-53) was written and summarised as "p 0".
TEST(ComparisonOutputsTest, APValueKeepsSixSignificantDigitsHoweverSmall) {
  v1::Evaluation candidate;
  candidate.mutable_aggregates()->mutable_success()->set_rate(1.0);
  v1::Evaluation baseline;
  baseline.mutable_aggregates()->mutable_success()->set_rate(0.115);
  v1::Comparison comparison;
  comparison.set_pairs(200);
  comparison.set_mcnemar_p(1.0e-53);
  const StageOutputs tiny = ComparisonOutputs(candidate, baseline, comparison);
  EXPECT_EQ(tiny.at("p_value"), "1e-53");
  EXPECT_EQ(tiny.at("candidate.success"), "1.000000");
  EXPECT_EQ(tiny.at("baseline.success"), "0.115000");
  EXPECT_EQ(tiny.at("pairs"), "200");
  comparison.set_mcnemar_p(0.015625);
  EXPECT_EQ(ComparisonOutputs(candidate, baseline, comparison).at("p_value"), "0.015625");
}

TEST_F(StageKindTest, AKindRegisteredHereValidatesAndRunsThroughTheProductExecutor) {
  auto loaded = Load(kTwoShouts);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  auto plan = ValidatePipeline(*loaded, kinds_, ValidationOptions());
  ASSERT_TRUE(plan.ok()) << plan.status();
  ServiceStageExecutor executor(nullptr, ExecutorOptions());
  auto outcome = RunPipeline(*loaded, *plan, executor, SchedulerOptions());
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  EXPECT_EQ(outcome->outputs.at("again").at("text"), "HELLO WORLD!");
}

TEST_F(StageKindTest, OverridesReachTheKindsParameters) {
  auto loaded = Load(kTwoShouts, {{"hello.value", "bye"}});
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  auto plan = ValidatePipeline(*loaded, kinds_, ValidationOptions());
  ASSERT_TRUE(plan.ok()) << plan.status();
  ServiceStageExecutor executor(nullptr, ExecutorOptions());
  auto outcome = RunPipeline(*loaded, *plan, executor, SchedulerOptions());
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  EXPECT_EQ(outcome->outputs.at("again").at("text"), "BYE!");
}

TEST_F(StageKindTest, ValidationReadsOutputsAndParametersFromTheRecord) {
  auto unknown_output = Load("stages:\n  - {name: a, kind: shout, params: {value: x}}\n"
                             "  - {name: b, kind: shout, params: {value: \"${a.volume}\"}}\n");
  ASSERT_TRUE(unknown_output.ok());
  EXPECT_THAT(ValidatePipeline(*unknown_output, kinds_, ValidationOptions()).status().message(),
              HasSubstr("a shout stage has no output 'volume' (outputs: text)"));
  auto bad_params = Load("stages:\n  - {name: a, kind: shout, params: {loudness: 11}}\n");
  ASSERT_TRUE(bad_params.ok());
  EXPECT_THAT(ValidatePipeline(*bad_params, kinds_, ValidationOptions()).status().message(),
              AllOf(HasSubstr("stage 'a'"), HasSubstr("params are not a StringValue")));
  auto misplaced = Load("stages:\n  - {name: a, kind: shout, report: {model: m}}\n");
  ASSERT_TRUE(misplaced.ok());
  EXPECT_THAT(ValidatePipeline(*misplaced, kinds_, ValidationOptions()).status().message(),
              HasSubstr("a stage of kind shout cannot have 'report:' parameters"));
  EXPECT_THAT(ValidatePipeline(*unknown_output, BuiltinStageKinds(), ValidationOptions()).status().message(),
              HasSubstr("unknown kind 'shout'"));
}

TEST_F(StageKindTest, TheRunnerRecordsARunOfAKindRegisteredHere) {
  const std::string dir = testing::MakeTempDir("runner");
  std::ofstream(dir + "/p.yaml") << kTwoShouts;
  PipelineRunOptions options;
  options.file = dir + "/p.yaml";
  options.overrides = {"vars.who=runner"};
  options.root = dir + "/store";
  options.kinds = &kinds_;
  std::vector<std::string> finished;
  options.on_start = [&finished](const StartedRun& run) -> std::function<void(const StageEvent&)> {
    EXPECT_FALSE(run.run_id.empty());
    EXPECT_TRUE(run.embedded);
    return [&finished](const StageEvent& event) {
      if (event.kind == StageEvent::Kind::kFinished) finished.push_back(event.stage);
    };
  };
  auto result = RunPipelineFile(options);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_TRUE(result->status.ok()) << result->status;
  EXPECT_EQ(result->outcome.outputs.at("again").at("text"), "HELLO RUNNER!");
  EXPECT_EQ(finished, (std::vector<std::string>{"hello", "again"}));
  auto store = RunStore::Open(StoreLayout(options.root).PipelineRuns());
  ASSERT_TRUE(store.ok());
  auto record = (*store)->GetRun(result->run_id);
  ASSERT_TRUE(record.ok()) << record.status();
  EXPECT_EQ(record->status, "finished");
  EXPECT_EQ(record->overrides, options.overrides);

  options.file = dir + "/missing.yaml";
  EXPECT_FALSE(RunPipelineFile(options).ok());
}

// `picky`: fails unless its parameter's text is "ok".
StageKind PickyStageKind() {
  StageKind kind = ShoutStageKind();
  kind.name = "picky";
  kind.run = [](const v1::Stage& stage, const StageContext& context, StageServices&) -> absl::StatusOr<StageOutputs> {
    absl::StatusOr<google::protobuf::StringValue> params =
        StageParamsAs<google::protobuf::StringValue>(stage, *context.kind);
    if (!params.ok()) return params.status();
    if (params->value() != "ok") return absl::InvalidArgumentError("picky wants ok, got " + params->value());
    return StageOutputs{{"text", params->value()}};
  };
  return kind;
}

// The stage:status pairs of a recorded run, in start order.
std::vector<std::string> StageStatuses(const RunRecord& run) {
  std::vector<std::string> statuses;
  for (const StageExecutionRecord& s : run.stages) statuses.push_back(s.stage + ":" + s.status);
  return statuses;
}

// kTwoShouts and a picky stage `check` that fails on its text "bad", in `<dir>/p.yaml`, run
// under `<dir>/store` with the kinds of `kinds`.
PipelineRunOptions TwoShoutsAndACheck(const std::string& dir, const StageKindRegistry& kinds) {
  std::ofstream(dir + "/p.yaml") << kTwoShouts << "  - {name: check, kind: picky, needs: [again], params: {value: bad}}\n";
  PipelineRunOptions options;
  options.file = dir + "/p.yaml";
  options.root = dir + "/store";
  options.kinds = &kinds;
  return options;
}

// The options that resume run `run_id` of `started` with `overrides`.
PipelineRunOptions ResumeOf(const PipelineRunOptions& started, const std::string& run_id,
                            std::vector<std::string> overrides) {
  PipelineRunOptions resume;
  resume.resume = run_id;
  resume.overrides = std::move(overrides);
  resume.root = started.root;
  resume.kinds = started.kinds;
  return resume;
}

TEST_F(StageKindTest, AResumedRunKeepsItsOverridesUnderTheNewOnesAndItsFinishedStages) {
  ASSERT_TRUE(kinds_.Register(PickyStageKind()).ok());
  PipelineRunOptions options = TwoShoutsAndACheck(testing::MakeTempDir("resume"), kinds_);
  options.overrides = {"vars.who=runner", "check.value=nope"};
  options.use_cache = false;
  auto first = RunPipelineFile(options);
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_THAT(first->status.message(), HasSubstr("picky wants ok, got nope"));

  auto second = RunPipelineFile(ResumeOf(options, first->run_id, {"check.value=ok"}));
  ASSERT_TRUE(second.ok()) << second.status();
  ASSERT_TRUE(second->status.ok()) << second->status;
  EXPECT_EQ(second->outcome.outputs.at("again").at("text"), "HELLO RUNNER!") << "the stored vars.who is kept";
  auto store = RunStore::Open(StoreLayout(options.root).PipelineRuns());
  ASSERT_TRUE(store.ok());
  auto record = (*store)->GetRun(first->run_id);
  ASSERT_TRUE(record.ok()) << record.status();
  EXPECT_THAT(StageStatuses(*record), ::testing::ElementsAre("hello:finished", "again:finished", "check:failed",
                                                             "hello:cached", "again:cached", "check:finished"));
  EXPECT_THAT(record->overrides, ::testing::ElementsAre("vars.who=runner", "check.value=ok"));
  ASSERT_TRUE(record->settings.has_value());
  EXPECT_FALSE(record->settings->use_cache) << "--no-cache stays with the run";
  EXPECT_EQ(record->settings->protocols_dir, std::filesystem::absolute(eval::kDefaultProtocolsDir).string());
}

TEST_F(StageKindTest, AResumeRefusesAPipelineFileThatChangedSinceTheRunStarted) {
  ASSERT_TRUE(kinds_.Register(PickyStageKind()).ok());
  const PipelineRunOptions options = TwoShoutsAndACheck(testing::MakeTempDir("changed"), kinds_);
  auto first = RunPipelineFile(options);
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_FALSE(first->status.ok());
  std::ofstream(options.file, std::ios::app) << "  - {name: more, kind: shout, params: {value: x}}\n";
  const absl::Status refused = RunPipelineFile(ResumeOf(options, first->run_id, {})).status();
  EXPECT_TRUE(absl::IsFailedPrecondition(refused)) << refused;
  const std::string recorded = RecordedPath(options.file);
  EXPECT_THAT(refused.message(), AllOf(HasSubstr(recorded + " changed since run " + first->run_id),
                                       HasSubstr("start a new run with roboloop run " + recorded)));
}

// `judge`: a shout that names, in its parameter's text, a protocol the eval service loads by name.
StageKind JudgeStageKind() {
  StageKind kind = ShoutStageKind();
  kind.name = "judge";
  kind.served_protocols = [](const v1::Stage& stage) {
    return std::vector<std::string>{stage.params().fields().at("value").string_value()};
  };
  return kind;
}

TEST_F(StageKindTest, AProtocolEditedOnTheEvalServiceIsNotAnsweredFromTheCache) {
  ASSERT_TRUE(kinds_.Register(JudgeStageKind()).ok());
  const std::string dir = testing::MakeTempDir("served-protocol");
  const std::string protocol = dir + "/protocols/gate.yaml";
  ASSERT_TRUE(std::filesystem::create_directories(dir + "/protocols"));
  const std::string text = "task: cartpole-swingup\nbase_seed: 0\nseed_start: 1000\nmax_steps: 50\n"
                           "execution: {chunk: {mode: FULL_CHUNK}}\n";
  std::ofstream(protocol) << text << "episodes: 10\n";
  std::ofstream(dir + "/p.yaml") << "name: p\nstages:\n  - {name: judge, kind: judge, params: {value: gate}}\n";
  PipelineRunOptions options;
  options.file = dir + "/p.yaml";
  options.root = dir + "/store";
  options.protocols_dir = dir + "/protocols";  // the embedded eval service's
  options.kinds = &kinds_;
  auto store = RunStore::Open(StoreLayout(options.root).PipelineRuns());
  ASSERT_TRUE(store.ok()) << store.status();
  const auto run_status = [&]() -> std::string {
    auto result = RunPipelineFile(options);
    if (!result.ok()) return result.status().ToString();
    auto record = (*store)->GetRun(result->run_id);
    if (!record.ok()) return record.status().ToString();
    return absl::StrJoin(StageStatuses(*record), ",");
  };
  EXPECT_EQ(run_status(), "judge:finished");
  EXPECT_EQ(run_status(), "judge:cached");
  std::ofstream(protocol) << text << "episodes: 20\n";
  EXPECT_EQ(run_status(), "judge:finished") << "the protocol the eval service loads changed";
  EXPECT_EQ(run_status(), "judge:cached");
}

// An EvalService as served before GetProtocol: every call is unimplemented.
class EvalServiceWithoutGetProtocol final : public v1::EvalService::Service {};

TEST_F(StageKindTest, AnEvalServiceWithoutGetProtocolKeysANamedProtocolByNameAndSaysSo) {
  const std::string dir = testing::MakeTempDir("older-eval");
  EvalServiceWithoutGetProtocol service;
  common::GrpcServerOptions server_options;
  server_options.listen_address = "unix:" + dir + "/eval.sock";
  auto server = common::GrpcServer::Create(server_options, {&service});
  ASSERT_TRUE(server.ok()) << server.status();
  wiring::ServiceTargets targets;
  targets.eval.target = (*server)->target();
  for (common::GrpcChannelOptions* unused : {&targets.registry, &targets.train}) {
    unused->target = "unix:" + dir + "/none.sock";
  }
  targets.sims.push_back(targets.registry);
  auto clients = wiring::ServiceClients::Connect(targets);
  ASSERT_TRUE(clients.ok()) << clients.status();
  ServiceStageExecutor executor(clients->get(), ExecutorOptions());
  const StageKind judge = JudgeStageKind();
  StageContext context;
  context.kind = &judge;
  v1::Stage stage;
  (*stage.mutable_params()->mutable_fields())["value"].set_string_value("gate");

  ::testing::internal::CaptureStderr();
  auto first = executor.ServedInputs(stage, context);
  auto second = executor.ServedInputs(stage, context);
  const std::string note = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_THAT(*first, ::testing::ElementsAre("protocol gate "));
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_THAT(note, AllOf(HasSubstr("note: the eval service has no GetProtocol (an older roboloop)"),
                          HasSubstr("by the name only")));
  EXPECT_EQ(note.find("note:"), note.rfind("note:")) << "noted once: " << note;
}

TEST_F(StageKindTest, ALoopIsRecordedWithItsIterationsAndLogLikeAStage) {
  const std::string dir = testing::MakeTempDir("loop");
  std::ofstream(dir + "/p.yaml") << R"(name: p
stages:
  - name: twice
    kind: loop
    loop:
      max_iterations: 2
      stages:
        - {name: hello, kind: shout, params: {value: hi}}
)";
  PipelineRunOptions options;
  options.file = dir + "/p.yaml";
  options.root = dir + "/store";
  options.kinds = &kinds_;
  auto result = RunPipelineFile(options);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_TRUE(result->status.ok()) << result->status;
  auto store = RunStore::Open(StoreLayout(options.root).PipelineRuns());
  ASSERT_TRUE(store.ok());
  auto record = (*store)->GetRun(result->run_id);
  ASSERT_TRUE(record.ok()) << record.status();
  EXPECT_THAT(StageStatuses(*record), ::testing::ElementsAre("twice:finished", "twice[1].hello:finished",
                                                             "twice[2].hello:cached"));
  EXPECT_EQ(record->stages[0].attempts, 2) << "a loop's attempts are its iterations";
  EXPECT_EQ(record->stages[0].log_path, StageLogPath(StoreLayout(options.root).PipelineRunDir(result->run_id) + "/logs", "twice"));
}

TEST_F(StageKindTest, TaskFilesAreLoadedWithTheirPipelineLineAndDuplicatesNameBothFiles) {
  const std::string task = std::string(ROBOLOOP_SOURCE_DIR) + "/configs/tasks/point_reach.yaml";
  auto fine = Load("name: t\ntask_files: [\"" + task + "\"]\nstages:\n  - {name: a, kind: shout, params: {value: x}}\n");
  ASSERT_TRUE(fine.ok()) << fine.status();
  EXPECT_TRUE(CheckTaskFiles(*fine).ok()) << CheckTaskFiles(*fine);
  auto missing = Load("name: t\ntask_files:\n  - nothere.yaml\nstages:\n  - {name: a, kind: shout, params: {value: x}}\n");
  ASSERT_TRUE(missing.ok()) << missing.status();
  EXPECT_THAT(CheckTaskFiles(*missing).message(),
              HasSubstr(missing->source + ":3: task_files[0] " + TaskFiles(*missing)[0] + ": no such file"));
  auto twice = Load("name: t\ntask_files: [\"" + task + "\", \"" + task + "\"]\nstages:\n  - {name: a, kind: shout, params: {value: x}}\n");
  ASSERT_TRUE(twice.ok()) << twice.status();
  EXPECT_THAT(CheckTaskFiles(*twice).message(),
              AllOf(HasSubstr(twice->source + ":2: task_files[1] " + task + ": task 'yaml-point-reach' is declared by " + task + " too")));
}

TEST_F(StageKindTest, RegistryRefusesIncompleteOrDuplicateRecords) {
  EXPECT_EQ(kinds_.Register(ShoutStageKind()).code(), absl::StatusCode::kAlreadyExists);
  StageKind nameless = ShoutStageKind();
  nameless.name = "";
  EXPECT_EQ(kinds_.Register(nameless).code(), absl::StatusCode::kInvalidArgument);
  StageKind idle = ShoutStageKind();
  idle.name = "idle";
  idle.run = nullptr;
  EXPECT_THAT(kinds_.Register(idle).message(), HasSubstr("needs a run function"));
  StageKind counting = ShoutStageKind();
  counting.name = "counting";
  counting.numeric_outputs = {"count"};
  EXPECT_THAT(kinds_.Register(counting).message(),
              HasSubstr("stage kind 'counting' declares numeric output 'count' but not output 'count'"));
}

}  // namespace
}  // namespace roboloop::pipeline
