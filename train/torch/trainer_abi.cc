// The C edge of the trainer handle: every exception stops here and becomes a message.
#include "train/torch/trainer_abi.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>

#include "train/torch/abi_error.h"
#include "train/torch/trainer.h"

struct RoboloopTorchTrainer {
  std::unique_ptr<roboloop::train::Trainer> trainer;  // the replica
};

namespace roboloop::train {
namespace {

// Runs `body`, turning exceptions into -1 and a message (1 for a non-finite loss, 2 for a failure that may be
// another rank's).
template <typename Body>
int Guarded(const char* what, char* error_buf, size_t error_cap, Body&& body) {
  try {
    body();
    return 0;
  } catch (const NonFiniteLoss& e) {
    WriteAbiError(e.what(), error_buf, error_cap);
    return 1;
  } catch (const PeerFailure& e) {
    WriteAbiError(e.what(), error_buf, error_cap);
    return 2;
  } catch (const c10::Error& e) {
    WriteAbiError(std::string(what) + ": " + e.what_without_backtrace(), error_buf, error_cap);
  } catch (const std::exception& e) {
    WriteAbiError(std::string(what) + ": " + e.what(), error_buf, error_cap);
  } catch (...) {
    WriteAbiError(std::string(what) + ": unknown exception", error_buf, error_cap);
  }
  return -1;
}

BatchArrays Arrays(const RoboloopTrainBatch& batch) {
  return BatchArrays{batch.batch,          batch.history,    batch.chunk,
                     batch.obs_dim,        batch.action_dim, batch.obs,
                     batch.history_length, batch.actions,    batch.action_valid,
                     batch.image_bytes,    batch.images};
}

}  // namespace

RoboloopTorchTrainer* TrainerCreateEntry(const char* config_json, char* error_buf,
                                         size_t error_cap) {
  auto handle = std::make_unique<RoboloopTorchTrainer>();
  const int rc = Guarded("trainer", error_buf, error_cap, [&] {
    handle->trainer = Trainer::Create(ParseTrainerConfig(nlohmann::json::parse(config_json)));
  });
  return rc == 0 ? handle.release() : nullptr;
}

int TrainerStepEntry(RoboloopTorchTrainer* trainer, const RoboloopTrainBatch* batch, int64_t step,
                     RoboloopTrainFigures* figures, char* error_buf, size_t error_cap) {
  return Guarded("training step", error_buf, error_cap, [&] {
    const StepFigures result = trainer->trainer->Step(Arrays(*batch), step);
    *figures = RoboloopTrainFigures{result.loss, result.grad_norm, result.lr};
  });
}

int TrainerStageEntry(RoboloopTorchTrainer* trainer, const RoboloopTrainBatch* batch, int64_t step,
                      char* error_buf, size_t error_cap) {
  return Guarded("staging a batch", error_buf, error_cap,
                 [&] { trainer->trainer->Stage(Arrays(*batch), step); });
}

int TrainerValidationLossEntry(RoboloopTorchTrainer* trainer, const RoboloopTrainBatch* batch,
                               int64_t step, double* loss, char* error_buf, size_t error_cap) {
  return Guarded("validation loss", error_buf, error_cap,
                 [&] { *loss = trainer->trainer->ValidationLoss(Arrays(*batch), step); });
}

int TrainerSaveEntry(RoboloopTorchTrainer* trainer, const char* policy_path, const char* state_path,
                     const char* driver_state, size_t driver_size, char* error_buf,
                     size_t error_cap) {
  return Guarded("saving a checkpoint", error_buf, error_cap, [&] {
    trainer->trainer->Save(policy_path, state_path, std::string(driver_state, driver_size));
  });
}

int64_t TrainerLoadStateEntry(RoboloopTorchTrainer* trainer, const char* state_path,
                              char* driver_buf, size_t driver_cap, char* error_buf,
                              size_t error_cap) {
  std::string driver;
  const int rc = Guarded("resuming", error_buf, error_cap,
                         [&] { driver = trainer->trainer->LoadState(state_path); });
  if (rc != 0) return -1;
  std::memcpy(driver_buf, driver.data(), std::min(driver.size(), driver_cap));
  return static_cast<int64_t>(driver.size());
}

int TrainerLoadWeightsEntry(RoboloopTorchTrainer* trainer, const char* policy_path,
                            char* error_buf, size_t error_cap) {
  return Guarded("initialising from a checkpoint", error_buf, error_cap,
                 [&] { trainer->trainer->LoadWeights(policy_path); });
}

void TrainerFreeEntry(RoboloopTorchTrainer* trainer) { delete trainer; }

}  // namespace roboloop::train
