// Live progress of a pipeline run (issue 8, req 7): one line per stage event, progress with
// rate and ETA — redrawn in place on a terminal, plain lines at most every few seconds
// otherwise (a stage's first report at once) — and every stage's events appended to its log
// file under the run's folder.
#pragma once

#include <chrono>
#include <cstdio>
#include <map>
#include <string>

#include "pipeline/scheduler.h"

namespace roboloop::pipeline {

class RunProgressPrinter {
 public:
  // Prints to `out`; stage logs go to `<log_dir>/<stage label as file stem>.log`.
  RunProgressPrinter(FILE* out, std::string log_dir);

  // The scheduler's observer (calls are serialised by the scheduler).
  void OnEvent(const StageEvent& event);

  // The log file of stage `label`.
  std::string LogPath(const std::string& label) const;

 private:
  struct StageClock {
    std::chrono::steady_clock::time_point started;
    std::chrono::steady_clock::time_point last_line;
  };

  void Line(const std::string& text);
  void AppendLog(const std::string& label, const std::string& text) const;
  std::string ProgressText(const StageEvent& event, double elapsed_s) const;

  FILE* out_;
  std::string log_dir_;
  bool tty_;
  bool redrawing_ = false;  // the last thing printed is an in-place progress line
  std::map<std::string, StageClock> clocks_;
};

}  // namespace roboloop::pipeline
