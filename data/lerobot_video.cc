#include "data/lerobot_video.h"

#include <cmath>
#include <cstring>
#include <filesystem>

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/imgutils.h>
#include <libavutil/opt.h>
#include <libswscale/swscale.h>
}

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
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
  av_log_set_level(AV_LOG_ERROR);  // FFmpeg's progress notes would drown roboloop's output
  std::error_code error;
  if (!std::filesystem::is_regular_file(path, error)) {
    return absl::NotFoundError(absl::StrCat(path, ": no such video file"));
  }
  auto state = std::make_unique<State>();
  state->path = path;
  AVFormatContext* format = nullptr;
  ROBOLOOP_RETURN_IF_ERROR(AvStatus(avformat_open_input(&format, path.c_str(), nullptr, nullptr), path, "opening"));
  state->format.reset(format);
  ROBOLOOP_RETURN_IF_ERROR(AvStatus(avformat_find_stream_info(format, nullptr), path, "reading stream info"));
  const AVCodec* decoder = nullptr;
  state->stream = av_find_best_stream(format, AVMEDIA_TYPE_VIDEO, -1, -1, &decoder, 0);
  ROBOLOOP_RETURN_IF_ERROR(AvStatus(state->stream, path, "finding a video stream with a decoder"));
  const AVStream* stream = format->streams[state->stream];
  state->time_base = av_q2d(stream->time_base);
  state->codec.reset(avcodec_alloc_context3(decoder));
  ROBOLOOP_RETURN_IF_ERROR(
      AvStatus(avcodec_parameters_to_context(state->codec.get(), stream->codecpar), path, "reading codec parameters"));
  state->codec->thread_count = 0;  // FFmpeg picks the number of threads
  ROBOLOOP_RETURN_IF_ERROR(AvStatus(avcodec_open2(state->codec.get(), decoder, nullptr), path,
                                    absl::StrCat("opening decoder ", decoder->name)));
  return std::unique_ptr<VideoReader>(new VideoReader(std::move(state)));
}

int VideoReader::width() const { return state_->codec->width; }
int VideoReader::height() const { return state_->codec->height; }

absl::Status VideoReader::ReadFrames(const std::vector<double>& times, double tolerance_s, uint8_t* out) {
  const int64_t frame_bytes = int64_t{width()} * height() * 3;
  for (size_t i = 0; i < times.size(); ++i) {
    ROBOLOOP_RETURN_IF_ERROR(state_->FindFrame(times[i], tolerance_s));
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
  av_log_set_level(AV_LOG_ERROR);
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
