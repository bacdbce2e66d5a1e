// The typed job of the `roboloop train` worker (issue 27): TrainJobArgv and AddTrainJobFlags
// walk one flag table, so every field survives a print-and-parse round trip.
#include <CLI/CLI.hpp>
#include <gmock/gmock.h>
#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include <limits>

#include "train/train_config_check.h"
#include "train/train_job.h"

namespace roboloop::train {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Parses `argv` ({program, "train", ...}) as `roboloop train` does.
TrainJob ParseAsTheCliDoes(const std::vector<std::string>& argv) {
  TrainJob job;
  CLI::App app;
  CLI::App* train = app.add_subcommand(kTrainSubcommand);
  AddTrainJobFlags(train, &job);
  std::vector<const char*> c_argv;
  for (const std::string& arg : argv) c_argv.push_back(arg.c_str());
  app.parse(static_cast<int>(c_argv.size()), c_argv.data());
  EXPECT_TRUE(train->parsed());
  return job;
}

// A job whose every field differs from the default.
TrainJob EveryFieldSet() {
  TrainJob job;
  job.config_path = "/tmp/request.json";
  v1::TrainConfig& o = job.overrides;
  o.set_dataset("demos@latest");
  o.add_datasets("parts/");  // a repeated --dataset
  o.add_datasets("more-*.hdf5");
  o.set_model("served");
  o.mutable_policy()->set_kind("mlp");
  o.mutable_policy()->set_history(3);
  o.mutable_policy()->set_chunk(4);
  o.mutable_policy()->set_flow_matching(true);
  o.set_steps(int64_t{1} << 40);
  o.set_batch_size(8);
  o.set_seed(UINT64_MAX);
  o.mutable_optimizer()->set_lr(0.1 + 0.2);  // not exactly 0.3: printed with every digit
  o.set_checkpoint_every(7);
  o.set_threads(2);
  o.set_device("cuda:1");
  o.set_precision("fp8");
  o.set_fp8_scaling("rowwise");
  o.set_cuda_graph("off");
  o.set_resume("served@3");
  o.set_init_from("base@1");
  o.set_rendezvous_timeout_s(12.5);
  o.set_no_packing(true);
  o.set_split("train");
  o.set_validation_split("valid");
  o.set_validate_every(9);
  job.nproc_per_node = 4;
  job.root = "/srv/root";
  job.registry_address = "unix:/run/registry.sock";
  job.registry_token_file = "/etc/token";
  job.registry_tls_ca_file = "/etc/ca.pem";
  job.registry_tls_server_name = "registry.local";
  job.run_id = "run-1";
  job.progress_fd = 3;
  job.exit_with_parent = 4242;
  return job;
}

void ExpectSameJob(const TrainJob& a, const TrainJob& b) {
  EXPECT_EQ(a.config_path, b.config_path);
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(a.overrides, b.overrides))
      << a.overrides.DebugString() << "\nvs\n" << b.overrides.DebugString();
  EXPECT_EQ(a.nproc_per_node, b.nproc_per_node);
  EXPECT_EQ(a.root, b.root);
  EXPECT_EQ(a.registry_address, b.registry_address);
  EXPECT_EQ(a.registry_token_file, b.registry_token_file);
  EXPECT_EQ(a.registry_tls_ca_file, b.registry_tls_ca_file);
  EXPECT_EQ(a.registry_tls_server_name, b.registry_tls_server_name);
  EXPECT_EQ(a.run_id, b.run_id);
  EXPECT_EQ(a.progress_fd, b.progress_fd);
  EXPECT_EQ(a.exit_with_parent, b.exit_with_parent);
}

TEST(TrainJobTest, EveryFieldSurvivesTheRoundTrip) {
  const TrainJob job = EveryFieldSet();
  const std::vector<std::string> argv = TrainJobArgv("roboloop", job);
  ExpectSameJob(ParseAsTheCliDoes(argv), job);
}

TEST(TrainJobTest, ADefaultJobIsTheBareSubcommand) {
  EXPECT_THAT(TrainJobArgv("roboloop", TrainJob{}), ElementsAre("roboloop", "train"));
  ExpectSameJob(ParseAsTheCliDoes({"roboloop", "train"}), TrainJob{});
}

TEST(TrainJobTest, FlagsKeepTheirUserFacingNames) {
  TrainJob job;
  job.overrides.set_steps(5);
  job.nproc_per_node = 2;
  job.root = "r";
  EXPECT_THAT(TrainJobArgv("roboloop", job),
              ElementsAre("roboloop", "train", "--steps", "5", "--nproc-per-node", "2", "--root", "r"));
}

TEST(TrainJobTest, AMalformedNumberNamesTheFlag) {
  try {
    ParseAsTheCliDoes({"roboloop", "train", "--steps", "many"});
    FAIL() << "--steps many was accepted";
  } catch (const CLI::ValidationError& e) {
    EXPECT_THAT(e.what(), HasSubstr("--steps"));
    EXPECT_THAT(e.what(), HasSubstr("many"));
  }
}

// Parses `argv` and returns the CLI11 message of the flag it refuses ("" when it takes them all).
std::string RefusalOf(const std::vector<std::string>& argv) {
  try {
    ParseAsTheCliDoes(argv);
  } catch (const CLI::ValidationError& e) {
    return e.what();
  }
  return "";
}

TEST(TrainJobTest, NumbersOutOfTheFlagsRangeAreRefusedNamingTheFlag) {
  EXPECT_THAT(RefusalOf({"roboloop", "train", "--lr", "nan"}), HasSubstr("--lr: must be a finite number > 0, got nan"));
  EXPECT_THAT(RefusalOf({"roboloop", "train", "--lr", "inf"}), HasSubstr("--lr: must be a finite number > 0, got inf"));
  EXPECT_THAT(RefusalOf({"roboloop", "train", "--lr", "0"}), HasSubstr("--lr: must be a finite number > 0, got 0"));
  EXPECT_THAT(RefusalOf({"roboloop", "train", "--steps", "0"}), HasSubstr("--steps: must be a finite number > 0"));
  EXPECT_THAT(RefusalOf({"roboloop", "train", "--batch-size", "-1"}), HasSubstr("--batch-size: must be"));
  EXPECT_THAT(RefusalOf({"roboloop", "train", "--checkpoint-every", "-1"}), HasSubstr("--checkpoint-every: must be"));
  EXPECT_THAT(RefusalOf({"roboloop", "train", "--threads", "-1"}), HasSubstr("--threads: must be"));
  EXPECT_THAT(RefusalOf({"roboloop", "train", "--validate-every", "-1"}), HasSubstr("--validate-every: must be"));
  EXPECT_THAT(RefusalOf({"roboloop", "train", "--rendezvous-timeout", "nan"}), HasSubstr("--rendezvous-timeout: must be"));
  EXPECT_THAT(RefusalOf({"roboloop", "train", "--data-cache-mb", "nan"}), HasSubstr("--data-cache-mb: must be"));
  EXPECT_THAT(RefusalOf({"roboloop", "train", "--nproc-per-node", "-1"}), HasSubstr("--nproc-per-node: must be in [1, 256]"));
  EXPECT_THAT(RefusalOf({"roboloop", "train", "--nproc-per-node", "1000"}), HasSubstr("got 1000"));
  EXPECT_EQ(RefusalOf({"roboloop", "train", "--nproc-per-node", "256", "--lr", "1e-3", "--steps", "1"}), "");
}

// QA: a fraction, a negative seed and a huge step count were all "'…' is not a number".
TEST(TrainJobTest, AWholeNumberFlagSaysWhyANumberIsNoValue) {
  EXPECT_THAT(RefusalOf({"roboloop", "train", "--steps", "2.5"}), HasSubstr("--steps: '2.5' is not a whole number"));
  EXPECT_THAT(RefusalOf({"roboloop", "train", "--seed", "-1"}),
              HasSubstr("--seed: '-1' is out of range (0 to 18446744073709551615)"));
  EXPECT_THAT(RefusalOf({"roboloop", "train", "--steps", "99999999999999999999"}),
              HasSubstr("'99999999999999999999' is out of range (-9223372036854775808 to 9223372036854775807)"));
  EXPECT_THAT(RefusalOf({"roboloop", "train", "--lr", "fast"}), HasSubstr("--lr: 'fast' is not a number"));
}

TEST(TrainJobTest, WordsOutsideTheFlagsChoicesAreRefusedNamingTheFlag) {
  EXPECT_THAT(RefusalOf({"roboloop", "train", "--device", "gpu"}),
              HasSubstr("--device: device 'gpu' is not one of cpu, cuda, cuda:N, auto"));
  EXPECT_THAT(RefusalOf({"roboloop", "train", "--precision", "fp16"}),
              HasSubstr("--precision: 'fp16' is not one of fp32, bf16, fp8"));
  EXPECT_THAT(RefusalOf({"roboloop", "train", "--cuda-graph", "maybe"}), HasSubstr("--cuda-graph: 'maybe'"));
  EXPECT_THAT(RefusalOf({"roboloop", "train", "--fp8-scaling", "bogus"}), HasSubstr("--fp8-scaling: 'bogus'"));
  EXPECT_THAT(RefusalOf({"roboloop", "train", "--policy", "cnn"}),
              HasSubstr("--policy: unknown policy kind 'cnn' (known: mlp, transformer)"));
  EXPECT_EQ(RefusalOf({"roboloop", "train", "--device", "cuda:3", "--precision", "bf16", "--policy", "mlp"}), "");
}

// A config with the defaults filled, as CheckTrainConfig sees it.
v1::TrainConfig Checkable() {
  v1::TrainConfig config;
  config.mutable_optimizer()->set_lr(3e-4);
  config.set_steps(10);
  config.set_batch_size(8);
  config.set_token_budget(8192);
  config.set_threads(1);
  config.set_loader_workers(1);
  config.set_prefetch(4);
  config.set_log_every(1);
  config.set_rendezvous_timeout_s(60);
  return config;
}

TEST(TrainConfigCheckTest, EachNumberOutOfRangeIsNamedWithItsRange) {
  EXPECT_TRUE(CheckTrainConfig(Checkable()).ok()) << CheckTrainConfig(Checkable());
  v1::TrainConfig bad = Checkable();
  bad.mutable_optimizer()->set_min_lr_ratio(-3);
  bad.mutable_optimizer()->set_weight_decay(-1);
  bad.mutable_optimizer()->set_clip_norm(-1);
  bad.mutable_optimizer()->set_lr(std::numeric_limits<double>::quiet_NaN());
  bad.set_rendezvous_timeout_s(-1);
  const absl::Status status = CheckTrainConfig(bad);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  const std::string message(status.message());
  EXPECT_THAT(message, HasSubstr("config key optimizer.min_lr_ratio must be in [0, 1], got -3"));
  EXPECT_THAT(message, HasSubstr("config key optimizer.weight_decay must be a finite number >= 0, got -1"));
  EXPECT_THAT(message, HasSubstr("config key optimizer.clip_norm must be a finite number >= 0, got -1"));
  EXPECT_THAT(message, HasSubstr("config key optimizer.lr (--lr) must be a finite number > 0, got nan"));
  EXPECT_THAT(message, HasSubstr("config key rendezvous_timeout_s (--rendezvous-timeout) must be"));
  bad = Checkable();
  bad.mutable_policy()->set_kind("mlp");
  bad.set_no_packing(true);
  EXPECT_THAT(std::string(CheckTrainConfig(bad).message()),
              HasSubstr("no_packing (--no-packing) applies to policy 'transformer' only, not to 'mlp'"));
  bad.mutable_policy()->set_kind("transformer");
  EXPECT_TRUE(CheckTrainConfig(bad).ok());
  bad = Checkable();
  bad.set_model("Bad Name");
  EXPECT_THAT(std::string(CheckTrainConfig(bad).message()),
              HasSubstr("config key model (--model): invalid model name \"Bad Name\""));
  bad.set_model("${vars.model}");
  EXPECT_TRUE(CheckTrainConfig(bad).ok()) << "a pipeline's reference is checked once substituted";
  bad = Checkable();
  bad.mutable_optimizer()->set_min_lr_ratio(5);
  EXPECT_THAT(std::string(CheckTrainConfig(bad).message()), HasSubstr("min_lr_ratio must be in [0, 1], got 5"));
  // QA: a chunk beyond the token budget failed at step 0, after the datasets were registered.
  bad = Checkable();
  bad.mutable_policy()->set_kind("transformer");
  bad.mutable_policy()->set_history(2);
  bad.mutable_policy()->set_chunk(8191);
  EXPECT_THAT(std::string(CheckTrainConfig(bad).message()),
              HasSubstr("policy.history (--history) 2 + policy.chunk (--chunk) 8191 tokens of a sample exceed config "
                        "key token_budget 8192: raise token_budget or give --no-packing"));
  bad.mutable_policy()->set_chunk(8190);
  EXPECT_TRUE(CheckTrainConfig(bad).ok());
  bad.mutable_policy()->set_chunk(8191);
  bad.set_no_packing(true);
  EXPECT_TRUE(CheckTrainConfig(bad).ok());
}

}  // namespace
}  // namespace roboloop::train
