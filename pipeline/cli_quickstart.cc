#include "pipeline/cli_quickstart.h"

#include <cstdio>
#include <memory>

#include "absl/strings/str_cat.h"
#include "common/fs.h"
#include "common/ids.h"
#include "common/sha256.h"
#include "common/status.h"
#include "pipeline/registry_connection.h"

namespace roboloop::cli {
namespace {

// A small sample artifact whose content differs per run, so each run registers a new version.
std::string SampleContent() {
  return absl::StrCat("roboloop quickstart sample\ncreated ", FormatTimeUtc(NowUnixMicros()), "\nid ",
                      NewUuid(), "\n");
}

absl::Status RoundTrip(const RegistryTarget& target) {
  const std::string dir = JoinPath(target.root, "quickstart");
  ROBOLOOP_RETURN_IF_ERROR(MakeDirs(dir));
  const std::string sample = JoinPath(dir, "sample.txt");
  const std::string fetched = JoinPath(dir, "fetched.txt");
  ROBOLOOP_RETURN_IF_ERROR(WriteFileAtomic(sample, SampleContent()));
  ROBOLOOP_ASSIGN_OR_RETURN(auto connection, RegistryConnection::Open(target));
  registry::RegistryClient& client = connection->client();

  ROBOLOOP_ASSIGN_OR_RETURN(v1::BlobInfo blob, client.UploadFile(sample));
  v1::RegisterDatasetRequest request;
  request.set_name("quickstart-sample");
  request.set_blob_sha256(blob.sha256());
  request.set_metadata_json(R"({"source":"roboloop quickstart"})");
  ROBOLOOP_ASSIGN_OR_RETURN(v1::Dataset dataset, client.RegisterDataset(request));
  std::printf("1. registered %s as dataset %s:v%d (%s)\n", sample.c_str(), dataset.name().c_str(),
              dataset.version(), dataset.id().c_str());

  v1::ListDatasetsRequest list;
  list.set_name(dataset.name());
  ROBOLOOP_ASSIGN_OR_RETURN(v1::ListDatasetsResponse listed, client.ListDatasets(list));
  std::printf("2. listed %d version(s) of %s\n", listed.datasets_size(), dataset.name().c_str());

  ROBOLOOP_RETURN_IF_ERROR(
      client.DownloadToFile(dataset.blob().sha256(), fetched));
  ROBOLOOP_ASSIGN_OR_RETURN(std::string original, ReadFile(sample));
  ROBOLOOP_ASSIGN_OR_RETURN(std::string copy, ReadFile(fetched));
  if (original != copy) {
    return absl::DataLossError(absl::StrCat(fetched, " differs from ", sample));
  }
  std::printf("3. fetched %s:v%d back into %s: identical (%zu bytes)\n", dataset.name().c_str(),
              dataset.version(), fetched.c_str(), copy.size());

  ROBOLOOP_ASSIGN_OR_RETURN(v1::VerifyResponse verified, client.Verify(""));
  if (verified.problems_size() > 0) {
    return absl::DataLossError(absl::StrCat("registry verify: ", verified.problems(0)));
  }
  std::printf("4. verified %lld blobs in %s: no problems\n",
              static_cast<long long>(verified.blobs_checked()), target.root.c_str());
  return absl::OkStatus();
}

}  // namespace

void AddQuickstartCommand(CLI::App& app, CommandRunner& runner) {
  auto target = std::make_shared<RegistryTarget>();
  CLI::App* command = app.add_subcommand("quickstart", "Run the default closed loop (registry round trip for now)");
  command->add_option("--root", target->root, "Local store")->capture_default_str();
  runner.Bind(command, [target] { return RoundTrip(*target); });
}

}  // namespace roboloop::cli
