// Soak (issue 25, req 4): for ROBOLOOP_SOAK_SECONDS (default 45, at most 600), concurrent
// registrations, downloads, alias moves and evaluations run against a served registry (a
// `roboloop serve registry` process on a unix socket) and an eval service, while the registry
// process is SIGKILLed and restarted at seeded random moments. Afterwards: `registry verify` is
// clean, every acknowledged registration is present with its version, each model's versions are
// 1..n without gaps or duplicates, the alias history chains and ends at the alias, every
// download returned the bytes uploaded, and every completed evaluation equals the first one bit
// for bit. Prints the operations done and the kills survived (docs/RELIABILITY.md).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/grpc_server.h"
#include "eval/eval_client.h"
#include "eval/eval_grpc_service.h"
#include "eval/eval_service.h"
#include "eval/leaderboard_store.h"
#include "registry/registry.h"
#include "registry/registry_client.h"
#include "sim/builtin_tasks.h"
#include "sim/sim_grpc_service.h"
#include "sim/sim_service.h"
#include "tests/registry/test_util.h"
#include "tests/util/served_process.h"
#include "tests/util/subprocess.h"
#include "tests/util/tiny_checkpoint.h"

namespace roboloop {
namespace {

using ::testing::HasSubstr;

constexpr const char* kModels[] = {"soak-a", "soak-b"};
constexpr char kAlias[] = "staging";

// How long the mixed load runs: ROBOLOOP_SOAK_SECONDS, default 45, bounded to [5, 600].
int SoakSeconds() {
  const char* text = std::getenv("ROBOLOOP_SOAK_SECONDS");
  const int seconds = text == nullptr ? 45 : std::atoi(text);
  return std::clamp(seconds, 5, 600);
}

// Counts of one kind of operation.
struct OperationCounts {
  std::atomic<int> attempted{0};
  std::atomic<int> acknowledged{0};

  std::string Describe(const char* name) const {
    return absl::StrCat(name, " ", acknowledged.load(), "/", attempted.load(), " acknowledged");
  }
};

// A registration the server acknowledged.
struct Acknowledged {
  std::string id;
  std::string model;
  int version = 0;
  std::string sha256;
  std::string content;
};

class SoakTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::MakeTempDir("soak");
    root_ = dir_ + "/store";
    testing::TinyCheckpointOptions tiny;
    tiny.root = root_;
    tiny.kind = "mlp";
    policy_ = testing::MakeTinyCheckpoint(tiny);
    ASSERT_FALSE(policy_.empty());
    registry_ = std::make_unique<testing::ServedProcess>(
        std::vector<std::string>{"serve", "registry", "--listen", "unix:" + dir_ + "/registry.sock", "--root", root_},
        dir_ + "/registry.sock", dir_);
    ASSERT_TRUE(registry_->ready());
    service_registry_ = Client();
    StartSimAndEval();
  }

  // A client of the served registry that retries through restarts.
  std::unique_ptr<registry::RegistryClient> Client() const {
    common::GrpcChannelOptions channel;
    channel.target = "unix:" + dir_ + "/registry.sock";
    channel.default_deadline = absl::Seconds(10);
    auto client = registry::RegistryClient::Connect(channel);
    EXPECT_TRUE(client.ok()) << client.status();
    return client.ok() ? *std::move(client) : nullptr;
  }

  // An in-process sim service and eval service whose registry client is the served registry.
  void StartSimAndEval() {
    sim::BuiltinTaskOptions builtin;
    builtin.models_dir = ROBOLOOP_SOURCE_DIR "/configs/tasks/models";
    ASSERT_TRUE(sim::RegisterBuiltins(&tasks_, builtin).ok());
    sim::SimServiceHandler::Options sim;
    sim.registry = &tasks_;
    sim.checkpoints = service_registry_.get();
    sim.checkpoint_cache_dir = dir_ + "/sim-cache";
    auto sim_handler = sim::SimServiceHandler::Create(sim);
    ASSERT_TRUE(sim_handler.ok()) << sim_handler.status();
    sim_ = *std::move(sim_handler);
    sim_service_ = std::make_unique<sim::SimGrpcService>(sim_.get(), sim::SimGrpcService::Options());
    common::GrpcServerOptions sim_server;
    sim_server.listen_address = "unix:" + dir_ + "/sim.sock";
    auto started_sim = common::GrpcServer::Create(sim_server, {sim_service_.get()});
    ASSERT_TRUE(started_sim.ok()) << started_sim.status();
    sim_server_ = *std::move(started_sim);

    eval::LeaderboardStore::Options store;
    store.root = dir_ + "/eval-store";
    auto opened = eval::LeaderboardStore::Create(store);
    ASSERT_TRUE(opened.ok()) << opened.status();
    leaderboard_ = *std::move(opened);
    ASSERT_EQ(std::system(("mkdir -p " + dir_ + "/protocols").c_str()), 0);
    std::ofstream(dir_ + "/protocols/soak.yaml")
        << "task: cartpole-swingup\nbase_seed: 5\nseed_start: 100\nepisodes: 8\nmax_steps: 30\n";
    eval::EvalServiceHandler::Options eval;
    eval.store = leaderboard_.get();
    eval.registry = service_registry_.get();
    eval.protocols_dir = dir_ + "/protocols";
    eval.default_sim_endpoints = {sim_server_->target()};
    eval.envs = 2;
    auto handler = eval::EvalServiceHandler::Create(eval);
    ASSERT_TRUE(handler.ok()) << handler.status();
    eval_ = *std::move(handler);
    eval_service_ = std::make_unique<eval::EvalGrpcService>(eval_.get(), eval::EvalGrpcService::Options());
    common::GrpcServerOptions eval_server;
    eval_server.listen_address = "unix:" + dir_ + "/eval.sock";
    auto started_eval = common::GrpcServer::Create(eval_server, {eval_service_.get()});
    ASSERT_TRUE(started_eval.ok()) << started_eval.status();
    eval_server_ = *std::move(started_eval);
  }

  // Uploads a new blob and registers a checkpoint of `model` over it until `stop_`.
  void Register(int worker) {
    auto client = Client();
    std::mt19937 random(100 + worker);
    for (int i = 0; !stop_.load(); ++i) {
      const std::string model = kModels[random() % 2];
      const std::string content = absl::StrCat("soak weights ", worker, " ", i, " ", random());
      const std::string path = absl::StrCat(dir_, "/blob-", worker, "-", i);
      std::ofstream(path) << content;
      ++registrations_.attempted;
      auto uploaded = client->UploadFile(path);
      if (!uploaded.ok()) continue;
      v1::RegisterCheckpointRequest request;
      request.set_manifest_json(
          registry::testing_util::MakeManifest(model, {{"policy", content}}, worker * 1000000 + i).dump());
      auto checkpoint = client->RegisterCheckpoint(request);
      if (!checkpoint.ok()) continue;
      ++registrations_.acknowledged;
      std::lock_guard<std::mutex> lock(mutex_);
      acknowledged_.push_back({checkpoint->id(), model, checkpoint->version(), uploaded->sha256(), content});
    }
  }

  // A random acknowledged registration (false when there is none yet).
  bool PickAcknowledged(std::mt19937& random, Acknowledged* picked) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (acknowledged_.empty()) return false;
    *picked = acknowledged_[random() % acknowledged_.size()];
    return true;
  }

  // Downloads acknowledged blobs and checks their bytes until `stop_`.
  void Download() {
    auto client = Client();
    std::mt19937 random(7);
    while (!stop_.load()) {
      Acknowledged target;
      if (!PickAcknowledged(random, &target)) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        continue;
      }
      ++downloads_.attempted;
      auto bytes = client->DownloadToString(target.sha256);
      if (!bytes.ok()) continue;
      ++downloads_.acknowledged;
      EXPECT_EQ(*bytes, target.content) << "blob " << target.sha256 << " came back changed";
    }
  }

  // Moves the staging alias of a model to acknowledged checkpoints until `stop_`.
  void MoveAliases() {
    auto client = Client();
    std::mt19937 random(11);
    while (!stop_.load()) {
      Acknowledged target;
      if (!PickAcknowledged(random, &target)) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        continue;
      }
      v1::SetAliasRequest request;
      request.set_model(target.model);
      request.set_alias(kAlias);
      request.set_ref(target.id);
      request.set_reason("soak");
      ++alias_moves_.attempted;
      if (client->SetAlias(request).ok()) ++alias_moves_.acknowledged;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }

  // Evaluates the trained policy (forced, so each run rolls out) until `stop_`.
  void Evaluate() {
    common::GrpcChannelOptions channel;
    channel.target = eval_server_->target();
    auto client = eval::EvalClient::Connect(channel);
    ASSERT_TRUE(client.ok()) << client.status();
    while (!stop_.load()) {
      v1::EvaluateRequest request;
      request.set_checkpoint_ref(policy_);
      request.set_protocol_name("soak");
      request.set_force(true);
      ++evaluations_.attempted;
      auto evaluation = (*client)->Evaluate(request, {}, absl::Seconds(60));
      if (!evaluation.ok()) continue;
      ++evaluations_.acknowledged;
      v1::Evaluation results;
      *results.mutable_episodes() = evaluation->episodes();
      *results.mutable_aggregates() = evaluation->aggregates();
      std::lock_guard<std::mutex> lock(mutex_);
      if (first_results_.empty()) first_results_ = results.SerializeAsString();
      EXPECT_EQ(results.SerializeAsString(), first_results_) << "evaluation " << evaluation->id() << " differs";
    }
  }

  // SIGKILLs and restarts the registry at random moments until `stop_`.
  void KillAndRestart() {
    std::mt19937 random(2026);
    std::uniform_int_distribution<int> pause_ms(1500, 4000), down_ms(0, 500);
    while (!stop_.load()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms(random)));
      if (stop_.load()) break;
      registry_->Stop(SIGKILL);
      ++kills_;
      std::this_thread::sleep_for(std::chrono::milliseconds(down_ms(random)));
      ASSERT_TRUE(registry_->Restart()) << "the registry did not come back after kill " << kills_.load();
    }
  }

  // Each model's versions are 1..n once each, and every acknowledged registration is there.
  void ExpectEveryAcknowledgedRegistrationWithoutGaps() {
    auto client = Client();
    std::map<std::string, int> version_of;
    for (const char* model : kModels) {
      v1::ListCheckpointsRequest request;
      request.set_model(model);
      request.set_limit(registry::kMaxListLimit);
      auto listed = client->ListCheckpoints(request);
      ASSERT_TRUE(listed.ok()) << listed.status();
      std::vector<int> versions;
      for (const v1::Checkpoint& c : listed->checkpoints()) {
        versions.push_back(c.version());
        version_of[c.id()] = c.version();
      }
      std::sort(versions.begin(), versions.end());
      for (size_t i = 0; i < versions.size(); ++i) {
        ASSERT_EQ(versions[i], static_cast<int>(i) + 1) << model << ": versions have a gap or a duplicate";
      }
    }
    for (const Acknowledged& a : acknowledged_) {
      ASSERT_EQ(version_of.count(a.id), 1u) << "acknowledged checkpoint " << a.id << " is missing";
      EXPECT_EQ(version_of[a.id], a.version) << a.id;
    }
  }

  // Each event moves the alias from where the previous one left it; the last names the alias's
  // current checkpoint.
  void ExpectAliasHistoriesEndAtTheAliases() {
    auto client = Client();
    for (const char* model : kModels) {
      v1::AliasHistoryRequest request;
      request.set_model(model);
      request.set_alias(kAlias);
      auto history = client->AliasHistory(request);
      ASSERT_TRUE(history.ok()) << history.status();
      if (history->events().empty()) continue;
      std::vector<v1::AliasEvent> events(history->events().begin(), history->events().end());
      std::sort(events.begin(), events.end(),
                [](const v1::AliasEvent& a, const v1::AliasEvent& b) { return a.time_unix_us() < b.time_unix_us(); });
      for (size_t i = 1; i < events.size(); ++i) {
        EXPECT_EQ(events[i].previous_id(), events[i - 1].checkpoint_id()) << model << " event " << i;
      }
      auto current = client->GetCheckpoint(absl::StrCat(model, "@", kAlias));
      ASSERT_TRUE(current.ok()) << current.status();
      EXPECT_EQ(current->id(), events.back().checkpoint_id()) << model;
    }
  }

  std::string dir_;
  std::string root_;
  std::string policy_;
  std::unique_ptr<testing::ServedProcess> registry_;
  std::unique_ptr<registry::RegistryClient> service_registry_;
  sim::TaskRegistry tasks_;
  std::unique_ptr<sim::SimServiceHandler> sim_;
  std::unique_ptr<sim::SimGrpcService> sim_service_;
  std::unique_ptr<common::GrpcServer> sim_server_;
  std::unique_ptr<eval::LeaderboardStore> leaderboard_;
  std::unique_ptr<eval::EvalServiceHandler> eval_;
  std::unique_ptr<eval::EvalGrpcService> eval_service_;
  std::unique_ptr<common::GrpcServer> eval_server_;

  std::atomic<bool> stop_{false};
  std::atomic<int> kills_{0};
  OperationCounts registrations_, downloads_, alias_moves_, evaluations_;
  std::mutex mutex_;
  std::vector<Acknowledged> acknowledged_;
  std::string first_results_;
};

TEST_F(SoakTest, MixedLoadSurvivesRegistryKillsWithoutLosingAcknowledgedWork) {
  const int seconds = SoakSeconds();
  std::vector<std::thread> workers;
  for (int worker = 0; worker < 2; ++worker) workers.emplace_back([this, worker] { Register(worker); });
  workers.emplace_back([this] { Download(); });
  workers.emplace_back([this] { MoveAliases(); });
  workers.emplace_back([this] { Evaluate(); });
  workers.emplace_back([this] { KillAndRestart(); });
  std::this_thread::sleep_for(std::chrono::seconds(seconds));
  stop_ = true;
  for (std::thread& worker : workers) worker.join();

  std::printf("soak: %d s, %d registry kills survived; %s; %s; %s; %s\n", seconds, kills_.load(),
              registrations_.Describe("registrations").c_str(), downloads_.Describe("downloads").c_str(),
              alias_moves_.Describe("alias moves").c_str(), evaluations_.Describe("evaluations").c_str());
  EXPECT_GE(kills_.load(), seconds / 5);
  EXPECT_GT(registrations_.acknowledged.load(), 0);
  EXPECT_GT(downloads_.acknowledged.load(), 0);
  EXPECT_GT(alias_moves_.acknowledged.load(), 0);
  EXPECT_GT(evaluations_.acknowledged.load(), 0);
  ExpectEveryAcknowledgedRegistrationWithoutGaps();
  ExpectAliasHistoriesEndAtTheAliases();

  const testing::ProgramResult stopped = registry_->Stop(SIGTERM);
  EXPECT_EQ(stopped.exit_code, 0) << stopped.err;
  const testing::ProgramResult verify =
      testing::RunProgram({testing::RoboloopBinary(), "registry", "verify", "--root", root_});
  EXPECT_EQ(verify.exit_code, 0) << verify.out << verify.err;
  EXPECT_THAT(verify.out, HasSubstr(": 0 problems"));
}

}  // namespace
}  // namespace roboloop
