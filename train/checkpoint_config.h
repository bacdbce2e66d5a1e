// The config of a run that starts from a checkpoint (issue: resume continues the checkpoint's own
// run). `roboloop train` applies it to the config its file and flags give, before the defaults are
// filled, so a field the user did not give can still come from the checkpoint. Torch-free.
#pragma once

#include "absl/status/statusor.h"
#include "roboloop/v1/registry.pb.h"
#include "roboloop/v1/train.pb.h"

namespace roboloop::train {

// `given` (a file and flags, defaults not filled; zero/empty = not given) with what `checkpoint`
// (the one given.resume or given.init_from names) fixes:
// - resume: the checkpoint's own run, i.e. its recorded config (config_json) with the given fields on
//   top; the model, the batch size, the features and the policy are the checkpoint's, and without a
//   given dataset the data is the checkpoint's registered dataset (dataset_id). Where the run
//   executes (device, threads, data cache, loader, rendezvous timeout, cuda_graph) is never inherited.
// - init_from: `given` with the checkpoint's policy.
// The policy is the manifest's (kind and options, defaults filled). InvalidArgument, naming each
// given field that contradicts the checkpoint by its flag (or config key) and the checkpoint's value,
// e.g. "--batch-size 32 contradicts checkpoint a:v1 (batch_size 16)"; InvalidArgument for a manifest
// or config_json that does not parse, and for resuming a checkpoint without a `trainer_state` blob.
// `given` unchanged when it names no checkpoint.
absl::StatusOr<v1::TrainConfig> ApplyCheckpointConfig(const v1::TrainConfig& given, const v1::Checkpoint& checkpoint);

// InvalidArgument naming both steps when `config` (defaults filled) resumes `checkpoint` and the
// checkpoint already reached config.steps: nothing to train, nothing to register.
absl::Status CheckStepsLeft(const v1::TrainConfig& config, const v1::Checkpoint& checkpoint);

}  // namespace roboloop::train
