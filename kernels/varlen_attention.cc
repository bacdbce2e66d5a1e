// Boundary of the attention kernels: input checks, dtype handling, threading and autograd.
#include "kernels/varlen_attention.h"

#include <ATen/Parallel.h>

#include <atomic>
#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "kernels/cuda/libtorch_attention.h"
#include "kernels/cuda/varlen_attention_cuda.h"

namespace roboloop::kernels {
namespace {

std::string ShapeString(const torch::Tensor& t) {
  std::string text = "[";
  for (int64_t i = 0; i < t.dim(); ++i) absl::StrAppend(&text, i ? ", " : "", t.size(i));
  return text + "]";
}

absl::Status Invalid(const std::string& input, const std::string& problem) {
  return absl::InvalidArgumentError(absl::StrCat("varlen attention: ", input, " ", problem));
}

// Where the kernels run: the CPU and CUDA devices.
constexpr const char* kSupportedDevices = "the CPU or a CUDA device";
bool IsSupportedDevice(const torch::Device& device) { return device.is_cpu() || device.is_cuda(); }

bool IsSupportedDtype(torch::ScalarType dtype) {
  return dtype == torch::kFloat || dtype == torch::kBFloat16 || dtype == torch::kHalf;
}

// `t` lies on a supported device, the one q lies on.
absl::Status CheckDeviceOf(const std::string& name, const torch::Tensor& t,
                           const torch::Tensor& q) {
  if (!IsSupportedDevice(t.device())) {
    return Invalid(name, absl::StrCat("must be on ", kSupportedDevices, ", got ",
                                      t.device().str()));
  }
  if (t.device() != q.device()) {
    return Invalid(name, absl::StrCat("is on ", t.device().str(), " but q is on ",
                                      q.device().str()));
  }
  return absl::OkStatus();
}

// q, k, v: defined, on one supported device, float32, bfloat16 or float16 alike, 3-D, equal non-empty
// head shapes.
absl::Status CheckQkv(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v) {
  const char* names[] = {"q", "k", "v"};
  const torch::Tensor* tensors[] = {&q, &k, &v};
  for (int i = 0; i < 3; ++i) {
    const torch::Tensor& t = *tensors[i];
    if (!t.defined()) return Invalid(names[i], "is undefined");
    ROBOLOOP_RETURN_IF_ERROR(CheckDeviceOf(names[i], t, q));
    if (!IsSupportedDtype(t.scalar_type())) {
      return Invalid(names[i], absl::StrCat("must be float32, bfloat16 or float16, got ",
                                            c10::toString(t.scalar_type())));
    }
    if (t.dim() != 3) {
      return Invalid(names[i], absl::StrCat("must be [total_tokens, heads, head_dim], got ",
                                            ShapeString(t)));
    }
    if (t.scalar_type() != q.scalar_type()) {
      return Invalid(names[i], absl::StrCat("has dtype ", c10::toString(t.scalar_type()),
                                            " but q has ", c10::toString(q.scalar_type())));
    }
    if (t.sizes() != q.sizes()) {
      return Invalid(names[i], absl::StrCat("has shape ", ShapeString(t), " but q has ",
                                            ShapeString(q)));
    }
  }
  if (q.size(1) < 1 || q.size(2) < 1) {
    return Invalid("q", absl::StrCat("needs at least one head and one feature, got ",
                                     ShapeString(q)));
  }
  if (q.size(0) > std::numeric_limits<int32_t>::max()) {
    return Invalid("q", absl::StrCat("has ", q.size(0), " tokens, more than int32 offsets hold"));
  }
  return absl::OkStatus();
}

// A CPU int32 vector of `expected` entries (any length when expected < 0).
absl::Status CheckIndexVector(const std::string& name, const torch::Tensor& t,
                              int64_t expected) {
  if (!t.defined()) return Invalid(name, "is undefined");
  if (!t.device().is_cpu()) {
    return Invalid(name, absl::StrCat("must be on the CPU, got ", t.device().str()));
  }
  if (t.scalar_type() != torch::kInt) {
    return Invalid(name, absl::StrCat("must be int32, got ", c10::toString(t.scalar_type())));
  }
  if (t.dim() != 1) return Invalid(name, absl::StrCat("must be 1-D, got ", ShapeString(t)));
  if (expected >= 0 && t.size(0) != expected) {
    return Invalid(name, absl::StrCat("must have ", expected, " entries, got ", t.size(0)));
  }
  return absl::OkStatus();
}

absl::Status CheckCuSeqlens(const torch::Tensor& cu_seqlens, int64_t total_tokens) {
  ROBOLOOP_RETURN_IF_ERROR(CheckIndexVector("cu_seqlens", cu_seqlens, -1));
  if (cu_seqlens.size(0) < 1) return Invalid("cu_seqlens", "must have batch + 1 >= 1 entries");
  torch::Tensor cu = cu_seqlens.contiguous();
  const int32_t* offsets = cu.data_ptr<int32_t>();
  const int64_t n = cu.size(0);
  if (offsets[0] != 0) {
    return Invalid("cu_seqlens", absl::StrCat("must start at 0, starts at ", offsets[0]));
  }
  for (int64_t i = 1; i < n; ++i) {
    if (offsets[i] < offsets[i - 1]) {
      return Invalid("cu_seqlens", absl::StrCat("must be non-decreasing, but entry ", i, " (",
                                                offsets[i], ") < entry ", i - 1, " (",
                                                offsets[i - 1], ")"));
    }
  }
  if (offsets[n - 1] != total_tokens) {
    return Invalid("cu_seqlens", absl::StrCat("must end at total_tokens = ", total_tokens,
                                              ", ends at ", offsets[n - 1]));
  }
  return absl::OkStatus();
}

absl::Status CheckPrefixLengths(const torch::Tensor& prefix_lengths,
                                const torch::Tensor& cu_seqlens, MaskKind mask) {
  if (!UsesPrefix(mask)) return absl::OkStatus();
  const int64_t batch = cu_seqlens.size(0) - 1;
  ROBOLOOP_RETURN_IF_ERROR(CheckIndexVector("prefix_lengths", prefix_lengths, batch));
  torch::Tensor cu = cu_seqlens.contiguous();
  torch::Tensor prefix = prefix_lengths.contiguous();
  for (int64_t b = 0; b < batch; ++b) {
    int32_t p = prefix.data_ptr<int32_t>()[b];
    int32_t length = cu.data_ptr<int32_t>()[b + 1] - cu.data_ptr<int32_t>()[b];
    if (p < 0 || p > length) {
      return Invalid("prefix_lengths", absl::StrCat("entry ", b, " is ", p,
                                                    ", outside [0, ", length,
                                                    "] (the sequence's length)"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckOptions(const VarlenAttentionOptions& options) {
  int mask = static_cast<int>(options.mask);
  if (mask < 0 || mask > 3) return Invalid("options.mask", absl::StrCat("is unknown: ", mask));
  if (!std::isfinite(options.softmax_scale) || options.softmax_scale < 0) {
    return Invalid("options.softmax_scale",
                   absl::StrCat("must be finite and >= 0, got ", options.softmax_scale));
  }
  return absl::OkStatus();
}

absl::Status CheckInputs(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                         const torch::Tensor& cu_seqlens, const torch::Tensor& prefix_lengths,
                         const VarlenAttentionOptions& options) {
  ROBOLOOP_RETURN_IF_ERROR(CheckOptions(options));
  ROBOLOOP_RETURN_IF_ERROR(CheckQkv(q, k, v));
  ROBOLOOP_RETURN_IF_ERROR(CheckCuSeqlens(cu_seqlens, q.size(0)));
  return CheckPrefixLengths(prefix_lengths, cu_seqlens, options.mask);
}

// qkv: [total_tokens, 3, heads, head_dim], whose three slices are then checked as q, k, v.
absl::Status CheckPackedQkv(const torch::Tensor& qkv) {
  if (!qkv.defined()) return Invalid("qkv", "is undefined");
  if (qkv.dim() != 4 || qkv.size(1) != 3) {
    return Invalid("qkv", absl::StrCat("must be [total_tokens, 3, heads, head_dim], got ",
                                       ShapeString(qkv)));
  }
  return absl::OkStatus();
}

// Checked inputs in the kernels' layout: fp32 tensors with contiguous [heads, head_dim] rows
// (separate contiguous tensors, or slices of one contiguous qkv) and the shape over them.
struct Prepared {
  torch::Tensor q, k, v, cu_seqlens, prefix_lengths;
  torch::Tensor qkv;  // the fp32 [tokens, 3, heads, head_dim] that q, k, v slice, if packed
  AttentionShape shape;
};

double ScaleOf(const VarlenAttentionOptions& options, int64_t head_dim) {
  return options.softmax_scale > 0 ? options.softmax_scale
                                   : 1.0 / std::sqrt(static_cast<double>(head_dim));
}

// Whether LibTorch's kernels (kernels/cuda/libtorch_attention.h) run q: the default for CUDA
// tensors; the own CUDA kernels only take the shapes and GPUs they refuse.
bool OnLibTorchKernels(const torch::Tensor& q) {
  return q.is_cuda() && cuda::LibTorchAttentionRefusal(q).empty();
}

torch::Tensor AsFloat(const torch::Tensor& t) { return t.to(torch::kFloat).contiguous(); }

// Completes p (q, k, v and input_row_stride set) with the index vectors and the shape.
Prepared PrepareShape(Prepared p, const torch::Tensor& cu_seqlens,
                      const torch::Tensor& prefix_lengths, const VarlenAttentionOptions& options) {
  const torch::Tensor& q = p.q;
  p.shape.output_row_stride = q.size(1) * q.size(2);
  p.cu_seqlens = cu_seqlens.contiguous();
  p.prefix_lengths = UsesPrefix(options.mask) ? prefix_lengths.contiguous()
                                                          : torch::zeros({0}, torch::kInt);
  p.shape.cu_seqlens = p.cu_seqlens.data_ptr<int32_t>();
  p.shape.prefix_lengths = p.prefix_lengths.data_ptr<int32_t>();
  p.shape.batch = p.cu_seqlens.size(0) - 1;
  p.shape.heads = q.size(1);
  p.shape.head_dim = q.size(2);
  p.shape.mask = options.mask;
  p.shape.scale = static_cast<float>(ScaleOf(options, q.size(2)));
  return p;
}

Prepared Prepare(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                 const torch::Tensor& cu_seqlens, const torch::Tensor& prefix_lengths,
                 const VarlenAttentionOptions& options) {
  Prepared p;
  p.q = AsFloat(q);
  p.k = AsFloat(k);
  p.v = AsFloat(v);
  p.shape.input_row_stride = q.size(1) * q.size(2);
  return PrepareShape(std::move(p), cu_seqlens, prefix_lengths, options);
}

Prepared PrepareQkv(const torch::Tensor& qkv, const torch::Tensor& cu_seqlens,
                    const torch::Tensor& prefix_lengths, const VarlenAttentionOptions& options) {
  Prepared p;
  p.qkv = AsFloat(qkv);
  p.q = p.qkv.select(1, 0);
  p.k = p.qkv.select(1, 1);
  p.v = p.qkv.select(1, 2);
  p.shape.input_row_stride = 3 * qkv.size(2) * qkv.size(3);
  return PrepareShape(std::move(p), cu_seqlens, prefix_lengths, options);
}

// Runs `body(begin, end, scratch)` over [0, count) on torch's intra-op threads. Items are
// handed out one at a time (balancing uneven tiles); each thread allocates its scratch once.
template <typename Body>
void ParallelOverItems(int64_t count, size_t scratch_floats, const Body& body) {
  if (count == 0) return;
  std::atomic<int64_t> next{0};
  const int64_t workers = std::min<int64_t>(at::get_num_threads(), count);
  at::parallel_for(0, workers, 1, [&](int64_t first, int64_t last) {
    std::vector<float> scratch(scratch_floats);
    for (int64_t w = first; w < last; ++w) {
      for (int64_t i = next.fetch_add(1); i < count; i = next.fetch_add(1)) {
        body(i, i + 1, scratch.data());
      }
    }
  });
}

VarlenAttentionOutput RunForward(const Prepared& p) {
  const AttentionKernels& kernels = SelectedAttentionKernels();
  VarlenAttentionOutput result;
  result.out = torch::empty({p.q.size(0), p.q.size(1), p.q.size(2)}, p.q.options());
  result.lse = torch::empty({p.q.size(0), p.q.size(1)}, p.q.options());
  ForwardArgs args;
  args.shape = p.shape;
  args.q = p.q.data_ptr<float>();
  args.k = p.k.data_ptr<float>();
  args.v = p.v.data_ptr<float>();
  args.out = result.out.data_ptr<float>();
  args.lse = result.lse.data_ptr<float>();
  if (p.q.is_cuda()) {
    cuda::ForwardOnDevice(args, p.q.device());
    return result;
  }
  const std::vector<TileItem> items = EnumerateTiles(p.shape);
  ParallelOverItems(static_cast<int64_t>(items.size()), kernels.scratch_floats(p.shape.head_dim),
                    [&](int64_t b, int64_t e, float* scratch) {
                      kernels.forward(args, items.data(), b, e, scratch);
                    });
  return result;
}

// Where the backward writes: rows laid out like the prepared q, k, v (input_row_stride).
struct GradTargets {
  float* dq;
  float* dk;
  float* dv;
};

void RunBackward(const Prepared& p, const torch::Tensor& out, const torch::Tensor& lse,
                 const torch::Tensor& dout, const GradTargets& targets) {
  const AttentionKernels& kernels = SelectedAttentionKernels();
  torch::Tensor out32 = AsFloat(out), dout32 = AsFloat(dout), lse32 = AsFloat(lse);
  torch::Tensor row_dots = torch::empty({p.q.size(0), p.q.size(1)}, p.q.options());
  BackwardArgs args;
  args.shape = p.shape;
  args.q = p.q.data_ptr<float>();
  args.k = p.k.data_ptr<float>();
  args.v = p.v.data_ptr<float>();
  args.dout = dout32.data_ptr<float>();
  args.lse = lse32.data_ptr<float>();
  args.row_dots = row_dots.data_ptr<float>();
  args.dq = targets.dq;
  args.dk = targets.dk;
  args.dv = targets.dv;
  if (p.q.is_cuda()) {
    cuda::BackwardOnDevice(args, out32.data_ptr<float>(), row_dots.data_ptr<float>(),
                           p.q.size(0), p.q.device());
    return;
  }
  const int64_t rows = row_dots.numel();
  const int64_t d = p.shape.head_dim;
  at::parallel_for(0, rows, 256, [&](int64_t b, int64_t e) {
    kernels.row_dots(dout32.data_ptr<float>(), out32.data_ptr<float>(), d, b, e,
                     row_dots.data_ptr<float>());
  });
  const std::vector<TileItem> items = EnumerateTiles(p.shape);
  const int64_t count = static_cast<int64_t>(items.size());
  const size_t scratch_floats = kernels.scratch_floats(d);
  ParallelOverItems(count, scratch_floats, [&](int64_t b, int64_t e, float* scratch) {
    kernels.backward_queries(args, items.data(), b, e, scratch);
  });
  ParallelOverItems(count, scratch_floats, [&](int64_t b, int64_t e, float* scratch) {
    kernels.backward_keys(args, items.data(), b, e, scratch);
  });
}

// Separate contiguous dq, dk, dv for separate q, k, v.
VarlenAttentionGrads RunSeparateBackward(const Prepared& p, const torch::Tensor& out,
                                         const torch::Tensor& lse, const torch::Tensor& dout) {
  VarlenAttentionGrads grads{torch::empty_like(p.q), torch::empty_like(p.q),
                             torch::empty_like(p.q)};
  RunBackward(p, out, lse, dout,
              {grads.dq.data_ptr<float>(), grads.dk.data_ptr<float>(), grads.dv.data_ptr<float>()});
  return grads;
}

// One [tokens, 3, heads, head_dim] gradient for a packed qkv.
torch::Tensor RunPackedBackward(const Prepared& p, const torch::Tensor& out,
                                const torch::Tensor& lse, const torch::Tensor& dout) {
  torch::Tensor dqkv = torch::empty_like(p.qkv);
  float* base = dqkv.data_ptr<float>();
  const int64_t head_row = p.q.size(1) * p.q.size(2);
  RunBackward(p, out, lse, dout, {base, base + head_row, base + 2 * head_row});
  return dqkv;
}

absl::Status CheckLikeQ(const std::string& name, const torch::Tensor& t, const torch::Tensor& q) {
  if (!t.defined()) return Invalid(name, "is undefined");
  ROBOLOOP_RETURN_IF_ERROR(CheckDeviceOf(name, t, q));
  if (t.sizes() != q.sizes()) {
    return Invalid(name, absl::StrCat("has shape ", ShapeString(t), " but q has ",
                                      ShapeString(q)));
  }
  if (!IsSupportedDtype(t.scalar_type())) {
    return Invalid(name, absl::StrCat("must be float32, bfloat16 or float16, got ",
                                      c10::toString(t.scalar_type())));
  }
  return absl::OkStatus();
}

absl::Status CheckLse(const torch::Tensor& lse, const torch::Tensor& q) {
  if (!lse.defined()) return Invalid("lse", "is undefined");
  ROBOLOOP_RETURN_IF_ERROR(CheckDeviceOf("lse", lse, q));
  if (lse.scalar_type() != torch::kFloat || lse.dim() != 2 || lse.size(0) != q.size(0) ||
      lse.size(1) != q.size(1)) {
    return Invalid("lse", absl::StrCat("must be a float32 [", q.size(0), ", ", q.size(1),
                                       "] tensor, got ", c10::toString(lse.scalar_type()), " ",
                                       ShapeString(lse)));
  }
  return absl::OkStatus();
}

VarlenAttentionGrads CastGrads(VarlenAttentionGrads grads, torch::ScalarType dtype) {
  return {grads.dq.to(dtype), grads.dk.to(dtype), grads.dv.to(dtype)};
}

// Autograd wrapper; inputs are checked by VarlenAttention before apply().
class VarlenAttentionFunction : public torch::autograd::Function<VarlenAttentionFunction> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& q,
                               const torch::Tensor& k, const torch::Tensor& v,
                               const torch::Tensor& cu_seqlens,
                               const torch::Tensor& prefix_lengths, int64_t mask,
                               double softmax_scale) {
    VarlenAttentionOptions options{static_cast<MaskKind>(mask), softmax_scale};
    Prepared p = Prepare(q, k, v, cu_seqlens, prefix_lengths, options);
    VarlenAttentionOutput result = RunForward(p);
    ctx->save_for_backward({p.q, p.k, p.v, p.cu_seqlens, p.prefix_lengths, result.out,
                            result.lse});
    ctx->saved_data["mask"] = mask;
    ctx->saved_data["softmax_scale"] = softmax_scale;
    ctx->saved_data["dtype"] = static_cast<int64_t>(q.scalar_type());
    return result.out.to(q.scalar_type());
  }

  static torch::autograd::tensor_list backward(torch::autograd::AutogradContext* ctx,
                                               torch::autograd::tensor_list grad_outputs) {
    std::vector<torch::Tensor> saved = ctx->get_saved_variables();
    VarlenAttentionOptions options{static_cast<MaskKind>(ctx->saved_data["mask"].toInt()),
                                   ctx->saved_data["softmax_scale"].toDouble()};
    Prepared p = Prepare(saved[0], saved[1], saved[2], saved[3], saved[4], options);
    auto dtype = static_cast<torch::ScalarType>(ctx->saved_data["dtype"].toInt());
    VarlenAttentionGrads grads =
        CastGrads(RunSeparateBackward(p, saved[5], saved[6], grad_outputs[0]), dtype);
    return {grads.dq, grads.dk, grads.dv, torch::Tensor(), torch::Tensor(), torch::Tensor(),
            torch::Tensor()};
  }
};

// Autograd wrapper of the packed-qkv op; inputs are checked by VarlenAttentionQkv.
class VarlenAttentionQkvFunction : public torch::autograd::Function<VarlenAttentionQkvFunction> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& qkv,
                               const torch::Tensor& cu_seqlens,
                               const torch::Tensor& prefix_lengths, int64_t mask,
                               double softmax_scale) {
    VarlenAttentionOptions options{static_cast<MaskKind>(mask), softmax_scale};
    Prepared p = PrepareQkv(qkv, cu_seqlens, prefix_lengths, options);
    VarlenAttentionOutput result = RunForward(p);
    ctx->save_for_backward({p.qkv, p.cu_seqlens, p.prefix_lengths, result.out, result.lse});
    ctx->saved_data["mask"] = mask;
    ctx->saved_data["softmax_scale"] = softmax_scale;
    ctx->saved_data["dtype"] = static_cast<int64_t>(qkv.scalar_type());
    return result.out.to(qkv.scalar_type());
  }

  static torch::autograd::tensor_list backward(torch::autograd::AutogradContext* ctx,
                                               torch::autograd::tensor_list grad_outputs) {
    std::vector<torch::Tensor> saved = ctx->get_saved_variables();
    VarlenAttentionOptions options{static_cast<MaskKind>(ctx->saved_data["mask"].toInt()),
                                   ctx->saved_data["softmax_scale"].toDouble()};
    Prepared p = PrepareQkv(saved[0], saved[1], saved[2], options);
    auto dtype = static_cast<torch::ScalarType>(ctx->saved_data["dtype"].toInt());
    torch::Tensor dqkv = RunPackedBackward(p, saved[3], saved[4], grad_outputs[0]).to(dtype);
    return {dqkv, torch::Tensor(), torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

absl::StatusOr<VarlenAttentionOutput> VarlenAttentionForward(
    const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
    const torch::Tensor& cu_seqlens, const torch::Tensor& prefix_lengths,
    const VarlenAttentionOptions& options) {
  ROBOLOOP_RETURN_IF_ERROR(CheckInputs(q, k, v, cu_seqlens, prefix_lengths, options));
  try {
    torch::NoGradGuard no_grad;
    if (OnLibTorchKernels(q)) {
      cuda::LibTorchAttentionOutput result = cuda::LibTorchAttentionForward(
          q, k, v, cu_seqlens, prefix_lengths, options.mask, ScaleOf(options, q.size(2)));
      return VarlenAttentionOutput{result.out, result.lse};
    }
    VarlenAttentionOutput result = RunForward(Prepare(q, k, v, cu_seqlens, prefix_lengths,
                                                      options));
    result.out = result.out.to(q.scalar_type());
    return result;
  } catch (const c10::Error& e) {
    return absl::InternalError(absl::StrCat("varlen attention forward: ", e.what_without_backtrace()));
  }
}

absl::StatusOr<VarlenAttentionGrads> VarlenAttentionBackward(
    const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
    const torch::Tensor& cu_seqlens, const torch::Tensor& prefix_lengths,
    const torch::Tensor& out, const torch::Tensor& lse, const torch::Tensor& dout,
    const VarlenAttentionOptions& options) {
  ROBOLOOP_RETURN_IF_ERROR(CheckInputs(q, k, v, cu_seqlens, prefix_lengths, options));
  ROBOLOOP_RETURN_IF_ERROR(CheckLikeQ("out", out, q));
  ROBOLOOP_RETURN_IF_ERROR(CheckLikeQ("dout", dout, q));
  ROBOLOOP_RETURN_IF_ERROR(CheckLse(lse, q));
  try {
    torch::NoGradGuard no_grad;
    if (OnLibTorchKernels(q)) {
      std::vector<torch::Tensor> grads = cuda::LibTorchAttentionBackward(
          q, k, v, cu_seqlens, prefix_lengths, dout, options.mask, ScaleOf(options, q.size(2)));
      return VarlenAttentionGrads{grads[0], grads[1], grads[2]};
    }
    Prepared p = Prepare(q, k, v, cu_seqlens, prefix_lengths, options);
    return CastGrads(RunSeparateBackward(p, out, lse, dout), q.scalar_type());
  } catch (const c10::Error& e) {
    return absl::InternalError(absl::StrCat("varlen attention backward: ", e.what_without_backtrace()));
  }
}

absl::StatusOr<torch::Tensor> VarlenAttention(const torch::Tensor& q, const torch::Tensor& k,
                                              const torch::Tensor& v,
                                              const torch::Tensor& cu_seqlens,
                                              const torch::Tensor& prefix_lengths,
                                              const VarlenAttentionOptions& options) {
  ROBOLOOP_RETURN_IF_ERROR(CheckInputs(q, k, v, cu_seqlens, prefix_lengths, options));
  torch::Tensor prefix = UsesPrefix(options.mask) ? prefix_lengths
                                                              : torch::zeros({0}, torch::kInt);
  try {
    if (OnLibTorchKernels(q)) {
      return cuda::LibTorchVarlenAttention(q, k, v, cu_seqlens, prefix, options.mask,
                                           ScaleOf(options, q.size(2)));
    }
    return VarlenAttentionFunction::apply(q, k, v, cu_seqlens, prefix,
                                          static_cast<int64_t>(options.mask),
                                          options.softmax_scale);
  } catch (const c10::Error& e) {
    return absl::InternalError(absl::StrCat("varlen attention: ", e.what_without_backtrace()));
  }
}

absl::StatusOr<torch::Tensor> VarlenAttentionQkv(const torch::Tensor& qkv,
                                                 const torch::Tensor& cu_seqlens,
                                                 const torch::Tensor& prefix_lengths,
                                                 const VarlenAttentionOptions& options) {
  ROBOLOOP_RETURN_IF_ERROR(CheckPackedQkv(qkv));
  ROBOLOOP_RETURN_IF_ERROR(CheckInputs(qkv.select(1, 0), qkv.select(1, 1), qkv.select(1, 2),
                                       cu_seqlens, prefix_lengths, options));
  torch::Tensor prefix = UsesPrefix(options.mask) ? prefix_lengths
                                                              : torch::zeros({0}, torch::kInt);
  try {
    if (OnLibTorchKernels(qkv.select(1, 0))) {
      return cuda::LibTorchVarlenAttentionQkv(qkv, cu_seqlens, prefix, options.mask,
                                              ScaleOf(options, qkv.size(3)));
    }
    return VarlenAttentionQkvFunction::apply(qkv, cu_seqlens, prefix,
                                             static_cast<int64_t>(options.mask),
                                             options.softmax_scale);
  } catch (const c10::Error& e) {
    return absl::InternalError(absl::StrCat("varlen attention: ", e.what_without_backtrace()));
  }
}

const char* VarlenAttentionIsa() { return SelectedAttentionKernels().isa; }

}  // namespace roboloop::kernels
