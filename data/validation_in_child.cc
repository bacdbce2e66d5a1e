#include "data/validation_in_child.h"

#include <filesystem>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "common/child_process_call.h"
#include "nlohmann/json.hpp"

namespace roboloop::data {
namespace {

std::string SummaryToJson(const ValidationResult& result) {
  nlohmann::json warnings = nlohmann::json::array();
  for (const ValidationIssue& issue : result.warnings) {
    warnings.push_back({{"path", issue.path}, {"message", issue.message}});
  }
  return nlohmann::json{{"demos", result.layout.demos.size()},
                        {"total_steps", result.layout.total_steps},
                        {"warnings", warnings}}
      .dump();
}

ValidationSummary SummaryFromJson(const std::string& text) {
  const nlohmann::json json = nlohmann::json::parse(text);
  ValidationSummary summary;
  summary.demos = json.at("demos").get<int64_t>();
  summary.total_steps = json.at("total_steps").get<int64_t>();
  for (const nlohmann::json& issue : json.at("warnings")) {
    summary.warnings.push_back({issue.at("path").get<std::string>(), issue.at("message").get<std::string>()});
  }
  return summary;
}

// The child's own failure: a crash or the time limit, said as a finding about the file; a pipe
// or fork that cannot be made (Internal) unchanged.
absl::Status ChildFailure(const absl::Status& failure) {
  if (absl::IsInternal(failure)) return failure;
  return absl::DataLossError(absl::StrCat(
      failure.message(), "; the file is likely corrupt",
      absl::IsDeadlineExceeded(failure) ? " (libhdf5 can loop forever on one)" : ""));
}

// The message of `roboloop data validate` on stderr, without its "roboloop: data validate: " prefix and newline.
std::string CheckerMessage(const std::string& err) {
  constexpr absl::string_view kPrefix = "roboloop: data validate: ";
  std::string message = absl::StartsWith(err, kPrefix) ? err.substr(kPrefix.size()) : err;
  while (!message.empty() && message.back() == '\n') message.pop_back();
  return message;
}

}  // namespace

absl::Duration DefaultValidationTimeLimit(const std::string& path) {
  constexpr std::uintmax_t kBytesPerSecond = std::uintmax_t{4} << 20;
  std::error_code unknown_size;
  const std::uintmax_t bytes = std::filesystem::file_size(path, unknown_size);
  return absl::Seconds(60) + absl::Seconds(unknown_size ? 0 : static_cast<int64_t>(bytes / kBytesPerSecond));
}

absl::StatusOr<ValidationSummary> ValidateFileInChildProcess(const std::string& path,
                                                             const ValidationOptions& options,
                                                             absl::Duration time_limit) {
  const absl::StatusOr<absl::StatusOr<std::string>> answer = RunInChildProcess(
      {absl::StrCat(path, ": validation"), time_limit}, [&]() -> absl::StatusOr<std::string> {
        absl::StatusOr<ValidationResult> result = ValidateFile(path, options);
        if (!result.ok()) return result.status();
        return SummaryToJson(*result);
      });
  if (!answer.ok()) return ChildFailure(answer.status());
  if (!answer->ok()) return answer->status();
  return SummaryFromJson(**answer);
}

absl::Status ScreenFileInChildProcess(const std::string& path) {
  ValidationOptions structure_only;
  structure_only.scan_values = false;
  return ValidateFileInChildProcess(path, structure_only, DefaultValidationTimeLimit(path)).status();
}

FileScreen ProgramFileScreen(std::string roboloop_binary) {
  return [binary = std::move(roboloop_binary)](const std::string& path) -> absl::Status {
    const ChildCall call{absl::StrCat(path, ": structure check"), DefaultValidationTimeLimit(path) + absl::Seconds(30)};
    const absl::StatusOr<ProgramEnd> end =
        RunProgramInChildProcess(call, {binary, "data", "validate", "--structure-only", path});
    if (!end.ok()) return ChildFailure(end.status());
    if (end->exit_code == 0) return absl::OkStatus();
    if (end->exit_code == 1) return absl::InvalidArgumentError(CheckerMessage(end->err));
    return absl::DataLossError(absl::StrCat(call.what, " by ", binary, " ended with exit code ", end->exit_code, ": ",
                                            CheckerMessage(end->err)));
  };
}

}  // namespace roboloop::data
