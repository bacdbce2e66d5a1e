#include "bench/train_bench.h"

#include <arpa/inet.h>
#include <dlfcn.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <memory>
#include <random>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "bench/bench_stats.h"
#include "common/status.h"
#include "data/dataset_writer.h"
#include "data/episode_store.h"
#include "train/loader.h"
#include "train/normalization.h"
#include "train/torch_runtime.h"

extern char** environ;

namespace roboloop::bench {
namespace {

using Clock = std::chrono::steady_clock;

// A transformer policy's shape.
struct BenchShape {
  int obs_dim, action_dim, history, chunk, d_model, layers, heads, ffn;
};

// The CPU benchmark's model shape (issue 6, req 10), and the GPU one's (issue 22: 151 M
// parameters, 64 observation tokens + 50 action tokens).
constexpr BenchShape kSmallShape{16, 4, 8, 16, 128, 4, 4, 512};
constexpr BenchShape k151mShape{64, 14, 64, 50, 1024, 12, 16, 4096};
constexpr int kObsDim = kSmallShape.obs_dim, kActionDim = kSmallShape.action_dim;
constexpr int kHistory = kSmallShape.history, kChunk = kSmallShape.chunk;

// Model FLOPs of one training sample of `shape` (forward + backward = 3 x forward) with
// `obs_tokens` real observation tokens: every matmul of the embedding, the blocks and the head,
// and attention's QK^T and AV over all history + chunk slots. Norms, softmax and GELU are not
// counted.
double TrainingFlopsPerSample(const BenchShape& shape, int obs_tokens) {
  const double d = shape.d_model;
  const double tokens = obs_tokens + shape.chunk;
  const double block_macs_per_token = d * 3.0 * d + d * d + 2.0 * d * shape.ffn;
  const double slots = shape.history + shape.chunk;
  const double macs = obs_tokens * shape.obs_dim * d + tokens * shape.layers * block_macs_per_token +
                      shape.chunk * d * shape.action_dim + shape.layers * 2.0 * slots * slots * d;
  return 3.0 * 2.0 * macs;
}

// Threads of the OpenBLAS that LibTorch loaded (it keeps its own pool, sized by
// OPENBLAS_NUM_THREADS or else the core count, whatever torch's thread setting is); -1 when the
// BLAS is not OpenBLAS or not loaded yet.
int OpenBlasThreads() {
  void* blas = dlopen("libblas.so.3", RTLD_LAZY | RTLD_NOLOAD);
  if (blas == nullptr) return -1;
  using GetThreads = int (*)();
  const auto get = reinterpret_cast<GetThreads>(dlsym(blas, "openblas_get_num_threads"));
  const int threads = get == nullptr ? -1 : get();
  dlclose(blas);
  return threads;
}

// The run's settings that move the numbers, on one line; `blas_threads` is the OpenBLAS pool of
// the processes measured.
std::string SettingsLine(int threads, int blas_threads, const std::string& runtime_json) {
  std::string blas = "unknown";
  const nlohmann::json runtime = nlohmann::json::parse(runtime_json, nullptr, false);
  const std::string config = runtime.is_object() ? runtime.value("build_config", std::string()) : "";
  if (size_t at = config.find("BLAS_INFO="); at != std::string::npos) {
    blas = config.substr(at + 10, config.find_first_of(", \n", at + 10) - at - 10);
  }
  std::string settings = MachineSettings();
  const size_t cpu_end = settings.find('\n');
  return absl::StrCat("threads ", threads, " (OpenBLAS pool ",
                      blas_threads > 0 ? absl::StrCat(blas_threads) : std::string("unknown"), "); env ",
                      SettingVariables(), "; BLAS_INFO=", blas, "; ", settings.substr(0, cpu_end));
}

std::string Goal(bool met) { return met ? "met" : "NOT MET"; }

// a[i] / b[i] for every run.
std::vector<double> RatiosOf(const std::vector<double>& a, const std::vector<double>& b) {
  std::vector<double> ratios;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) ratios.push_back(a[i] / b[i]);
  return ratios;
}

std::string Range(const Summary& s, const char* format) {
  char text[128];
  std::snprintf(text, sizeof(text), format, s.median, s.min, s.max);
  return text;
}

// A batch held by this program, viewed through RoboloopTrainBatch.
struct OwnedBatch {
  std::vector<float> obs, actions;
  std::vector<int32_t> history_length;
  std::vector<uint8_t> action_valid;
  int batch = 0;
  BenchShape shape = kSmallShape;

  RoboloopTrainBatch View() const {
    return RoboloopTrainBatch{batch, shape.history, shape.chunk, shape.obs_dim, shape.action_dim, obs.data(),
                              history_length.data(), actions.data(), action_valid.data(),
                              /*image_bytes=*/0, /*images=*/nullptr};
  }
};

// Gaussian obs and actions, every action valid; history lengths drawn in [min_history, history].
OwnedBatch SyntheticBatch(const BenchShape& shape, int batch, int min_history, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  std::uniform_int_distribution<int32_t> length(min_history, shape.history);
  OwnedBatch b;
  b.batch = batch;
  b.shape = shape;
  b.obs.resize(static_cast<size_t>(batch) * shape.history * shape.obs_dim);
  b.actions.resize(static_cast<size_t>(batch) * shape.chunk * shape.action_dim);
  for (float& v : b.obs) v = normal(rng);
  for (float& v : b.actions) v = normal(rng);
  for (int i = 0; i < batch; ++i) b.history_length.push_back(length(rng));
  b.action_valid.assign(static_cast<size_t>(batch) * shape.chunk, 1);
  return b;
}

std::vector<OwnedBatch> SyntheticPool(int batch, int min_history, const BenchShape& shape = kSmallShape) {
  std::vector<OwnedBatch> pool;
  for (uint32_t i = 0; i < 4; ++i) pool.push_back(SyntheticBatch(shape, batch, min_history, i));
  return pool;
}

int64_t RealTokens(const OwnedBatch& b) {
  int64_t tokens = 0;
  for (int32_t h : b.history_length) tokens += h + kChunk;
  return tokens;
}

// Where a trainer runs, in which precision and whether its step is a CUDA graph (the CPU
// benchmark's: the CPU in float32, eager).
struct TrainerPlacement {
  std::string device = "cpu";
  std::string precision = "fp32";
  BenchShape shape = kSmallShape;
  bool cuda_graph = false;
};

nlohmann::json TrainerConfig(int threads, bool packed, int rank, int world, int port,
                             const TrainerPlacement& placement = {}) {
  const BenchShape& s = placement.shape;
  const nlohmann::json policy = {{"kind", "transformer"}, {"obs_dim", s.obs_dim}, {"action_dim", s.action_dim},
                                 {"history", s.history},  {"chunk", s.chunk},     {"d_model", s.d_model},
                                 {"layers", s.layers},    {"heads", s.heads},     {"ffn", s.ffn}};
  return {{"policy", policy},
          {"device", placement.device},
          {"precision", placement.precision},
          {"optimizer", {{"lr", 3e-4}, {"weight_decay", 0.01}, {"total_steps", 1000}, {"clip_norm", 1.0}}},
          {"packed", packed},
          {"cuda_graph", placement.cuda_graph},
          {"token_budget", 8192},
          {"seed", 0},
          {"threads", threads},
          {"distributed",
           {{"rank", rank}, {"world_size", world}, {"master_addr", "127.0.0.1"}, {"master_port", port},
            {"timeout_seconds", 60}}}};
}

absl::StatusOr<std::unique_ptr<train::TorchTrainer>> MakeTrainer(int threads, bool packed, int rank = 0,
                                                                 int world = 1, int port = 0,
                                                                 const TrainerPlacement& placement = {}) {
  ROBOLOOP_ASSIGN_OR_RETURN(const train::TorchRuntime* runtime, train::TorchRuntime::Load());
  return runtime->CreateTrainer(TrainerConfig(threads, packed, rank, world, port, placement).dump());
}

// Seconds of `steps` steps over `pool` (cycled; batches with View()) after `warmup` untimed ones.
template <typename Batch>
absl::StatusOr<double> TimeSteps(train::TorchTrainer& trainer, const std::vector<Batch>& pool,
                                 int warmup, int steps) {
  for (int s = 0; s < warmup; ++s) {
    ROBOLOOP_RETURN_IF_ERROR(trainer.Step(pool[s % pool.size()].View(), s).status());
  }
  const auto start = Clock::now();
  for (int s = warmup; s < warmup + steps; ++s) {
    ROBOLOOP_RETURN_IF_ERROR(trainer.Step(pool[s % pool.size()].View(), s).status());
  }
  return SecondsSince(start);
}

std::string Quote(const std::string& text) { return "'" + text + "'"; }

// Runs `command`, returns its stdout (stderr passes through). Internal on a failed exit.
absl::StatusOr<std::string> Capture(const std::string& command) {
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return absl::InternalError(absl::StrCat("cannot run ", command));
  std::string out;
  char buffer[4096];
  for (size_t n; (n = fread(buffer, 1, sizeof(buffer), pipe)) > 0;) out.append(buffer, n);
  const int status = pclose(pipe);
  if (status != 0) {
    return absl::InternalError(absl::StrCat("`", command, "` failed (",
                                            WIFEXITED(status) ? absl::StrCat("exit status ", WEXITSTATUS(status))
                                                              : std::string("killed by a signal"),
                                            ")"));
  }
  return out;
}

// The peer's figures of one run.
struct PeerRun {
  double samples_per_s = 0;
  double sgemm_gflops = 0;
  std::string torch_version;
  std::string openmp_env;  // the OMP_*/GOMP_* variables the peer was started with
};

// The `env -u ...` prefix that starts a peer without the OpenMP settings roboloop chose for its
// own LibTorch (TorchRuntime::VariablesChosenForOpenMp): the peer runs in the user's environment.
std::string InTheUsersEnvironment() {
  std::string prefix;
  for (const std::string& name : train::TorchRuntime::VariablesChosenForOpenMp()) {
    absl::StrAppend(&prefix, "env -u ", name, " ");
  }
  return prefix;
}

// How the peers' environment differs from the one printed: the variables they are started without.
std::string PeerEnvironment() {
  const std::vector<std::string> unset = train::TorchRuntime::VariablesChosenForOpenMp();
  if (unset.empty()) return "the same";
  return absl::StrCat("the same without ", absl::StrJoin(unset, ", "), " (roboloop's choice for its own LibTorch)");
}

// Runs `script` with `args` and the shared --threads --batch --steps --warmup flags; its last
// output line must be a JSON object with samples_per_s and every key of `required`.
absl::StatusOr<nlohmann::json> RunPeerScript(const TrainBenchOptions& o, const std::string& script,
                                             const std::string& args, int batch,
                                             const std::vector<std::string>& required) {
  const std::string command =
      absl::StrCat(InTheUsersEnvironment(), Quote(o.python), " ", Quote(script), " ", args, " --threads ",
                   o.threads, " --batch ", batch, " --steps ", o.steps, " --warmup ", o.warmup);
  ROBOLOOP_ASSIGN_OR_RETURN(std::string out, Capture(command));
  while (!out.empty() && out.back() == '\n') out.pop_back();
  const nlohmann::json line = nlohmann::json::parse(out.substr(out.rfind('\n') + 1), nullptr, false);
  bool complete = line.is_object() && line.contains("samples_per_s");
  for (const std::string& key : required) complete = complete && line.contains(key);
  if (!complete) return absl::InternalError(absl::StrCat("the peer printed no figures: ", out));
  return line;
}

absl::StatusOr<PeerRun> RunPeer(const TrainBenchOptions& o, const std::string& mode_args) {
  ROBOLOOP_ASSIGN_OR_RETURN(const nlohmann::json line,
                            RunPeerScript(o, o.peer_script, mode_args, o.batch, {"sgemm_gflops"}));
  return PeerRun{line["samples_per_s"].get<double>(), line["sgemm_gflops"].get<double>(),
                 line.value("torch", std::string()), line.value("openmp_env", std::string())};
}

absl::StatusOr<std::string> RuntimeJson() {
  ROBOLOOP_ASSIGN_OR_RETURN(const train::TorchRuntime* runtime, train::TorchRuntime::Load());
  return runtime->DescribeRuntime();
}

absl::Status PartModelStep(const TrainBenchOptions& o, const std::string& settings) {
  ROBOLOOP_ASSIGN_OR_RETURN(auto trainer, MakeTrainer(o.threads, /*packed=*/true));
  const std::vector<OwnedBatch> pool = SyntheticPool(o.batch, kHistory);
  std::vector<double> ours, peer, ratio, mfu, sgemm;
  const double flops = TrainingFlopsPerSample(kSmallShape, kHistory);
  std::string torch_version, peer_openmp_env;
  for (int run = 0; run < o.runs; ++run) {
    ROBOLOOP_ASSIGN_OR_RETURN(double seconds, TimeSteps(*trainer, pool, o.warmup, o.steps));
    ROBOLOOP_ASSIGN_OR_RETURN(PeerRun p, RunPeer(o, "--mode step"));
    peer_openmp_env = p.openmp_env;
    const double rate = static_cast<double>(o.batch) * o.steps / seconds;
    ours.push_back(rate);
    peer.push_back(p.samples_per_s);
    ratio.push_back(rate / p.samples_per_s);
    sgemm.push_back(p.sgemm_gflops);
    mfu.push_back(flops * rate / (p.sgemm_gflops * 1e9));
    torch_version = p.torch_version;
    std::printf("(a) run %d: ours %.1f samples/s, peer %.1f samples/s, sgemm %.1f GFLOP/s\n", run + 1, rate,
                p.samples_per_s, p.sgemm_gflops);
  }
  const Summary r = Summarize(ratio), u = Summarize(mfu);
  std::printf("result (a) model step: ours %s samples/s, peer %s samples/s (python torch %s, OpenMP variables: "
              "%s); ratio %s (goal >= 1.2x: %s); %s\n",
              Range(Summarize(ours), "%.1f (%.1f-%.1f)").c_str(), Range(Summarize(peer), "%.1f (%.1f-%.1f)").c_str(),
              torch_version.c_str(), peer_openmp_env.empty() ? "none" : peer_openmp_env.c_str(), Range(r, "%.2fx (%.2f-%.2f)").c_str(), Goal(r.median >= 1.2).c_str(),
              settings.c_str());
  std::printf("result (a) MFU: %s of sgemm %s GFLOP/s (peer's torch.mm 1024x1024, same threads), %.1f MFLOP "
              "per sample (goal >= 0.6: %s); %s\n",
              Range(u, "%.3f (%.3f-%.3f)").c_str(), Range(Summarize(sgemm), "%.1f (%.1f-%.1f)").c_str(),
              flops / 1e6, Goal(u.median >= 0.6).c_str(), settings.c_str());
  return absl::OkStatus();
}

// Episodes of random length in [min_length, max_length] with Gaussian obs/state and actions.
absl::Status WriteRandomDataset(const std::string& path, int episodes, int min_length, int max_length) {
  data::DatasetWriter::Options options;
  options.path = path;
  options.overwrite = true;
  options.env_args_json = R"({"env_name":"train-bench"})";
  ROBOLOOP_ASSIGN_OR_RETURN(auto writer, data::DatasetWriter::Create(options));
  std::mt19937 rng(7);
  std::normal_distribution<float> normal;
  std::uniform_int_distribution<int> length(min_length, max_length);
  for (int e = 0; e < episodes; ++e) {
    const int steps = length(rng);
    std::vector<float> obs(static_cast<size_t>(steps) * kObsDim), actions(static_cast<size_t>(steps) * kActionDim);
    for (float& v : obs) v = normal(rng);
    for (float& v : actions) v = normal(rng);
    data::Episode episode;
    episode["obs/state"] = data::Array::From<float>({steps, kObsDim}, obs);
    episode["actions"] = data::Array::From<float>({steps, kActionDim}, actions);
    ROBOLOOP_RETURN_IF_ERROR(writer->WriteEpisode(episode).status());
  }
  return writer->Close();
}

// Seconds of `steps` loader + step iterations after `warmup` untimed ones, with a fresh loader.
absl::StatusOr<double> TimeEndToEnd(const TrainBenchOptions& o, train::TorchTrainer& trainer,
                                    std::shared_ptr<const data::EpisodeStore> store,
                                    const train::Normalization& norm, int64_t first_step) {
  train::LoaderOptions options;
  options.obs_features = {"obs/state"};
  options.history = kHistory;
  options.chunk = kChunk;
  options.batch_size = o.batch;
  options.num_workers = 1;
  options.prefetch = 4;
  ROBOLOOP_ASSIGN_OR_RETURN(auto loader, train::Loader::Create(std::move(store), norm, options));
  Clock::time_point start = Clock::now();
  for (int s = 0; s < o.warmup + o.steps; ++s) {
    if (s == o.warmup) start = Clock::now();
    ROBOLOOP_ASSIGN_OR_RETURN(train::Batch batch, loader->Next());
    ROBOLOOP_RETURN_IF_ERROR(trainer.Step(train::BatchView(batch), first_step + s).status());
  }
  return SecondsSince(start);
}

absl::Status PartEndToEnd(const TrainBenchOptions& o, const std::string& dir, const std::string& settings) {
  const std::string path = dir + "/train-bench.hdf5";
  const int episodes = o.quick ? 20 : o.episodes;
  ROBOLOOP_RETURN_IF_ERROR(WriteRandomDataset(path, episodes, o.quick ? 20 : 50, o.quick ? 60 : 400));
  data::EpisodeStore::Options store_options;
  store_options.path = path;
  store_options.features = {"obs/state", "actions"};
  ROBOLOOP_ASSIGN_OR_RETURN(std::shared_ptr<const data::EpisodeStore> store,
                            data::EpisodeStore::Load(store_options));
  ROBOLOOP_ASSIGN_OR_RETURN(train::Normalization norm,
                            train::NormalizationFromStore(*store, {"obs/state"}, "actions"));
  ROBOLOOP_ASSIGN_OR_RETURN(auto trainer, MakeTrainer(o.threads, /*packed=*/true));
  std::vector<double> ours, peer, ratio;
  for (int run = 0; run < o.runs; ++run) {
    ROBOLOOP_ASSIGN_OR_RETURN(double seconds,
                              TimeEndToEnd(o, *trainer, store, norm, int64_t{run} * (o.warmup + o.steps)));
    ROBOLOOP_ASSIGN_OR_RETURN(PeerRun p, RunPeer(o, absl::StrCat("--mode e2e --workers 1 --dataset ", Quote(path))));
    const double rate = static_cast<double>(o.batch) * o.steps / seconds;
    ours.push_back(rate);
    peer.push_back(p.samples_per_s);
    ratio.push_back(rate / p.samples_per_s);
    std::printf("(b) run %d: ours %.1f samples/s, peer %.1f samples/s\n", run + 1, rate, p.samples_per_s);
  }
  const Summary r = Summarize(ratio);
  std::printf("result (b) end to end: %d episodes of %d-%d steps, %lld windows, 1 loader worker each side; ours "
              "%s samples/s, peer %s samples/s; ratio %s (goal >= 1.3x: %s); %s\n",
              episodes, o.quick ? 20 : 50, o.quick ? 60 : 400, static_cast<long long>(store->total_steps()),
              Range(Summarize(ours), "%.1f (%.1f-%.1f)").c_str(), Range(Summarize(peer), "%.1f (%.1f-%.1f)").c_str(),
              Range(r, "%.2fx (%.2f-%.2f)").c_str(), Goal(r.median >= 1.3).c_str(), settings.c_str());
  return absl::OkStatus();
}

absl::Status PartPackedVsPadded(const TrainBenchOptions& o, const std::string& settings) {
  constexpr int kMinHistory = kHistory / 4;
  const std::vector<OwnedBatch> pool = SyntheticPool(o.batch, kMinHistory);
  int64_t real = 0;
  for (const OwnedBatch& b : pool) real += RealTokens(b);
  const double real_per_step = static_cast<double>(real) / pool.size();
  const double padded_over_real = static_cast<double>(o.batch) * (kHistory + kChunk) / real_per_step;
  ROBOLOOP_ASSIGN_OR_RETURN(auto packed, MakeTrainer(o.threads, /*packed=*/true));
  ROBOLOOP_ASSIGN_OR_RETURN(auto padded, MakeTrainer(o.threads, /*packed=*/false));
  std::vector<double> packed_rate, padded_rate, ratio;
  for (int run = 0; run < o.runs; ++run) {
    ROBOLOOP_ASSIGN_OR_RETURN(double packed_s, TimeSteps(*packed, pool, o.warmup, o.steps));
    ROBOLOOP_ASSIGN_OR_RETURN(double padded_s, TimeSteps(*padded, pool, o.warmup, o.steps));
    packed_rate.push_back(real_per_step * o.steps / packed_s);
    padded_rate.push_back(real_per_step * o.steps / padded_s);
    ratio.push_back(padded_s / packed_s);
    std::printf("(c) run %d: packed %.0f real tokens/s, padded %.0f real tokens/s\n", run + 1,
                packed_rate.back(), padded_rate.back());
  }
  const Summary r = Summarize(ratio);
  const double goal = 0.8 * padded_over_real;
  std::printf("result (c) packed vs padded: history lengths %d-%d, padded/real tokens %.3f; packed %s real "
              "tokens/s, padded %s real tokens/s; packed/padded %s (goal >= 0.8 x %.3f = %.3f: %s); %s\n",
              kMinHistory, kHistory, padded_over_real, Range(Summarize(packed_rate), "%.0f (%.0f-%.0f)").c_str(),
              Range(Summarize(padded_rate), "%.0f (%.0f-%.0f)").c_str(), Range(r, "%.3fx (%.3f-%.3f)").c_str(),
              padded_over_real, goal, Goal(r.median >= goal).c_str(), settings.c_str());
  return absl::OkStatus();
}

// A TCP port on 127.0.0.1 that was free a moment ago.
absl::StatusOr<int> FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return absl::InternalError("cannot open a socket to find a free port");
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t size = sizeof(address);
  const bool ok = bind(fd, reinterpret_cast<sockaddr*>(&address), size) == 0 &&
                  getsockname(fd, reinterpret_cast<sockaddr*>(&address), &size) == 0;
  close(fd);
  if (!ok) return absl::InternalError("cannot bind a socket to find a free port");
  return ntohs(address.sin_port);
}

std::string SelfCommand(const TrainBenchOptions& o) {
  char path[4096];
  const ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);
  std::vector<std::string> quoted = {Quote(n > 0 ? std::string(path, n) : "/proc/self/exe")};
  for (const std::string& w : o.self_arguments) quoted.push_back(Quote(w));
  return absl::StrJoin(quoted, " ");
}

// Variables that make each rank one thread, for those the caller did not set: OpenBLAS would
// otherwise start a pool as wide as the machine in every rank.
std::string OneThreadPerRankEnvironment() {
  std::string env;
  for (const char* name : {"OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS"}) {
    if (std::getenv(name) == nullptr) absl::StrAppend(&env, env.empty() ? "" : " ", name, "=1");
  }
  return env;
}

// One `world`-rank job's figures.
struct DataParallelRun {
  double samples_per_s = 0;  // world x batch x steps / rank 0's timed seconds
  int blas_threads = -1;     // rank 0's OpenBLAS pool
};

absl::StatusOr<DataParallelRun> RunDataParallel(const TrainBenchOptions& o, int world) {
  ROBOLOOP_ASSIGN_OR_RETURN(int port, FreePort());
  std::vector<FILE*> ranks;
  for (int r = 0; r < world; ++r) {
    const std::string command =
        absl::StrCat(OneThreadPerRankEnvironment(), " ", SelfCommand(o), " --dp-rank ", r, " --dp-world ", world,
                     " --dp-port ", port, " --batch ", o.batch, " --steps ", o.steps, " --warmup ", o.warmup);
    FILE* pipe = popen(command.c_str(), "r");
    if (pipe == nullptr) return absl::InternalError(absl::StrCat("cannot run ", command));
    ranks.push_back(pipe);
  }
  std::vector<DataParallelRun> figures;
  bool failed = false;
  for (FILE* pipe : ranks) {
    double seconds = 0;
    int blas_threads = -1;
    failed |= fscanf(pipe, " dp_rank_seconds %lf blas_threads %d", &seconds, &blas_threads) != 2;
    figures.push_back({world * static_cast<double>(o.batch) * o.steps / seconds, blas_threads});
    failed |= pclose(pipe) != 0;
  }
  if (failed) return absl::InternalError(absl::StrCat("a rank of the ", world, "-rank job failed"));
  return figures[0];
}

absl::Status PartDataParallel(const TrainBenchOptions& o, const std::string& runtime_json) {
  std::vector<double> one, two, efficiency;
  int blas_threads = -1;
  for (int run = 0; run < o.runs; ++run) {
    ROBOLOOP_ASSIGN_OR_RETURN(DataParallelRun single, RunDataParallel(o, 1));
    ROBOLOOP_ASSIGN_OR_RETURN(DataParallelRun pair, RunDataParallel(o, 2));
    one.push_back(single.samples_per_s);
    two.push_back(pair.samples_per_s);
    efficiency.push_back(pair.samples_per_s / (2 * single.samples_per_s));
    blas_threads = pair.blas_threads;
    std::printf("(d) run %d: 1 rank %.1f samples/s, 2 ranks %.1f samples/s\n", run + 1, single.samples_per_s,
                pair.samples_per_s);
  }
  const Summary e = Summarize(efficiency);
  const std::string rank_env = OneThreadPerRankEnvironment();
  std::printf("result (d) data parallel: batch %d per rank, Gloo on loopback, ranks run with %s; "
              "1 rank x 1 thread %s samples/s, 2 ranks x 1 thread %s samples/s; efficiency %s (goal >= 0.9: %s); "
              "%s\n",
              o.batch, rank_env.empty() ? "the caller's variables" : rank_env.c_str(),
              Range(Summarize(one), "%.1f (%.1f-%.1f)").c_str(), Range(Summarize(two), "%.1f (%.1f-%.1f)").c_str(),
              Range(e, "%.3f (%.3f-%.3f)").c_str(), Goal(e.median >= 0.9).c_str(),
              SettingsLine(1, blas_threads, runtime_json).c_str());
  return absl::OkStatus();
}

// Part v (issue 23, req 8): the mlp policy with one camera, the image encoder at its defaults.
constexpr int kVisionObsDim = 9, kVisionActionDim = 7;

nlohmann::json VisionPolicy(int side) {
  return {{"kind", "mlp"},
          {"obs_dim", kVisionObsDim},
          {"action_dim", kVisionActionDim},
          {"history", 1},
          {"chunk", 1},
          {"hidden", {256, 256}},
          {"activation", "relu"},
          {"cameras", {{{"name", "agentview"}, {"width", side}, {"height", side}}}},
          {"encoder_channels", 32},
          {"encoder_blocks", 2},
          {"keypoints", 32}};
}

// A synthetic batch of the vision policy: Gaussian state and actions, uniform random frames.
struct VisionBatch {
  std::vector<float> obs, actions;
  std::vector<int32_t> history_length;
  std::vector<uint8_t> action_valid, images;
  int batch = 0, image_bytes = 0;

  VisionBatch(int n, int side, uint32_t seed) : batch(n), image_bytes(side * side * 3) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal;
    std::uniform_int_distribution<int> pixel(0, 255);
    obs.resize(static_cast<size_t>(n) * kVisionObsDim);
    actions.resize(static_cast<size_t>(n) * kVisionActionDim);
    images.resize(static_cast<size_t>(n) * image_bytes);
    for (float& v : obs) v = normal(rng);
    for (float& v : actions) v = normal(rng);
    for (uint8_t& v : images) v = static_cast<uint8_t>(pixel(rng));
    history_length.assign(n, 1);
    action_valid.assign(n, 1);
  }

  RoboloopTrainBatch View() const {
    return RoboloopTrainBatch{batch,        1,           1, kVisionObsDim, kVisionActionDim, obs.data(),
                              history_length.data(), actions.data(), action_valid.data(), image_bytes,
                              images.data()};
  }
};

absl::Status PartVision(const TrainBenchOptions& o, const std::string& settings) {
  const nlohmann::json policy = VisionPolicy(o.vision_side);
  const nlohmann::json config = {
      {"policy", policy},
      {"optimizer", {{"lr", 3e-4}, {"weight_decay", 0.01}, {"total_steps", 1000}, {"clip_norm", 1.0}}},
      {"seed", 0},
      {"threads", o.threads}};
  ROBOLOOP_ASSIGN_OR_RETURN(const train::TorchRuntime* runtime, train::TorchRuntime::Load());
  ROBOLOOP_ASSIGN_OR_RETURN(auto trainer, runtime->CreateTrainer(config.dump()));
  std::vector<VisionBatch> pool;
  for (uint32_t i = 0; i < 4; ++i) pool.emplace_back(o.vision_batch, o.vision_side, i);
  std::vector<double> ours, peer, ratio;
  std::string torch_version;
  for (int run = 0; run < o.runs; ++run) {
    ROBOLOOP_ASSIGN_OR_RETURN(double seconds, TimeSteps(*trainer, pool, o.warmup, o.steps));
    ROBOLOOP_ASSIGN_OR_RETURN(const nlohmann::json p,
                              RunPeerScript(o, o.vision_peer_script, "--options " + Quote(policy.dump()),
                                            o.vision_batch, {}));
    const double rate = static_cast<double>(o.vision_batch) * o.steps / seconds;
    ours.push_back(rate);
    peer.push_back(p["samples_per_s"].get<double>());
    ratio.push_back(rate / peer.back());
    torch_version = p.value("torch", std::string());
    std::printf("(v) run %d: ours %.1f samples/s, peer %.1f samples/s\n", run + 1, rate, peer.back());
    std::fflush(stdout);
  }
  const Summary r = Summarize(ratio);
  std::printf("result (v) image-policy step: mlp + 1 camera %dx%d (encoder 32 channels, 2 blocks, 32 keypoints; "
              "random shift 4 px), batch %d; ours %s samples/s, peer %s samples/s (python torch %s); ratio %s "
              "(goal >= 1.2x: %s); %s\n",
              o.vision_side, o.vision_side, o.vision_batch, Range(Summarize(ours), "%.1f (%.1f-%.1f)").c_str(),
              Range(Summarize(peer), "%.1f (%.1f-%.1f)").c_str(), torch_version.c_str(),
              Range(r, "%.2fx (%.2f-%.2f)").c_str(), Goal(r.median >= 1.2).c_str(), settings.c_str());
  return absl::OkStatus();
}

// Part g (issue 22, req 7): `--model`'s shape on CUDA, alternating in every run ours in bf16,
// ours in FP8 (where the GPU has it), ours packed and padded on observation-token counts drawn
// from U[history / 4, history], the eager bf16 peer and, for the 151 M model, its torch.compile;
// with --cuda-graph on, ours padded on full histories eager and as a CUDA graph.
struct GpuSides {
  std::unique_ptr<train::TorchTrainer> bf16, fp8, packed, padded, padded_eager, padded_graphed;
};

absl::StatusOr<GpuSides> MakeGpuSides(const TrainBenchOptions& o, const BenchShape& shape) {
  GpuSides sides;
  ROBOLOOP_ASSIGN_OR_RETURN(sides.bf16, MakeTrainer(o.threads, true, 0, 1, 0, {"cuda", "bf16", shape}));
  ROBOLOOP_ASSIGN_OR_RETURN(sides.packed, MakeTrainer(o.threads, true, 0, 1, 0, {"cuda", "bf16", shape}));
  ROBOLOOP_ASSIGN_OR_RETURN(sides.padded, MakeTrainer(o.threads, false, 0, 1, 0, {"cuda", "bf16", shape}));
  if (o.cuda_graph == "on") {
    ROBOLOOP_ASSIGN_OR_RETURN(sides.padded_eager, MakeTrainer(o.threads, false, 0, 1, 0, {"cuda", "bf16", shape}));
    ROBOLOOP_ASSIGN_OR_RETURN(sides.padded_graphed,
                              MakeTrainer(o.threads, false, 0, 1, 0, {"cuda", "bf16", shape, /*cuda_graph=*/true}));
  }
  absl::StatusOr<std::unique_ptr<train::TorchTrainer>> fp8 = MakeTrainer(o.threads, true, 0, 1, 0,
                                                                        {"cuda", "fp8", shape});
  if (fp8.ok()) {
    sides.fp8 = std::move(*fp8);
  } else {
    std::printf("(g) fp8 not measured: %s\n", std::string(fp8.status().message()).c_str());
  }
  return sides;
}

std::string PeerShapeArgs(const BenchShape& s) {
  return absl::StrCat("--mode step --device cuda --bf16 --obs-dim ", s.obs_dim, " --action-dim ", s.action_dim,
                      " --history ", s.history, " --chunk ", s.chunk, " --d-model ", s.d_model, " --layers ",
                      s.layers, " --heads ", s.heads, " --ffn ", s.ffn);
}

// Part (g)'s figures, one entry per run (fp8, compiled and the graphed pair only where they ran).
struct GpuSamples {
  std::vector<double> bf16, fp8, eager, compiled, packed_gain, mfu, padded_eager, padded_graphed;
};

// One run of part (g): each of our sides, then the peers, appended to `samples`.
absl::Status MeasureGpuRun(const TrainBenchOptions& o, const BenchShape& shape, GpuSides& sides,
                           const std::vector<OwnedBatch>& full, const std::vector<OwnedBatch>& varied,
                           GpuSamples& samples) {
  const bool large = o.model == "151m";
  const auto rate = [&o](double seconds) { return static_cast<double>(o.batch) * o.steps / seconds; };
  ROBOLOOP_ASSIGN_OR_RETURN(const double bf16_seconds, TimeSteps(*sides.bf16, full, o.warmup, o.steps));
  samples.bf16.push_back(rate(bf16_seconds));
  if (sides.fp8) {
    ROBOLOOP_ASSIGN_OR_RETURN(const double fp8_seconds, TimeSteps(*sides.fp8, full, o.warmup, o.steps));
    samples.fp8.push_back(rate(fp8_seconds));
  }
  ROBOLOOP_ASSIGN_OR_RETURN(const double packed_seconds, TimeSteps(*sides.packed, varied, o.warmup, o.steps));
  ROBOLOOP_ASSIGN_OR_RETURN(const double padded_seconds, TimeSteps(*sides.padded, varied, o.warmup, o.steps));
  samples.packed_gain.push_back(padded_seconds / packed_seconds);
  if (sides.padded_graphed) {
    // At least 4 untimed steps: a graphed trainer warms up for 3 and captures in the 4th.
    const int warmup = std::max(o.warmup, 4);
    ROBOLOOP_ASSIGN_OR_RETURN(const double eager_seconds, TimeSteps(*sides.padded_eager, full, warmup, o.steps));
    ROBOLOOP_ASSIGN_OR_RETURN(const double graphed_seconds, TimeSteps(*sides.padded_graphed, full, warmup, o.steps));
    samples.padded_eager.push_back(rate(eager_seconds));
    samples.padded_graphed.push_back(rate(graphed_seconds));
  }
  ROBOLOOP_ASSIGN_OR_RETURN(const nlohmann::json peer, RunPeerScript(o, o.peer_script, PeerShapeArgs(shape),
                                                                     o.batch, {"bf16_gemm_tflops"}));
  samples.eager.push_back(peer["samples_per_s"].get<double>());
  const double flops = TrainingFlopsPerSample(shape, shape.history);
  samples.mfu.push_back(flops * samples.bf16.back() / (peer["bf16_gemm_tflops"].get<double>() * 1e12));
  if (large) {
    ROBOLOOP_ASSIGN_OR_RETURN(const nlohmann::json peer_compiled,
                              RunPeerScript(o, o.peer_script, PeerShapeArgs(shape) + " --compile", o.batch, {}));
    samples.compiled.push_back(peer_compiled["samples_per_s"].get<double>());
  }
  return absl::OkStatus();
}

// Part (g)'s result lines: each figure's median with min-max and its goal.
void PrintGpuResults(const TrainBenchOptions& o, const BenchShape& shape, const GpuSamples& samples) {
  const bool large = o.model == "151m";
  const Summary ours = Summarize(samples.bf16), vs_eager = Summarize(RatiosOf(samples.bf16, samples.eager));
  std::printf("result (g) %s on CUDA: ours bf16 %s samples/s; vs the eager bf16 peer %s (goal >= %s: %s)\n",
              o.model.c_str(), Range(ours, "%.1f (%.1f-%.1f)").c_str(), Range(vs_eager, "%.2fx (%.2f-%.2f)").c_str(),
              large ? "1.45x" : "1.0x", Goal(vs_eager.median >= (large ? 1.45 : 1.0)).c_str());
  if (large) {
    const Summary vs_compiled = Summarize(RatiosOf(samples.bf16, samples.compiled));
    std::printf("result (g) vs the torch.compile bf16 peer %s (goal >= 1.0x: %s)\n",
                Range(vs_compiled, "%.2fx (%.2f-%.2f)").c_str(), Goal(vs_compiled.median >= 1.0).c_str());
  }
  if (!samples.fp8.empty()) {
    const Summary gain = Summarize(RatiosOf(samples.fp8, samples.bf16));
    std::printf("result (g) fp8 vs our bf16 %s (goal >= 1.3x: %s)\n", Range(gain, "%.2fx (%.2f-%.2f)").c_str(),
                Goal(gain.median >= 1.3).c_str());
  }
  if (!samples.padded_graphed.empty()) {
    const Summary graph_gain = Summarize(RatiosOf(samples.padded_graphed, samples.padded_eager));
    const Summary graphed_vs_peer = Summarize(RatiosOf(samples.padded_graphed, samples.eager));
    std::printf("result (g) %s padded bf16, full histories: CUDA graph %s samples/s vs eager %s samples/s: %s; "
                "graphed vs the eager bf16 peer %s (goal >= 1.0x: %s)\n",
                o.model.c_str(), Range(Summarize(samples.padded_graphed), "%.1f (%.1f-%.1f)").c_str(),
                Range(Summarize(samples.padded_eager), "%.1f (%.1f-%.1f)").c_str(),
                Range(graph_gain, "%.2fx (%.2f-%.2f)").c_str(), Range(graphed_vs_peer, "%.2fx (%.2f-%.2f)").c_str(),
                Goal(graphed_vs_peer.median >= 1.0).c_str());
  }
  const Summary packed = Summarize(samples.packed_gain), utilisation = Summarize(samples.mfu);
  std::printf("result (g) packed vs padded, observation tokens from U[%d,%d]: %s (goal >= 1.5x: %s)\n",
              shape.history / 4, shape.history, Range(packed, "%.2fx (%.2f-%.2f)").c_str(),
              Goal(packed.median >= 1.5).c_str());
  std::printf("result (g) MFU of ours bf16 over the peer's bf16 GEMM rate: %s (goal >= 0.45: %s)\n",
              Range(utilisation, "%.3f (%.3f-%.3f)").c_str(), Goal(utilisation.median >= 0.45).c_str());
}

absl::Status PartGpu(const TrainBenchOptions& o) {
  const BenchShape shape = o.model == "151m" ? k151mShape : kSmallShape;
  ROBOLOOP_ASSIGN_OR_RETURN(GpuSides sides, MakeGpuSides(o, shape));
  const std::vector<OwnedBatch> full = SyntheticPool(o.batch, shape.history, shape);
  const std::vector<OwnedBatch> varied = SyntheticPool(o.batch, shape.history / 4, shape);
  GpuSamples samples;
  for (int run = 0; run < o.runs; ++run) {
    ROBOLOOP_RETURN_IF_ERROR(MeasureGpuRun(o, shape, sides, full, varied, samples));
    std::printf("(g) run %d: ours bf16 %.1f, fp8 %.1f, peer eager %.1f, compiled %.1f samples/s; packed %.2fx "
                "padded; MFU %.3f\n", run + 1, samples.bf16.back(), samples.fp8.empty() ? 0.0 : samples.fp8.back(),
                samples.eager.back(), samples.compiled.empty() ? 0.0 : samples.compiled.back(),
                samples.packed_gain.back(), samples.mfu.back());
  }
  PrintGpuResults(o, shape, samples);
  return absl::OkStatus();
}

TrainBenchOptions Effective(TrainBenchOptions o) {
  if (o.quick) {
    o.runs = 1;
    o.batch = 32;
    o.vision_batch = 8;
    o.vision_side = 32;
    o.steps = 2;
    o.warmup = 1;
  }
  if (o.peer_script.empty()) o.peer_script = ROBOLOOP_TRAIN_PEER_SCRIPT;
  if (o.vision_peer_script.empty()) o.vision_peer_script = ROBOLOOP_VISION_TRAIN_PEER_SCRIPT;
  if (o.threads == 0) o.threads = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  return o;
}

}  // namespace

absl::Status RunTrainBench(const TrainBenchOptions& options) {
  const TrainBenchOptions o = Effective(options);
  if (o.device != "cpu" && o.device != "cuda") {
    return absl::InvalidArgumentError(absl::StrCat("--device '", o.device, "' is not one of cpu, cuda"));
  }
  if (o.model != "small" && o.model != "151m") {
    return absl::InvalidArgumentError(absl::StrCat("--model '", o.model, "' is not one of small, 151m"));
  }
  if (o.cuda_graph != "on" && o.cuda_graph != "off") {
    return absl::InvalidArgumentError(absl::StrCat("--cuda-graph '", o.cuda_graph, "' is not one of on, off"));
  }
  if (o.device == "cuda") {
    if (o.runs < 1 || o.steps < 1 || o.warmup < 0 || o.batch < 1) {
      return absl::InvalidArgumentError("--runs, --steps and --batch must be >= 1, --warmup >= 0");
    }
    std::printf("training benchmark on CUDA: %s transformer, batch %d, %d runs x (%d warm-up + %d timed steps), "
                "peer %s\n%s", o.model.c_str(), o.batch, o.runs, o.warmup, o.steps, o.peer_script.c_str(),
                MachineSettings().c_str());
    return PartGpu(o);
  }
  const bool all = o.part == "all";
  if (!all && o.part != "a" && o.part != "b" && o.part != "c" && o.part != "d" && o.part != "v") {
    return absl::InvalidArgumentError(absl::StrCat("--part '", o.part, "' is not one of a, b, c, d, v, all"));
  }
  if (o.runs < 1 || o.steps < 1 || o.warmup < 0 || o.batch < 1 || o.threads < 1 || o.vision_batch < 1 ||
      o.vision_side < 1 || o.vision_side > 2048) {
    return absl::InvalidArgumentError(
        "--runs, --steps, --batch, --vision-batch and --threads must be >= 1, --warmup >= 0, --vision-side in "
        "1..2048");
  }
  ROBOLOOP_ASSIGN_OR_RETURN(const std::string runtime_json, RuntimeJson());
  const std::string settings = SettingsLine(o.threads, OpenBlasThreads(), runtime_json);
  std::printf("training benchmark: transformer obs %d action %d history %d chunk %d d_model %d layers %d heads %d "
              "ffn %d, batch %d, %d runs x (%d warm-up + %d timed steps), peer %s\n%s",
              kObsDim, kActionDim, kHistory, kChunk, kSmallShape.d_model, kSmallShape.layers, kSmallShape.heads,
              kSmallShape.ffn, o.batch, o.runs, o.warmup,
              o.steps, o.peer_script.c_str(), MachineSettings().c_str());
  std::printf("peer environment: %s\n", PeerEnvironment().c_str());
  std::fflush(stdout);
  if (all || o.part == "a") ROBOLOOP_RETURN_IF_ERROR(PartModelStep(o, settings));
  if (all || o.part == "b") {
    ROBOLOOP_ASSIGN_OR_RETURN(const std::string dir, MakeScratchDir(o.work_dir, "roboloop-train-bench"));
    const absl::Status status = PartEndToEnd(o, dir, settings);
    RemoveScratchDir(dir, o.work_dir);
    ROBOLOOP_RETURN_IF_ERROR(status);
  }
  if (all || o.part == "c") ROBOLOOP_RETURN_IF_ERROR(PartPackedVsPadded(o, settings));
  if (all || o.part == "v") ROBOLOOP_RETURN_IF_ERROR(PartVision(o, settings));
  std::fflush(stdout);
  if (all || o.part == "d") ROBOLOOP_RETURN_IF_ERROR(PartDataParallel(o, runtime_json));
  return absl::OkStatus();
}

absl::Status RunTrainBenchRank(const TrainBenchOptions& options) {
  const TrainBenchOptions o = Effective(options);
  ROBOLOOP_ASSIGN_OR_RETURN(auto trainer, MakeTrainer(/*threads=*/1, /*packed=*/true, o.dp_rank, o.dp_world,
                                                      o.dp_port));
  const std::vector<OwnedBatch> pool = SyntheticPool(o.batch, kHistory);
  ROBOLOOP_ASSIGN_OR_RETURN(double seconds, TimeSteps(*trainer, pool, o.warmup, o.steps));
  std::printf("dp_rank_seconds %.6f blas_threads %d\n", seconds, OpenBlasThreads());
  return absl::OkStatus();
}

}  // namespace roboloop::bench
