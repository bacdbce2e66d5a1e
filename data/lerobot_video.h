// Video files of LeRobot datasets through FFmpeg's libraries: frames decoded at given timestamps
// into RGB rows, and frames encoded into an mp4. Internal to the lerobot library.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace roboloop::data::lerobot {

// Decodes one video file forward, seeking back only when asked for an earlier time. Frames come
// out as uint8 RGB, H × W × 3, rows from the top (docs/vision.md). Not thread-safe.
class VideoReader {
 public:
  // Opens `path` and its best video stream; errors name the file (missing, not a video, no
  // decoder for its codec).
  static absl::StatusOr<std::unique_ptr<VideoReader>> Open(const std::string& path);
  ~VideoReader();
  VideoReader(const VideoReader&) = delete;
  VideoReader& operator=(const VideoReader&) = delete;

  // Frame size of the video stream.
  int width() const;
  int height() const;

  // Writes into `out` (times.size() · height · width · 3 bytes) the frames shown at `times`
  // (seconds, ascending): for each, the decoded frame whose timestamp lies within `tolerance_s`.
  // A time with no such frame is OutOfRange naming the file, the time and the nearest frame. A
  // frame FFmpeg cannot decode is DataLoss naming the file, ending in the first and last few
  // error messages FFmpeg logged about the file since Open ("; FFmpeg said: ..."); so do errors
  // of Open. FFmpeg's own log is kept
  // from stderr unless ROBOLOOP_FFMPEG_LOG names a level (error, warning, info, verbose, debug).
  absl::Status ReadFrames(const std::vector<double>& times, double tolerance_s, uint8_t* out);

 private:
  struct State;
  explicit VideoReader(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

// What VideoWriter encodes.
struct VideoWriterOptions {
  std::string path;               // the mp4 to write (parent folders are created)
  std::string encoder = "libx264";  // an FFmpeg encoder name: libx264 (H.264) or libaom-av1 (AV1)
  int width = 0;                  // frame size; yuv420p needs both even
  int height = 0;
  int fps = 30;                   // frame k has timestamp k / fps
  int crf = 18;                   // constant rate factor (lower: closer to the input, larger file)
  int gop = 2;                    // keyframe interval, small for random access (LeRobot uses 2)
};

// Encodes RGB frames (H × W × 3, rows from the top) as yuv420p into an mp4. Not thread-safe.
class VideoWriter {
 public:
  // Opens the encoder and the output file; errors name the file or the encoder.
  static absl::StatusOr<std::unique_ptr<VideoWriter>> Open(const VideoWriterOptions& options);
  ~VideoWriter();
  VideoWriter(const VideoWriter&) = delete;
  VideoWriter& operator=(const VideoWriter&) = delete;

  // Encodes `count` frames at `rgb` (count · height · width · 3 bytes) as the next frames.
  absl::Status Write(const uint8_t* rgb, int64_t count);
  // Flushes the encoder and finishes the file.
  absl::Status Close();

 private:
  struct State;
  explicit VideoWriter(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace roboloop::data::lerobot
