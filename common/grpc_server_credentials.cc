#include "common/grpc_server_credentials.h"

#include <map>
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

// The common name of the client certificate the TLS handshake verified ("" when none).
std::string CertifiedName(const grpc_auth_context* connection) {
  if (connection == nullptr) return "";
  grpc_auth_property_iterator properties =
      grpc_auth_context_find_properties_by_name(connection, GRPC_X509_CN_PROPERTY_NAME);
  const grpc_auth_property* common_name = grpc_auth_property_iterator_next(&properties);
  if (common_name == nullptr) return "";
  return std::string(common_name->value, common_name->value_length);
}

// gRPC core's auth-metadata hook: judges one call from its metadata (which includes the
// `:path` pseudo-header naming the method) and its connection's client certificate, and
// reports the verdict through `done` at once.
void JudgeCallMetadata(void* state, grpc_auth_context* connection, const grpc_metadata* metadata,
                       size_t count, grpc_process_auth_metadata_done_cb done, void* call) {
  absl::string_view method;
  std::vector<absl::string_view> authorization;
  for (size_t i = 0; i < count; ++i) {
    const absl::string_view key = ToStringView(metadata[i].key);
    if (key == kPathKey) method = ToStringView(metadata[i].value);
    if (key == kAuthorizationMetadataKey) authorization.push_back(ToStringView(metadata[i].value));
  }
  const auto& verifier = *static_cast<std::shared_ptr<const CallVerifier>*>(state);
  const absl::StatusOr<std::optional<Caller>> verdict = verifier->Judge(method, authorization, CertifiedName(connection));
  if (!verdict.ok()) {
    const std::string message(verdict.status().message());
    const grpc_status_code code = verdict.status().code() == absl::StatusCode::kPermissionDenied
                                      ? GRPC_STATUS_PERMISSION_DENIED
                                      : GRPC_STATUS_UNAUTHENTICATED;
    done(call, nullptr, 0, nullptr, 0, code, message.c_str());
    return;
  }
  done(call, nullptr, 0, nullptr, 0, GRPC_STATUS_OK, nullptr);
}

void DeleteVerifier(void* state) { delete static_cast<std::shared_ptr<const CallVerifier>*>(state); }

// Server credentials made in gRPC core, so an auth-metadata processor can be set on plaintext
// listeners too (gRPC 1.51's grpc::InsecureServerCredentials aborts on one).
class CoreServerCredentials final : public grpc::ServerCredentials {
 public:
  CoreServerCredentials(const std::optional<TlsKeyPair>& tls, const std::string& client_ca_pem,
                        std::shared_ptr<const CallVerifier> verifier)
      : credentials_(tls ? MakeTls(*tls, client_ca_pem) : grpc_insecure_server_credentials_create()) {
    if (verifier == nullptr) return;
    grpc_server_credentials_set_auth_metadata_processor(
        credentials_, {&JudgeCallMetadata, &DeleteVerifier,
                       new std::shared_ptr<const CallVerifier>(std::move(verifier))});
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
  // With a client CA, a client may present a certificate; one it presents must verify.
  static grpc_server_credentials* MakeTls(const TlsKeyPair& tls, const std::string& client_ca_pem) {
    grpc_ssl_pem_key_cert_pair pair{tls.private_key_pem.c_str(), tls.cert_chain_pem.c_str()};
    if (client_ca_pem.empty()) {
      return grpc_ssl_server_credentials_create_ex(
          nullptr, &pair, 1, GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE, nullptr);
    }
    return grpc_ssl_server_credentials_create_ex(
        client_ca_pem.c_str(), &pair, 1, GRPC_SSL_REQUEST_CLIENT_CERTIFICATE_AND_VERIFY, nullptr);
  }

  int AddPortToServer(const std::string& address, grpc_server* server) override {
    return grpc_server_add_http2_port(server, address.c_str(), credentials_);
  }

  grpc_server_credentials* const credentials_;
};

// Metadata key under which handlers find the authenticated caller (set by CallerInterceptor).
constexpr char kCallerMetadataKey[] = "roboloop-authenticated-caller";

// See MakeCallerInterceptorFactory. One per call; `caller_` backs the metadata value it adds.
class CallerInterceptor final : public grpc::experimental::Interceptor {
 public:
  CallerInterceptor(const CallVerifier* verifier, const char* method, std::string certified_name)
      : verifier_(verifier), method_(method == nullptr ? "" : method),
        certified_name_(std::move(certified_name)) {}

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(
            grpc::experimental::InterceptionHookPoints::POST_RECV_INITIAL_METADATA)) {
      ReplaceCaller(*methods->GetRecvInitialMetadata());
    }
    methods->Proceed();
  }

 private:
  void ReplaceCaller(std::multimap<grpc::string_ref, grpc::string_ref>& metadata) {
    metadata.erase(grpc::string_ref(kCallerMetadataKey));
    if (verifier_ == nullptr) return;
    std::vector<absl::string_view> authorization;
    const auto [first, last] = metadata.equal_range(grpc::string_ref(kAuthorizationMetadataKey));
    for (auto it = first; it != last; ++it) {
      authorization.emplace_back(it->second.data(), it->second.size());
    }
    const absl::StatusOr<std::optional<Caller>> verdict = verifier_->Judge(method_, authorization, certified_name_);
    if (!verdict.ok() || !verdict->has_value()) return;
    caller_ = (*verdict)->name;
    metadata.emplace(grpc::string_ref(kCallerMetadataKey), grpc::string_ref(caller_));
  }

  const CallVerifier* const verifier_;
  const std::string method_;
  const std::string certified_name_;
  std::string caller_;
};

// The common name of the call's verified client certificate ("" when none).
std::string CertifiedName(const grpc::ServerContextBase& context) {
  const std::shared_ptr<const grpc::AuthContext> connection = context.auth_context();
  if (connection == nullptr) return "";
  const std::vector<grpc::string_ref> names = connection->FindPropertyValues(GRPC_X509_CN_PROPERTY_NAME);
  if (names.empty()) return "";
  return std::string(names.front().data(), names.front().size());
}

class CallerInterceptorFactory final
    : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  explicit CallerInterceptorFactory(std::shared_ptr<const CallVerifier> verifier)
      : verifier_(std::move(verifier)) {}

  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override {
    return new CallerInterceptor(verifier_.get(), info->method(), CertifiedName(*info->server_context()));
  }

 private:
  const std::shared_ptr<const CallVerifier> verifier_;
};

}  // namespace

std::shared_ptr<grpc::ServerCredentials> MakeAuthenticatingServerCredentials(
    const std::optional<TlsKeyPair>& tls, const std::string& client_ca_pem,
    std::shared_ptr<const CallVerifier> verifier) {
  return std::make_shared<CoreServerCredentials>(tls, client_ca_pem, std::move(verifier));
}

std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface> MakeCallerInterceptorFactory(
    std::shared_ptr<const CallVerifier> verifier) {
  return std::make_unique<CallerInterceptorFactory>(std::move(verifier));
}

std::string AuthenticatedCaller(const grpc::ServerContextBase& context) {
  const auto& metadata = context.client_metadata();
  const auto it = metadata.find(grpc::string_ref(kCallerMetadataKey));
  if (it == metadata.end()) return "";
  return std::string(it->second.data(), it->second.size());
}

}  // namespace roboloop::common
