// Where everything lives under a store root (issue 27, req 3): the one definition of the store's
// paths, used by the registry, the leaderboard, training, the pipeline runner, the embedded
// services and every command. A root is a plain folder (default `.roboloop`).
#pragma once

#include <string>

namespace roboloop {

// Paths under one store root. Cheap to copy; computes paths, creates nothing.
class StoreLayout {
 public:
  explicit StoreLayout(std::string root) : root_(std::move(root)) {}

  const std::string& root() const { return root_; }
  std::string RegistryCatalog() const;             // <root>/catalog.db: the registry's SQLite catalog
  std::string RegistryBlobs() const;               // <root>/blobs: content-addressed blobs
  std::string Leaderboard() const;                 // <root>/eval/leaderboard.db
  std::string PipelineRuns() const;                // <root>/pipeline/runs.db: the run store
  std::string PipelineRunDir(const std::string& run_id) const;  // <root>/pipeline/runs/<run_id>
  std::string TrainingRunDir(const std::string& run_id) const;  // <root>/runs/<run_id>: logs of one training run
  std::string DatasetCache() const;                // <root>/cache/datasets: local copies of registry datasets
  std::string PolicyCache() const;                 // <root>/cache/policies: local copies of checkpoint blobs
  std::string ServiceDatasets() const;             // <root>/datasets: what an embedded sim service writes
  std::string Sockets() const;                     // <root>/run: unix sockets of embedded services
  // "unix:<root>/run/<service>-<pid>.sock": a socket private to this process.
  std::string EmbeddedSocket(const std::string& service) const;
  // True when `address` is a unix: address under Sockets(): a service some process embeds on this root.
  bool IsEmbeddedAddress(const std::string& address) const;
  // Removes the sockets under Sockets() that EmbeddedSocket named for a process that runs no
  // more (a runner killed by SIGKILL leaves them behind); returns how many it removed.
  int RemoveStaleSockets() const;

 private:
  std::string root_;
};

}  // namespace roboloop
