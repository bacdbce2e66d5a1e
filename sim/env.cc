#include "sim/env.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "sim/physics_state.h"

namespace roboloop::sim {
namespace {

// The noise stream is independent of the task's reset stream, so turning perturbations on
// does not change an episode's initial state.
constexpr uint64_t kNoiseStreamSalt = 0x6e6f697365ULL;

const int kInstabilityWarnings[] = {mjWARN_BADQPOS, mjWARN_BADQVEL, mjWARN_BADQACC};

bool AllFinite(const mjtNum* values, int count) {
  for (int i = 0; i < count; ++i) {
    if (!std::isfinite(values[i])) return false;
  }
  return true;
}

}  // namespace

const char* EndReasonName(EndReason reason) {
  switch (reason) {
    case EndReason::kNone: return "running";
    case EndReason::kTruncated: return "truncated";
    case EndReason::kTerminated: return "terminated";
    case EndReason::kInvalidAction: return "invalid_action";
    case EndReason::kUnstable: return "unstable";
    case EndReason::kInvalidReward: return "invalid_reward";
    case EndReason::kInvalidObservation: return "invalid_observation";
    case EndReason::kTaskError: return "task_error";
  }
  return "unknown";
}

void Trajectory::Clear() {
  obs.clear();
  actions.clear();
  rewards.clear();
  dones.clear();
  states.clear();
  images.clear();
  final_obs.clear();
}

absl::StatusOr<std::unique_ptr<Env>> Env::Create(const Task* task, const EnvOptions& options) {
  ROBOLOOP_CHECK(task != nullptr);
  ROBOLOOP_RETURN_IF_ERROR(Annotate(ValidateRobustness(options.robustness, task->obs_spec()),
                                    absl::StrCat("task ", task->name())));
  if (options.max_steps < 0) {
    return absl::InvalidArgumentError(absl::StrCat("max_steps must be >= 0, got ", options.max_steps));
  }
  ModelPtr own_model;
  if (options.robustness.randomises_model()) {
    absl::Status copied = GuardMujoco("mj_copyModel", [&] {
      own_model.reset(mj_copyModel(nullptr, task->model()));
    });
    ROBOLOOP_RETURN_IF_ERROR(copied);
  }
  ROBOLOOP_ASSIGN_OR_RETURN(DataPtr data,
                            MakeData(own_model ? own_model.get() : task->model()));
  return std::unique_ptr<Env>(new Env(task, options, std::move(own_model), std::move(data)));
}

Env::Env(const Task* task, const EnvOptions& options, ModelPtr own_model, DataPtr data)
    : task_(task),
      options_(options),
      own_model_(std::move(own_model)),
      model_(own_model_ ? own_model_.get() : task->model()),
      data_(std::move(data)),
      horizon_(options.max_steps > 0 ? options.max_steps : task->max_steps()) {
  const ObsSpec& spec = task->obs_spec();
  for (const ArraySpec& key : spec.keys) {
    auto it = options.robustness.obs_noise_std.find(key.name);
    if (it != options.robustness.obs_noise_std.end() && it->second > 0.0) {
      noise_slices_.push_back({spec.offset(key.name), key.size(), it->second});
    }
  }
  const int action_size = task->action_spec().size();
  clipped_action_.resize(action_size);
  delay_line_.resize(static_cast<size_t>(action_size) * (options.robustness.action_delay + 1));
}

absl::Status Env::Reset(uint64_t seed, int64_t episode_index, float* obs) {
  seed_ = seed;
  episode_index_ = episode_index;
  task_rng_.Seed(seed);
  noise_rng_.Seed(Mix64(seed ^ kNoiseStreamSalt));
  length_ = 0;
  return_ = 0.0;
  condition_always_ = true;
  condition_streak_ = 0;
  longest_streak_ = 0;
  end_ = EndReason::kNone;
  end_detail_.clear();
  trajectory_.Clear();
  start_ = std::chrono::steady_clock::now();
  if (own_model_) RandomiseModel();
  absl::Status reset = GuardMujoco(absl::StrCat("reset of task ", task_->name()), [&] {
    mj_resetData(model_, data_.get());
    task_->Reset(model_, data_.get(), task_rng_);
    mj_forward(model_, data_.get());
  });
  if (!reset.ok()) {
    end_ = EndReason::kUnstable;
    end_detail_ = std::string(reset.message());
    return reset;
  }
  // The delay line starts with the neutral (zero, clipped) action.
  const ActionSpec& bounds = task_->action_spec();
  for (size_t i = 0; i < delay_line_.size(); ++i) {
    const int dim = static_cast<int>(i % bounds.size());
    delay_line_[i] = std::clamp(0.0f, bounds.low[dim], bounds.high[dim]);
  }
  delay_head_ = 0;
  warnings_at_reset_ = InstabilityWarnings();
  hash_chain_ = HashPhysicsState(model_, data_.get());
  if (absl::Status observed = ObserveInto(obs); !observed.ok()) {
    end_ = EndReason::kTaskError;
    end_detail_ = std::string(observed.message());
    return Annotate(observed, absl::StrCat("task ", task_->name(), " at reset (seed ", seed_, ")"));
  }
  if (!ObservationFinite(obs)) {
    end_ = EndReason::kInvalidObservation;
    return absl::FailedPreconditionError(
        absl::StrCat("task ", task_->name(), " returned a non-finite observation at reset (seed ", seed_, "): ", end_detail_));
  }
  return absl::OkStatus();
}

void Env::RandomiseModel() {
  const mjModel* base = task_->model();
  mjModel* m = own_model_.get();
  const RobustnessOptions& r = options_.robustness;
  for (int b = 0; b < m->nbody; ++b) {
    const double scale = noise_rng_.Uniform(r.body_mass.low, r.body_mass.high);
    m->body_mass[b] = base->body_mass[b] * scale;
    for (int k = 0; k < 3; ++k) m->body_inertia[3 * b + k] = base->body_inertia[3 * b + k] * scale;
  }
  for (int g = 0; g < m->ngeom; ++g) {
    m->geom_friction[3 * g] =
        base->geom_friction[3 * g] * noise_rng_.Uniform(r.geom_friction.low, r.geom_friction.high);
  }
  for (int a = 0; a < m->nu; ++a) {
    const double scale = noise_rng_.Uniform(r.actuator_gain.low, r.actuator_gain.high);
    m->actuator_gainprm[mjNGAIN * a] = base->actuator_gainprm[mjNGAIN * a] * scale;
    // Position-like servos carry the gain in their bias too; keep the servo consistent.
    if (m->actuator_biastype[a] == mjBIAS_AFFINE) {
      for (int k = 1; k < 3; ++k) {
        m->actuator_biasprm[mjNBIAS * a + k] = base->actuator_biasprm[mjNBIAS * a + k] * scale;
      }
    }
  }
}

absl::Status Env::ObserveInto(float* obs) {
  ROBOLOOP_RETURN_IF_ERROR(task_->ObserveOrError(model_, data_.get(), obs));
  AddObservationNoise(obs);
  return absl::OkStatus();
}

bool Env::ObservationFinite(const float* obs) {
  int offset = 0;
  for (const ArraySpec& key : task_->obs_spec().keys) {
    for (int i = 0; i < key.size(); ++i) {
      if (std::isfinite(obs[offset + i])) continue;
      end_detail_ = absl::StrCat("observation '", key.name, "'[", i, "]",
                                 length_ > 0 ? absl::StrCat(" of step ", length_ - 1) : "", " is ", obs[offset + i]);
      return false;
    }
    offset += key.size();
  }
  return true;
}

void Env::AddObservationNoise(float* obs) {
  for (const NoiseSlice& slice : noise_slices_) {
    for (int i = 0; i < slice.size; ++i) {
      obs[slice.offset + i] += static_cast<float>(slice.std * noise_rng_.Normal());
    }
  }
}

bool Env::PrepareAction(const float* action, int action_size) {
  const ActionSpec& bounds = task_->action_spec();
  if (action_size != bounds.size()) {
    end_detail_ = absl::StrCat("action has ", action_size, " values, the task takes ", bounds.size());
    return false;
  }
  float* slot = &delay_line_[static_cast<size_t>(delay_head_) * action_size];
  for (int i = 0; i < action_size; ++i) {
    if (!std::isfinite(action[i])) {
      end_detail_ = absl::StrCat("action[", i, "] is ", action[i]);
      return false;
    }
    float value = action[i];
    if (options_.robustness.action_noise_std > 0.0) {
      value += static_cast<float>(options_.robustness.action_noise_std * noise_rng_.Normal());
    }
    slot[i] = std::clamp(value, bounds.low[i], bounds.high[i]);
  }
  // The oldest entry of the delay line is the one applied now (itself when delay is 0).
  const int slots = options_.robustness.action_delay + 1;
  delay_head_ = (delay_head_ + 1) % slots;
  const float* applied = &delay_line_[static_cast<size_t>(delay_head_) * action_size];
  std::copy(applied, applied + action_size, clipped_action_.begin());
  return true;
}

EndReason Env::Step(const float* action, int action_size, float* obs, const uint8_t* images) {
  ROBOLOOP_CHECK_MSG(!done(), "Env::Step after the episode ended");
  if (!PrepareAction(action, action_size)) {
    Finish(EndReason::kInvalidAction, nullptr);
    return end_;
  }
  if (options_.record_trajectory) RecordBeforeStep(obs, images);
  mjData* d = data_.get();
  absl::Status stepped = GuardMujoco("mj_step", [&] {
    task_->ApplyAction(model_, clipped_action_.data(), d);
    for (int i = 0; i < task_->control_substeps(); ++i) mj_step(model_, d);
  });
  ++length_;
  if (!stepped.ok() || PhysicsDiverged()) {
    if (!stepped.ok()) end_detail_ = std::string(stepped.message());
    Finish(EndReason::kUnstable, nullptr);
    return end_;
  }
  hash_chain_ = ChainHash(hash_chain_, HashPhysicsState(model_, d));
  const double reward = task_->Reward(model_, d);
  if (!std::isfinite(reward)) {
    end_detail_ = absl::StrCat("the reward of step ", length_ - 1, " is ", reward);
    Finish(EndReason::kInvalidReward, nullptr);
    return end_;
  }
  return_ += reward;
  if (options_.record_trajectory) trajectory_.rewards.push_back(static_cast<float>(reward));
  if (task_->SuccessCondition(model_, d)) {
    longest_streak_ = std::max(longest_streak_, ++condition_streak_);
  } else {
    condition_always_ = false;
    condition_streak_ = 0;
  }
  if (absl::Status observed = ObserveInto(obs); !observed.ok()) {
    end_detail_ = absl::StrCat(observed.message(), " (step ", length_ - 1, ")");
    Finish(EndReason::kTaskError, nullptr);
    return end_;
  }
  if (!ObservationFinite(obs)) {
    Finish(EndReason::kInvalidObservation, nullptr);
    return end_;
  }
  if (task_->Terminated(model_, d)) {
    Finish(EndReason::kTerminated, obs);
  } else if (length_ >= horizon_) {
    Finish(EndReason::kTruncated, obs);
  }
  return end_;
}

void Env::RecordBeforeStep(const float* obs, const uint8_t* images) {
  const int obs_size = task_->obs_spec().size();
  trajectory_.obs.insert(trajectory_.obs.end(), obs, obs + obs_size);
  if (images != nullptr) {
    trajectory_.images.insert(trajectory_.images.end(), images, images + task_->obs_spec().image_bytes());
  }
  trajectory_.actions.insert(trajectory_.actions.end(), clipped_action_.begin(),
                             clipped_action_.end());
  const size_t state_size = PhysicsStateSize(model_);
  trajectory_.states.resize(trajectory_.states.size() + state_size);
  CapturePhysicsState(model_, data_.get(), &trajectory_.states[trajectory_.states.size() - state_size]);
  trajectory_.dones.push_back(0);
}

void Env::Finish(EndReason reason, const float* obs) {
  end_ = reason;
  end_time_ = std::chrono::steady_clock::now();
  if (!options_.record_trajectory) return;
  // A step that failed recorded its inputs but has no reward.
  trajectory_.rewards.resize(trajectory_.dones.size(), 0.0f);
  if (!trajectory_.dones.empty()) trajectory_.dones.back() = 1;
  if (obs != nullptr) {
    trajectory_.final_obs.assign(obs, obs + task_->obs_spec().size());
  }
}

int Env::InstabilityWarnings() const {
  int count = 0;
  for (int warning : kInstabilityWarnings) count += data_->warning[warning].number;
  return count;
}

bool Env::PhysicsDiverged() {
  const mjData* d = data_.get();
  if (InstabilityWarnings() != warnings_at_reset_) {
    end_detail_ = absl::StrCat("physics diverged: MuJoCo reported a bad qpos/qvel/qacc at t=",
                               d->time);
    return true;
  }
  if (!AllFinite(d->qpos, model_->nq) || !AllFinite(d->qvel, model_->nv)) {
    end_detail_ = absl::StrCat("physics diverged: non-finite state at t=", d->time);
    return true;
  }
  return false;
}

bool Env::success() const {
  if (end_ == EndReason::kNone || end_ == EndReason::kInvalidAction ||
      end_ == EndReason::kUnstable || end_ == EndReason::kInvalidReward || end_ == EndReason::kInvalidObservation ||
      end_ == EndReason::kTaskError) {
    return false;
  }
  const SuccessRule& rule = task_->success_rule();
  switch (rule.kind) {
    case SuccessRule::Kind::kEveryStep: return condition_always_ && length_ >= horizon_;
    case SuccessRule::Kind::kFinalSteps: return condition_streak_ >= rule.steps;
    case SuccessRule::Kind::kHeldFor: return longest_streak_ >= rule.steps;
  }
  return false;
}

uint64_t Env::current_state_hash() const { return HashPhysicsState(model_, data_.get()); }

double Env::wall_time_s() const {
  const auto end = done() ? end_time_ : std::chrono::steady_clock::now();
  return std::chrono::duration<double>(end - start_).count();
}

}  // namespace roboloop::sim
