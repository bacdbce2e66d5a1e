// Length-delimited TrainEvents over a descriptor.
#include "train/train_progress.h"

#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <google/protobuf/util/delimited_message_util.h>
#include <unistd.h>

#include <cerrno>

#include "absl/strings/str_cat.h"
#include "common/status.h"

namespace roboloop::train {

absl::Status WriteTrainEvent(int fd, const v1::TrainEvent& event) {
  std::string framed;
  {
    google::protobuf::io::StringOutputStream out(&framed);
    if (!google::protobuf::util::SerializeDelimitedToZeroCopyStream(event, &out)) {
      return absl::InternalError("cannot serialize a training event");
    }
  }
  size_t written = 0;
  while (written < framed.size()) {
    const ssize_t n = write(fd, framed.data() + written, framed.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoStatus(errno, absl::StrCat("writing a training event to descriptor ", fd));
    written += static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

absl::Status ReadTrainEvents(int fd, const std::function<void(const v1::TrainEvent&)>& on_event) {
  google::protobuf::io::FileInputStream in(fd);
  while (true) {
    v1::TrainEvent event;
    bool clean_eof = false;
    if (!google::protobuf::util::ParseDelimitedFromZeroCopyStream(&event, &in, &clean_eof)) {
      if (clean_eof) return absl::OkStatus();
      return absl::DataLossError(absl::StrCat("descriptor ", fd, ": a truncated or malformed training event"));
    }
    on_event(event);
  }
}

}  // namespace roboloop::train
