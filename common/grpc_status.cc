#include "common/grpc_status.h"

#include <string>

namespace roboloop::common {
namespace {

// Largest canonical code (UNAUTHENTICATED = 16); anything above is reported as UNKNOWN.
constexpr int kMaxCanonicalCode = 16;

}  // namespace

absl::Status GrpcToAbsl(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  const int code = static_cast<int>(status.error_code());
  if (code < 0 || code > kMaxCanonicalCode) {
    return absl::UnknownError(status.error_message());
  }
  return absl::Status(static_cast<absl::StatusCode>(code), status.error_message());
}

grpc::Status AbslToGrpc(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  const int code = static_cast<int>(status.code());
  if (code < 0 || code > kMaxCanonicalCode) {
    return grpc::Status(grpc::StatusCode::UNKNOWN, std::string(status.message()));
  }
  return grpc::Status(static_cast<grpc::StatusCode>(code), std::string(status.message()));
}

}  // namespace roboloop::common
