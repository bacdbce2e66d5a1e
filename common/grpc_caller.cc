#include "common/grpc_caller.h"

#include "common/grpc_server_credentials.h"
#include "common/ids.h"

namespace roboloop::common {
namespace {

constexpr char kUserMetadataKey[] = "roboloop-user";
constexpr char kHostMetadataKey[] = "roboloop-host";

std::string ClientMetadata(const grpc::ServerContextBase& context, const char* key) {
  const auto& metadata = context.client_metadata();
  const auto it = metadata.find(grpc::string_ref(key));
  if (it == metadata.end()) return "";
  return std::string(it->second.data(), it->second.size());
}

}  // namespace

void AddCallerIdentity(grpc::ClientContext& context) {
  context.AddMetadata(kUserMetadataKey, CurrentUser());
  context.AddMetadata(kHostMetadataKey, HostName());
}

std::string RequestingUser(const grpc::ServerContextBase& context) {
  std::string user = AuthenticatedCaller(context);
  if (user.empty()) user = ClientMetadata(context, kUserMetadataKey);
  return user.empty() ? CurrentUser() : user;
}

std::string RequestingHost(const grpc::ServerContextBase& context) {
  const std::string host = ClientMetadata(context, kHostMetadataKey);
  return host.empty() ? context.peer() : host;
}

}  // namespace roboloop::common
