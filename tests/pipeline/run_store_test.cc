// The run store and its cache, driven through the scheduler with a fake executor: a second
// run (resume) skips the stages that finished and continues a stopped one from its last
// resume point, --no-cache runs them again; a run whose runner died reads as interrupted.
#include "pipeline/run_store.h"
#include "pipeline/stage_kinds/builtin.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>

#include "common/fs.h"
#include "common/sqlite.h"
#include "tests/util/subprocess.h"

namespace roboloop::pipeline {
namespace {

using ::testing::HasSubstr;

class CountingExecutor : public StageExecutor {
 public:
  absl::StatusOr<StageOutputs> Run(const v1::Stage& stage, const StageContext&) override {
    absl::MutexLock lock(&mu_);
    ++calls[stage.name()];
    if (fail.count(stage.name())) return absl::InternalError("broken " + stage.name());
    return StageOutputs{{"dataset", "ds-" + stage.name() + "-" + stage.merge().dataset_name()}};
  }
  absl::StatusOr<std::vector<std::string>> ServedInputs(const v1::Stage& stage, const StageContext&) override {
    absl::MutexLock lock(&mu_);
    if (unserved.count(stage.name())) return absl::UnavailableError("no eval service for " + stage.name());
    return served[stage.name()];
  }
  std::map<std::string, int> calls;
  std::set<std::string> fail;
  std::map<std::string, std::vector<std::string>> served;  // ServedInputs of each stage
  std::set<std::string> unserved;                         // stages whose ServedInputs fail

 private:
  absl::Mutex mu_;
};

constexpr char kPipeline[] = R"(name: p
stages:
  - {name: a, kind: merge, merge: {dataset_name: x}}
  - {name: b, kind: merge, merge: {datasets: ["${a.dataset}"], dataset_name: y}}
)";

// Stage b records resume points "b@1" and "b@2" and is then stopped (once); every execution
// of b notes the resume point it was given.
class StoppingExecutor : public StageExecutor {
 public:
  absl::StatusOr<StageOutputs> Run(const v1::Stage& stage, const StageContext& context) override {
    if (stage.name() != "b") return StageOutputs{{"dataset", "ds-" + stage.name()}};
    given.push_back(context.resume_point);
    if (given.size() > 1) return StageOutputs{{"dataset", "ds-b"}};
    for (const char* point : {"b@1", "b@2"}) {
      if (absl::Status s = context.RecordResumePoint(point); !s.ok()) return s;
    }
    return absl::CancelledError("stopped");
  }
  std::vector<std::string> given;
};

class RunStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::MakeTempDir("runs");
    std::ofstream(dir_ + "/p.yaml") << kPipeline;
    loaded_ = *LoadPipeline(dir_ + "/p.yaml", {});
    plan_ = *ValidatePipeline(loaded_, BuiltinStageKinds(), ValidationOptions());
    store_ = std::move(*RunStore::Open(dir_ + "/store/runs.db"));
  }

  absl::Status RunOnce(const std::string& run_id, bool use_cache) {
    RecordingExecutor recording(&inner_, store_.get(), run_id, use_cache);
    return RunPipeline(loaded_, plan_, recording, SchedulerOptions()).status();
  }

  std::string dir_;
  LoadedPipeline loaded_;
  Plan plan_;
  std::unique_ptr<RunStore> store_;
  CountingExecutor inner_;
};

TEST_F(RunStoreTest, ResumeSkipsFinishedStagesAndRunsTheRest) {
  auto run = store_->CreateRun("p", dir_ + "/p.yaml");
  ASSERT_TRUE(run.ok()) << run.status();
  inner_.fail.insert("b");
  EXPECT_THAT(RunOnce(*run, true).message(), HasSubstr("broken b"));
  ASSERT_TRUE(store_->FinishRun(*run, "failed", "broken b").ok());
  inner_.fail.clear();
  ASSERT_TRUE(store_->ReopenRun(*run, "p.yaml", {}, {}).ok());
  ASSERT_TRUE(RunOnce(*run, true).ok());
  EXPECT_EQ(inner_.calls["a"], 1) << "a finished in the first attempt and is reused";
  EXPECT_EQ(inner_.calls["b"], 2);
  auto record = store_->GetRun(*run);
  ASSERT_TRUE(record.ok()) << record.status();
  std::vector<std::string> statuses;
  for (const StageExecutionRecord& e : record->stages) statuses.push_back(e.stage + ":" + e.status);
  EXPECT_THAT(statuses, ::testing::ElementsAre("a:finished", "b:failed", "a:cached", "b:finished"));
  EXPECT_EQ(record->stages[2].outputs_json, record->stages[0].outputs_json);
  EXPECT_THAT(record->stages[1].message, HasSubstr("broken b"));
}

TEST_F(RunStoreTest, AStoppedStageContinuesFromTheLastResumePointItRecorded) {
  auto run = store_->CreateRun("p", dir_ + "/p.yaml");
  ASSERT_TRUE(run.ok()) << run.status();
  StoppingExecutor inner;
  RecordingExecutor recording(&inner, store_.get(), *run, true);
  EXPECT_TRUE(absl::IsCancelled(RunPipeline(loaded_, plan_, recording, SchedulerOptions()).status()));
  ASSERT_TRUE(store_->FinishRun(*run, "cancelled", "").ok());
  ASSERT_TRUE(store_->ReopenRun(*run, "p.yaml", {}, {}).ok());
  ASSERT_TRUE(RunPipeline(loaded_, plan_, recording, SchedulerOptions()).ok());
  EXPECT_THAT(inner.given, ::testing::ElementsAre("", "b@2"));
  auto record = store_->GetRun(*run);
  ASSERT_TRUE(record.ok());
  ASSERT_EQ(record->stages.size(), 4u);
  EXPECT_EQ(record->stages[1].status, "cancelled");
  EXPECT_EQ(record->stages[1].resume_point, "b@2");
  const std::string key = record->stages[1].cache_key;
  EXPECT_EQ(*store_->FindResumePoint(*run, "b", key), "b@2");
  EXPECT_EQ(*store_->FindResumePoint(*run, "b", "other-parameters"), "") << "changed parameters start afresh";
  auto other = store_->CreateRun("p", dir_ + "/p.yaml");
  EXPECT_EQ(*store_->FindResumePoint(*other, "b", key), "") << "another run starts afresh";
}

TEST_F(RunStoreTest, ARunWhoseRunnerDiedReadsAsInterruptedAndCanBeReopened) {
  const std::string db = dir_ + "/store/runs.db", id_file = dir_ + "/run-id";
  store_.reset();
  const pid_t runner = fork();
  if (runner == 0) {  // a runner that dies in the middle of stage a
    auto store = RunStore::Open(db);
    if (!store.ok()) _exit(2);
    auto run = (*store)->CreateRun("p", "p.yaml");
    if (!run.ok() || !(*store)->StartStage(*run, "a", "key").ok()) _exit(3);
    std::ofstream(id_file) << *run;
    _exit(0);
  }
  int status = 0;
  waitpid(runner, &status, 0);
  ASSERT_EQ(WEXITSTATUS(status), 0);
  store_ = std::move(*RunStore::Open(db));
  const std::string dead = testing::ReadWholeFile(id_file);
  auto live = store_->CreateRun("p", "p.yaml");
  ASSERT_TRUE(live.ok());

  auto runs = store_->ListRuns(10);
  ASSERT_TRUE(runs.ok()) << runs.status();
  std::map<std::string, std::string> statuses;
  for (const RunRecord& r : *runs) statuses[r.id] = r.status;
  EXPECT_EQ(statuses[dead], "interrupted");
  EXPECT_EQ(statuses[*live], "running") << "this process still runs it";
  auto record = store_->GetRun(dead);
  ASSERT_TRUE(record.ok());
  EXPECT_EQ(record->runner.pid, runner);
  EXPECT_THAT(record->message, HasSubstr("pid " + std::to_string(runner)));
  ASSERT_EQ(record->stages.size(), 1u);
  EXPECT_EQ(record->stages[0].status, "interrupted");
  EXPECT_EQ(record->stages[0].attempts, 1) << "it was in its first attempt";

  EXPECT_TRUE(store_->ReopenRun(dead, "p.yaml", {}, {}).ok());
  EXPECT_EQ(store_->GetRun(dead)->status, "running");
  EXPECT_EQ(store_->GetRun(dead)->runner.pid, getpid());
  EXPECT_THAT(store_->ReopenRun(*live, "p.yaml", {}, {}).message(), HasSubstr("is still running"));
}

TEST_F(RunStoreTest, AStoreOfSchema1IsUpgradedAndKeepsItsRuns) {
  const std::string db = dir_ + "/old/runs.db";
  ASSERT_TRUE(MakeDirs(dir_ + "/old").ok());
  {
    auto old = SqliteDb::Open(db, 1000);
    ASSERT_TRUE(old.ok());
    ASSERT_TRUE((*old)->Exec(R"(
CREATE TABLE schema_version (version INTEGER NOT NULL);
INSERT INTO schema_version VALUES (1);
CREATE TABLE runs (
  id TEXT PRIMARY KEY, pipeline TEXT NOT NULL, spec_path TEXT NOT NULL, status TEXT NOT NULL,
  created_us INTEGER NOT NULL, finished_us INTEGER NOT NULL DEFAULT 0, message TEXT NOT NULL DEFAULT '',
  overrides_json TEXT NOT NULL DEFAULT '[]');
CREATE TABLE stage_executions (
  id INTEGER PRIMARY KEY AUTOINCREMENT, run_id TEXT NOT NULL REFERENCES runs(id), stage TEXT NOT NULL,
  cache_key TEXT NOT NULL, status TEXT NOT NULL, attempts INTEGER NOT NULL DEFAULT 0,
  started_us INTEGER NOT NULL, finished_us INTEGER NOT NULL DEFAULT 0,
  outputs_json TEXT NOT NULL DEFAULT '{}', message TEXT NOT NULL DEFAULT '',
  params_json TEXT NOT NULL DEFAULT '{}', log_path TEXT NOT NULL DEFAULT '');
INSERT INTO runs (id, pipeline, spec_path, status, created_us) VALUES ('old', 'p', 'p.yaml', 'running', 1);
INSERT INTO stage_executions (run_id, stage, cache_key, status, started_us) VALUES ('old', 'a', 'k', 'running', 1);
)").ok());
  }
  auto store = RunStore::Open(db);
  ASSERT_TRUE(store.ok()) << store.status();
  auto old = (*store)->GetRun("old");
  ASSERT_TRUE(old.ok()) << old.status();
  EXPECT_EQ(old->status, "running") << "a run without a recorded runner cannot be judged";
  EXPECT_FALSE(old->settings.has_value()) << "it was recorded before settings were";
  ASSERT_EQ(old->stages.size(), 1u);
  EXPECT_TRUE((*store)->RecordResumePoint(old->stages[0].id, "a@1").ok());
  EXPECT_EQ(*(*store)->FindResumePoint("old", "a", "k"), "a@1");
  EXPECT_TRUE((*store)->CreateRun("p", "p.yaml").ok());
}

TEST_F(RunStoreTest, NoCacheRunsEverythingAndChangedParametersMiss) {
  auto first = store_->CreateRun("p", "p.yaml");
  ASSERT_TRUE(RunOnce(*first, true).ok());
  auto second = store_->CreateRun("p", "p.yaml");
  ASSERT_TRUE(RunOnce(*second, false).ok());
  EXPECT_EQ(inner_.calls["a"], 2);
  v1::Stage a = loaded_.pipeline.stages(0);
  const std::string key = StageCacheKey(a);
  a.set_name("renamed");
  a.set_retries(3);
  EXPECT_EQ(StageCacheKey(a), key) << "names and retries do not change what a stage makes";
  a.mutable_merge()->set_dataset_name("z");
  EXPECT_NE(StageCacheKey(a), key);
  EXPECT_FALSE(store_->FindCached(StageCacheKey(a))->has_value());
}

TEST_F(RunStoreTest, ExecutionsRecordTheirInputsLogFileAndTheRunItsOverrides) {
  auto run = store_->CreateRun("p", "p.yaml", {"a.dataset_name=x"});
  ASSERT_TRUE(run.ok());
  RecordingExecutor recording(&inner_, store_.get(), *run, true, dir_ + "/logs");
  ASSERT_TRUE(RunPipeline(loaded_, plan_, recording, SchedulerOptions()).ok());
  auto record = store_->GetRun(*run);
  ASSERT_TRUE(record.ok());
  EXPECT_THAT(record->overrides, ::testing::ElementsAre("a.dataset_name=x"));
  ASSERT_EQ(record->stages.size(), 2u);
  EXPECT_THAT(record->stages[1].params_json, HasSubstr("\"datasets\":[\"ds-a-x\"]")) << "inputs as substituted";
  EXPECT_EQ(record->stages[1].log_path, StageLogPath(dir_ + "/logs", "b"));
  EXPECT_EQ(FileStem("improve[2].gate"), "improve-2--gate");
}

TEST_F(RunStoreTest, ARunKeepsWhatItWasStartedWithAndAReopeningReplacesIt) {
  const RunSettings started{"abc", false, "/s/services.yaml", "/s/protocols"};
  auto run = store_->CreateRun("p", "p.yaml", {"a.dataset_name=x"}, started);
  ASSERT_TRUE(run.ok());
  auto record = store_->GetRun(*run);
  ASSERT_TRUE(record.ok() && record->settings.has_value());
  EXPECT_EQ(record->settings->spec_sha256, "abc");
  EXPECT_FALSE(record->settings->use_cache);
  EXPECT_EQ(record->settings->services_file, "/s/services.yaml");
  EXPECT_EQ(record->settings->protocols_dir, "/s/protocols");
  ASSERT_TRUE(store_->FinishRun(*run, "failed", "").ok());
  ASSERT_TRUE(
      store_->ReopenRun(*run, "p.yaml", {"a.dataset_name=x", "b.dataset_name=y"}, RunSettings{"abc", false, "", "/p"})
          .ok());
  record = store_->GetRun(*run);
  EXPECT_THAT(record->overrides, ::testing::ElementsAre("a.dataset_name=x", "b.dataset_name=y"));
  EXPECT_EQ(record->settings->protocols_dir, "/p");
  EXPECT_EQ(record->settings->services_file, "");
}

TEST_F(RunStoreTest, PromoteAndReportAreReusedOnlyWithinTheirOwnRun) {
  std::ofstream(dir_ + "/promote.yaml") << "name: q\nstages:\n  - {name: p, kind: promote, promote: {model: m}}\n";
  loaded_ = *LoadPipeline(dir_ + "/promote.yaml", {});
  plan_ = *ValidatePipeline(loaded_, BuiltinStageKinds(), ValidationOptions());
  auto first = store_->CreateRun("q", "promote.yaml");
  ASSERT_TRUE(RunOnce(*first, true).ok());
  ASSERT_TRUE(RunOnce(*first, true).ok());
  EXPECT_EQ(inner_.calls["p"], 1) << "resuming the run reuses its own promotion";
  auto second = store_->CreateRun("q", "promote.yaml");
  ASSERT_TRUE(RunOnce(*second, true).ok());
  EXPECT_EQ(inner_.calls["p"], 2) << "another run promotes again: the champion may have moved";
}

TEST_F(RunStoreTest, AChangedProtocolOrDatasetFileIsNotAnsweredFromTheCache) {
  const std::string protocol = dir_ + "/gate.yaml", dataset = dir_ + "/demos.hdf5";
  std::ofstream(protocol) << "task: cartpole-swingup\nseed_start: 100\nepisodes: 8\nmax_steps: 50\n"
                          << "execution: {chunk: {mode: FULL_CHUNK}}\n";
  std::ofstream(dataset) << "first";
  std::ofstream(dir_ + "/files.yaml") << "name: f\nstages:\n"
                                      << "  - {name: t, kind: train, train: {dataset: " << dataset << "}}\n"
                                      << "  - {name: e, kind: evaluate, evaluate: {checkpoint: c, protocol: " << protocol
                                      << "}}\n";
  loaded_ = *LoadPipeline(dir_ + "/files.yaml", {});
  plan_ = *ValidatePipeline(loaded_, BuiltinStageKinds(), ValidationOptions());
  ASSERT_TRUE(RunOnce(*store_->CreateRun("f", "files.yaml"), true).ok());
  ASSERT_TRUE(RunOnce(*store_->CreateRun("f", "files.yaml"), true).ok());
  EXPECT_EQ(inner_.calls["t"], 1) << "unchanged files: the cache answers";
  EXPECT_EQ(inner_.calls["e"], 1);
  std::ofstream(protocol) << "task: cartpole-swingup\nseed_start: 9000\nepisodes: 8\nmax_steps: 50\n"
                          << "execution: {chunk: {mode: FULL_CHUNK}}\n";
  std::ofstream(dataset) << "another dataset";
  ASSERT_TRUE(RunOnce(*store_->CreateRun("f", "files.yaml"), true).ok());
  EXPECT_EQ(inner_.calls["t"], 2) << "the dataset file changed: train again";
  EXPECT_EQ(inner_.calls["e"], 2) << "the protocol file changed: evaluate again";
}

TEST_F(RunStoreTest, AChangedServedInputIsNotAnsweredFromTheCacheAndOneThatFailsIsRecorded) {
  inner_.served["a"] = {"protocol gate 1111"};
  ASSERT_TRUE(RunOnce(*store_->CreateRun("p", "p.yaml"), true).ok());
  ASSERT_TRUE(RunOnce(*store_->CreateRun("p", "p.yaml"), true).ok());
  EXPECT_EQ(inner_.calls["a"], 1) << "the same served inputs: the cache answers";
  inner_.served["a"] = {"protocol gate 2222"};
  ASSERT_TRUE(RunOnce(*store_->CreateRun("p", "p.yaml"), true).ok());
  EXPECT_EQ(inner_.calls["a"], 2) << "the protocol the service loads changed: run again";
  EXPECT_EQ(inner_.calls["b"], 1) << "b's own inputs did not change";

  inner_.unserved.insert("a");
  const std::string run = *store_->CreateRun("p", "p.yaml");
  EXPECT_THAT(RunOnce(run, true).message(), HasSubstr("no eval service for a"));
  EXPECT_EQ(inner_.calls["a"], 2);
  auto record = store_->GetRun(run);
  ASSERT_TRUE(record.ok()) << record.status();
  ASSERT_EQ(record->stages.size(), 1u);
  EXPECT_EQ(record->stages[0].status, "failed");
  EXPECT_THAT(record->stages[0].message, HasSubstr("no eval service for a"));
}

TEST_F(RunStoreTest, RunsSurviveReopeningAndUnknownRunsAreNamed) {
  auto run = store_->CreateRun("p", "p.yaml");
  ASSERT_TRUE(store_->FinishRun(*run, "finished", "").ok());
  store_.reset();
  auto reopened = RunStore::Open(dir_ + "/store/runs.db");
  ASSERT_TRUE(reopened.ok()) << reopened.status();
  auto runs = (*reopened)->ListRuns(10);
  ASSERT_TRUE(runs.ok());
  ASSERT_EQ(runs->size(), 1u);
  EXPECT_EQ(runs->front().status, "finished");
  EXPECT_THAT((*reopened)->GetRun("nosuch").status().message(), HasSubstr("no pipeline run nosuch"));
  EXPECT_FALSE(RunStore::Open("/proc/forbidden/runs.db").ok());
}

}  // namespace
}  // namespace roboloop::pipeline
