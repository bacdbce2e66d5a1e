// Fuzz target: TrainService's transport-free handler (train/train_service.h) fed decoded request
// messages, as TrainGrpcService would, and the `roboloop train` worker's reading of what the
// handler hands it. Input: one byte choosing the RPC (proto order, modulo kMethodCount), one
// byte giving the CUDA devices the node reports (modulo 9), then that RPC's serialized request.
// A Train call runs the handler through its checks, the rank placement, the run directory and
// the request file, and spawns the worker; the worker here is /bin/false, a worker that dies
// before training, so the handler's spawn, progress pipe, wait and failure report run too,
// in about a millisecond (real workers load LibTorch and train: the train tests run them).
// Then the target reads the request file back as the worker does (YAML into a TrainConfig) and
// applies the worker's torch-free checks (defaults, policy options, cuda_graph, device).
// The handler serves a dataset folder, as `serve train` does. Beyond crashes and sanitizer
// reports it checks: a Train call that reached the worker reports the worker's failure; the
// config the worker reads equals the config sent but for its dataset paths, which all lie inside
// the dataset folder (registry references unchanged).
#include <google/protobuf/util/field_comparator.h>
#include <google/protobuf/util/message_differencer.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "common/fs.h"
#include "common/config.h"
#include "tests/fuzz/fuzz_support.h"
#include "train/cuda_graph_rule.h"
#include "train/dataset_set.h"
#include "train/policy_spec_options.h"
#include "train/train_run.h"
#include "train/train_service.h"
#include "train/training_device.h"

namespace {

using roboloop::fuzz::CheckContract;

namespace fs = std::filesystem;
using roboloop::train::TrainServiceHandler;
namespace v1 = roboloop::v1;

std::string RunsRoot() { return roboloop::fuzz::ScratchDir() + "/root"; }
std::string DatasetDir() { return roboloop::fuzz::ScratchDir() + "/datasets"; }

TrainServiceHandler MakeHandler(int cuda_devices) {
  roboloop::train::TrainServiceOptions options;
  options.roboloop_binary = "/bin/false";
  options.root = RunsRoot();
  options.dataset_dir = DatasetDir();
  options.cuda_devices = [cuda_devices]() -> absl::StatusOr<int> { return cuda_devices; };
  return TrainServiceHandler(std::move(options));
}

// The request file the handler wrote (none when it refused the request first).
std::string WrittenRequestFile() {
  const fs::path runs = fs::path(RunsRoot()) / "runs";
  if (!fs::is_directory(runs)) return "";
  for (const fs::directory_entry& run : fs::directory_iterator(runs)) {
    const fs::path file = run.path() / "request.json";
    if (fs::is_regular_file(file)) return file.string();
  }
  return "";
}

// The dataset entries of `config`: dataset (when set), then datasets.
std::vector<std::string> DatasetEntries(const v1::TrainConfig& config) {
  std::vector<std::string> entries(config.datasets().begin(), config.datasets().end());
  if (!config.dataset().empty()) entries.insert(entries.begin(), config.dataset());
  return entries;
}

// The datasets the worker reads: the registry references as sent, every path inside the
// service's dataset folder.
void CheckDatasets(const v1::TrainConfig& read, const v1::TrainConfig& sent) {
  const std::vector<std::string> read_entries = DatasetEntries(read), sent_entries = DatasetEntries(sent);
  CheckContract(read_entries.size() == sent_entries.size(), "the worker reads another number of datasets");
  const std::string inside = DatasetDir() + "/";
  for (size_t i = 0; i < sent_entries.size(); ++i) {
    if (!roboloop::train::DatasetEntryIsPath(sent_entries[i])) {
      CheckContract(read_entries[i] == sent_entries[i], "a registry reference changed: " + read_entries[i]);
      continue;
    }
    CheckContract(absl::StartsWith(read_entries[i], inside) &&
                      roboloop::CheckSafeRelativePath(read_entries[i].substr(inside.size())).ok(),
                  "the worker reads a dataset outside the dataset folder: " + read_entries[i]);
  }
}

// How `read` differs from `sent` but for the datasets ("" when they hold the same values; NaN
// equals NaN, as a JSON round trip keeps it). Fields unknown to the schema are not compared: the
// request file keeps only known fields, as any proto3 reader would.
std::string ConfigDifferences(v1::TrainConfig read, v1::TrainConfig sent) {
  sent.DiscardUnknownFields();
  for (v1::TrainConfig* config : {&read, &sent}) {
    config->clear_dataset();
    config->clear_datasets();
  }
  google::protobuf::util::DefaultFieldComparator comparator;
  comparator.set_treat_nan_as_equal(true);
  google::protobuf::util::MessageDifferencer differencer;
  differencer.set_field_comparator(&comparator);
  std::string differences;
  differencer.ReportDifferencesToString(&differences);
  differencer.Compare(sent, read);
  return differences;
}

// The worker's reading of `path` and its torch-free checks of the config.
void ReadAsWorker(const std::string& path, const v1::TrainConfig& sent) {
  v1::TrainConfig read;
  const absl::Status parsed = roboloop::LoadYamlFile(path, &read);
  CheckContract(parsed.ok(), "the worker cannot read the request file: " + parsed.ToString());
  CheckDatasets(read, sent);
  const std::string differences = ConfigDifferences(read, sent);
  CheckContract(differences.empty(),
                "the worker reads another config than the one sent (sent -> read):\n" + differences);
  const v1::TrainConfig config = roboloop::train::WithDefaults(read);
  roboloop::train::PolicyOptionsFromSpec(config.policy(), /*obs_dim=*/6, /*action_dim=*/2).IgnoreError();
  const absl::StatusOr<std::optional<bool>> graph = roboloop::train::ParseCudaGraphOption(config.cuda_graph());
  if (graph.ok()) roboloop::train::UseCudaGraph(*graph, roboloop::train::CudaGraphSetup{}).IgnoreError();
  roboloop::train::ResolveTrainingDevice(config.device(), /*local_rank=*/0, /*cuda_devices=*/1).IgnoreError();
}

void Train(const v1::TrainRequest& request, int cuda_devices) {
  fs::remove_all(RunsRoot());
  TrainServiceHandler handler = MakeHandler(cuda_devices);
  const absl::Status status = handler.Train(
      request, [](const v1::TrainEvent&) { return absl::OkStatus(); }, nullptr);
  const std::string written = WrittenRequestFile();
  if (written.empty()) return;
  CheckContract(status.code() == absl::StatusCode::kAborted,
                "a run whose worker failed ended with " + status.ToString());
  ReadAsWorker(written, request.config());
}

// RPCs of TrainService, in proto order; the first input byte modulo this picks one.
constexpr uint8_t kMethodCount = 2;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const std::string bytes(reinterpret_cast<const char*>(data + 2), size - 2);
  const int cuda_devices = data[1] % 9;
  if (data[0] % kMethodCount == 0) {
    v1::TrainRequest request;
    if (request.ParseFromString(bytes)) Train(request, cuda_devices);
  } else {
    v1::CancelTrainRequest request;
    if (request.ParseFromString(bytes))
      CheckContract(!MakeHandler(cuda_devices).Cancel(request).cancelled(), "Cancel stopped a run that does not exist");
  }
  return 0;
}
