// The HTML report of a model (issue 8 report stage, issue 7 req 7): one self-contained page,
// viewable offline — champion, leaderboard rows (termination reasons, robustness settings) with
// their 95 % intervals drawn as an SVG chart, training loss curves of the champion's lineage,
// the closed loop's progress (report_progress.h), an animation of the champion's best and worst
// episodes rendered offscreen, the lineage
// (checkpoints and datasets) and the history of the champion alias — built from the registry
// and EvalService through the pipeline's clients.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "report/report_animation.h"
#include "wiring/services.h"

namespace roboloop::report {

// What to report.
struct ReportRequest {
  std::string model;   // registry model
  std::string title;   // page title
  std::string output;  // HTML file to write (replaced atomically)
  std::string train_root;       // training runs' logs: <train_root>/runs/<run>/train.jsonl ("" = no curves)
  AnimationOptions animation;   // animation.tasks null = no animation
};

// Writes the report and returns its path. A model without evaluations still gets a page that
// says so; a model the registry has no checkpoint of is NotFound naming it, and nothing is
// written; registry or service errors are returned.
absl::StatusOr<std::string> WriteModelReport(wiring::ServiceClients& clients, const ReportRequest& request);

// `text` with &, <, >, " and ' escaped for HTML.
std::string HtmlEscape(const std::string& text);

}  // namespace roboloop::report
