#include "cli/cli.h"

#include <cstdio>

#include "absl/strings/cord.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace roboloop::cli {
namespace {
constexpr char kUsagePrefix[] = "usage: ";
constexpr char kExitCodePayload[] = "roboloop/exit-code";
}  // namespace

void AddFormatOption(CLI::App* command, Format* format) {
  // Parsed as text so that help and errors read like the data commands' ("TEXT:{table,json}").
  command
      ->add_option_function<std::string>(
          "--format", [format](const std::string& value) { *format = value == "json" ? Format::kJson : Format::kTable; },
          "Output format: table or json")
      ->transform(CLI::IsMember({"table", "json"}, CLI::ignore_case))  // "JSON" becomes "json"
      ->default_str("table");
}

void CommandRunner::Bind(CLI::App* command, std::function<absl::Status()> action) {
  command->callback([this, action = std::move(action)] { chosen_ = action; });
}

int CommandRunner::Run() const {
  absl::Status status = chosen_();
  if (status.ok()) return kExitOk;
  std::string message(status.message());
  bool usage = status.code() == absl::StatusCode::kInvalidArgument &&
               absl::StartsWith(message, kUsagePrefix);
  if (!message.empty()) std::fprintf(stderr, "roboloop: %s\n", message.c_str());
  if (auto code = status.GetPayload(kExitCodePayload); code.has_value()) {
    int value = kExitError;
    if (absl::SimpleAtoi(std::string(*code), &value)) return value;
  }
  return usage ? kExitUsage : kExitError;
}

absl::Status WithExitCode(absl::Status status, int code) {
  status.SetPayload(kExitCodePayload, absl::Cord(std::to_string(code)));
  return status;
}

absl::Status UsageError(const std::string& message) {
  return absl::InvalidArgumentError(absl::StrCat(kUsagePrefix, message));
}

}  // namespace roboloop::cli
