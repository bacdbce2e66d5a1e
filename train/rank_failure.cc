#include "train/rank_failure.h"

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "common/fs.h"

namespace roboloop::train {
namespace {

std::string RecordPath(const std::string& dir, int rank) { return JoinPath(dir, absl::StrCat("rank-", rank, ".json")); }

}  // namespace

void RecordRankFailure(int rank, const absl::Status& status, bool maybe_consequence) {
  const char* dir = std::getenv(kRankFailureDirVariable);
  if (dir == nullptr || *dir == '\0' || status.ok()) return;
  const std::string path = RecordPath(dir, rank);
  std::error_code error;
  if (std::filesystem::exists(path, error)) return;
  const int64_t now = std::chrono::duration_cast<std::chrono::microseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  const nlohmann::json record = {{"unix_micros", now},
                                 {"maybe_consequence", maybe_consequence},
                                 {"message", std::string(status.message())}};
  (void)WriteFileAtomic(path, record.dump());
}

std::optional<RankFailure> ReadRankFailure(const std::string& dir, int rank) {
  std::ifstream in(RecordPath(dir, rank));
  if (!in) return std::nullopt;
  const nlohmann::json record = nlohmann::json::parse(in, nullptr, false);
  if (!record.is_object() || !record.contains("unix_micros") || !record["unix_micros"].is_number_integer()) {
    return std::nullopt;
  }
  RankFailure failure;
  failure.unix_micros = record["unix_micros"].get<int64_t>();
  failure.maybe_consequence = record.value("maybe_consequence", false);
  failure.message = record.value("message", std::string());
  return failure;
}

}  // namespace roboloop::train
