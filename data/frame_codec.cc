#include "data/frame_codec.h"

#include <libdeflate.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <memory>
#include <thread>

#include "absl/strings/str_cat.h"

namespace roboloop::data {
namespace {

using Compressor = std::unique_ptr<libdeflate_compressor, decltype(&libdeflate_free_compressor)>;
using Decompressor = std::unique_ptr<libdeflate_decompressor, decltype(&libdeflate_free_decompressor)>;

// Frame bytes a worker gets at least when the caller leaves the count to the codec: starting a
// thread (tens of microseconds) is then a small part of its work.
constexpr int64_t kMinBytesPerWorker = int64_t{256} << 10;

// Workers for `count` frames of `frame_bytes`: `threads`, or with 0 FrameCodecThreads() but no
// more than kMinBytesPerWorker allows; never more than the frames.
int WorkersFor(int64_t count, int64_t frame_bytes, int threads) {
  const int64_t wanted =
      threads > 0 ? threads : std::min<int64_t>(FrameCodecThreads(), count * frame_bytes / kMinBytesPerWorker);
  return static_cast<int>(std::clamp<int64_t>(wanted, 1, std::max<int64_t>(count, 1)));
}

// Runs body(worker) for worker in [0, workers), the calling thread running worker 0, and
// returns when all have.
void RunWorkers(int workers, const std::function<void(int)>& body) {
  std::vector<std::thread> threads;
  for (int worker = 1; worker < workers; ++worker) threads.emplace_back(body, worker);
  body(0);
  for (std::thread& thread : threads) thread.join();
}

absl::Status FirstError(const std::vector<absl::Status>& statuses) {
  for (const absl::Status& status : statuses) {
    if (!status.ok()) return status;
  }
  return absl::OkStatus();
}

std::string InflateProblem(libdeflate_result result, int64_t frame_bytes) {
  switch (result) {
    case LIBDEFLATE_SHORT_OUTPUT: return absl::StrCat("corrupt chunk (inflates to fewer than ", frame_bytes, " bytes)");
    case LIBDEFLATE_INSUFFICIENT_SPACE: return absl::StrCat("corrupt chunk (inflates to more than ", frame_bytes, " bytes)");
    default: return "corrupt chunk (not a zlib stream)";
  }
}

}  // namespace

int FrameCodecThreads() { return static_cast<int>(std::max(1u, std::thread::hardware_concurrency())); }

absl::StatusOr<std::vector<std::vector<uint8_t>>> CompressFrames(const uint8_t* frames, int64_t count,
                                                                 int64_t frame_bytes, int level,
                                                                 int threads) {
  if (level < 1 || level > 9) {
    return absl::InvalidArgumentError(absl::StrCat("frame codec: deflate level ", level, " outside 1..9"));
  }
  std::vector<std::vector<uint8_t>> streams(count);
  const int workers = WorkersFor(count, frame_bytes, threads);
  std::vector<absl::Status> worker_errors(workers);
  std::atomic<int64_t> next{0};
  RunWorkers(workers, [&](int worker) {
    Compressor compressor(libdeflate_alloc_compressor(level), libdeflate_free_compressor);
    if (compressor == nullptr) {
      worker_errors[worker] = absl::ResourceExhaustedError("frame codec: libdeflate cannot allocate a compressor");
      return;
    }
    // Compressed into a buffer that fits any stream, then copied at its size.
    std::vector<uint8_t> scratch(libdeflate_zlib_compress_bound(compressor.get(), frame_bytes));
    for (int64_t i = next++; i < count; i = next++) {
      const size_t size = libdeflate_zlib_compress(compressor.get(), frames + i * frame_bytes, frame_bytes,
                                                   scratch.data(), scratch.size());
      streams[i].assign(scratch.begin(), scratch.begin() + size);
    }
  });
  if (absl::Status error = FirstError(worker_errors); !error.ok()) return error;
  return streams;
}

absl::Status InflateFrames(const std::vector<std::vector<uint8_t>>& streams, int64_t frame_bytes,
                           int64_t first_frame, uint8_t* out, int threads) {
  const int64_t count = static_cast<int64_t>(streams.size());
  if (count == 0) return absl::OkStatus();
  const int workers = WorkersFor(count, frame_bytes, threads);
  std::vector<absl::Status> worker_errors(workers);
  std::vector<absl::Status> frame_errors(count);
  std::atomic<int64_t> next{0};
  RunWorkers(workers, [&](int worker) {
    Decompressor decompressor(libdeflate_alloc_decompressor(), libdeflate_free_decompressor);
    if (decompressor == nullptr) {
      worker_errors[worker] = absl::ResourceExhaustedError("frame codec: libdeflate cannot allocate a decompressor");
      return;
    }
    for (int64_t i = next++; i < count; i = next++) {
      const libdeflate_result result =
          libdeflate_zlib_decompress(decompressor.get(), streams[i].data(), streams[i].size(),
                                     out + i * frame_bytes, frame_bytes, /*actual_out_nbytes_ret=*/nullptr);
      if (result != LIBDEFLATE_SUCCESS) {
        frame_errors[i] = absl::DataLossError(
            absl::StrCat("frame ", first_frame + i, ": ", InflateProblem(result, frame_bytes)));
      }
    }
  });
  if (absl::Status error = FirstError(worker_errors); !error.ok()) return error;
  return FirstError(frame_errors);
}

}  // namespace roboloop::data
