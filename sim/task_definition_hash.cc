#include "sim/task_definition_hash.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/sha256.h"

namespace roboloop::sim {
namespace {

std::string DescribeSpecs(const Task& task) {
  std::string text = DescribeObsSpec(task.obs_spec());
  // Cameras beyond DescribeObsSpec's names and sizes: the MJCF camera each renders (absent for
  // state-only tasks, whose hashes stay as they were).
  for (const CameraSpec& camera : task.obs_spec().cameras) absl::StrAppend(&text, "|camera:", camera.camera);
  for (size_t i = 0; i < task.action_spec().low.size(); ++i) {
    absl::StrAppend(&text, "|", task.action_spec().low[i], ",", task.action_spec().high[i]);
  }
  return text;
}

}  // namespace

std::string TaskDefinitionHash(const Task& task, const std::string& summary) {
  const int size = mj_sizeModel(task.model());
  std::vector<char> model(static_cast<size_t>(size));
  mj_saveModel(task.model(), nullptr, model.data(), size);
  const std::string header = absl::StrJoin(
      {std::string("roboloop.sim.task.v1"), task.name(), task.description(), summary, DescribeSpecs(task),
       absl::StrCat(task.control_substeps(), ",", task.max_steps(), ",",
                    static_cast<int>(task.success_rule().kind), ",", task.success_rule().steps),
       task.definition_source()},
      "\n");
  return Sha256Hex(absl::StrCat(header, "\n", std::string(model.data(), model.size())));
}

}  // namespace roboloop::sim
