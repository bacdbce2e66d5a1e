#include "train/sample_trace.h"

#include <fcntl.h>

#include <cerrno>

#include "absl/strings/str_cat.h"
#include "common/status.h"

namespace roboloop::train {

absl::StatusOr<std::unique_ptr<SampleTrace>> SampleTrace::Open(const std::string& dir, int rank) {
  ROBOLOOP_RETURN_IF_ERROR(MakeDirs(dir));
  std::string path = JoinPath(dir, absl::StrCat("rank-", rank, ".tsv"));
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644));
  if (!fd.valid()) return ErrnoStatus(errno, absl::StrCat("cannot open the sample trace ", path));
  return std::unique_ptr<SampleTrace>(new SampleTrace(std::move(path), std::move(fd)));
}

absl::Status SampleTrace::Append(int64_t step, const Batch& batch) {
  std::string lines;
  for (size_t i = 0; i < batch.sample_episode.size(); ++i) {
    absl::StrAppend(&lines, step, "\t", batch.sample_episode[i], "\t", batch.sample_step[i], "\n");
  }
  return WriteAll(fd_.get(), lines, path_);
}

}  // namespace roboloop::train
