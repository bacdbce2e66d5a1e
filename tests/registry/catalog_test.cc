#include "registry/catalog.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "common/fs.h"
#include "common/sha256.h"
#include "tests/registry/test_util.h"

namespace roboloop::registry {
namespace {

using testing_util::ScopedDir;

v1::BlobRef Blob(const std::string& role, const std::string& content) {
  v1::BlobRef blob;
  blob.set_role(role);
  blob.set_sha256(Sha256Hex(content));
  blob.set_size(static_cast<int64_t>(content.size()));
  return blob;
}

CheckpointRecord Record(const std::string& model, int64_t step, const std::string& parent = "",
                        const std::string& dataset = "") {
  CheckpointRecord record;
  record.manifest_json = absl::StrCat("{\"model\":\"", model, "\",\"step\":", step, ",\"p\":\"",
                                      parent, "\"}");
  record.id = Sha256Hex(record.manifest_json);
  record.model = model;
  record.step = step;
  record.parent_id = parent;
  record.dataset_id = dataset;
  record.config_json = "{}";
  record.metrics_json = "{\"loss\":1}";
  record.blobs = {Blob("policy", absl::StrCat("w", step)), Blob("trainer_state", "shared")};
  return record;
}

DatasetRecord Data(const std::string& name, const std::string& content,
                   std::vector<std::string> parents = {}) {
  DatasetRecord record;
  record.name = name;
  record.blob = Blob("data", content);
  record.metadata_json = "{}";
  record.parent_ids = std::move(parents);
  return record;
}

class CatalogTest : public testing::Test {
 protected:
  void SetUp() override {
    Catalog::Options options;
    options.path = JoinPath(dir_.path(), "catalog.db");
    auto catalog = Catalog::Create(options);
    ASSERT_TRUE(catalog.ok()) << catalog.status();
    catalog_ = *std::move(catalog);
  }
  v1::Checkpoint Insert(const CheckpointRecord& record) {
    auto inserted = catalog_->InsertCheckpoint(record, actor_);
    EXPECT_TRUE(inserted.ok()) << inserted.status();
    return inserted.ok() ? inserted->value : v1::Checkpoint();
  }
  ScopedDir dir_;
  Actor actor_{"alice", "lab-01"};
  std::unique_ptr<Catalog> catalog_;
};

TEST_F(CatalogTest, FreshCatalogHasLatestSchema) {
  EXPECT_EQ(*catalog_->SchemaVersion(), Catalog::LatestSchemaVersion());
  EXPECT_GE(Catalog::LatestSchemaVersion(), 2);
}

TEST_F(CatalogTest, VersionsCountUpPerModelAndLatestFollows) {
  v1::Checkpoint a1 = Insert(Record("a", 1));
  v1::Checkpoint a2 = Insert(Record("a", 2));
  v1::Checkpoint b1 = Insert(Record("b", 1));
  EXPECT_EQ(a1.version(), 1);
  EXPECT_EQ(a2.version(), 2);
  EXPECT_EQ(b1.version(), 1);
  EXPECT_EQ(**catalog_->CheckpointIdByAlias("a", "latest"), a2.id());
  EXPECT_EQ(**catalog_->CheckpointIdByVersion("a", 1), a1.id());
  EXPECT_FALSE(catalog_->CheckpointIdByVersion("a", 3)->has_value());
  EXPECT_EQ(*catalog_->MaxCheckpointVersion("a"), 2);
  EXPECT_EQ(*catalog_->ModelNames(), (std::vector<std::string>{"a", "b"}));

  v1::Checkpoint stored = *catalog_->GetCheckpoint(a2.id());
  EXPECT_EQ(stored.step(), 2);
  ASSERT_EQ(stored.blobs_size(), 2);
  EXPECT_EQ(stored.blobs(0).role(), "policy");
  EXPECT_EQ(stored.aliases_size(), 1);
  EXPECT_EQ(stored.aliases(0), "latest");
  EXPECT_EQ(catalog_->GetCheckpoint(a1.id())->aliases_size(), 0);
}

TEST_F(CatalogTest, SameIdAgainReturnsExistingWithoutNewVersion) {
  v1::Checkpoint first = Insert(Record("a", 1));
  auto again = catalog_->InsertCheckpoint(Record("a", 1), actor_);
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(again->created);
  EXPECT_EQ(again->value.version(), first.version());
  EXPECT_EQ(*catalog_->MaxCheckpointVersion("a"), 1);
  EXPECT_EQ(catalog_->AliasHistory("a", "latest")->size(), 1u);
}

// The reply of an insert is built from the record, not read back: it must equal what a later
// read returns, field for field (blobs given out of role order, parent, dataset and run set).
TEST_F(CatalogTest, InsertReplyEqualsTheStoredCheckpoint) {
  auto data = catalog_->InsertDataset(Data("demos", "rows"));
  ASSERT_TRUE(data.ok()) << data.status();
  auto expect_stored = [this](const v1::Checkpoint& reply) {
    auto stored = catalog_->GetCheckpoint(reply.id());
    ASSERT_TRUE(stored.ok()) << stored.status();
    EXPECT_EQ(reply.SerializeAsString(), stored->SerializeAsString()) << reply.DebugString();
  };
  v1::Checkpoint parent = Insert(Record("a", 1));
  expect_stored(parent);
  CheckpointRecord record = Record("a", 2, parent.id(), data->value.id());
  record.run_id = "run-7";
  record.blobs = {Blob("trainer_state", "s2"), Blob("norm_stats", "n2"), Blob("policy", "w2")};
  v1::Checkpoint child = Insert(record);
  ASSERT_EQ(child.blobs_size(), 3);
  EXPECT_EQ(child.blobs(0).role(), "norm_stats");
  expect_stored(child);
}

TEST_F(CatalogTest, UnknownParentViolatesForeignKey) {
  auto orphan = catalog_->InsertCheckpoint(Record("a", 1, Sha256Hex("nobody")), actor_);
  EXPECT_EQ(orphan.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(catalog_->ModelNames()->empty()) << "the failed transaction must roll back";
}

TEST_F(CatalogTest, AliasMovesAreRecordedWithActorAndPrevious) {
  v1::Checkpoint a1 = Insert(Record("a", 1));
  v1::Checkpoint a2 = Insert(Record("a", 2));
  auto first = catalog_->MoveAlias("a", "champion", a1.id(), "first eval", actor_);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->previous_id(), "");
  auto second = catalog_->MoveAlias("a", "champion", a2.id(), "better", {"bob", "ci"});
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->previous_id(), a1.id());

  auto history = catalog_->AliasHistory("a", "champion");
  ASSERT_TRUE(history.ok());
  ASSERT_EQ(history->size(), 2u);
  EXPECT_EQ((*history)[0].user(), "alice");
  EXPECT_EQ((*history)[0].host(), "lab-01");
  EXPECT_EQ((*history)[1].reason(), "better");
  EXPECT_EQ((*history)[1].user(), "bob");
  EXPECT_GT((*history)[1].time_unix_us(), 0);
  EXPECT_EQ(catalog_->AliasHistory("a", "")->size(), 4u);
  EXPECT_EQ(*catalog_->AliasNames("a"), (std::vector<std::string>{"champion", "latest"}));
}

TEST_F(CatalogTest, LineageFollowsParents) {
  v1::Checkpoint root = Insert(Record("a", 1));
  v1::Checkpoint child = Insert(Record("a", 2, root.id()));
  v1::Checkpoint grandchild = Insert(Record("a", 3, child.id()));
  v1::Checkpoint sibling = Insert(Record("b", 4, root.id()));

  auto ancestors = catalog_->Ancestors(grandchild.id());
  ASSERT_TRUE(ancestors.ok());
  ASSERT_EQ(ancestors->size(), 2u);
  EXPECT_EQ((*ancestors)[0].id(), child.id());
  EXPECT_EQ((*ancestors)[1].id(), root.id());

  auto descendants = catalog_->Descendants(root.id());
  ASSERT_TRUE(descendants.ok());
  ASSERT_EQ(descendants->size(), 3u);
  EXPECT_EQ((*descendants)[2].id(), grandchild.id());
  EXPECT_TRUE(catalog_->Descendants(grandchild.id())->empty());
  EXPECT_TRUE(catalog_->Ancestors(root.id())->empty());
  (void)sibling;
}

TEST_F(CatalogTest, DatasetsVersionDeduplicateAndTrackParents) {
  auto base = catalog_->InsertDataset(Data("demos", "episodes-1"));
  ASSERT_TRUE(base.ok()) << base.status();
  EXPECT_EQ(base->value.version(), 1);
  EXPECT_EQ(base->value.id(), Sha256Hex("episodes-1"));
  auto extra = catalog_->InsertDataset(Data("demos", "episodes-2"));
  ASSERT_TRUE(extra.ok());
  EXPECT_EQ(extra->value.version(), 2);
  auto merged = catalog_->InsertDataset(Data("merged", "episodes-1+2", {base->value.id(), extra->value.id()}));
  ASSERT_TRUE(merged.ok());
  EXPECT_EQ(merged->value.parent_ids_size(), 2);

  auto again = catalog_->InsertDataset(Data("demos", "episodes-1"));
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(again->created);
  EXPECT_EQ(again->value.version(), 1);
  auto renamed = catalog_->InsertDataset(Data("other", "episodes-1"));
  EXPECT_EQ(renamed.status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_NE(renamed.status().message().find("demos:v1"), std::string::npos);

  EXPECT_EQ(**catalog_->DatasetIdByVersion("demos", 0), extra->value.id());
  EXPECT_EQ(**catalog_->DatasetIdByVersion("demos", 1), base->value.id());
  auto ancestry = catalog_->DatasetAncestry(merged->value.id());
  ASSERT_TRUE(ancestry.ok());
  ASSERT_EQ(ancestry->size(), 3u);
  EXPECT_EQ((*ancestry)[0].id(), merged->value.id());

  v1::Checkpoint trained = Insert(Record("a", 1, "", merged->value.id()));
  auto on = catalog_->CheckpointsTrainedOn(merged->value.id());
  ASSERT_TRUE(on.ok());
  ASSERT_EQ(on->size(), 1u);
  EXPECT_EQ((*on)[0].id(), trained.id());
}

TEST_F(CatalogTest, ListFiltersOrderAndLimit) {
  auto data = catalog_->InsertDataset(Data("demos", "d"));
  ASSERT_TRUE(data.ok());
  std::vector<v1::Checkpoint> a;
  for (int step = 1; step <= 5; ++step) a.push_back(Insert(Record("a", step, "", step == 3 ? data->value.id() : "")));
  Insert(Record("b", 9));
  ASSERT_TRUE(catalog_->MoveAlias("a", "champion", a[1].id(), "why", actor_).ok());

  CheckpointFilter filter;
  filter.model = "a";
  auto newest = catalog_->ListCheckpoints(filter);
  ASSERT_TRUE(newest.ok());
  ASSERT_EQ(newest->size(), 5u);
  EXPECT_EQ((*newest)[0].version(), 5);
  filter.newest_first = false;
  filter.limit = 2;
  auto oldest = catalog_->ListCheckpoints(filter);
  ASSERT_EQ(oldest->size(), 2u);
  EXPECT_EQ((*oldest)[0].version(), 1);
  EXPECT_EQ((*oldest)[1].version(), 2);

  CheckpointFilter by_alias;
  by_alias.alias = "champion";
  auto champions = catalog_->ListCheckpoints(by_alias);
  ASSERT_EQ(champions->size(), 1u);
  EXPECT_EQ((*champions)[0].id(), a[1].id());

  CheckpointFilter by_dataset;
  by_dataset.dataset_id = data->value.id();
  EXPECT_EQ(catalog_->ListCheckpoints(by_dataset)->size(), 1u);

  CheckpointFilter after;
  after.created_after_unix_us = a[3].created_unix_us();
  after.model = "a";
  auto later = catalog_->ListCheckpoints(after);
  ASSERT_EQ(later->size(), 1u);
  EXPECT_EQ((*later)[0].version(), 5);

  EXPECT_EQ(catalog_->ListCheckpoints(CheckpointFilter{})->size(), 6u);
  EXPECT_EQ(catalog_->ListDatasets(DatasetFilter{})->size(), 1u);
}

TEST_F(CatalogTest, ReferencedBlobsCoverCheckpointsAndDatasets) {
  Insert(Record("a", 1));
  Insert(Record("a", 2));
  ASSERT_TRUE(catalog_->InsertDataset(Data("demos", "d")).ok());
  auto referenced = catalog_->ReferencedBlobs();
  ASSERT_TRUE(referenced.ok());
  EXPECT_EQ(referenced->size(), 4u);  // w1, w2, shared, d
  EXPECT_TRUE(*catalog_->IsBlobReferenced(Sha256Hex("shared")));
  EXPECT_FALSE(*catalog_->IsBlobReferenced(Sha256Hex("nothing")));
  EXPECT_EQ(catalog_->CheckpointIdsWithPrefix(Record("a", 1).id.substr(0, 8), 10)->size(), 1u);
}

TEST_F(CatalogTest, DataSurvivesReopen) {
  v1::Checkpoint a1 = Insert(Record("a", 1));
  catalog_.reset();
  Catalog::Options options;
  options.path = JoinPath(dir_.path(), "catalog.db");
  auto reopened = Catalog::Create(options);
  ASSERT_TRUE(reopened.ok()) << reopened.status();
  EXPECT_EQ((*reopened)->GetCheckpoint(a1.id())->version(), 1);
}

TEST(CatalogCreate, UnwritablePathFails) {
  Catalog::Options options;
  options.path = "/nonexistent-dir/catalog.db";
  auto catalog = Catalog::Create(options);
  EXPECT_FALSE(catalog.ok());
  EXPECT_NE(catalog.status().message().find("/nonexistent-dir/catalog.db"), std::string::npos);
}

}  // namespace
}  // namespace roboloop::registry

namespace roboloop::registry {
namespace {

// Concurrent registrations from many threads: each gets its own version
// and its own outcome; a failing one (a dataset that does not exist) takes no other down.
TEST_F(CatalogTest, ConcurrentInsertsGetOwnVersionsAndOutcomes) {
  constexpr int kThreads = 8;
  constexpr int kPerThread = 40;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  std::vector<std::vector<int64_t>> versions(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        bool poisoned = i % 10 == 9;
        CheckpointRecord record =
            Record("grouped", t * 1000 + i, "", poisoned ? std::string(64, 'e') : "");
        auto inserted = catalog_->InsertCheckpoint(record, Actor::Local());
        if (poisoned) {
          if (!inserted.ok()) ++failures;
          continue;
        }
        ASSERT_TRUE(inserted.ok()) << inserted.status();
        versions[t].push_back(inserted->value.version());
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(failures.load(), kThreads * kPerThread / 10);
  std::vector<int64_t> all;
  for (const auto& v : versions) all.insert(all.end(), v.begin(), v.end());
  std::sort(all.begin(), all.end());
  ASSERT_EQ(all.size(), static_cast<size_t>(kThreads * kPerThread * 9 / 10));
  for (size_t i = 0; i < all.size(); ++i) EXPECT_EQ(all[i], static_cast<int64_t>(i + 1));
  CheckpointFilter filter;
  filter.model = "grouped";
  filter.limit = 1000;
  auto listed = catalog_->ListCheckpoints(filter);
  ASSERT_TRUE(listed.ok());
  EXPECT_EQ(listed->size(), all.size());
}

}  // namespace
}  // namespace roboloop::registry
