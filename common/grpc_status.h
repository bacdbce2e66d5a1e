// Conversions between grpc::Status and absl::Status. Both use the canonical status codes,
// so codes map one to one and messages are kept unchanged.
#pragma once

#include "absl/status/status.h"
#include "grpcpp/support/status.h"

namespace roboloop::common {

// Returns the absl::Status with the same code and message as `status`.
absl::Status GrpcToAbsl(const grpc::Status& status);

// Returns the grpc::Status with the same code and message as `status`.
grpc::Status AbslToGrpc(const absl::Status& status);

}  // namespace roboloop::common
