// The progress channel of a training worker (issue 27): events written to a pipe come back
// in order and intact; a stream cut inside an event is DataLoss, not a silent end.
#include <gtest/gtest.h>
#include <unistd.h>

#include <csignal>

#include <google/protobuf/util/message_differencer.h>

#include "absl/status/statusor.h"
#include "train/train_progress.h"

namespace roboloop::train {
namespace {

std::vector<v1::TrainEvent> SomeEvents() {
  std::vector<v1::TrainEvent> events(3);
  events[0].set_run_id("r");
  events[0].mutable_step()->set_step(1);
  events[0].mutable_step()->set_loss(0.5);
  events[1].mutable_checkpoint()->set_checkpoint_id("c1");
  events[2].mutable_finished()->set_steps(1);
  return events;
}

absl::StatusOr<std::vector<v1::TrainEvent>> ReadAll(int fd) {
  std::vector<v1::TrainEvent> collected;
  absl::Status status = ReadTrainEvents(fd, [&](const v1::TrainEvent& e) { collected.push_back(e); });
  if (!status.ok()) return status;
  return collected;
}

TEST(TrainProgressTest, EventsComeBackInOrder) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const std::vector<v1::TrainEvent> events = SomeEvents();
  for (const v1::TrainEvent& e : events) ASSERT_TRUE(WriteTrainEvent(fds[1], e).ok());
  close(fds[1]);
  absl::StatusOr<std::vector<v1::TrainEvent>> events_read = ReadAll(fds[0]);
  close(fds[0]);
  ASSERT_TRUE(events_read.ok()) << events_read.status();
  ASSERT_EQ(events_read->size(), events.size());
  for (size_t i = 0; i < events.size(); ++i) {
    EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals((*events_read)[i], events[i])) << i;
  }
}

TEST(TrainProgressTest, AStreamCutInsideAnEventIsDataLoss) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  ASSERT_TRUE(WriteTrainEvent(fds[1], SomeEvents()[0]).ok());
  const char partial[] = {20, 1, 2};  // announces 20 bytes, delivers 2
  ASSERT_EQ(write(fds[1], partial, sizeof(partial)), static_cast<ssize_t>(sizeof(partial)));
  close(fds[1]);
  absl::StatusOr<std::vector<v1::TrainEvent>> events_read = ReadAll(fds[0]);
  close(fds[0]);
  EXPECT_EQ(events_read.status().code(), absl::StatusCode::kDataLoss) << events_read.status();
}

TEST(TrainProgressTest, WritingToAClosedPipeIsAnError) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  close(fds[0]);
  signal(SIGPIPE, SIG_IGN);
  EXPECT_FALSE(WriteTrainEvent(fds[1], SomeEvents()[0]).ok());
  close(fds[1]);
}

}  // namespace
}  // namespace roboloop::train
