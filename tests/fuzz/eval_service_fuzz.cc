// Fuzz target: EvalService's transport-free handler (eval/eval_service.h) and its promotion
// (eval/promotion.h) fed decoded request messages, as EvalGrpcService would. Input: one byte
// choosing the RPC (proto order, modulo kMethodCount), then that RPC's serialized request.
// The handler's parts are real and in this process: a registry served on a unix socket
// (model "fuzz-model": v1 the champion, v2 the latest, both with a manifest that fits
// cartpole-swingup), a SimService with the built-in tasks on another unix socket, a protocols
// directory holding "fuzz-gate" (cartpole-swingup, 8 episodes), and a leaderboard whose
// SQLite file is restored before every input to hold one completed evaluation of v1 and of v2
// under fuzz-gate. The SimService serves no checkpoints, so a rollout the handler starts fails
// on every shard and the evaluation is stored as failed; cached evaluations, leaderboards,
// comparisons and promotions run to their end. The handler's own endpoint is the SimService, so
// it dials nothing else: a request naming another endpoint is refused before any dial. Checkpoint ids are
// random, so a comparison's candidate or baseline "v1" or "v2" stands for that checkpoint's id.
// After a promotion the champion alias is put back on v1.
// Promote first checks protocol_name as EvalGrpcService does. Beyond crashes and sanitizer
// reports it checks: an evaluation or a GetProtocol whose protocol_name is a file path is refused
// (InvalidArgument); a successful evaluation named no endpoint but the SimService and is
// completed with one result per episode of its protocol; a leaderboard holds at most `top` rows;
// a protocol GetProtocol reports comes with its own hash. The target calls every RPC of
// EvalService: one it does not know stops it at setup.
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <google/protobuf/descriptor.h>
#include <nlohmann/json.hpp>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/grpc_server.h"
#include "eval/eval_service.h"
#include "eval/promotion.h"
#include "registry/registry_client.h"
#include "registry/registry_host.h"
#include "sim/builtin_tasks.h"
#include "sim/sim_grpc_service.h"
#include "sim/sim_service.h"
#include "tests/eval/test_evaluations.h"
#include "tests/fuzz/fuzz_support.h"

namespace {

using roboloop::fuzz::CheckContract;
using roboloop::fuzz::Dispatch;
using roboloop::fuzz::RequireOk;

namespace fs = std::filesystem;
namespace v1 = roboloop::v1;
namespace eval = roboloop::eval;

constexpr char kModel[] = "fuzz-model";
constexpr char kTask[] = "cartpole-swingup";
constexpr char kProtocol[] = "fuzz-gate";
// RPCs of EvalService, in proto order; the first input byte modulo this picks one.
constexpr uint8_t kMethodCount = 5;

template <typename T>
T Required(absl::StatusOr<T> value, const char* what) {
  RequireOk(value.status(), what);
  return std::move(*value);
}

std::string Scratch(const std::string& name) { return roboloop::fuzz::ScratchDir() + "/" + name; }

// A manifest of an MLP policy with the obs and action specs of `task`.
std::string ManifestFor(const v1::TaskInfo& task, const v1::BlobInfo& policy) {
  nlohmann::json obs = {{"names", nlohmann::json::array()}, {"shapes", nlohmann::json::array()}};
  for (const v1::ObsKey& key : task.obs_keys()) {
    obs["names"].push_back(key.name());
    obs["shapes"].push_back(std::vector<int>(key.shape().begin(), key.shape().end()));
  }
  return nlohmann::json{{"format_version", 1},
                        {"model", kModel},
                        {"policy", {{"kind", "mlp"}, {"options", {{"hidden", {8}}}}}},
                        {"obs_spec", obs},
                        {"action_spec", {{"names", {"action"}}, {"shapes", {{task.action_low_size()}}}}},
                        {"normalization", nlohmann::json::object()},
                        {"action_chunk", {{"horizon", 1}}},
                        {"dataset_id", ""},
                        {"parent_id", ""},
                        {"step", 1},
                        {"metrics", nlohmann::json::object()},
                        {"provenance", nlohmann::json::object()},
                        {"blobs", {{"policy", {{"sha256", policy.sha256()}, {"size", policy.size()}}}}}}
      .dump();
}

// Everything the handler talks to, started once.
struct Fixture {
  roboloop::sim::TaskRegistry tasks;
  std::unique_ptr<roboloop::sim::SimServiceHandler> sim;
  std::unique_ptr<roboloop::sim::SimGrpcService> sim_service;
  std::unique_ptr<roboloop::common::GrpcServer> sim_server;
  std::unique_ptr<roboloop::registry::RegistryHost> registry_host;
  std::unique_ptr<roboloop::registry::RegistryClient> registry;
  std::string endpoint;           // the SimService's address
  std::string checkpoint_ids[2];  // v1, v2
};

void StartSim(Fixture& f) {
  roboloop::sim::BuiltinTaskOptions builtin;
  builtin.models_dir = ROBOLOOP_SOURCE_DIR "/configs/tasks/models";
  RequireOk(roboloop::sim::RegisterBuiltins(&f.tasks, builtin), "registering the built-in tasks");
  roboloop::sim::SimServiceHandler::Options options;
  options.registry = &f.tasks;
  options.max_envs = 4;
  options.max_threads = 2;
  f.sim = Required(roboloop::sim::SimServiceHandler::Create(options), "creating the sim handler");
  f.sim_service =
      std::make_unique<roboloop::sim::SimGrpcService>(f.sim.get(), roboloop::sim::SimGrpcService::Options());
  roboloop::common::GrpcServerOptions server;
  server.listen_address = "unix:" + Scratch("sim.sock");
  server.shutdown_deadline = absl::ZeroDuration();
  f.sim_server = Required(roboloop::common::GrpcServer::Create(server, {f.sim_service.get()}), "serving the sim");
  f.endpoint = f.sim_server->target();
}

void StartRegistry(Fixture& f, const v1::TaskInfo& task) {
  roboloop::registry::RegistryHost::Options host;
  host.registry.root = Scratch("registry");
  host.registry.durable_commits = false;
  host.server.listen_address = "unix:" + Scratch("registry.sock");
  f.registry_host = Required(roboloop::registry::RegistryHost::Create(host), "serving the registry");
  roboloop::common::GrpcChannelOptions channel;
  channel.target = f.registry_host->target();
  f.registry = Required(roboloop::registry::RegistryClient::Connect(channel), "connecting to the registry");
  roboloop::registry::Registry& registry = f.registry_host->registry();
  for (int version = 1; version <= 2; ++version) {
    const v1::BlobInfo policy = Required(registry.PutBlob("fuzz policy weights v" + std::to_string(version)), "a blob");
    v1::RegisterCheckpointRequest checkpoint;
    checkpoint.set_model(kModel);
    checkpoint.set_manifest_json(ManifestFor(task, policy));
    f.checkpoint_ids[version - 1] = Required(registry.RegisterCheckpoint(checkpoint), "a checkpoint").id();
  }
}

std::string ProtocolsDir() { return Scratch("protocols"); }
std::string StoreTemplate() { return Scratch("store-template"); }
std::string StoreRoot() { return Scratch("store"); }

// fuzz-gate as the handler resolves it (pinned to the task's definition).
v1::Protocol WriteProtocol(const v1::TaskInfo& task) {
  fs::create_directories(ProtocolsDir());
  std::ofstream(ProtocolsDir() + "/" + kProtocol + ".yaml")
      << "task: " << kTask << "\nbase_seed: 3\nseed_start: 1000\nepisodes: 8\nmax_steps: 20\n"
      << "execution: {chunk: {mode: FULL_CHUNK}}\n";
  v1::Protocol protocol = Required(eval::LoadProtocol(kProtocol, ProtocolsDir()), "loading fuzz-gate");
  RequireOk(eval::PinTaskDefinition(task.definition_hash(), &protocol), "pinning fuzz-gate");
  return protocol;
}

void SeedStore(const Fixture& f, const v1::Protocol& protocol) {
  eval::LeaderboardStore::Options options;
  options.root = StoreTemplate();
  std::unique_ptr<eval::LeaderboardStore> store = Required(eval::LeaderboardStore::Create(options), "the store");
  for (int version = 1; version <= 2; ++version) {
    RequireOk(store->Store(eval::testing::MakeEvaluation(protocol, f.checkpoint_ids[version - 1], kModel, version,
                                                         /*successes=*/2 + 4 * (version - 1), /*return_offset=*/version,
                                                         /*created_unix_us=*/1000 * version)),
              "storing a seed evaluation");
  }
}

const Fixture& Started() {
  static const Fixture* const kFixture = [] {
    const int served = v1::GetProtocolRequest::descriptor()->file()->FindServiceByName("EvalService")->method_count();
    RequireOk(served == kMethodCount ? absl::OkStatus()
                                     : absl::FailedPreconditionError(absl::StrCat(
                                           "EvalService has ", served, " RPCs, the target calls ", int{kMethodCount})),
              "every RPC fuzzed");
    auto* f = new Fixture();
    StartSim(*f);
    const v1::ListTasksResponse listed = Required(f->sim->ListTasks(), "listing the tasks");
    v1::TaskInfo task;
    for (const v1::TaskInfo& info : listed.tasks()) {
      if (info.name() == kTask) task = info;
    }
    StartRegistry(*f, task);
    v1::PromoteRequest promote;
    promote.set_model(kModel);
    promote.set_ref(std::string(kModel) + ":v1");
    promote.set_reason("seed");
    RequireOk(f->registry_host->registry().Promote(promote).status(), "promoting v1");
    SeedStore(*f, WriteProtocol(task));
    return f;
  }();
  return *kFixture;
}

std::unique_ptr<eval::LeaderboardStore> FreshStore() {
  fs::remove_all(StoreRoot());
  fs::copy(StoreTemplate(), StoreRoot(), fs::copy_options::recursive);
  eval::LeaderboardStore::Options options;
  options.root = StoreRoot();
  return Required(eval::LeaderboardStore::Create(options), "reopening the store");
}

std::unique_ptr<eval::EvalServiceHandler> MakeHandler(eval::LeaderboardStore* store) {
  const Fixture& f = Started();
  eval::EvalServiceHandler::Options options;
  options.store = store;
  options.registry = f.registry.get();
  options.protocols_dir = ProtocolsDir();
  options.default_sim_endpoints = {f.endpoint};
  options.shards_per_endpoint = 2;
  options.envs = 2;
  return Required(eval::EvalServiceHandler::Create(options), "creating the handler");
}

void Evaluate(const eval::EvalServiceHandler& handler, const v1::EvaluateRequest& request) {
  const absl::StatusOr<v1::Evaluation> evaluation = handler.Evaluate(
      request, "fuzz", [](const v1::EvaluateProgress&) { return absl::OkStatus(); }, nullptr);
  CheckContract(!request.has_protocol_name() || !eval::IsProtocolPath(request.protocol_name()) ||
                    evaluation.status().code() == absl::StatusCode::kInvalidArgument,
                "Evaluate did not refuse a protocol_name that is a file path");
  if (!evaluation.ok()) return;
  for (const std::string& endpoint : request.sim_endpoints()) {
    CheckContract(endpoint == Started().endpoint, "Evaluate dialed an endpoint the handler was not given: " + endpoint);
  }
  CheckContract(evaluation->status() == v1::EVALUATION_COMPLETED,
                "Evaluate returned an evaluation that is not completed");
  CheckContract(evaluation->episodes_size() == evaluation->protocol().episodes(),
                "Evaluate returned an evaluation without one result per episode");
}

void Leaderboard(const eval::EvalServiceHandler& handler, const v1::LeaderboardRequest& request) {
  const absl::StatusOr<v1::LeaderboardResponse> top = handler.Leaderboard(request);
  if (!top.ok()) return;
  CheckContract(top->evaluations_size() <= (request.top() == 0 ? 10 : request.top()),
                "a leaderboard holds more than top rows");
}

void Promote(const eval::EvalServiceHandler& handler, const v1::PromoteCandidateRequest& request) {
  if (request.has_protocol_name() && !eval::CheckServedProtocolName(request.protocol_name()).ok()) return;
  absl::StatusOr<eval::PromotionRequest> promotion =
      eval::PromotionRequestFrom(request, handler.protocols_dir(), Scratch("dataset-cache"));
  if (!promotion.ok()) return;
  promotion->requested_by = "fuzz";
  eval::PromoteIfBetter(handler, *Started().registry, *promotion).IgnoreError();
  const absl::StatusOr<v1::Checkpoint> champion =
      Started().registry->GetCheckpoint(std::string(kModel) + "@" + eval::kChampionAlias);
  if (champion.ok() && champion->id() == Started().checkpoint_ids[0]) return;
  v1::PromoteRequest restore;
  restore.set_model(kModel);
  restore.set_ref(std::string(kModel) + ":v1");
  restore.set_reason("fuzz: restore the champion");
  RequireOk(Started().registry_host->registry().Promote(restore).status(), "restoring the champion");
}

// Checkpoint ids are random, so a comparison names the seeded checkpoints "v1" and "v2".
void Compare(const eval::EvalServiceHandler& handler, v1::CompareRequest request) {
  for (std::string* ref : {request.mutable_candidate(), request.mutable_baseline()}) {
    if (*ref == "v1" || *ref == "v2") *ref = Started().checkpoint_ids[*ref == "v1" ? 0 : 1];
  }
  handler.Compare(request).IgnoreError();
}

void GetProtocol(const eval::EvalServiceHandler& handler, const v1::GetProtocolRequest& request) {
  const absl::StatusOr<v1::ProtocolInfo> info = handler.GetProtocol(request.protocol_name());
  CheckContract(
      !eval::IsProtocolPath(request.protocol_name()) || info.status().code() == absl::StatusCode::kInvalidArgument,
      "GetProtocol did not refuse a protocol_name that is a file path");
  if (!info.ok()) return;
  CheckContract(info->protocol_hash() == eval::ProtocolHash(info->protocol()),
                "GetProtocol reported a hash that is not its protocol's");
}


void Call(const eval::EvalServiceHandler& handler, uint8_t method, const std::string& bytes) {
  switch (method) {
    case 0:
      return Dispatch<v1::EvaluateRequest>(bytes, [&](const v1::EvaluateRequest& q) { Evaluate(handler, q); });
    case 1:
      return Dispatch<v1::LeaderboardRequest>(bytes, [&](const v1::LeaderboardRequest& q) { Leaderboard(handler, q); });
    case 2:
      return Dispatch<v1::CompareRequest>(bytes, [&](v1::CompareRequest q) { Compare(handler, std::move(q)); });
    case 3:
      return Dispatch<v1::PromoteCandidateRequest>(bytes,
                                                   [&](const v1::PromoteCandidateRequest& q) { Promote(handler, q); });
    case 4:
      return Dispatch<v1::GetProtocolRequest>(bytes, [&](const v1::GetProtocolRequest& q) { GetProtocol(handler, q); });
    default:
      return;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  Started();
  std::unique_ptr<eval::LeaderboardStore> store = FreshStore();
  std::unique_ptr<eval::EvalServiceHandler> handler = MakeHandler(store.get());
  Call(*handler, data[0] % kMethodCount, std::string(reinterpret_cast<const char*>(data + 1), size - 1));
  return 0;
}
