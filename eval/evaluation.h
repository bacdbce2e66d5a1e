// Building an Evaluation from rollout results (for the EvalService): episode conversion,
// completion with aggregates (only when every episode of the protocol is present), failure
// without a rate, and the provenance of this process. Thread-safe (pure functions).
#pragma once

#include <string>

#include "absl/status/status.h"
#include "eval/metrics.h"
#include "roboloop/v1/eval.pb.h"
#include "roboloop/v1/sim.pb.h"

namespace roboloop::eval {

// The deterministic fields of a SimService episode record.
v1::EpisodeResult ToEpisodeResult(const v1::EpisodeRecord& record);

// Sorts `evaluation`'s episodes by index, checks that they are exactly the protocol's range
// [seed_start, seed_start + episodes), each once, then sets the aggregates and status
// COMPLETED. InvalidArgument naming the first missing, duplicate or foreign episode index
// (the evaluation is left unchanged but for the sort).
absl::Status CompleteEvaluation(const BootstrapOptions& bootstrap, v1::Evaluation* evaluation);

// Marks `evaluation` FAILED with `reason`, dropping any aggregates (no partial rate); the
// episodes that finished are kept.
void FailEvaluation(const std::string& reason, v1::Evaluation* evaluation);

// roboloop version, git sha, host and user of this process; `libraries` (MuJoCo, LibTorch,
// BLAS) are the caller's to add, as only it loads them.
v1::Provenance ProcessProvenance();

}  // namespace roboloop::eval
