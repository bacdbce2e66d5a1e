#include "pipeline/stage_kinds/builtin.h"

namespace roboloop::pipeline {

StageKind LoopStageKind() {
  StageKind kind;
  kind.name = "loop";
  kind.params = v1::LoopStage::descriptor();
  // `iterations`, and the last checkpoint and dataset its body produced (RunPipeline).
  kind.outputs = {kLoopIterations, "checkpoint", "dataset"};
  kind.numeric_outputs = {kLoopIterations};
  kind.repeats_body = true;
  return kind;
}

}  // namespace roboloop::pipeline
