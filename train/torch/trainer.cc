// The training step, its schedule and its state files.
#include "train/torch/trainer.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/autocast_mode.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <torch/cuda.h>

#include <malloc.h>

#include <cmath>

#include "train/cuda_graph_rule.h"
#include "train/safetensors.h"
#include "train/torch/fp8_linear.h"
#include "train/torch/fused_adamw.h"
#include "train/torch/policy/image_encoder.h"
#include "train/torch/startup_checks.h"
#include "train/training_device.h"

namespace roboloop::train {
namespace {

uint64_t SplitMix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// The noise generator of one step on one rank: a pure function of (seed, rank, step), so a
// resumed run draws the same noise without saving generator state.
torch::Generator StepGenerator(uint64_t seed, int rank, int64_t step) {
  const uint64_t mixed = SplitMix64(seed ^ SplitMix64((static_cast<uint64_t>(rank) << 40) ^
                                                      static_cast<uint64_t>(step)));
  return at::make_generator<at::CPUGeneratorImpl>(mixed);
}

template <typename T>
T Get(const nlohmann::json& json, const char* key, T fallback) {
  if (!json.contains(key)) return fallback;
  try {
    return json[key].get<T>();
  } catch (const std::exception&) {
    TORCH_CHECK(false, "trainer option ", key, " has the wrong type: ", json[key].dump());
  }
}

OptimizerOptions ParseOptimizer(const nlohmann::json& json) {
  OptimizerOptions o;
  o.lr = Get(json, "lr", o.lr);
  o.weight_decay = Get(json, "weight_decay", o.weight_decay);
  o.beta1 = Get(json, "beta1", o.beta1);
  o.beta2 = Get(json, "beta2", o.beta2);
  o.eps = Get(json, "eps", o.eps);
  o.warmup_steps = Get(json, "warmup_steps", o.warmup_steps);
  o.total_steps = Get(json, "total_steps", o.total_steps);
  o.min_lr_ratio = Get(json, "min_lr_ratio", o.min_lr_ratio);
  o.clip_norm = Get(json, "clip_norm", o.clip_norm);
  o.ema_decay = Get(json, "ema_decay", o.ema_decay);
  if (json.contains("fused")) o.fused = Get(json, "fused", false);
  TORCH_CHECK(std::isfinite(o.lr) && o.lr > 0, "trainer option lr must be a finite number > 0, got ", o.lr);
  TORCH_CHECK(o.total_steps >= 1 && o.warmup_steps >= 0, "trainer options total_steps >= 1 and "
              "warmup_steps >= 0 are required");
  TORCH_CHECK(o.min_lr_ratio >= 0 && o.min_lr_ratio <= 1, "trainer option min_lr_ratio must be in [0, 1], got ",
              o.min_lr_ratio);
  TORCH_CHECK(std::isfinite(o.weight_decay) && o.weight_decay >= 0,
              "trainer option weight_decay must be a finite number >= 0, got ", o.weight_decay);
  TORCH_CHECK(std::isfinite(o.clip_norm) && o.clip_norm >= 0,
              "trainer option clip_norm must be a finite number >= 0, got ", o.clip_norm);
  TORCH_CHECK(std::isfinite(o.eps) && o.eps > 0, "trainer option eps must be a finite number > 0, got ", o.eps);
  TORCH_CHECK(o.beta1 >= 0 && o.beta1 < 1 && o.beta2 >= 0 && o.beta2 < 1,
              "trainer options beta1 and beta2 must be in [0, 1), got ", o.beta1, " and ", o.beta2);
  TORCH_CHECK(o.ema_decay >= 0 && o.ema_decay < 1, "trainer option ema_decay must be in [0, 1)");
  return o;
}

DistributedOptions ParseDistributed(const nlohmann::json& json) {
  DistributedOptions d;
  d.rank = Get(json, "rank", d.rank);
  d.world_size = Get(json, "world_size", d.world_size);
  d.local_rank = Get(json, "local_rank", d.local_rank);
  d.master_addr = Get(json, "master_addr", d.master_addr);
  d.master_port = Get(json, "master_port", d.master_port);
  d.timeout_seconds = Get(json, "timeout_seconds", d.timeout_seconds);
  d.backend = Get(json, "backend", d.backend);
  return d;
}

torch::Tensor BytesTensor(const std::string& bytes) {
  torch::Tensor t = torch::empty({static_cast<int64_t>(bytes.size())}, torch::kUInt8);
  if (!bytes.empty()) std::memcpy(t.data_ptr<uint8_t>(), bytes.data(), bytes.size());
  return t;
}

std::string TensorBytes(const torch::Tensor& t) {
  const torch::Tensor c = t.contiguous();
  return std::string(reinterpret_cast<const char*>(c.data_ptr<uint8_t>()), c.numel());
}

// Makes `device` the thread's current device of its kind, so that CUDA streams, NCCL
// communicators and default allocations land on the rank's own GPU.
void MakeCurrentDevice(const torch::Device& device) {
  if (!device.is_cpu()) c10::impl::getDeviceGuardImpl(device.type())->setDevice(device);
}

// bf16 autocast of the forward on `device`'s type (CPU or CUDA autocast) while alive, when enabled;
// the state before it (enabled, dtype) comes back after it.
class Bf16Autocast {
 public:
  Bf16Autocast(bool enabled, const torch::Device& device)
      : type_(device.is_cuda() ? at::kCUDA : at::kCPU),
        enabled_(enabled),
        was_enabled_(at::autocast::is_autocast_enabled(type_)),
        previous_dtype_(at::autocast::get_autocast_dtype(type_)) {
    if (!enabled_) return;
    at::autocast::set_autocast_enabled(type_, true);
    at::autocast::set_autocast_dtype(type_, at::kBFloat16);
    at::autocast::increment_nesting();
  }
  ~Bf16Autocast() {
    if (!enabled_) return;
    at::autocast::set_autocast_enabled(type_, was_enabled_);
    at::autocast::set_autocast_dtype(type_, previous_dtype_);
    if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  }
  Bf16Autocast(const Bf16Autocast&) = delete;
  Bf16Autocast& operator=(const Bf16Autocast&) = delete;

 private:
  at::DeviceType type_;
  bool enabled_;
  bool was_enabled_;                // autocast's state before this scope, restored after it
  at::ScalarType previous_dtype_;
};

// Autocast's cache of cast weights off while alive: a graph captured with it would keep reading
// casts made outside the graph (as torch.cuda.graph requires, autocast(cache_enabled=False)).
class AutocastCacheOff {
 public:
  AutocastCacheOff() : previous_(at::autocast::is_autocast_cache_enabled()) {
    at::autocast::set_autocast_cache_enabled(false);
  }
  ~AutocastCacheOff() { at::autocast::set_autocast_cache_enabled(previous_); }
  AutocastCacheOff(const AutocastCacheOff&) = delete;
  AutocastCacheOff& operator=(const AutocastCacheOff&) = delete;

 private:
  bool previous_;
};

// Throws NonFiniteLoss naming `step` when `value` (the step's `what`) is NaN or Inf.
void ThrowIfNotFinite(const char* what, double value, int64_t step) {
  if (std::isfinite(value)) return;
  throw NonFiniteLoss("step " + std::to_string(step) + ": the " + what + " is " + std::to_string(value) +
                      "; no update applied");
}

// Runs `collective` (`what`, e.g. "averaging the gradients"), turning its failure into PeerFailure naming the
// step: a collective fails when a peer vanished or its timeout passed. Running out of memory stays this rank's own.
template <typename Collective>
auto InCollective(const char* what, int64_t step, Collective&& collective) {
  try {
    return collective();
  } catch (const c10::OutOfMemoryError&) {
    throw;
  } catch (const c10::Error& e) {
    throw PeerFailure("step " + std::to_string(step) + ": " + what + " across the ranks failed: " +
                      e.what_without_backtrace());
  }
}

// Whether `config` trains with its step captured in a CUDA graph; throws naming cuda_graph
// when it asks for one that cannot be had.
bool UsesCudaGraph(const TrainerConfig& config) {
  CudaGraphSetup setup;
  setup.cuda = config.device.is_cuda();
  setup.world_size = config.distributed.world_size;
  setup.packed_attention = config.packed && config.policy.kind == "transformer";
  setup.cameras = ParseImageEncoderOptions(config.policy.options).image_bytes() > 0;
  setup.fused_adamw = config.optimizer.fused.value_or(config.device.is_cuda());
  const absl::StatusOr<bool> graphed = UseCudaGraph(config.cuda_graph, setup);
  TORCH_CHECK(graphed.ok(), "trainer option ", graphed.status().message());
  return *graphed;
}

// A step allocates and frees the same activation and gradient buffers (up to ~13 MB each at
// batch 256). glibc would serve each from a fresh mmap, or trim it from the heap on free, so
// every step faulted in ~200 MB of new zeroed pages (a fifth of the step's time). Serving them
// from the heap and never trimming keeps those pages mapped from one step to the next.
void KeepStepBuffersResident() {
  constexpr int kLargestHeapBlock = 32 << 20;  // glibc's upper limit for M_MMAP_THRESHOLD
  mallopt(M_MMAP_THRESHOLD, kLargestHeapBlock);
  mallopt(M_TRIM_THRESHOLD, std::numeric_limits<int>::max());
}

}  // namespace

TrainerConfig ParseTrainerConfig(const nlohmann::json& json) {
  TORCH_CHECK(json.is_object(), "trainer config must be a JSON object");
  TORCH_CHECK(json.contains("policy"), "trainer config needs policy");
  TrainerConfig config;
  config.policy = ParsePolicyConfig(json["policy"]);
  config.optimizer = ParseOptimizer(json.value("optimizer", nlohmann::json::object()));
  config.precision = ParsePrecisionOptions(json);
  config.packed = Get(json, "packed", config.packed);
  if (json.contains("cuda_graph")) config.cuda_graph = Get(json, "cuda_graph", false);
  config.token_budget = Get(json, "token_budget", config.token_budget);
  config.seed = Get(json, "seed", config.seed);
  config.threads = Get(json, "threads", config.threads);
  const nlohmann::json distributed = json.value("distributed", nlohmann::json::object());
  config.distributed = ParseDistributed(distributed);
  // CPU runs never ask for the GPUs, so a CUDA build does not initialise CUDA for them.
  const std::string spec = Get(json, "device", std::string("cpu"));
  const bool cpu = spec.empty() || spec == "cpu";
  const int visible_gpus = cpu ? 0 : static_cast<int>(torch::cuda::device_count());
  const absl::StatusOr<TrainingDevice> device =
      ResolveTrainingDevice(spec, config.distributed.local_rank, visible_gpus);
  TORCH_CHECK(device.ok(), "trainer option ", device.status().message());
  config.device = torch::Device(device->Name());
  if (!distributed.contains("backend")) config.distributed.backend = device->Backend();
  return config;
}

Trainer::Trainer(const TrainerConfig& config) : config_(config) {}

std::unique_ptr<Trainer> Trainer::Create(const TrainerConfig& config) {
  if (config.threads > 0) at::set_num_threads(config.threads);
  KeepStepBuffersResident();
  CheckTrainingSetup(config.policy, config.precision, config.device);
  const bool graphed = UsesCudaGraph(config);
  std::unique_ptr<Trainer> trainer(new Trainer(config));
  torch::manual_seed(config.seed);
  trainer->model_ = MakePolicyModel(config.policy);
  try {
    trainer->SetUp();
  } catch (const c10::OutOfMemoryError& e) {
    trainer->ThrowOutOfMemory(e, "while the model and the optimizer were set up", 0);
  }
  if (graphed) trainer->graph_ = trainer->MakeGraphedStep();
  return trainer;
}

void Trainer::SetUp() {
  MakeCurrentDevice(config_.device);
  model_->to(config_.device);
  if (config_.device.is_cuda()) staging_ = std::make_unique<CudaBatchStaging>(config_.device);
  std::vector<torch::Tensor> decay, no_decay;
  for (const torch::Tensor& p : model_->parameters()) {
    parameters_.push_back(p);
    (p.dim() >= 2 ? decay : no_decay).push_back(p);
  }
  const OptimizerOptions& o = config_.optimizer;
  auto options = torch::optim::AdamWOptions(o.lr).betas({o.beta1, o.beta2}).eps(o.eps);
  std::vector<torch::optim::OptimizerParamGroup> groups;
  groups.emplace_back(decay, std::make_unique<torch::optim::AdamWOptions>(
                                 torch::optim::AdamWOptions(options).weight_decay(o.weight_decay)));
  groups.emplace_back(no_decay, std::make_unique<torch::optim::AdamWOptions>(
                                    torch::optim::AdamWOptions(options).weight_decay(0.0)));
  if (o.fused.value_or(config_.device.is_cuda())) {
    optimizer_ = std::make_unique<FusedAdamW>(std::move(groups), options);
  } else {
    optimizer_ = std::make_unique<torch::optim::AdamW>(std::move(groups), options);
  }
  if (config_.distributed.world_size > 1) {
    group_ = JoinProcessGroup(config_.distributed);
    BroadcastFromRankZero(*group_, parameters_);
    gradients_ = std::make_unique<GradientAverager>(parameters_, *group_);
  }
  if (o.ema_decay > 0) {
    for (const torch::Tensor& p : parameters_) ema_.push_back(p.detach().clone());
  }
}

void Trainer::ThrowOutOfMemory(const c10::OutOfMemoryError& error, const std::string& phase, int64_t batch) const {
  int64_t parameters = 0;
  for (const torch::Tensor& p : model_->parameters()) parameters += p.numel();
  TORCH_CHECK(false, StartupOutOfMemoryMessage(config_.device.str(), phase, parameters, batch,
                                               error.what_without_backtrace()));
}

std::optional<Fp8Scaling> Trainer::Fp8Linears() const {
  if (config_.precision.precision != Precision::kFp8) return std::nullopt;
  return config_.precision.fp8_scaling;
}

double Trainer::LearningRate(int64_t step) const {
  const OptimizerOptions& o = config_.optimizer;
  if (step < o.warmup_steps) return o.lr * static_cast<double>(step + 1) / o.warmup_steps;
  const double span = std::max<int64_t>(1, o.total_steps - o.warmup_steps);
  const double progress = std::min(1.0, static_cast<double>(step - o.warmup_steps) / span);
  const double floor = o.lr * o.min_lr_ratio;
  return floor + (o.lr - floor) * 0.5 * (1.0 + std::cos(M_PI * progress));
}

PolicyInputs Trainer::Inputs(const BatchArrays& b, int64_t step) {
  TORCH_CHECK(b.obs_dim == config_.policy.obs_dim && b.action_dim == config_.policy.action_dim &&
                  b.history == config_.policy.history && b.chunk == config_.policy.chunk,
              "batch dims (obs ", b.obs_dim, ", action ", b.action_dim, ", history ", b.history,
              ", chunk ", b.chunk, ") differ from the policy's (obs ", config_.policy.obs_dim,
              ", action ", config_.policy.action_dim, ", history ", config_.policy.history,
              ", chunk ", config_.policy.chunk, ")");
  const ImageEncoderOptions vision = ParseImageEncoderOptions(config_.policy.options);
  TORCH_CHECK(b.image_bytes == vision.image_bytes(), "batch image_bytes ", b.image_bytes, " differs from the ",
              vision.image_bytes(), " bytes per row of the policy's cameras (", DescribeCameras(vision),
              "; frames are height x width x 3 uint8)");
  TORCH_CHECK(b.image_bytes == 0 || b.images != nullptr, "batch image_bytes is ", b.image_bytes,
              " but images is NULL");
  BatchTensors tensors = staging_ ? staging_->Take(b, step) : CopyBatchToCpu(b);
  PolicyInputs inputs;
  inputs.obs = std::move(tensors.obs);
  inputs.history_length = std::move(tensors.history_length);
  if (staging_) {  // a GPU batch: packing plans from the host's copy of the lengths
    inputs.host_history_length =
        torch::from_blob(const_cast<int32_t*>(b.history_length), {b.batch}, torch::kInt).clone();
  }
  inputs.actions = std::move(tensors.actions);
  inputs.action_valid = tensors.action_valid.to(torch::kFloat);
  if (b.image_bytes > 0) inputs.images = std::move(tensors.images);
  return inputs;
}

void Trainer::Stage(const BatchArrays& b, int64_t step) {
  if (staging_) staging_->Stage(b, step);
}

LossOptions Trainer::LossSettings(torch::Generator generator, bool augment) const {
  LossOptions loss_options;
  loss_options.augment = augment;
  loss_options.packed = config_.packed;
  loss_options.token_budget = config_.token_budget;
  loss_options.generator = std::move(generator);
  return loss_options;
}

StepFigures Trainer::Step(const BatchArrays& b, int64_t step) {
  if (steps_taken_++ > 0) return TakeStep(b, step);
  try {
    return TakeStep(b, step);
  } catch (const c10::OutOfMemoryError& e) {
    ThrowOutOfMemory(e, "in the first training step", b.batch);
  }
}

StepFigures Trainer::TakeStep(const BatchArrays& b, int64_t step) {
  const PolicyInputs inputs = Inputs(b, step);
  torch::Generator generator = StepGenerator(config_.seed, config_.distributed.rank, step);
  if (!graph_) return EagerStep(inputs, std::move(generator), LossNoise(), step);
  // Drawn ahead in every case, so that graphed and eager steps consume the same noise.
  const LossNoise noise = model_->DrawLossNoise(b.batch, generator);
  if (graph_->Takes(inputs, noise)) {
    try {
      return ReplayStep(inputs, noise, step);
    } catch (const GraphCaptureError& e) {
      if (config_.cuda_graph.has_value()) throw;  // cuda_graph: on asked for the graph itself
      TORCH_WARN("training continues without a CUDA graph: ", e.what());
      graph_.reset();
      return EagerStep(inputs, std::move(generator), noise, step);
    }
  }
  if (graph_->WarmedUp()) return EagerStep(inputs, std::move(generator), noise, step);  // other shapes
  StepFigures figures;
  graph_->WarmUp([&] { figures = EagerStep(inputs, generator, noise, step); });
  return figures;
}

StepFigures Trainer::EagerStep(const PolicyInputs& inputs, torch::Generator generator, const LossNoise& noise,
                               int64_t step) {
  LossOptions loss_options = LossSettings(std::move(generator), /*augment=*/true);
  loss_options.noise = noise;
  const torch::Device& device = config_.device;
  model_->train();
  optimizer_->zero_grad();
  torch::Tensor loss;
  {
    const Bf16Autocast autocast(UsesBf16Autocast(config_.precision.precision), device);
    const Fp8LinearScope fp8(Fp8Linears());
    loss = model_->Loss(inputs, loss_options);
  }
  StepFigures figures;
  const double own_loss = loss.item<double>();
  figures.loss = group_ ? InCollective("averaging the loss", step,
                                       [&] { return AllReduceMean(*group_, own_loss, device); })
                        : own_loss;
  ThrowIfNotFinite("loss", own_loss, step);
  if (!std::isfinite(figures.loss)) {
    throw PeerFailure("step " + std::to_string(step) + ": the loss averaged over the ranks is " +
                      std::to_string(figures.loss) + " while this rank's is finite: another rank's is not; no "
                      "update applied");
  }
  loss.backward();
  if (gradients_) InCollective("averaging the gradients", step, [&] { gradients_->Average(); });
  const double max_norm = config_.optimizer.clip_norm > 0 ? config_.optimizer.clip_norm : INFINITY;
  figures.grad_norm = torch::nn::utils::clip_grad_norm_(parameters_, max_norm);
  ThrowIfNotFinite("gradient norm", figures.grad_norm, step);
  figures.lr = LearningRate(step);
  for (torch::optim::OptimizerParamGroup& group : optimizer_->param_groups()) {
    static_cast<torch::optim::AdamWOptions&>(group.options()).lr(figures.lr);
  }
  optimizer_->step();
  UpdateEma();
  return figures;
}

StepFigures Trainer::ReplayStep(const PolicyInputs& inputs, const LossNoise& noise, int64_t step) {
  auto& adamw = static_cast<FusedAdamW&>(*optimizer_);  // UsesCudaGraph requires the fused AdamW
  StepFigures figures;
  figures.lr = LearningRate(step);
  int64_t count = 0;
  try {
    count = adamw.SharedStepCount() + 1;
  } catch (const c10::Error& e) {  // a parameter the eager steps gave no gradient: no one update
    throw GraphCaptureError(std::string("the graphed update needs every parameter at one AdamW step count: ") +
                            e.what_without_backtrace());
  }
  const ReplayedFigures replayed = graph_->Replay(inputs, noise, figures.lr, count);
  figures.loss = replayed.loss;
  figures.grad_norm = replayed.grad_norm;
  ThrowIfNotFinite("loss", figures.loss, step);
  ThrowIfNotFinite("gradient norm", figures.grad_norm, step);
  adamw.AdvanceStepCounts();
  return figures;
}

// The eager step's computations, as tensors: clip_grad_norm_'s operations without its host
// read of the norm, and the update and the EMA made conditional on the device, so that
// graphed and eager steps compute the same values.
torch::Tensor Trainer::CapturableTrainingStep(const PolicyInputs& inputs, const LossNoise& noise,
                                              const torch::Tensor& lr, const torch::Tensor& count) {
  // Nothing draws from it: the noise is given and graphed policies have no cameras.
  LossOptions loss_options = LossSettings(at::make_generator<at::CPUGeneratorImpl>(), /*augment=*/true);
  loss_options.noise = noise;
  model_->train();
  optimizer_->zero_grad();  // the backward then writes gradients into the graph's pool
  torch::Tensor loss;
  {
    const AutocastCacheOff no_cache;
    const Bf16Autocast autocast(UsesBf16Autocast(config_.precision.precision), config_.device);
    const Fp8LinearScope fp8(Fp8Linears());
    loss = model_->Loss(inputs, loss_options);
  }
  loss.backward();
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> norms;
  for (const torch::Tensor& p : parameters_) norms.push_back(p.grad().norm(2.0));
  const torch::Tensor grad_norm = norms.size() == 1 ? norms[0] : torch::stack(norms).norm(2.0);
  const double max_norm = config_.optimizer.clip_norm > 0 ? config_.optimizer.clip_norm : INFINITY;
  const torch::Tensor clip = torch::clamp(max_norm / (grad_norm + 1e-6), std::nullopt, 1.0);
  for (const torch::Tensor& p : parameters_) p.grad().mul_(clip);
  const torch::Tensor finite = torch::isfinite(loss.detach()).logical_and(torch::isfinite(grad_norm));
  static_cast<FusedAdamW&>(*optimizer_).StepOnDevice(lr, count, finite.logical_not().to(torch::kFloat));
  const double decay = config_.optimizer.ema_decay;
  for (size_t i = 0; i < ema_.size(); ++i) {
    ema_[i].copy_(torch::where(finite, ema_[i].mul(decay).add(parameters_[i], 1.0 - decay), ema_[i]));
  }
  return torch::stack({loss.detach().to(torch::kFloat), grad_norm.to(torch::kFloat)});
}

std::unique_ptr<GraphedStep> Trainer::MakeGraphedStep() {
  return std::make_unique<GraphedStep>(
      config_.device, [this](const PolicyInputs& inputs, const LossNoise& noise, const torch::Tensor& lr,
                             const torch::Tensor& count) { return CapturableTrainingStep(inputs, noise, lr, count); });
}

double Trainer::ValidationLoss(const BatchArrays& b, int64_t step) {
  const PolicyInputs inputs = Inputs(b, step);
  // Its own noise stream, so that validating never changes the training steps' noise.
  constexpr uint64_t kValidationStream = 0x76616c6964617465ULL;
  const LossOptions loss_options =
      LossSettings(StepGenerator(config_.seed ^ kValidationStream, config_.distributed.rank, step),
                   /*augment=*/false);
  torch::NoGradGuard no_grad;
  model_->eval();
  const Bf16Autocast autocast(UsesBf16Autocast(config_.precision.precision), config_.device);
  const Fp8LinearScope fp8(Fp8Linears());
  return model_->Loss(inputs, loss_options).item<double>();
}

void Trainer::UpdateEma() {
  if (ema_.empty()) return;
  torch::NoGradGuard no_grad;
  const double decay = config_.optimizer.ema_decay;
  for (size_t i = 0; i < ema_.size(); ++i) ema_[i].mul_(decay).add_(parameters_[i], 1.0 - decay);
}

void Trainer::Save(const std::string& policy_path, const std::string& state_path,
                   const std::string& driver_state) {
  TensorMap weights;
  size_t i = 0;
  for (const auto& item : model_->named_parameters()) {
    const torch::Tensor source = (ema_.empty() ? item.value() : ema_[i]).detach().cpu().contiguous();
    FloatTensor t;
    t.shape = source.sizes().vec();
    t.values.assign(source.data_ptr<float>(), source.data_ptr<float>() + source.numel());
    weights[item.key()] = std::move(t);
    ++i;
  }
  const absl::Status written = WriteSafetensors(policy_path, weights);
  TORCH_CHECK(written.ok(), written.message());

  torch::serialize::OutputArchive archive;
  for (size_t p = 0; p < parameters_.size(); ++p) {
    archive.write("param." + std::to_string(p), parameters_[p].detach().cpu());
    if (!ema_.empty()) archive.write("ema." + std::to_string(p), ema_[p].cpu());
  }
  torch::serialize::OutputArchive optimizer_archive;
  optimizer_->save(optimizer_archive);
  archive.write("optimizer", optimizer_archive);
  archive.write("driver_state", BytesTensor(driver_state));
  archive.save_to(state_path);
}

std::string Trainer::LoadState(const std::string& state_path) {
  torch::serialize::InputArchive archive;
  try {
    archive.load_from(state_path, config_.device);
  } catch (const c10::Error& e) {
    TORCH_CHECK(false, state_path, ": not a trainer state file: ", e.what_without_backtrace());
  }
  // The optimizer's moments are replaced below: a graph reading the old ones is dropped first.
  if (graph_) graph_ = MakeGraphedStep();
  torch::NoGradGuard no_grad;
  for (size_t p = 0; p < parameters_.size(); ++p) {
    torch::Tensor saved;
    TORCH_CHECK(archive.try_read("param." + std::to_string(p), saved), state_path,
                ": parameter ", p, " is missing");
    TORCH_CHECK(saved.sizes() == parameters_[p].sizes(), state_path, ": parameter ", p,
                " has shape ", saved.sizes(), ", the model needs ", parameters_[p].sizes());
    parameters_[p].copy_(saved);
    if (!ema_.empty()) {
      TORCH_CHECK(archive.try_read("ema." + std::to_string(p), saved), state_path,
                  ": EMA weights are missing (was it trained with ema_decay?)");
      ema_[p].copy_(saved);
    }
  }
  torch::serialize::InputArchive optimizer_archive;
  TORCH_CHECK(archive.try_read("optimizer", optimizer_archive), state_path,
              ": optimizer state is missing");
  optimizer_->load(optimizer_archive);
  torch::Tensor driver;
  TORCH_CHECK(archive.try_read("driver_state", driver), state_path, ": driver state is missing");
  return TensorBytes(driver);
}

void Trainer::LoadWeights(const std::string& policy_path) {
  LoadModuleWeights(*model_, policy_path);
  torch::NoGradGuard no_grad;
  for (size_t p = 0; p < ema_.size(); ++p) ema_[p].copy_(parameters_[p]);
  if (group_) BroadcastFromRankZero(*group_, parameters_);
}

void LoadModuleWeights(torch::nn::Module& module, const std::string& path) {
  absl::StatusOr<TensorMap> tensors = ReadSafetensors(path);
  TORCH_CHECK(tensors.ok(), tensors.status().message());
  torch::NoGradGuard no_grad;
  for (auto& item : module.named_parameters()) {
    auto it = tensors->find(item.key());
    TORCH_CHECK(it != tensors->end(), path, ": tensor ", item.key(), " is missing");
    TORCH_CHECK(it->second.shape == item.value().sizes().vec(), path, ": tensor ", item.key(),
                " has shape ", c10::IntArrayRef(it->second.shape), ", the policy needs ",
                item.value().sizes());
    item.value().copy_(torch::from_blob(it->second.values.data(), it->second.shape, torch::kFloat));
    tensors->erase(it);
  }
  TORCH_CHECK(tensors->empty(), path, ": tensor ", tensors->empty() ? "" : tensors->begin()->first,
              " is not part of this policy");
}

}  // namespace roboloop::train
