// `roboloop registry put --policy-file` (issue 26, req 1): the checkpoint manifest of a policy
// file registered for a task, so that nobody writes a manifest by hand (docs/manifest.md).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "registry/checkpoint_manifest.h"
#include "registry/policy_kind.h"
#include "sim/task.h"

namespace roboloop::cli {

// What a user says about a policy file to register.
struct PolicyFileRegistration {
  std::string model;        // registry model name
  std::string policy_file;  // the `policy` blob: a torch.jit.save file, a kind's safetensors weights, ...
  std::string kind;         // policy kind; "" = the one kind whose blob suffix ends policy_file
  nlohmann::json options = nlohmann::json::object();  // the kind's options; obs_dim/action_dim default to the task's
  std::string normalization_file;  // {"obs": {mean, std}, "action": {mean, std}} JSON; "" = identity
};

// The kind of `policy_file`: `kind` when given, otherwise the only registered kind whose
// blob_suffix ends the file's name. InvalidArgument naming the file and listing every kind with
// its suffix when no kind or several kinds match, or naming an unknown `kind`.
absl::StatusOr<const registry::PolicyKind*> PolicyKindForFile(const std::string& policy_file,
                                                              const std::string& kind);

// The manifest of `registration` on `task`, blobs not yet filled in: obs_spec the task's keys,
// action_spec {"action": [the task's action dims]}, policy options completed with the kind's
// defaults (obs_dim and action_dim, where the kind has them, the task's unless given), the
// action-chunk horizon the options' `chunk` (1 when none), normalization the file's (checked
// against the task's sizes) or {} (identity), provenance this build and host. InvalidArgument
// naming the file, the option or the normalization key at fault.
absl::StatusOr<registry::CheckpointManifest> ManifestForPolicyFile(const PolicyFileRegistration& registration,
                                                                   const sim::Task& task);

}  // namespace roboloop::cli
