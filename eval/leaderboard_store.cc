#include "eval/leaderboard_store.h"
#include "common/store_layout.h"

#include <google/protobuf/util/json_util.h>
#include <nlohmann/json.hpp>

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/fs.h"
#include "common/status.h"
#include "eval/protocol.h"
#include "common/sqlite.h"

namespace roboloop::eval {
namespace {

constexpr char kCompleted[] = "completed";
constexpr char kFailed[] = "failed";

struct Migration {
  int version;      // schema version after this migration
  const char* sql;  // statements that bring the previous version to it
};

const std::vector<Migration>& Migrations() {
  static const std::vector<Migration> kMigrations = {
      {1, R"sql(
CREATE TABLE evaluations(
  id TEXT PRIMARY KEY,
  protocol_hash TEXT NOT NULL,
  protocol_json TEXT NOT NULL,
  task TEXT NOT NULL,
  checkpoint_id TEXT NOT NULL,
  model TEXT NOT NULL,
  model_version INTEGER NOT NULL,
  dataset_id TEXT NOT NULL,
  aliases_json TEXT NOT NULL,
  status TEXT NOT NULL CHECK(status IN ('completed', 'failed')),
  successes INTEGER,
  trials INTEGER,
  success_rate REAL,
  success_low REAL,
  success_high REAL,
  mean_return REAL,
  return_low REAL,
  return_high REAL,
  aggregates_json TEXT,
  provenance_json TEXT NOT NULL,
  failure TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  forced INTEGER NOT NULL);
CREATE INDEX evaluations_by_cache_key ON evaluations(protocol_hash, checkpoint_id, created_at);
CREATE INDEX evaluations_by_task ON evaluations(task, protocol_hash);
CREATE INDEX evaluations_by_model ON evaluations(model, model_version);
CREATE TABLE episodes(
  evaluation_id TEXT NOT NULL REFERENCES evaluations(id) ON DELETE CASCADE,
  episode_index INTEGER NOT NULL,
  seed INTEGER NOT NULL,
  episode_return REAL NOT NULL,
  length INTEGER NOT NULL,
  success INTEGER NOT NULL,
  end_reason TEXT NOT NULL,
  end_detail TEXT NOT NULL,
  state_hash_chain INTEGER NOT NULL,
  final_state_hash INTEGER NOT NULL,
  PRIMARY KEY(evaluation_id, episode_index)) WITHOUT ROWID;
)sql"},
      {2, R"sql(
ALTER TABLE evaluations ADD COLUMN requested_by TEXT NOT NULL DEFAULT '';
)sql"},
      // Wilson bounds of 0/n and n/n were stored a rounding error away from 0 and 1, which ranked
      // 0/n rows by noise; they are exactly 0 and 1 now, in the column and in the aggregates.
      {3, R"sql(
UPDATE evaluations SET success_low = 0,
    aggregates_json = json_set(aggregates_json, '$.success.interval.low', 0)
  WHERE status = 'completed' AND successes = 0 AND success_low != 0;
UPDATE evaluations SET success_high = 1,
    aggregates_json = json_set(aggregates_json, '$.success.interval.high', 1)
  WHERE status = 'completed' AND successes = trials AND success_high != 1;
)sql"},
  };
  return kMigrations;
}

absl::StatusOr<int> ReadSchemaVersion(SqliteDb& db) {
  ROBOLOOP_ASSIGN_OR_RETURN(int64_t version,
                            db.QueryInt("SELECT MAX(version) FROM schema_version", {}, 0));
  return static_cast<int>(version);
}

absl::Status Migrate(SqliteDb& db) {
  ROBOLOOP_ASSIGN_OR_RETURN(auto transaction, SqliteTransaction::Begin(&db));
  ROBOLOOP_RETURN_IF_ERROR(
      db.Exec("CREATE TABLE IF NOT EXISTS schema_version(version INTEGER NOT NULL)"));
  ROBOLOOP_ASSIGN_OR_RETURN(int current, ReadSchemaVersion(db));
  const int latest = Migrations().back().version;
  if (current > latest) {
    return absl::FailedPreconditionError(absl::StrCat("leaderboard schema version ", current,
                                                      " is newer than this build's ", latest,
                                                      "; upgrade roboloop"));
  }
  for (const Migration& migration : Migrations()) {
    if (migration.version <= current) continue;
    ROBOLOOP_RETURN_IF_ERROR(
        Annotate(db.Exec(migration.sql), absl::StrCat("migrating to schema ", migration.version)));
  }
  if (current < latest) {
    ROBOLOOP_RETURN_IF_ERROR(db.Exec("DELETE FROM schema_version"));
    ROBOLOOP_RETURN_IF_ERROR(
        db.Run("INSERT INTO schema_version(version) VALUES(?1)", {int64_t{latest}}));
  }
  return transaction->Commit();
}

std::string ToJson(const google::protobuf::Message& message) {
  std::string json;
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  ROBOLOOP_CHECK(google::protobuf::util::MessageToJsonString(message, &json, options).ok());
  return json;
}

absl::Status FromJson(const std::string& json, const std::string& what,
                      google::protobuf::Message* message) {
  auto status = google::protobuf::util::JsonStringToMessage(json, message);
  if (status.ok()) return absl::OkStatus();
  return absl::DataLossError(absl::StrCat("leaderboard: stored ", what, " does not parse: ",
                                          std::string(status.message())));
}

int64_t AsSql(uint64_t value) { return static_cast<int64_t>(value); }

absl::Status CheckCompleted(const v1::Evaluation& evaluation, const std::string& label) {
  if (!evaluation.has_aggregates()) {
    return absl::InvalidArgumentError(label + ": completed but carries no aggregates");
  }
  int64_t successes = 0;
  for (const v1::EpisodeResult& episode : evaluation.episodes()) successes += episode.success();
  const v1::RateEstimate& rate = evaluation.aggregates().success();
  if (evaluation.episodes_size() != evaluation.protocol().episodes() ||
      rate.trials() != evaluation.episodes_size() || rate.successes() != successes) {
    return absl::InvalidArgumentError(absl::StrCat(
        label, ": completed with ", evaluation.episodes_size(), " episodes (", successes,
        " successes) but the protocol asks ", evaluation.protocol().episodes(),
        " and the aggregates say ", rate.successes(), "/", rate.trials()));
  }
  return absl::OkStatus();
}

// SQLite stores NaN as NULL: a non-finite return is refused before it reaches the table.
absl::Status CheckEpisodeReturnsFinite(const v1::Evaluation& evaluation, const std::string& label) {
  for (const v1::EpisodeResult& episode : evaluation.episodes()) {
    if (!std::isfinite(episode.episode_return())) {
      return absl::InvalidArgumentError(absl::StrCat(label, ": episode ", episode.episode_index(), " has return ",
                                                     episode.episode_return(),
                                                     "; a return must be finite (the task's reward was not)"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckStorable(const v1::Evaluation& evaluation) {
  const std::string label = absl::StrCat("evaluation '", evaluation.id(), "'");
  if (evaluation.id().empty()) return absl::InvalidArgumentError("evaluation id is empty");
  if (evaluation.checkpoint_id().empty()) return absl::InvalidArgumentError(label + ": checkpoint id is empty");
  if (evaluation.protocol().task().empty()) return absl::InvalidArgumentError(label + ": protocol has no task");
  if (evaluation.created_unix_us() <= 0) return absl::InvalidArgumentError(label + ": created time is not set");
  const std::string hash = ProtocolHash(evaluation.protocol());
  if (evaluation.protocol_hash() != hash) {
    return absl::InvalidArgumentError(absl::StrCat(label, ": protocol_hash '", evaluation.protocol_hash(),
                                                   "' is not the protocol's hash ", hash));
  }
  ROBOLOOP_RETURN_IF_ERROR(CheckEpisodeReturnsFinite(evaluation, label));
  switch (evaluation.status()) {
    case v1::EVALUATION_COMPLETED:
      return CheckCompleted(evaluation, label);
    case v1::EVALUATION_FAILED:
      if (!evaluation.has_aggregates()) return absl::OkStatus();
      return absl::InvalidArgumentError(label + ": a failed evaluation stores no aggregates (no partial rate)");
    default:
      return absl::InvalidArgumentError(label + ": only completed or failed evaluations are stored");
  }
}

absl::Status InsertEvaluationRow(SqliteDb& db, const v1::Evaluation& e) {
  const bool completed = e.status() == v1::EVALUATION_COMPLETED;
  const v1::Aggregates& a = e.aggregates();
  auto number = [completed](auto value) -> SqlValue {
    if (!completed) return nullptr;
    return value;
  };
  nlohmann::json aliases = nlohmann::json::array();
  for (const std::string& alias : e.aliases()) aliases.push_back(alias);
  return db.Run(
      "INSERT INTO evaluations(id, protocol_hash, protocol_json, task, checkpoint_id, model, "
      "model_version, dataset_id, aliases_json, status, successes, trials, success_rate, "
      "success_low, success_high, mean_return, return_low, return_high, aggregates_json, "
      "provenance_json, failure, created_at, forced, requested_by) VALUES(?1, ?2, ?3, ?4, ?5, ?6, "
      "?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24)",
      {e.id(), e.protocol_hash(), ToJson(e.protocol()), e.protocol().task(), e.checkpoint_id(),
       e.model(), int64_t{e.model_version()}, e.dataset_id(), aliases.dump(),
       std::string(completed ? kCompleted : kFailed), number(a.success().successes()),
       number(a.success().trials()), number(a.success().rate()),
       number(a.success().interval().low()), number(a.success().interval().high()),
       number(a.episode_return().mean()), number(a.episode_return().interval().low()),
       number(a.episode_return().interval().high()),
       completed ? SqlValue(ToJson(a)) : SqlValue(nullptr), ToJson(e.provenance()), e.failure(),
       e.created_unix_us(), int64_t{e.forced() ? 1 : 0}, e.requested_by()});
}

absl::Status InsertEpisodeRows(SqliteDb& db, const v1::Evaluation& e) {
  for (const v1::EpisodeResult& r : e.episodes()) {
    ROBOLOOP_RETURN_IF_ERROR(db.Run(
        "INSERT INTO episodes(evaluation_id, episode_index, seed, episode_return, length, "
        "success, end_reason, end_detail, state_hash_chain, final_state_hash) "
        "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
        {e.id(), r.episode_index(), AsSql(r.seed()), r.episode_return(), int64_t{r.length()},
         int64_t{r.success() ? 1 : 0}, r.end_reason(), r.end_detail(), AsSql(r.state_hash_chain()),
         AsSql(r.final_state_hash())}));
  }
  return absl::OkStatus();
}

constexpr char kSelectEvaluation[] =
    "SELECT e.id, e.protocol_json, e.protocol_hash, e.checkpoint_id, e.model, e.model_version, "
    "e.dataset_id, e.aliases_json, e.status, e.aggregates_json, e.provenance_json, e.failure, "
    "e.created_at, e.forced, e.requested_by FROM evaluations e ";

absl::StatusOr<v1::Evaluation> ReadEvaluationRow(const SqliteStatement& row) {
  v1::Evaluation e;
  e.set_id(row.Text(0));
  const std::string label = absl::StrCat("evaluation ", e.id());
  ROBOLOOP_RETURN_IF_ERROR(FromJson(row.Text(1), label + " protocol", e.mutable_protocol()));
  e.set_protocol_hash(row.Text(2));
  e.set_checkpoint_id(row.Text(3));
  e.set_model(row.Text(4));
  e.set_model_version(static_cast<int32_t>(row.Int(5)));
  e.set_dataset_id(row.Text(6));
  nlohmann::json aliases = nlohmann::json::parse(row.Text(7), nullptr, /*allow_exceptions=*/false);
  if (!aliases.is_array()) return absl::DataLossError(label + ": stored aliases are not a JSON array");
  for (const auto& alias : aliases) e.add_aliases(alias.get<std::string>());
  const bool completed = row.Text(8) == kCompleted;
  e.set_status(completed ? v1::EVALUATION_COMPLETED : v1::EVALUATION_FAILED);
  if (completed) {
    ROBOLOOP_RETURN_IF_ERROR(FromJson(row.Text(9), label + " aggregates", e.mutable_aggregates()));
  }
  ROBOLOOP_RETURN_IF_ERROR(FromJson(row.Text(10), label + " provenance", e.mutable_provenance()));
  e.set_failure(row.Text(11));
  e.set_created_unix_us(row.Int(12));
  e.set_forced(row.Int(13) != 0);
  e.set_requested_by(row.Text(14));
  return e;
}

absl::StatusOr<std::vector<v1::Evaluation>> QueryEvaluations(SqliteDb& db,
                                                             const std::string& where_and_order,
                                                             const std::vector<SqlValue>& params) {
  ROBOLOOP_ASSIGN_OR_RETURN(auto statement, db.Prepare(kSelectEvaluation + where_and_order, params));
  std::vector<v1::Evaluation> evaluations;
  while (true) {
    ROBOLOOP_ASSIGN_OR_RETURN(bool row, statement->Step());
    if (!row) return evaluations;
    ROBOLOOP_ASSIGN_OR_RETURN(v1::Evaluation evaluation, ReadEvaluationRow(*statement));
    evaluations.push_back(std::move(evaluation));
  }
}

absl::Status ReadEpisodes(SqliteDb& db, v1::Evaluation* evaluation) {
  ROBOLOOP_ASSIGN_OR_RETURN(
      auto statement,
      db.Prepare("SELECT episode_index, seed, episode_return, length, success, end_reason, "
                 "end_detail, state_hash_chain, final_state_hash FROM episodes "
                 "WHERE evaluation_id = ?1 ORDER BY episode_index",
                 {evaluation->id()}));
  while (true) {
    ROBOLOOP_ASSIGN_OR_RETURN(bool row, statement->Step());
    if (!row) return absl::OkStatus();
    v1::EpisodeResult* r = evaluation->add_episodes();
    r->set_episode_index(statement->Int(0));
    r->set_seed(static_cast<uint64_t>(statement->Int(1)));
    r->set_episode_return(statement->Double(2));
    r->set_length(static_cast<int32_t>(statement->Int(3)));
    r->set_success(statement->Int(4) != 0);
    r->set_end_reason(statement->Text(5));
    r->set_end_detail(statement->Text(6));
    r->set_state_hash_chain(static_cast<uint64_t>(statement->Int(7)));
    r->set_final_state_hash(static_cast<uint64_t>(statement->Int(8)));
  }
}

// Appends "<condition> ?n" to `conditions`, binding `value` as parameter n.
template <typename T>
void AddFilter(const std::string& condition, const T& value, std::vector<std::string>* conditions,
               std::vector<SqlValue>* params) {
  params->emplace_back(std::in_place_type<T>, value);
  conditions->push_back(absl::StrCat(condition, " ?", params->size()));
}

std::string RankOrder(RankMetric metric) {
  switch (metric) {
    case RankMetric::kSuccessRate:
      return "e.success_rate DESC, e.success_low DESC, e.mean_return DESC";
    case RankMetric::kMeanReturn:
      return "e.mean_return DESC, e.success_low DESC, e.success_rate DESC";
    case RankMetric::kSuccessLower:
      break;
  }
  return "e.success_low DESC, e.success_rate DESC, e.mean_return DESC";
}

}  // namespace

absl::StatusOr<RankMetric> ParseRankMetric(const std::string& name) {
  if (name == "success_lower") return RankMetric::kSuccessLower;
  if (name == "success_rate") return RankMetric::kSuccessRate;
  if (name == "mean_return") return RankMetric::kMeanReturn;
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown leaderboard metric '", name, "'; known: success_lower, success_rate, mean_return"));
}

LeaderboardStore::LeaderboardStore(std::unique_ptr<SqliteDb> db) : db_(std::move(db)) {}

LeaderboardStore::~LeaderboardStore() = default;

std::string LeaderboardStore::DatabasePath(const std::string& root) {
  return StoreLayout(root).Leaderboard();
}

int LeaderboardStore::LatestSchemaVersion() { return Migrations().back().version; }

absl::StatusOr<std::unique_ptr<LeaderboardStore>> LeaderboardStore::Create(const Options& options) {
  if (options.root.empty()) return absl::InvalidArgumentError("leaderboard store root is empty");
  const std::string path = DatabasePath(options.root);
  if (!options.create_if_missing && !PathExists(path)) {
    return absl::NotFoundError(absl::StrCat("no leaderboard database at ", path,
                                            " (nothing was evaluated under root ", options.root, ")"));
  }
  if (options.create_if_missing) {
    ROBOLOOP_RETURN_IF_ERROR(Annotate(MakeDirs(ParentDir(path)), "leaderboard store " + options.root));
  }
  ROBOLOOP_ASSIGN_OR_RETURN(std::unique_ptr<SqliteDb> db,
                            SqliteDb::Open(path, options.busy_timeout_ms, options.create_if_missing));
  ROBOLOOP_RETURN_IF_ERROR(db->UseWriteAheadLog());
  ROBOLOOP_RETURN_IF_ERROR(db->Exec("PRAGMA synchronous = NORMAL"));
  ROBOLOOP_RETURN_IF_ERROR(db->Exec("PRAGMA foreign_keys = ON"));
  ROBOLOOP_RETURN_IF_ERROR(Migrate(*db));
  return std::unique_ptr<LeaderboardStore>(new LeaderboardStore(std::move(db)));
}

absl::Status LeaderboardStore::Store(const v1::Evaluation& evaluation) {
  ROBOLOOP_RETURN_IF_ERROR(CheckStorable(evaluation));
  absl::MutexLock lock(&mu_);
  ROBOLOOP_ASSIGN_OR_RETURN(auto transaction, SqliteTransaction::Begin(db_.get()));
  ROBOLOOP_RETURN_IF_ERROR(InsertEvaluationRow(*db_, evaluation));
  ROBOLOOP_RETURN_IF_ERROR(InsertEpisodeRows(*db_, evaluation));
  return transaction->Commit();
}

absl::StatusOr<std::optional<v1::Evaluation>> LeaderboardStore::FindCached(
    const std::string& protocol_hash, const std::string& checkpoint_id) {
  absl::MutexLock lock(&mu_);
  ROBOLOOP_ASSIGN_OR_RETURN(
      std::vector<v1::Evaluation> found,
      QueryEvaluations(*db_,
                       "WHERE e.protocol_hash = ?1 AND e.checkpoint_id = ?2 AND e.status = "
                       "'completed' ORDER BY e.created_at DESC, e.rowid DESC LIMIT 1",
                       {protocol_hash, checkpoint_id}));
  if (found.empty()) return std::optional<v1::Evaluation>();
  ROBOLOOP_RETURN_IF_ERROR(ReadEpisodes(*db_, &found.front()));
  return std::optional<v1::Evaluation>(std::move(found.front()));
}

absl::StatusOr<std::vector<v1::Evaluation>> LeaderboardStore::Top(const LeaderboardQuery& query) {
  if (query.limit < 1) {
    return absl::InvalidArgumentError(absl::StrCat("leaderboard limit must be >= 1 (got ", query.limit, ")"));
  }
  std::vector<std::string> conditions = {
      "e.status = 'completed'",
      "NOT EXISTS (SELECT 1 FROM evaluations n WHERE n.status = 'completed' AND "
      "n.protocol_hash = e.protocol_hash AND n.checkpoint_id = e.checkpoint_id AND "
      "(n.created_at > e.created_at OR (n.created_at = e.created_at AND n.rowid > e.rowid)))"};
  std::vector<SqlValue> params;
  if (!query.task.empty()) AddFilter("e.task =", query.task, &conditions, &params);
  if (!query.protocol_hash.empty()) AddFilter("e.protocol_hash =", query.protocol_hash, &conditions, &params);
  if (!query.model.empty()) AddFilter("e.model =", query.model, &conditions, &params);
  if (!query.dataset_id.empty()) AddFilter("e.dataset_id =", query.dataset_id, &conditions, &params);
  if (!query.alias.empty()) {
    AddFilter("EXISTS (SELECT 1 FROM json_each(e.aliases_json) WHERE value =", query.alias,
              &conditions, &params);
    conditions.back() += ")";
  }
  if (query.since_unix_us != 0) AddFilter("e.created_at >=", query.since_unix_us, &conditions, &params);
  if (query.until_unix_us != 0) AddFilter("e.created_at <", query.until_unix_us, &conditions, &params);
  params.emplace_back(std::in_place_type<int64_t>, query.limit);
  const std::string sql =
      absl::StrCat("WHERE ", absl::StrJoin(conditions, " AND "), " ORDER BY ", RankOrder(query.metric),
                   ", e.created_at DESC, e.rowid DESC LIMIT ?", params.size());
  absl::MutexLock lock(&mu_);
  return QueryEvaluations(*db_, sql, params);
}

absl::StatusOr<std::vector<v1::Evaluation>> LeaderboardStore::History(const std::string& model,
                                                                      const std::string& protocol_hash) {
  if (model.empty()) return absl::InvalidArgumentError("leaderboard history needs a model name");
  absl::MutexLock lock(&mu_);
  return QueryEvaluations(*db_,
                          "WHERE e.status = 'completed' AND e.model = ?1 AND (?2 = '' OR "
                          "e.protocol_hash = ?2) ORDER BY e.model_version, e.created_at, e.rowid",
                          {model, protocol_hash});
}

absl::StatusOr<std::vector<StoredProtocol>> LeaderboardStore::ListProtocols() {
  absl::MutexLock lock(&mu_);
  ROBOLOOP_ASSIGN_OR_RETURN(
      auto statement,
      db_->Prepare("SELECT DISTINCT protocol_hash, protocol_json FROM evaluations ORDER BY protocol_hash, rowid"));
  std::vector<StoredProtocol> listed;
  while (true) {
    ROBOLOOP_ASSIGN_OR_RETURN(bool row, statement->Step());
    if (!row) return listed;
    const std::string hash = statement->Text(0);
    if (!listed.empty() && listed.back().hash == hash) continue;
    v1::Protocol protocol;
    ROBOLOOP_RETURN_IF_ERROR(FromJson(statement->Text(1), absl::StrCat("protocol ", hash), &protocol));
    listed.push_back({hash, protocol.name(), std::move(protocol)});
  }
}

absl::StatusOr<std::vector<StoredProtocol>> LeaderboardStore::FindProtocols(const std::string& hash_prefix,
                                                                             const std::string& name) {
  ROBOLOOP_ASSIGN_OR_RETURN(std::vector<StoredProtocol> listed, ListProtocols());
  std::vector<StoredProtocol> found;
  for (StoredProtocol& stored : listed) {
    const bool by_hash = !hash_prefix.empty() && stored.hash.rfind(hash_prefix, 0) == 0;
    const bool by_name = !name.empty() && stored.name == name;
    if (by_hash || by_name) found.push_back(std::move(stored));
  }
  return found;
}

absl::StatusOr<v1::Evaluation> LeaderboardStore::Get(const std::string& id) {
  absl::MutexLock lock(&mu_);
  ROBOLOOP_ASSIGN_OR_RETURN(std::vector<v1::Evaluation> found,
                            QueryEvaluations(*db_, "WHERE e.id = ?1", {id}));
  if (found.empty()) return absl::NotFoundError(absl::StrCat("no evaluation '", id, "' in the leaderboard"));
  ROBOLOOP_RETURN_IF_ERROR(ReadEpisodes(*db_, &found.front()));
  return std::move(found.front());
}

absl::StatusOr<std::vector<std::string>> LeaderboardStore::EvaluationIdsWithPrefix(const std::string& prefix,
                                                                                   int limit) {
  absl::MutexLock lock(&mu_);
  ROBOLOOP_ASSIGN_OR_RETURN(auto statement,
                            db_->Prepare("SELECT id FROM evaluations WHERE substr(id, 1, length(?1)) = ?1 "
                                         "ORDER BY id LIMIT ?2",
                                         {prefix, int64_t{limit}}));
  std::vector<std::string> ids;
  while (true) {
    ROBOLOOP_ASSIGN_OR_RETURN(bool row, statement->Step());
    if (!row) return ids;
    ids.push_back(statement->Text(0));
  }
}

}  // namespace roboloop::eval
