// Parsing of the precision settings.
#include "train/torch/precision.h"

#include <c10/util/Exception.h>

namespace roboloop::train {
namespace {

std::string TextOption(const nlohmann::json& json, const char* key) {
  TORCH_CHECK(json[key].is_string(), "trainer option ", key, " must be a string, got ", json[key].dump());
  return json[key].get<std::string>();
}

Precision ParsePrecision(const std::string& text) {
  if (text == "fp32") return Precision::kFp32;
  if (text == "bf16") return Precision::kBf16;
  if (text == "fp8") return Precision::kFp8;
  TORCH_CHECK(false, "trainer option precision '", text, "' is not one of fp32, bf16, fp8");
}

Fp8Scaling ParseFp8Scaling(const std::string& text) {
  if (text == "tensorwise") return Fp8Scaling::kTensorwise;
  if (text == "rowwise") return Fp8Scaling::kRowwise;
  TORCH_CHECK(false, "trainer option fp8_scaling '", text, "' is not one of tensorwise, rowwise");
}

}  // namespace

PrecisionOptions ParsePrecisionOptions(const nlohmann::json& trainer_json) {
  const nlohmann::json optimizer = trainer_json.value("optimizer", nlohmann::json::object());
  TORCH_CHECK(!optimizer.contains("bf16") || optimizer["bf16"].is_boolean(),
              "trainer option bf16 has the wrong type: ", optimizer.value("bf16", nlohmann::json()).dump());
  const bool legacy_bf16 = optimizer.value("bf16", false);
  PrecisionOptions options;
  const bool has_precision = trainer_json.contains("precision") && !TextOption(trainer_json, "precision").empty();
  if (has_precision) {
    options.precision = ParsePrecision(TextOption(trainer_json, "precision"));
    TORCH_CHECK(!legacy_bf16 || options.precision == Precision::kBf16, "trainer option optimizer.bf16: true ",
                "contradicts precision: ", PrecisionName(options.precision), " (drop optimizer.bf16)");
  } else if (legacy_bf16) {
    options.precision = Precision::kBf16;
  }
  if (trainer_json.contains("fp8_scaling") && !TextOption(trainer_json, "fp8_scaling").empty()) {
    options.fp8_scaling = ParseFp8Scaling(TextOption(trainer_json, "fp8_scaling"));
    TORCH_CHECK(options.precision == Precision::kFp8, "trainer option fp8_scaling applies to precision: fp8 only (",
                "precision is ", PrecisionName(options.precision), ")");
  }
  return options;
}

std::string PrecisionName(Precision precision) {
  switch (precision) {
    case Precision::kFp32: return "fp32";
    case Precision::kBf16: return "bf16";
    case Precision::kFp8: return "fp8";
  }
  return "?";
}

std::string Fp8ScalingName(Fp8Scaling scaling) {
  return scaling == Fp8Scaling::kRowwise ? "rowwise" : "tensorwise";
}

bool UsesBf16Autocast(Precision precision) { return precision != Precision::kFp32; }

}  // namespace roboloop::train
