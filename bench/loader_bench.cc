#include "bench/loader_bench.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "bench/bench_stats.h"
#include "common/status.h"
#include "data/dataset_writer.h"
#include "data/episode_cache.h"
#include "train/loader.h"

extern char** environ;

namespace roboloop::bench {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kObsDim = 16, kActionDim = 7;
const char* const kCameras[] = {"front", "wrist"};

// A cheap deterministic generator for frame noise.
struct XorShift {
  uint64_t state;
  uint64_t Next() {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
  }
};

// Frames that compress like renders: a smooth gradient, three squares moving with t, and a
// sparse one-level noise (deflate keeps about a third of the bytes, as of simple renders).
data::Array Frames(int camera, int episode, int steps, int side) {
  std::vector<uint8_t> values(static_cast<size_t>(steps) * side * side * 3);
  XorShift noise{0x9e3779b97f4a7c15ULL + static_cast<uint64_t>(episode * 2 + camera)};
  constexpr int kSquare = 12;
  for (int t = 0; t < steps; ++t) {
    uint8_t* frame = values.data() + static_cast<size_t>(t) * side * side * 3;
    for (int y = 0; y < side; ++y) {
      for (int x = 0; x < side; ++x) {
        for (int k = 0; k < 3; ++k) {
          const int base = (x * 2 + y + k * 40 + camera * 60 + episode * 5) & 0xff;
          frame[(y * side + x) * 3 + k] = static_cast<uint8_t>(base / 2 + ((noise.Next() & 7) == 0));
        }
      }
    }
    for (int s = 0; s < 3; ++s) {
      const int top = (t + s * 30 + episode) % (side - kSquare), left = (2 * t + s * 25) % (side - kSquare);
      for (int y = top; y < top + kSquare; ++y) {
        for (int x = left; x < left + kSquare; ++x) frame[(y * side + x) * 3 + s] = 250;
      }
    }
  }
  return data::Array::From<uint8_t>({steps, side, side, 3}, values);
}

absl::Status WriteImageDataset(const LoaderBenchOptions& o, const std::string& path) {
  data::DatasetWriter::Options options;
  options.path = path;
  options.overwrite = true;
  options.env_args_json = R"({"env_name":"loader-bench"})";
  ROBOLOOP_ASSIGN_OR_RETURN(auto writer, data::DatasetWriter::Create(options));
  XorShift rng{7};
  for (int e = 0; e < o.episodes; ++e) {
    std::vector<float> obs(static_cast<size_t>(o.steps) * kObsDim), actions(static_cast<size_t>(o.steps) * kActionDim);
    for (float& v : obs) v = static_cast<float>(rng.Next() % 2000) / 1000.0f - 1.0f;
    for (float& v : actions) v = static_cast<float>(rng.Next() % 2000) / 1000.0f - 1.0f;
    data::Episode episode;
    episode["obs/state"] = data::Array::From<float>({o.steps, kObsDim}, obs);
    episode["actions"] = data::Array::From<float>({o.steps, kActionDim}, actions);
    for (int c = 0; c < 2; ++c) episode[absl::StrCat("obs/", kCameras[c], "_image")] = Frames(c, e, o.steps, o.side);
    ROBOLOOP_RETURN_IF_ERROR(writer->WriteEpisode(episode).status());
  }
  return writer->Close();
}

// Rss and Pss (kB) of one process, from /proc/<pid>/smaps_rollup; zeros once it is gone.
std::pair<int64_t, int64_t> ProcessMemoryKb(int pid) {
  std::ifstream rollup(absl::StrCat("/proc/", pid, "/smaps_rollup"));
  int64_t rss = 0, pss = 0;
  for (std::string line; std::getline(rollup, line);) {
    std::istringstream fields(line);
    std::string key;
    int64_t kb = 0;
    fields >> key >> kb;
    if (key == "Rss:") rss = kb;
    if (key == "Pss:") pss = kb;
  }
  return {rss, pss};
}

// `pid` and its descendants (through every thread's children list).
std::vector<int> ProcessTree(int pid) {
  std::vector<int> tree = {pid};
  for (size_t i = 0; i < tree.size(); ++i) {
    std::error_code error;
    for (const auto& task : std::filesystem::directory_iterator(absl::StrCat("/proc/", tree[i], "/task"), error)) {
      std::ifstream children(task.path() / "children");
      for (int child; children >> child;) tree.push_back(child);
    }
  }
  return tree;
}

// What a measured run printed and the peaks of its process tree's memory.
struct MeasuredRun {
  std::string out;
  double peak_rss_mb = 0;  // the largest sum of the tree's RSS (shared pages counted in each)
                           // sampled, or at least the largest process's (wait4's ru_maxrss)
  double peak_pss_mb = 0;  // the largest sum of the tree's PSS (shared pages split among them)
};

// Runs `command` through /bin/sh with stdout into `out_path`, sampling the memory of its
// process tree every 100 ms (reading smaps_rollup of big processes costs; at 20 ms the sampler
// took a sixth of a core). Internal when it cannot start or fails.
absl::StatusOr<MeasuredRun> RunMeasured(const std::string& command, const std::string& out_path) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  const std::string exec_command = "exec " + command;
  const char* argv[] = {"/bin/sh", "-c", exec_command.c_str(), nullptr};
  pid_t pid = 0;
  const int spawned = posix_spawn(&pid, "/bin/sh", &actions, nullptr, const_cast<char* const*>(argv), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) return absl::InternalError(absl::StrCat("cannot start ", command));
  MeasuredRun run;
  int status = 0;
  rusage usage{};
  while (wait4(pid, &status, WNOHANG, &usage) == 0) {
    int64_t rss = 0, pss = 0;
    for (int member : ProcessTree(pid)) {
      const auto [member_rss, member_pss] = ProcessMemoryKb(member);
      rss += member_rss;
      pss += member_pss;
    }
    run.peak_rss_mb = std::max(run.peak_rss_mb, static_cast<double>(rss) / 1024);
    run.peak_pss_mb = std::max(run.peak_pss_mb, static_cast<double>(pss) / 1024);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  // A run shorter than a sampling period: at least the largest RSS of one of its processes.
  run.peak_rss_mb = std::max(run.peak_rss_mb, static_cast<double>(usage.ru_maxrss) / 1024);
  std::ifstream out(out_path);
  run.out.assign(std::istreambuf_iterator<char>(out), std::istreambuf_iterator<char>());
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return absl::InternalError(absl::StrCat("`", command, "` failed: ", run.out));
  }
  return run;
}

// The last line of a run's output as JSON with samples_per_s.
absl::StatusOr<nlohmann::json> Figures(const std::string& out) {
  std::string text = out;
  while (!text.empty() && text.back() == '\n') text.pop_back();
  const nlohmann::json line = nlohmann::json::parse(text.substr(text.rfind('\n') + 1), nullptr, false);
  if (!line.is_object() || !line.contains("samples_per_s")) {
    return absl::InternalError(absl::StrCat("the run printed no figures: ", out));
  }
  return line;
}

std::string Quote(const std::string& text) { return "'" + text + "'"; }

std::string SelfPath() {
  std::error_code error;
  return std::filesystem::read_symlink("/proc/self/exe", error).string();
}

// "median (min-max)" with `decimals` decimals, `suffix` after the median.
std::string Range(const Summary& s, int decimals, const char* suffix = "") {
  return absl::StrFormat("%.*f%s (%.*f-%.*f)", decimals, s.median, suffix, decimals, s.min, decimals, s.max);
}

// One side's figures over the runs.
struct Side {
  std::vector<double> rate, rss, pss;
  void Add(double samples_per_s, const MeasuredRun& run) {
    rate.push_back(samples_per_s);
    rss.push_back(run.peak_rss_mb);
    pss.push_back(run.peak_pss_mb);
  }
};

absl::Status CompareCameras(const LoaderBenchOptions& o, const std::string& dataset, const std::string& cameras,
                            const std::string& dir) {
  const std::string common = absl::StrCat(" --dataset ", Quote(dataset), " --cameras ", cameras, " --batch ", o.batch,
                                          " --workers ", o.workers, " --warmup ", o.warmup, " --batches ", o.batches);
  const std::string ours_command =
      absl::StrCat(Quote(SelfPath()), " --our-side --cache-mb ", o.cache_mb, common);
  const std::string peer_command = absl::StrCat(Quote(o.python), " ", Quote(o.peer_script), common);
  Side ours, peer;
  std::vector<double> ratio;
  std::string peer_versions;
  for (int run = 0; run < o.runs; ++run) {
    ROBOLOOP_ASSIGN_OR_RETURN(MeasuredRun our_run, RunMeasured(ours_command, dir + "/ours.out"));
    ROBOLOOP_ASSIGN_OR_RETURN(nlohmann::json our_figures, Figures(our_run.out));
    ROBOLOOP_ASSIGN_OR_RETURN(MeasuredRun peer_run, RunMeasured(peer_command, dir + "/peer.out"));
    ROBOLOOP_ASSIGN_OR_RETURN(nlohmann::json peer_figures, Figures(peer_run.out));
    ours.Add(our_figures["samples_per_s"].get<double>(), our_run);
    peer.Add(peer_figures["samples_per_s"].get<double>(), peer_run);
    ratio.push_back(ours.rate.back() / peer.rate.back());
    peer_versions = absl::StrCat("torch ", peer_figures.value("torch", "?"), ", h5py ", peer_figures.value("h5py", "?"),
                                 ", ", peer_figures.value("torch_threads", 0), " torch threads in the main process");
    std::printf("[%s] run %d: ours %.0f samples/s (peak RSS %.0f MB, PSS %.0f MB; %d episodes read), peer %.0f "
                "samples/s (peak RSS %.0f MB, PSS %.0f MB)\n",
                cameras.c_str(), run + 1, ours.rate.back(), our_run.peak_rss_mb, our_run.peak_pss_mb,
                our_figures.value("episodes_read", 0), peer.rate.back(), peer_run.peak_rss_mb, peer_run.peak_pss_mb);
    std::fflush(stdout);
  }
  const Summary r = Summarize(ratio);
  std::printf("result [%s]: ours %s samples/s, peak RSS %s MB (PSS %s MB); peer %s samples/s, peak RSS %s MB "
              "(PSS %s MB; %s); ratio %s (goal >= 2x: %s)\n",
              cameras.c_str(), Range(Summarize(ours.rate), 0).c_str(),
              Range(Summarize(ours.rss), 0).c_str(), Range(Summarize(ours.pss), 0).c_str(),
              Range(Summarize(peer.rate), 0).c_str(), Range(Summarize(peer.rss), 0).c_str(),
              Range(Summarize(peer.pss), 0).c_str(), peer_versions.c_str(),
              Range(r, 2, "x").c_str(), r.median >= 2 ? "met" : "NOT met");
  return absl::OkStatus();
}

}  // namespace

absl::Status RunOurLoaderSide(const LoaderBenchOptions& o, const LoaderSideOptions& side) {
  train::LoaderOptions options;
  options.obs_features = {"obs/state"};
  for (absl::string_view camera : absl::StrSplit(side.cameras, ',')) {
    options.image_features.push_back(absl::StrCat("obs/", camera, "_image"));
  }
  options.history = o.history;
  options.chunk = o.chunk;
  options.batch_size = o.batch;
  options.num_workers = o.workers;
  options.prefetch = 2 * o.workers;  // PyTorch's DataLoader: prefetch_factor 2 per worker
  data::EpisodeCache::Options cache_options;
  cache_options.episodes.path = side.dataset;
  cache_options.episodes.features = options.obs_features;
  cache_options.episodes.features.push_back(options.action_feature);
  for (const std::string& image : options.image_features) cache_options.episodes.features.push_back(image);
  cache_options.capacity_bytes = static_cast<int64_t>(o.cache_mb * (1 << 20));
  ROBOLOOP_ASSIGN_OR_RETURN(std::unique_ptr<data::EpisodeCache> opened, data::EpisodeCache::Open(cache_options));
  std::shared_ptr<data::EpisodeCache> cache = std::move(opened);
  // Identity statistics: the arithmetic of normalisation without a pass over the data.
  train::Normalization norm{std::vector<float>(kObsDim, 0), std::vector<float>(kObsDim, 1),
                            std::vector<float>(kActionDim, 0), std::vector<float>(kActionDim, 1)};
  ROBOLOOP_ASSIGN_OR_RETURN(auto loader, train::Loader::CreateStreaming(cache, norm, options));
  for (int b = 0; b < o.warmup; ++b) ROBOLOOP_RETURN_IF_ERROR(loader->Next().status());
  const Clock::time_point start = Clock::now();
  for (int b = 0; b < o.batches; ++b) ROBOLOOP_RETURN_IF_ERROR(loader->Next().status());
  const double seconds = SecondsSince(start);
  const nlohmann::json figures = {{"samples_per_s", static_cast<double>(o.batch) * o.batches / seconds},
                                  {"seconds", seconds},
                                  {"episodes_read", cache->counters().episodes_read}};
  std::printf("%s\n", figures.dump().c_str());
  return absl::OkStatus();
}

absl::Status RunLoaderBench(const LoaderBenchOptions& options) {
  LoaderBenchOptions o = options;
  if (o.python.empty()) o.python = DefaultPeerPython();
  if (o.peer_script.empty()) o.peer_script = ROBOLOOP_LOADER_PEER_SCRIPT;
  ROBOLOOP_ASSIGN_OR_RETURN(const std::string dir, MakeScratchDir(o.work_dir, "loader-bench"));
  std::string dataset = o.dataset;
  if (dataset.empty()) {
    dataset = dir + "/images.hdf5";
    const Clock::time_point start = Clock::now();
    ROBOLOOP_RETURN_IF_ERROR(WriteImageDataset(o, dataset));
    std::printf("wrote %s in %.1f s\n", dataset.c_str(), SecondsSince(start));
  }
  const double raw_mb = static_cast<double>(o.episodes) * o.steps * (2.0 * o.side * o.side * 3 + 4.0 * (kObsDim + kActionDim)) / (1 << 20);
  std::printf("loader bench: %d episodes x %d steps, cameras %dx%d (one frame per chunk, deflate), file %.0f MB "
              "(%.0f MB raw for two cameras); history %d, chunk %d, batch %d, %d workers each side (ours: threads, "
              "streaming through a %.0f MB episode cache, prefetch %d; peer: DataLoader processes, shuffle, "
              "prefetch_factor 2), %d warm-up + %d timed batches, %d alternating runs\n%s",
              o.episodes, o.steps, o.side, o.side, static_cast<double>(std::filesystem::file_size(dataset)) / (1 << 20),
              raw_mb, o.history, o.chunk, o.batch, o.workers, o.cache_mb, 2 * o.workers, o.warmup, o.batches, o.runs,
              MachineSettings().c_str());
  for (const std::string cameras : {"front", "front,wrist"}) {
    ROBOLOOP_RETURN_IF_ERROR(CompareCameras(o, dataset, cameras, dir));
  }
  RemoveScratchDir(dir, o.work_dir);
  return absl::OkStatus();
}

}  // namespace roboloop::bench
