#include "train/run_log.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/status.h"
#include "spdlog/spdlog.h"
#include "tensorboard/event.pb.h"
#include "train/tfrecord.h"

namespace roboloop::train {
namespace {

constexpr char kFileVersion[] = "brain.Event:2";
constexpr size_t kFlushBytes = size_t{1} << 20;

absl::StatusOr<UniqueFd> OpenForAppend(const std::string& path, int extra_flags) {
  ROBOLOOP_RETURN_IF_ERROR(MakeDirs(ParentDir(path)));
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | extra_flags, 0644);
  if (fd < 0) return ErrnoStatus(errno, path);
  return UniqueFd(fd);
}

absl::StatusOr<std::string> HostName() {
  char name[HOST_NAME_MAX + 1] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) return ErrnoStatus(errno, "gethostname");
  return std::string(name);
}

std::string SerializedEvent(const tensorboard::Event& event) {
  std::string bytes;
  ROBOLOOP_CHECK(event.SerializeToString(&bytes));
  return bytes;
}

}  // namespace

absl::StatusOr<std::unique_ptr<JsonlLog>> JsonlLog::Create(const std::string& path) {
  ROBOLOOP_ASSIGN_OR_RETURN(UniqueFd fd, OpenForAppend(path, 0));
  return std::unique_ptr<JsonlLog>(new JsonlLog(path, std::move(fd)));
}

absl::Status JsonlLog::Append(const nlohmann::json& record) {
  if (!record.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path_, ": a log record must be a JSON object, got ", record.type_name()));
  }
  const std::string line = record.dump() + "\n";
  absl::MutexLock lock(&mu_);
  return WriteAll(fd_.get(), line, path_);
}

absl::StatusOr<std::unique_ptr<TensorBoardWriter>> TensorBoardWriter::Create(
    const std::string& dir) {
  ROBOLOOP_ASSIGN_OR_RETURN(const std::string host, HostName());
  const absl::Time now = absl::Now();
  // A run resumed within the second its last writer started gets the next free suffix.
  std::string path = JoinPath(dir, absl::StrCat("events.out.tfevents.", absl::ToUnixSeconds(now), ".", host));
  for (int n = 1; PathExists(path); ++n) {
    path = JoinPath(dir, absl::StrCat("events.out.tfevents.", absl::ToUnixSeconds(now), ".", host, ".", n));
  }
  ROBOLOOP_ASSIGN_OR_RETURN(UniqueFd fd, OpenForAppend(path, O_EXCL));
  std::unique_ptr<TensorBoardWriter> writer(new TensorBoardWriter(path, std::move(fd)));
  tensorboard::Event event;
  event.set_wall_time(absl::ToDoubleSeconds(now - absl::UnixEpoch()));
  event.set_file_version(kFileVersion);
  ROBOLOOP_RETURN_IF_ERROR(writer->AppendRecord(SerializedEvent(event)));
  ROBOLOOP_RETURN_IF_ERROR(writer->Flush());
  return writer;
}

TensorBoardWriter::~TensorBoardWriter() {
  absl::MutexLock lock(&mu_);
  const absl::Status flushed = FlushLocked();
  if (!flushed.ok()) spdlog::warn("TensorBoard events lost: {}", flushed.ToString());
}

absl::Status TensorBoardWriter::AddScalar(const std::string& tag, int64_t step, double wall_time,
                                          float value) {
  tensorboard::Event event;
  event.set_wall_time(wall_time);
  event.set_step(step);
  tensorboard::Summary::Value* summary_value = event.mutable_summary()->add_value();
  summary_value->set_tag(tag);
  summary_value->set_simple_value(value);
  return AppendRecord(SerializedEvent(event));
}

absl::Status TensorBoardWriter::AppendRecord(const std::string& data) {
  absl::MutexLock lock(&mu_);
  buffer_ += FrameRecord(data);
  if (buffer_.size() >= kFlushBytes) return FlushLocked();
  return absl::OkStatus();
}

absl::Status TensorBoardWriter::Flush() {
  absl::MutexLock lock(&mu_);
  return FlushLocked();
}

absl::Status TensorBoardWriter::FlushLocked() {
  if (buffer_.empty()) return absl::OkStatus();
  ROBOLOOP_RETURN_IF_ERROR(WriteAll(fd_.get(), buffer_, path_));
  buffer_.clear();
  return absl::OkStatus();
}

absl::StatusOr<std::vector<TensorBoardScalar>> ReadTensorBoardScalars(const std::string& path) {
  ROBOLOOP_ASSIGN_OR_RETURN(const std::string contents, ReadFile(path));
  ROBOLOOP_ASSIGN_OR_RETURN(const std::vector<Record> records, ParseRecords(contents, path));
  std::vector<TensorBoardScalar> scalars;
  for (size_t i = 0; i < records.size(); ++i) {
    tensorboard::Event event;
    if (!event.ParseFromString(records[i].data)) {
      return absl::DataLossError(absl::StrCat(path, ": record at offset ", records[i].offset,
                                              " is not a tensorboard.Event"));
    }
    if (i == 0 && !event.has_file_version()) {
      return absl::DataLossError(
          absl::StrCat(path, ": the first record is not a file_version event"));
    }
    for (const tensorboard::Summary::Value& value : event.summary().value()) {
      if (!value.has_simple_value()) continue;
      scalars.push_back({value.tag(), event.step(), event.wall_time(), value.simple_value()});
    }
  }
  return scalars;
}

}  // namespace roboloop::train
