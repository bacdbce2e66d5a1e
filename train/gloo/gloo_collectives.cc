// libroboloop_gloo.so: CpuCollectives on Debian's Gloo (TCP transport, full-mesh rendezvous).
#include <dlfcn.h>

#include <gloo/allreduce.h>
#include <gloo/broadcast.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/tcp/device.h>

#include <exception>
#include <stdexcept>

#include "train/gloo/cpu_collectives.h"

namespace roboloop::train {
namespace {

// Gloo's rendezvous on the caller's store.
class StoreAdapter : public gloo::rendezvous::Store {
 public:
  StoreAdapter(RendezvousStore& store, std::chrono::milliseconds timeout)
      : store_(store), timeout_(timeout) {}
  void set(const std::string& key, const std::vector<char>& data) override { store_.Set(key, data); }
  std::vector<char> get(const std::string& key) override { return store_.Get(key); }
  void wait(const std::vector<std::string>& keys) override { store_.Wait(keys, timeout_); }
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) override {
    store_.Wait(keys, timeout);
  }

 private:
  RendezvousStore& store_;
  const std::chrono::milliseconds timeout_;
};

class GlooCollectives : public CpuCollectives {
 public:
  GlooCollectives(std::shared_ptr<gloo::Context> context, std::chrono::milliseconds timeout)
      : context_(std::move(context)), timeout_(timeout) {}

  void AllReduceSum(float* data, size_t count) override { Sum(data, count, "float32"); }
  void AllReduceSum(double* data, size_t count) override { Sum(data, count, "float64"); }

  void Broadcast(void* data, size_t bytes, int root) override {
    try {
      gloo::BroadcastOptions options(context_);
      options.setOutput(static_cast<uint8_t*>(data), bytes);
      options.setRoot(root);
      options.setTimeout(timeout_);
      gloo::broadcast(options);
    } catch (const std::exception& e) {
      throw std::runtime_error("gloo broadcast of " + std::to_string(bytes) + " bytes from rank " +
                               std::to_string(root) + " failed: " + e.what());
    }
  }

  std::string GlooLibraryPath() const override {
    Dl_info info{};
    const auto function = static_cast<void (*)(const gloo::AllreduceOptions&)>(&gloo::allreduce);
    if (dladdr(reinterpret_cast<void*>(function), &info) == 0 || info.dli_fname == nullptr) return "";
    return info.dli_fname;
  }

 private:
  template <typename T>
  void Sum(T* data, size_t count, const char* type) {
    if (count == 0) return;
    try {
      gloo::AllreduceOptions options(context_);
      options.setOutput(data, count);
      options.setReduceFunction(
          static_cast<void (*)(void*, const void*, const void*, size_t)>(&gloo::sum<T>));
      options.setTimeout(timeout_);
      gloo::allreduce(options);
    } catch (const std::exception& e) {
      throw std::runtime_error("gloo allreduce of " + std::to_string(count) + " " + type +
                               " values failed: " + e.what());
    }
  }

  std::shared_ptr<gloo::Context> context_;
  const std::chrono::milliseconds timeout_;
};

std::shared_ptr<gloo::transport::Device> MakeDevice(const CpuCollectivesOptions& options) {
  gloo::transport::tcp::attr attr;
  if (!options.interface.empty()) {
    attr.iface = options.interface;
  } else {
    attr.hostname = options.hostname;
  }
  return gloo::transport::tcp::CreateDevice(attr);
}

}  // namespace
}  // namespace roboloop::train

extern "C" __attribute__((visibility("default"))) roboloop::train::CpuCollectives*
roboloop_gloo_connect(const roboloop::train::CpuCollectivesOptions* options,
                      roboloop::train::RendezvousStore* store, std::string* error) {
  using namespace roboloop::train;
  try {
    std::shared_ptr<gloo::transport::Device> device = MakeDevice(*options);
    auto context = std::make_shared<gloo::rendezvous::Context>(options->rank, options->size);
    context->setTimeout(options->timeout);
    StoreAdapter adapter(*store, options->timeout);
    context->connectFullMesh(adapter, device);
    return new GlooCollectives(std::move(context), options->timeout);
  } catch (const std::exception& e) {
    *error = e.what();
    return nullptr;
  }
}
