// A terminal progress bar with rate and ETA. On a TTY it redraws one line in place; otherwise
// it prints a plain line at most every `plain_interval_s` seconds and once when done.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

namespace roboloop {

class ProgressBar {
 public:
  struct Options {
    std::string label = "";          // printed before the bar
    std::string unit = "it";         // unit of the counts, e.g. "MiB", "episodes"
    FILE* out = stderr;              // stream to draw on
    int width = 30;                  // characters of the bar itself on a TTY
    double plain_interval_s = 5.0;   // seconds between plain (non-TTY) lines
    bool force_plain = false;        // plain lines even on a TTY
  };

  // A bar counting up to `total` (0 = unknown total: no ETA, no bar).
  ProgressBar(int64_t total, Options options);

  // Sets the current count and redraws if due. Not thread-safe: one caller at a time.
  void Update(int64_t done);

  // Draws the final state (the last count given to Update) and ends the line.
  void Finish();

  // Formats the status text for `done` after `elapsed_s` seconds, e.g.
  // "label [=====     ] 50/100 it 12.5 it/s ETA 4s". Exposed for tests.
  std::string Format(int64_t done, double elapsed_s) const;

 private:
  int64_t total_;
  Options options_;
  bool tty_;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_;
  int64_t last_done_ = 0;
  bool finished_ = false;
};

// Formats a duration in seconds as "1h02m", "3m05s" or "12s".
std::string FormatDuration(double seconds);

}  // namespace roboloop
