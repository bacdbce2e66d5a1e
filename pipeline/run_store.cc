// The SQLite run store.
#include "pipeline/run_store.h"

#include <google/protobuf/util/json_util.h>
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
  overrides_json TEXT NOT NULL DEFAULT '[]');
CREATE TABLE IF NOT EXISTS stage_executions (
  id INTEGER PRIMARY KEY AUTOINCREMENT, run_id TEXT NOT NULL REFERENCES runs(id), stage TEXT NOT NULL,
  cache_key TEXT NOT NULL, status TEXT NOT NULL, attempts INTEGER NOT NULL DEFAULT 0,
  started_us INTEGER NOT NULL, finished_us INTEGER NOT NULL DEFAULT 0,
  outputs_json TEXT NOT NULL DEFAULT '{}', message TEXT NOT NULL DEFAULT '',
  params_json TEXT NOT NULL DEFAULT '{}', log_path TEXT NOT NULL DEFAULT '');
CREATE INDEX IF NOT EXISTS stage_executions_by_key ON stage_executions(cache_key, status);
)";

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

std::string StageCacheKey(const v1::Stage& resolved) {
  v1::Stage key = resolved;
  key.clear_name();
  key.clear_needs();
  key.clear_retries();
  key.clear_backoff_s();
  key.clear_timeout_s();
  std::string json;
  (void)google::protobuf::util::MessageToJsonString(key, &json);
  return Sha256Hex(nlohmann::json::parse(json).dump());
}

absl::StatusOr<std::unique_ptr<RunStore>> RunStore::Open(const std::string& path) {
  ROBOLOOP_RETURN_IF_ERROR(MakeDirs(ParentDir(path)));
  ROBOLOOP_ASSIGN_OR_RETURN(auto db, SqliteDb::Open(path, /*busy_timeout_ms=*/10000));
  ROBOLOOP_RETURN_IF_ERROR(db->UseWriteAheadLog());
  ROBOLOOP_RETURN_IF_ERROR(db->Exec("PRAGMA foreign_keys=ON"));
  ROBOLOOP_RETURN_IF_ERROR(db->Exec(kSchema));
  ROBOLOOP_ASSIGN_OR_RETURN(int64_t version, db->QueryInt("SELECT MAX(version) FROM schema_version", {}, 0));
  if (version == 0) ROBOLOOP_RETURN_IF_ERROR(db->Run("INSERT INTO schema_version VALUES (1)"));
  if (version > 1) {
    return absl::FailedPreconditionError(absl::StrCat(path, ": run store schema ", version, " is newer than this roboloop (1)"));
  }
  return std::unique_ptr<RunStore>(new RunStore(std::move(db)));
}

absl::StatusOr<std::string> RunStore::CreateRun(const std::string& pipeline, const std::string& spec_path,
                                                const std::vector<std::string>& overrides) {
  const std::string id = NewUuid();
  absl::MutexLock lock(&mu_);
  ROBOLOOP_RETURN_IF_ERROR(db_->Run(
      "INSERT INTO runs (id, pipeline, spec_path, status, created_us, overrides_json) VALUES (?1, ?2, ?3, 'running', ?4, ?5)",
      {id, pipeline, spec_path, NowUnixMicros(), nlohmann::json(overrides).dump()}));
  return id;
}

absl::Status RunStore::ReopenRun(const std::string& run_id) {
  absl::MutexLock lock(&mu_);
  ROBOLOOP_ASSIGN_OR_RETURN(int64_t n, db_->QueryInt("SELECT COUNT(*) FROM runs WHERE id = ?1", {run_id}, 0));
  if (n == 0) return absl::NotFoundError(absl::StrCat("no pipeline run ", run_id));
  return db_->Run("UPDATE runs SET status = 'running', message = '' WHERE id = ?1", {run_id});
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
      "INSERT INTO stage_executions (run_id, stage, cache_key, status, started_us, params_json, log_path) "
      "VALUES (?1, ?2, ?3, 'running', ?4, ?5, ?6)",
      {run_id, stage, cache_key, NowUnixMicros(), params_json, log_path}));
  return db_->QueryInt("SELECT last_insert_rowid()", {}, 0);
}

absl::Status RunStore::FinishStage(int64_t execution_id, const std::string& status, int attempts,
                                   const StageOutputs& outputs, const std::string& message) {
  absl::MutexLock lock(&mu_);
  return db_->Run("UPDATE stage_executions SET status = ?2, attempts = ?3, outputs_json = ?4, message = ?5, finished_us = ?6 WHERE id = ?1",
                  {execution_id, status, int64_t{attempts}, OutputsJson(outputs), message, NowUnixMicros()});
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
  ROBOLOOP_ASSIGN_OR_RETURN(auto run, db_->Prepare(
      "SELECT id, pipeline, spec_path, status, created_us, finished_us, message, overrides_json FROM runs WHERE id = ?1",
      {run_id}));
  ROBOLOOP_ASSIGN_OR_RETURN(bool found, run->Step());
  if (!found) return absl::NotFoundError(absl::StrCat("no pipeline run ", run_id));
  RunRecord record{run->Text(0), run->Text(1), run->Text(2), run->Text(3), run->Int(4), run->Int(5), run->Text(6), {}, {}};
  const nlohmann::json overrides = nlohmann::json::parse(run->Text(7), nullptr, false);
  if (overrides.is_array()) record.overrides = overrides.get<std::vector<std::string>>();
  ROBOLOOP_ASSIGN_OR_RETURN(auto stages, db_->Prepare(
      "SELECT id, stage, cache_key, status, attempts, started_us, finished_us, outputs_json, message, params_json, log_path "
      "FROM stage_executions WHERE run_id = ?1 ORDER BY id", {run_id}));
  while (true) {
    ROBOLOOP_ASSIGN_OR_RETURN(bool row, stages->Step());
    if (!row) break;
    record.stages.push_back({stages->Int(0), stages->Text(1), stages->Text(2), stages->Text(3),
                             static_cast<int>(stages->Int(4)), stages->Int(5), stages->Int(6), stages->Text(7),
                             stages->Text(8), stages->Text(9), stages->Text(10)});
  }
  return record;
}

absl::StatusOr<std::vector<RunRecord>> RunStore::ListRuns(int limit) {
  absl::MutexLock lock(&mu_);
  ROBOLOOP_ASSIGN_OR_RETURN(auto runs, db_->Prepare(
      "SELECT id, pipeline, spec_path, status, created_us, finished_us, message FROM runs ORDER BY created_us DESC, id LIMIT ?1",
      {int64_t{limit}}));
  std::vector<RunRecord> records;
  while (true) {
    ROBOLOOP_ASSIGN_OR_RETURN(bool row, runs->Step());
    if (!row) break;
    records.push_back({runs->Text(0), runs->Text(1), runs->Text(2), runs->Text(3), runs->Int(4), runs->Int(5), runs->Text(6), {}, {}});
  }
  return records;
}

absl::StatusOr<StageOutputs> RecordingExecutor::Run(const v1::Stage& stage, const StageContext& context) {
  const std::string key = StageCacheKey(stage);
  const std::string label = context.label.empty() ? stage.name() : context.label;
  const std::string log_path = log_dir_.empty() ? "" : StageLogPath(log_dir_, label);
  ROBOLOOP_ASSIGN_OR_RETURN(std::optional<StageOutputs> cached, store_->FindCached(key, run_id_));
  if (!cached.has_value() && use_cache_ && context.kind->reusable_across_runs) {
    ROBOLOOP_ASSIGN_OR_RETURN(cached, store_->FindCached(key));
  }
  if (cached.has_value()) {
    ROBOLOOP_ASSIGN_OR_RETURN(int64_t id, store_->StartStage(run_id_, label, key, StageParamsJson(stage), log_path));
    ROBOLOOP_RETURN_IF_ERROR(store_->FinishStage(id, "cached", 0, *cached, ""));
    return *cached;
  }
  ROBOLOOP_ASSIGN_OR_RETURN(int64_t id, store_->StartStage(run_id_, label, key, StageParamsJson(stage), log_path));
  absl::StatusOr<StageOutputs> result = inner_->Run(stage, context);
  ROBOLOOP_RETURN_IF_ERROR(store_->FinishStage(id, result.ok() ? "finished" : absl::IsCancelled(result.status()) ? "cancelled" : "failed", 1,
                                               result.ok() ? *result : StageOutputs{},
                                               result.ok() ? "" : std::string(result.status().message())));
  return result;
}

}  // namespace roboloop::pipeline
