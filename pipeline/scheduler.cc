// Running a pipeline's DAG.
#include "pipeline/scheduler.h"

#include <atomic>
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <chrono>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "common/status.h"

namespace roboloop::pipeline {
namespace {

constexpr char kUnmetLoopPayload[] = "type.roboloop.dev/pipeline.UnmetLoop";

absl::Status UnmetLoopError(const UnmetLoop& unmet) {
  absl::Status status = absl::FailedPreconditionError(absl::StrCat(
      "stage ", unmet.loop, ": condition not met (", unmet.condition, ") after ", unmet.iterations, " iterations"));
  status.SetPayload(kUnmetLoopPayload,
                    absl::Cord(absl::StrCat(unmet.iterations, "\n", unmet.loop, "\n", unmet.condition)));
  return status;
}

// Replaces the references in every string of `stage` (its loop body and condition excluded).
absl::Status SubstituteAll(v1::Stage* stage, const std::map<std::string, StageOutputs>& outputs,
                           const std::map<std::string, std::string>& vars) {
  return VisitStageStrings(stage, [&](std::string* text) -> absl::Status {
    ROBOLOOP_ASSIGN_OR_RETURN(*text, Substitute(*text, outputs, vars));
    return absl::OkStatus();
  });
}

// The loop's outputs besides `iterations`: of those its kind declares, the last value a stage
// of its body produced in this iteration.
void ForwardBodyOutputs(const StageKind& loop_kind, const google::protobuf::RepeatedPtrField<v1::Stage>& body,
                        const std::map<std::string, StageOutputs>& produced_by, StageOutputs* outputs) {
  for (const v1::Stage& stage : body) {
    auto produced = produced_by.find(stage.name());
    if (produced == produced_by.end()) continue;
    for (const std::string& name : loop_kind.outputs) {
      auto value = produced->second.find(name);
      if (name != kLoopIterations && value != produced->second.end()) (*outputs)[name] = value->second;
    }
  }
}

class Runner {
 public:
  Runner(const LoadedPipeline& loaded, const Plan& plan, StageExecutor& executor, const SchedulerOptions& options)
      : loaded_(loaded), plan_(plan), executor_(executor), options_(options), pool_(std::max(1, options.threads)),
        vars_(loaded.pipeline.vars().begin(), loaded.pipeline.vars().end()), user_cancel_(run_cancel_.LinkTo(options.cancel)) {}

  ~Runner() { pool_.join(); }

  absl::StatusOr<RunOutcome> Run() {
    RunOutcome outcome;
    std::map<std::string, StageOutputs> visible;
    absl::Status status = RunScope(loaded_.pipeline.stages(), visible, "", &outcome).status();
    if (options_.produced != nullptr) *options_.produced = outcome;
    if (!status.ok()) return status;
    return outcome;
  }

 private:
  // True once the run stops starting stages: cancelled by the caller or by a failure.
  bool Stopping() const { return run_cancel_.IsCancelled(); }

  const StageKind& KindOf(const v1::Stage& stage) const { return *plan_.kinds->Find(stage.kind()); }

  void Emit(StageEvent event) {
    if (!options_.observer) return;
    absl::MutexLock lock(&observer_mu_);
    options_.observer(event);
  }

  // Runs the stages of one scope to completion; `visible` holds outer outputs.
  absl::StatusOr<std::map<std::string, StageOutputs>> RunScope(
      const google::protobuf::RepeatedPtrField<v1::Stage>& stages, const std::map<std::string, StageOutputs>& visible,
      const std::string& prefix, RunOutcome* outcome) {
    absl::Mutex mu;
    absl::CondVar changed;
    std::map<std::string, StageOutputs> done;
    std::set<std::string> started;
    absl::Status failure;
    int running = 0;
    std::vector<std::thread> loop_threads;
    common::CancellationCallback wake = run_cancel_.OnCancel([&mu, &changed] {
      absl::MutexLock lock(&mu);
      changed.SignalAll();
    });
    auto ready = [&](const v1::Stage& stage) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
      for (const std::string& dep : plan_.depends_on.at(stage.name())) {
        if (done.count(dep) == 0) return false;
      }
      return true;
    };
    absl::MutexLock lock(&mu);
    while (true) {
      if (failure.ok() && !Stopping()) {
        for (const v1::Stage& stage : stages) {
          if (started.count(stage.name()) || !ready(stage)) continue;
          started.insert(stage.name());
          ++running;
          std::map<std::string, StageOutputs> inputs = visible;
          for (const auto& [name, out] : done) inputs[name] = out;
          auto work = [this, &stage, inputs, prefix, outcome, &mu, &changed, &done, &failure, &running]() {
            absl::StatusOr<StageOutputs> result = RunStage(stage, inputs, prefix, outcome);
            bool first_failure = false;
            {
              absl::MutexLock inner(&mu);
              if (result.ok()) {
                done[stage.name()] = *result;
              } else if (failure.ok()) {
                failure = result.status();
                first_failure = true;
              }
              --running;
              changed.SignalAll();
            }
            if (first_failure) run_cancel_.Cancel(absl::StrCat("stage ", prefix, stage.name(), " failed"));
          };
          if (KindOf(stage).repeats_body) {
            loop_threads.emplace_back(work);
          } else {
            boost::asio::post(pool_, work);
          }
        }
      }
      const bool finished = running == 0 && (!failure.ok() || Stopping() || started.size() == static_cast<size_t>(stages.size()));
      if (finished) break;
      changed.Wait(&mu);
    }
    mu.Unlock();
    for (std::thread& t : loop_threads) t.join();
    mu.Lock();
    if (prefix.empty()) outcome->outputs = done;  // the run's finished stages, also when one failed
    if (!failure.ok()) return failure;
    if (Stopping()) return absl::CancelledError(absl::StrCat("the pipeline run was cancelled: ", run_cancel_.Reason()));
    return done;
  }

  absl::StatusOr<StageOutputs> RunStage(const v1::Stage& stage, const std::map<std::string, StageOutputs>& inputs,
                                        const std::string& prefix, RunOutcome* outcome) {
    const std::string label = prefix + stage.name();
    if (KindOf(stage).repeats_body) return RunLoop(stage, inputs, label, outcome);
    v1::Stage resolved = stage;
    if (absl::Status s = SubstituteAll(&resolved, inputs, vars_); !s.ok()) {
      return Annotate(s, absl::StrCat("stage ", label));
    }
    const int attempts = 1 + std::max(0, stage.retries());
    absl::Duration backoff = stage.backoff_s() > 0 ? absl::Seconds(stage.backoff_s()) : options_.default_backoff;
    absl::Status last;
    for (int attempt = 1; attempt <= attempts; ++attempt) {
      Emit({attempt == 1 ? StageEvent::Kind::kStarted : StageEvent::Kind::kRetrying, label, attempt, last, {}, {}});
      absl::StatusOr<StageOutputs> result = Attempt(resolved, label);
      if (result.ok()) {
        Emit({StageEvent::Kind::kFinished, label, attempt, absl::OkStatus(), *result, {}});
        return result;
      }
      last = result.status();
      if (!IsTransient(last) || attempt == attempts || !common::SleepUnlessCancelled(&run_cancel_, backoff)) break;
      backoff *= 2;
    }
    Emit({StageEvent::Kind::kFailed, label, attempts, last, {}, {}});
    return Annotate(last, absl::StrCat("stage ", label));
  }

  // One attempt under the stage's timeout and the run's cancellation.
  absl::StatusOr<StageOutputs> Attempt(const v1::Stage& stage, const std::string& label) {
    common::CancellationToken cancel;
    common::CancellationCallback link = cancel.LinkTo(&run_cancel_);
    absl::Notification finished;
    std::atomic<bool> timed_out{false};
    std::thread timer;
    if (stage.timeout_s() > 0) {
      timer = std::thread([&cancel, &finished, &timed_out, timeout = absl::Seconds(stage.timeout_s())] {
        if (finished.WaitForNotificationWithTimeout(timeout)) return;
        timed_out = true;
        cancel.Cancel("timed out");
      });
    }
    StageContext context;
    context.label = label;
    context.kind = &KindOf(stage);
    context.cancel = &cancel;
    context.progress = [this, &label](const StageProgress& progress) {
      StageEvent event;
      event.kind = StageEvent::Kind::kProgress;
      event.stage = label;
      event.progress = progress;
      Emit(event);
    };
    absl::StatusOr<StageOutputs> result = executor_.Run(stage, context);
    finished.Notify();
    if (timer.joinable()) timer.join();
    if (timed_out) {
      return absl::DeadlineExceededError(absl::StrCat("timed out after ", stage.timeout_s(), " s"));
    }
    if (cancel.IsCancelled()) return absl::CancelledError(absl::StrCat("cancelled: ", cancel.Reason()));
    return result;
  }

  // Runs the loop `label` between its started and its finished or failed event (whose attempt
  // is the number of iterations run).
  absl::StatusOr<StageOutputs> RunLoop(const v1::Stage& loop, const std::map<std::string, StageOutputs>& inputs,
                                       const std::string& label, RunOutcome* outcome) {
    Emit({StageEvent::Kind::kStarted, label, 1, absl::OkStatus(), {}, {}});
    int iterations = 0;
    absl::StatusOr<StageOutputs> result = Iterate(loop, inputs, label, outcome, &iterations);
    if (result.ok()) {
      Emit({StageEvent::Kind::kFinished, label, iterations, absl::OkStatus(), *result, {}});
    } else {
      Emit({StageEvent::Kind::kFailed, label, iterations, result.status(), {}, {}});
    }
    return result;
  }

  // The loop's iterations until its condition holds; `*iterations` counts those begun.
  absl::StatusOr<StageOutputs> Iterate(const v1::Stage& loop, const std::map<std::string, StageOutputs>& inputs,
                                       const std::string& label, RunOutcome* outcome, int* iterations) {
    StageOutputs outputs;
    std::map<std::string, StageOutputs> carried = inputs;
    for (int iteration = 1; iteration <= loop.loop().max_iterations(); ++iteration) {
      *iterations = iteration;
      ROBOLOOP_ASSIGN_OR_RETURN(auto inner, RunScope(loop.loop().stages(), carried,
                                                     absl::StrCat(label, "[", iteration, "]."), outcome));
      for (const auto& [outer, from] : loop.loop().carry()) carried[outer] = inner[from];
      outputs[kLoopIterations] = std::to_string(iteration);
      ForwardBodyOutputs(KindOf(loop), loop.loop().stages(), inner, &outputs);
      {
        absl::MutexLock lock(&outcome_mu_);
        outcome->loop_iterations[label] = iteration;
        outcome->loop_bodies[label].push_back(inner);
      }
      if (loop.loop().until().empty()) continue;
      std::map<std::string, StageOutputs> all = inputs;
      for (const auto& [name, out] : inner) all[name] = out;
      ROBOLOOP_ASSIGN_OR_RETURN(LoopCondition condition, ParseLoopCondition(loop.loop().until()));
      ROBOLOOP_ASSIGN_OR_RETURN(bool holds, ConditionHolds(condition, all, vars_));
      if (holds) return outputs;
    }
    if (loop.loop().until().empty()) return outputs;
    return UnmetLoopError({label, loop.loop().until(), loop.loop().max_iterations()});
  }

  const LoadedPipeline& loaded_;
  const Plan& plan_;
  StageExecutor& executor_;
  const SchedulerOptions& options_;
  boost::asio::thread_pool pool_;
  std::map<std::string, std::string> vars_;
  absl::Mutex observer_mu_;
  absl::Mutex outcome_mu_;
  common::CancellationToken run_cancel_;      // raised by the caller's token or the first failure
  common::CancellationCallback user_cancel_;  // links run_cancel_ to options_.cancel
};

}  // namespace

bool IsTransient(const absl::Status& status) {
  return absl::IsUnavailable(status) || absl::IsDeadlineExceeded(status) || absl::IsAborted(status);
}

std::optional<UnmetLoop> UnmetLoopOf(const absl::Status& status) {
  auto payload = status.GetPayload(kUnmetLoopPayload);
  if (!payload.has_value()) return std::nullopt;
  const std::vector<std::string> parts = absl::StrSplit(std::string(*payload), absl::MaxSplits('\n', 2));
  UnmetLoop unmet;
  if (parts.size() != 3 || !absl::SimpleAtoi(parts[0], &unmet.iterations)) return std::nullopt;
  unmet.loop = parts[1];
  unmet.condition = parts[2];
  return unmet;
}

absl::StatusOr<RunOutcome> RunPipeline(const LoadedPipeline& loaded, const Plan& plan, StageExecutor& executor,
                                       const SchedulerOptions& options) {
  Runner runner(loaded, plan, executor, options);
  return runner.Run();
}

}  // namespace roboloop::pipeline
