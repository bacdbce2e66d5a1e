// python/roboloop_policy.py against the C++ policies (issue 6, req 7): the same seeded weights
// and normalization, loaded once through TorchRuntime::LoadPolicy and once by the plain-PyTorch
// loader, give the same action chunks for windows with mixed history lengths. Policies with
// cameras (issue 23, req 4) run in C++ through TorchPolicy::ActChunkImages on seeded frames; their
// tolerance is the same relative error, ‖python − C++‖ / ‖C++‖ ≤ 1e-5 over the action chunk.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/train/policy_test_files.h"
#include "tests/util/subprocess.h"
#include "train/torch_runtime.h"

namespace roboloop::train {
namespace {

// Rows fed to every policy.
constexpr int kBatch = 7;

template <typename T>
void WriteRaw(const std::string& path, const std::vector<T>& values) {
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(values.data()),
             static_cast<std::streamsize>(values.size() * sizeof(T)));
}

std::vector<float> ReadFloats(const std::string& path) {
  const std::string bytes = roboloop::testing::ReadWholeFile(path);
  std::vector<float> values(bytes.size() / sizeof(float));
  std::memcpy(values.data(), bytes.data(), values.size() * sizeof(float));
  return values;
}

// ‖a − b‖ / ‖b‖ (1 when the sizes differ or b is zero).
double RelativeL2Error(const std::vector<float>& a, const std::vector<float>& b) {
  double diff = 0.0, ref = 0.0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    diff += (static_cast<double>(a[i]) - b[i]) * (static_cast<double>(a[i]) - b[i]);
    ref += static_cast<double>(b[i]) * b[i];
  }
  return a.size() == b.size() && ref > 0.0 ? std::sqrt(diff / ref) : 1.0;
}

// History lengths cycling through 1..history, so every padding amount appears.
std::vector<int32_t> MixedLengths(int batch, int history) {
  std::vector<int32_t> lengths(static_cast<size_t>(batch));
  for (int b = 0; b < batch; ++b) lengths[b] = 1 + (b * 3) % history;
  return lengths;
}

// Raw observations [batch, history, obs_dim], left-padded by repeating the oldest real step.
std::vector<float> PaddedWindows(const std::vector<int32_t>& lengths, int history, int obs_dim,
                                 uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  std::vector<float> obs(lengths.size() * history * obs_dim);
  for (size_t b = 0; b < lengths.size(); ++b) {
    const int first_real = history - lengths[b];
    for (int h = first_real; h < history; ++h) {
      for (int d = 0; d < obs_dim; ++d) obs[(b * history + h) * obs_dim + d] = normal(rng);
    }
    for (int h = 0; h < first_real; ++h) {
      for (int d = 0; d < obs_dim; ++d) {
        obs[(b * history + h) * obs_dim + d] = obs[(b * history + first_real) * obs_dim + d];
      }
    }
  }
  return obs;
}

// `batch` random camera frames of `bytes` bytes each, back to back.
std::vector<uint8_t> RandomFrames(int batch, int bytes, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> value(0, 255);
  std::vector<uint8_t> frames(static_cast<size_t>(batch) * bytes);
  for (uint8_t& v : frames) v = static_cast<uint8_t>(value(rng));
  return frames;
}

class ExportPythonTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto runtime = TorchRuntime::Load();
    ASSERT_TRUE(runtime.ok()) << runtime.status();
    runtime_ = *runtime;
    dir_ = roboloop::testing::MakeTempDir("export_python");
  }

  // Writes a seeded policy of `spec` (policy options with "kind") into a new folder.
  std::string MakePolicy(const nlohmann::json& spec, uint32_t seed) {
    const std::string policy_dir = dir_ + "/" + spec["kind"].get<std::string>() +
                                   std::to_string(seed);
    roboloop::testing::ProgramResult made = roboloop::testing::RunProgram(
        {testing::kTorchPython, ROBOLOOP_SOURCE_DIR "/tests/train/make_policy_weights.py",
         spec.dump(), std::to_string(seed), policy_dir});
    EXPECT_EQ(made.exit_code, 0) << made.err;
    return policy_dir;
  }

  // Runs the export folder `policy_dir` in C++ (both inference modes) and in Python with the
  // roboloop_policy.py of `module_dir`, on seeded windows, and checks that the outputs agree.
  void ExpectPythonMatchesCpp(const std::string& policy_dir, const std::string& module_dir,
                              uint32_t seed) {
    const nlohmann::json config =
        nlohmann::json::parse(roboloop::testing::ReadWholeFile(policy_dir + "/config.json"));
    const std::string kind = config["policy"]["kind"];
    const nlohmann::json& spec = config["policy"]["options"];
    nlohmann::json options = spec;
    options["normalization"] =
        nlohmann::json::parse(roboloop::testing::ReadWholeFile(policy_dir + "/normalization.json"));
    auto policy = runtime_->LoadPolicy(policy_dir + "/model.safetensors", kind, options.dump());
    ASSERT_TRUE(policy.ok()) << policy.status();

    const int history = spec["history"], chunk = spec["chunk"];
    const int obs_dim = spec["obs_dim"], action_dim = spec["action_dim"];
    const std::vector<int32_t> lengths = MixedLengths(kBatch, history);
    const std::vector<float> obs = PaddedWindows(lengths, history, obs_dim, seed + 100);
    WriteRaw(policy_dir + "/obs.bin", obs);
    WriteRaw(policy_dir + "/lengths.bin", lengths);
    const int image_bytes = ImageBytes(spec);
    const std::vector<uint8_t> images = RandomFrames(kBatch, image_bytes, seed + 200);
    std::vector<std::string> python_args = {
        testing::kTorchPython, ROBOLOOP_SOURCE_DIR "/tests/train/run_exported_policy.py",
        module_dir, policy_dir, policy_dir + "/obs.bin", policy_dir + "/lengths.bin",
        std::to_string(kBatch), policy_dir + "/python.bin"};
    if (image_bytes > 0) {
      WriteRaw(policy_dir + "/images.bin", images);
      python_args.push_back(policy_dir + "/images.bin");
    }

    roboloop::testing::ProgramResult ran = roboloop::testing::RunProgram(python_args);
    ASSERT_EQ(ran.exit_code, 0) << ran.err;
    const std::vector<float> python = ReadFloats(policy_dir + "/python.bin");
    ASSERT_EQ(python.size(), static_cast<size_t>(kBatch * chunk * action_dim));

    for (bool batch_invariant : {false, true}) {
      std::vector<float> cpp(python.size());
      if (image_bytes > 0) {
        const absl::Status acted = (*policy)->ActChunkImages(obs.data(), lengths.data(), images.data(), image_bytes,
                                                             kBatch, history, obs_dim, cpp.data(), chunk, action_dim,
                                                             batch_invariant);
        ASSERT_TRUE(acted.ok()) << acted;
      } else {
        ASSERT_TRUE((*policy)
                        ->ActChunk(obs.data(), lengths.data(), kBatch, history, obs_dim, cpp.data(),
                                   chunk, action_dim, batch_invariant)
                        .ok());
      }
      EXPECT_LE(RelativeL2Error(python, cpp), 1e-5)
          << kind << " batch_invariant=" << batch_invariant << " options " << spec.dump();
    }
  }

  // Bytes of one row's frames for the policy options `spec` (0 without cameras).
  static int ImageBytes(const nlohmann::json& spec) {
    int bytes = 0;
    for (const nlohmann::json& camera : spec.value("cameras", nlohmann::json::array())) {
      bytes += camera["width"].get<int>() * camera["height"].get<int>() * 3;
    }
    return bytes;
  }

  // Runs the roboloop binary; fails the test when it fails.
  void Roboloop(const std::vector<std::string>& args) {
    roboloop::testing::ProgramResult r = roboloop::testing::RunRoboloop(args);
    ASSERT_EQ(r.exit_code, 0) << roboloop::testing::RoboloopBinary() << " " << absl::StrJoin(args, " ") << "\n"
                              << r.err;
  }

  const TorchRuntime* runtime_ = nullptr;
  std::string dir_;
};

TEST_F(ExportPythonTest, MlpWithHistory2Chunk3) {
  const std::string policy_dir =
      MakePolicy({{"kind", "mlp"}, {"obs_dim", 5}, {"action_dim", 2}, {"history", 2},
                  {"chunk", 3}, {"hidden", {32, 16}}, {"activation", "gelu"}},
                 1);
  ExpectPythonMatchesCpp(policy_dir, ROBOLOOP_SOURCE_DIR "/python", 1);
}

TEST_F(ExportPythonTest, TransformerWithHistory4Chunk3) {
  const std::string policy_dir =
      MakePolicy({{"kind", "transformer"}, {"obs_dim", 5}, {"action_dim", 2}, {"history", 4},
                  {"chunk", 3}, {"d_model", 16}, {"layers", 2}, {"heads", 2}, {"ffn", 32},
                  {"flow_matching", false}, {"flow_steps", 10}},
                 2);
  ExpectPythonMatchesCpp(policy_dir, ROBOLOOP_SOURCE_DIR "/python", 2);
}

TEST_F(ExportPythonTest, FlowMatchingTransformer) {
  const std::string policy_dir =
      MakePolicy({{"kind", "transformer"}, {"obs_dim", 4}, {"action_dim", 3}, {"history", 4},
                  {"chunk", 3}, {"d_model", 24}, {"layers", 2}, {"heads", 3}, {"ffn", 40},
                  {"flow_matching", true}, {"flow_steps", 5}},
                 3);
  ExpectPythonMatchesCpp(policy_dir, ROBOLOOP_SOURCE_DIR "/python", 3);
}

// The options of the image encoder of the cases below: two small cameras of different sizes.
nlohmann::json TwoCameraOptions() {
  return {{"cameras", {{{"name", "agentview"}, {"width", 16}, {"height", 16}},
                       {{"name", "wrist"}, {"width", 12}, {"height", 8}}}},
          {"encoder_channels", 8},
          {"encoder_blocks", 2},
          {"keypoints", 6}};
}

// `python roboloop_policy.py DIR`, the folder self-check of docs/export.md, run with the module
// of `module_dir`: exit 0 and the summary line.
roboloop::testing::ProgramResult RunSelfCheck(const std::string& module_dir, const std::string& policy_dir) {
  return roboloop::testing::RunProgram({testing::kTorchPython, module_dir + "/roboloop_policy.py", policy_dir});
}

TEST_F(ExportPythonTest, MlpWithTwoCameras) {
  nlohmann::json spec = {{"kind", "mlp"}, {"obs_dim", 5}, {"action_dim", 2}, {"history", 2},
                         {"chunk", 3}, {"hidden", {32, 16}}, {"activation", "relu"}};
  spec.update(TwoCameraOptions());
  const std::string policy_dir = MakePolicy(spec, 5);
  ExpectPythonMatchesCpp(policy_dir, ROBOLOOP_SOURCE_DIR "/python", 5);
  // QA: the self-check once called act() without frames and died with a traceback.
  roboloop::testing::ProgramResult checked = RunSelfCheck(ROBOLOOP_SOURCE_DIR "/python", policy_dir);
  ASSERT_EQ(checked.exit_code, 0) << checked.err;
  EXPECT_THAT(checked.out, ::testing::HasSubstr("obs [batch, 2, 5] + images uint8 [batch, 1056] "
                                                "(agentview 16x16x3, wrist 8x12x3) -> actions [3, 2] per row"));
}

TEST_F(ExportPythonTest, FramesThatAreNotUint8AreRefused) {
  nlohmann::json spec = {{"kind", "mlp"}, {"obs_dim", 5}, {"action_dim", 2}, {"history", 1},
                         {"chunk", 3}, {"hidden", {8}}, {"activation", "relu"}};
  spec.update(TwoCameraOptions());
  const std::string policy_dir = MakePolicy(spec, 9);
  // QA: float frames in [0, 1] (torchvision's and LeRobot's convention) were cast to uint8, all zeros.
  const std::string script = "import sys, torch\n"
                             "sys.path.insert(0, sys.argv[1])\n"
                             "import roboloop_policy\n"
                             "policy = roboloop_policy.load_policy(sys.argv[2])\n"
                             "obs = torch.zeros(2, 1, 5)\n"
                             "policy.act(obs, None, torch.zeros(2, policy.image_bytes, dtype=torch.uint8))\n"
                             "policy.act(obs, None, torch.full((2, policy.image_bytes), 0.5))\n";
  roboloop::testing::ProgramResult ran = roboloop::testing::RunProgram(
      {testing::kTorchPython, "-c", script, ROBOLOOP_SOURCE_DIR "/python", policy_dir});
  EXPECT_NE(ran.exit_code, 0);
  EXPECT_THAT(ran.err, ::testing::HasSubstr("ValueError: images are torch.float32, but the policy reads uint8 RGB "
                                            "frames (0..255)"));
}

TEST_F(ExportPythonTest, SelfCheckNamesAMalformedJsonFile) {
  const std::string policy_dir = MakePolicy({{"kind", "mlp"}, {"obs_dim", 3}, {"action_dim", 2}, {"history", 1},
                                             {"chunk", 2}, {"hidden", {8}}, {"activation", "relu"}},
                                            8);
  roboloop::testing::ProgramResult good = RunSelfCheck(ROBOLOOP_SOURCE_DIR "/python", policy_dir);
  ASSERT_EQ(good.exit_code, 0) << good.err;
  EXPECT_THAT(good.out, ::testing::HasSubstr("obs [batch, 1, 3] -> actions [2, 2] per row"));
  std::ofstream(policy_dir + "/normalization.json") << "{\"obs\": [1, 2";
  roboloop::testing::ProgramResult bad = RunSelfCheck(ROBOLOOP_SOURCE_DIR "/python", policy_dir);
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_THAT(bad.err, ::testing::HasSubstr("ValueError: " + policy_dir + "/normalization.json: not a valid"));
}

TEST_F(ExportPythonTest, FlowMatchingTransformerWithTwoCameras) {
  nlohmann::json spec = {{"kind", "transformer"}, {"obs_dim", 4}, {"action_dim", 3}, {"history", 3},
                         {"chunk", 2}, {"d_model", 16}, {"layers", 2}, {"heads", 2}, {"ffn", 32},
                         {"flow_matching", true}, {"flow_steps", 3}};
  spec.update(TwoCameraOptions());
  ExpectPythonMatchesCpp(MakePolicy(spec, 6), ROBOLOOP_SOURCE_DIR "/python", 6);
}

// The whole path: demonstrations, `roboloop train`, `roboloop export`, and the folder's own
// roboloop_policy.py acting like the C++ policy on the trained weights and normalization.
TEST_F(ExportPythonTest, TrainedAndExportedCheckpointMatches) {
  const std::string demos = dir_ + "/demos.hdf5", config = dir_ + "/train.yaml";
  const std::string store = dir_ + "/store", exported = dir_ + "/exported";
  Roboloop({"sim", "collect", "--task", "cartpole-swingup", "--policy", "expert", "--episodes",
            "2", "--max-steps", "50", "-o", demos});
  std::ofstream(config) << "policy:\n  kind: transformer\n  history: 3\n  chunk: 4\n"
                           "  d_model: 16\n  layers: 2\n  heads: 2\n  ffn: 32\n"
                           "  flow_matching: true\n  flow_steps: 3\nbatch_size: 8\nseed: 4\n";
  Roboloop({"train", config, "--dataset", demos, "--steps", "3", "--model", "cartpole-flow",
            "--root", store});
  Roboloop({"export", "cartpole-flow@latest", "-o", exported, "--root", store});
  ExpectPythonMatchesCpp(exported, exported, 4);
  roboloop::testing::ProgramResult checked = RunSelfCheck(exported, exported);
  ASSERT_EQ(checked.exit_code, 0) << checked.err;
  EXPECT_THAT(checked.out, ::testing::HasSubstr("cartpole-flow (transformer): obs [batch, 3, "));
}

}  // namespace
}  // namespace roboloop::train
