// ConnectCpuCollectives: loads libroboloop_gloo.so in a symbol scope of its own.
#include <dlfcn.h>

#include <stdexcept>
#include <string>

#include "common/runtime_library.h"
#include "common/sanitizer_build.h"
#include "train/gloo/cpu_collectives.h"

namespace roboloop::train {
namespace {

using ConnectFunction = decltype(&roboloop_gloo_connect);

// The folder of the binary this code is linked into (libroboloop_torch.so, or a test program).
std::string OwnFolder() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&ConnectCpuCollectives), &info) == 0 || info.dli_fname == nullptr) {
    return ".";
  }
  const std::string path = info.dli_fname;
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

// RTLD_DEEPBIND puts the library's own dependencies (Debian's libgloo.so) ahead of the process's
// global scope, where a binary linked with LibTorch has libtorch_cpu.so and its Gloo symbols;
// RTLD_LOCAL keeps Debian's Gloo out of every other library's scope. AddressSanitizer refuses
// RTLD_DEEPBIND, so an ASan build (scripts/sanitize.sh) loads without it: that is right where
// LibTorch is not in the global scope, as in roboloop's programs, which load it RTLD_LOCAL
// (train/torch_runtime.cc); test programs linked with LibTorch skip their Gloo tests there.
#if defined(ROBOLOOP_ADDRESS_SANITIZER)
constexpr int kOwnScope = RTLD_LOCAL;
#else
constexpr int kOwnScope = RTLD_LOCAL | RTLD_DEEPBIND;
#endif

// Loaded once per process; looked for beside the binary, then in ../lib (where the build puts
// libraries).
ConnectFunction LoadConnect() {
  static ConnectFunction connect = [] () -> ConnectFunction {
    const absl::StatusOr<LibraryEntry> entry =
        OpenLibraryEntry(LibraryCandidates(OwnFolder(), "libroboloop_gloo.so"), "roboloop_gloo_connect",
                         RTLD_NOW | kOwnScope);
    if (!entry.ok()) {
      throw std::runtime_error("cannot load the CPU collectives library libroboloop_gloo.so: " +
                               std::string(entry.status().message()));
    }
    return reinterpret_cast<ConnectFunction>(entry->symbol);
  }();
  return connect;
}

}  // namespace

std::unique_ptr<CpuCollectives> ConnectCpuCollectives(const CpuCollectivesOptions& options,
                                                      RendezvousStore& store) {
  std::string error;
  CpuCollectives* collectives = LoadConnect()(&options, &store, &error);
  if (collectives == nullptr) {
    throw std::runtime_error("gloo: rank " + std::to_string(options.rank) + " of " +
                             std::to_string(options.size) + " could not connect to the others: " +
                             error);
  }
  return std::unique_ptr<CpuCollectives>(collectives);
}

}  // namespace roboloop::train
