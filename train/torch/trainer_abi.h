// The trainer entries (ABI 3, 4 and 6) of libroboloop_torch.so (declared in train/torch_api.h); the
// table in runtime_info.cc points at them.
#pragma once

#include "train/torch_api.h"

namespace roboloop::train {

// See RoboloopTorchApi::trainer_create.
RoboloopTorchTrainer* TrainerCreateEntry(const char* config_json, char* error_buf, size_t error_cap);
// See RoboloopTorchApi::trainer_step.
int TrainerStepEntry(RoboloopTorchTrainer* trainer, const RoboloopTrainBatch* batch, int64_t step,
                     RoboloopTrainFigures* figures, char* error_buf, size_t error_cap);
// See RoboloopTorchApi::trainer_stage.
int TrainerStageEntry(RoboloopTorchTrainer* trainer, const RoboloopTrainBatch* batch, int64_t step,
                      char* error_buf, size_t error_cap);
// See RoboloopTorchApi::trainer_save.
int TrainerSaveEntry(RoboloopTorchTrainer* trainer, const char* policy_path, const char* state_path,
                     const char* driver_state, size_t driver_size, char* error_buf,
                     size_t error_cap);
// See RoboloopTorchApi::trainer_load_state.
int64_t TrainerLoadStateEntry(RoboloopTorchTrainer* trainer, const char* state_path,
                              char* driver_buf, size_t driver_cap, char* error_buf,
                              size_t error_cap);
// See RoboloopTorchApi::trainer_load_weights.
int TrainerLoadWeightsEntry(RoboloopTorchTrainer* trainer, const char* policy_path,
                            char* error_buf, size_t error_cap);
// See RoboloopTorchApi::trainer_free.
void TrainerFreeEntry(RoboloopTorchTrainer* trainer);
// See RoboloopTorchApi::trainer_validation_loss.
int TrainerValidationLossEntry(RoboloopTorchTrainer* trainer, const RoboloopTrainBatch* batch,
                               int64_t step, double* loss, char* error_buf, size_t error_cap);

}  // namespace roboloop::train
