#include "common/grpc_server_credentials.h"

#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "common/grpc_auth.h"
#include "common/status.h"
#include "grpc/grpc_security.h"

namespace roboloop::common {
namespace {

constexpr absl::string_view kPathKey = ":path";

absl::string_view ToStringView(const grpc_slice& slice) {
  return absl::string_view(reinterpret_cast<const char*>(GRPC_SLICE_START_PTR(slice)),
                           GRPC_SLICE_LENGTH(slice));
}

// gRPC core's auth-metadata hook: judges one call from its metadata (which includes the
// `:path` pseudo-header naming the method) and reports the verdict through `done` at once.
void JudgeCallMetadata(void* verifier, grpc_auth_context* /*peer*/, const grpc_metadata* metadata,
                       size_t count, grpc_process_auth_metadata_done_cb done, void* call) {
  absl::string_view method;
  std::vector<absl::string_view> authorization;
  for (size_t i = 0; i < count; ++i) {
    const absl::string_view key = ToStringView(metadata[i].key);
    if (key == kPathKey) method = ToStringView(metadata[i].value);
    if (key == kAuthorizationMetadataKey) authorization.push_back(ToStringView(metadata[i].value));
  }
  const absl::Status verdict =
      static_cast<const BearerTokenVerifier*>(verifier)->Judge(method, authorization);
  if (verdict.ok()) {
    done(call, nullptr, 0, nullptr, 0, GRPC_STATUS_OK, nullptr);
    return;
  }
  const std::string message(verdict.message());
  done(call, nullptr, 0, nullptr, 0, GRPC_STATUS_UNAUTHENTICATED, message.c_str());
}

void DeleteVerifier(void* verifier) { delete static_cast<BearerTokenVerifier*>(verifier); }

// Server credentials made in gRPC core, so an auth-metadata processor can be set on plaintext
// listeners too (gRPC 1.51's grpc::InsecureServerCredentials aborts on one).
class CoreServerCredentials final : public grpc::ServerCredentials {
 public:
  CoreServerCredentials(const std::optional<TlsKeyPair>& tls, const std::string& token)
      : credentials_(tls ? MakeTls(*tls) : grpc_insecure_server_credentials_create()) {
    if (token.empty()) return;
    grpc_server_credentials_set_auth_metadata_processor(
        credentials_, {&JudgeCallMetadata, &DeleteVerifier, new BearerTokenVerifier(token)});
  }
  ~CoreServerCredentials() override { grpc_server_credentials_release(credentials_); }

  CoreServerCredentials(const CoreServerCredentials&) = delete;
  CoreServerCredentials& operator=(const CoreServerCredentials&) = delete;

  // The token check is fixed at construction; replacing it would drop authentication.
  void SetAuthMetadataProcessor(
      const std::shared_ptr<grpc::AuthMetadataProcessor>& /*processor*/) override {
    ROBOLOOP_CHECK_MSG(false, "roboloop server credentials keep their own bearer-token check");
  }

 private:
  static grpc_server_credentials* MakeTls(const TlsKeyPair& tls) {
    grpc_ssl_pem_key_cert_pair pair{tls.private_key_pem.c_str(), tls.cert_chain_pem.c_str()};
    return grpc_ssl_server_credentials_create_ex(
        nullptr, &pair, 1, GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE, nullptr);
  }

  int AddPortToServer(const std::string& address, grpc_server* server) override {
    return grpc_server_add_http2_port(server, address.c_str(), credentials_);
  }

  grpc_server_credentials* const credentials_;
};

}  // namespace

std::shared_ptr<grpc::ServerCredentials> MakeAuthenticatingServerCredentials(
    const std::optional<TlsKeyPair>& tls, const std::string& token) {
  return std::make_shared<CoreServerCredentials>(tls, token);
}

}  // namespace roboloop::common
