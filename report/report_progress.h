// The closed loop's progress in a model report (issue 23, req 6): the success of each checkpoint
// of a lineage under one protocol, oldest first (behaviour cloning, then each improvement), and
// the paired test between the first and the last of them.
#pragma once

#include <string>
#include <vector>

#include "roboloop/v1/eval.pb.h"
#include "roboloop/v1/registry.pb.h"
#include "wiring/services.h"

namespace roboloop::report {

// The lineage the closed-loop section shows, newest first (the checkpoint, then its ancestors as the
// registry lists them): the model's latest checkpoint's when `champion` is among them, so that
// improvements tried after the champion show even when they did not beat it; else the champion's.
std::vector<v1::Checkpoint> ClosedLoopChain(wiring::ServiceClients& clients, const v1::Checkpoint& champion);

// An HTML section: a table of `chain`'s checkpoints (the newest first, then its ancestors, as the
// registry's lineage lists them) that have an evaluation under `protocol` among `rows`, oldest
// first, with success and its 95 % interval, and the McNemar test of the last against the
// first (EvalService Compare). "" when fewer than two checkpoints of the chain were evaluated.
std::string ClosedLoopSection(wiring::ServiceClients& clients, const std::vector<v1::Checkpoint>& chain,
                              const std::vector<v1::Evaluation>& rows, const std::string& protocol);

}  // namespace roboloop::report
