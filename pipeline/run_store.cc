// The SQLite run store.
#include "pipeline/run_store.h"

#include <google/protobuf/util/json_util.h>
#include <sys/stat.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "common/fs.h"
#include "common/ids.h"
#include "common/sha256.h"
#include "common/status.h"

namespace roboloop::pipeline {
namespace {

constexpr char kSchema[] = R"(
CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS runs (
  id TEXT PRIMARY KEY, pipeline TEXT NOT NULL, spec_path TEXT NOT NULL, status TEXT NOT NULL,
  created_us INTEGER NOT NULL, finished_us INTEGER NOT NULL DEFAULT 0, message TEXT NOT NULL DEFAULT '',
  overrides_json TEXT NOT NULL DEFAULT '[]', runner_pid INTEGER NOT NULL DEFAULT 0,
  runner_start_ticks INTEGER NOT NULL DEFAULT 0, runner_host TEXT NOT NULL DEFAULT '',
  settings_json TEXT NOT NULL DEFAULT '');
CREATE TABLE IF NOT EXISTS stage_executions (
  id INTEGER PRIMARY KEY AUTOINCREMENT, run_id TEXT NOT NULL REFERENCES runs(id), stage TEXT NOT NULL,
  cache_key TEXT NOT NULL, status TEXT NOT NULL, attempts INTEGER NOT NULL DEFAULT 0,
  started_us INTEGER NOT NULL, finished_us INTEGER NOT NULL DEFAULT 0,
  outputs_json TEXT NOT NULL DEFAULT '{}', message TEXT NOT NULL DEFAULT '',
  params_json TEXT NOT NULL DEFAULT '{}', log_path TEXT NOT NULL DEFAULT '',
  resume_point TEXT NOT NULL DEFAULT '');
CREATE INDEX IF NOT EXISTS stage_executions_by_key ON stage_executions(cache_key, status);
)";

constexpr int64_t kSchemaVersion = 3;

// Schema 1 -> 2: the runner of a run, the resume point of a stage execution.
constexpr char kUpgradeFrom1[] = R"(
ALTER TABLE runs ADD COLUMN runner_pid INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN runner_start_ticks INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN runner_host TEXT NOT NULL DEFAULT '';
ALTER TABLE stage_executions ADD COLUMN resume_point TEXT NOT NULL DEFAULT '';
UPDATE schema_version SET version = 2;
)";

// Schema 2 -> 3: what a run was started with.
constexpr char kUpgradeFrom2[] = R"(
ALTER TABLE runs ADD COLUMN settings_json TEXT NOT NULL DEFAULT '';
UPDATE schema_version SET version = 3;
)";

std::string SettingsJson(const RunSettings& settings) {
  return nlohmann::json{{"spec_sha256", settings.spec_sha256},
                        {"use_cache", settings.use_cache},
                        {"services_file", settings.services_file},
                        {"protocols_dir", settings.protocols_dir}}
      .dump();
}

// The settings stored as `json`; none when it is not an object (a run recorded before them).
std::optional<RunSettings> ParseSettings(const std::string& json) {
  const nlohmann::json parsed = nlohmann::json::parse(json, nullptr, false);
  if (!parsed.is_object()) return std::nullopt;
  return RunSettings{parsed.value("spec_sha256", ""), parsed.value("use_cache", true),
                     parsed.value("services_file", ""), parsed.value("protocols_dir", "")};
}

// What a stage's cache key holds of a local file it reads: its absolute path, size and
// modification time (nanoseconds), or only the path when it is missing.
nlohmann::json FileStamp(const std::string& path) {
  nlohmann::json stamp = {{"path", std::filesystem::absolute(path).lexically_normal().string()}};
  struct stat info {};
  if (stat(path.c_str(), &info) == 0) {
    stamp["size"] = static_cast<int64_t>(info.st_size);
    stamp["mtime_ns"] = static_cast<int64_t>(info.st_mtim.tv_sec) * 1000000000 + info.st_mtim.tv_nsec;
  }
  return stamp;
}

std::string OutputsJson(const StageOutputs& outputs) { return nlohmann::json(outputs).dump(); }

StageOutputs ParseOutputs(const std::string& json) {
  const nlohmann::json parsed = nlohmann::json::parse(json, nullptr, false);
  return parsed.is_object() ? parsed.get<StageOutputs>() : StageOutputs{};
}

}  // namespace

std::string FileStem(const std::string& label) {
  std::string stem = label;
  for (char& c : stem) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') c = '-';
  }
  return stem;
}

std::string StageLogPath(const std::string& log_dir, const std::string& label) {
  return JoinPath(log_dir, FileStem(label) + ".log");
}

std::string StageParamsJson(const v1::Stage& resolved) {
  std::string json;
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  (void)google::protobuf::util::MessageToJsonString(resolved, &json, options);
  return json;
}

std::string StageCacheKey(const v1::Stage& resolved, const std::vector<std::string>& local_files,
                          const std::vector<std::string>& served_inputs) {
  v1::Stage key = resolved;
  key.clear_name();
  key.clear_needs();
  key.clear_retries();
  key.clear_backoff_s();
  key.clear_timeout_s();
  std::string json;
  (void)google::protobuf::util::MessageToJsonString(key, &json);
  nlohmann::json keyed = nlohmann::json::parse(json);
  for (const std::string& file : local_files) keyed["local_files"].push_back(FileStamp(file));
  for (const std::string& input : served_inputs) keyed["served_inputs"].push_back(input);
  return Sha256Hex(keyed.dump());
}

absl::StatusOr<std::unique_ptr<RunStore>> RunStore::Open(const std::string& path) {
  ROBOLOOP_RETURN_IF_ERROR(MakeDirs(ParentDir(path)));
  ROBOLOOP_ASSIGN_OR_RETURN(auto db, SqliteDb::Open(path, /*busy_timeout_ms=*/10000));
  ROBOLOOP_RETURN_IF_ERROR(db->UseWriteAheadLog());
  ROBOLOOP_RETURN_IF_ERROR(db->Exec("PRAGMA foreign_keys=ON"));
  ROBOLOOP_RETURN_IF_ERROR(db->Exec(kSchema));
  ROBOLOOP_ASSIGN_OR_RETURN(int64_t version, db->QueryInt("SELECT MAX(version) FROM schema_version", {}, 0));
  if (version == 0) ROBOLOOP_RETURN_IF_ERROR(db->Run("INSERT INTO schema_version VALUES (3)"));
  if (version == 1) ROBOLOOP_RETURN_IF_ERROR(db->Exec(kUpgradeFrom1));
  if (version == 1 || version == 2) ROBOLOOP_RETURN_IF_ERROR(db->Exec(kUpgradeFrom2));
  if (version > kSchemaVersion) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, ": run store schema ", version, " is newer than this roboloop (", kSchemaVersion, ")"));
  }
  return std::unique_ptr<RunStore>(new RunStore(std::move(db)));
}

absl::StatusOr<std::string> RunStore::CreateRun(const std::string& pipeline, const std::string& spec_path,
                                                const std::vector<std::string>& overrides,
                                                const RunSettings& settings) {
  const std::string id = NewUuid();
  const ProcessIdentity runner = CurrentProcess();
  absl::MutexLock lock(&mu_);
  ROBOLOOP_RETURN_IF_ERROR(db_->Run(
      "INSERT INTO runs (id, pipeline, spec_path, status, created_us, overrides_json, runner_pid, runner_start_ticks, "
      "runner_host, settings_json) VALUES (?1, ?2, ?3, 'running', ?4, ?5, ?6, ?7, ?8, ?9)",
      {id, pipeline, spec_path, NowUnixMicros(), nlohmann::json(overrides).dump(), runner.pid, runner.start_ticks,
       runner.host, SettingsJson(settings)}));
  return id;
}

absl::Status RunStore::ReopenRun(const std::string& run_id, const std::string& spec_path,
                                 const std::vector<std::string>& overrides, const RunSettings& settings) {
  const ProcessIdentity runner = CurrentProcess();
  absl::MutexLock lock(&mu_);
  ROBOLOOP_RETURN_IF_ERROR(MarkRunsOfGoneRunnersInterrupted());
  {
    ROBOLOOP_ASSIGN_OR_RETURN(auto run, db_->Prepare("SELECT status, runner_pid, runner_host FROM runs WHERE id = ?1", {run_id}));
    ROBOLOOP_ASSIGN_OR_RETURN(bool found, run->Step());
    if (!found) return absl::NotFoundError(absl::StrCat("no pipeline run ", run_id));
    if (run->Text(0) == "running") {
      return absl::FailedPreconditionError(absl::StrCat("pipeline run ", run_id, " is still running (pid ", run->Int(1),
                                                        " on ", run->Text(2), ")"));
    }
  }
  return db_->Run("UPDATE runs SET status = 'running', message = '', runner_pid = ?2, runner_start_ticks = ?3, "
                  "runner_host = ?4, overrides_json = ?5, settings_json = ?6, spec_path = ?7 WHERE id = ?1",
                  {run_id, runner.pid, runner.start_ticks, runner.host, nlohmann::json(overrides).dump(),
                   SettingsJson(settings), spec_path});
}

absl::Status RunStore::FinishRun(const std::string& run_id, const std::string& status, const std::string& message) {
  absl::MutexLock lock(&mu_);
  return db_->Run("UPDATE runs SET status = ?2, message = ?3, finished_us = ?4 WHERE id = ?1",
                  {run_id, status, message, NowUnixMicros()});
}

absl::StatusOr<int64_t> RunStore::StartStage(const std::string& run_id, const std::string& stage,
                                             const std::string& cache_key, const std::string& params_json,
                                             const std::string& log_path) {
  absl::MutexLock lock(&mu_);
  ROBOLOOP_RETURN_IF_ERROR(db_->Run(
      "INSERT INTO stage_executions (run_id, stage, cache_key, status, attempts, started_us, params_json, log_path) "
      "VALUES (?1, ?2, ?3, 'running', 1, ?4, ?5, ?6)",
      {run_id, stage, cache_key, NowUnixMicros(), params_json, log_path}));
  return db_->QueryInt("SELECT last_insert_rowid()", {}, 0);
}

absl::Status RunStore::FinishStage(int64_t execution_id, const std::string& status, int attempts,
                                   const StageOutputs& outputs, const std::string& message) {
  absl::MutexLock lock(&mu_);
  return db_->Run("UPDATE stage_executions SET status = ?2, attempts = ?3, outputs_json = ?4, message = ?5, finished_us = ?6 WHERE id = ?1",
                  {execution_id, status, int64_t{attempts}, OutputsJson(outputs), message, NowUnixMicros()});
}

absl::Status RunStore::RecordResumePoint(int64_t execution_id, const std::string& point) {
  absl::MutexLock lock(&mu_);
  return db_->Run("UPDATE stage_executions SET resume_point = ?2 WHERE id = ?1", {execution_id, point});
}

absl::StatusOr<std::string> RunStore::FindResumePoint(const std::string& run_id, const std::string& stage,
                                                      const std::string& cache_key) {
  absl::MutexLock lock(&mu_);
  ROBOLOOP_ASSIGN_OR_RETURN(auto statement, db_->Prepare(
      "SELECT resume_point FROM stage_executions WHERE run_id = ?1 AND stage = ?2 AND cache_key = ?3 "
      "AND resume_point != '' ORDER BY id DESC LIMIT 1",
      {run_id, stage, cache_key}));
  ROBOLOOP_ASSIGN_OR_RETURN(bool row, statement->Step());
  return row ? statement->Text(0) : std::string();
}

absl::Status RunStore::MarkRunsOfGoneRunnersInterrupted() {
  ROBOLOOP_ASSIGN_OR_RETURN(auto running, db_->Prepare(
      "SELECT id, runner_pid, runner_start_ticks, runner_host FROM runs WHERE status = 'running'", {}));
  std::vector<std::pair<std::string, ProcessIdentity>> gone;
  while (true) {
    ROBOLOOP_ASSIGN_OR_RETURN(bool row, running->Step());
    if (!row) break;
    const ProcessIdentity runner{running->Int(1), running->Int(2), running->Text(3)};
    if (ProcessIsGone(runner)) gone.emplace_back(running->Text(0), runner);
  }
  for (const auto& [id, runner] : gone) {
    const int64_t now = NowUnixMicros();
    ROBOLOOP_RETURN_IF_ERROR(db_->Run(
        "UPDATE runs SET status = 'interrupted', message = ?2, finished_us = ?3 WHERE id = ?1",
        {id, absl::StrCat("its runner (pid ", runner.pid, " on ", runner.host, ") is gone; continue it with roboloop run --resume ", id),
         now}));
    ROBOLOOP_RETURN_IF_ERROR(db_->Run(
        "UPDATE stage_executions SET status = 'interrupted', finished_us = ?2 WHERE run_id = ?1 AND status = 'running'",
        {id, now}));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::optional<StageOutputs>> RunStore::FindCached(const std::string& cache_key,
                                                                 const std::string& run_id) {
  absl::MutexLock lock(&mu_);
  ROBOLOOP_ASSIGN_OR_RETURN(auto statement, db_->Prepare(
      "SELECT outputs_json FROM stage_executions WHERE cache_key = ?1 AND status IN ('finished', 'cached') "
      "AND (?2 = '' OR run_id = ?2) ORDER BY id DESC LIMIT 1",
      {cache_key, run_id}));
  ROBOLOOP_ASSIGN_OR_RETURN(bool row, statement->Step());
  if (!row) return std::optional<StageOutputs>();
  return std::optional<StageOutputs>(ParseOutputs(statement->Text(0)));
}

absl::StatusOr<RunRecord> RunStore::GetRun(const std::string& run_id) {
  absl::MutexLock lock(&mu_);
  ROBOLOOP_RETURN_IF_ERROR(MarkRunsOfGoneRunnersInterrupted());
  ROBOLOOP_ASSIGN_OR_RETURN(auto run, db_->Prepare(
      "SELECT id, pipeline, spec_path, status, created_us, finished_us, message, overrides_json, runner_pid, "
      "runner_start_ticks, runner_host, settings_json FROM runs WHERE id = ?1",
      {run_id}));
  ROBOLOOP_ASSIGN_OR_RETURN(bool found, run->Step());
  if (!found) return absl::NotFoundError(absl::StrCat("no pipeline run ", run_id));
  RunRecord record{run->Text(0), run->Text(1), run->Text(2), run->Text(3), run->Int(4), run->Int(5), run->Text(6), {}, {},
                   ProcessIdentity{run->Int(8), run->Int(9), run->Text(10)}, ParseSettings(run->Text(11))};
  const nlohmann::json overrides = nlohmann::json::parse(run->Text(7), nullptr, false);
  if (overrides.is_array()) record.overrides = overrides.get<std::vector<std::string>>();
  ROBOLOOP_ASSIGN_OR_RETURN(auto stages, db_->Prepare(
      "SELECT id, stage, cache_key, status, attempts, started_us, finished_us, outputs_json, message, params_json, log_path, "
      "resume_point "
      "FROM stage_executions WHERE run_id = ?1 ORDER BY id", {run_id}));
  while (true) {
    ROBOLOOP_ASSIGN_OR_RETURN(bool row, stages->Step());
    if (!row) break;
    record.stages.push_back({stages->Int(0), stages->Text(1), stages->Text(2), stages->Text(3),
                             static_cast<int>(stages->Int(4)), stages->Int(5), stages->Int(6), stages->Text(7),
                             stages->Text(8), stages->Text(9), stages->Text(10), stages->Text(11)});
  }
  return record;
}

absl::StatusOr<std::vector<RunRecord>> RunStore::ListRuns(int limit) {
  absl::MutexLock lock(&mu_);
  ROBOLOOP_RETURN_IF_ERROR(MarkRunsOfGoneRunnersInterrupted());
  ROBOLOOP_ASSIGN_OR_RETURN(auto runs, db_->Prepare(
      "SELECT id, pipeline, spec_path, status, created_us, finished_us, message FROM runs ORDER BY created_us DESC, id LIMIT ?1",
      {int64_t{limit}}));
  std::vector<RunRecord> records;
  while (true) {
    ROBOLOOP_ASSIGN_OR_RETURN(bool row, runs->Step());
    if (!row) break;
    records.push_back({runs->Text(0), runs->Text(1), runs->Text(2), runs->Text(3), runs->Int(4), runs->Int(5), runs->Text(6), {}, {}, {}, {}});
  }
  return records;
}

absl::StatusOr<std::vector<std::string>> RunStore::RunIdsStartingWith(const std::string& prefix, int limit) {
  absl::MutexLock lock(&mu_);
  ROBOLOOP_ASSIGN_OR_RETURN(auto runs, db_->Prepare("SELECT id FROM runs WHERE substr(id, 1, length(?1)) = ?1 "
                                                    "ORDER BY created_us DESC, id LIMIT ?2",
                                                    {prefix, int64_t{limit}}));
  std::vector<std::string> ids;
  while (true) {
    ROBOLOOP_ASSIGN_OR_RETURN(bool row, runs->Step());
    if (!row) break;
    ids.push_back(runs->Text(0));
  }
  return ids;
}

absl::StatusOr<StageOutputs> RecordingExecutor::Run(const v1::Stage& stage, const StageContext& context) {
  const std::string label = context.label.empty() ? stage.name() : context.label;
  const std::string log_path = log_dir_.empty() ? "" : StageLogPath(log_dir_, label);
  const absl::StatusOr<std::vector<std::string>> served = inner_->ServedInputs(stage, context);
  if (!served.ok()) {  // an attempt that failed before it had a key, recorded as such
    ROBOLOOP_ASSIGN_OR_RETURN(int64_t id, store_->StartStage(run_id_, label, "", StageParamsJson(stage), log_path));
    ROBOLOOP_RETURN_IF_ERROR(store_->FinishStage(id, "failed", 1, {}, std::string(served.status().message())));
    return served.status();
  }
  const std::string key = StageCacheKey(
      stage, context.kind->local_files ? context.kind->local_files(stage) : std::vector<std::string>{}, *served);
  ROBOLOOP_ASSIGN_OR_RETURN(std::optional<StageOutputs> cached, store_->FindCached(key, run_id_));
  if (!cached.has_value() && use_cache_ && context.kind->reusable_across_runs) {
    ROBOLOOP_ASSIGN_OR_RETURN(cached, store_->FindCached(key));
  }
  if (cached.has_value()) {
    ROBOLOOP_ASSIGN_OR_RETURN(int64_t id, store_->StartStage(run_id_, label, key, StageParamsJson(stage), log_path));
    ROBOLOOP_RETURN_IF_ERROR(store_->FinishStage(id, "cached", 0, *cached, ""));
    return *cached;
  }
  ROBOLOOP_ASSIGN_OR_RETURN(std::string resume_point, store_->FindResumePoint(run_id_, label, key));
  ROBOLOOP_ASSIGN_OR_RETURN(int64_t id, store_->StartStage(run_id_, label, key, StageParamsJson(stage), log_path));
  StageContext recorded = context;
  recorded.resume_point = std::move(resume_point);
  recorded.record_resume_point = [this, id](const std::string& point) { return store_->RecordResumePoint(id, point); };
  absl::StatusOr<StageOutputs> result = inner_->Run(stage, recorded);
  ROBOLOOP_RETURN_IF_ERROR(store_->FinishStage(id, result.ok() ? "finished" : absl::IsCancelled(result.status()) ? "cancelled" : "failed", 1,
                                               result.ok() ? *result : StageOutputs{},
                                               result.ok() ? "" : std::string(result.status().message())));
  return result;
}

}  // namespace roboloop::pipeline
