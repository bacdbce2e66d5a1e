#include "pipeline/run_progress.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/fs.h"
#include "common/ids.h"
#include "pipeline/run_store.h"

namespace roboloop::pipeline {
namespace {

constexpr double kPlainIntervalS = 10.0;
constexpr int kBarWidth = 24;

double SecondsSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// True for a long id (a content hash or a uuid: hex digits and dashes), which reads fine cut short.
bool IsLongId(const std::string& value) {
  if (value.size() <= 16) return false;
  return std::all_of(value.begin(), value.end(),
                     [](char c) { return std::isxdigit(static_cast<unsigned char>(c)) || c == '-'; });
}

std::string OutputsText(const StageOutputs& outputs) {
  std::string text;
  for (const auto& [name, value] : outputs) {
    if (value.empty()) continue;
    absl::StrAppend(&text, text.empty() ? "" : ", ", name, "=", IsLongId(value) ? value.substr(0, 12) : value);
  }
  return text;
}

// The status's code and message, without the payloads ToString would add.
std::string StatusText(const absl::Status& status) {
  return absl::StrCat(absl::StatusCodeToString(status.code()), ": ", status.message());
}

}  // namespace

RunProgressPrinter::RunProgressPrinter(FILE* out, std::string log_dir)
    : out_(out), log_dir_(std::move(log_dir)), tty_(isatty(fileno(out)) != 0) {
  (void)MakeDirs(log_dir_);
}

std::string RunProgressPrinter::LogPath(const std::string& label) const {
  return StageLogPath(log_dir_, label);
}

void RunProgressPrinter::AppendLog(const std::string& label, const std::string& text) const {
  std::ofstream(LogPath(label), std::ios::app) << FormatTimeUtc(NowUnixMicros()) << " " << text << "\n";
}

void RunProgressPrinter::Line(const std::string& text) {
  if (redrawing_) std::fputs("\r\033[K", out_);
  redrawing_ = false;
  std::fprintf(out_, "%s\n", text.c_str());
  std::fflush(out_);
}

std::string RunProgressPrinter::ProgressText(const StageEvent& event, double elapsed_s) const {
  const StageProgress& p = event.progress;
  std::string text = absl::StrCat(event.stage, ": ");
  if (p.total > 0) {
    if (tty_) {
      const int filled = static_cast<int>(kBarWidth * std::min(1.0, p.done / p.total));
      absl::StrAppend(&text, "[", std::string(filled, '='), std::string(kBarWidth - filled, ' '), "] ");
    }
    absl::StrAppendFormat(&text, "%.0f/%.0f %s (%.0f%%)", p.done, p.total, p.unit, 100.0 * p.done / p.total);
  } else if (!p.unit.empty()) {
    absl::StrAppendFormat(&text, "%.0f %s", p.done, p.unit);
  }
  if (elapsed_s > 0 && p.done > 0 && !p.unit.empty()) {
    const double rate = p.done / elapsed_s;
    absl::StrAppendFormat(&text, " %.1f %s/s", rate, p.unit);
    if (p.total > p.done) absl::StrAppendFormat(&text, " ETA %.0fs", (p.total - p.done) / rate);
  }
  if (!p.note.empty()) absl::StrAppend(&text, " ", p.note);
  return text;
}

void RunProgressPrinter::OnEvent(const StageEvent& event) {
  auto now = std::chrono::steady_clock::now();
  switch (event.kind) {
    case StageEvent::Kind::kStarted:
      clocks_[event.stage] = {now, now};
      AppendLog(event.stage, "started");
      Line(absl::StrCat("> ", event.stage, " started"));
      return;
    case StageEvent::Kind::kRetrying:
      AppendLog(event.stage, absl::StrCat("attempt ", event.attempt, " after: ", StatusText(event.status)));
      Line(absl::StrCat("~ ", event.stage, " retrying (attempt ", event.attempt, "): ", event.status.message()));
      return;
    case StageEvent::Kind::kFinished: {
      const double elapsed = clocks_.count(event.stage) ? SecondsSince(clocks_[event.stage].started) : 0;
      AppendLog(event.stage, absl::StrCat("finished: ", OutputsText(event.outputs)));
      Line(absl::StrFormat("= %s finished in %.1fs %s", event.stage, elapsed, OutputsText(event.outputs)));
      return;
    }
    case StageEvent::Kind::kFailed:
      AppendLog(event.stage, absl::StrCat("failed: ", StatusText(event.status)));
      Line(absl::StrCat("! ", event.stage, " failed: ", event.status.message()));
      return;
    case StageEvent::Kind::kSkipped:
      AppendLog(event.stage, "skipped");
      Line(absl::StrCat("- ", event.stage, " skipped"));
      return;
    case StageEvent::Kind::kProgress: {
      StageClock& clock = clocks_.try_emplace(event.stage, StageClock{now, now}).first->second;
      const std::string text = ProgressText(event, SecondsSince(clock.started));
      const bool finished = event.progress.total > 0 && event.progress.done >= event.progress.total;
      // A stage's first report is logged at once (a train stage's can say where its ranks run),
      // later ones every kPlainIntervalS.
      const bool first = clock.last_line == clock.started;
      const bool due = first || finished || SecondsSince(clock.last_line) >= kPlainIntervalS;
      if (due) {
        clock.last_line = now;
        AppendLog(event.stage, text);
      }
      if (tty_) {
        std::fprintf(out_, "\r\033[K%s", text.substr(0, 160).c_str());
        std::fflush(out_);
        redrawing_ = true;
      } else if (due) {
        Line(absl::StrCat("  ", text));
      }
      return;
    }
  }
}

}  // namespace roboloop::pipeline
