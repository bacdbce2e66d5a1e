#include "report/report.h"

#include <algorithm>
#include <fstream>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/fs.h"
#include "common/ids.h"
#include "common/status.h"
#include "common/store_layout.h"
#include "google/protobuf/util/json_util.h"
#include "nlohmann/json.hpp"
#include "report/report_progress.h"
#include "sim/render.h"

namespace roboloop::report {
namespace {

constexpr char kStyle[] =
    "body{font-family:system-ui,sans-serif;margin:2em;color:#222}table{border-collapse:collapse;margin:1em 0}"
    "td,th{border:1px solid #ccc;padding:4px 8px;text-align:left;font-size:14px}th{background:#f3f3f3}"
    "code{font-size:12px}.muted{color:#777}"
    // Long JSON (a dataset's metadata) wraps inside its cell instead of widening the page.
    "td.metadata{max-width:60ch}td.metadata code{white-space:pre-wrap;overflow-wrap:anywhere}";

std::string ShortId(const std::string& id) { return id.substr(0, 12); }

std::string Interval(double value, const v1::Interval& interval) {
  return absl::StrFormat("%.3f [%.3f, %.3f]", value, interval.low(), interval.high());
}

std::string EndReasons(const v1::Aggregates& a) {
  std::vector<std::string> parts;
  for (const auto& [reason, count] : a.end_reasons()) parts.push_back(absl::StrCat(reason, " ", count));
  std::sort(parts.begin(), parts.end());
  return absl::StrJoin(parts, ", ");
}

std::string RobustnessText(const v1::Protocol& protocol) {
  if (protocol.robustness().ByteSizeLong() == 0) return "none";
  std::string json;
  (void)google::protobuf::util::MessageToJsonString(protocol.robustness(), &json);
  return json;
}

std::string LeaderboardTable(const std::vector<v1::Evaluation>& rows) {
  std::string html =
      "<table id='leaderboard'><tr><th>checkpoint</th><th>protocol</th><th>episodes</th><th>success (95% Wilson)</th>"
      "<th>return (95% bootstrap)</th><th>termination</th><th>robustness</th><th>aliases</th><th>evaluated</th></tr>";
  for (const v1::Evaluation& e : rows) {
    const v1::Aggregates& a = e.aggregates();
    absl::StrAppend(&html, "<tr><td>", HtmlEscape(absl::StrCat(e.model(), ":v", e.model_version())), " <code>",
                    ShortId(e.checkpoint_id()), "</code></td><td>", HtmlEscape(e.protocol().name()), " <code>",
                    ShortId(e.protocol_hash()), "</code></td><td>", a.success().trials(), "</td><td>",
                    Interval(a.success().rate(), a.success().interval()), "</td><td>",
                    Interval(a.episode_return().mean(), a.episode_return().interval()), "</td><td>",
                    HtmlEscape(EndReasons(a)), "</td><td><code>", HtmlEscape(RobustnessText(e.protocol())),
                    "</code></td><td>", HtmlEscape(absl::StrJoin(e.aliases(), ", ")), "</td><td>", FormatTimeUtc(e.created_unix_us()),
                    "</td></tr>");
  }
  return html + "</table>";
}

// Success rate of each row as a dot with its interval, on a 0..1 axis.
std::string SuccessChart(const std::vector<v1::Evaluation>& rows) {
  const int row_height = 22, left = 260, width = 420;
  std::string svg = absl::StrFormat(
      "<svg id='success-chart' xmlns='http://www.w3.org/2000/svg' width='%d' height='%d' font-size='12'>",
      left + width + 20,
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

std::string LineageSection(wiring::ServiceClients& clients, const v1::Checkpoint& champion) {
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
                    ShortId(d.id()), "</code></td><td><code>", absl::StrJoin(parents, ", "), "</code></td><td class='metadata'><code>",
                    HtmlEscape(d.metadata_json()), "</code></td></tr>");
  }
  return html + "</table>";
}

std::string AliasHistorySection(wiring::ServiceClients& clients, const std::string& model) {
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

// A training run's loss curves: (step, loss) points of its JSONL log.
struct LossCurves {
  std::vector<std::pair<double, double>> train;       // "step" records
  std::vector<std::pair<double, double>> validation;  // "validation" records (a validation split)
};

// The (step, loss) of a step or validation record; JSON prints int64 fields as strings.
std::pair<double, double> StepAndLoss(const nlohmann::json& record) {
  const nlohmann::json& index = record.value("step", nlohmann::json());
  const double x = index.is_string() ? std::stod(index.get<std::string>()) : index.is_number() ? index.get<double>() : 0;
  return {x, record.value("loss", 0.0)};
}

// The loss curves of a training run's JSONL log; empty when it cannot be read.
LossCurves ReadLossCurves(const std::string& train_root, const std::string& run_id) {
  LossCurves curves;
  std::ifstream in(JoinPath(StoreLayout(train_root).TrainingRunDir(run_id), "train.jsonl"));
  for (std::string line; std::getline(in, line);) {
    const nlohmann::json record = nlohmann::json::parse(line, nullptr, false);
    if (!record.is_object()) continue;
    if (record.contains("step")) curves.train.push_back(StepAndLoss(record["step"]));
    if (record.contains("validation")) curves.validation.push_back(StepAndLoss(record["validation"]));
  }
  return curves;
}

// `points` as an SVG polyline of `colour` scaled to width x height (dashed when `dashed`).
std::string Polyline(const std::vector<std::pair<double, double>>& points, double max_x, double max_y, int width,
                     int height, const char* colour, bool dashed) {
  std::string coordinates;
  for (const auto& [x, y] : points) {
    absl::StrAppendFormat(&coordinates, "%.1f,%.1f ", x / max_x * width, height - y / max_y * height);
  }
  return absl::StrFormat("<polyline class='%s' fill='none' stroke='%s'%s points='%s'/>",
                         dashed ? "validation-loss" : "train-loss", colour,
                         dashed ? " stroke-dasharray='6 3' stroke-width='2'" : "", coordinates);
}

// Loss against step of each run (oldest first), as one SVG with a polyline per run, and a
// dashed one per run with a validation split.
std::string LossSection(const std::string& train_root, const std::vector<v1::Checkpoint>& chain) {
  std::vector<std::pair<std::string, LossCurves>> runs;
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
    if (it->run_id().empty() || (!runs.empty() && runs.back().first == it->run_id())) continue;
    LossCurves curves = ReadLossCurves(train_root, it->run_id());
    if (!curves.train.empty()) runs.emplace_back(it->run_id(), std::move(curves));
  }
  if (runs.empty()) return "";
  double max_x = 1, max_y = 1e-9;
  for (const auto& [run, curves] : runs) {
    for (const auto* points : {&curves.train, &curves.validation}) {
      for (const auto& [x, y] : *points) {
        max_x = std::max(max_x, x);
        max_y = std::max(max_y, y);
      }
    }
  }
  const int width = 640, height = 240;
  static const char* kColours[] = {"#36c", "#c33", "#393", "#f90", "#909"};
  std::string svg = absl::StrFormat(
      "<h2>Training loss</h2><svg id='loss-chart' xmlns='http://www.w3.org/2000/svg' width='%d' height='%d' "
      "font-size='12'><rect x='0' y='0' width='%d' height='%d' fill='none' stroke='#ccc'/>",
      width + 200, height + 20, width, height);
  int legend_line = 0;
  for (size_t r = 0; r < runs.size(); ++r) {
    const char* colour = kColours[r % 5];
    const std::string run = HtmlEscape(runs[r].first.substr(0, 8));
    absl::StrAppendFormat(&svg, "%s<text x='%d' y='%d' fill='%s'>run %s</text>",
                          Polyline(runs[r].second.train, max_x, max_y, width, height, colour, false), width + 5,
                          15 + 15 * legend_line++, colour, run);
    if (runs[r].second.validation.empty()) continue;
    absl::StrAppendFormat(&svg, "%s<text x='%d' y='%d' fill='%s'>run %s validation</text>",
                          Polyline(runs[r].second.validation, max_x, max_y, width, height, colour, true), width + 5,
                          15 + 15 * legend_line++, colour, run);
  }
  absl::StrAppendFormat(&svg, "<text x='0' y='%d'>step 0</text><text x='%d' y='%d'>step %.0f; loss 0 to %.3g</text></svg>",
                        height + 15, width - 160, height + 15, max_x, max_y);
  return svg;
}

std::string DataUri(const std::string& png) {
  std::string encoded;
  absl::Base64Escape(png, &encoded);
  return "data:image/png;base64," + encoded;
}

// Camera frames are drawn at least this many pixels wide, without smoothing.
constexpr int kCameraDisplayWidth = 192;

// One <figure> whose <img> (id `id`) shows `frames`, `width` x `height` on the page; appends
// the frames to the script's array `frames_js`.
std::string AnimatedFigure(const std::string& id, const std::vector<std::string>& frames, int width, int height,
                           bool pixelated, const std::string& caption, std::string* frames_js) {
  absl::StrAppend(frames_js, frames_js->back() == '[' ? "" : ",", "['", id, "',[");
  for (size_t f = 0; f < frames.size(); ++f) absl::StrAppend(frames_js, f ? "," : "", "'", DataUri(frames[f]), "'");
  absl::StrAppend(frames_js, "]]");
  return absl::StrFormat(
      "<figure style='display:inline-block;vertical-align:top'><img class='animation' id='%s' width='%d' height='%d'%s "
      "src='%s'/><figcaption>%s</figcaption></figure>",
      id, width, height, pixelated ? " style='image-rendering:pixelated'" : "", frames.empty() ? "" : DataUri(frames.front()),
      caption);
}

// The animations as <img> elements cycled by a script, each episode's external view followed
// by what each of the task's cameras saw; the page's body records how many distinct frames the
// first animation has (data-animation-frames) once the script ran.
std::string AnimationSection(const std::vector<EpisodeAnimation>& animations, const v1::Evaluation& evaluation) {
  std::string html = absl::StrCat("<h2>Champion episodes</h2><p class='muted'>", HtmlEscape(evaluation.protocol().name()),
                                  ", rendered offscreen with MuJoCo; next to the external view, what the policy's "
                                  "cameras saw</p>");
  const sim::RenderOptions frame;
  std::string frames_js = "[";
  for (size_t i = 0; i < animations.size(); ++i) {
    const EpisodeAnimation& a = animations[i];
    absl::StrAppend(&html, "<div>",
                    AnimatedFigure(absl::StrCat("animation-", i), a.frames, frame.width, frame.height, false,
                                   absl::StrFormat("%s: episode %d, return %.2f, %s, %d frames", a.label,
                                                   a.episode_index, a.episode_return,
                                                   a.success ? "success" : "failure", a.frames.size()),
                                   &frames_js));
    for (size_t c = 0; c < a.cameras.size(); ++c) {
      const CameraAnimation& view = a.cameras[c];
      const int scale = std::max(1, kCameraDisplayWidth / view.width);
      absl::StrAppend(&html, AnimatedFigure(absl::StrCat("animation-", i, "-camera-", c), view.frames,
                                            view.width * scale, view.height * scale, true,
                                            absl::StrCat("camera ", HtmlEscape(view.name), " (", view.width, "x",
                                                         view.height, ")"),
                                            &frames_js));
    }
    absl::StrAppend(&html, "</div>");
  }
  absl::StrAppend(&frames_js, "]");
  absl::StrAppend(&html, "<script>const animations=", frames_js,
                  ";document.body.dataset.animationFrames=String(new Set((animations[0]||['',[]])[1]).size);"
                  "let tick=0;setInterval(()=>{tick++;animations.forEach(([id,frames])=>{if(frames.length)"
                  "document.getElementById(id).src=frames[tick%frames.length];});},100);</script>");
  return html;
}

// The champion's best leaderboard row (rows are best first); null when it has none.
const v1::Evaluation* ChampionRow(const v1::Checkpoint& champion, const std::vector<v1::Evaluation>& rows) {
  auto row = std::find_if(rows.begin(), rows.end(), [&](const v1::Evaluation& e) { return e.checkpoint_id() == champion.id(); });
  return row == rows.end() ? nullptr : &*row;
}

// The protocol of `checkpoint`'s best leaderboard row ("" when it has none).
std::string BestRowProtocol(const v1::Checkpoint& checkpoint, const std::vector<v1::Evaluation>& rows) {
  const v1::Evaluation* row = ChampionRow(checkpoint, rows);
  return row == nullptr ? "" : row->protocol().name();
}

// The champion's evaluation with episodes under the protocol of its best leaderboard row.
std::string ChampionAnimation(wiring::ServiceClients& clients, const ReportRequest& request, const v1::Checkpoint& champion,
                              const std::vector<v1::Evaluation>& rows) {
  if (request.animation.tasks == nullptr) return "";
  const v1::Evaluation* row = ChampionRow(champion, rows);
  if (row == nullptr) return "";
  v1::EvaluateRequest evaluate;
  evaluate.set_checkpoint_ref(champion.id());
  *evaluate.mutable_protocol() = row->protocol();
  absl::StatusOr<v1::Evaluation> full = clients.eval().Evaluate(evaluate, nullptr);
  absl::StatusOr<std::vector<EpisodeAnimation>> animations =
      full.ok() ? AnimateBestAndWorst(clients.registry(), *full, request.animation)
                : absl::StatusOr<std::vector<EpisodeAnimation>>(full.status());
  if (!animations.ok()) {
    return absl::StrCat("<h2>Champion episodes</h2><p class='muted'>no animation: ",
                        HtmlEscape(animations.status().ToString()), "</p>");
  }
  return AnimationSection(*animations, *full);
}

// NotFound unless the registry holds a checkpoint of `model`.
absl::Status CheckModelIsRegistered(wiring::ServiceClients& clients, const std::string& model) {
  v1::ListCheckpointsRequest checkpoints;
  checkpoints.set_model(model);
  checkpoints.set_limit(1);
  ROBOLOOP_ASSIGN_OR_RETURN(v1::ListCheckpointsResponse found, clients.registry().ListCheckpoints(checkpoints));
  if (!found.checkpoints().empty()) return absl::OkStatus();
  return absl::NotFoundError(absl::StrCat("no model '", model, "' in the registry"));
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

absl::StatusOr<std::string> WriteModelReport(wiring::ServiceClients& clients, const ReportRequest& request) {
  ROBOLOOP_RETURN_IF_ERROR(CheckModelIsRegistered(clients, request.model));
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
  if (champion.ok()) {
    std::vector<v1::Checkpoint> chain = {*champion};
    absl::StatusOr<v1::LineageResponse> lineage = clients.registry().Lineage(champion->id());
    if (lineage.ok()) chain.insert(chain.end(), lineage->ancestors().begin(), lineage->ancestors().end());
    // Under the newest checkpoint's protocol: the loop evaluates it by the gate alone, where an earlier
    // checkpoint's best row may be a feedback evaluation the newest one never had.
    const std::vector<v1::Checkpoint> loop = ClosedLoopChain(clients, *champion);
    absl::StrAppend(&html, ClosedLoopSection(clients, loop, rows, BestRowProtocol(loop.front(), rows)));
    absl::StrAppend(&html, ChampionAnimation(clients, request, *champion, rows));
    if (!request.train_root.empty()) absl::StrAppend(&html, LossSection(request.train_root, chain));
    absl::StrAppend(&html, LineageSection(clients, *champion));
  }
  absl::StrAppend(&html, AliasHistorySection(clients, request.model), "</body></html>\n");
  ROBOLOOP_RETURN_IF_ERROR(MakeDirs(ParentDir(request.output)));
  ROBOLOOP_RETURN_IF_ERROR(WriteFileAtomic(request.output, html));
  return request.output;
}

}  // namespace roboloop::report
