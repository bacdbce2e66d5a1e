#include "common/progress.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace roboloop {

std::string FormatDuration(double seconds) {
  int64_t s = static_cast<int64_t>(std::llround(std::max(0.0, seconds)));
  if (s >= 3600) return absl::StrFormat("%dh%02dm", s / 3600, (s % 3600) / 60);
  if (s >= 60) return absl::StrFormat("%dm%02ds", s / 60, s % 60);
  return absl::StrFormat("%ds", s);
}

ProgressBar::ProgressBar(int64_t total, Options options)
    : total_(total),
      options_(std::move(options)),
      tty_(!options_.force_plain && isatty(fileno(options_.out))),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_) {}

std::string ProgressBar::Format(int64_t done, double elapsed_s) const {
  double rate = elapsed_s > 0 ? static_cast<double>(done) / elapsed_s : 0.0;
  std::string text = options_.label.empty() ? "" : absl::StrCat(options_.label, " ");
  if (total_ > 0) {
    double fraction = std::clamp(static_cast<double>(done) / static_cast<double>(total_), 0.0, 1.0);
    if (tty_) {
      int filled = static_cast<int>(fraction * options_.width);
      absl::StrAppend(&text, "[", std::string(filled, '='),
                      std::string(options_.width - filled, ' '), "] ");
    }
    absl::StrAppend(&text, done, "/", total_, " ", options_.unit,
                    absl::StrFormat(" (%.0f%%)", 100.0 * fraction));
  } else {
    absl::StrAppend(&text, done, " ", options_.unit);
  }
  absl::StrAppend(&text, absl::StrFormat(" %.1f %s/s", rate, options_.unit));
  if (total_ > 0 && rate > 0 && done < total_) {
    absl::StrAppend(&text, " ETA ", FormatDuration(static_cast<double>(total_ - done) / rate));
  } else if (done >= total_ && total_ > 0) {
    absl::StrAppend(&text, " in ", FormatDuration(elapsed_s));
  }
  return text;
}

void ProgressBar::Update(int64_t done) {
  last_done_ = done;
  auto now = std::chrono::steady_clock::now();
  double since_draw = std::chrono::duration<double>(now - last_draw_).count();
  double due = tty_ ? 0.1 : options_.plain_interval_s;
  if (since_draw < due) return;
  last_draw_ = now;
  double elapsed = std::chrono::duration<double>(now - start_).count();
  if (tty_) {
    std::fprintf(options_.out, "\r\033[K%s", Format(done, elapsed).c_str());
  } else {
    std::fprintf(options_.out, "%s\n", Format(done, elapsed).c_str());
  }
  std::fflush(options_.out);
}

void ProgressBar::Finish() {
  if (finished_) return;
  finished_ = true;
  double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  std::fprintf(options_.out, "%s%s\n", tty_ ? "\r\033[K" : "",
               Format(last_done_, elapsed).c_str());
  std::fflush(options_.out);
}

}  // namespace roboloop
