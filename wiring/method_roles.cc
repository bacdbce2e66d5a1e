#include "wiring/method_roles.h"

namespace roboloop::wiring {

const common::MethodRoles& ServiceMethodRoles() {
  using common::Role;
  static const common::MethodRoles* const roles = new common::MethodRoles{
      {"/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo", Role::kRead},
      {"/roboloop.v1.RegistryService/DownloadBlob", Role::kRead},
      {"/roboloop.v1.RegistryService/GetCheckpoint", Role::kRead},
      {"/roboloop.v1.RegistryService/GetDataset", Role::kRead},
      {"/roboloop.v1.RegistryService/ListCheckpoints", Role::kRead},
      {"/roboloop.v1.RegistryService/ListDatasets", Role::kRead},
      {"/roboloop.v1.RegistryService/AliasHistory", Role::kRead},
      {"/roboloop.v1.RegistryService/Lineage", Role::kRead},
      {"/roboloop.v1.RegistryService/UploadBlob", Role::kWrite},
      {"/roboloop.v1.RegistryService/UploadStatus", Role::kWrite},
      {"/roboloop.v1.RegistryService/RegisterCheckpoint", Role::kWrite},
      {"/roboloop.v1.RegistryService/RegisterDataset", Role::kWrite},
      {"/roboloop.v1.RegistryService/SetAlias", Role::kAdmin},
      {"/roboloop.v1.RegistryService/Promote", Role::kAdmin},
      {"/roboloop.v1.RegistryService/Verify", Role::kAdmin},
      {"/roboloop.v1.RegistryService/CollectGarbage", Role::kAdmin},
      {"/roboloop.v1.TrainService/Train", Role::kWrite},
      {"/roboloop.v1.TrainService/Cancel", Role::kWrite},
      {"/roboloop.v1.SimService/ListTasks", Role::kRead},
      {"/roboloop.v1.SimService/Rollout", Role::kWrite},
      {"/roboloop.v1.SimService/Collect", Role::kWrite},
      {"/roboloop.v1.SimService/Relabel", Role::kWrite},
      {"/roboloop.v1.EvalService/Leaderboard", Role::kRead},
      {"/roboloop.v1.EvalService/Compare", Role::kRead},
      {"/roboloop.v1.EvalService/GetProtocol", Role::kRead},
      {"/roboloop.v1.EvalService/Evaluate", Role::kWrite},
      {"/roboloop.v1.EvalService/Promote", Role::kAdmin},
  };
  return *roles;
}

}  // namespace roboloop::wiring
