#include "train/run_recorder.h"

#include <google/protobuf/util/json_util.h>

#include <utility>

#include "common/fs.h"
#include "common/ids.h"
#include "common/status.h"
#include "common/store_layout.h"
#include "nlohmann/json.hpp"

namespace roboloop::train {

absl::StatusOr<std::unique_ptr<RunRecorder>> RunRecorder::Create(const std::string& root, const std::string& run_id,
                                                                 std::function<void(const v1::TrainEvent&)> on_event) {
  auto recorder = std::unique_ptr<RunRecorder>(new RunRecorder(run_id, std::move(on_event)));
  const std::string dir = StoreLayout(root).TrainingRunDir(run_id);
  ROBOLOOP_RETURN_IF_ERROR(MakeDirs(JoinPath(dir, "checkpoints")));
  ROBOLOOP_ASSIGN_OR_RETURN(recorder->jsonl_, JsonlLog::Create(JoinPath(dir, "train.jsonl")));
  ROBOLOOP_ASSIGN_OR_RETURN(recorder->tensorboard_, TensorBoardWriter::Create(JoinPath(dir, "tensorboard")));
  recorder->dir_ = dir;
  return recorder;
}

absl::Status RunRecorder::Emit(v1::TrainEvent event) {
  event.set_run_id(run_id_);
  event.set_wall_time(static_cast<double>(NowUnixMicros()) / 1e6);
  std::string json;
  google::protobuf::util::JsonPrintOptions print;
  print.preserve_proto_field_names = true;
  if (!google::protobuf::util::MessageToJsonString(event, &json, print).ok()) {
    return absl::InternalError("cannot print a training event as JSON");
  }
  ROBOLOOP_RETURN_IF_ERROR(jsonl_->Append(nlohmann::json::parse(json)));
  ROBOLOOP_RETURN_IF_ERROR(AddScalars(event));
  if (!event.has_step()) ROBOLOOP_RETURN_IF_ERROR(tensorboard_->Flush());
  if (on_event_) on_event_(event);
  return absl::OkStatus();
}

absl::Status RunRecorder::AddScalars(const v1::TrainEvent& event) {
  if (event.has_step()) {
    const v1::TrainEvent::Step& s = event.step();
    for (const auto& [tag, value] : {std::pair<const char*, double>{"train/loss", s.loss()},
                                     {"train/lr", s.lr()}, {"train/grad_norm", s.grad_norm()},
                                     {"train/samples_per_s", s.samples_per_s()},
                                     {"train/data_stall_pct", s.data_stall_pct()}}) {
      ROBOLOOP_RETURN_IF_ERROR(tensorboard_->AddScalar(tag, s.step(), event.wall_time(), static_cast<float>(value)));
    }
  }
  if (event.has_validation()) {
    ROBOLOOP_RETURN_IF_ERROR(tensorboard_->AddScalar("valid/loss", event.validation().step(), event.wall_time(),
                                                     static_cast<float>(event.validation().loss())));
  }
  return absl::OkStatus();
}

}  // namespace roboloop::train
