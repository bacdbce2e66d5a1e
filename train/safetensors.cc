#include "train/safetensors.h"

#include <cstring>
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "common/fs.h"
#include "common/status.h"

namespace roboloop::train {
namespace {

constexpr size_t kHeaderLengthBytes = 8;

// Product of `shape`, or -1 when a dimension is negative or the product overflows int64.
int64_t ElementCount(const std::vector<int64_t>& shape) {
  int64_t count = 1;
  for (int64_t d : shape) {
    if (d < 0 || __builtin_mul_overflow(count, d, &count)) return -1;
  }
  return count;
}

std::string EncodeHeaderLength(uint64_t length) {
  std::string bytes(kHeaderLengthBytes, '\0');
  for (size_t i = 0; i < kHeaderLengthBytes; ++i) bytes[i] = static_cast<char>(length >> (8 * i));
  return bytes;
}

uint64_t DecodeHeaderLength(const std::string& bytes) {
  uint64_t length = 0;
  for (size_t i = 0; i < kHeaderLengthBytes; ++i) {
    length |= static_cast<uint64_t>(static_cast<unsigned char>(bytes[i])) << (8 * i);
  }
  return length;
}

absl::StatusOr<FloatTensor> DecodeTensor(const std::string& name, const nlohmann::json& entry,
                                         const char* data, uint64_t data_size) {
  if (!entry.is_object() || entry.value("dtype", "") != "F32" || !entry.contains("shape") ||
      !entry.contains("data_offsets")) {
    return absl::InvalidArgumentError(absl::StrCat(
        "tensor '", name, "' must be {dtype: F32, shape, data_offsets}, got ", entry.dump()));
  }
  FloatTensor tensor;
  tensor.shape = entry["shape"].get<std::vector<int64_t>>();
  const auto offsets = entry["data_offsets"].get<std::vector<uint64_t>>();
  const int64_t count = ElementCount(tensor.shape);
  if (offsets.size() != 2 || offsets[0] > offsets[1] || offsets[1] > data_size || count < 0 ||
      static_cast<uint64_t>(count) > data_size / sizeof(float) ||
      offsets[1] - offsets[0] != static_cast<uint64_t>(count) * sizeof(float)) {
    return absl::InvalidArgumentError(
        absl::StrCat("tensor '", name, "' has data_offsets ", entry["data_offsets"].dump(),
                     " that do not fit its shape ", entry["shape"].dump(), " within ", data_size,
                     " data bytes"));
  }
  tensor.values.resize(static_cast<size_t>(count));
  // An empty tensor's vector may have no storage: memcpy must not get its null pointer.
  if (count > 0) std::memcpy(tensor.values.data(), data + offsets[0], offsets[1] - offsets[0]);
  return tensor;
}

absl::StatusOr<TensorMap> DecodeFile(const std::string& bytes) {
  if (bytes.size() < kHeaderLengthBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("file of ", bytes.size(), " bytes is too short for a safetensors header"));
  }
  const uint64_t header_length = DecodeHeaderLength(bytes);
  if (header_length > bytes.size() - kHeaderLengthBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("header length ", header_length, " exceeds the file size ", bytes.size()));
  }
  nlohmann::json header = nlohmann::json::parse(bytes.begin() + kHeaderLengthBytes,
                                                bytes.begin() + kHeaderLengthBytes + header_length,
                                                nullptr, /*allow_exceptions=*/false);
  if (!header.is_object()) return absl::InvalidArgumentError("header is not a JSON object");
  const char* data = bytes.data() + kHeaderLengthBytes + header_length;
  const uint64_t data_size = bytes.size() - kHeaderLengthBytes - header_length;
  TensorMap tensors;
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") continue;
    ROBOLOOP_ASSIGN_OR_RETURN(tensors[name], DecodeTensor(name, entry, data, data_size));
  }
  return tensors;
}

}  // namespace

absl::Status WriteSafetensors(const std::string& path, const TensorMap& tensors) {
  nlohmann::json header = nlohmann::json::object();
  std::string data;
  for (const auto& [name, tensor] : tensors) {
    if (ElementCount(tensor.shape) != static_cast<int64_t>(tensor.values.size())) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": tensor '", name, "' has ", tensor.values.size(),
                       " values, its shape needs ", ElementCount(tensor.shape)));
    }
    const size_t begin = data.size();
    data.append(reinterpret_cast<const char*>(tensor.values.data()),
                tensor.values.size() * sizeof(float));
    header[name] = {
        {"dtype", "F32"}, {"shape", tensor.shape}, {"data_offsets", {begin, data.size()}}};
  }
  const std::string header_text = header.dump();
  return WriteFileAtomic(path,
                         absl::StrCat(EncodeHeaderLength(header_text.size()), header_text, data));
}

absl::StatusOr<TensorMap> ReadSafetensors(const std::string& path) {
  ROBOLOOP_ASSIGN_OR_RETURN(std::string bytes, ReadFile(path));
  try {
    absl::StatusOr<TensorMap> tensors = DecodeFile(bytes);
    if (!tensors.ok()) return Annotate(tensors.status(), path);
    return tensors;
  } catch (const nlohmann::json::exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": malformed safetensors header: ", e.what()));
  }
}

}  // namespace roboloop::train
