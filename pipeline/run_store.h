// The run store (issue 8, req 4): SQLite (WAL) records of pipeline runs and their stage
// executions (status, attempts, timings, inputs, outputs as artifact ids), and the
// content-keyed cache — a stage whose kind and substituted parameters (which include its
// input artifact ids) match a finished execution reuses that execution's outputs. Resuming a
// run is running it again: every finished stage is a cache hit, and a stage that was stopped
// continues from the last resume point it recorded (a train stage: its last checkpoint). Each
// run records its runner process; a run whose runner is gone (killed) reads as "interrupted",
// and so do the stages it was running. Thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/ids.h"
#include "common/sqlite.h"
#include "pipeline/scheduler.h"

namespace roboloop::pipeline {

// One stage execution as stored.
struct StageExecutionRecord {
  int64_t id = 0;
  std::string stage;          // name (inside loops: "<loop>[<i>].<stage>")
  std::string cache_key;      // StageCacheKey of the resolved stage
  std::string status;         // running | finished | failed | cancelled | cached | interrupted
  int attempts = 0;
  int64_t started_us = 0, finished_us = 0;
  std::string outputs_json;   // {"output": "value"}
  std::string message;        // error of a failed execution
  std::string params_json;    // the resolved stage (its inputs: parameters with artifact ids)
  std::string log_path;       // the stage's log file ("" when none)
  std::string resume_point;   // where the stage could continue from ("" = from the start)
};

// What a run was started with besides its pipeline and overrides; `--resume` reuses it.
struct RunSettings {
  std::string spec_sha256;    // sha256 of the pipeline file's text when the run started
  bool use_cache = true;      // false: started with --no-cache
  std::string services_file;  // absolute; "" = embedded services
  std::string protocols_dir;  // absolute
};

// One run as stored.
struct RunRecord {
  std::string id;
  std::string pipeline;       // pipeline name
  std::string spec_path;      // the YAML it ran
  std::string status;         // running | finished | failed | cancelled | interrupted (its runner died)
  int64_t created_us = 0, finished_us = 0;
  std::string message;
  std::vector<StageExecutionRecord> stages;  // in start order
  std::vector<std::string> overrides;        // the --set PATH=VALUE it ran with
  ProcessIdentity runner;                    // the process that runs (ran) it
  std::optional<RunSettings> settings;       // none for runs recorded before settings were
};

// `label` as a file name: letters, digits, '-' and '_' kept, anything else '-'.
std::string FileStem(const std::string& label);

// The log file of stage `label` in `log_dir`.
std::string StageLogPath(const std::string& log_dir, const std::string& label);

// The resolved stage as JSON (proto field names), as stored with its execution.
std::string StageParamsJson(const v1::Stage& resolved);

// sha256 over the stage's kind and its parameters as canonical JSON (name, needs, retries and
// timeouts excluded: they do not change what the stage produces), over the path, size and
// modification time of each of `local_files` (StageKind::local_files; a missing one counts as such)
// and over `served_inputs` (StageExecutor::ServedInputs, e.g. a named protocol's hash).
std::string StageCacheKey(const v1::Stage& resolved, const std::vector<std::string>& local_files = {},
                          const std::vector<std::string>& served_inputs = {});

class RunStore {
 public:
  // Opens (creating, or upgrading from schema 1 or 2) the store at `path`, e.g.
  // ".roboloop/pipeline/runs.db".
  static absl::StatusOr<std::unique_ptr<RunStore>> Open(const std::string& path);

  // A new run (uuid) of `pipeline` from `spec_path` with `overrides` ("PATH=VALUE") and
  // `settings`, run by this process.
  absl::StatusOr<std::string> CreateRun(const std::string& pipeline, const std::string& spec_path,
                                        const std::vector<std::string>& overrides = {},
                                        const RunSettings& settings = {});
  // Marks the run running again, by this process (resume), now from `spec_path` with `overrides`
  // and `settings`. NotFound for an unknown run; FailedPrecondition while its runner still runs.
  absl::Status ReopenRun(const std::string& run_id, const std::string& spec_path,
                         const std::vector<std::string>& overrides, const RunSettings& settings);
  // Ends the run with `status` and `message`.
  absl::Status FinishRun(const std::string& run_id, const std::string& status, const std::string& message);

  // Records a stage execution's start (its resolved parameters and log file; its first attempt,
  // so that a run cut short shows one); returns its id.
  absl::StatusOr<int64_t> StartStage(const std::string& run_id, const std::string& stage,
                                     const std::string& cache_key, const std::string& params_json = "{}",
                                     const std::string& log_path = "");
  // Records its end.
  absl::Status FinishStage(int64_t execution_id, const std::string& status, int attempts,
                           const StageOutputs& outputs, const std::string& message);
  // Records that execution `execution_id` could continue from `point` (a kind's own token,
  // e.g. a checkpoint id).
  absl::Status RecordResumePoint(int64_t execution_id, const std::string& point);
  // The newest resume point an earlier execution of `stage` in run `run_id` with `cache_key`
  // recorded; "" when none did.
  absl::StatusOr<std::string> FindResumePoint(const std::string& run_id, const std::string& stage,
                                              const std::string& cache_key);
  // Outputs of the newest finished (or cache-answered) execution with `cache_key`, if any;
  // of run `run_id` only when it is not empty.
  absl::StatusOr<std::optional<StageOutputs>> FindCached(const std::string& cache_key, const std::string& run_id = "");

  // The run `run_id` with its executions; NotFound naming it. Runs whose runner is gone are
  // marked interrupted first (here and in ListRuns).
  absl::StatusOr<RunRecord> GetRun(const std::string& run_id);
  // The newest `limit` runs, without executions.
  absl::StatusOr<std::vector<RunRecord>> ListRuns(int limit);
  // The ids of the newest `limit` runs whose id starts with `prefix`, newest first.
  absl::StatusOr<std::vector<std::string>> RunIdsStartingWith(const std::string& prefix, int limit);

 private:
  explicit RunStore(std::unique_ptr<SqliteDb> db) : db_(std::move(db)) {}

  // Marks every running run whose runner is gone, and its running stages, interrupted.
  absl::Status MarkRunsOfGoneRunnersInterrupted() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  absl::Mutex mu_;
  std::unique_ptr<SqliteDb> db_ ABSL_GUARDED_BY(mu_);
};

// A StageExecutor that records every execution in a RunStore and answers stages from earlier
// executions (recorded with status "cached") instead of running them: from its own run always
// (that is what resuming is), from any run unless `use_cache` is off — except promote and
// report, whose effects depend on more than their parameters. Its cache keys hold the inner
// executor's ServedInputs of the stage. A stage it runs gets the newest
// resume point an earlier execution of it (same run, label and parameters) recorded, and the
// points it records are stored with its execution.
class RecordingExecutor : public StageExecutor {
 public:
  // `log_dir` (may be empty) is where stage logs live (StageLogPath), recorded per execution.
  RecordingExecutor(StageExecutor* inner, RunStore* store, std::string run_id, bool use_cache,
                    std::string log_dir = "")
      : inner_(inner), store_(store), run_id_(std::move(run_id)), use_cache_(use_cache), log_dir_(std::move(log_dir)) {}

  absl::StatusOr<StageOutputs> Run(const v1::Stage& stage, const StageContext& context) override;

 private:
  StageExecutor* inner_;
  RunStore* store_;
  std::string run_id_;
  bool use_cache_;
  std::string log_dir_;
};

}  // namespace roboloop::pipeline
