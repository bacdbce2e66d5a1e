#include "eval/evaluation.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/ids.h"
#include "common/status.h"
#include "common/version.h"

namespace roboloop::eval {
namespace {

std::string Range(const v1::Protocol& protocol) {
  return absl::StrCat("protocol '", protocol.name(), "' has episodes [", protocol.seed_start(), ", ",
                      protocol.seed_start() + protocol.episodes(), ")");
}

// `evaluation`'s episodes, sorted by index, are exactly the protocol's range.
absl::Status CheckProtocolRange(const v1::Evaluation& evaluation) {
  const v1::Protocol& protocol = evaluation.protocol();
  const std::string label = absl::StrCat("evaluation '", evaluation.id(), "': ");
  int64_t expected = protocol.seed_start();
  for (const v1::EpisodeResult& episode : evaluation.episodes()) {
    const int64_t index = episode.episode_index();
    if (index == expected - 1 && index >= protocol.seed_start()) {
      return absl::InvalidArgumentError(absl::StrCat(label, "episode ", index, " is there twice"));
    }
    if (index != expected || index >= protocol.seed_start() + protocol.episodes()) {
      return absl::InvalidArgumentError(absl::StrCat(
          label, index < expected || expected == protocol.seed_start() + protocol.episodes()
                     ? absl::StrCat("episode ", index, " is outside the range; ")
                     : absl::StrCat("episode ", expected, " is missing; "),
          Range(protocol)));
    }
    ++expected;
  }
  if (expected != protocol.seed_start() + protocol.episodes()) {
    return absl::InvalidArgumentError(absl::StrCat(label, "has ", evaluation.episodes_size(),
                                                   " episodes; ", Range(protocol)));
  }
  return absl::OkStatus();
}

}  // namespace

v1::EpisodeResult ToEpisodeResult(const v1::EpisodeRecord& record) {
  v1::EpisodeResult result;
  result.set_episode_index(record.episode_index());
  result.set_seed(record.seed());
  result.set_episode_return(record.episode_return());
  result.set_length(record.length());
  result.set_success(record.success());
  result.set_end_reason(record.end_reason());
  result.set_end_detail(record.end_detail());
  result.set_state_hash_chain(record.state_hash_chain());
  result.set_final_state_hash(record.final_state_hash());
  return result;
}

absl::Status CompleteEvaluation(const BootstrapOptions& bootstrap, v1::Evaluation* evaluation) {
  auto* episodes = evaluation->mutable_episodes();
  std::sort(episodes->pointer_begin(), episodes->pointer_end(),
            [](const v1::EpisodeResult* a, const v1::EpisodeResult* b) {
              return a->episode_index() < b->episode_index();
            });
  ROBOLOOP_RETURN_IF_ERROR(CheckProtocolRange(*evaluation));
  ROBOLOOP_ASSIGN_OR_RETURN(*evaluation->mutable_aggregates(), Aggregate(*episodes, bootstrap));
  evaluation->set_status(v1::EVALUATION_COMPLETED);
  evaluation->clear_failure();
  return absl::OkStatus();
}

void FailEvaluation(const std::string& reason, v1::Evaluation* evaluation) {
  evaluation->clear_aggregates();
  evaluation->set_status(v1::EVALUATION_FAILED);
  evaluation->set_failure(reason);
}

v1::Provenance ProcessProvenance() {
  v1::Provenance provenance;
  provenance.set_roboloop_version(Version());
  provenance.set_git_sha(GitSha());
  provenance.set_host(HostName());
  provenance.set_user(CurrentUser());
  return provenance;
}

}  // namespace roboloop::eval
