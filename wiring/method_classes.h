// The server-side deadline class of the roboloop services' RPCs (issue 25, req 6;
// common/grpc_call_limits.h): the calls that run work (evaluations, rollouts, collection,
// training, registry verify and gc) get the long-call deadline; every other unary RPC gets the
// unary deadline and every streaming one the transfer deadline.
#pragma once

#include "common/grpc_call_limits.h"

namespace roboloop::wiring {

// The long-running methods of RegistryService, TrainService, SimService and EvalService, by full
// path, each classed kLong.
const common::MethodClasses& ServiceMethodClasses();

}  // namespace roboloop::wiring
