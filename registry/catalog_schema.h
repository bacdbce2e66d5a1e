// The catalog's schema and its ordered migrations (private to registry/catalog.cc).
#pragma once

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/sqlite.h"

namespace roboloop::registry {

// The schema version MigrateCatalog brings a database to.
int LatestCatalogSchemaVersion();

// Reads the version recorded in schema_version (0 for a new database).
absl::StatusOr<int> ReadCatalogSchemaVersion(SqliteDb& db);

// Applies, in one BEGIN IMMEDIATE transaction, every migration newer than the recorded
// version. FailedPrecondition when the database is newer than this build.
absl::Status MigrateCatalog(SqliteDb& db);

}  // namespace roboloop::registry
