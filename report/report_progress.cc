#include "report/report_progress.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "eval/metrics.h"
#include "report/report.h"

namespace roboloop::report {
namespace {

// One evaluated checkpoint of the lineage.
struct Step {
  const v1::Checkpoint* checkpoint;
  const v1::Evaluation* evaluation;
};

// The chain's checkpoints evaluated under `protocol`, oldest first.
std::vector<Step> EvaluatedSteps(const std::vector<v1::Checkpoint>& chain, const std::vector<v1::Evaluation>& rows,
                                 const std::string& protocol) {
  std::vector<Step> steps;
  for (auto c = chain.rbegin(); c != chain.rend(); ++c) {
    auto row = std::find_if(rows.begin(), rows.end(), [&](const v1::Evaluation& e) {
      return e.checkpoint_id() == c->id() && e.protocol().name() == protocol;
    });
    if (row != rows.end()) steps.push_back({&*c, &*row});
  }
  return steps;
}

std::string PairedTestLine(wiring::ServiceClients& clients, const Step& first, const Step& last) {
  v1::CompareRequest request;
  request.set_candidate(last.evaluation->id());
  request.set_baseline(first.evaluation->id());
  request.set_protocol_hash(last.evaluation->protocol_hash());
  absl::StatusOr<v1::Comparison> c = clients.eval().Compare(request);
  if (!c.ok()) return absl::StrCat("<p class='muted'>no paired test: ", HtmlEscape(c.status().ToString()), "</p>");
  return absl::StrFormat(
      "<p>Paired test, v%d against v%d on the same %d episodes: %d succeeded only with v%d, %d only with v%d; "
      "exact McNemar p = %.4g; verdict: <b>%s</b> (%s).</p>",
      last.checkpoint->version(), first.checkpoint->version(), c->pairs(), c->candidate_only(),
      last.checkpoint->version(), c->baseline_only(), first.checkpoint->version(), c->mcnemar_p(),
      eval::VerdictName(c->verdict()), HtmlEscape(c->reason()));
}

// `checkpoint` followed by its ancestors, newest first; only `checkpoint` when the lineage is unavailable.
std::vector<v1::Checkpoint> WithAncestors(wiring::ServiceClients& clients, const v1::Checkpoint& checkpoint) {
  std::vector<v1::Checkpoint> chain = {checkpoint};
  absl::StatusOr<v1::LineageResponse> lineage = clients.registry().Lineage(checkpoint.id());
  if (lineage.ok()) chain.insert(chain.end(), lineage->ancestors().begin(), lineage->ancestors().end());
  return chain;
}

}  // namespace

std::vector<v1::Checkpoint> ClosedLoopChain(wiring::ServiceClients& clients, const v1::Checkpoint& champion) {
  std::vector<v1::Checkpoint> champion_chain = WithAncestors(clients, champion);
  absl::StatusOr<v1::Checkpoint> latest = clients.registry().GetCheckpoint(champion.model() + "@latest");
  if (!latest.ok() || latest->id() == champion.id()) return champion_chain;
  std::vector<v1::Checkpoint> latest_chain = WithAncestors(clients, *latest);
  const bool follows_champion = std::any_of(latest_chain.begin(), latest_chain.end(),
                                            [&](const v1::Checkpoint& c) { return c.id() == champion.id(); });
  return follows_champion ? latest_chain : champion_chain;
}

std::string ClosedLoopSection(wiring::ServiceClients& clients, const std::vector<v1::Checkpoint>& chain,
                              const std::vector<v1::Evaluation>& rows, const std::string& protocol) {
  const std::vector<Step> steps = EvaluatedSteps(chain, rows, protocol);
  if (steps.size() < 2) return "";
  const v1::Checkpoint& newest = *steps.back().checkpoint;
  std::string html = absl::StrCat("<h2>Closed loop</h2><p class='muted'>the lineage of ",
                                  HtmlEscape(absl::StrCat(newest.model(), ":v", newest.version())), " under ",
                                  HtmlEscape(protocol), ", oldest first</p><table><tr><th>checkpoint</th><th>step</th>"
                                  "<th>success</th><th>95 % interval</th><th>successes</th></tr>");
  for (const Step& s : steps) {
    const v1::Aggregates& a = s.evaluation->aggregates();
    absl::StrAppendFormat(&html, "<tr><td>%s:v%d</td><td>%d</td><td>%.3f</td><td>[%.3f, %.3f]</td><td>%d/%d</td></tr>",
                          HtmlEscape(s.checkpoint->model()), s.checkpoint->version(), s.checkpoint->step(),
                          a.success().rate(), a.success().interval().low(), a.success().interval().high(),
                          a.success().successes(), a.success().trials());
  }
  return absl::StrCat(html, "</table>", PairedTestLine(clients, steps.front(), steps.back()));
}

}  // namespace roboloop::report
