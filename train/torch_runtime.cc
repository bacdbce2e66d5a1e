#include "train/torch_runtime.h"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/runtime_library.h"

namespace roboloop::train {
namespace {

constexpr char kLibraryName[] = "libroboloop_torch.so";

// Room for the library's error messages (they are truncated beyond it).
constexpr size_t kErrorCapacity = 4096;

// How many times an idle worker of LibTorch's OpenMP runtime (libgomp) checks for work before
// it sleeps: about 0.1 ms here, longer than the gaps between the parallel regions of a training
// step and far shorter than libgomp's default of 300 000 (docs/training.md, "Threads").
constexpr char kSpinCount[] = "5000";

// The variables ChooseOpenMpWaiting set; written once, under TorchRuntime::Load's once_flag.
std::vector<std::string>& ChosenVariables() {
  static std::vector<std::string> chosen;
  return chosen;
}

// libgomp reads its wait settings once, when dlopen loads it: a short spin unless the user chose.
void ChooseOpenMpWaiting() {
  if (std::getenv("OMP_WAIT_POLICY") != nullptr || std::getenv("GOMP_SPINCOUNT") != nullptr) return;
  setenv("GOMP_SPINCOUNT", kSpinCount, /*overwrite=*/1);
  ChosenVariables().push_back("GOMP_SPINCOUNT");
}

}  // namespace

absl::StatusOr<const TorchRuntime*> TorchRuntime::Open() {
  const absl::StatusOr<LibraryEntry> entry = OpenLibraryEntry(
      LibraryCandidates(ExecutableFolder(), kLibraryName, "ROBOLOOP_TORCH_LIBRARY"), ROBOLOOP_TORCH_ENTRY_POINT,
      RTLD_NOW | RTLD_LOCAL);
  if (!entry.ok()) {
    return absl::NotFoundError(absl::StrCat("cannot load ", kLibraryName, "; ", entry.status().message()));
  }
  const RoboloopTorchApi* api = reinterpret_cast<RoboloopTorchEntryFn>(entry->symbol)();
  if (api->abi_version != ROBOLOOP_TORCH_ABI_VERSION) {
    return absl::FailedPreconditionError(absl::StrCat(entry->path, ": torch library ABI version ", api->abi_version,
                                                      ", this program needs ", ROBOLOOP_TORCH_ABI_VERSION));
  }
  return new TorchRuntime(entry->path, api);
}

absl::StatusOr<const TorchRuntime*> TorchRuntime::Load() {
  static std::once_flag once;
  static absl::StatusOr<const TorchRuntime*>* result = nullptr;
  std::call_once(once, [] {
    ChooseOpenMpWaiting();
    result = new absl::StatusOr<const TorchRuntime*>(Open());
  });
  return *result;
}

std::vector<std::string> TorchRuntime::VariablesChosenForOpenMp() { return ChosenVariables(); }

std::string TorchRuntime::DescribeRuntime() const {
  std::string buffer(1024, '\0');
  size_t needed = api_->describe_runtime(buffer.data(), buffer.size());
  if (needed >= buffer.size()) {
    buffer.assign(needed + 1, '\0');
    needed = api_->describe_runtime(buffer.data(), buffer.size());
  }
  buffer.resize(needed);
  return buffer;
}

absl::StatusOr<std::unique_ptr<TorchPolicy>> TorchRuntime::LoadPolicy(
    const std::string& path, const std::string& kind, const std::string& options_json) const {
  std::string error(kErrorCapacity, '\0');
  RoboloopTorchPolicy* handle = api_->load_policy(path.c_str(), kind.c_str(), options_json.c_str(),
                                                  error.data(), error.size());
  if (handle == nullptr) return absl::InvalidArgumentError(error.c_str());
  return std::unique_ptr<TorchPolicy>(new TorchPolicy(path, api_, handle));
}

TorchPolicy::~TorchPolicy() { api_->free_policy(handle_); }

absl::Status TorchPolicy::Act(const float* obs, int batch, int obs_dim, float* actions,
                              int action_dim, bool batch_invariant) {
  char error[kErrorCapacity];
  if (api_->policy_act(handle_, obs, batch, obs_dim, actions, action_dim, batch_invariant ? 1 : 0,
                       error, sizeof(error)) != 0) {
    return absl::InvalidArgumentError(error);
  }
  return absl::OkStatus();
}

}  // namespace roboloop::train

namespace roboloop::train {

absl::Status TorchPolicy::ActChunk(const float* obs, const int32_t* history_length, int batch,
                                   int history, int obs_dim, float* actions, int chunk,
                                   int action_dim, bool batch_invariant) {
  char error[kErrorCapacity];
  if (api_->policy_act_chunk(handle_, obs, history_length, batch, history, obs_dim, actions,
                             chunk, action_dim, batch_invariant ? 1 : 0, error,
                             sizeof(error)) != 0) {
    return absl::InvalidArgumentError(error);
  }
  return absl::OkStatus();
}

absl::Status TorchPolicy::ActChunkImages(const float* obs, const int32_t* history_length,
                                         const uint8_t* images, int image_bytes, int batch, int history,
                                         int obs_dim, float* actions, int chunk, int action_dim,
                                         bool batch_invariant) {
  char error[kErrorCapacity];
  if (api_->policy_act_chunk_images(handle_, obs, history_length, images, image_bytes, batch, history,
                                    obs_dim, actions, chunk, action_dim, batch_invariant ? 1 : 0, error,
                                    sizeof(error)) != 0) {
    return absl::InvalidArgumentError(error);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<TorchTrainer>> TorchRuntime::CreateTrainer(
    const std::string& config_json) const {
  std::string error(kErrorCapacity, '\0');
  RoboloopTorchTrainer* handle =
      api_->trainer_create(config_json.c_str(), error.data(), error.size());
  if (handle == nullptr) {
    const std::string message = error.c_str();
    if (message.find("rendezvous") != std::string::npos ||
        message.find("process group") != std::string::npos) {
      return absl::UnavailableError(message);
    }
    return absl::InvalidArgumentError(message);
  }
  return std::unique_ptr<TorchTrainer>(new TorchTrainer(api_, handle));
}

TorchTrainer::~TorchTrainer() { api_->trainer_free(handle_); }

absl::StatusOr<TrainStepFigures> TorchTrainer::Step(const RoboloopTrainBatch& batch,
                                                    int64_t step) {
  char error[kErrorCapacity];
  RoboloopTrainFigures figures{};
  const int rc = api_->trainer_step(handle_, &batch, step, &figures, error, sizeof(error));
  if (rc == 1) return absl::DataLossError(error);
  if (rc == 2) return absl::UnavailableError(error);
  if (rc != 0) return absl::InternalError(absl::StrCat("step ", step, ": ", error));
  return TrainStepFigures{figures.loss, figures.grad_norm, figures.lr};
}

absl::Status TorchTrainer::Stage(const RoboloopTrainBatch& batch, int64_t step) {
  char error[kErrorCapacity];
  if (api_->trainer_stage(handle_, &batch, step, error, sizeof(error)) != 0) {
    return absl::InternalError(error);
  }
  return absl::OkStatus();
}

absl::StatusOr<double> TorchTrainer::ValidationLoss(const RoboloopTrainBatch& batch,
                                                    int64_t step) {
  char error[kErrorCapacity];
  double loss = 0;
  if (api_->trainer_validation_loss(handle_, &batch, step, &loss, error, sizeof(error)) != 0) {
    return absl::InternalError(error);
  }
  return loss;
}

absl::Status TorchTrainer::Save(const std::string& policy_path, const std::string& state_path,
                                const std::string& driver_state) {
  char error[kErrorCapacity];
  if (api_->trainer_save(handle_, policy_path.c_str(), state_path.c_str(), driver_state.data(),
                         driver_state.size(), error, sizeof(error)) != 0) {
    return absl::InternalError(error);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> TorchTrainer::LoadState(const std::string& state_path) {
  char error[kErrorCapacity];
  std::string driver(size_t{1} << 16, '\0');
  int64_t size = api_->trainer_load_state(handle_, state_path.c_str(), driver.data(), driver.size(),
                                          error, sizeof(error));
  if (size > static_cast<int64_t>(driver.size())) {
    driver.resize(static_cast<size_t>(size));
    size = api_->trainer_load_state(handle_, state_path.c_str(), driver.data(), driver.size(),
                                    error, sizeof(error));
  }
  if (size < 0) return absl::InvalidArgumentError(error);
  driver.resize(static_cast<size_t>(size));
  return driver;
}

absl::Status TorchTrainer::LoadWeights(const std::string& policy_path) {
  char error[kErrorCapacity];
  if (api_->trainer_load_weights(handle_, policy_path.c_str(), error, sizeof(error)) != 0) {
    return absl::InvalidArgumentError(error);
  }
  return absl::OkStatus();
}

}  // namespace roboloop::train
