// The progress channel from a training worker to TrainService (issue 27): rank 0 writes each
// TrainEvent to a descriptor (a pipe the service made) as a length-delimited protobuf; the
// service reads them back in order until the worker and its ranks have closed the pipe.
// Torch-free.
#pragma once

#include <functional>

#include "absl/status/status.h"
#include "roboloop/v1/train.pb.h"

namespace roboloop::train {

// Writes `event` to `fd` in one piece. An error (e.g. the reader is gone: EPIPE, which a
// worker sees instead of SIGPIPE once it ignores that signal) names the descriptor.
absl::Status WriteTrainEvent(int fd, const v1::TrainEvent& event);

// Calls `on_event` with each event read from `fd` until end of file. DataLoss when the stream
// ends inside an event or holds something that is not one.
absl::Status ReadTrainEvents(int fd, const std::function<void(const v1::TrainEvent&)>& on_event);

}  // namespace roboloop::train
