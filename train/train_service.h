// TrainService (issue 6, req 8): the transport-free handler, its gRPC adapter and a client.
// A Train call runs the `roboloop train` worker as a child process (which spawns the ranks),
// so a crash of a rank never takes the service down. The worker's command line is
// TrainJobArgv of a TrainJob (train/train_job.h), and its rank 0 streams the run's events back
// over a pipe (train/train_progress.h). Cancelling the call or calling Cancel sends SIGTERM to
// the run: rank 0 registers a checkpoint of the completed steps and the run can be resumed.
// With device auto, a request for more ranks than the node has GPUs runs one rank per GPU with
// the global batch kept (train/training_device.h PlaceLocalRanks).
#pragma once

#include <grpcpp/grpcpp.h>

#include <functional>
#include <map>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/cancellation.h"
#include "common/grpc_client.h"
#include "roboloop/v1/train.grpc.pb.h"
#include "train/train_job.h"
#include "train/training_device.h"

namespace roboloop::train {

// Where runs keep their state and how they reach the registry.
struct TrainServiceOptions {
  std::string roboloop_binary = "/proc/self/exe";  // the program that runs the `train` worker
  std::string root = ".roboloop";                  // --root of the runs (runs/<id>/ lives there)
  std::string registry_address;                    // remote registry; "" = embedded on root
  std::string registry_token_file;                 // its bearer token file
  std::string registry_tls_ca_file;                // PEM roots to trust for it; set = TLS
  std::string registry_tls_server_name;            // name expected in its certificate (optional)
  // Where the dataset paths of requests resolve (ServedDatasetEntry); "" = as given (the embedded
  // service of one user's pipelines). `serve train` sets it (--dataset-dir, default <root>/datasets).
  std::string dataset_dir;
  // The CUDA devices the run's ranks will see; empty = LibTorch's count. Asked only for a
  // request with device auto or cuda and more than one rank.
  std::function<absl::StatusOr<int>()> cuda_devices;
};

// `dataset` as a service whose dataset folder is `dataset_dir` reads it: a registry reference
// unchanged; a path (DatasetEntryIsPath, train/dataset_set.h) joined to `dataset_dir`, or InvalidArgument naming it
// when it is absolute or has a '..' component, so that no caller reads outside the folder;
// `dataset` itself when `dataset_dir` is empty.
absl::StatusOr<std::string> ServedDatasetEntry(const std::string& dataset_dir, const std::string& dataset);

// Thread-safe: any number of Train calls may run at once (each its own run).
class TrainServiceHandler {
 public:
  explicit TrainServiceHandler(TrainServiceOptions options) : options_(std::move(options)) {}

  // Starts a run of `request` (its dataset entries resolved by ServedDatasetEntry under
  // options.dataset_dir) and calls `write` with each event until the run ends. Returns
  // OK when it finished; Cancelled when `cancel` (optional) was cancelled, `write` failed or
  // Cancel was called (the run's last checkpoint is in its events); the run's own error
  // otherwise. Bad configs are reported before the run starts, naming the field, as is a
  // request for more ranks than GPUs with device cuda, or with device auto a global batch the
  // GPUs cannot share evenly. When the ranks are placed otherwise than asked (device auto),
  // the first event is a Placement saying so, and a failed run's error repeats it (a resume
  // keeps its checkpoint's batch_size, so one placed on fewer GPUs than its run had is refused
  // by the worker as contradicting the checkpoint).
  absl::Status Train(const v1::TrainRequest& request,
                     const std::function<absl::Status(const v1::TrainEvent&)>& write,
                     common::CancellationToken* cancel);

  // Stops the run `run_id`; cancelled = false when no such run is active.
  v1::CancelTrainResponse Cancel(const v1::CancelTrainRequest& request);

 private:
  // How the ranks of `request` are placed on this node.
  absl::StatusOr<RankPlacement> PlaceRanks(const v1::TrainRequest& request) const;
  // The worker's job for the request whose config is at `config_path`, its ranks placed so.
  TrainJob JobFor(const RankPlacement& placement, const std::string& run_id, const std::string& config_path) const;

  TrainServiceOptions options_;
  absl::Mutex mu_;
  std::map<std::string, common::CancellationToken*> running_ ABSL_GUARDED_BY(mu_);  // run id -> its token
};

// The gRPC face of a handler (sync API).
class TrainGrpcService final : public v1::TrainService::Service {
 public:
  explicit TrainGrpcService(TrainServiceHandler* handler) : handler_(handler) {}

  grpc::Status Train(grpc::ServerContext* context, const v1::TrainRequest* request,
                     grpc::ServerWriter<v1::TrainEvent>* writer) override;
  grpc::Status Cancel(grpc::ServerContext* context, const v1::CancelTrainRequest* request,
                      v1::CancelTrainResponse* response) override;

 private:
  TrainServiceHandler* handler_;
};

// A client of TrainService. Thread-compatible.
class TrainClient {
 public:
  // Connects with `options` (address, token, TLS).
  static absl::StatusOr<std::unique_ptr<TrainClient>> Connect(const common::GrpcChannelOptions& options);

  // Runs `request`, calling `on_event` per event; returns the call's final status.
  absl::Status Train(const v1::TrainRequest& request,
                     const std::function<void(const v1::TrainEvent&)>& on_event);
  // Cancels run `run_id`.
  absl::StatusOr<v1::CancelTrainResponse> Cancel(const std::string& run_id);

 private:
  explicit TrainClient(std::unique_ptr<common::GrpcChannel> channel)
      : channel_(std::move(channel)), stub_(v1::TrainService::NewStub(channel_->channel())) {}

  std::unique_ptr<common::GrpcChannel> channel_;
  std::unique_ptr<v1::TrainService::Stub> stub_;
};

}  // namespace roboloop::train
