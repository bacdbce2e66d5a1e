// GroupNorm + residual + ReLU: a fused channels-last CPU kernel with its backward.
#include "train/torch/policy/group_norm_relu.h"

#include <ATen/Parallel.h>

#include <cmath>
#include <vector>

namespace roboloop::train {
namespace {

constexpr double kEps = 1e-5;
// Pixels summed in float (vectorised) before their sums join the double totals.
constexpr int64_t kPixelBlock = 64;

// Adds block sums into double totals and clears them.
void Flush(std::vector<float>& block, std::vector<double>& total) {
  for (size_t c = 0; c < block.size(); ++c) {
    total[c] += block[c];
    block[c] = 0.0f;
  }
}

// Whether the fused kernel takes these tensors.
bool FusedKernelApplies(const torch::Tensor& x, const torch::Tensor& residual) {
  const auto channels_last = at::MemoryFormat::ChannelsLast;
  return x.device().is_cpu() && x.scalar_type() == torch::kFloat && x.dim() == 4 &&
         x.is_contiguous(channels_last) &&
         (!residual.defined() || (residual.scalar_type() == torch::kFloat && residual.is_contiguous(channels_last)));
}

// One channels-last pixel of the backward's first pass: dz = dy where the output is positive
// (else 0), and its per-channel sums of dz and dz * x. Restrict pointers let the loop vectorise.
void ReluGradPixel(const float* __restrict out, const float* __restrict dy, const float* __restrict x,
                   float* __restrict dz, float* __restrict sum_dz, float* __restrict sum_dz_x, int64_t channels) {
  for (int64_t c = 0; c < channels; ++c) {
    const float grad = dy[c];  // loaded unconditionally, so that the select vectorises
    const float d = out[c] > 0.0f ? grad : 0.0f;
    dz[c] = d;
    sum_dz[c] += d;
    sum_dz_x[c] += d * x[c];
  }
}

// One pixel's per-channel sums of x and x^2.
void MomentsPixel(const float* __restrict x, float* __restrict sum, float* __restrict square, int64_t channels) {
  for (int64_t c = 0; c < channels; ++c) {
    sum[c] += x[c];
    square[c] += x[c] * x[c];
  }
}

// One pixel of the forward's output: relu(x * scale + shift (+ residual)).
void NormReluPixel(const float* __restrict x, const float* __restrict scale, const float* __restrict shift,
                   const float* __restrict residual, float* __restrict out, int64_t channels) {
  if (residual == nullptr) {
    for (int64_t c = 0; c < channels; ++c) out[c] = std::max(x[c] * scale[c] + shift[c], 0.0f);
  } else {
    for (int64_t c = 0; c < channels; ++c) out[c] = std::max(x[c] * scale[c] + shift[c] + residual[c], 0.0f);
  }
}

// Per sample: mean and 1/std of each group over a channels-last [pixels, channels] block.
void GroupStatistics(const float* x, int64_t pixels, int64_t channels, int64_t groups, float* mean, float* rstd) {
  std::vector<double> sum(channels, 0.0), square(channels, 0.0);
  std::vector<float> block_sum(channels, 0.0f), block_square(channels, 0.0f);
  for (int64_t p = 0; p < pixels; ++p) {
    MomentsPixel(x + p * channels, block_sum.data(), block_square.data(), channels);
    if ((p + 1) % kPixelBlock == 0 || p + 1 == pixels) {
      Flush(block_sum, sum);
      Flush(block_square, square);
    }
  }
  const int64_t per_group = channels / groups;
  const double count = static_cast<double>(pixels * per_group);
  for (int64_t g = 0; g < groups; ++g) {
    double s = 0, q = 0;
    for (int64_t c = g * per_group; c < (g + 1) * per_group; ++c) {
      s += sum[c];
      q += square[c];
    }
    const double m = s / count;
    mean[g] = static_cast<float>(m);
    rstd[g] = static_cast<float>(1.0 / std::sqrt(std::max(q / count - m * m, 0.0) + kEps));
  }
}

// The autograd op; `residual` has no elements when there is none (autograd takes no undefined
// inputs).
class GroupNormReluFunction : public torch::autograd::Function<GroupNormReluFunction> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x,
                               const torch::Tensor& weight, const torch::Tensor& bias, const torch::Tensor& residual,
                               int64_t groups) {
    const int64_t batch = x.size(0), channels = x.size(1), pixels = x.size(2) * x.size(3);
    const torch::Tensor gamma = weight.contiguous(), beta = bias.contiguous();
    torch::Tensor out = torch::empty_like(x, at::MemoryFormat::ChannelsLast);
    torch::Tensor mean = torch::empty({batch, groups}, x.options());
    torch::Tensor rstd = torch::empty({batch, groups}, x.options());
    const float* in = x.data_ptr<float>();
    const bool has_residual = residual.numel() > 0;
    const float* res = has_residual ? residual.data_ptr<float>() : nullptr;
    float* y = out.data_ptr<float>();
    const float* g = gamma.data_ptr<float>();
    const float* b = beta.data_ptr<float>();
    const int64_t per_group = channels / groups;
    at::parallel_for(0, batch, 1, [&](int64_t begin, int64_t end) {
      std::vector<float> scale(channels), shift(channels);
      for (int64_t n = begin; n < end; ++n) {
        const int64_t offset = n * pixels * channels;
        float* m = mean.data_ptr<float>() + n * groups;
        float* r = rstd.data_ptr<float>() + n * groups;
        GroupStatistics(in + offset, pixels, channels, groups, m, r);
        for (int64_t c = 0; c < channels; ++c) {
          scale[c] = r[c / per_group] * g[c];
          shift[c] = b[c] - m[c / per_group] * scale[c];
        }
        for (int64_t p = 0; p < pixels; ++p) {
          const int64_t at = offset + p * channels;
          NormReluPixel(in + at, scale.data(), shift.data(), res == nullptr ? nullptr : res + at, y + at, channels);
        }
      }
    });
    ctx->save_for_backward({x, gamma, out, mean, rstd});
    ctx->saved_data["groups"] = groups;
    ctx->saved_data["residual"] = has_residual;
    return out;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const torch::Tensor& x = saved[0];
    const torch::Tensor& gamma = saved[1];
    const torch::Tensor& out = saved[2];
    const torch::Tensor& mean = saved[3];
    const torch::Tensor& rstd = saved[4];
    const int64_t groups = ctx->saved_data["groups"].toInt();
    const torch::Tensor dy = grads[0].contiguous(at::MemoryFormat::ChannelsLast);
    const int64_t batch = x.size(0), channels = x.size(1), pixels = x.size(2) * x.size(3);
    const int64_t per_group = channels / groups;
    const double count = static_cast<double>(pixels * per_group);
    torch::Tensor dz = torch::empty_like(x, at::MemoryFormat::ChannelsLast);
    torch::Tensor dx = torch::empty_like(x, at::MemoryFormat::ChannelsLast);
    torch::Tensor dgamma_rows = torch::empty({batch, channels}, x.options());
    torch::Tensor dbeta_rows = torch::empty({batch, channels}, x.options());
    const float* in = x.data_ptr<float>();
    const float* y = out.data_ptr<float>();
    const float* up = dy.data_ptr<float>();
    const float* g = gamma.data_ptr<float>();
    float* dz_data = dz.data_ptr<float>();
    float* dx_data = dx.data_ptr<float>();
    at::parallel_for(0, batch, 1, [&](int64_t begin, int64_t end) {
      std::vector<double> sum_dz(channels), sum_dz_x(channels);
      std::vector<float> block_dz(channels, 0.0f), block_dz_x(channels, 0.0f);
      std::vector<float> coef_dz(channels), coef_x(channels), coef_one(channels);
      for (int64_t n = begin; n < end; ++n) {
        const int64_t offset = n * pixels * channels;
        const float* m = mean.data_ptr<float>() + n * groups;
        const float* r = rstd.data_ptr<float>() + n * groups;
        std::fill(sum_dz.begin(), sum_dz.end(), 0.0);
        std::fill(sum_dz_x.begin(), sum_dz_x.end(), 0.0);
        for (int64_t p = 0; p < pixels; ++p) {
          const int64_t at = offset + p * channels;
          ReluGradPixel(y + at, up + at, in + at, dz_data + at, block_dz.data(), block_dz_x.data(), channels);
          if ((p + 1) % kPixelBlock == 0 || p + 1 == pixels) {
            Flush(block_dz, sum_dz);
            Flush(block_dz_x, sum_dz_x);
          }
        }
        float* dgamma = dgamma_rows.data_ptr<float>() + n * channels;
        float* dbeta = dbeta_rows.data_ptr<float>() + n * channels;
        for (int64_t group = 0; group < groups; ++group) {
          const double mu = m[group], inv = r[group];
          double dxhat_sum = 0, dxhat_xhat_sum = 0;
          for (int64_t c = group * per_group; c < (group + 1) * per_group; ++c) {
            const double xhat_dz = inv * (sum_dz_x[c] - mu * sum_dz[c]);
            dgamma[c] = static_cast<float>(xhat_dz);
            dbeta[c] = static_cast<float>(sum_dz[c]);
            dxhat_sum += g[c] * sum_dz[c];
            dxhat_xhat_sum += g[c] * xhat_dz;
          }
          const double m1 = dxhat_sum / count, m2 = dxhat_xhat_sum / count;
          // dx = inv * (gamma dz - m1 - xhat m2), xhat = (x - mu) inv.
          for (int64_t c = group * per_group; c < (group + 1) * per_group; ++c) {
            coef_dz[c] = static_cast<float>(inv * g[c]);
            coef_x[c] = static_cast<float>(-inv * inv * m2);
            coef_one[c] = static_cast<float>(-inv * m1 + inv * inv * m2 * mu);
          }
        }
        for (int64_t p = 0; p < pixels; ++p) {
          const int64_t at = offset + p * channels;
          for (int64_t c = 0; c < channels; ++c) {
            dx_data[at + c] = coef_dz[c] * dz_data[at + c] + coef_x[c] * in[at + c] + coef_one[c];
          }
        }
      }
    });
    const bool residual = ctx->saved_data["residual"].toBool();
    return {dx, dgamma_rows.sum(0), dbeta_rows.sum(0), residual ? dz : torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

torch::Tensor GroupNormRelu(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias,
                            int64_t groups, const torch::Tensor& residual) {
  TORCH_CHECK(x.dim() == 4 && groups > 0 && x.size(1) % groups == 0, "group norm: input ", x.sizes(),
              " must be [batch, channels, height, width] with channels divisible by ", groups);
  TORCH_CHECK(!residual.defined() || residual.sizes() == x.sizes(), "group norm: residual ", residual.sizes(),
              " differs from the input ", x.sizes());
  if (!FusedKernelApplies(x, residual)) {
    torch::Tensor y = torch::group_norm(x, groups, weight, bias, kEps);
    if (residual.defined()) y = y + residual;
    return torch::relu(y);
  }
  return GroupNormReluFunction::apply(x, weight, bias, residual.defined() ? residual : torch::empty({0}, x.options()),
                                      groups);
}

}  // namespace roboloop::train
