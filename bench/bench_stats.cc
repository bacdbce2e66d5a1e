#include "bench/bench_stats.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/fs.h"

extern char** environ;

namespace roboloop::bench {

Summary Summarize(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  Summary s;
  size_t n = values.size();
  s.median = n % 2 == 1 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
  s.min = values.front();
  s.max = values.back();
  return s;
}

double Quantile(std::vector<double> values, double q) {
  std::sort(values.begin(), values.end());
  size_t rank = static_cast<size_t>(std::ceil(q * static_cast<double>(values.size())));
  return values[std::min(values.size() - 1, rank == 0 ? 0 : rank - 1)];
}

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

absl::StatusOr<std::string> MakeScratchDir(const std::string& requested, const std::string& prefix) {
  if (!requested.empty()) {
    absl::Status made = MakeDirs(requested);
    if (!made.ok()) return made;
    return requested;
  }
  std::string templ = absl::StrCat("/tmp/", prefix, "-XXXXXX");
  if (mkdtemp(templ.data()) == nullptr) {
    return absl::InternalError(absl::StrCat("cannot create a scratch folder ", templ));
  }
  return templ;
}

void RemoveScratchDir(const std::string& dir, const std::string& requested) {
  if (!requested.empty()) return;
  std::error_code error;
  std::filesystem::remove_all(dir, error);
  if (error) std::fprintf(stderr, "could not remove %s: %s\n", dir.c_str(), error.message().c_str());
}

std::string SettingVariables() {
  std::vector<std::string> variables;
  for (char** e = environ; *e != nullptr; ++e) {
    for (const char* prefix : {"OMP_", "GOMP_", "OPENBLAS_", "MKL_", "GRPC_"}) {
      if (absl::StartsWith(*e, prefix)) variables.push_back(*e);
    }
  }
  return variables.empty() ? "(no OMP_/GOMP_/OPENBLAS_/MKL_/GRPC_ variables)" : absl::StrJoin(variables, " ");
}

std::string MachineSettings() {
  std::string cpu = "unknown";
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);) {
    if (absl::StartsWith(line, "model name")) {
      cpu = line.substr(line.find(':') + 2);
      break;
    }
  }
  std::string text = absl::StrCat("cpu: ", cpu, "\nonline cores: ", sysconf(_SC_NPROCESSORS_ONLN), "\n");
  absl::StrAppend(&text, "environment: ", SettingVariables(), "\n");
  return text;
}

std::string DefaultPeerPython() { return ROBOLOOP_PYTHON; }

}  // namespace roboloop::bench
