// gRPC metadata a RegistryClient sends so the server can record who moved an alias.
#pragma once

namespace roboloop::registry {

// Login name of the calling user.
inline constexpr char kUserMetadataKey[] = "roboloop-user";
// Host name of the calling machine.
inline constexpr char kHostMetadataKey[] = "roboloop-host";

}  // namespace roboloop::registry
