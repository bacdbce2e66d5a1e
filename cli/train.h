// `roboloop train`: a training run from a YAML config and flags, on one rank, N local ranks
// (--nproc-per-node) or as one rank of a torchrun-style job (RANK, WORLD_SIZE, ...).
#pragma once

#include <CLI/CLI.hpp>

#include "cli/cli.h"

namespace roboloop::cli {

// Adds `train`. `argc`/`argv` are the process's, re-run by each local rank.
void AddTrainCommand(CLI::App& app, CommandRunner& runner, int argc, char** argv);

// Adds `serve train` (TrainService) under `serve`.
void AddServeTrainCommand(CLI::App* serve, CommandRunner& runner);

}  // namespace roboloop::cli
