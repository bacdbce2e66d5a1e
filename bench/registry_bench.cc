#include "bench/registry_bench.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <random>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "bench/bench_stats.h"
#include "common/fs.h"
#include "common/grpc_client.h"
#include "common/status.h"
#include "registry/registry_client.h"
#include "registry/registry_host.h"

namespace roboloop::bench {
namespace {

using Clock = std::chrono::steady_clock;

absl::Status WriteRandomFile(const std::string& path, int mib) {
  std::ofstream out(path, std::ios::binary);
  std::mt19937_64 rng(42);
  std::vector<uint64_t> block((1 << 20) / sizeof(uint64_t));
  for (int i = 0; i < mib; ++i) {
    for (uint64_t& word : block) word = rng();
    out.write(reinterpret_cast<const char*>(block.data()), 1 << 20);
  }
  out.close();
  if (!out) return absl::InternalError(absl::StrCat("cannot write ", path));
  return absl::OkStatus();
}

// The anchor: copy, fsync the copy, hash it; returns seconds.
absl::StatusOr<double> TimeAnchor(const std::string& source, const std::string& dest) {
  std::string command = absl::StrCat("cp '", source, "' '", dest, "' && sync '", dest,
                                     "' && sha256sum '", dest, "' > /dev/null");
  auto start = Clock::now();
  if (std::system(command.c_str()) != 0) {
    return absl::InternalError(absl::StrCat("anchor command failed: ", command));
  }
  double seconds = SecondsSince(start);
  unlink(dest.c_str());
  return seconds;
}

// A client of its own channel, so that concurrent clients do not share one connection.
std::unique_ptr<registry::RegistryClient> MakeClient(const std::string& target) {
  common::GrpcChannelOptions options;
  options.target = target;
  return registry::RegistryClient::Connect(options).value();
}

std::string SeedManifest(int64_t step, const std::string& blob_sha, int64_t blob_size) {
  nlohmann::json manifest = {
      {"format_version", 1},
      {"model", "bench-model"},
      {"policy", {{"kind", "mlp"}, {"options", nlohmann::json::object()}}},
      {"obs_spec", {{"names", {"qpos"}}, {"shapes", {{4}}}}},
      {"action_spec", {{"names", {"force"}}, {"shapes", {{1}}}}},
      {"normalization", nlohmann::json::object()},
      {"action_chunk", {{"horizon", 1}, {"execution", "receding"}}},
      {"dataset_id", ""},
      {"parent_id", ""},
      {"step", step},
      {"metrics", nlohmann::json::object()},
      {"blobs", {{"policy", {{"sha256", blob_sha}, {"size", blob_size}}}}},
      {"provenance", nlohmann::json::object()},
  };
  return manifest.dump();
}

absl::Status RegisterOne(registry::RegistryClient& client, int64_t step, const v1::BlobInfo& blob) {
  v1::RegisterCheckpointRequest request;
  request.set_model("bench-model");
  request.set_manifest_json(SeedManifest(step, blob.sha256(), blob.size()));
  return client.RegisterCheckpoint(request).status();
}

struct TransferFigures {
  std::vector<double> upload_ratio, download_ratio, anchor_mib_s, upload_mib_s, download_mib_s;
};

absl::Status MeasureTransfers(const RegistryBenchOptions& options, const std::string& dir,
                              const std::string& target, TransferFigures* figures) {
  std::string file = dir + "/random.bin";
  ROBOLOOP_RETURN_IF_ERROR(WriteRandomFile(file, options.file_mib));
  ROBOLOOP_RETURN_IF_ERROR(TimeAnchor(file, dir + "/warm.bin").status());
  std::unique_ptr<registry::RegistryClient> client = MakeClient(target);
  const double mib = options.file_mib;
  for (int run = 0; run < options.runs; ++run) {
    ROBOLOOP_ASSIGN_OR_RETURN(double anchor_s, TimeAnchor(file, dir + "/anchor.bin"));
    auto start = Clock::now();
    ROBOLOOP_ASSIGN_OR_RETURN(v1::BlobInfo blob, client->UploadFile(file));
    double upload_s = SecondsSince(start);
    start = Clock::now();
    ROBOLOOP_RETURN_IF_ERROR(client->DownloadToFile(blob.sha256(), dir + "/download.bin"));
    double download_s = SecondsSince(start);
    unlink((dir + "/download.bin").c_str());
    v1::GcRequest gc;
    gc.set_apply(true);
    ROBOLOOP_RETURN_IF_ERROR(client->CollectGarbage(gc).status());
    figures->anchor_mib_s.push_back(mib / anchor_s);
    figures->upload_mib_s.push_back(mib / upload_s);
    figures->download_mib_s.push_back(mib / download_s);
    figures->upload_ratio.push_back(anchor_s / upload_s);
    figures->download_ratio.push_back(anchor_s / download_s);
    std::printf("run %d: anchor %.0f MiB/s, upload %.0f MiB/s, download %.0f MiB/s\n", run + 1,
                mib / anchor_s, mib / upload_s, mib / download_s);
  }
  unlink(file.c_str());
  return absl::OkStatus();
}

absl::Status SeedCatalog(const RegistryBenchOptions& options, const std::string& target,
                         const v1::BlobInfo& blob) {
  std::atomic<int64_t> next{0};
  std::atomic<bool> failed{false};
  std::vector<std::thread> workers;
  for (int w = 0; w < 4; ++w) {
    workers.emplace_back([&] {
      std::unique_ptr<registry::RegistryClient> client = MakeClient(target);
      for (int64_t step = next++; step < options.catalog_size && !failed; step = next++) {
        if (!RegisterOne(*client, step, blob).ok()) failed = true;
      }
    });
  }
  for (auto& w : workers) w.join();
  if (failed) return absl::InternalError("seeding the catalog failed");
  return absl::OkStatus();
}

void PrintLatency(const char* what, const std::vector<double>& ms) {
  std::printf("%s latency over gRPC: p50 %.3f ms, p99 %.3f ms (%zu calls; goal p99 < 5 ms)\n", what,
              Quantile(ms, 0.5), Quantile(ms, 0.99), ms.size());
}

absl::Status MeasureLatencies(const RegistryBenchOptions& options, const std::string& dir,
                              const std::string& target) {
  std::unique_ptr<registry::RegistryClient> client = MakeClient(target);
  std::string blob_file = dir + "/policy.bin";
  ROBOLOOP_RETURN_IF_ERROR(WriteRandomFile(blob_file, 1));
  ROBOLOOP_ASSIGN_OR_RETURN(v1::BlobInfo blob, client->UploadFile(blob_file));
  auto seed_start = Clock::now();
  ROBOLOOP_RETURN_IF_ERROR(SeedCatalog(options, target, blob));
  std::printf("seeded %d checkpoints in %.1f s\n", options.catalog_size, SecondsSince(seed_start));

  std::atomic<bool> stop{false};
  std::atomic<int64_t> step{options.catalog_size + 1000000};
  std::vector<std::thread> background;
  for (int c = 0; c < options.background_clients; ++c) {
    background.emplace_back([&] {
      std::unique_ptr<registry::RegistryClient> other = MakeClient(target);
      auto next = Clock::now();
      const auto period = options.background_rate > 0
                              ? std::chrono::duration_cast<Clock::duration>(
                                    std::chrono::duration<double>(1.0 / options.background_rate))
                              : Clock::duration::zero();
      while (!stop) {
        (void)RegisterOne(*other, step++, blob);
        next += period;
        std::this_thread::sleep_until(next);
      }
    });
  }
  std::vector<double> register_ms, list_ms;
  v1::ListCheckpointsRequest list;
  list.set_model("bench-model");
  list.set_limit(50);
  absl::Status status;
  for (int i = 0; i < options.latency_samples && status.ok(); ++i) {
    auto start = Clock::now();
    status = RegisterOne(*client, step++, blob);
    register_ms.push_back(1e3 * SecondsSince(start));
    start = Clock::now();
    if (status.ok()) status = client->ListCheckpoints(list).status();
    list_ms.push_back(1e3 * SecondsSince(start));
  }
  stop = true;
  for (auto& t : background) t.join();
  ROBOLOOP_RETURN_IF_ERROR(status);
  PrintLatency("register", register_ms);
  PrintLatency("list (limit 50)", list_ms);
  return absl::OkStatus();
}

void PrintRatio(const char* what, const std::vector<double>& ratios, const std::vector<double>& ours) {
  Summary r = Summarize(ratios);
  Summary o = Summarize(ours);
  std::printf("%s: %.0f MiB/s median; ratio to anchor %.2fx (min %.2f, max %.2f; goal >= 0.6x)\n",
              what, o.median, r.median, r.min, r.max);
}

}  // namespace

absl::Status RunRegistryBench(const RegistryBenchOptions& options) {
  ROBOLOOP_ASSIGN_OR_RETURN(const std::string dir, MakeScratchDir(options.work_dir, "roboloop-registry-bench"));
  std::printf(
      "registry benchmark: %d MiB file, %d alternating runs, catalog %d, %d background clients "
      "at %s, catalog commits %s\n%s",
      options.file_mib, options.runs, options.catalog_size, options.background_clients,
      options.background_rate > 0 ? absl::StrCat(options.background_rate, " registrations/s each").c_str()
                                  : "full speed",
      options.durable_commits ? "synchronous=FULL" : "synchronous=NORMAL", MachineSettings().c_str());
  registry::RegistryHost::Options host_options;
  host_options.registry.root = dir + "/store";
  host_options.registry.gc_grace = absl::ZeroDuration();  // the bench deletes its blob between runs
  host_options.registry.durable_commits = options.durable_commits;
  host_options.server.listen_address = "127.0.0.1:0";
  ROBOLOOP_ASSIGN_OR_RETURN(auto host, registry::RegistryHost::Create(host_options));

  TransferFigures figures;
  ROBOLOOP_RETURN_IF_ERROR(MeasureTransfers(options, dir, host->target(), &figures));
  std::printf("anchor (cp + fsync + sha256sum): %.0f MiB/s median\n",
              Summarize(figures.anchor_mib_s).median);
  PrintRatio("upload", figures.upload_ratio, figures.upload_mib_s);
  PrintRatio("download", figures.download_ratio, figures.download_mib_s);
  ROBOLOOP_RETURN_IF_ERROR(MeasureLatencies(options, dir, host->target()));
  host->Shutdown();
  RemoveScratchDir(dir, options.work_dir);
  return absl::OkStatus();
}

}  // namespace roboloop::bench
