// Fuzz target: SimService's transport-free handler (sim/sim_service.h) fed decoded request
// messages, as SimGrpcService would. Input: one byte choosing the RPC (proto order, modulo
// kMethodCount), then that RPC's serialized request. The handler serves the built-in tasks
// (real MuJoCo physics) with at most 4 envs and 2 threads, writes datasets under a dataset
// directory that is reset to one seed dataset ("seed.hdf5", two expert episodes of
// cartpole-swingup) before every input, and has no registry: checkpoint policies and
// register_as are refused. So that an input runs in milliseconds, the target lowers a request's
// num_episodes to at most kMaxEpisodes and its horizon to at most kMaxSteps (values below the
// caps, invalid ones included, reach the handler unchanged). Beyond crashes and sanitizer
// reports it checks the handler's contracts: a rollout that succeeds streams exactly one record
// per episode of its seed range, each inside the range; a collect that succeeds ran them all
// and left its file in the dataset directory.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <set>
#include <string>

#include "absl/status/status.h"
#include "sim/builtin_tasks.h"
#include "sim/sim_service.h"
#include "tests/fuzz/fuzz_support.h"

namespace {

using roboloop::fuzz::Dispatch;
using roboloop::fuzz::CheckContract;
using roboloop::fuzz::RequireOk;

namespace fs = std::filesystem;
using roboloop::sim::SimServiceHandler;
namespace v1 = roboloop::v1;

constexpr int64_t kMaxEpisodes = 4;
constexpr int32_t kMaxSteps = 64;
constexpr char kSeedDataset[] = "seed.hdf5";

std::string TemplateDir() { return roboloop::fuzz::ScratchDir() + "/template"; }
std::string DatasetDir() { return roboloop::fuzz::ScratchDir() + "/datasets"; }

// The built-in tasks, registered once.
const roboloop::sim::TaskRegistry& Tasks() {
  static const roboloop::sim::TaskRegistry* const kTasks = [] {
    auto* tasks = new roboloop::sim::TaskRegistry();
    roboloop::sim::BuiltinTaskOptions options;
    options.models_dir = ROBOLOOP_SOURCE_DIR "/configs/tasks/models";
    RequireOk(roboloop::sim::RegisterBuiltins(tasks, options), "registering the built-in tasks");
    return tasks;
  }();
  return *kTasks;
}

std::unique_ptr<SimServiceHandler> MakeHandler(const std::string& dataset_dir) {
  SimServiceHandler::Options options;
  options.registry = &Tasks();
  options.max_envs = 4;
  options.max_threads = 2;
  options.dataset_dir = dataset_dir;
  absl::StatusOr<std::unique_ptr<SimServiceHandler>> handler = SimServiceHandler::Create(options);
  RequireOk(handler.status(), "creating the handler");
  return std::move(*handler);
}

// The handler every input runs against; its dataset directory holds the template's seed
// dataset, written once by the handler itself.
SimServiceHandler& Handler() {
  static SimServiceHandler* const kHandler = [] {
    v1::CollectRequest seed;
    seed.set_output_path(kSeedDataset);
    v1::RolloutRequest& rollout = *seed.mutable_rollout();
    rollout.set_task("cartpole-swingup");
    rollout.set_policy("expert");
    rollout.set_num_episodes(2);
    rollout.set_max_steps(20);
    RequireOk(MakeHandler(TemplateDir())->Collect(seed, nullptr).status(), "collecting the seed dataset");
    return MakeHandler(DatasetDir()).release();
  }();
  return *kHandler;
}

void ResetDatasetDir() {
  fs::remove_all(DatasetDir());
  fs::copy(TemplateDir(), DatasetDir(), fs::copy_options::recursive);
}

// `request` with num_episodes and the horizon lowered to the target's caps.
void Bound(v1::RolloutRequest* request) {
  if (request->num_episodes() > kMaxEpisodes) request->set_num_episodes(kMaxEpisodes);
  if (request->max_steps() == 0 || request->max_steps() > kMaxSteps) request->set_max_steps(kMaxSteps);
}

void Rollout(v1::RolloutRequest request) {
  Bound(&request);
  std::set<int64_t> seen;
  bool in_range = true;
  const absl::Status status = Handler().Rollout(
      request,
      [&](const v1::EpisodeRecord& record) {
        const int64_t i = record.episode_index();
        in_range = in_range && i >= request.first_episode() && i - request.first_episode() < request.num_episodes();
        seen.insert(i);
        return absl::OkStatus();
      },
      nullptr);
  if (!status.ok()) return;
  CheckContract(in_range, "a rollout streamed an episode outside its seed range");
  CheckContract(static_cast<int64_t>(seen.size()) == request.num_episodes(),
                "a rollout that succeeded did not stream one record per episode");
}

void Collect(v1::CollectRequest request) {
  Bound(request.mutable_rollout());
  const absl::StatusOr<v1::DatasetWritten> written = Handler().Collect(request, nullptr);
  if (!written.ok()) return;
  CheckContract(written->episodes_run() == request.rollout().num_episodes(), "a collect did not run its seed range");
  CheckContract(fs::is_regular_file(fs::path(DatasetDir()) / request.output_path()),
                "a collect that succeeded left no file in the dataset directory");
}

// RPCs of SimService, in proto order; the first input byte modulo this picks one.
constexpr uint8_t kMethodCount = 4;

void Call(uint8_t method, const std::string& bytes) {
  switch (method) {
    case 0:
      Handler().ListTasks().IgnoreError();
      return;
    case 1:
      return Dispatch<v1::RolloutRequest>(bytes, Rollout);
    case 2:
      return Dispatch<v1::CollectRequest>(bytes, Collect);
    case 3:
      return Dispatch<v1::RelabelRequest>(bytes,
                                          [](const v1::RelabelRequest& q) { Handler().Relabel(q).IgnoreError(); });
    default:
      return;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  Handler();
  ResetDatasetDir();
  Call(data[0] % kMethodCount, std::string(reinterpret_cast<const char*>(data + 1), size - 1));
  return 0;
}
