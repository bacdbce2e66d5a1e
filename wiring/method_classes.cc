#include "wiring/method_classes.h"

namespace roboloop::wiring {

const common::MethodClasses& ServiceMethodClasses() {
  using common::CallClass;
  static const common::MethodClasses* const classes = new common::MethodClasses{
      {"/roboloop.v1.RegistryService/Verify", CallClass::kLong},
      {"/roboloop.v1.RegistryService/CollectGarbage", CallClass::kLong},
      {"/roboloop.v1.TrainService/Train", CallClass::kLong},
      {"/roboloop.v1.SimService/Rollout", CallClass::kLong},
      {"/roboloop.v1.SimService/Collect", CallClass::kLong},
      {"/roboloop.v1.SimService/Relabel", CallClass::kLong},
      {"/roboloop.v1.EvalService/Evaluate", CallClass::kLong},
      {"/roboloop.v1.EvalService/Promote", CallClass::kLong},
  };
  return *classes;
}

}  // namespace roboloop::wiring
