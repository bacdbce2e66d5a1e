#include "cli/eval.h"

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/time/time.h"
#include "cli/eval_run.h"
#include "cli/flags.h"
#include "cli/table.h"
#include "common/fs.h"
#include "common/ids.h"
#include "common/sha256.h"
#include "common/status.h"
#include "common/store_layout.h"
#include "eval/eval_service.h"
#include "eval/leaderboard_store.h"
#include "eval/metrics.h"
#include "eval/protocol.h"
#include "wiring/registry_connection.h"

namespace roboloop::cli {
namespace {

enum class ListFormat { kTable, kJson, kCsv };

// Flags of `leaderboard` and `compare`, filled by CLI11 before the action runs.
struct EvalFlags {
  std::string root = ".roboloop";
  std::string protocols_dir = eval::kDefaultProtocolsDir;
  std::string protocol;
  std::string task;
  std::string model;
  std::string dataset;
  std::string alias;
  std::string since;
  std::string until;
  std::string metric = "success_lower";
  int top = 10;
  ListFormat format = ListFormat::kTable;
  std::string candidate;
  std::string baseline;
  double alpha = 0.05;
  int resamples = 10000;
  uint64_t seed = 0x5eed;
};

// --format, parsed as text so that help and errors read like the other commands' ("TEXT:{table,json,csv}").
void AddFormat(CLI::App* command, ListFormat* format, bool with_csv) {
  std::vector<std::string> names = {"table", "json"};
  if (with_csv) names.push_back("csv");
  command
      ->add_option_function<std::string>(
          "--format",
          [format](const std::string& value) {
            *format = value == "json" ? ListFormat::kJson : value == "csv" ? ListFormat::kCsv : ListFormat::kTable;
          },
          with_csv ? "table, json or csv" : "table or json")
      ->transform(CLI::IsMember(names, CLI::ignore_case))  // "JSON" becomes "json"
      ->default_str("table");
}

absl::StatusOr<std::unique_ptr<eval::LeaderboardStore>> OpenStore(const EvalFlags& f) {
  eval::LeaderboardStore::Options options;
  options.root = f.root;
  options.create_if_missing = false;
  return eval::LeaderboardStore::Create(options);
}

// The protocol hash --protocol names: a full hash, a protocol name or YAML path (the hash its
// evaluations were stored under, eval::ResolveLoadedProtocolHash), else a hash prefix or name of a
// protocol the store holds evaluations under (eval::ResolveStoredProtocolHash).
absl::StatusOr<std::string> ResolveProtocolHash(const EvalFlags& f, eval::LeaderboardStore& store) {
  if (IsSha256Hex(f.protocol)) return f.protocol;
  absl::StatusOr<v1::Protocol> protocol = eval::LoadProtocol(f.protocol, f.protocols_dir);
  if (protocol.ok()) {
    absl::StatusOr<std::string> hash = eval::ResolveLoadedProtocolHash(store, *protocol);
    if (!hash.ok()) return Annotate(hash.status(), "--protocol");
    return hash;
  }
  absl::StatusOr<std::string> stored = eval::ResolveStoredProtocolHash(store, f.protocol);
  if (stored.ok()) return stored;
  if (!absl::IsNotFound(stored.status())) return Annotate(stored.status(), "--protocol");
  return Annotate(protocol.status(), absl::StrCat("--protocol '", f.protocol,
                                                  "' is neither a protocol hash (or a stored one's prefix) nor a "
                                                  "protocol"));
}

absl::StatusOr<int64_t> ParseDate(const std::string& flag, const std::string& value) {
  if (value.empty()) return 0;
  absl::Time time;
  std::string error;
  if (absl::ParseTime(absl::RFC3339_full, value, &time, &error) ||
      absl::ParseTime("%Y-%m-%d", value, &time, &error)) {
    return absl::ToUnixMicros(time);
  }
  return UsageError(absl::StrCat(flag, " '", value, "' is not YYYY-MM-DD or RFC 3339"));
}

absl::StatusOr<eval::LeaderboardQuery> MakeQuery(const EvalFlags& f) {
  eval::LeaderboardQuery query;
  query.task = f.task;
  query.model = f.model;
  query.dataset_id = f.dataset;
  query.alias = f.alias;
  query.limit = f.top;
  if (f.top < 1) return UsageError(absl::StrCat("--top must be >= 1 (got ", f.top, ")"));
  absl::StatusOr<eval::RankMetric> metric = eval::ParseRankMetric(f.metric);
  if (!metric.ok()) return UsageError(std::string(metric.status().message()));
  query.metric = *metric;
  ROBOLOOP_ASSIGN_OR_RETURN(query.since_unix_us, ParseDate("--since", f.since));
  ROBOLOOP_ASSIGN_OR_RETURN(query.until_unix_us, ParseDate("--until", f.until));
  return query;
}

std::string RateCell(const v1::RateEstimate& rate) {
  return absl::StrFormat("%.2f [%.2f, %.2f]", rate.rate(), rate.interval().low(), rate.interval().high());
}

std::string MeanCell(const v1::MeanEstimate& mean) {
  return absl::StrFormat("%.1f [%.1f, %.1f]", mean.mean(), mean.interval().low(), mean.interval().high());
}

std::string ProtocolCell(const v1::Evaluation& e) {
  return absl::StrCat(e.protocol().name(), " (", e.protocol_hash().substr(0, 8), ")");
}

std::string ModelCell(const v1::Evaluation& e) { return absl::StrCat(e.model(), ":v", e.model_version()); }


// RFC 4180 quoting: fields with a comma, quote, carriage return or newline are quoted, quotes doubled.
std::string CsvField(const std::string& value) {
  if (value.find_first_of(",\"\r\n") == std::string::npos) return value;
  return absl::StrCat("\"", absl::StrReplaceAll(value, {{"\"", "\"\""}}), "\"");
}

void PrintCsv(const std::vector<v1::Evaluation>& evaluations) {
  std::printf("rank,evaluation_id,model,model_version,checkpoint_id,task,protocol,protocol_hash,"
              "successes,episodes,success_rate,success_low,success_high,mean_return,return_low,"
              "return_high,created_at,requested_by\n");
  int rank = 0;
  for (const v1::Evaluation& e : evaluations) {
    const v1::Aggregates& a = e.aggregates();
    std::vector<std::string> fields = {
        absl::StrCat(++rank), e.id(), e.model(), absl::StrCat(e.model_version()), e.checkpoint_id(),
        e.protocol().task(), e.protocol().name(), e.protocol_hash(), absl::StrCat(a.success().successes()),
        absl::StrCat(a.success().trials()), absl::StrFormat("%.17g", a.success().rate()),
        absl::StrFormat("%.17g", a.success().interval().low()),
        absl::StrFormat("%.17g", a.success().interval().high()),
        absl::StrFormat("%.17g", a.episode_return().mean()),
        absl::StrFormat("%.17g", a.episode_return().interval().low()),
        absl::StrFormat("%.17g", a.episode_return().interval().high()), FormatTimeUtc(e.created_unix_us()),
        e.requested_by()};
    for (std::string& field : fields) field = CsvField(field);
    std::printf("%s\n", absl::StrJoin(fields, ",").c_str());
  }
}

void PrintTable(const std::vector<v1::Evaluation>& evaluations) {
  if (evaluations.empty()) {
    std::printf("no completed evaluations match\n");
    return;
  }
  Table table({"RANK", "MODEL", "CHECKPOINT", "TASK", "PROTOCOL", "SUCCESS (95% CI)",
               "RETURN (95% CI)", "EPISODES", "CREATED", "BY"});
  int rank = 0;
  for (const v1::Evaluation& e : evaluations) {
    table.AddRow({absl::StrCat(++rank), ModelCell(e), e.checkpoint_id().substr(0, 12), e.protocol().task(),
                  ProtocolCell(e), RateCell(e.aggregates().success()),
                  MeanCell(e.aggregates().episode_return()), absl::StrCat(e.aggregates().success().trials()),
                  FormatTimeUtc(e.created_unix_us()).substr(0, 19), e.requested_by()});
  }
  std::printf("%s", table.Render().c_str());
}

absl::Status Leaderboard(const EvalFlags& f) {
  ROBOLOOP_ASSIGN_OR_RETURN(eval::LeaderboardQuery query, MakeQuery(f));
  ROBOLOOP_ASSIGN_OR_RETURN(std::unique_ptr<eval::LeaderboardStore> store, OpenStore(f));
  if (!f.protocol.empty()) {
    ROBOLOOP_ASSIGN_OR_RETURN(query.protocol_hash, ResolveProtocolHash(f, *store));
  }
  ROBOLOOP_ASSIGN_OR_RETURN(std::vector<v1::Evaluation> top, store->Top(query));
  switch (f.format) {
    case ListFormat::kJson: {
      v1::LeaderboardResponse response;
      for (v1::Evaluation& e : top) *response.add_evaluations() = std::move(e);
      ROBOLOOP_RETURN_IF_ERROR(PrintProtoJson(response, JsonLayout::kIndented, JsonDefaults::kPrinted));
      break;
    }
    case ListFormat::kCsv:
      PrintCsv(top);
      break;
    case ListFormat::kTable:
      PrintTable(top);
      break;
  }
  return absl::OkStatus();
}

std::string Describe(const v1::Evaluation& e) {
  return absl::StrCat(ModelCell(e), " ", e.checkpoint_id().substr(0, 12), " (evaluation ", e.id(), ")");
}

void PrintComparison(const v1::Comparison& c, const v1::Evaluation& candidate, const v1::Evaluation& baseline) {
  std::printf("candidate  %s\n", Describe(candidate).c_str());
  std::printf("baseline   %s\n", Describe(baseline).c_str());
  std::printf("protocol   %s\n", ProtocolCell(candidate).c_str());
  std::printf("success    %s vs %s\n", RateCell(candidate.aggregates().success()).c_str(),
              RateCell(baseline.aggregates().success()).c_str());
  std::printf("pairs      %lld: both %lld, candidate only %lld, baseline only %lld, neither %lld\n",
              static_cast<long long>(c.pairs()), static_cast<long long>(c.both_succeeded()),
              static_cast<long long>(c.candidate_only()), static_cast<long long>(c.baseline_only()),
              static_cast<long long>(c.neither_succeeded()));
  std::printf("McNemar    exact two-sided p = %.4g\n", c.mcnemar_p());
  std::printf("return     difference %.3f [%.3f, %.3f] (paired bootstrap, %.0f%%, %d resamples)\n",
              c.return_difference().mean(), c.return_difference().interval().low(),
              c.return_difference().interval().high(), 100.0 * c.return_difference().confidence(),
              c.return_difference().resamples());
  std::printf("sign-flip  %s two-sided p = %.4g\n", c.pairs() <= eval::kMaxExactSignFlipPairs ? "exact" : "Monte-Carlo",
              c.return_difference_p());
  std::printf("verdict    %s at alpha %.3g (%s)\n", eval::VerdictName(c.verdict()), c.alpha(), c.reason().c_str());
}

// Checkpoint references resolved by the registry at a store root, opened on first use (only when
// the root holds a registry catalog, so that a lookup never creates one).
class CheckpointRefs {
 public:
  explicit CheckpointRefs(std::string root) : root_(std::move(root)) {}

  // The id of the checkpoint `ref` names (id, unique id prefix, name:vN, name@alias); NotFound
  // when the root has no registry catalog; the registry's error otherwise.
  absl::StatusOr<std::string> CheckpointId(const std::string& ref) {
    if (connection_ == nullptr) {
      if (!PathExists(StoreLayout(root_).RegistryCatalog())) {
        return absl::NotFoundError(absl::StrCat("no registry at ", root_));
      }
      wiring::RegistryTarget target;
      target.root = root_;
      ROBOLOOP_ASSIGN_OR_RETURN(connection_, wiring::RegistryConnection::Open(target));
    }
    ROBOLOOP_ASSIGN_OR_RETURN(v1::Checkpoint checkpoint, connection_->client().GetCheckpoint(ref));
    return checkpoint.id();
  }

 private:
  std::string root_;
  std::unique_ptr<wiring::RegistryConnection> connection_;
};

// The evaluation a side of `compare` names under `protocol_hash`: an evaluation id, a checkpoint
// id stored there or a unique evaluation id prefix (one that is also a checkpoint reference is
// ambiguous), else a checkpoint reference the registry resolves, with its newest completed
// evaluation under the protocol.
absl::StatusOr<v1::Evaluation> ResolveSide(eval::LeaderboardStore& store, CheckpointRefs& checkpoints,
                                           const std::string& ref, const std::string& protocol,
                                           const std::string& protocol_hash) {
  absl::StatusOr<v1::Evaluation> stored = eval::ResolveStoredEvaluation(store, ref, protocol_hash);
  const bool by_prefix = stored.ok() && stored->id() != ref && stored->checkpoint_id() != ref;
  if (!by_prefix && !absl::IsNotFound(stored.status())) return stored;
  absl::StatusOr<std::string> checkpoint_id = checkpoints.CheckpointId(ref);
  if (by_prefix) {
    if (!checkpoint_id.ok()) return stored;
    return absl::InvalidArgumentError(absl::StrCat("'", ref, "' is ambiguous: evaluation ", stored->id(),
                                                   " and checkpoint ", *checkpoint_id,
                                                   " start with it; give more characters"));
  }
  if (!checkpoint_id.ok()) {
    return absl::Status(stored.status().code(), absl::StrCat(stored.status().message(), "; as a checkpoint reference: ",
                                                             checkpoint_id.status().message()));
  }
  absl::StatusOr<v1::Evaluation> newest = eval::ResolveStoredEvaluation(store, *checkpoint_id, protocol_hash);
  if (!absl::IsNotFound(newest.status())) return newest;
  return absl::NotFoundError(absl::StrCat("checkpoint '", ref, "' (", *checkpoint_id,
                                          ") has no completed evaluation under --protocol '", protocol, "' (",
                                          protocol_hash, "); run `roboloop eval ", ref, " --protocol ", protocol,
                                          "` first"));
}

// --alpha and --resamples as a paired comparison takes them; a usage error naming the flag otherwise.
absl::Status CheckComparisonFlags(const EvalFlags& f) {
  ROBOLOOP_RETURN_IF_ERROR(CheckAlphaFlag("--alpha", f.alpha));
  const int minimum = eval::MinCompareResamples(f.alpha);
  if (f.resamples >= minimum) return absl::OkStatus();
  return UsageError(absl::StrCat("--resamples must be >= ", minimum, " at --alpha ", f.alpha, " (got ", f.resamples,
                                 "); fewer cannot reach p < alpha or a stable interval"));
}

absl::Status Compare(const EvalFlags& f) {
  if (f.protocol.empty()) return UsageError("compare needs --protocol P");
  ROBOLOOP_RETURN_IF_ERROR(CheckComparisonFlags(f));
  ROBOLOOP_ASSIGN_OR_RETURN(std::unique_ptr<eval::LeaderboardStore> store, OpenStore(f));
  ROBOLOOP_ASSIGN_OR_RETURN(std::string protocol_hash, ResolveProtocolHash(f, *store));
  CheckpointRefs checkpoints(f.root);
  ROBOLOOP_ASSIGN_OR_RETURN(v1::Evaluation candidate, ResolveSide(*store, checkpoints, f.candidate, f.protocol, protocol_hash));
  ROBOLOOP_ASSIGN_OR_RETURN(v1::Evaluation baseline, ResolveSide(*store, checkpoints, f.baseline, f.protocol, protocol_hash));
  eval::CompareOptions options;
  options.alpha = f.alpha;
  options.bootstrap.resamples = f.resamples;
  options.bootstrap.seed = f.seed;
  ROBOLOOP_ASSIGN_OR_RETURN(v1::Comparison comparison,
                            eval::ComparePaired(candidate.episodes(), baseline.episodes(), options));
  comparison.set_protocol_hash(protocol_hash);
  comparison.set_candidate_evaluation_id(candidate.id());
  comparison.set_baseline_evaluation_id(baseline.id());
  if (f.format == ListFormat::kJson) {
    ROBOLOOP_RETURN_IF_ERROR(PrintProtoJson(comparison, JsonLayout::kIndented, JsonDefaults::kPrinted));
  } else {
    PrintComparison(comparison, candidate, baseline);
  }
  return absl::OkStatus();
}

void AddStoreOptions(CLI::App* command, EvalFlags* f) {
  command->add_option("--root", f->root, "Store root; evaluations live in <root>/eval/leaderboard.db")
      ->capture_default_str();
  command->add_option("--protocols-dir", f->protocols_dir, "Where named protocols live")->capture_default_str();
}

void AddLeaderboardCommand(CLI::App& app, CommandRunner& runner, const std::shared_ptr<EvalFlags>& f) {
  CLI::App* command = app.add_subcommand("leaderboard", "Best stored evaluations, with 95% intervals");
  AddStoreOptions(command, f.get());
  command->add_option("--task", f->task, "Only this task");
  command->add_option("--protocol", f->protocol, "Only this protocol (name, YAML path, hash or a stored hash's prefix)");
  command->add_option("--model", f->model, "Only this model");
  command->add_option("--dataset", f->dataset, "Only checkpoints trained on this dataset id");
  command->add_option("--alias", f->alias, "Only checkpoints that held this alias when evaluated");
  command->add_option("--since", f->since, "Evaluated at or after (YYYY-MM-DD or RFC 3339)");
  command->add_option("--until", f->until, "Evaluated before (YYYY-MM-DD or RFC 3339)");
  command->add_option("--metric", f->metric, "success_lower, success_rate or mean_return")->capture_default_str();
  command->add_option("--top", f->top, "Rows to show")->capture_default_str();
  AddFormat(command, &f->format, /*with_csv=*/true);
  runner.Bind(command, [f] { return Leaderboard(*f); });
}

void AddCompareCommand(CLI::App& app, CommandRunner& runner, const std::shared_ptr<EvalFlags>& f) {
  CLI::App* command = app.add_subcommand(
      "compare", "Paired comparison of candidate A against baseline B under one protocol");
  AddStoreOptions(command, f.get());
  command->add_option("A", f->candidate, "Candidate: evaluation id (or a unique prefix) or checkpoint reference "
                      "(id, id prefix, model:vN, model@alias)")->required();
  command->add_option("B", f->baseline, "Baseline: evaluation id (or a unique prefix) or checkpoint reference")
      ->required();
  command->add_option("--protocol", f->protocol, "Protocol name, YAML path, hash or a stored hash's prefix")
      ->required();
  command->add_option("--alpha", f->alpha, "Significance level")->capture_default_str();
  command->add_option("--resamples", f->resamples,
                      "Bootstrap and Monte-Carlo sign-flip resamples (>= max(1000, 10 / alpha))")->capture_default_str();
  command->add_option("--seed", f->seed, "Bootstrap seed")->check(CLI::NonNegativeNumber)->capture_default_str();
  AddFormat(command, &f->format, /*with_csv=*/false);
  runner.Bind(command, [f] { return Compare(*f); });
}

}  // namespace

void AddEvalCommands(CLI::App& app, CommandRunner& runner) {
  AddLeaderboardCommand(app, runner, std::make_shared<EvalFlags>());
  AddCompareCommand(app, runner, std::make_shared<EvalFlags>());
  AddEvaluateCommands(app, runner);
}

}  // namespace roboloop::cli
