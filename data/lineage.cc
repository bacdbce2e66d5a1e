#include "data/lineage.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace roboloop::data {

nlohmann::json LineageToJson(const Lineage& lineage) {
  nlohmann::json parents = nlohmann::json::array();
  for (const ParentRef& parent : lineage.parents) {
    parents.push_back({{"kind", parent.kind}, {"path", parent.path}, {"sha256", parent.sha256}});
  }
  return {{"operation", lineage.operation}, {"parents", parents}};
}

absl::StatusOr<Lineage> LineageFromJson(const std::string& text, const std::string& display) {
  const nlohmann::json json = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!json.is_object() || !json.contains("operation") || !json["operation"].is_string() ||
      !json.contains("parents") || !json["parents"].is_array()) {
    return absl::InvalidArgumentError(
        absl::StrCat(display, ": lineage is not {\"operation\": ..., \"parents\": [...]}"));
  }
  Lineage lineage;
  lineage.operation = json["operation"].get<std::string>();
  for (const nlohmann::json& parent : json["parents"]) {
    if (!parent.is_object()) {
      return absl::InvalidArgumentError(absl::StrCat(display, ": lineage parent is not an object"));
    }
    lineage.parents.push_back({parent.value("kind", ""), parent.value("path", ""),
                               parent.value("sha256", "")});
  }
  return lineage;
}

std::vector<std::string> ParentDatasetIds(const Lineage& lineage) {
  std::vector<std::string> ids;
  for (const ParentRef& parent : lineage.parents) {
    if (parent.kind == "dataset") ids.push_back(parent.sha256);
  }
  return ids;
}

}  // namespace roboloop::data
