// Test helper: a real checkpoint made the way a user makes one — `roboloop sim collect` of
// expert demos, then a tiny `roboloop train` — in an embedded registry under `root`.
#pragma once

#include <string>

namespace roboloop::testing {

// What to collect and train.
struct TinyCheckpointOptions {
  std::string root;                       // registry root (embedded registry of the CLI)
  std::string task = "cartpole-swingup";  // task of the demos
  std::string model = "tiny";             // registry model name
  std::string kind = "transformer";       // mlp or transformer
  int history = 2;                        // observations read
  int chunk = 4;                          // actions predicted per query
  int episodes = 6;                       // demos collected
  int max_steps = 60;                     // horizon of each demo
  int first_episode = 0;                  // first episode index of the demos' seed range
  int steps = 20;                         // optimisation steps
  bool validation_split = false;          // split the demos (`data split`), validate on mask/valid
  bool register_dataset = false;          // `data register` the demos first (metadata with statistics)
};

// Collects and trains; returns the new checkpoint's id, or "" after a gtest failure that
// shows the CLI's output.
std::string MakeTinyCheckpoint(const TinyCheckpointOptions& options);

}  // namespace roboloop::testing
