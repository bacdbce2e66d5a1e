// Test helper: complete, storable evaluations built through the real metrics and hash.
#pragma once

#include <string>

#include "common/ids.h"
#include "eval/metrics.h"
#include "eval/protocol.h"
#include "roboloop/v1/eval.pb.h"

namespace roboloop::eval::testing {

// A protocol of `episodes` episodes on `task`.
inline v1::Protocol MakeProtocol(const std::string& task, int64_t episodes, int64_t seed_start = 1000) {
  v1::Protocol protocol;
  protocol.set_name(task + "-test");
  protocol.set_task(task);
  protocol.set_seed_start(seed_start);
  protocol.set_episodes(episodes);
  protocol.set_max_steps(100);
  protocol.mutable_execution()->mutable_chunk()->set_mode(v1::ChunkExecution::FULL_CHUNK);
  return protocol;
}

// A COMPLETED evaluation of `checkpoint_id` where the first `successes` episodes succeed and
// episode i returns return_offset + i; created at `created_unix_us`.
inline v1::Evaluation MakeEvaluation(const v1::Protocol& protocol, const std::string& checkpoint_id,
                                     const std::string& model, int version, int64_t successes,
                                     double return_offset, int64_t created_unix_us) {
  v1::Evaluation evaluation;
  evaluation.set_id(NewUuid());
  *evaluation.mutable_protocol() = protocol;
  evaluation.set_protocol_hash(ProtocolHash(protocol));
  evaluation.set_checkpoint_id(checkpoint_id);
  evaluation.set_model(model);
  evaluation.set_model_version(version);
  evaluation.set_dataset_id("dataset-" + model);
  evaluation.add_aliases("latest");
  for (int64_t i = 0; i < protocol.episodes(); ++i) {
    v1::EpisodeResult* episode = evaluation.add_episodes();
    episode->set_episode_index(protocol.seed_start() + i);
    episode->set_seed(0x9e3779b97f4a7c15ull * static_cast<uint64_t>(i + 1));
    episode->set_episode_return(return_offset + static_cast<double>(i));
    episode->set_length(static_cast<int32_t>(10 + i));
    episode->set_success(i < successes);
    episode->set_end_reason(i < successes ? "terminated" : "truncated");
    episode->set_state_hash_chain(0xfedcba9876543210ull + static_cast<uint64_t>(i));
    episode->set_final_state_hash(static_cast<uint64_t>(i) << 60);
  }
  BootstrapOptions bootstrap;
  bootstrap.resamples = 200;
  *evaluation.mutable_aggregates() = *Aggregate(evaluation.episodes(), bootstrap);
  evaluation.mutable_provenance()->set_roboloop_version("0.1.0");
  evaluation.mutable_provenance()->set_host("test-host");
  (*evaluation.mutable_provenance()->mutable_libraries())["mujoco"] = "3.1.3";
  evaluation.set_created_unix_us(created_unix_us);
  evaluation.set_status(v1::EVALUATION_COMPLETED);
  return evaluation;
}

}  // namespace roboloop::eval::testing
