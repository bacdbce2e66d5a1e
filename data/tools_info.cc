#include <filesystem>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/status.h"
#include "data/tools.h"

namespace roboloop::data {
namespace {

nlohmann::json ParseEnvArgs(const std::string& text) {
  nlohmann::json json = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  return json.is_discarded() ? nlohmann::json(text) : json;
}

std::string FormatValues(const std::vector<double>& values) {
  constexpr size_t kShown = 8;
  std::vector<std::string> parts;
  for (size_t i = 0; i < values.size() && i < kShown; ++i) {
    parts.push_back(absl::StrFormat("%.4g", values[i]));
  }
  if (values.size() > kShown) parts.push_back(absl::StrCat("... (", values.size(), ")"));
  return "[" + absl::StrJoin(parts, ", ") + "]";
}

void AppendDemoSummary(const DatasetLayout& layout, std::ostringstream* out) {
  int64_t shortest = layout.demos.front().num_samples;
  int64_t longest = shortest;
  for (const DemoLayout& demo : layout.demos) {
    shortest = std::min(shortest, demo.num_samples);
    longest = std::max(longest, demo.num_samples);
  }
  *out << absl::StrFormat("demos      %d (%d steps; length min %d, max %d, mean %.1f)\n",
                          layout.demos.size(), layout.total_steps, shortest, longest,
                          static_cast<double>(layout.total_steps) / layout.demos.size());
}

void AppendStats(const DatasetInfo& info, std::ostringstream* out) {
  if (!info.stats.has_value()) {
    *out << "stats      none stored (run `roboloop data stats --write`)\n";
    return;
  }
  *out << "stats\n";
  for (const FeatureStats& stats : *info.stats) {
    *out << absl::StrFormat("  %-20s mean %s%s\n  %-20s std  %s\n", stats.name, FormatValues(stats.mean),
                            stats.per_channel ? "  per RGB channel, pixels / 255" : "", "",
                            FormatValues(stats.std));
  }
}

}  // namespace

absl::StatusOr<DatasetInfo> GetInfo(const std::string& path) {
  ValidationOptions options;
  options.scan_values = false;
  ROBOLOOP_ASSIGN_OR_RETURN(ValidationResult result, ValidateFile(path, options));
  DatasetInfo info;
  info.path = path;
  std::error_code error;
  info.file_bytes = static_cast<int64_t>(std::filesystem::file_size(path, error));
  info.layout = std::move(result.layout);
  info.warnings = std::move(result.warnings);
  ROBOLOOP_ASSIGN_OR_RETURN(info.stats, LoadStats(path));
  return info;
}

nlohmann::json InfoToJson(const DatasetInfo& info) {
  nlohmann::json demos = nlohmann::json::array();
  for (const DemoLayout& demo : info.layout.demos) {
    demos.push_back({{"name", demo.name}, {"num_samples", demo.num_samples}});
  }
  nlohmann::json warnings = nlohmann::json::array();
  for (const ValidationIssue& issue : info.warnings) warnings.push_back(issue.ToString());
  return {{"path", info.path},
          {"file_bytes", info.file_bytes},
          {"num_demos", info.layout.demos.size()},
          {"total_steps", info.layout.total_steps},
          {"demos", demos},
          {"features", SpecToJson(info.layout.spec)},
          {"env_args", ParseEnvArgs(info.layout.env_args_json)},
          {"splits", info.layout.masks},
          {"lineage", LineageToJson(info.layout.lineage)},
          {"stats", info.stats.has_value() ? StatsToJson(*info.stats) : nlohmann::json()},
          {"warnings", warnings}};
}

std::string InfoToTable(const DatasetInfo& info) {
  std::ostringstream out;
  out << absl::StrFormat("file       %s (%d bytes)\n", info.path, info.file_bytes);
  AppendDemoSummary(info.layout, &out);
  out << "env_args   " << info.layout.env_args_json << "\n";
  out << absl::StrFormat("lineage    %s (%d parents)\n", info.layout.lineage.operation,
                         info.layout.lineage.parents.size());
  for (const ParentRef& parent : info.layout.lineage.parents) {
    out << absl::StrFormat("  %-13s %s %s\n", parent.kind, parent.sha256, parent.path);
  }
  out << "features\n";
  for (const FeatureSpec& feature : info.layout.spec) {
    out << absl::StrFormat("  %-20s %s%s\n", feature.name, DescribeFeature(feature),
                           IsImageKey(feature.name) ? "  image (RGB frames)" : "");
  }
  out << (info.layout.masks.empty() ? "splits     none\n" : "splits\n");
  for (const auto& [split, demos] : info.layout.masks) {
    out << absl::StrFormat("  %-20s %d demos\n", split, demos.size());
  }
  AppendStats(info, &out);
  for (const ValidationIssue& issue : info.warnings) out << "warning    " << issue.ToString() << "\n";
  return out.str();
}

absl::StatusOr<double> RecordedFramesPerSecond(const std::string& path, const std::string& env_args_json) {
  const nlohmann::json env = nlohmann::json::parse(env_args_json, nullptr, false);
  const nlohmann::json fps =
      env.is_object() ? env.value("/lerobot/fps"_json_pointer, nlohmann::json()) : nlohmann::json();
  if (fps.is_number() && fps.get<double>() > 0) return fps.get<double>();
  return absl::InvalidArgumentError(absl::StrCat(path, ": no frame rate recorded (env_args lerobot.fps); pass --fps"));
}

}  // namespace roboloop::data
