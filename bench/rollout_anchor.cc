#include "bench/rollout_anchor.h"

#include <cerrno>
#include <cstdio>
#include <fstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "bench/bench_stats.h"
#include "common/status.h"

namespace roboloop::bench {

absl::StatusOr<double> RunMujocoRollout(const AnchorRun& run) {
  const std::string command = absl::StrCat(
      "'", run.python, "' '", ROBOLOOP_ROLLOUT_PEER_SCRIPT, "' '", run.model, "' ", run.physics_steps, " ",
      run.threads, " ", absl::StrFormat("%g", run.control_noise), " ", run.trajectories, " 2>&1");
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return ErrnoStatus(errno, absl::StrCat("cannot run ", command));
  std::string output;
  char buffer[512];
  while (fgets(buffer, sizeof(buffer), pipe) != nullptr) output += buffer;
  const int rc = pclose(pipe);
  if (rc != 0) {
    return absl::InternalError(absl::StrCat("`", command, "` failed (status ", rc, "): ", output));
  }
  for (absl::string_view line : absl::StrSplit(output, '\n')) {
    if (!absl::ConsumePrefix(&line, "physics steps per second:")) continue;
    double steps_per_s = 0;
    if (absl::SimpleAtod(absl::StripAsciiWhitespace(line), &steps_per_s)) return steps_per_s;
  }
  return absl::InternalError(absl::StrCat("no steps-per-second line in the output of `", command,
                                          "`: ", output));
}

std::string LoadAverage() {
  std::ifstream in("/proc/loadavg");
  std::string one, five, fifteen;
  in >> one >> five >> fifteen;
  return in ? absl::StrCat(one, " ", five, " ", fifteen) : "unknown";
}

void PrintSide(const char* label, const std::vector<double>& values) {
  const Summary s = Summarize(values);
  std::printf("  %-34s median %10.0f  min %10.0f  max %10.0f\n", label, s.median, s.min, s.max);
}

}  // namespace roboloop::bench
