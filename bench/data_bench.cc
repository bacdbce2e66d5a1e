#include "bench/data_bench.h"

#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <random>
#include <vector>

#include "absl/strings/str_cat.h"
#include "bench/bench_stats.h"
#include "common/fs.h"
#include "common/status.h"
#include "data/dataset_writer.h"
#include "data/episode_store.h"

namespace roboloop::bench {
namespace {

using Clock = std::chrono::steady_clock;

// The floats of one episode: obs then actions, drawn from a fixed seed.
struct EpisodeValues {
  std::vector<float> obs;
  std::vector<float> actions;
};

EpisodeValues MakeEpisode(const DataBenchOptions& o, int index) {
  std::mt19937 rng(static_cast<uint32_t>(index));
  std::normal_distribution<float> normal;
  EpisodeValues values;
  values.obs.resize(static_cast<size_t>(o.steps) * o.obs_dim);
  values.actions.resize(static_cast<size_t>(o.steps) * o.action_dim);
  for (float& v : values.obs) v = normal(rng);
  for (float& v : values.actions) v = normal(rng);
  return values;
}

absl::Status WriteDataset(const DataBenchOptions& o, const std::vector<EpisodeValues>& episodes,
                          const std::string& path) {
  data::DatasetWriter::Options options;
  options.path = path;
  options.overwrite = true;
  options.env_args_json = R"({"env_name":"data-bench"})";
  ROBOLOOP_ASSIGN_OR_RETURN(auto writer, data::DatasetWriter::Create(options));
  for (const EpisodeValues& e : episodes) {
    data::Episode episode;
    episode["obs/state"] = data::Array::From<float>({o.steps, o.obs_dim}, e.obs);
    episode["actions"] = data::Array::From<float>({o.steps, o.action_dim}, e.actions);
    ROBOLOOP_RETURN_IF_ERROR(writer->WriteEpisode(episode).status());
  }
  return writer->Close();
}

absl::Status LoadDataset(const std::string& path, int64_t expected_steps) {
  data::EpisodeStore::Options options;
  options.path = path;
  options.features = {"obs/state", "actions"};
  ROBOLOOP_ASSIGN_OR_RETURN(auto store, data::EpisodeStore::Load(options));
  if (store->total_steps() != expected_steps) {
    return absl::InternalError(absl::StrCat("loaded ", store->total_steps(), " steps, wrote ",
                                            expected_steps));
  }
  return absl::OkStatus();
}

absl::Status WriteRaw(const std::vector<EpisodeValues>& episodes, const std::string& path) {
  std::ofstream out(path, std::ios::binary);
  for (const EpisodeValues& e : episodes) {
    out.write(reinterpret_cast<const char*>(e.obs.data()), e.obs.size() * sizeof(float));
    out.write(reinterpret_cast<const char*>(e.actions.data()), e.actions.size() * sizeof(float));
  }
  out.close();
  if (!out) return absl::InternalError(absl::StrCat("cannot write ", path));
  return absl::OkStatus();
}

absl::StatusOr<double> TimeAnchor(const std::string& raw, const std::string& copy) {
  std::string command =
      absl::StrCat("cp '", raw, "' '", copy, "' && sha256sum '", copy, "' > /dev/null");
  auto start = Clock::now();
  if (std::system(command.c_str()) != 0) return absl::InternalError("anchor command failed");
  double seconds = SecondsSince(start);
  unlink(copy.c_str());
  return seconds;
}

void PrintSide(const char* what, const std::vector<double>& mb_s, const std::vector<double>& ratio) {
  Summary rate = Summarize(mb_s);
  Summary r = Summarize(ratio);
  std::printf("%s: %.0f MB/s median (min %.0f, max %.0f); ratio to anchor %.2fx (min %.2f, max %.2f)\n",
              what, rate.median, rate.min, rate.max, r.median, r.min, r.max);
}

}  // namespace

absl::Status RunDataBench(const DataBenchOptions& o) {
  ROBOLOOP_ASSIGN_OR_RETURN(const std::string dir, MakeScratchDir(o.work_dir, "roboloop-data-bench"));
  const double mb = static_cast<double>(o.episodes) * o.steps * (o.obs_dim + o.action_dim) * 4 / 1e6;
  std::printf("data benchmark: %d episodes x %d steps x (obs %d + action %d) float32 = %.1f MB, %d runs\n%s",
              o.episodes, o.steps, o.obs_dim, o.action_dim, mb, o.runs, MachineSettings().c_str());
  std::vector<EpisodeValues> episodes;
  for (int i = 0; i < o.episodes; ++i) episodes.push_back(MakeEpisode(o, i));
  const std::string raw = dir + "/raw.bin";
  const std::string hdf5 = dir + "/bench.hdf5";
  ROBOLOOP_RETURN_IF_ERROR(WriteRaw(episodes, raw));
  ROBOLOOP_RETURN_IF_ERROR(TimeAnchor(raw, dir + "/warm.bin").status());

  std::vector<double> anchor_mb_s, write_mb_s, load_mb_s, write_ratio, load_ratio;
  for (int run = 0; run < o.runs; ++run) {
    ROBOLOOP_ASSIGN_OR_RETURN(double anchor_s, TimeAnchor(raw, dir + "/copy.bin"));
    auto start = Clock::now();
    ROBOLOOP_RETURN_IF_ERROR(WriteDataset(o, episodes, hdf5));
    double write_s = SecondsSince(start);
    start = Clock::now();
    ROBOLOOP_RETURN_IF_ERROR(LoadDataset(hdf5, static_cast<int64_t>(o.episodes) * o.steps));
    double load_s = SecondsSince(start);
    anchor_mb_s.push_back(mb / anchor_s);
    write_mb_s.push_back(mb / write_s);
    load_mb_s.push_back(mb / load_s);
    write_ratio.push_back(anchor_s / write_s);
    load_ratio.push_back(anchor_s / load_s);
    std::printf("run %d: anchor %.0f MB/s, write %.0f MB/s, load %.0f MB/s\n", run + 1, mb / anchor_s,
                mb / write_s, mb / load_s);
  }
  Summary anchor = Summarize(anchor_mb_s);
  std::printf("anchor (cp + sha256sum of the raw bytes): %.0f MB/s median (min %.0f, max %.0f)\n",
              anchor.median, anchor.min, anchor.max);
  PrintSide("write (DatasetWriter, chunked; gzip where it saves >= 20%)", write_mb_s, write_ratio);
  PrintSide("load (EpisodeStore, validation on)", load_mb_s, load_ratio);
  std::printf("goal: load >= 0.5x the anchor\n");
  RemoveScratchDir(dir, o.work_dir);
  return absl::OkStatus();
}

}  // namespace roboloop::bench
