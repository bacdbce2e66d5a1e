// TrainService: runs as child processes, events from the run's JSONL log.
#include "train/train_service.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <thread>

#include <google/protobuf/util/json_util.h>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "common/fs.h"
#include "common/grpc_status.h"
#include "common/ids.h"
#include "common/status.h"

extern char** environ;

namespace roboloop::train {
namespace {

// Follows a growing JSONL file, returning each complete new line once.
class LogFollower {
 public:
  explicit LogFollower(std::string path) : path_(std::move(path)) {}

  std::vector<std::string> NewLines() {
    std::vector<std::string> lines;
    std::ifstream in(path_, std::ios::binary);
    if (!in) return lines;
    in.seekg(offset_);
    std::string line;
    while (std::getline(in, line)) {
      if (in.eof()) break;  // a partial last line: read it again once it is complete
      offset_ += static_cast<std::streamoff>(line.size()) + 1;
      lines.push_back(line);
    }
    return lines;
  }

 private:
  std::string path_;
  std::streamoff offset_ = 0;
};

std::string TailOf(const std::string& path, size_t bytes) {
  absl::StatusOr<std::string> text = ReadFile(path);
  if (!text.ok()) return "";
  return text->size() > bytes ? text->substr(text->size() - bytes) : *text;
}

}  // namespace

absl::StatusOr<int> TrainServiceHandler::StartRun(const v1::TrainRequest& request,
                                                  const std::string& run_id, const std::string& dir) {
  std::string config_json;
  if (!google::protobuf::util::MessageToJsonString(request.config(), &config_json).ok()) {
    return absl::InvalidArgumentError("Train: the config cannot be printed as JSON");
  }
  const std::string config_path = JoinPath(dir, "request.json");
  ROBOLOOP_RETURN_IF_ERROR(WriteFileAtomic(config_path, config_json));
  std::vector<std::string> argv = {options_.roboloop_binary, "train", config_path, "--root", options_.root,
                                   "--nproc-per-node", std::to_string(std::max(1, request.world_size()))};
  if (!options_.registry_address.empty()) argv.insert(argv.end(), {"--registry", options_.registry_address});
  if (!options_.registry_token_file.empty()) {
    argv.insert(argv.end(), {"--token-file", options_.registry_token_file});
  }
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) env.emplace_back(*e);
  env.push_back("ROBOLOOP_RUN_ID=" + run_id);
  env.push_back("ROBOLOOP_EXIT_WITH_PARENT=" + std::to_string(getpid()));
  std::vector<char*> argv_c, env_c;
  for (std::string& a : argv) argv_c.push_back(a.data());
  argv_c.push_back(nullptr);
  for (std::string& e : env) env_c.push_back(e.data());
  env_c.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  const std::string out = JoinPath(dir, "stdout.log"), err = JoinPath(dir, "stderr.log");
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  // The run gets default signal handling (a service blocks SIGINT/SIGTERM for its own waiter)
  // and its own process group, so a Ctrl-C meant for the caller reaches it only as Cancel.
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
  const int rc = posix_spawn(&pid, argv_c[0], &actions, &attributes, argv_c.data(), env_c.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  if (rc != 0) return ErrnoStatus(rc, "starting " + options_.roboloop_binary + " train");
  return static_cast<int>(pid);
}

absl::Status TrainServiceHandler::Train(const v1::TrainRequest& request,
                                        const std::function<absl::Status(const v1::TrainEvent&)>& write,
                                        const std::atomic<bool>* cancel) {
  if (request.config().dataset().empty()) {
    return absl::InvalidArgumentError("Train: config.dataset is required");
  }
  const std::string run_id = NewUuid();
  const std::string dir = JoinPath(JoinPath(options_.root, "runs"), run_id);
  ROBOLOOP_RETURN_IF_ERROR(MakeDirs(dir));
  ROBOLOOP_ASSIGN_OR_RETURN(const int pid, StartRun(request, run_id, dir));
  {
    absl::MutexLock lock(&mu_);
    running_[run_id] = pid;
  }
  LogFollower follower(JoinPath(dir, "train.jsonl"));
  bool cancelled = false, exited = false, failed_event = false;
  int status = 0;
  absl::Status stream = absl::OkStatus();
  while (!exited) {
    exited = waitpid(pid, &status, WNOHANG) == pid;
    for (const std::string& line : follower.NewLines()) {
      v1::TrainEvent event;
      if (!google::protobuf::util::JsonStringToMessage(line, &event).ok()) continue;
      failed_event = failed_event || event.has_failed();
      if (stream.ok()) stream = write(event);
    }
    const bool stop = (cancel != nullptr && cancel->load()) || !stream.ok();
    if (stop && !cancelled) {
      kill(pid, SIGTERM);
      cancelled = true;
    }
    {
      absl::MutexLock lock(&mu_);
      if (running_[run_id] < 0) cancelled = true;
    }
    if (!exited) absl::SleepFor(options_.poll);
  }
  {
    absl::MutexLock lock(&mu_);
    running_.erase(run_id);
  }
  if (cancelled) return absl::CancelledError(absl::StrCat("training run ", run_id, " was cancelled"));
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return absl::OkStatus();
  const std::string why = TailOf(JoinPath(dir, "stderr.log"), 2000);
  return absl::AbortedError(absl::StrCat("training run ", run_id, " failed", failed_event ? "" : " before training", ": ", why));
}

v1::CancelTrainResponse TrainServiceHandler::Cancel(const v1::CancelTrainRequest& request) {
  v1::CancelTrainResponse response;
  absl::MutexLock lock(&mu_);
  auto it = running_.find(request.run_id());
  if (it == running_.end() || it->second < 0) return response;
  kill(it->second, SIGTERM);
  it->second = -it->second;
  response.set_cancelled(true);
  return response;
}

grpc::Status TrainGrpcService::Train(grpc::ServerContext* context, const v1::TrainRequest* request,
                                     grpc::ServerWriter<v1::TrainEvent>* writer) {
  std::atomic<bool> cancel{false};
  absl::Notification finished;
  std::thread watcher([&] {
    while (!finished.WaitForNotificationWithTimeout(absl::Milliseconds(50))) {
      if (context->IsCancelled()) {
        cancel.store(true);
        return;
      }
    }
  });
  const absl::Status status = handler_->Train(
      *request,
      [&](const v1::TrainEvent& event) {
        return writer->Write(event) ? absl::OkStatus() : absl::CancelledError("the client closed the Train stream");
      },
      &cancel);
  finished.Notify();
  watcher.join();
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
