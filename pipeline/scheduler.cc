// Running a pipeline's DAG.
#include "pipeline/scheduler.h"

#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>

#include <chrono>
#include <regex>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/status.h"

namespace roboloop::pipeline {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;

// Replaces references in every string of `message`, except inside a loop's stages and
// condition (substituted per iteration).
absl::Status SubstituteAll(Message* message, const std::map<std::string, StageOutputs>& outputs,
                           const std::map<std::string, std::string>& vars) {
  const auto* r = message->GetReflection();
  std::vector<const FieldDescriptor*> fields;
  r->ListFields(*message, &fields);
  for (const FieldDescriptor* field : fields) {
    if (field->message_type() != nullptr && field->message_type()->name() == "Stage") continue;
    if (field->containing_type()->name() == "LoopStage" && field->name() == "until") continue;
    if (field->cpp_type() == FieldDescriptor::CPPTYPE_STRING) {
      if (field->is_repeated()) {
        for (int i = 0; i < r->FieldSize(*message, field); ++i) {
          ROBOLOOP_ASSIGN_OR_RETURN(std::string v, Substitute(r->GetRepeatedString(*message, field, i), outputs, vars));
          r->SetRepeatedString(message, field, i, v);
        }
      } else {
        ROBOLOOP_ASSIGN_OR_RETURN(std::string v, Substitute(r->GetString(*message, field), outputs, vars));
        r->SetString(message, field, v);
      }
    } else if (field->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
      if (field->is_repeated()) {
        for (int i = 0; i < r->FieldSize(*message, field); ++i) {
          ROBOLOOP_RETURN_IF_ERROR(SubstituteAll(r->MutableRepeatedMessage(message, field, i), outputs, vars));
        }
      } else {
        ROBOLOOP_RETURN_IF_ERROR(SubstituteAll(r->MutableMessage(message, field), outputs, vars));
      }
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<bool> ConditionHolds(const std::string& until, const std::map<std::string, StageOutputs>& outputs,
                                    const std::map<std::string, std::string>& vars) {
  static const std::regex kCondition(R"(\s*(\$\{[^}]+\})\s*(>=|<=|==|>|<)\s*(\S+)\s*)");
  std::smatch match;
  if (!std::regex_match(until, match, kCondition)) return absl::InvalidArgumentError("bad loop condition: " + until);
  ROBOLOOP_ASSIGN_OR_RETURN(std::string text, Substitute(match[1], outputs, vars));
  double value = 0, bound = 0;
  if (!absl::SimpleAtod(text, &value) || !absl::SimpleAtod(match[3].str(), &bound)) {
    return absl::InvalidArgumentError(absl::StrCat("loop condition ", until, ": '", text, "' is not a number"));
  }
  const std::string op = match[2];
  if (op == ">=") return value >= bound;
  if (op == "<=") return value <= bound;
  if (op == ">") return value > bound;
  if (op == "<") return value < bound;
  return value == bound;
}

class Runner {
 public:
  Runner(const LoadedPipeline& loaded, const Plan& plan, StageExecutor& executor, const SchedulerOptions& options)
      : loaded_(loaded), plan_(plan), executor_(executor), options_(options), pool_(std::max(1, options.threads)),
        vars_(loaded.pipeline.vars().begin(), loaded.pipeline.vars().end()) {}

  ~Runner() { pool_.join(); }

  absl::StatusOr<RunOutcome> Run() {
    RunOutcome outcome;
    std::map<std::string, StageOutputs> visible;
    ROBOLOOP_ASSIGN_OR_RETURN(outcome.outputs, RunScope(loaded_.pipeline.stages(), visible, "", &outcome));
    return outcome;
  }

 private:
  bool Cancelled() const { return options_.cancel != nullptr && options_.cancel->load(); }

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
    auto ready = [&](const v1::Stage& stage) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
      for (const std::string& dep : plan_.depends_on.at(stage.name())) {
        if (done.count(dep) == 0) return false;
      }
      return true;
    };
    absl::MutexLock lock(&mu);
    while (true) {
      if (failure.ok() && !Cancelled()) {
        for (const v1::Stage& stage : stages) {
          if (started.count(stage.name()) || !ready(stage)) continue;
          started.insert(stage.name());
          ++running;
          std::map<std::string, StageOutputs> inputs = visible;
          for (const auto& [name, out] : done) inputs[name] = out;
          auto work = [this, &stage, inputs, prefix, outcome, &mu, &changed, &done, &failure, &running]() {
            absl::StatusOr<StageOutputs> result = RunStage(stage, inputs, prefix, outcome);
            absl::MutexLock inner(&mu);
            if (result.ok()) {
              done[stage.name()] = *result;
            } else if (failure.ok()) {
              failure = result.status();
            }
            --running;
            changed.SignalAll();
          };
          if (stage.kind() == "loop") {
            loop_threads.emplace_back(work);
          } else {
            boost::asio::post(pool_, work);
          }
        }
      }
      const bool finished = running == 0 && (!failure.ok() || Cancelled() || started.size() == static_cast<size_t>(stages.size()));
      if (finished) break;
      changed.WaitWithTimeout(&mu, absl::Milliseconds(20));
    }
    mu.Unlock();
    for (std::thread& t : loop_threads) t.join();
    mu.Lock();
    if (!failure.ok()) return failure;
    if (Cancelled()) return absl::CancelledError("the pipeline run was cancelled");
    return done;
  }

  absl::StatusOr<StageOutputs> RunStage(const v1::Stage& stage, const std::map<std::string, StageOutputs>& inputs,
                                        const std::string& prefix, RunOutcome* outcome) {
    const std::string label = prefix + stage.name();
    if (stage.kind() == "loop") return RunLoop(stage, inputs, label, outcome);
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
      if (!IsTransient(last) || Cancelled() || attempt == attempts) break;
      for (absl::Time until = absl::Now() + backoff; absl::Now() < until && !Cancelled();) {
        absl::SleepFor(absl::Milliseconds(10));
      }
      backoff *= 2;
    }
    Emit({StageEvent::Kind::kFailed, label, attempts, last, {}, {}});
    return Annotate(last, absl::StrCat("stage ", label));
  }

  // One attempt under the stage's timeout and the run's cancellation.
  absl::StatusOr<StageOutputs> Attempt(const v1::Stage& stage, const std::string& label) {
    std::atomic<bool> cancel{false}, finished{false}, timed_out{false};
    const absl::Time deadline =
        stage.timeout_s() > 0 ? absl::Now() + absl::Seconds(stage.timeout_s()) : absl::InfiniteFuture();
    std::thread watcher([&] {
      while (!finished.load()) {
        if (absl::Now() >= deadline) timed_out.store(true);
        if (timed_out.load() || Cancelled()) {
          cancel.store(true);
          return;
        }
        absl::SleepFor(absl::Milliseconds(10));
      }
    });
    StageContext context;
    context.label = label;
    context.cancel = &cancel;
    context.progress = [this, &label](const StageProgress& progress) {
      StageEvent event;
      event.kind = StageEvent::Kind::kProgress;
      event.stage = label;
      event.progress = progress;
      Emit(event);
    };
    absl::StatusOr<StageOutputs> result = executor_.Run(stage, context);
    finished.store(true);
    watcher.join();
    if (timed_out.load()) {
      return absl::DeadlineExceededError(absl::StrCat("timed out after ", stage.timeout_s(), " s"));
    }
    if (Cancelled()) return absl::CancelledError("cancelled");
    return result;
  }

  absl::StatusOr<StageOutputs> RunLoop(const v1::Stage& loop, const std::map<std::string, StageOutputs>& inputs,
                                       const std::string& label, RunOutcome* outcome) {
    Emit({StageEvent::Kind::kStarted, label, 1, absl::OkStatus(), {}, {}});
    StageOutputs outputs;
    std::map<std::string, StageOutputs> carried = inputs;
    for (int iteration = 1; iteration <= loop.loop().max_iterations(); ++iteration) {
      ROBOLOOP_ASSIGN_OR_RETURN(auto inner, RunScope(loop.loop().stages(), carried,
                                                     absl::StrCat(label, "[", iteration, "]."), outcome));
      for (const auto& [outer, from] : loop.loop().carry()) carried[outer] = inner[from];
      outputs["iterations"] = std::to_string(iteration);
      for (const v1::Stage& stage : loop.loop().stages()) {
        const StageOutputs& produced = inner[stage.name()];
        if (produced.count("checkpoint")) outputs["checkpoint"] = produced.at("checkpoint");
        if (produced.count("dataset")) outputs["dataset"] = produced.at("dataset");
      }
      {
        absl::MutexLock lock(&outcome_mu_);
        outcome->loop_iterations[label] = iteration;
      }
      if (loop.loop().until().empty()) continue;
      std::map<std::string, StageOutputs> all = inputs;
      for (const auto& [name, out] : inner) all[name] = out;
      ROBOLOOP_ASSIGN_OR_RETURN(bool holds, ConditionHolds(loop.loop().until(), all, vars_));
      if (holds) {
        Emit({StageEvent::Kind::kFinished, label, iteration, absl::OkStatus(), outputs, {}});
        return outputs;
      }
    }
    if (loop.loop().until().empty()) return outputs;
    const absl::Status not_met = absl::FailedPreconditionError(absl::StrCat(
        "stage ", label, ": condition not met (", loop.loop().until(), ") after ", loop.loop().max_iterations(),
        " iterations"));
    Emit({StageEvent::Kind::kFailed, label, loop.loop().max_iterations(), not_met, outputs, {}});
    return not_met;
  }

  const LoadedPipeline& loaded_;
  const Plan& plan_;
  StageExecutor& executor_;
  const SchedulerOptions& options_;
  boost::asio::thread_pool pool_;
  std::map<std::string, std::string> vars_;
  absl::Mutex observer_mu_;
  absl::Mutex outcome_mu_;
};

}  // namespace

bool IsTransient(const absl::Status& status) {
  return absl::IsUnavailable(status) || absl::IsDeadlineExceeded(status) || absl::IsAborted(status);
}

absl::StatusOr<std::string> Substitute(const std::string& text, const std::map<std::string, StageOutputs>& outputs,
                                       const std::map<std::string, std::string>& vars) {
  static const std::regex kReference(R"(\$\{([^}]*)\})");
  std::string result;
  auto last = text.cbegin();
  for (std::sregex_iterator it(text.begin(), text.end(), kReference), end; it != end; ++it) {
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

absl::StatusOr<RunOutcome> RunPipeline(const LoadedPipeline& loaded, const Plan& plan, StageExecutor& executor,
                                       const SchedulerOptions& options) {
  Runner runner(loaded, plan, executor, options);
  return runner.Run();
}

}  // namespace roboloop::pipeline
