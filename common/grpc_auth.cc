#include "common/grpc_auth.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <iterator>
#include <map>
#include <fstream>
#include <sstream>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "common/status.h"
#include "grpc/grpc.h"

namespace roboloop::common {
namespace {

using grpc::experimental::InterceptionHookPoints;
using grpc::experimental::InterceptorBatchMethods;
using grpc::experimental::ServerRpcInfo;
using Metadata = std::multimap<grpc::string_ref, grpc::string_ref>;
using Digest = std::array<unsigned char, 32>;

// The interceptor's verdict travels in the call's own metadata map under this key; any
// client-sent entry with the key is erased first, so a client cannot forge it.
constexpr char kVerdictKey[] = "x-roboloop-auth-verdict";
constexpr char kVerdictAccepted[] = "accepted";
constexpr char kVerdictRejected[] = "rejected";
constexpr char kBearerPrefix[] = "bearer ";
constexpr char kHealthMethodPrefix[] = "/grpc.health.v1.Health/";

Digest Sha256(absl::string_view data) {
  Digest digest{};
  unsigned int size = 0;
  ROBOLOOP_CHECK(EVP_Digest(data.data(), data.size(), digest.data(), &size, EVP_sha256(),
                            nullptr) == 1);
  return digest;
}

// Judges one call's metadata against the expected token's digest; OK admits the call.
absl::Status JudgeMetadata(const Metadata& metadata, const Digest& expected) {
  const auto [first, last] = metadata.equal_range(kAuthorizationMetadataKey);
  if (first == last) {
    return absl::UnauthenticatedError(
        "missing bearer token: send metadata 'authorization: Bearer <token>'");
  }
  if (std::next(first) != last) {
    return absl::UnauthenticatedError("more than one 'authorization' metadata entry");
  }
  const absl::string_view value(first->second.data(), first->second.size());
  if (!absl::StartsWithIgnoreCase(value, kBearerPrefix)) {
    return absl::UnauthenticatedError(
        "'authorization' metadata is not of the form 'Bearer <token>'");
  }
  const Digest presented = Sha256(value.substr(std::strlen(kBearerPrefix)));
  if (CRYPTO_memcmp(presented.data(), expected.data(), expected.size()) != 0) {
    return absl::UnauthenticatedError("invalid bearer token");
  }
  return absl::OkStatus();
}

class BearerTokenInterceptor final : public grpc::experimental::Interceptor {
 public:
  BearerTokenInterceptor(ServerRpcInfo* info, const Digest* expected)
      : info_(info), expected_(expected) {}

  void Intercept(InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(InterceptionHookPoints::POST_RECV_INITIAL_METADATA)) {
      Judge(methods->GetRecvInitialMetadata());
    }
    methods->Proceed();
  }

 private:
  void Judge(Metadata* metadata) {
    metadata->erase(kVerdictKey);
    absl::Status verdict = absl::OkStatus();
    if (expected_ != nullptr && !absl::StartsWith(info_->method(), kHealthMethodPrefix)) {
      verdict = JudgeMetadata(*metadata, *expected_);
    }
    if (verdict.ok()) {
      metadata->emplace(kVerdictKey, kVerdictAccepted);
      return;
    }
    metadata->emplace(kVerdictKey, kVerdictRejected);
    // Ends the call now with UNAUTHENTICATED; the handler still runs (gRPC 1.51) and is
    // stopped by CheckCallAuthenticated, which finds no accepted verdict.
    const std::string message(verdict.message());
    grpc_call_cancel_with_status(info_->server_context()->c_call(), GRPC_STATUS_UNAUTHENTICATED,
                                 message.c_str(), nullptr);
  }

  ServerRpcInfo* const info_;
  const Digest* const expected_;  // null: no token configured, every call is accepted
};

class BearerTokenInterceptorFactory final
    : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  explicit BearerTokenInterceptorFactory(const std::string& token)
      : requires_token_(!token.empty()), expected_(Sha256(token)) {}

  grpc::experimental::Interceptor* CreateServerInterceptor(ServerRpcInfo* info) override {
    return new BearerTokenInterceptor(info, requires_token_ ? &expected_ : nullptr);
  }

 private:
  const bool requires_token_;
  const Digest expected_;
};

}  // namespace

absl::Status ValidateToken(const std::string& token) {
  if (token.empty()) return absl::InvalidArgumentError("bearer token is empty");
  for (const char c : token) {
    if (c <= ' ' || c > '~') {
      return absl::InvalidArgumentError(
          "bearer token holds a space or a non-printable/non-ASCII character");
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadTokenFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return ErrnoStatus(errno, absl::StrCat("token file '", path, "'"));
  std::ostringstream content;
  content << in.rdbuf();
  if (in.bad()) return ErrnoStatus(errno, absl::StrCat("reading token file '", path, "'"));
  std::string token(absl::StripAsciiWhitespace(content.str()));
  ROBOLOOP_RETURN_IF_ERROR(Annotate(ValidateToken(token), absl::StrCat("token file '", path, "'")));
  return token;
}

std::string BearerMetadataValue(const std::string& token) {
  return absl::StrCat("Bearer ", token);
}

grpc::Status CheckCallAuthenticated(const grpc::ServerContextBase& context) {
  const Metadata& metadata = context.client_metadata();
  const auto [first, last] = metadata.equal_range(kVerdictKey);
  if (first == last) {
    return grpc::Status(grpc::StatusCode::INTERNAL,
                        "call did not pass the bearer-token interceptor (server not built by "
                        "roboloop::common::GrpcServer)");
  }
  if (first->second != kVerdictAccepted) {
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "call rejected by bearer-token check");
  }
  return grpc::Status::OK;
}

std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>
MakeBearerTokenInterceptorFactory(const std::string& token) {
  return std::make_unique<BearerTokenInterceptorFactory>(token);
}

}  // namespace roboloop::common
