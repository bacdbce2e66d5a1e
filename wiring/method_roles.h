// The role each RPC of the roboloop services needs when a server runs with a tokens file
// (issue 25, req 5; common/access_roles.h): `read` lists and gets, `write` registers, uploads,
// evaluates, rolls out and trains, `admin` moves aliases, promotes, verifies and collects
// garbage. Health checks need no token at all.
#pragma once

#include "common/access_roles.h"

namespace roboloop::wiring {

// Every method of RegistryService, TrainService, SimService, EvalService and gRPC reflection,
// by full path, with the role it needs.
const common::MethodRoles& ServiceMethodRoles();

}  // namespace roboloop::wiring
