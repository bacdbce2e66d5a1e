#include "pipeline/report.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/fs.h"
#include "common/ids.h"
#include "common/status.h"

namespace roboloop::pipeline {
namespace {

constexpr char kStyle[] =
    "body{font-family:system-ui,sans-serif;margin:2em;color:#222}table{border-collapse:collapse;margin:1em 0}"
    "td,th{border:1px solid #ccc;padding:4px 8px;text-align:left;font-size:14px}th{background:#f3f3f3}"
    "code{font-size:12px}.muted{color:#777}";

std::string ShortId(const std::string& id) { return id.substr(0, 12); }

std::string Interval(double value, const v1::Interval& interval) {
  return absl::StrFormat("%.3f [%.3f, %.3f]", value, interval.low(), interval.high());
}

std::string LeaderboardTable(const std::vector<v1::Evaluation>& rows) {
  std::string html =
      "<table><tr><th>checkpoint</th><th>protocol</th><th>episodes</th><th>success (95% Wilson)</th>"
      "<th>return (95% bootstrap)</th><th>aliases</th><th>evaluated</th></tr>";
  for (const v1::Evaluation& e : rows) {
    const v1::Aggregates& a = e.aggregates();
    absl::StrAppend(&html, "<tr><td>", HtmlEscape(absl::StrCat(e.model(), ":v", e.model_version())), " <code>",
                    ShortId(e.checkpoint_id()), "</code></td><td>", HtmlEscape(e.protocol().name()), " <code>",
                    ShortId(e.protocol_hash()), "</code></td><td>", a.success().trials(), "</td><td>",
                    Interval(a.success().rate(), a.success().interval()), "</td><td>",
                    Interval(a.episode_return().mean(), a.episode_return().interval()), "</td><td>",
                    HtmlEscape(absl::StrJoin(e.aliases(), ", ")), "</td><td>", FormatTimeUtc(e.created_unix_us()),
                    "</td></tr>");
  }
  return html + "</table>";
}

// Success rate of each row as a dot with its interval, on a 0..1 axis.
std::string SuccessChart(const std::vector<v1::Evaluation>& rows) {
  const int row_height = 22, left = 260, width = 420;
  std::string svg = absl::StrFormat(
      "<svg xmlns='http://www.w3.org/2000/svg' width='%d' height='%d' font-size='12'>", left + width + 20,
      row_height * static_cast<int>(rows.size()) + 30);
  for (double tick : {0.0, 0.25, 0.5, 0.75, 1.0}) {
    const double x = left + tick * width;
    absl::StrAppendFormat(&svg, "<line x1='%.1f' y1='0' x2='%.1f' y2='%d' stroke='#ddd'/><text x='%.1f' y='%d'>%.2f</text>",
                          x, x, row_height * static_cast<int>(rows.size()), x - 10,
                          row_height * static_cast<int>(rows.size()) + 15, tick);
  }
  for (size_t i = 0; i < rows.size(); ++i) {
    const v1::RateEstimate& s = rows[i].aggregates().success();
    const double y = row_height * (static_cast<double>(i) + 0.5);
    absl::StrAppendFormat(&svg,
                          "<text x='0' y='%.1f'>%s (%s)</text><line x1='%.1f' y1='%.1f' x2='%.1f' y2='%.1f' "
                          "stroke='#36c' stroke-width='3'/><circle cx='%.1f' cy='%.1f' r='4' fill='#c33'/>",
                          y + 4, HtmlEscape(absl::StrCat(rows[i].model(), ":v", rows[i].model_version())),
                          HtmlEscape(rows[i].protocol().name()), left + s.interval().low() * width, y,
                          left + s.interval().high() * width, y, left + s.rate() * width, y);
  }
  return svg + "</svg>";
}

std::string LineageSection(ServiceClients& clients, const v1::Checkpoint& champion) {
  absl::StatusOr<v1::LineageResponse> lineage = clients.registry().Lineage(champion.id());
  if (!lineage.ok()) return absl::StrCat("<p class='muted'>lineage unavailable: ", HtmlEscape(lineage.status().ToString()), "</p>");
  std::string html = "<h2>Lineage of the champion</h2><table><tr><th>checkpoint</th><th>step</th><th>run</th><th>dataset</th></tr>";
  std::vector<v1::Checkpoint> chain = {champion};
  chain.insert(chain.end(), lineage->ancestors().begin(), lineage->ancestors().end());
  for (const v1::Checkpoint& c : chain) {
    absl::StrAppend(&html, "<tr><td>", HtmlEscape(absl::StrCat(c.model(), ":v", c.version())), " <code>", ShortId(c.id()),
                    "</code></td><td>", c.step(), "</td><td><code>", HtmlEscape(c.run_id()), "</code></td><td><code>",
                    ShortId(c.dataset_id()), "</code></td></tr>");
  }
  absl::StrAppend(&html, "</table><table><tr><th>dataset</th><th>id</th><th>parents</th><th>metadata</th></tr>");
  for (const v1::Dataset& d : lineage->datasets()) {
    std::vector<std::string> parents;
    for (const std::string& p : d.parent_ids()) parents.push_back(ShortId(p));
    absl::StrAppend(&html, "<tr><td>", HtmlEscape(absl::StrCat(d.name(), ":v", d.version())), "</td><td><code>",
                    ShortId(d.id()), "</code></td><td><code>", absl::StrJoin(parents, ", "), "</code></td><td><code>",
                    HtmlEscape(d.metadata_json()), "</code></td></tr>");
  }
  return html + "</table>";
}

std::string AliasHistorySection(ServiceClients& clients, const std::string& model) {
  v1::AliasHistoryRequest request;
  request.set_model(model);
  request.set_alias("champion");
  absl::StatusOr<v1::AliasHistoryResponse> history = clients.registry().AliasHistory(request);
  if (!history.ok() || history->events().empty()) return "";
  std::string html = "<h2>Champion history</h2><table><tr><th>when</th><th>checkpoint</th><th>previous</th><th>reason</th></tr>";
  for (const v1::AliasEvent& e : history->events()) {
    absl::StrAppend(&html, "<tr><td>", FormatTimeUtc(e.time_unix_us()), "</td><td><code>", ShortId(e.checkpoint_id()),
                    "</code></td><td><code>", ShortId(e.previous_id()), "</code></td><td>", HtmlEscape(e.reason()),
                    "</td></tr>");
  }
  return html + "</table>";
}

}  // namespace

std::string HtmlEscape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

absl::StatusOr<std::string> WriteModelReport(ServiceClients& clients, const ReportRequest& request) {
  v1::LeaderboardRequest query;
  query.set_model(request.model);
  query.set_top(50);
  ROBOLOOP_ASSIGN_OR_RETURN(v1::LeaderboardResponse board, clients.eval().Leaderboard(query));
  std::vector<v1::Evaluation> rows(board.evaluations().begin(), board.evaluations().end());
  std::string html = absl::StrCat("<!doctype html><html><head><meta charset='utf-8'><title>", HtmlEscape(request.title),
                                  "</title><style>", kStyle, "</style></head><body><h1>", HtmlEscape(request.title),
                                  "</h1><p class='muted'>generated ", FormatTimeUtc(NowUnixMicros()), "</p>");
  absl::StatusOr<v1::Checkpoint> champion = clients.registry().GetCheckpoint(request.model + "@champion");
  if (champion.ok()) {
    absl::StrAppend(&html, "<h2>Champion</h2><p>", HtmlEscape(absl::StrCat(champion->model(), ":v", champion->version())),
                    " <code>", champion->id(), "</code>, step ", champion->step(), "</p>");
  } else {
    absl::StrAppend(&html, "<h2>Champion</h2><p class='muted'>", HtmlEscape(request.model), " has no champion yet</p>");
  }
  absl::StrAppend(&html, "<h2>Leaderboard</h2>");
  if (rows.empty()) {
    absl::StrAppend(&html, "<p class='muted'>no evaluations of ", HtmlEscape(request.model), " yet</p>");
  } else {
    absl::StrAppend(&html, SuccessChart(rows), LeaderboardTable(rows));
  }
  if (champion.ok()) absl::StrAppend(&html, LineageSection(clients, *champion));
  absl::StrAppend(&html, AliasHistorySection(clients, request.model), "</body></html>\n");
  ROBOLOOP_RETURN_IF_ERROR(MakeDirs(ParentDir(request.output)));
  ROBOLOOP_RETURN_IF_ERROR(WriteFileAtomic(request.output, html));
  return request.output;
}

}  // namespace roboloop::pipeline
