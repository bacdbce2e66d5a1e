#include "registry/registry.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <sys/time.h>
#include <ctime>

#include "common/sha256.h"
#include "tests/registry/registry_fixture.h"

namespace roboloop::registry {
namespace {

using testing::HasSubstr;
using testing_util::MakeManifest;

std::string Message(const absl::Status& status) { return std::string(status.message()); }

class RegistryTest : public testing_util::RegistryFixture {};

TEST_F(RegistryTest, ChunkedUploadThenRegisterAndGet) {
  std::string weights(2500000, 'w');
  std::string sha = Sha256Hex(weights);
  int64_t size = static_cast<int64_t>(weights.size());
  v1::UploadStatusRequest status_request;
  status_request.set_sha256(sha);
  for (int64_t offset = 0; offset < size; offset += 1 << 20) {
    EXPECT_EQ(registry_->UploadStatus(status_request)->bytes_held(), offset);
    ASSERT_TRUE(registry_->AppendUpload(sha, size, offset, weights.substr(offset, 1 << 20)).ok());
  }
  EXPECT_FALSE(registry_->UploadStatus(status_request)->complete());
  auto info = registry_->FinishUpload(sha, size);
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_TRUE(registry_->UploadStatus(status_request)->complete());

  v1::RegisterCheckpointRequest request;
  request.set_manifest_json(MakeManifest("cartpole-mlp", {{"policy", weights}}, 100).dump());
  request.set_config_json(R"({"lr": 0.001})");
  auto checkpoint = registry_->RegisterCheckpoint(request);
  ASSERT_TRUE(checkpoint.ok()) << checkpoint.status();
  EXPECT_EQ(checkpoint->version(), 1);
  EXPECT_EQ(checkpoint->id(), Sha256Hex(checkpoint->manifest_json()));
  EXPECT_EQ(checkpoint->config_json(), R"({"lr":0.001})");

  v1::GetRequest get;
  get.set_ref("cartpole-mlp@latest");
  auto fetched = registry_->GetCheckpoint(get);
  ASSERT_TRUE(fetched.ok());
  EXPECT_EQ(fetched->id(), checkpoint->id());
  EXPECT_EQ(*registry_->ReadBlob(fetched->blobs(0).sha256()), weights);

  v1::DownloadRequest download;
  download.set_sha256(sha);
  download.set_offset(10);
  download.set_length(20);
  auto reader = registry_->OpenBlob(download);
  ASSERT_TRUE(reader.ok());
  EXPECT_EQ(*(*reader)->Read(kDefaultChunkSize), weights.substr(10, 20));
}

TEST_F(RegistryTest, IdenticalManifestReturnsExistingCheckpoint) {
  auto first = Register("m", 1);
  auto again = Register("m", 1);
  ASSERT_TRUE(first.ok() && again.ok());
  EXPECT_EQ(again->id(), first->id());
  EXPECT_EQ(again->version(), 1);
  EXPECT_EQ(Register("m", 2)->version(), 2);
}

TEST_F(RegistryTest, RegistrationNeedsEveryBlobWithItsSize) {
  v1::RegisterCheckpointRequest request;
  request.set_manifest_json(MakeManifest("m", {{"policy", "never uploaded"}}, 1).dump());
  auto missing = registry_->RegisterCheckpoint(request);
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(Message(missing.status()), HasSubstr("'policy'"));

  ASSERT_TRUE(registry_->PutBlob("abc").ok());
  nlohmann::json manifest = MakeManifest("m", {{"policy", "abc"}}, 1);
  manifest["blobs"]["policy"]["size"] = 4;
  request.set_manifest_json(manifest.dump());
  auto wrong_size = registry_->RegisterCheckpoint(request);
  EXPECT_THAT(Message(wrong_size.status()), HasSubstr("has 3 bytes but the manifest says 4"));

  request.set_manifest_json(MakeManifest("m", {{"policy", "abc"}}, 1).dump());
  request.set_model("other");
  EXPECT_EQ(registry_->RegisterCheckpoint(request).status().code(),
            absl::StatusCode::kInvalidArgument);
  request.set_model("m");
  request.set_config_json("[1]");
  EXPECT_THAT(Message(registry_->RegisterCheckpoint(request).status()), HasSubstr("config_json"));
  EXPECT_TRUE(registry_->ListCheckpoints({})->checkpoints().empty());
}

TEST_F(RegistryTest, UnknownParentOrDatasetIsRefused) {
  auto orphan = Register("m", 1, Sha256Hex("nobody"));
  EXPECT_EQ(orphan.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(Message(orphan.status()), HasSubstr("parent_id"));
  auto untrained = Register("m", 1, "", Sha256Hex("no data"));
  EXPECT_THAT(Message(untrained.status()), HasSubstr("dataset_id"));
}

TEST_F(RegistryTest, AliasesNeedReasonsAndProtectedOnesNeedPromote) {
  auto v1 = Register("m", 1);
  auto v2 = Register("m", 2);
  auto other = Register("n", 1);
  ASSERT_TRUE(v1.ok() && v2.ok() && other.ok());
  v1::SetAliasRequest set;
  set.set_model("m");
  set.set_alias("staging");
  set.set_ref("m:v1");
  EXPECT_THAT(Message(registry_->SetAlias(set).status()), HasSubstr("reason"));
  set.set_reason("smoke test passed");
  auto moved = registry_->SetAlias(set, Actor{"dana", "ws-3"});
  ASSERT_TRUE(moved.ok()) << moved.status();
  EXPECT_EQ(moved->checkpoint_id(), v1->id());

  set.set_alias("champion");
  auto refused = registry_->SetAlias(set);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(Message(refused.status()), HasSubstr("promote"));
  set.set_alias("latest");
  EXPECT_EQ(registry_->SetAlias(set).status().code(), absl::StatusCode::kFailedPrecondition);
  set.set_alias("staging");
  set.set_ref("n:v1");
  EXPECT_THAT(Message(registry_->SetAlias(set).status()), HasSubstr("belongs to model 'n'"));

  v1::PromoteRequest promote;
  promote.set_model("m");
  promote.set_ref("m@latest");
  promote.set_reason("won the eval");
  auto promoted = registry_->Promote(promote, Actor{"erin", "ci-7"});
  ASSERT_TRUE(promoted.ok()) << promoted.status();
  EXPECT_EQ(promoted->alias(), "champion");
  EXPECT_EQ(promoted->checkpoint_id(), v2->id());
  promote.set_ref("m:v1");
  promote.set_reason("rollback");
  ASSERT_TRUE(registry_->Promote(promote).ok());
  // QA: promote --alias X once created an ordinary alias that `registry alias` then moved freely.
  for (const char* ordinary : {"newprot", "staging"}) {
    promote.set_alias(ordinary);
    auto not_protected = registry_->Promote(promote);
    EXPECT_EQ(not_protected.status().code(), absl::StatusCode::kInvalidArgument) << ordinary;
    EXPECT_THAT(Message(not_protected.status()), HasSubstr("only a protected alias (champion)")) << ordinary;
  }
  promote.set_alias("champion");

  v1::AliasHistoryRequest history_request;
  history_request.set_model("m");
  history_request.set_alias("champion");
  auto history = registry_->AliasHistory(history_request);
  ASSERT_TRUE(history.ok());
  ASSERT_EQ(history->events_size(), 2);
  EXPECT_EQ(history->events(0).user(), "erin");
  EXPECT_EQ(history->events(0).host(), "ci-7");
  EXPECT_EQ(history->events(1).previous_id(), v2->id());
  EXPECT_EQ(history->events(1).reason(), "rollback");
  history_request.set_model("mm");
  EXPECT_THAT(Message(registry_->AliasHistory(history_request).status()), HasSubstr("close matches: m"));

  v1::ListCheckpointsRequest list;
  list.set_alias("champion");
  auto champions = registry_->ListCheckpoints(list);
  ASSERT_EQ(champions->checkpoints_size(), 1);
  EXPECT_EQ(champions->checkpoints(0).id(), v1->id());
}

// A dataset's lineage lists what was made from it, nearest first and each once (a merge of it
// and of its relabel is both its child and its grandchild), and what trained on any of those.
TEST_F(RegistryTest, DatasetLineageListsDerivedDatasetsAndWhatTrainedOnThem) {
  auto raw = RegisterData("demos", "raw episodes");
  auto other = RegisterData("more", "other episodes");
  auto relabeled = RegisterData("demos-dagger", "relabeled", {"demos:v1"});
  auto merged = RegisterData("mix", "merged", {"demos:v1", "demos-dagger:v1", "more:v1"});
  auto remerged = RegisterData("mix2", "merged again", {"mix:v1"});
  ASSERT_TRUE(raw.ok() && other.ok() && relabeled.ok() && merged.ok() && remerged.ok()) << remerged.status();
  auto on_mix = Register("m", 1, "", merged->id());
  auto on_other = Register("n", 1, "", other->id());
  ASSERT_TRUE(on_mix.ok() && on_other.ok()) << on_other.status();

  v1::LineageRequest request;
  request.set_ref("demos:v1");
  auto lineage = registry_->Lineage(request);
  ASSERT_TRUE(lineage.ok()) << lineage.status();
  std::vector<std::string> derived;
  for (const v1::Dataset& d : lineage->derived_datasets()) derived.push_back(d.name());
  EXPECT_THAT(derived, ::testing::ElementsAre("demos-dagger", "mix", "mix2"));
  ASSERT_EQ(lineage->trained_on_dataset_size(), 1);
  EXPECT_EQ(lineage->trained_on_dataset(0).id(), on_mix->id());
  ASSERT_EQ(lineage->datasets_size(), 1) << "its own ancestry: itself";

  request.set_ref("mix2:v1");
  auto leaf = registry_->Lineage(request);
  ASSERT_TRUE(leaf.ok()) << leaf.status();
  EXPECT_EQ(leaf->derived_datasets_size(), 0);
  EXPECT_EQ(leaf->trained_on_dataset_size(), 0);
  request.set_ref("m:v1");
  EXPECT_EQ(registry_->Lineage(request)->derived_datasets_size(), 0) << "a checkpoint has no derived datasets";
}

TEST_F(RegistryTest, LineageCoversCheckpointsAndDatasets) {
  auto raw = RegisterData("demos", "raw episodes");
  auto relabeled = RegisterData("demos-dagger", "relabeled", {"demos:v1"});
  ASSERT_TRUE(raw.ok() && relabeled.ok()) << relabeled.status();
  EXPECT_EQ(relabeled->parent_ids(0), raw->id());
  auto base = Register("m", 1, "", raw->id());
  auto tuned = Register("m", 2, base->id(), relabeled->id());
  ASSERT_TRUE(base.ok() && tuned.ok()) << tuned.status();

  v1::LineageRequest request;
  request.set_ref("m:v2");
  auto lineage = registry_->Lineage(request);
  ASSERT_TRUE(lineage.ok()) << lineage.status();
  ASSERT_EQ(lineage->ancestors_size(), 1);
  EXPECT_EQ(lineage->ancestors(0).id(), base->id());
  EXPECT_EQ(lineage->datasets_size(), 2);

  request.set_ref("demos:v1");
  auto by_dataset = registry_->Lineage(request);
  ASSERT_TRUE(by_dataset.ok());
  ASSERT_EQ(by_dataset->trained_on_dataset_size(), 2) << "on it, then on what was made from it";
  EXPECT_EQ(by_dataset->trained_on_dataset(0).id(), base->id());
  EXPECT_EQ(by_dataset->trained_on_dataset(1).id(), tuned->id());
  ASSERT_EQ(by_dataset->derived_datasets_size(), 1);
  EXPECT_EQ(by_dataset->derived_datasets(0).id(), relabeled->id());

  request.set_ref("m:v1");
  EXPECT_EQ(registry_->Lineage(request)->descendants_size(), 1);

  v1::ListCheckpointsRequest list;
  list.set_dataset_ref("demos-dagger@latest");
  EXPECT_EQ(registry_->ListCheckpoints(list)->checkpoints_size(), 1);
}

TEST_F(RegistryTest, DatasetRegistrationValidatesInput) {
  v1::RegisterDatasetRequest request;
  request.set_name("Bad/Name");
  request.set_blob_sha256(Sha256Hex("x"));
  EXPECT_THAT(Message(registry_->RegisterDataset(request).status()), HasSubstr("invalid dataset name"));
  request.set_name("demos");
  EXPECT_THAT(Message(registry_->RegisterDataset(request).status()), HasSubstr("not uploaded"));
  request.set_blob_sha256("../../x");
  EXPECT_EQ(registry_->RegisterDataset(request).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Message(RegisterData("demos", "x", {"nope:v1"}).status()), HasSubstr("parent dataset"));
  auto good = RegisterData("demos", "y");
  ASSERT_TRUE(good.ok()) << good.status();
  EXPECT_EQ(good->metadata_json(), "{}");
}

TEST_F(RegistryTest, VerifyFindsAlteredAndMissingBlobs) {
  auto checkpoint = Register("m", 1);
  ASSERT_TRUE(checkpoint.ok());
  auto all = registry_->Verify({});
  ASSERT_TRUE(all.ok());
  EXPECT_TRUE(all->problems().empty());
  EXPECT_EQ(all->blobs_checked(), 2);

  std::string policy_sha = checkpoint->blobs(0).sha256();
  std::string path = registry_->blobs().BlobPath(policy_sha);
  std::filesystem::permissions(path, std::filesystem::perms::owner_write,
                               std::filesystem::perm_options::add);
  { std::ofstream(path, std::ios::binary | std::ios::in | std::ios::out).put('X'); }

  all = registry_->Verify({});
  ASSERT_EQ(all->problems_size(), 1);
  EXPECT_THAT(all->problems(0), HasSubstr(policy_sha));
  v1::VerifyRequest one;
  one.set_ref("m:v1");
  auto single = registry_->Verify(one);
  ASSERT_TRUE(single.ok());
  ASSERT_EQ(single->problems_size(), 1);
  EXPECT_THAT(single->problems(0), HasSubstr("m:v1"));
  EXPECT_EQ(registry_->ReadBlob(policy_sha).status().code(), absl::StatusCode::kDataLoss);

  std::filesystem::remove(path);
  all = registry_->Verify({});
  ASSERT_EQ(all->problems_size(), 1);
  EXPECT_THAT(all->problems(0), HasSubstr("missing"));
}

TEST_F(RegistryTest, GarbageCollectionDryRunThenApply) {
  auto checkpoint = Register("m", 1);
  auto loose = registry_->PutBlob("nobody references me");
  ASSERT_TRUE(checkpoint.ok() && loose.ok());
  ASSERT_TRUE(registry_->AppendUpload(Sha256Hex("stale upload"), 12, 0, "stale").ok());

  auto dry = registry_->CollectGarbage({});
  ASSERT_TRUE(dry.ok()) << dry.status();
  EXPECT_FALSE(dry->applied());
  EXPECT_THAT(dry->unreferenced(), testing::ElementsAre(loose->sha256()));
  EXPECT_TRUE(registry_->blobs().Contains(loose->sha256()));

  v1::GcRequest apply;
  apply.set_apply(true);
  auto applied = registry_->CollectGarbage(apply);
  ASSERT_TRUE(applied.ok());
  EXPECT_TRUE(applied->applied());
  EXPECT_EQ(applied->bytes(), 20);
  EXPECT_FALSE(registry_->blobs().Contains(loose->sha256()));
  EXPECT_TRUE(registry_->Verify({})->problems().empty());
  ASSERT_EQ(applied->partials_size(), 1);
  EXPECT_EQ(applied->partials(0).sha256(), Sha256Hex("stale upload"));
  EXPECT_EQ(applied->partials(0).bytes_held(), 5);
  EXPECT_FALSE(applied->partials(0).stale());
  EXPECT_EQ(applied->partial_max_age_seconds(), 24 * 3600);
  // The fresh partial is still resumable: the rest of the bytes complete it.
  ASSERT_EQ(*registry_->blobs().BytesHeld(Sha256Hex("stale upload")), 5) << "partial is fresh";
  ASSERT_TRUE(registry_->AppendUpload(Sha256Hex("stale upload"), 12, 5, " upload").ok());
  ASSERT_TRUE(registry_->FinishUpload(Sha256Hex("stale upload"), 12).ok());
  EXPECT_EQ(*registry_->ReadBlob(Sha256Hex("stale upload")), "stale upload");
}

TEST_F(RegistryTest, GarbageCollectionListsPartialsAndDeletesOnlyThoseOlderThanTheGivenAge) {
  const std::string old_sha = Sha256Hex("old upload"), fresh_sha = Sha256Hex("fresh upload");
  ASSERT_TRUE(registry_->AppendUpload(old_sha, 10, 0, "old").ok());
  ASSERT_TRUE(registry_->AppendUpload(fresh_sha, 12, 0, "fresh").ok());
  const std::string old_path = dir_.path() + "/partial/" + old_sha;
  const struct timeval two_hours_ago[2] = {{time(nullptr) - 7200, 0}, {time(nullptr) - 7200, 0}};
  ASSERT_EQ(utimes(old_path.c_str(), two_hours_ago), 0);

  v1::GcRequest dry;
  dry.set_partial_max_age_seconds(3600);
  auto listed = registry_->CollectGarbage(dry);
  ASSERT_TRUE(listed.ok()) << listed.status();
  ASSERT_EQ(listed->partials_size(), 2);
  EXPECT_EQ(listed->partials(0).sha256(), old_sha);
  EXPECT_TRUE(listed->partials(0).stale());
  EXPECT_GE(listed->partials(0).idle_seconds(), 7199);
  EXPECT_EQ(listed->partials(1).sha256(), fresh_sha);
  EXPECT_FALSE(listed->partials(1).stale());
  EXPECT_EQ(listed->bytes(), 3);
  EXPECT_EQ(*registry_->blobs().BytesHeld(old_sha), 3) << "a dry run deletes nothing";

  v1::GcRequest apply = dry;
  apply.set_apply(true);
  ASSERT_TRUE(registry_->CollectGarbage(apply).ok());
  EXPECT_EQ(*registry_->blobs().BytesHeld(old_sha), 0);
  EXPECT_EQ(*registry_->blobs().BytesHeld(fresh_sha), 5);

  v1::GcRequest negative;
  negative.set_partial_max_age_seconds(-1);
  EXPECT_THAT(registry_->CollectGarbage(negative).status().message(), HasSubstr("partial_max_age_seconds"));
}

TEST_F(RegistryTest, StalePartialUploadsAreCollected) {
  registry_.reset();
  Registry::Options options;
  options.root = dir_.path();
  options.stale_partial_age = absl::ZeroDuration();
  auto registry = Registry::Create(options);
  ASSERT_TRUE(registry.ok());
  std::string sha = Sha256Hex("stale upload");
  ASSERT_TRUE((*registry)->AppendUpload(sha, 12, 0, "stale").ok());
  v1::GcRequest apply;
  apply.set_apply(true);
  auto gc = (*registry)->CollectGarbage(apply);
  ASSERT_TRUE(gc.ok());
  EXPECT_TRUE(gc->unreferenced().empty());
  ASSERT_EQ(gc->partials_size(), 1);
  EXPECT_EQ(gc->partials(0).sha256(), sha);
  EXPECT_TRUE(gc->partials(0).stale());
  EXPECT_EQ(gc->bytes(), 5);
  EXPECT_EQ(*(*registry)->blobs().BytesHeld(sha), 0);
}

TEST_F(RegistryTest, ListValidatesLimitsAndNames) {
  v1::ListCheckpointsRequest list;
  list.set_limit(-1);
  EXPECT_EQ(registry_->ListCheckpoints(list).status().code(), absl::StatusCode::kInvalidArgument);
  list.set_limit(0);
  list.set_model("../x");
  EXPECT_EQ(registry_->ListCheckpoints(list).status().code(), absl::StatusCode::kInvalidArgument);
  for (int step = 0; step < 3; ++step) ASSERT_TRUE(Register("m", step).ok());
  v1::ListCheckpointsRequest oldest;
  oldest.set_order(v1::ORDER_OLDEST_FIRST);
  oldest.set_limit(2);
  auto listed = registry_->ListCheckpoints(oldest);
  ASSERT_EQ(listed->checkpoints_size(), 2);
  EXPECT_EQ(listed->checkpoints(0).version(), 1);
  EXPECT_EQ(registry_->ListDatasets({})->datasets_size(), 0);
}

TEST_F(RegistryTest, StoreSurvivesReopen) {
  auto checkpoint = Register("m", 1);
  ASSERT_TRUE(checkpoint.ok());
  Open();
  v1::GetRequest get;
  get.set_ref(checkpoint->id().substr(0, 12));
  EXPECT_EQ(registry_->GetCheckpoint(get)->version(), 1);
}

}  // namespace
}  // namespace roboloop::registry
