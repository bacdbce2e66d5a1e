// The numeric precision of training (issue 22, req 2-3): which format the forward computes in,
// and for FP8 how its scales are taken. Parsed from the trainer config; inside
// libroboloop_torch.so.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace roboloop::train {

// How the policy computes. Parameters, gradients and optimizer state are float32 in every case.
enum class Precision {
  kFp32,  // float32 throughout
  kBf16,  // bf16 autocast of the forward (CPU or CUDA autocast)
  kFp8,   // bf16 autocast, and the transformer blocks' linears on FP8 GEMMs (fp8_linear.h)
};

// How FP8 scales are taken (fp8_linear.h).
enum class Fp8Scaling {
  kTensorwise,  // one scale per tensor (CPU and CUDA)
  kRowwise,     // one scale per row of each GEMM operand (CUDA only)
};

// The precision settings of a trainer.
struct PrecisionOptions {
  Precision precision = Precision::kFp32;          // the trainer option precision
  Fp8Scaling fp8_scaling = Fp8Scaling::kTensorwise;  // the trainer option fp8_scaling
};

// Parses the trainer config's `precision` (fp32 | bf16 | fp8; default fp32, or bf16 when the
// older optimizer.bf16 is true) and `fp8_scaling` (tensorwise | rowwise; default tensorwise).
// Throws c10::Error naming the option for an unknown value, for optimizer.bf16: true next to
// another precision, and for fp8_scaling without precision fp8.
PrecisionOptions ParsePrecisionOptions(const nlohmann::json& trainer_json);

// The option's spelling: "fp32", "bf16", "fp8"; "tensorwise", "rowwise".
std::string PrecisionName(Precision precision);
std::string Fp8ScalingName(Fp8Scaling scaling);

// Whether the forward runs under bf16 autocast (bf16 and fp8).
bool UsesBf16Autocast(Precision precision);

}  // namespace roboloop::train
