// The flag table of a TrainJob, walked both to print a command line and to parse one.
#include "train/train_job.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <functional>
#include <type_traits>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "registry/policy_kind.h"
#include "train/train_config_check.h"
#include "train/training_device.h"

namespace roboloop::train {
namespace {

constexpr char kWorkerGroup[] = "Worker (set by TrainService)";

// --nproc-per-node: at least one rank, at most kMaxLocalRanks.
constexpr NumberRange kLocalRanks{1, false, kMaxLocalRanks, false};

// One flag: its name, help, how to print the field and how to parse it back.
struct JobFlag {
  std::string name;
  std::string help;
  std::string group = "Options";
  bool is_switch = false;                                    // takes no value
  bool repeated = false;                                     // may be given many times
  std::string value_name = "TEXT";                           // the value's kind in --help
  std::function<std::string(const TrainJob&)> print;        // the field as the flag's value
  std::function<std::vector<std::string>(const TrainJob&)> print_all;  // a repeated flag's values
  // Parses one value into the job: "" when it is taken, else what is wrong with it.
  std::function<std::string(TrainJob&, const std::string&)> parse;
};

std::string PrintNumber(int32_t v) { return absl::StrCat(v); }
std::string PrintNumber(int64_t v) { return absl::StrCat(v); }
std::string PrintNumber(uint64_t v) { return absl::StrCat(v); }
std::string PrintNumber(double v) { return absl::StrFormat("%.17g", v); }  // exact round trip

bool ParseNumber(const std::string& text, int32_t* v) { return absl::SimpleAtoi(text, v); }
bool ParseNumber(const std::string& text, int64_t* v) { return absl::SimpleAtoi(text, v); }
bool ParseNumber(const std::string& text, uint64_t* v) { return absl::SimpleAtoi(text, v); }
bool ParseNumber(const std::string& text, double* v) { return absl::SimpleAtod(text, v); }

// Why `text` is no value of a T flag: not a number, a fraction for a whole number, or beyond T's range.
template <typename T>
std::string NotAValue(const std::string& text) {
  double value = 0;
  if (std::is_floating_point_v<T> || !absl::SimpleAtod(text, &value)) return absl::StrCat("'", text, "' is not a number");
  if (value != static_cast<double>(static_cast<int64_t>(value)) && std::abs(value) < 9e18) {
    return absl::StrCat("'", text, "' is not a whole number");
  }
  return absl::StrCat("'", text, "' is out of range (", std::numeric_limits<T>::min(), " to ",
                      std::numeric_limits<T>::max(), ")");
}

JobFlag Named(const char* name, const char* help) {
  JobFlag flag;
  flag.name = name;
  flag.help = help;
  return flag;
}

// A number flag whose values must lie in `range` (a value outside it is refused, never taken
// as "the default").
template <typename T>
JobFlag Number(const char* name, const char* help, T (*get)(const TrainJob&), void (*set)(TrainJob&, T),
               NumberRange range = NumberRange{}) {
  JobFlag flag = Named(name, help);
  flag.value_name = std::is_floating_point_v<T> ? "FLOAT" : "INT";
  flag.print = [get](const TrainJob& job) { return PrintNumber(get(job)); };
  flag.parse = [set, range](TrainJob& job, const std::string& text) {
    T value{};
    if (!ParseNumber(text, &value)) return NotAValue<T>(text);
    std::string violation = RangeViolation(static_cast<double>(value), range);
    if (violation.empty()) set(job, value);
    return violation;
  };
  return flag;
}

JobFlag Text(const char* name, const char* help, std::string (*get)(const TrainJob&),
             void (*set)(TrainJob&, const std::string&)) {
  JobFlag flag = Named(name, help);
  flag.print = get;
  flag.parse = [set](TrainJob& job, const std::string& text) {
    set(job, text);
    return std::string();
  };
  return flag;
}

// A text flag whose value must be one of `choices`.
JobFlag Choice(const char* name, const char* help, std::vector<std::string> choices,
               std::string (*get)(const TrainJob&), void (*set)(TrainJob&, const std::string&)) {
  JobFlag flag = Text(name, help, get, set);
  flag.parse = [set, choices = std::move(choices)](TrainJob& job, const std::string& text) {
    if (std::find(choices.begin(), choices.end(), text) == choices.end()) {
      return absl::StrCat("'", text, "' is not one of ", absl::StrJoin(choices, ", "));
    }
    set(job, text);
    return std::string();
  };
  return flag;
}

// --device: one of the forms ResolveTrainingDevice takes (whether the GPU exists is the rank's to say).
std::string CheckDeviceForm(const std::string& text) {
  const absl::StatusOr<TrainingDevice> device = ResolveTrainingDevice(text, 0, std::numeric_limits<int>::max());
  return device.ok() ? "" : std::string(device.status().message());
}

// --policy: a kind `roboloop train` can train ("" when it is one, else the kinds it can).
std::string CheckTrainablePolicyKind(const std::string& text) {
  const std::vector<std::string> known = registry::TrainablePolicyKindNames();
  if (std::find(known.begin(), known.end(), text) != known.end()) return "";
  return absl::StrCat("unknown policy kind '", text, "' (known: ", absl::StrJoin(known, ", "), ")");
}

// A flag given once per value; `parse` adds one value.
JobFlag Repeated(const char* name, const char* help, std::vector<std::string> (*get)(const TrainJob&),
                 void (*add)(TrainJob&, const std::string&)) {
  JobFlag flag = Named(name, help);
  flag.repeated = true;
  flag.print_all = get;
  flag.parse = [add](TrainJob& job, const std::string& text) {
    add(job, text);
    return std::string();
  };
  return flag;
}

JobFlag Switch(const char* name, const char* help, bool (*get)(const TrainJob&), void (*set)(TrainJob&)) {
  JobFlag flag = Named(name, help);
  flag.is_switch = true;
  flag.print = [get](const TrainJob& job) { return std::string(get(job) ? "on" : ""); };
  flag.parse = [set](TrainJob& job, const std::string&) {
    set(job);
    return std::string();
  };
  return flag;
}

JobFlag InGroup(JobFlag flag, const char* group) {
  flag.group = group;
  return flag;
}

// Flags that override the TrainConfig.
void AddConfigFlags(std::vector<JobFlag>& flags) {
  using J = TrainJob;
  flags.push_back(Repeated("--dataset",
                           "Dataset: HDF5 file, folder of them, glob or registry reference; repeated, the "
                           "datasets are trained on as one set",
                           [](const J& j) {
                             std::vector<std::string> all(j.overrides.datasets().begin(), j.overrides.datasets().end());
                             if (!j.overrides.dataset().empty()) all.insert(all.begin(), j.overrides.dataset());
                             return all;
                           },
                           [](J& j, const std::string& v) {
                             if (j.overrides.dataset().empty()) {
                               j.overrides.set_dataset(v);
                             } else {
                               j.overrides.add_datasets(v);
                             }
                           }));
  flags.push_back(Text("--split", "Train on the demos of this mask of the dataset, e.g. train (default: every demo)",
                       [](const J& j) { return j.overrides.split(); },
                       [](J& j, const std::string& v) { j.overrides.set_split(v); }));
  flags.push_back(Text("--validation-split", "Report the loss on the demos of this mask, e.g. valid",
                       [](const J& j) { return j.overrides.validation_split(); },
                       [](J& j, const std::string& v) { j.overrides.set_validation_split(v); }));
  flags.push_back(Number<int64_t>("--validate-every",
                                  "Steps between validation losses (default --checkpoint-every, else steps/10)",
                                  [](const J& j) { return j.overrides.validate_every(); },
                                  [](J& j, int64_t v) { j.overrides.set_validate_every(v); }, kPositive));
  flags.push_back(Text("--model", "Registry model name of the checkpoints (default policy)",
                       [](const J& j) { return j.overrides.model(); },
                       [](J& j, const std::string& v) { j.overrides.set_model(v); }));
  JobFlag policy = Text("--policy", "Policy kind: mlp or transformer (default transformer)",
                        [](const J& j) { return j.overrides.policy().kind(); },
                        [](J& j, const std::string& v) { j.overrides.mutable_policy()->set_kind(v); });
  policy.parse = [](J& j, const std::string& v) {
    std::string problem = CheckTrainablePolicyKind(v);
    if (problem.empty()) j.overrides.mutable_policy()->set_kind(v);
    return problem;
  };
  flags.push_back(policy);
  flags.push_back(Number<int32_t>("--history", "Observation steps the policy reads",
                                  [](const J& j) { return j.overrides.policy().history(); },
                                  [](J& j, int32_t v) { j.overrides.mutable_policy()->set_history(v); }, kPositive));
  flags.push_back(Number<int32_t>("--chunk", "Actions predicted per call",
                                  [](const J& j) { return j.overrides.policy().chunk(); },
                                  [](J& j, int32_t v) { j.overrides.mutable_policy()->set_chunk(v); }, kPositive));
  flags.push_back(Switch("--flow-matching", "Transformer: flow-matching action head",
                         [](const J& j) { return j.overrides.policy().flow_matching(); },
                         [](J& j) { j.overrides.mutable_policy()->set_flow_matching(true); }));
  flags.push_back(Number<int64_t>("--steps", "Optimisation steps", [](const J& j) { return j.overrides.steps(); },
                                  [](J& j, int64_t v) { j.overrides.set_steps(v); }, kPositive));
  flags.push_back(Number<int32_t>("--batch-size", "Samples per rank per step",
                                  [](const J& j) { return j.overrides.batch_size(); },
                                  [](J& j, int32_t v) { j.overrides.set_batch_size(v); }, kPositive));
  flags.push_back(Number<uint64_t>("--seed", "Seed", [](const J& j) { return j.overrides.seed(); },
                                   [](J& j, uint64_t v) { j.overrides.set_seed(v); }));
  flags.push_back(Number<double>("--lr", "Peak learning rate", [](const J& j) { return j.overrides.optimizer().lr(); },
                                 [](J& j, double v) { j.overrides.mutable_optimizer()->set_lr(v); }, kPositive));
  flags.push_back(Number<int64_t>("--checkpoint-every", "Register a checkpoint every K steps",
                                  [](const J& j) { return j.overrides.checkpoint_every(); },
                                  [](J& j, int64_t v) { j.overrides.set_checkpoint_every(v); }, kPositive));
  flags.push_back(Number<double>("--data-cache-mb",
                                  "Training data held per rank, MiB (default 1/8 of available memory); "
                                  "a larger dataset is streamed from its file",
                                  [](const J& j) { return j.overrides.data_cache_mb(); },
                                  [](J& j, double v) { j.overrides.set_data_cache_mb(v); }, kPositive));
  flags.push_back(Number<int32_t>("--threads", "Torch threads per rank (default 1)",
                                  [](const J& j) { return j.overrides.threads(); },
                                  [](J& j, int32_t v) { j.overrides.set_threads(v); }, kPositive));
  JobFlag device = Text("--device", "cpu | cuda (each rank on cuda:LOCAL_RANK, NCCL) | cuda:N | auto (default cpu)",
                        [](const J& j) { return j.overrides.device(); },
                        [](J& j, const std::string& v) { j.overrides.set_device(v); });
  device.parse = [](J& j, const std::string& v) {
    std::string problem = CheckDeviceForm(v);
    if (problem.empty()) j.overrides.set_device(v);
    return problem;
  };
  flags.push_back(device);
  flags.push_back(Choice("--precision", "fp32 | bf16 | fp8 (default fp32; fp8: CUDA compute capability 8.9+ or the CPU)",
                         {"fp32", "bf16", "fp8"}, [](const J& j) { return j.overrides.precision(); },
                         [](J& j, const std::string& v) { j.overrides.set_precision(v); }));
  flags.push_back(Choice("--fp8-scaling", "With --precision fp8: tensorwise | rowwise (CUDA only) (default tensorwise)",
                         {"tensorwise", "rowwise"}, [](const J& j) { return j.overrides.fp8_scaling(); },
                         [](J& j, const std::string& v) { j.overrides.set_fp8_scaling(v); }));
  flags.push_back(Choice("--cuda-graph",
                         "auto | on | off: the training step as a CUDA graph replay (default auto: on one GPU "
                         "with static shapes, e.g. --no-packing)",
                         {"auto", "on", "off"}, [](const J& j) { return j.overrides.cuda_graph(); },
                         [](J& j, const std::string& v) { j.overrides.set_cuda_graph(v); }));
  flags.push_back(Text("--resume", "Continue the run of this checkpoint",
                       [](const J& j) { return j.overrides.resume(); },
                       [](J& j, const std::string& v) { j.overrides.set_resume(v); }));
  flags.push_back(Text("--init-from", "Fine-tune from this checkpoint",
                       [](const J& j) { return j.overrides.init_from(); },
                       [](J& j, const std::string& v) { j.overrides.set_init_from(v); }));
  flags.push_back(Number<double>("--rendezvous-timeout", "Seconds to wait for the other ranks (default 60)",
                                 [](const J& j) { return j.overrides.rendezvous_timeout_s(); },
                                 [](J& j, double v) { j.overrides.set_rendezvous_timeout_s(v); }, kPositive));
  flags.push_back(Switch("--no-packing", "Transformer: padded attention instead of packing",
                         [](const J& j) { return j.overrides.no_packing(); },
                         [](J& j) { j.overrides.set_no_packing(true); }));
}

// Flags of the launch and the registry (the latter as every other command names them).
void AddLaunchFlags(std::vector<JobFlag>& flags) {
  using J = TrainJob;
  flags.push_back(Number<int32_t>("--nproc-per-node",
                                  "Local ranks, 1 to 256 (data parallel: Gloo on the CPU, NCCL on CUDA)",
                                  [](const J& j) { return j.nproc_per_node; },
                                  [](J& j, int32_t v) { j.nproc_per_node = v; }, kLocalRanks));
  flags.push_back(Text("--registry", "Remote registry HOST:PORT or unix:PATH (default: embedded on --root)",
                       [](const J& j) { return j.registry_address; },
                       [](J& j, const std::string& v) { j.registry_address = v; }));
  flags.push_back(Text("--root", "Local store: embedded registry, training runs (default .roboloop)",
                       [](const J& j) { return j.root; }, [](J& j, const std::string& v) { j.root = v; }));
  flags.push_back(Text("--registry-token-file", "Bearer token file for --registry",
                       [](const J& j) { return j.registry_token_file; },
                       [](J& j, const std::string& v) { j.registry_token_file = v; }));
  flags.push_back(Text("--registry-tls-ca", "PEM roots to trust for --registry; turns on TLS",
                       [](const J& j) { return j.registry_tls_ca_file; },
                       [](J& j, const std::string& v) { j.registry_tls_ca_file = v; }));
  flags.push_back(Text("--registry-tls-server-name", "Name expected in the registry's certificate",
                       [](const J& j) { return j.registry_tls_server_name; },
                       [](J& j, const std::string& v) { j.registry_tls_server_name = v; }));
}

// Flags only TrainService sets.
void AddWorkerFlags(std::vector<JobFlag>& flags) {
  using J = TrainJob;
  flags.push_back(InGroup(Text("--run-id", "Id of the run (default: a new one)", [](const J& j) { return j.run_id; },
                               [](J& j, const std::string& v) { j.run_id = v; }),
                          kWorkerGroup));
  flags.push_back(InGroup(Number<int32_t>("--progress-fd", "Descriptor rank 0 writes its TrainEvents to",
                                          [](const J& j) { return j.progress_fd; },
                                          [](J& j, int32_t v) { j.progress_fd = v; }),
                          kWorkerGroup));
  flags.push_back(InGroup(Number<int32_t>("--exit-with-parent", "Stop (checkpointing) when this process dies",
                                          [](const J& j) { return j.exit_with_parent; },
                                          [](J& j, int32_t v) { j.exit_with_parent = v; }),
                          kWorkerGroup));
}

const std::vector<JobFlag>& Flags() {
  static const std::vector<JobFlag>* const flags = [] {
    auto* all = new std::vector<JobFlag>;
    AddConfigFlags(*all);
    AddLaunchFlags(*all);
    AddWorkerFlags(*all);
    return all;
  }();
  return *flags;
}

}  // namespace

std::vector<std::string> TrainJobArgv(const std::string& program, const TrainJob& job) {
  std::vector<std::string> argv = {program, kTrainSubcommand};
  if (!job.config_path.empty()) argv.push_back(job.config_path);
  const TrainJob defaults;
  for (const JobFlag& flag : Flags()) {
    if (flag.repeated) {
      for (const std::string& value : flag.print_all(job)) argv.insert(argv.end(), {flag.name, value});
      continue;
    }
    const std::string value = flag.print(job);
    if (value == flag.print(defaults)) continue;
    argv.push_back(flag.name);
    if (!flag.is_switch) argv.push_back(value);
  }
  return argv;
}

void AddTrainJobFlags(CLI::App* command, TrainJob* job) {
  command->add_option("CONFIG", job->config_path, "YAML TrainConfig (proto/roboloop/v1/train.proto)");
  for (const JobFlag& flag : Flags()) {
    const JobFlag* f = &flag;  // the table lives as long as the process
    CLI::Option* option =
        f->repeated
            ? command
                  ->add_option_function<std::vector<std::string>>(
                      f->name,
                      [f, job](const std::vector<std::string>& values) {
                        for (const std::string& value : values) f->parse(*job, value);
                      },
                      f->help)
                  ->allow_extra_args(false)
        : f->is_switch
            ? command->add_flag_function(f->name, [f, job](int64_t) { f->parse(*job, ""); }, f->help)
            : command->add_option_function<std::string>(
                  f->name,
                  [f, job](const std::string& text) {
                    const std::string problem = f->parse(*job, text);
                    if (!problem.empty()) throw CLI::ValidationError(f->name, problem);
                  },
                  f->help);
    option->group(f->group);
    if (!f->is_switch) option->type_name(f->value_name);
  }
}

}  // namespace roboloop::train
