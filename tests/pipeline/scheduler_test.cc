// The scheduler with a scripted executor (a fake, standing in for the services): order,
// concurrency, substitution, retries with backoff, timeouts, loops and cancellation.
#include "pipeline/scheduler.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <optional>
#include <thread>

#include "absl/synchronization/mutex.h"
#include "pipeline/stage_kinds/builtin.h"
#include "tests/util/subprocess.h"

namespace roboloop::pipeline {
namespace {

using ::testing::HasSubstr;

// Records calls; each stage's behaviour is scripted by name.
class ScriptedExecutor : public StageExecutor {
 public:
  std::function<absl::StatusOr<StageOutputs>(const v1::Stage&, int call, const common::CancellationToken&)> script;

  absl::StatusOr<StageOutputs> Run(const v1::Stage& stage, const StageContext& context) override {
    int call;
    {
      absl::MutexLock lock(&mu);
      call = ++calls[stage.name()];
      order.push_back(stage.name());
      seen.push_back(stage);
      if (on_kind) on_kind(context.kind);
      ++running;
      max_running = std::max(max_running, running);
    }
    absl::StatusOr<StageOutputs> result = script(stage, call, *context.cancel);
    absl::MutexLock lock(&mu);
    --running;
    return result;
  }

  std::function<void(const StageKind*)> on_kind;  // called per stage, under `mu`
  absl::Mutex mu;
  std::map<std::string, int> calls;
  std::vector<std::string> order;
  std::vector<v1::Stage> seen;
  int running = 0, max_running = 0;
};

class SchedulerTest : public ::testing::Test {
 protected:
  absl::StatusOr<RunOutcome> Run(const std::string& yaml, SchedulerOptions options = {}) {
    const std::string dir = testing::MakeTempDir("sched");
    std::ofstream(dir + "/p.yaml") << yaml;
    auto loaded = LoadPipeline(dir + "/p.yaml", {});
    if (!loaded.ok()) return loaded.status();
    loaded_ = *loaded;
    auto plan = ValidatePipeline(loaded_, BuiltinStageKinds(), ValidationOptions());
    if (!plan.ok()) return plan.status();
    plan_ = *plan;
    options.default_backoff = absl::Milliseconds(10);
    return RunPipeline(loaded_, plan_, executor_, options);
  }

  ScriptedExecutor executor_;
  LoadedPipeline loaded_;
  Plan plan_;
};

constexpr char kDiamond[] = R"(vars: {model: m}
stages:
  - {name: a, kind: collect, collect: {task: t, episodes: 1}}
  - {name: b, kind: collect, collect: {task: t, episodes: 1, first_episode: 10}}
  - {name: merged, kind: merge, merge: {datasets: ["${a.dataset}", "${b.dataset}"]}}
  - {name: train, kind: train, train: {dataset: "${merged.dataset}", model: "${vars.model}"}}
)";

TEST_F(SchedulerTest, RunsIndependentStagesConcurrentlyAndSubstitutesOutputs) {
  executor_.script = [](const v1::Stage& stage, int, const common::CancellationToken&) -> absl::StatusOr<StageOutputs> {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (stage.kind() == "train") return StageOutputs{{"checkpoint", "ck-" + stage.train().dataset()}};
    return StageOutputs{{"dataset", "ds-" + stage.name()}};
  };
  auto outcome = Run(kDiamond);
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  EXPECT_EQ(executor_.max_running, 2) << "a and b run at the same time";
  EXPECT_EQ(executor_.order.back(), "train");
  EXPECT_EQ(outcome->outputs.at("train").at("checkpoint"), "ck-ds-merged");
  const v1::Stage& merged = executor_.seen[2];
  EXPECT_THAT(std::vector<std::string>(merged.merge().datasets().begin(), merged.merge().datasets().end()),
              ::testing::UnorderedElementsAre("ds-a", "ds-b"));
  EXPECT_EQ(executor_.seen[3].train().model(), "m");
}

TEST_F(SchedulerTest, TransientFailuresAreRetriedWithBackoffAndOthersFailAtOnce) {
  executor_.script = [](const v1::Stage& stage, int call, const common::CancellationToken&) -> absl::StatusOr<StageOutputs> {
    if (stage.name() == "a" && call < 3) return absl::UnavailableError("service restarting");
    if (stage.name() == "b") return absl::InvalidArgumentError("bad task");
    return StageOutputs{{"dataset", "x"}};
  };
  auto outcome = Run(R"(stages:
  - {name: a, kind: collect, retries: 3, collect: {task: t, episodes: 1}}
  - {name: b, kind: collect, retries: 3, needs: [a], collect: {task: t, episodes: 1, first_episode: 5}}
)");
  EXPECT_EQ(executor_.calls["a"], 3);
  EXPECT_EQ(executor_.calls["b"], 1) << "a non-transient error is not retried";
  EXPECT_THAT(outcome.status().message(), HasSubstr("stage b"));
  EXPECT_THAT(outcome.status().message(), HasSubstr("bad task"));
}

TEST_F(SchedulerTest, TimeoutCancelsTheAttempt) {
  executor_.script = [](const v1::Stage&, int, const common::CancellationToken& cancel) -> absl::StatusOr<StageOutputs> {
    while (!cancel.IsCancelled()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    return absl::CancelledError("stopped");
  };
  auto outcome = Run("stages:\n  - {name: slow, kind: report, timeout_s: 0.2, retries: 1, report: {}}\n");
  EXPECT_EQ(outcome.status().code(), absl::StatusCode::kDeadlineExceeded) << outcome.status();
  EXPECT_EQ(executor_.calls["slow"], 2) << "a timeout is transient: retried once";
}

constexpr char kLoop[] = R"(stages:
  - name: improve
    kind: loop
    loop:
      max_iterations: 4
      until: "${gate.success.lower} >= 0.85"
      stages:
        - {name: tune, kind: train, train: {dataset: d}}
        - {name: gate, kind: evaluate, evaluate: {checkpoint: "${tune.checkpoint}"}}
)";

TEST_F(SchedulerTest, LoopRepeatsUntilItsConditionHolds) {
  executor_.script = [](const v1::Stage& stage, int call, const common::CancellationToken&) -> absl::StatusOr<StageOutputs> {
    if (stage.kind() == "train") return StageOutputs{{"checkpoint", "ck" + std::to_string(call)}};
    return StageOutputs{{"success.lower", call >= 3 ? "0.9" : "0.5"}};
  };
  auto outcome = Run(kLoop);
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  EXPECT_EQ(outcome->loop_iterations.at("improve"), 3);
  EXPECT_EQ(outcome->outputs.at("improve").at("checkpoint"), "ck3");
  EXPECT_EQ(executor_.seen.back().evaluate().checkpoint(), "ck3");
}

TEST_F(SchedulerTest, LoopCarryFeedsEachIterationThePreviousIterationsOutputs) {
  executor_.script = [](const v1::Stage& stage, int call, const common::CancellationToken&) -> absl::StatusOr<StageOutputs> {
    if (stage.name() == "base") return StageOutputs{{"checkpoint", "ck0"}, {"run", "r0"}};
    if (stage.kind() == "train") return StageOutputs{{"checkpoint", "ck" + std::to_string(call)}, {"run", "r"}};
    return StageOutputs{{"success.lower", call >= 3 ? "0.9" : "0.5"}};
  };
  auto outcome = Run(R"(stages:
  - {name: base, kind: train, train: {dataset: d}}
  - name: improve
    kind: loop
    loop:
      max_iterations: 4
      until: "${gate.success.lower} >= 0.85"
      carry: {base: tune}
      stages:
        - {name: tune, kind: train, train: {dataset: d, init_from: "${base.checkpoint}"}}
        - {name: gate, kind: evaluate, evaluate: {checkpoint: "${tune.checkpoint}"}}
)");
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  std::vector<std::string> init_from;
  for (const v1::Stage& stage : executor_.seen) {
    if (stage.name() == "tune") init_from.push_back(stage.train().init_from());
  }
  EXPECT_EQ(init_from, (std::vector<std::string>{"ck0", "ck1", "ck2"}));
}

TEST_F(SchedulerTest, LoopWithoutItsConditionFailsWithConditionNotMet) {
  executor_.script = [](const v1::Stage& stage, int, const common::CancellationToken&) -> absl::StatusOr<StageOutputs> {
    if (stage.kind() == "train") return StageOutputs{{"checkpoint", "ck"}};
    return StageOutputs{{"success.lower", "0.5"}};
  };
  auto outcome = Run(kLoop);
  EXPECT_EQ(outcome.status().code(), absl::StatusCode::kFailedPrecondition);
  std::optional<UnmetLoop> unmet = UnmetLoopOf(outcome.status());
  ASSERT_TRUE(unmet.has_value()) << outcome.status();
  EXPECT_EQ(unmet->loop, "improve");
  EXPECT_EQ(unmet->iterations, 4);
  EXPECT_THAT(unmet->condition, HasSubstr("gate.success.lower"));
  EXPECT_FALSE(UnmetLoopOf(absl::FailedPreconditionError("condition not met")).has_value());
  EXPECT_EQ(executor_.calls["gate"], 4);
}

// What a run with an unmet loop produced reaches `produced`, for `run` to summarize: the top-level
// stages that finished and each iteration of the loop.
TEST_F(SchedulerTest, AnUnmetLoopStillReportsWhatTheRunProduced) {
  executor_.script = [](const v1::Stage& stage, int, const common::CancellationToken&) -> absl::StatusOr<StageOutputs> {
    if (stage.kind() == "train") return StageOutputs{{"checkpoint", "ck"}};
    return StageOutputs{{"success.lower", "0.5"}};
  };
  RunOutcome produced;
  SchedulerOptions options;
  options.produced = &produced;
  auto outcome = Run(R"(stages:
  - {name: base, kind: train, train: {dataset: d}}
  - name: improve
    kind: loop
    needs: [base]
    loop:
      max_iterations: 2
      until: "${gate.success.lower} >= 0.85"
      stages:
        - {name: gate, kind: evaluate, evaluate: {checkpoint: "${base.checkpoint}"}}
)", options);
  ASSERT_TRUE(UnmetLoopOf(outcome.status()).has_value()) << outcome.status();
  EXPECT_EQ(produced.outputs.at("base").at("checkpoint"), "ck");
  EXPECT_EQ(produced.outputs.count("improve"), 0u);
  EXPECT_EQ(produced.loop_iterations.at("improve"), 2);
  ASSERT_EQ(produced.loop_bodies.at("improve").size(), 2u);
  EXPECT_EQ(produced.loop_bodies.at("improve")[1].at("gate").at("success.lower"), "0.5");
}

TEST_F(SchedulerTest, CancellationStopsRunningStagesAndStartsNoMore) {
  common::CancellationToken cancel;
  executor_.script = [&](const v1::Stage&, int, const common::CancellationToken& stage_cancel) -> absl::StatusOr<StageOutputs> {
    cancel.Cancel("test");
    while (!stage_cancel.IsCancelled()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    return absl::CancelledError("stopped");
  };
  SchedulerOptions options;
  options.cancel = &cancel;
  auto outcome = Run(kDiamond, options);
  EXPECT_EQ(outcome.status().code(), absl::StatusCode::kCancelled) << outcome.status();
  EXPECT_EQ(executor_.calls.count("merged"), 0u);
}

TEST_F(SchedulerTest, AFailingStageCancelsItsRunningSiblings) {
  std::atomic<bool> sibling_cancelled{false};
  executor_.script = [&](const v1::Stage& stage, int, const common::CancellationToken& stage_cancel) -> absl::StatusOr<StageOutputs> {
    if (stage.name() == "a") return absl::InternalError("a broke");
    const absl::Time give_up = absl::Now() + absl::Seconds(30);
    while (!stage_cancel.IsCancelled() && absl::Now() < give_up) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    sibling_cancelled = stage_cancel.IsCancelled();
    return absl::CancelledError("stopped");
  };
  auto outcome = Run(kDiamond);
  EXPECT_EQ(outcome.status().code(), absl::StatusCode::kInternal) << outcome.status();
  EXPECT_THAT(outcome.status().message(), HasSubstr("a broke"));
  EXPECT_TRUE(sibling_cancelled);
  EXPECT_EQ(executor_.calls.count("merged"), 0u);
}

TEST_F(SchedulerTest, ExecutorsGetTheirKindsRecord) {
  std::vector<std::string> kinds;
  executor_.script = [](const v1::Stage& stage, int, const common::CancellationToken&) -> absl::StatusOr<StageOutputs> {
    if (stage.kind() == "train") return StageOutputs{{"checkpoint", "ck"}};
    return StageOutputs{{"dataset", stage.name()}};
  };
  executor_.on_kind = [&](const StageKind* kind) { kinds.push_back(kind == nullptr ? "" : kind->name); };
  ASSERT_TRUE(Run(kDiamond).ok());
  std::sort(kinds.begin(), kinds.end());
  EXPECT_EQ(kinds, (std::vector<std::string>{"collect", "collect", "merge", "train"}));
}

TEST(SubstituteTest, MissingValuesAreNamed) {
  EXPECT_EQ(*Substitute("x-${a.dataset}-${vars.v}", {{"a", {{"dataset", "d"}}}}, {{"v", "1"}}), "x-d-1");
  EXPECT_THAT(Substitute("${a.checkpoint}", {{"a", {{"dataset", "d"}}}}, {}).status().message(),
              HasSubstr("${a.checkpoint} has no value"));
}

}  // namespace
}  // namespace roboloop::pipeline
