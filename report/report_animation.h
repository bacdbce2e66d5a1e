// The episodes a report animates (issue 7, req 7): the best and the worst episode of an
// evaluation, re-run locally with the evaluated checkpoint (deterministic: the re-run must
// reproduce the stored return) and rendered offscreen (sim/render.h) as PNG frames: the external
// view, and what each of the task's cameras saw (docs/vision.md).
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "registry/registry_client.h"
#include "roboloop/v1/eval.pb.h"
#include "sim/task_registry.h"

namespace roboloop::report {

// What one camera observation of the task saw, frame by frame.
struct CameraAnimation {
  std::string name;                 // the task's camera observation name
  int width = 0, height = 0;        // pixels of one frame
  std::vector<std::string> frames;  // PNG bytes, at the same steps as EpisodeAnimation::frames
};

// One animated episode.
struct EpisodeAnimation {
  std::string label;                // "best" or "worst"
  int64_t episode_index = 0;
  double episode_return = 0;
  bool success = false;
  std::vector<std::string> frames;  // PNG bytes of the external view, in time order
  std::vector<CameraAnimation> cameras;  // what each of the task's cameras saw (none for state-only tasks)
};

// Settings of AnimateBestAndWorst.
struct AnimationOptions {
  const sim::TaskRegistry* tasks = nullptr;  // resolves the evaluation's task (not owned)
  std::string cache_dir;                     // local copies of policy blobs
  int max_frames = 40;                       // frames per episode (evenly spaced)
};

// Animations of the highest- and lowest-return episodes of `evaluation` (which must carry its
// episodes). DataLoss when a re-run does not reproduce its stored return.
absl::StatusOr<std::vector<EpisodeAnimation>> AnimateBestAndWorst(registry::RegistryClient& registry,
                                                                  const v1::Evaluation& evaluation,
                                                                  const AnimationOptions& options);

}  // namespace roboloop::report
