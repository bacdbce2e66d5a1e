#include "data/lerobot_video.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <mutex>

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/imgutils.h>
#include <libavutil/opt.h>
#include <libswscale/swscale.h>
}

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "common/status.h"

namespace roboloop::data::lerobot {
namespace {

std::string AvError(int code) {
  char text[AV_ERROR_MAX_STRING_SIZE] = {};
  av_strerror(code, text, sizeof(text));
  return text;
}

absl::Status AvStatus(int code, const std::string& path, const std::string& what) {
  if (code >= 0) return absl::OkStatus();
  return absl::DataLossError(absl::StrCat(path, ": ", what, ": ", AvError(code)));
}

// FFmpeg's error messages about one video since it was opened: the first and the last few, folded
// into roboloop's error instead of reaching the terminal (frame threads report a damaged packet
// a few frames after it was read, and concealed damage before the failure says where it began).
// Add is called from FFmpeg's decoding threads, hence the lock.
class FfmpegMessages {
 public:
  void Add(std::string message) {
    const std::lock_guard<std::mutex> lock(mutex_);
    ++count_;
    if (first_.size() < kKept) {
      first_.push_back(std::move(message));
      return;
    }
    last_.push_back(std::move(message));
    if (last_.size() > kKept) last_.pop_front();
  }

  // "; FFmpeg said: a; b; c; ...; y; z (N messages)", or "" when FFmpeg said nothing.
  std::string Summary() {
    const std::lock_guard<std::mutex> lock(mutex_);
    if (count_ == 0) return "";
    std::vector<std::string> shown = first_;
    if (count_ > static_cast<int64_t>(first_.size() + last_.size())) shown.push_back("...");
    shown.insert(shown.end(), last_.begin(), last_.end());
    return absl::StrCat("; FFmpeg said: ", absl::StrJoin(shown, "; "),
                        count_ > 1 ? absl::StrCat(" (", count_, " messages)") : "");
  }

 private:
  static constexpr size_t kKept = 3;
  std::mutex mutex_;
  std::vector<std::string> first_;
  std::deque<std::string> last_;
  int64_t count_ = 0;
};

// The messages of the video this thread is opening or decoding (FFmpeg's decoding threads find
// theirs through their codec context's `opaque`, which FFmpeg copies into each thread's context).
thread_local FfmpegMessages* current_messages = nullptr;

// Sets current_messages for its lifetime.
class CurrentMessages {
 public:
  explicit CurrentMessages(FfmpegMessages* messages) : previous_(current_messages) { current_messages = messages; }
  ~CurrentMessages() { current_messages = previous_; }
  CurrentMessages(const CurrentMessages&) = delete;
  CurrentMessages& operator=(const CurrentMessages&) = delete;

 private:
  FfmpegMessages* previous_;
};

// The level from which FFmpeg's own log reaches stderr: AV_LOG_QUIET unless ROBOLOOP_FFMPEG_LOG
// names one of error, warning, info, verbose, debug (docs/lerobot.md).
int PassedThroughLevel() {
  const char* name = std::getenv("ROBOLOOP_FFMPEG_LOG");
  if (name == nullptr) return AV_LOG_QUIET;
  static const std::pair<const char*, int> kLevels[] = {{"error", AV_LOG_ERROR},   {"warning", AV_LOG_WARNING},
                                                        {"info", AV_LOG_INFO},     {"verbose", AV_LOG_VERBOSE},
                                                        {"debug", AV_LOG_DEBUG}};
  for (const auto& [level_name, level] : kLevels) {
    if (std::strcmp(name, level_name) == 0) return level;
  }
  return AV_LOG_QUIET;
}

// Where a log line of FFmpeg's `context` is kept: its codec context's messages, else this thread's
// (nullptr: nowhere).
FfmpegMessages* MessagesOf(void* context) {
  if (context != nullptr) {
    const AVClass* av_class = *static_cast<AVClass**>(context);
    if (av_class != nullptr && std::strcmp(av_class->class_name, "AVCodecContext") == 0) {
      if (void* opaque = static_cast<AVCodecContext*>(context)->opaque; opaque != nullptr) {
        return static_cast<FfmpegMessages*>(opaque);
      }
    }
  }
  return current_messages;
}

std::atomic<int> passed_through_level{AV_LOG_QUIET};

// FFmpeg's log callback: errors are kept with the video they concern; what ROBOLOOP_FFMPEG_LOG
// asks for also goes to stderr through FFmpeg's own printer.
void KeepFfmpegMessage(void* context, int level, const char* format, va_list args) {
  if (level <= passed_through_level) {
    va_list copy;
    va_copy(copy, args);
    av_log_default_callback(context, level, format, copy);
    va_end(copy);
  }
  if (level > AV_LOG_ERROR) return;
  FfmpegMessages* messages = MessagesOf(context);
  if (messages == nullptr) return;
  char text[512];
  std::vsnprintf(text, sizeof(text), format, args);
  const AVClass* av_class = context == nullptr ? nullptr : *static_cast<AVClass**>(context);
  const char* name = av_class == nullptr ? nullptr
                     : av_class->item_name != nullptr ? av_class->item_name(context)
                                                      : av_class->class_name;
  // The demuxer's parser logs through a codec context named "NULL", which says nothing.
  const bool named = name != nullptr && std::strcmp(name, "NULL") != 0;
  const std::string source = named ? absl::StrCat(name, ": ") : "";
  messages->Add(absl::StrCat(source, absl::StripSuffix(absl::StripAsciiWhitespace(text), ".")));
}

// `status` with `messages`' summary appended; OK stays OK.
absl::Status WithMessages(const absl::Status& status, FfmpegMessages& messages) {
  if (status.ok()) return status;
  return absl::Status(status.code(), absl::StrCat(status.message(), messages.Summary()));
}

// Routes FFmpeg's log through KeepFfmpegMessage, once per process.
void InstallFfmpegLog() {
  static std::once_flag installed;
  std::call_once(installed, [] {
    passed_through_level = PassedThroughLevel();
    av_log_set_level(std::max(AV_LOG_ERROR, passed_through_level.load()));
    av_log_set_callback(KeepFfmpegMessage);
  });
}

struct FormatCloser {
  void operator()(AVFormatContext* context) const { avformat_close_input(&context); }
};
struct CodecFreer {
  void operator()(AVCodecContext* context) const { avcodec_free_context(&context); }
};
struct FrameFreer {
  void operator()(AVFrame* frame) const { av_frame_free(&frame); }
};
struct PacketFreer {
  void operator()(AVPacket* packet) const { av_packet_free(&packet); }
};
struct ScaleFreer {
  void operator()(SwsContext* context) const { sws_freeContext(context); }
};

}  // namespace

struct VideoReader::State {
  std::string path;
  FfmpegMessages messages;  // declared before the contexts, whose threads add to it, so it outlives them
  std::unique_ptr<AVFormatContext, FormatCloser> format;
  std::unique_ptr<AVCodecContext, CodecFreer> codec;
  std::unique_ptr<AVFrame, FrameFreer> frame{av_frame_alloc()};
  std::unique_ptr<AVPacket, PacketFreer> packet{av_packet_alloc()};
  std::unique_ptr<SwsContext, ScaleFreer> scale;
  std::unique_ptr<AVFrame, FrameFreer> rgb;  // aligned RGB frame swscale writes
  int stream = -1;
  double time_base = 0;
  bool have_frame = false;  // `frame` holds the last decoded frame, not yet passed
  bool flushing = false;    // the demuxer is exhausted and the decoder was sent its end
  double frame_time = 0;

  // Decodes the next frame into `frame`; false at the end of the stream.
  absl::StatusOr<bool> DecodeNext() {
    while (true) {
      const int received = avcodec_receive_frame(codec.get(), frame.get());
      if (received == 0) {
        const int64_t pts = frame->best_effort_timestamp;
        frame_time = (pts == AV_NOPTS_VALUE ? 0 : pts) * time_base;
        have_frame = true;
        return true;
      }
      if (received == AVERROR_EOF) return have_frame = false;
      if (received != AVERROR(EAGAIN)) return AvStatus(received, path, "decoding");
      ROBOLOOP_RETURN_IF_ERROR(FeedDecoder());
    }
  }

  // Sends the next packet of the video stream (or the end of stream) to the decoder.
  absl::Status FeedDecoder() {
    while (true) {
      const int read = av_read_frame(format.get(), packet.get());
      if (read == AVERROR_EOF) {
        flushing = true;
        return AvStatus(avcodec_send_packet(codec.get(), nullptr), path, "flushing the decoder");
      }
      ROBOLOOP_RETURN_IF_ERROR(AvStatus(read, path, "reading a packet"));
      if (packet->stream_index != stream) {
        av_packet_unref(packet.get());
        continue;
      }
      const int sent = avcodec_send_packet(codec.get(), packet.get());
      av_packet_unref(packet.get());
      return AvStatus(sent, path, "decoding");
    }
  }

  // Moves to the keyframe at or before `time`.
  absl::Status SeekBefore(double time) {
    const int64_t target = static_cast<int64_t>(std::floor(std::max(time, 0.0) / time_base));
    ROBOLOOP_RETURN_IF_ERROR(
        AvStatus(av_seek_frame(format.get(), stream, target, AVSEEK_FLAG_BACKWARD), path, "seeking"));
    avcodec_flush_buffers(codec.get());
    have_frame = false;
    flushing = false;
    return absl::OkStatus();
  }

  // Converts `frame` to RGB rows at `out`. swscale writes through SIMD stores that may pass the
  // end of an unaligned row, so it converts into an aligned frame whose rows are then copied.
  absl::Status ConvertTo(uint8_t* out) {
    scale.reset(sws_getCachedContext(scale.release(), frame->width, frame->height,
                                     static_cast<AVPixelFormat>(frame->format), codec->width, codec->height,
                                     AV_PIX_FMT_RGB24, SWS_BILINEAR, nullptr, nullptr, nullptr));
    if (scale == nullptr) return absl::InternalError(absl::StrCat(path, ": no conversion of its frames to RGB"));
    if (rgb == nullptr) {
      rgb.reset(av_frame_alloc());
      rgb->format = AV_PIX_FMT_RGB24;
      rgb->width = codec->width;
      rgb->height = codec->height;
      ROBOLOOP_RETURN_IF_ERROR(AvStatus(av_frame_get_buffer(rgb.get(), 64), path, "allocating an RGB frame"));
    }
    sws_scale(scale.get(), frame->data, frame->linesize, 0, frame->height, rgb->data, rgb->linesize);
    const int row_bytes = codec->width * 3;
    for (int y = 0; y < codec->height; ++y) {
      std::memcpy(out + static_cast<int64_t>(y) * row_bytes, rgb->data[0] + static_cast<int64_t>(y) * rgb->linesize[0],
                  row_bytes);
    }
    return absl::OkStatus();
  }

  // Opens `path` and its best video stream with a decoder.
  absl::Status Open() {
    AVFormatContext* opened = nullptr;
    ROBOLOOP_RETURN_IF_ERROR(AvStatus(avformat_open_input(&opened, path.c_str(), nullptr, nullptr), path, "opening"));
    format.reset(opened);
    ROBOLOOP_RETURN_IF_ERROR(AvStatus(avformat_find_stream_info(opened, nullptr), path, "reading stream info"));
    const AVCodec* decoder = nullptr;
    stream = av_find_best_stream(opened, AVMEDIA_TYPE_VIDEO, -1, -1, &decoder, 0);
    ROBOLOOP_RETURN_IF_ERROR(AvStatus(stream, path, "finding a video stream with a decoder"));
    const AVStream* video = opened->streams[stream];
    time_base = av_q2d(video->time_base);
    codec.reset(avcodec_alloc_context3(decoder));
    codec->opaque = &messages;
    ROBOLOOP_RETURN_IF_ERROR(
        AvStatus(avcodec_parameters_to_context(codec.get(), video->codecpar), path, "reading codec parameters"));
    codec->thread_count = 0;  // FFmpeg picks the number of threads
    return AvStatus(avcodec_open2(codec.get(), decoder, nullptr), path, absl::StrCat("opening decoder ", decoder->name));
  }

  // Decodes until the frame shown at `time`, within `tolerance`.
  absl::Status FindFrame(double time, double tolerance) {
    if (have_frame && frame_time > time + tolerance) ROBOLOOP_RETURN_IF_ERROR(SeekBefore(time));
    while (!have_frame || frame_time < time - tolerance) {
      ROBOLOOP_ASSIGN_OR_RETURN(bool decoded, DecodeNext());
      if (!decoded) {
        return absl::OutOfRangeError(
            absl::StrFormat("%s: no frame at %.4f s: the video ends before it", path, time));
      }
    }
    if (frame_time > time + tolerance) {
      return absl::OutOfRangeError(absl::StrFormat("%s: no frame at %.4f s (±%.4f s): the nearest is at %.4f s",
                                                   path, time, tolerance, frame_time));
    }
    return absl::OkStatus();
  }
};

VideoReader::VideoReader(std::unique_ptr<State> state) : state_(std::move(state)) {}
VideoReader::~VideoReader() = default;

absl::StatusOr<std::unique_ptr<VideoReader>> VideoReader::Open(const std::string& path) {
  InstallFfmpegLog();
  std::error_code error;
  if (!std::filesystem::is_regular_file(path, error)) {
    return absl::NotFoundError(absl::StrCat(path, ": no such video file"));
  }
  auto state = std::make_unique<State>();
  state->path = path;
  const CurrentMessages current(&state->messages);
  ROBOLOOP_RETURN_IF_ERROR(WithMessages(state->Open(), state->messages));
  return std::unique_ptr<VideoReader>(new VideoReader(std::move(state)));
}

int VideoReader::width() const { return state_->codec->width; }
int VideoReader::height() const { return state_->codec->height; }

absl::Status VideoReader::ReadFrames(const std::vector<double>& times, double tolerance_s, uint8_t* out) {
  const CurrentMessages current(&state_->messages);
  const int64_t frame_bytes = int64_t{width()} * height() * 3;
  for (size_t i = 0; i < times.size(); ++i) {
    ROBOLOOP_RETURN_IF_ERROR(WithMessages(state_->FindFrame(times[i], tolerance_s), state_->messages));
    if (state_->frame->width != width() || state_->frame->height != height()) {
      return absl::DataLossError(absl::StrCat(state_->path, ": a frame of ", state_->frame->width, "x",
                                              state_->frame->height, " in a ", width(), "x", height(), " video"));
    }
    ROBOLOOP_RETURN_IF_ERROR(state_->ConvertTo(out + i * frame_bytes));
  }
  return absl::OkStatus();
}

struct VideoWriter::State {
  VideoWriterOptions options;
  std::unique_ptr<AVFrame, FrameFreer> rgb{av_frame_alloc()};  // aligned copy of the input picture
  AVFormatContext* format = nullptr;  // owned; freed by Finish or the destructor
  std::unique_ptr<AVCodecContext, CodecFreer> codec;
  std::unique_ptr<AVFrame, FrameFreer> frame{av_frame_alloc()};
  std::unique_ptr<AVPacket, PacketFreer> packet{av_packet_alloc()};
  std::unique_ptr<SwsContext, ScaleFreer> scale;
  AVStream* stream = nullptr;
  int64_t frames = 0;

  ~State() {
    if (format != nullptr) {
      if (format->pb != nullptr) avio_closep(&format->pb);
      avformat_free_context(format);
    }
  }

  // Sends `input` (nullptr: the end) to the encoder and writes the packets it gives back.
  absl::Status Encode(const AVFrame* input) {
    ROBOLOOP_RETURN_IF_ERROR(AvStatus(avcodec_send_frame(codec.get(), input), options.path, "encoding"));
    while (true) {
      const int received = avcodec_receive_packet(codec.get(), packet.get());
      if (received == AVERROR(EAGAIN) || received == AVERROR_EOF) return absl::OkStatus();
      ROBOLOOP_RETURN_IF_ERROR(AvStatus(received, options.path, "encoding"));
      av_packet_rescale_ts(packet.get(), codec->time_base, stream->time_base);
      packet->stream_index = stream->index;
      ROBOLOOP_RETURN_IF_ERROR(
          AvStatus(av_interleaved_write_frame(format, packet.get()), options.path, "writing a packet"));
    }
  }

  absl::Status OpenEncoder() {
    const AVCodec* encoder = avcodec_find_encoder_by_name(options.encoder.c_str());
    if (encoder == nullptr) {
      return absl::NotFoundError(absl::StrCat("FFmpeg has no encoder '", options.encoder, "' (for ", options.path, ")"));
    }
    codec.reset(avcodec_alloc_context3(encoder));
    codec->width = options.width;
    codec->height = options.height;
    codec->time_base = AVRational{1, options.fps};
    codec->framerate = AVRational{options.fps, 1};
    codec->pix_fmt = AV_PIX_FMT_YUV420P;
    codec->gop_size = options.gop;
    codec->max_b_frames = 0;
    if (format->oformat->flags & AVFMT_GLOBALHEADER) codec->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;
    av_opt_set(codec->priv_data, "crf", std::to_string(options.crf).c_str(), 0);
    if (options.encoder == "libx264") av_opt_set(codec->priv_data, "preset", "fast", 0);
    // libaom's default (cpu-used 1) encodes a 640x480 frame in seconds; 6 is its realtime-class speed.
    if (options.encoder == "libaom-av1") av_opt_set(codec->priv_data, "cpu-used", "6", 0);
    return AvStatus(avcodec_open2(codec.get(), encoder, nullptr), options.path,
                    absl::StrCat("opening encoder ", options.encoder));
  }
};

VideoWriter::VideoWriter(std::unique_ptr<State> state) : state_(std::move(state)) {}
VideoWriter::~VideoWriter() = default;

absl::StatusOr<std::unique_ptr<VideoWriter>> VideoWriter::Open(const VideoWriterOptions& options) {
  InstallFfmpegLog();
  if (options.width <= 0 || options.height <= 0 || options.width % 2 != 0 || options.height % 2 != 0) {
    return absl::InvalidArgumentError(absl::StrCat(options.path, ": frames of ", options.width, "x", options.height,
                                                   "; yuv420p video needs an even width and height"));
  }
  std::error_code error;
  std::filesystem::create_directories(std::filesystem::path(options.path).parent_path(), error);
  if (error) return ErrnoStatus(error.value(), options.path);
  auto state = std::make_unique<State>();
  state->options = options;
  ROBOLOOP_RETURN_IF_ERROR(AvStatus(
      avformat_alloc_output_context2(&state->format, nullptr, "mp4", options.path.c_str()), options.path, "mp4 muxer"));
  ROBOLOOP_RETURN_IF_ERROR(state->OpenEncoder());
  state->stream = avformat_new_stream(state->format, nullptr);
  state->stream->time_base = state->codec->time_base;
  state->stream->avg_frame_rate = state->codec->framerate;  // readers index frames by it (torchcodec)
  ROBOLOOP_RETURN_IF_ERROR(AvStatus(avcodec_parameters_from_context(state->stream->codecpar, state->codec.get()),
                                    options.path, "codec parameters"));
  ROBOLOOP_RETURN_IF_ERROR(
      AvStatus(avio_open(&state->format->pb, options.path.c_str(), AVIO_FLAG_WRITE), options.path, "creating"));
  ROBOLOOP_RETURN_IF_ERROR(AvStatus(avformat_write_header(state->format, nullptr), options.path, "writing the header"));
  AVFrame* frame = state->frame.get();
  frame->format = AV_PIX_FMT_YUV420P;
  frame->width = options.width;
  frame->height = options.height;
  ROBOLOOP_RETURN_IF_ERROR(AvStatus(av_frame_get_buffer(frame, 0), options.path, "allocating a frame"));
  AVFrame* rgb = state->rgb.get();
  rgb->format = AV_PIX_FMT_RGB24;
  rgb->width = options.width;
  rgb->height = options.height;
  ROBOLOOP_RETURN_IF_ERROR(AvStatus(av_frame_get_buffer(rgb, 64), options.path, "allocating an RGB frame"));
  state->scale.reset(sws_getContext(options.width, options.height, AV_PIX_FMT_RGB24, options.width, options.height,
                                    AV_PIX_FMT_YUV420P, SWS_BILINEAR, nullptr, nullptr, nullptr));
  return std::unique_ptr<VideoWriter>(new VideoWriter(std::move(state)));
}

absl::Status VideoWriter::Write(const uint8_t* rgb, int64_t count) {
  State& s = *state_;
  const int stride = s.options.width * 3;
  for (int64_t i = 0; i < count; ++i) {
    ROBOLOOP_RETURN_IF_ERROR(AvStatus(av_frame_make_writable(s.frame.get()), s.options.path, "frame buffer"));
    // swscale may read past the end of unaligned rows: it reads from an aligned copy.
    const uint8_t* picture = rgb + i * stride * s.options.height;
    for (int y = 0; y < s.options.height; ++y) {
      std::memcpy(s.rgb->data[0] + static_cast<int64_t>(y) * s.rgb->linesize[0], picture + static_cast<int64_t>(y) * stride,
                  stride);
    }
    sws_scale(s.scale.get(), s.rgb->data, s.rgb->linesize, 0, s.options.height, s.frame->data, s.frame->linesize);
    s.frame->pts = s.frames++;
    ROBOLOOP_RETURN_IF_ERROR(s.Encode(s.frame.get()));
  }
  return absl::OkStatus();
}

absl::Status VideoWriter::Close() {
  State& s = *state_;
  ROBOLOOP_RETURN_IF_ERROR(s.Encode(nullptr));
  ROBOLOOP_RETURN_IF_ERROR(AvStatus(av_write_trailer(s.format), s.options.path, "writing the trailer"));
  return AvStatus(avio_closep(&s.format->pb), s.options.path, "closing");
}

}  // namespace roboloop::data::lerobot
