// The `transformer` policy: a pre-norm encoder over observation tokens plus learned
// action-query tokens under a prefix-LM mask (observations bidirectional, actions causal),
// with a regression head or a flow-matching head over the action chunk.
//
// The q/k/v projection has no bias: the key bias has a gradient that is zero in exact
// arithmetic (softmax ignores a shift shared by all keys), and Adam would turn its rounding
// noise into full-size updates that differ between otherwise equal runs.
//
// Token layout per sample, `history` observation slots, then one token per camera (the image
// encoder's keypoints of that camera's frame of the last observation step, through the camera's
// own linear embedding; none for a state-only policy), then `chunk` action slots. The
// observation and camera tokens form the bidirectional prefix. Only the last history_length
// observation slots are real (the window is left-padded). The packed path gathers the real
// tokens of every sample into varlen sequences (a pack of full histories is already in packed
// order and is used in place); the padded path keeps all slots and masks the padded keys. Both
// give the same loss up to rounding.
#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/batch_invariant.h"
#include "kernels/host_to_device.h"
#include "kernels/varlen_attention.h"
#include "train/packing.h"
#include "train/torch/fp8_linear.h"
#include "train/torch/policy/image_encoder.h"
#include "train/torch/policy/policy_model.h"

namespace roboloop::train {
namespace {

torch::Tensor Dense(const torch::nn::Linear& linear, const torch::Tensor& x) {
  return kernels::Linear(x, linear->weight, linear->bias);
}

// A block's linear: on FP8 GEMMs inside an Fp8LinearScope (precision: fp8), else as Dense. The
// embeddings and the head stay out of FP8: their widths (obs_dim, action_dim) are small and
// arbitrary, and they are a negligible share of the FLOPs.
torch::Tensor BlockDense(const torch::nn::Linear& linear, const torch::Tensor& x) {
  const std::optional<Fp8Scaling> fp8 = ActiveFp8Scaling();
  if (fp8) return Fp8Linear(x, linear->weight, linear->bias, *fp8);
  return Dense(linear, x);
}

torch::Tensor Norm(const torch::nn::LayerNorm& norm, const torch::Tensor& x) {
  return kernels::LayerNorm(x, norm->weight, norm->bias);
}

// How a block's attention sees its tokens: packed varlen sequences or a padded batch + mask.
struct TokenLayout {
  bool packed = true;
  torch::Tensor cu_seqlens;      // packed: int32 [sequences + 1]
  torch::Tensor prefix_lengths;  // packed: int32 [sequences]
  torch::Tensor allowed;         // padded: bool [batch, 1, tokens, tokens]
};

class Block : public torch::nn::Module {
 public:
  Block(int64_t d_model, int64_t heads, int64_t ffn)
      : heads_(heads),
        ln1_(register_module("ln1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({d_model})))),
        qkv_(register_module("qkv", torch::nn::Linear(torch::nn::LinearOptions(d_model, 3 * d_model).bias(false)))),
        proj_(register_module("proj", torch::nn::Linear(d_model, d_model))),
        ln2_(register_module("ln2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({d_model})))),
        fc1_(register_module("fc1", torch::nn::Linear(d_model, ffn))),
        fc2_(register_module("fc2", torch::nn::Linear(ffn, d_model))) {}

  // x: packed [tokens, d_model] or padded [batch, tokens, d_model].
  torch::Tensor Forward(const torch::Tensor& x, const TokenLayout& layout) {
    torch::Tensor h = x + BlockDense(proj_, Attend(BlockDense(qkv_, Norm(ln1_, x)), layout));
    return h + BlockDense(fc2_, kernels::Activate(kernels::Activation::kGelu, BlockDense(fc1_, Norm(ln2_, h))));
  }

 private:
  torch::Tensor Attend(const torch::Tensor& qkv, const TokenLayout& layout) {
    const int64_t d_model = qkv.size(-1) / 3;
    const int64_t head_dim = d_model / heads_;
    if (layout.packed) {
      kernels::VarlenAttentionOptions options;
      options.mask = kernels::MaskKind::kPrefixLm;
      absl::StatusOr<torch::Tensor> out = kernels::VarlenAttentionQkv(
          qkv.view({qkv.size(0), 3, heads_, head_dim}), layout.cu_seqlens, layout.prefix_lengths,
          options);
      TORCH_CHECK(out.ok(), "attention: ", out.status().message());
      return out->reshape({qkv.size(0), d_model});
    }
    const int64_t batch = qkv.size(0), tokens = qkv.size(1);
    const torch::Tensor split = qkv.view({batch, tokens, 3, heads_, head_dim}).permute({2, 0, 3, 1, 4});
    const torch::Tensor scores =
        torch::matmul(split[0], split[1].transpose(-1, -2)) / std::sqrt(static_cast<double>(head_dim));
    const torch::Tensor weights =
        torch::softmax(scores.masked_fill(layout.allowed.logical_not(), -INFINITY), -1);
    return torch::matmul(weights.to(split[2].scalar_type()), split[2])
        .permute({0, 2, 1, 3})
        .reshape({batch, tokens, d_model});
  }

  int64_t heads_;
  torch::nn::LayerNorm ln1_;
  torch::nn::Linear qkv_, proj_;
  torch::nn::LayerNorm ln2_;
  torch::nn::Linear fc1_, fc2_;
};

// Sinusoidal features [batch, width] of flow times t [batch] in [0, 1].
torch::Tensor TimeFeatures(const torch::Tensor& t, int64_t width) {
  const int64_t half = width / 2;
  const auto options = t.options().dtype(torch::kFloat);
  const torch::Tensor freqs =
      torch::exp(torch::arange(half, options) * (-std::log(10000.0) / half));
  const torch::Tensor angles = (t.to(torch::kFloat) * 1000.0).unsqueeze(-1) * freqs;
  torch::Tensor features = torch::cat({torch::sin(angles), torch::cos(angles)}, -1);
  if (features.size(-1) < width) {
    features = torch::cat({features, torch::zeros({t.size(0), width - features.size(-1)}, options)}, -1);
  }
  return features;
}

// The architecture options of a transformer (its schema: registry/policy_kinds/transformer.cc).
struct TransformerOptions {
  int64_t d_model = 0;         // token width
  int64_t layers = 0;          // encoder blocks
  int64_t heads = 0;           // attention heads (d_model must divide by it)
  int64_t ffn = 0;             // hidden width of each block's feed-forward network
  bool flow_matching = false;  // predict the chunk with a flow-matching head instead of regression
  int64_t flow_steps = 0;      // Euler integration steps of the flow head at inference
};

TransformerOptions ParseTransformerOptions(const nlohmann::json& json) {
  TransformerOptions options;
  options.d_model = json.at("d_model").get<int64_t>();
  options.layers = json.at("layers").get<int64_t>();
  options.heads = json.at("heads").get<int64_t>();
  options.ffn = json.at("ffn").get<int64_t>();
  options.flow_matching = json.at("flow_matching").get<bool>();
  options.flow_steps = json.at("flow_steps").get<int64_t>();
  TORCH_CHECK(options.d_model % options.heads == 0, "policy option d_model (", options.d_model,
              ") must be a multiple of heads (", options.heads, ")");
  return options;
}

class TransformerModel : public PolicyModel {
 public:
  explicit TransformerModel(const PolicyConfig& config)
      : config_(config), options_(ParseTransformerOptions(config.options)) {
    const TransformerOptions& t = options_;
    obs_embed_ = register_module("obs_embed", torch::nn::Linear(config.obs_dim, t.d_model));
    obs_pos_ = register_parameter("obs_pos", torch::randn({config.history, t.d_model}) * 0.02);
    action_query_ = register_parameter("action_query", torch::randn({config.chunk, t.d_model}) * 0.02);
    for (int64_t i = 0; i < t.layers; ++i) {
      blocks_->push_back(std::make_shared<Block>(t.d_model, t.heads, t.ffn));
    }
    register_module("blocks", blocks_);
    ln_f_ = register_module("ln_f", torch::nn::LayerNorm(torch::nn::LayerNormOptions({t.d_model})));
    head_ = register_module("head", torch::nn::Linear(t.d_model, config.action_dim));
    if (t.flow_matching) {
      action_in_ = register_module("action_in", torch::nn::Linear(config.action_dim, t.d_model));
      time_mlp_ = register_module("time_mlp", torch::nn::Linear(t.d_model, t.d_model));
    }
    const ImageEncoderOptions vision = ParseImageEncoderOptions(config.options);
    cameras_ = static_cast<int64_t>(vision.cameras.size());
    if (cameras_ > 0) {
      encoder_ = register_module("encoder", std::make_shared<ImageEncoder>(vision));
      for (int64_t c = 0; c < cameras_; ++c) camera_embed_->push_back(torch::nn::Linear(encoder_->features(), t.d_model));
      register_module("camera_embed", camera_embed_);
    }
  }

  torch::Tensor Loss(const PolicyInputs& inputs, const LossOptions& options) override {
    CheckInputs(inputs.obs, inputs.history_length);
    const torch::Tensor cameras = CameraTokens(inputs.images, inputs.obs.size(0), options.augment, options.generator);
    if (!options_.flow_matching) {
      const torch::Tensor queries = action_query_.unsqueeze(0).expand({inputs.obs.size(0), -1, -1});
      return MaskedChunkLoss(Predict(inputs.obs, LengthsOf(inputs), cameras, queries, options),
                             inputs.actions, inputs.action_valid);
    }
    // Flow matching: x_t = (1 - t) noise + t action, target velocity = action - noise. The
    // noise and times are drawn on the CPU generator and moved, so every device draws the same.
    const int64_t batch = inputs.obs.size(0);
    const torch::Device device = inputs.actions.device();
    const LossNoise drawn =
        options.noise.flow_noise.defined() ? options.noise : DrawLossNoise(batch, options.generator);
    const torch::Tensor noise = kernels::OnDeviceWithoutWaiting(drawn.flow_noise, device);
    const torch::Tensor t = kernels::OnDeviceWithoutWaiting(drawn.flow_times, device);
    const torch::Tensor tt = t.view({batch, 1, 1});
    const torch::Tensor x_t = (1.0 - tt) * noise + tt * inputs.actions;
    return MaskedChunkLoss(Predict(inputs.obs, LengthsOf(inputs), cameras, FlowQueries(x_t, t), options),
                           inputs.actions - noise, inputs.action_valid);
  }

  LossNoise DrawLossNoise(int64_t batch, torch::Generator generator) const override {
    if (!options_.flow_matching) return {};
    LossNoise drawn;
    drawn.flow_noise = torch::randn({batch, config_.chunk, config_.action_dim}, generator, torch::kFloat);
    drawn.flow_times = torch::rand({batch}, generator, torch::kFloat);
    return drawn;
  }

  torch::Tensor Act(const torch::Tensor& obs, const torch::Tensor& history_length,
                    const torch::Tensor& images) override {
    torch::NoGradGuard no_grad;
    CheckInputs(obs, history_length);
    LossOptions packed;
    packed.token_budget = std::numeric_limits<int32_t>::max();
    const int64_t batch = obs.size(0);
    const torch::Tensor cameras = CameraTokens(images, batch, /*augment=*/false, torch::Generator());
    if (!options_.flow_matching) {
      return Predict(obs, {history_length, torch::Tensor()}, cameras,
                     action_query_.unsqueeze(0).expand({batch, -1, -1}), packed);
    }
    // Euler integration from the noise distribution's mean (zero), so that inference is
    // deterministic and batch-invariant.
    const int64_t steps = options_.flow_steps;
    const auto on_device = obs.options().dtype(torch::kFloat);
    torch::Tensor x = torch::zeros({batch, config_.chunk, config_.action_dim}, on_device);
    for (int64_t k = 0; k < steps; ++k) {
      const torch::Tensor t = torch::full({batch}, static_cast<float>(k) / steps, on_device);
      x = x + Predict(obs, {history_length, torch::Tensor()}, cameras, FlowQueries(x, t), packed) /
                  static_cast<double>(steps);
    }
    return x;
  }

  const PolicyConfig& config() const override { return config_; }

 private:
  void CheckInputs(const torch::Tensor& obs, const torch::Tensor& history_length) const {
    TORCH_CHECK(obs.dim() == 3 && obs.size(1) == config_.history && obs.size(2) == config_.obs_dim,
                "transformer policy takes obs [batch, history ", config_.history, ", obs_dim ",
                config_.obs_dim, "], got ", obs.sizes());
    TORCH_CHECK(history_length.scalar_type() == torch::kInt && history_length.dim() == 1 &&
                    history_length.size(0) == obs.size(0),
                "history_length must be int32 [", obs.size(0), "]");
  }

  torch::Tensor FlowQueries(const torch::Tensor& x_t, const torch::Tensor& t) {
    const torch::Tensor time = Dense(time_mlp_, TimeFeatures(t, options_.d_model));
    return action_query_.unsqueeze(0) + Dense(action_in_, x_t) + time.unsqueeze(1);
  }

  // The camera tokens [batch, cameras, d_model] of image rows uint8 [batch, image_bytes];
  // undefined for a policy without cameras (which refuses image bytes).
  torch::Tensor CameraTokens(const torch::Tensor& images, int64_t batch, bool augment, torch::Generator generator) {
    if (!encoder_) {
      CheckImageRows(images, batch, ImageEncoderOptions());
      return torch::Tensor();
    }
    const torch::Tensor keypoints = encoder_->Forward(images, augment, std::move(generator));
    std::vector<torch::Tensor> tokens;
    for (int64_t c = 0; c < cameras_; ++c) {
      auto* embed = camera_embed_[c]->as<torch::nn::Linear>();
      tokens.push_back(kernels::Linear(keypoints.select(1, c), embed->weight, embed->bias));
    }
    return torch::stack(tokens, 1);
  }

  // All token slots [batch, history + cameras + chunk, d_model] in the padded layout.
  torch::Tensor PaddedTokens(const torch::Tensor& obs, const torch::Tensor& cameras, const torch::Tensor& queries) {
    const torch::Tensor obs_tokens = Dense(obs_embed_, obs) + obs_pos_.unsqueeze(0);
    if (!cameras.defined()) return torch::cat({obs_tokens, queries.to(obs_tokens.scalar_type())}, 1);
    return torch::cat({obs_tokens, cameras.to(obs_tokens.scalar_type()), queries.to(obs_tokens.scalar_type())}, 1);
  }

  // A batch's history lengths on its device, and on the CPU where the caller has them there too.
  struct Lengths {
    torch::Tensor on_device;
    torch::Tensor on_host;  // undefined: read back from on_device when needed
  };

  static Lengths LengthsOf(const PolicyInputs& inputs) {
    return {inputs.history_length, inputs.host_history_length};
  }

  // Action-slot outputs through the head: [batch, chunk, action_dim].
  torch::Tensor Predict(const torch::Tensor& obs, const Lengths& lengths, const torch::Tensor& cameras,
                        const torch::Tensor& queries, const LossOptions& options) {
    const torch::Tensor tokens = PaddedTokens(obs, cameras, queries);
    const torch::Tensor outputs = options.packed ? EncodePacked(tokens, lengths, options)
                                                 : EncodePadded(tokens, lengths.on_device);
    return Dense(head_, Norm(ln_f_, outputs));
  }

  torch::Tensor Encode(torch::Tensor x, const TokenLayout& layout) {
    for (size_t i = 0; i < blocks_->size(); ++i) x = blocks_[i]->as<Block>()->Forward(x, layout);
    return x;
  }

  // Slots of the bidirectional prefix: observations and cameras.
  int64_t PrefixSlots() const { return config_.history + cameras_; }

  torch::Tensor EncodePadded(const torch::Tensor& tokens, const torch::Tensor& history_length) {
    const int64_t history = config_.history, prefix = PrefixSlots(), total = tokens.size(1);
    const torch::Tensor slot = torch::arange(total, tokens.options().dtype(torch::kLong));
    const torch::Tensor query = slot.view({1, total, 1}), key = slot.view({1, 1, total});
    const torch::Tensor first_real = (history - history_length.to(torch::kLong)).view({-1, 1, 1});
    const torch::Tensor key_real = (key >= first_real);
    const torch::Tensor key_is_obs = key < prefix;
    const torch::Tensor allowed_obs_query = (query < prefix) & key_is_obs;
    const torch::Tensor allowed_action_query = (query >= prefix) & (key_is_obs | (key <= query));
    TokenLayout layout;
    layout.packed = false;
    layout.allowed = ((key_real & (allowed_obs_query | allowed_action_query)) | (query == key)).unsqueeze(1);
    return Encode(tokens, layout).slice(1, prefix);
  }

  torch::Tensor EncodePacked(const torch::Tensor& tokens, const Lengths& history_length,
                             const LossOptions& options) {
    const int32_t history = static_cast<int32_t>(PrefixSlots());
    const int32_t chunk = static_cast<int32_t>(config_.chunk);
    const torch::Tensor on_host =
        history_length.on_host.defined() ? history_length.on_host : history_length.on_device.cpu();
    const torch::Tensor lengths = (on_host + static_cast<int32_t>(cameras_)).to(torch::kInt).contiguous();
    absl::StatusOr<PackPlan> plan = PlanPacks(
        absl::MakeConstSpan(lengths.data_ptr<int32_t>(), lengths.numel()), chunk,
        static_cast<int32_t>(std::min<int64_t>(options.token_budget, std::numeric_limits<int32_t>::max())),
        history);
    TORCH_CHECK(plan.ok(), "packing: ", plan.status().message());
    const torch::Tensor flat = tokens.reshape({-1, tokens.size(2)});
    std::vector<torch::Tensor> outputs;
    for (const Pack& pack : plan->packs) {
      TokenLayout layout;
      layout.cu_seqlens = torch::tensor(pack.cu_seqlens, torch::kInt);  // the kernels read them on the CPU
      layout.prefix_lengths = torch::tensor(pack.prefix_lengths, torch::kInt);
      if (HasFullHistories(pack, history)) {
        outputs.push_back(EncodeFullPack(flat, pack, layout, history, chunk));
        continue;
      }
      const std::vector<int64_t> index = PackedTokenIndex(pack, history, chunk);
      const torch::Tensor gather = kernels::IndexTensorOn(index, torch::kLong, flat.device());
      const torch::Tensor packed = Encode(flat.index_select(0, gather), layout);
      outputs.push_back(
          packed.index_select(0, kernels::IndexTensorOn(ActionTokenRows(pack, chunk), torch::kLong, flat.device())));
    }
    const torch::Tensor actions = outputs.size() == 1 ? outputs[0] : torch::cat(outputs, 0);
    return actions.reshape({tokens.size(0), chunk, tokens.size(2)});
  }

  static bool HasFullHistories(const Pack& pack, int32_t history) {
    return std::all_of(pack.prefix_lengths.begin(), pack.prefix_lengths.end(),
                       [history](int32_t prefix) { return prefix == history; });
  }

  // A pack whose samples all have full histories is a contiguous run of padded rows in
  // packed order already: it is encoded in place, without gathering, and its action rows are
  // the last `row - history` slots of each sample.
  torch::Tensor EncodeFullPack(const torch::Tensor& flat, const Pack& pack, const TokenLayout& layout,
                               int32_t history, int32_t chunk) {
    const int64_t row = history + chunk;
    const int64_t first = pack.samples.front() * row;
    const int64_t rows = static_cast<int64_t>(pack.samples.size()) * row;
    const torch::Tensor input = first == 0 && rows == flat.size(0) ? flat : flat.narrow(0, first, rows);
    const torch::Tensor encoded = Encode(input, layout).view({-1, row, flat.size(1)});
    return encoded.slice(1, history).reshape({-1, flat.size(1)});
  }

  // Rows of a pack's action tokens, in sample order then chunk order.
  static std::vector<int64_t> ActionTokenRows(const Pack& pack, int32_t chunk) {
    std::vector<int64_t> rows;
    for (size_t s = 0; s < pack.samples.size(); ++s) {
      for (int32_t c = 0; c < chunk; ++c) rows.push_back(pack.cu_seqlens[s] + pack.prefix_lengths[s] + c);
    }
    return rows;
  }

  PolicyConfig config_;
  TransformerOptions options_;
  int64_t cameras_ = 0;                   // camera tokens per sample
  std::shared_ptr<ImageEncoder> encoder_;  // null without cameras
  torch::nn::ModuleList camera_embed_;     // per camera: keypoints -> d_model
  torch::nn::Linear obs_embed_{nullptr}, head_{nullptr}, action_in_{nullptr}, time_mlp_{nullptr};
  torch::Tensor obs_pos_, action_query_;
  torch::nn::ModuleList blocks_;
  torch::nn::LayerNorm ln_f_{nullptr};
};

}  // namespace

std::shared_ptr<PolicyModel> MakeTransformerModel(const PolicyConfig& config) {
  return std::make_shared<TransformerModel>(config);
}

}  // namespace roboloop::train
