// Collectives on host memory for data-parallel training on CPUs, on Gloo (docs/training.md,
// "CPU collectives"). Debian's libgloo runs them, loaded in isolation from the Gloo copy that
// LibTorch carries inside libtorch_cpu.so: the two are different Gloo versions with the same
// symbol names, and the wheel ships no Gloo headers to build LibTorch's own backend against.
// Torch-free and absl-free: libroboloop_gloo.so links only Gloo and the C++ runtime.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace roboloop::train {

// The key-value store the ranks of one job meet through (the caller's c10d TCPStore).
// Called only from the thread that connects.
class RendezvousStore {
 public:
  virtual ~RendezvousStore() = default;
  // Stores `value` under `key` for every rank to read.
  virtual void Set(const std::string& key, const std::vector<char>& value) = 0;
  // The value under `key`, waiting for it up to the store's timeout; throws when it never comes.
  virtual std::vector<char> Get(const std::string& key) = 0;
  // Returns once every key exists; throws after `timeout`.
  virtual void Wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) = 0;
};

// Where this rank is and how the others reach it.
struct CpuCollectivesOptions {
  int rank = 0;                           // this rank, 0..size-1
  int size = 1;                           // ranks in the job
  std::string hostname;                   // address this rank listens on (empty: the host's name)
  std::string interface;                  // network interface to listen on; wins over hostname
  std::chrono::milliseconds timeout{30000};  // connection and per-collective timeout
};

// Collectives among the ranks of one job on host memory. Calls come from one thread, in the same
// order on every rank; each throws std::runtime_error naming the operation when a peer fails or
// the timeout passes.
class CpuCollectives {
 public:
  virtual ~CpuCollectives() = default;
  // Sums `count` floats over the ranks in place (every rank gets the same bits).
  virtual void AllReduceSum(float* data, size_t count) = 0;
  // Sums `count` doubles over the ranks in place (every rank gets the same bits).
  virtual void AllReduceSum(double* data, size_t count) = 0;
  // Overwrites `bytes` bytes at `data` with rank `root`'s.
  virtual void Broadcast(void* data, size_t bytes, int root) = 0;
  // The shared object whose Gloo code these collectives run (the isolation check: Debian's
  // libgloo.so, never libtorch_cpu.so).
  virtual std::string GlooLibraryPath() const = 0;
};

// Loads libroboloop_gloo.so (from the folder of the binary that calls this, or its ../lib) with
// its own symbol scope and connects this rank to the others through `store`. Throws std::runtime_error naming
// the library when it cannot be loaded, or the ranks when they do not connect in time.
std::unique_ptr<CpuCollectives> ConnectCpuCollectives(const CpuCollectivesOptions& options,
                                                      RendezvousStore& store);

}  // namespace roboloop::train

// The one entry point of libroboloop_gloo.so: a connected CpuCollectives, or null with `*error`
// set. Resolved with dlsym by ConnectCpuCollectives.
extern "C" roboloop::train::CpuCollectives* roboloop_gloo_connect(
    const roboloop::train::CpuCollectivesOptions* options,
    roboloop::train::RendezvousStore* store, std::string* error);
