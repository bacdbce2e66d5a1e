// Shared pieces of the gRPC builder tests: a real Echo service (tests/../proto/roboloop/testing),
// temporary directories, files, and self-signed certificates made with the openssl CLI.
#pragma once

#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "common/grpc_client.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/dynamic_message.h"
#include "grpcpp/impl/rpc_method.h"
#include "grpcpp/support/sync_stream.h"
#include "gtest/gtest.h"
#include "roboloop/testing/echo.grpc.pb.h"
#include "tests/util/tls_files.h"

namespace roboloop_test {

// A temporary directory removed (with its content) at destruction.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "roboloop_rpc_XXXXXX").string();
    path_ = mkdtemp(pattern.data());
    EXPECT_FALSE(path_.empty());
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  // Returns `name` inside the directory.
  std::string File(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

// Writes `content` to `path`.
inline void WriteFile(const std::string& path, const std::string& content) {
  std::ofstream out(path, std::ios::binary);
  out << content;
  ASSERT_TRUE(out.good()) << path;
}

// A self-signed certificate for CN=localhost (SANs localhost and 127.0.0.1).
struct TestCertificate {
  std::string cert_file;
  std::string key_file;
};

// Creates a fresh self-signed certificate in `dir` under file names starting with `stem`.
inline TestCertificate MakeSelfSignedCertificate(const TempDir& dir, const std::string& stem) {
  const std::string folder = std::filesystem::path(dir.File(stem)).parent_path().string();
  roboloop::testing::TlsFiles files = roboloop::testing::MakeSelfSignedCert(folder, stem);
  return TestCertificate{files.cert, files.key};
}

// Waits `ms` milliseconds unless the call is cancelled first; returns true if the wait ran out.
inline bool SleepUnlessCancelled(grpc::ServerContext* context, int ms) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  while (std::chrono::steady_clock::now() < end) {
    if (context->IsCancelled()) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

// What a test service saw: handler bodies run, and calls that noticed their cancellation.
struct CallCounters {
  std::atomic<int> executed{0};
  std::atomic<int> noticed_cancel{0};
};

// The test service on gRPC's synchronous API.
class EchoService final : public roboloop::testing::Echo::Service, public CallCounters {
 public:
  grpc::Status Say(grpc::ServerContext* context, const roboloop::testing::EchoRequest* request,
                   roboloop::testing::EchoReply* reply) override {
    ++executed;
    if (!SleepUnlessCancelled(context, request->sleep_ms())) {
      ++noticed_cancel;
      return grpc::Status::CANCELLED;
    }
    reply->set_text(request->text());
    return grpc::Status::OK;
  }

  grpc::Status Count(grpc::ServerContext* context, const roboloop::testing::CountRequest* request,
                     grpc::ServerWriter<roboloop::testing::CountReply>* writer) override {
    ++executed;
    for (int i = 0; i < request->count(); ++i) {
      if (!SleepUnlessCancelled(context, request->sleep_ms())) {
        ++noticed_cancel;
        return grpc::Status::CANCELLED;
      }
      roboloop::testing::CountReply reply;
      reply.set_index(i);
      if (!writer->Write(reply)) return grpc::Status::CANCELLED;
    }
    return grpc::Status::OK;
  }
};

// Streams `count` replies, one per completed write, then finishes OK.
class CountWriter final : public grpc::ServerWriteReactor<roboloop::testing::CountReply> {
 public:
  explicit CountWriter(int count) : count_(count) { WriteNext(); }
  void OnWriteDone(bool ok) override {
    if (!ok) {
      Finish(grpc::Status::CANCELLED);
      return;
    }
    WriteNext();
  }
  void OnDone() override { delete this; }

 private:
  void WriteNext() {
    if (next_ == count_) {
      Finish(grpc::Status::OK);
      return;
    }
    reply_.set_index(next_++);
    StartWrite(&reply_);
  }

  const int count_;
  int next_ = 0;
  roboloop::testing::CountReply reply_;
};

// The test service on gRPC's callback API (no sleeping: used for the auth checks only).
class CallbackEchoService final : public roboloop::testing::Echo::CallbackService,
                                  public CallCounters {
 public:
  grpc::ServerUnaryReactor* Say(grpc::CallbackServerContext* context,
                                const roboloop::testing::EchoRequest* request,
                                roboloop::testing::EchoReply* reply) override {
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    ++executed;
    reply->set_text(request->text());
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }

  grpc::ServerWriteReactor<roboloop::testing::CountReply>* Count(
      grpc::CallbackServerContext*, const roboloop::testing::CountRequest* request) override {
    ++executed;
    return new CountWriter(request->count());
  }
};

// Lists the server's services into `names` through grpc.reflection.v1alpha using the message types libgrpc++_reflection
// registers in the generated descriptor pool (Debian ships no header for them).
inline grpc::Status ListServicesByReflection(const roboloop::common::GrpcChannel& channel,
                                            std::vector<std::string>* names) {
  namespace pb = google::protobuf;
  const pb::DescriptorPool* pool = pb::DescriptorPool::generated_pool();
  const pb::Descriptor* request_type =
      pool->FindMessageTypeByName("grpc.reflection.v1alpha.ServerReflectionRequest");
  const pb::Descriptor* response_type =
      pool->FindMessageTypeByName("grpc.reflection.v1alpha.ServerReflectionResponse");
  EXPECT_NE(request_type, nullptr);
  EXPECT_NE(response_type, nullptr);
  if (request_type == nullptr || response_type == nullptr) {
    return grpc::Status(grpc::StatusCode::INTERNAL, "reflection types not linked");
  }
  pb::MessageFactory* factory = pb::MessageFactory::generated_factory();
  std::unique_ptr<pb::Message> request(factory->GetPrototype(request_type)->New());
  request->GetReflection()->SetString(request.get(),
                                      request_type->FindFieldByName("list_services"), "*");
  std::unique_ptr<pb::Message> response(factory->GetPrototype(response_type)->New());

  const grpc::internal::RpcMethod method(
      "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
      grpc::internal::RpcMethod::BIDI_STREAMING);
  auto context = channel.NewContext();
  std::unique_ptr<grpc::ClientReaderWriter<pb::Message, pb::Message>> stream(
      grpc::internal::ClientReaderWriterFactory<pb::Message, pb::Message>::Create(
          channel.channel().get(), method, context.get()));
  stream->Write(*request);  // may fail when the server refused the call; Finish says why
  stream->WritesDone();
  if (stream->Read(response.get())) {
    const pb::Message& list = response->GetReflection()->GetMessage(
        *response, response_type->FindFieldByName("list_services_response"));
    const pb::FieldDescriptor* service_field = list.GetDescriptor()->FindFieldByName("service");
    for (int i = 0; i < list.GetReflection()->FieldSize(list, service_field); ++i) {
      const pb::Message& entry = list.GetReflection()->GetRepeatedMessage(list, service_field, i);
      names->push_back(entry.GetReflection()->GetString(
          entry, entry.GetDescriptor()->FindFieldByName("name")));
    }
  }
  while (stream->Read(response.get())) {
  }
  return stream->Finish();
}

}  // namespace roboloop_test
