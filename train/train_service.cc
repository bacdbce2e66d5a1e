// TrainService: runs are worker processes; their events come back over a pipe.
#include "train/train_service.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include <google/protobuf/util/json_util.h>
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "spdlog/spdlog.h"
#include "common/fs.h"
#include "common/grpc_server_cancellation.h"
#include "common/grpc_status.h"
#include "common/ids.h"
#include "common/status.h"
#include "common/store_layout.h"
#include "train/dataset_set.h"
#include "train/torch_runtime.h"
#include "train/train_config_check.h"
#include "train/train_progress.h"
#include "train/train_run.h"

extern char** environ;

namespace roboloop::train {
namespace {

// The worker's descriptor of the progress pipe.
constexpr int kProgressFd = 3;

// The CUDA devices LibTorch sees in this process (the ranks' view, as they inherit its environment).
absl::StatusOr<int> LibTorchCudaDevices() {
  ROBOLOOP_ASSIGN_OR_RETURN(const TorchRuntime* runtime, TorchRuntime::Load());
  const nlohmann::json info = nlohmann::json::parse(runtime->DescribeRuntime(), nullptr, false);
  return info.is_object() ? info.value("cuda_devices", 0) : 0;
}

std::string TailOf(const std::string& path, size_t bytes) {
  absl::StatusOr<std::string> text = ReadFile(path);
  if (!text.ok()) return "";
  return text->size() > bytes ? text->substr(text->size() - bytes) : *text;
}

// The progress pipe: the service reads `read`; the worker gets `write` as kProgressFd.
struct ProgressPipe {
  UniqueFd read;
  UniqueFd write;
};

absl::StatusOr<ProgressPipe> MakeProgressPipe() {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return ErrnoStatus(errno, "creating the progress pipe");
  ProgressPipe pipe{UniqueFd(fds[0]), UniqueFd(fds[1])};
  if (pipe.write.get() == kProgressFd) {  // dup2 onto itself would keep close-on-exec set
    pipe.write = UniqueFd(fcntl(fds[1], F_DUPFD_CLOEXEC, kProgressFd + 1));
    if (pipe.write.get() < 0) return ErrnoStatus(errno, "moving the progress pipe");
  }
  return pipe;
}

// Starts `argv` with stdout/stderr in `dir`, `progress_fd` as kProgressFd, default SIGINT and
// SIGTERM (a service blocks them for its own waiter) and a process group of its own, so a
// Ctrl-C meant for the caller reaches the run only as Cancel.
absl::StatusOr<pid_t> SpawnWorker(std::vector<std::string> argv, const std::string& dir, int progress_fd) {
  std::vector<char*> argv_c;
  for (std::string& a : argv) argv_c.push_back(a.data());
  argv_c.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  const std::string out = JoinPath(dir, "stdout.log"), err = JoinPath(dir, "stderr.log");
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, progress_fd, kProgressFd);
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  sigset_t none, defaults;
  sigemptyset(&none);
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGINT);
  sigaddset(&defaults, SIGTERM);
  posix_spawnattr_setsigmask(&attributes, &none);
  posix_spawnattr_setsigdefault(&attributes, &defaults);
  posix_spawnattr_setpgroup(&attributes, 0);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, argv_c[0], &actions, &attributes, argv_c.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  if (rc != 0) return ErrnoStatus(rc, "starting " + argv[0] + " " + kTrainSubcommand);
  return pid;
}

// `config` with its dataset entries resolved under `dataset_dir` (ServedDatasetEntry).
absl::StatusOr<v1::TrainConfig> ServedConfig(const std::string& dataset_dir, v1::TrainConfig config) {
  ROBOLOOP_RETURN_IF_ERROR(MapDatasetEntries(
      &config, [&](const std::string& dataset) { return ServedDatasetEntry(dataset_dir, dataset); }));
  return config;
}

}  // namespace

absl::StatusOr<std::string> ServedDatasetEntry(const std::string& dataset_dir, const std::string& dataset) {
  if (dataset_dir.empty() || !DatasetEntryIsPath(dataset)) return dataset;
  ROBOLOOP_RETURN_IF_ERROR(
      Annotate(CheckSafeRelativePath(dataset), absl::StrCat("Train: config dataset under ", dataset_dir)));
  return JoinPath(dataset_dir, dataset);
}

absl::StatusOr<RankPlacement> TrainServiceHandler::PlaceRanks(const v1::TrainRequest& request) const {
  const v1::TrainConfig config = WithDefaults(request.config());
  const int ranks = std::max(1, request.world_size());
  const bool gpus_matter = ranks > 1 && (config.device() == "auto" || config.device() == "cuda");
  int cuda_devices = 0;
  if (gpus_matter) {
    ROBOLOOP_ASSIGN_OR_RETURN(cuda_devices, options_.cuda_devices ? options_.cuda_devices() : LibTorchCudaDevices());
  }
  absl::StatusOr<RankPlacement> placement = PlaceLocalRanks(config.device(), ranks, config.batch_size(), cuda_devices);
  if (!placement.ok()) return absl::InvalidArgumentError(absl::StrCat("Train: ", placement.status().message()));
  return placement;
}

TrainJob TrainServiceHandler::JobFor(const RankPlacement& placement, const std::string& run_id,
                                     const std::string& config_path) const {
  TrainJob job;
  job.config_path = config_path;
  job.nproc_per_node = placement.ranks;
  if (!placement.note.empty()) job.overrides.set_batch_size(placement.batch_size);
  job.root = options_.root;
  job.registry_address = options_.registry_address;
  job.registry_token_file = options_.registry_token_file;
  job.registry_tls_ca_file = options_.registry_tls_ca_file;
  job.registry_tls_server_name = options_.registry_tls_server_name;
  job.run_id = run_id;
  job.progress_fd = kProgressFd;
  job.exit_with_parent = getpid();
  return job;
}

absl::Status TrainServiceHandler::Train(const v1::TrainRequest& request,
                                        const std::function<absl::Status(const v1::TrainEvent&)>& write,
                                        common::CancellationToken* cancel) {
  if (request.config().dataset().empty() && request.config().datasets().empty()) {
    return absl::InvalidArgumentError("Train: config.dataset is required (or config.datasets)");
  }
  ROBOLOOP_ASSIGN_OR_RETURN(const v1::TrainConfig config, ServedConfig(options_.dataset_dir, request.config()));
  ROBOLOOP_RETURN_IF_ERROR(Annotate(CheckTrainConfig(WithDefaults(config)), "Train"));
  ROBOLOOP_ASSIGN_OR_RETURN(const RankPlacement placement, PlaceRanks(request));
  const std::string run_id = NewUuid();
  const std::string dir = StoreLayout(options_.root).TrainingRunDir(run_id);
  ROBOLOOP_RETURN_IF_ERROR(MakeDirs(dir));
  std::string config_json;
  if (!google::protobuf::util::MessageToJsonString(config, &config_json).ok()) {
    return absl::InvalidArgumentError("Train: the config cannot be printed as JSON");
  }
  const std::string config_path = JoinPath(dir, "request.json");
  ROBOLOOP_RETURN_IF_ERROR(WriteFileAtomic(config_path, config_json));
  if (!placement.note.empty()) {
    spdlog::info("training run {}: {}", run_id, placement.note);
    v1::TrainEvent placed;
    placed.set_run_id(run_id);
    placed.mutable_placement()->set_ranks(placement.ranks);
    placed.mutable_placement()->set_batch_size(placement.batch_size);
    placed.mutable_placement()->set_note(placement.note);
    ROBOLOOP_RETURN_IF_ERROR(write(placed));
  }
  ROBOLOOP_ASSIGN_OR_RETURN(ProgressPipe pipe, MakeProgressPipe());
  ROBOLOOP_ASSIGN_OR_RETURN(
      const pid_t pid,
      SpawnWorker(TrainJobArgv(options_.roboloop_binary, JobFor(placement, run_id, config_path)), dir,
                  pipe.write.get()));
  pipe.write = UniqueFd();  // the worker's copies are the only writers left: their exit is EOF

  common::CancellationToken run;
  common::CancellationCallback link = run.LinkTo(cancel);
  common::CancellationCallback stop = run.OnCancel([pid] { kill(pid, SIGTERM); });
  {
    absl::MutexLock lock(&mu_);
    running_[run_id] = &run;
  }
  bool failed_event = false;
  absl::Status stream = absl::OkStatus();
  const absl::Status progress = ReadTrainEvents(pipe.read.get(), [&](const v1::TrainEvent& event) {
    failed_event = failed_event || event.has_failed();
    if (!stream.ok()) return;
    stream = write(event);
    if (!stream.ok()) run.Cancel(std::string(stream.message()));
  });
  if (!progress.ok()) run.Cancel(std::string(progress.message()));
  {
    absl::MutexLock lock(&mu_);
    running_.erase(run_id);
  }
  link = common::CancellationCallback();
  stop = common::CancellationCallback();  // no signal may reach a reaped (reusable) pid
  int status = 0;
  waitpid(pid, &status, 0);
  if (!progress.ok()) return progress;
  if (run.IsCancelled()) return absl::CancelledError(absl::StrCat("training run ", run_id, " was cancelled"));
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return absl::OkStatus();
  const std::string why = TailOf(JoinPath(dir, "stderr.log"), 2000);
  // A placement changes the worker's batch_size, which a resumed run must not: say where that came from.
  const std::string placed = placement.note.empty() ? "" : absl::StrCat(" as placed (", placement.note, ")");
  return absl::AbortedError(
      absl::StrCat("training run ", run_id, " failed", failed_event ? "" : " before training", placed, ": ", why));
}

v1::CancelTrainResponse TrainServiceHandler::Cancel(const v1::CancelTrainRequest& request) {
  v1::CancelTrainResponse response;
  absl::MutexLock lock(&mu_);
  auto it = running_.find(request.run_id());
  if (it == running_.end() || it->second->IsCancelled()) return response;
  it->second->Cancel("TrainService.Cancel");
  response.set_cancelled(true);
  return response;
}

grpc::Status TrainGrpcService::Train(grpc::ServerContext* context, const v1::TrainRequest* request,
                                     grpc::ServerWriter<v1::TrainEvent>* writer) {
  common::CancellationToken cancel;
  const common::ServerCallCancellationWatch watch = common::WatchServerCallCancellation(context, &cancel);
  const absl::Status status = handler_->Train(
      *request,
      [&](const v1::TrainEvent& event) {
        return writer->Write(event) ? absl::OkStatus() : absl::CancelledError("the client closed the Train stream");
      },
      &cancel);
  return common::AbslToGrpc(status);
}

grpc::Status TrainGrpcService::Cancel(grpc::ServerContext*, const v1::CancelTrainRequest* request,
                                      v1::CancelTrainResponse* response) {
  *response = handler_->Cancel(*request);
  return grpc::Status::OK;
}

absl::StatusOr<std::unique_ptr<TrainClient>> TrainClient::Connect(const common::GrpcChannelOptions& options) {
  ROBOLOOP_ASSIGN_OR_RETURN(auto channel, common::GrpcChannel::Create(options));
  return std::unique_ptr<TrainClient>(new TrainClient(std::move(channel)));
}

absl::Status TrainClient::Train(const v1::TrainRequest& request,
                                const std::function<void(const v1::TrainEvent&)>& on_event) {
  auto context = channel_->NewContext(absl::Hours(24 * 7));
  auto reader = stub_->Train(context.get(), request);
  v1::TrainEvent event;
  while (reader->Read(&event)) on_event(event);
  return channel_->CallStatus(reader->Finish(), "Train");
}

absl::StatusOr<v1::CancelTrainResponse> TrainClient::Cancel(const std::string& run_id) {
  auto context = channel_->NewContext();
  v1::CancelTrainRequest request;
  request.set_run_id(run_id);
  v1::CancelTrainResponse response;
  ROBOLOOP_RETURN_IF_ERROR(channel_->CallStatus(stub_->Cancel(context.get(), request, &response), "Cancel"));
  return response;
}

}  // namespace roboloop::train
